"""Parity of converted lancopku/SGM checkpoints (with and without global embedding) with the original's outputs."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch
from transformers import AutoModelForSeq2SeqLM

import hf_attn
from tests.helpers import REPO_ROOT, fixture_dir

SCRIPT = REPO_ROOT / "conversion" / "convert_sgm_original_to_hf.py"
ATOL = 1e-5


@pytest.mark.parametrize("suffix", ["", "_ge"], ids=["sgm", "sgm_ge"])
def test_conversion_reproduces_the_original(suffix, tmp_path):
    """The script checks every fixture tensor: teacher-forced scores, loss, encoder states and attention within
    1e-5; greedy ids (all `max_time_step` steps), beam hypotheses and alignments exactly; beam scores within 1e-5."""
    fixture = fixture_dir("sgm")
    result = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--checkpoint",
            str(fixture / f"original_checkpoint{suffix}.pt"),
            "--output",
            str(tmp_path),
            "--fixture",
            str(fixture),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads((tmp_path / "hf_attn_conversion.json").read_text())
    diffs = report["max_abs_diff"]
    for name in ("forward_scores", "forward_loss_mean", "sample_step_scores", "beam_scores", "beam_short_scores"):
        assert diffs[name] <= ATOL, name
    assert (tmp_path / "README.md").is_file() and not list(tmp_path.glob("*.bin"))

    model = AutoModelForSeq2SeqLM.from_pretrained(tmp_path)
    assert type(model) is hf_attn.SgmForMultiLabelGeneration
    original = json.loads((fixture / f"original_config{suffix}.json").read_text())
    assert model.config.global_embedding is original["global_emb"]
    assert model.config.num_labels == original["tgt_vocab_size"] - 4
    assert model.generation_config.max_new_tokens == original["max_time_step"]
    assert model.generation_config.num_beams == (1 if original["global_emb"] else original["beam_size"])


def test_converted_model_predicts_label_sets_like_the_original_greedy_decoding(tmp_path):
    """The converted model's default `predict_label_sets` gives the original's `sample()` ids cut at the first EOS
    (as its `convertToLabels` does), as label names."""
    from safetensors.torch import load_file

    from hf_attn.models.sgm import convert_sgm_original_to_hf as conversion

    fixture = fixture_dir("sgm")
    model = conversion.convert(fixture / "original_checkpoint_ge.pt", tmp_path)
    inputs, expected = load_file(fixture / "inputs.safetensors"), load_file(fixture / "expected_ge.safetensors")
    input_ids, mask = conversion._natural_order(inputs["src"], inputs["src_len"])
    predicted = model.predict_label_sets(input_ids, mask)
    wanted = []
    for row in expected["sample_ids"].tolist():
        row = row[: row.index(3)] if 3 in row else row
        wanted.append([f"LABEL_{token - 4}" for token in row if token >= 4])
    assert predicted == wanted
    with torch.no_grad():
        assert model.generate(input_ids=input_ids, attention_mask=mask).shape[1] <= 1 + 10
