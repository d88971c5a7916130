"""`hf-attn demo`: the default architecture trained, saved, reloaded and its attention shown, through the generic head
contract."""

from __future__ import annotations

import re

from hf_attn.cli import main
from hf_attn.registry.index import default_architecture
from hf_attn.registry.table import get_architecture


def test_demo_trains_saves_reloads_and_shows_attention(tmp_path, capsys):
    output = tmp_path / "demo"
    main(["demo", "--output-dir", str(output), "--num-train", "600", "--epochs", "2"])
    out = capsys.readouterr().out
    assert out.startswith(f"hf_attn demo: {get_architecture(default_architecture()).display_name} on the synthetic ")
    for metric in ("accuracy", "hit_rate", "evidence_mass"):
        assert re.search(rf"^  {metric} +0\.\d{{3}}$", out, re.M), (metric, out)
    assert "reloaded with AutoModelForSequenceClassification + AutoTokenizer" in out
    assert out.count("hop 0:") == 4 and out.count("hop 3:") == 4  # four texts, four hops each (the row's demo)
    assert "-> positive" in out or "-> negative" in out
    assert (output / "model.safetensors").is_file() and (output / "tokenizer.json").is_file()
    # the saved folder ships its card, with the held-out metrics in the model-index
    from huggingface_hub import ModelCard

    card = ModelCard.load(output / "README.md")
    metrics = {result.metric_type for result in card.data.eval_results}
    assert {"accuracy", "hit_rate", "evidence_mass"} <= metrics
    assert (output / "hf_attn_training.json").is_file() and not list(output.glob("*.bin"))
