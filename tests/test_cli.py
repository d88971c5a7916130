"""The `hf-attn` command: list, train, demo."""

from __future__ import annotations

import subprocess
import sys

import pytest

from hf_attn.cli import main
from hf_attn.registry import ARCHITECTURES


def test_list_prints_every_architecture(capsys):
    main(["list"])
    out = capsys.readouterr().out
    for name, architecture in ARCHITECTURES.items():
        assert name in out and architecture.paper.reference in out


def test_train_rejects_bad_options(tmp_path):
    with pytest.raises(ValueError, match="Unknown architecture 'nope'"):
        main(["train", "--output-dir", str(tmp_path), "--arch", "nope"])
    with pytest.raises(ValueError, match="KEY=VALUE"):
        main(["train", "--output-dir", str(tmp_path), "--config", "hidden_size"])


def test_console_script_is_installed():
    result = subprocess.run(
        [sys.executable, "-m", "hf_attn.cli", "--help"], capture_output=True, text=True, check=True
    )
    assert "train" in result.stdout and "demo" in result.stdout


def test_demo_trains_saves_reloads_and_shows_attention(tmp_path, capsys):
    output = tmp_path / "demo"
    main(["demo", "--output-dir", str(output), "--num-train", "600", "--epochs", "2"])
    out = capsys.readouterr().out
    assert "accuracy" in out and "attention hit rate" in out and "attention mass on the cue" in out
    assert "reloaded with AutoModelForSequenceClassification + AutoTokenizer" in out
    assert out.count("hop 0:") == 4 and out.count("hop 3:") == 4  # four sentences, four hops each
    assert "-> positive" in out or "-> negative" in out
    assert (output / "model.safetensors").is_file() and (output / "tokenizer.json").is_file()
    # the saved folder ships its card, with the held-out metrics in the model-index
    from huggingface_hub import ModelCard

    card = ModelCard.load(output / "README.md")
    metrics = {result.metric_type for result in card.data.eval_results}
    assert {"accuracy", "hit_rate", "evidence_mass"} <= metrics
    assert (output / "hf_attn_training.json").is_file() and not list(output.glob("*.bin"))
