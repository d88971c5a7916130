"""Parity of the converted ExplorerFreda checkpoint with the original's outputs (../shared/fixtures)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoModelForSequenceClassification, AutoTokenizer

import hf_attn  # noqa: F401  (registers the Auto classes)
from tests.helpers import REPO_ROOT, fixture_dir

# The tests share a session-scoped fixture: one worker runs them all (`--dist loadgroup`) and keeps it, so it is
# built once even when other tests run between them (a module-scoped one was rebuilt then).
pytestmark = pytest.mark.xdist_group("lin_conversion")


SCRIPT = REPO_ROOT / "conversion" / "convert_lin_self_attentive_original_to_hf.py"
ATOL = 1e-5


@pytest.fixture(scope="session")
def converted(tmp_path_factory):
    fixture = fixture_dir("lin_self_attentive")
    output = tmp_path_factory.mktemp("converted")
    result = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--checkpoint",
            str(fixture / "original_checkpoint.pt"),
            "--output",
            str(output),
            "--fixture",
            str(fixture),
            "--config",  # the run's own record: its penalization coefficient, checked sizes
            str(fixture / "original_config.json"),
            "--example",
            "the food was good",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout[result.stdout.index("{") :])
    model = AutoModelForSequenceClassification.from_pretrained(output).eval()
    inputs, expected = load_file(fixture / "inputs.safetensors"), load_file(fixture / "expected.safetensors")
    return model, output, inputs, expected, report


def test_converter_reports_parity(converted):
    *_, report = converted
    assert len(report["sha256"]) == 64
    assert set(report["max_abs_diff"]) >= {"logits", "attention"}
    assert max(report["max_abs_diff"].values()) <= ATOL


@torch.no_grad()
def test_the_converted_card_shows_the_examples_attention(converted):
    _, output, *_, report = converted
    assert report["example"] == {"text": "the food was good"}
    assert "![attention](attention.png)" in (output / "README.md").read_text()
    import matplotlib.image

    assert matplotlib.image.imread(output / "attention.png").std() > 0.01


def test_logits_attention_and_intermediates_match_the_original(converted):
    model, _, inputs, expected, _ = converted
    input_ids = inputs["input_ids_batch_first"]
    output = model(input_ids, attention_mask=inputs["attention_mask"])
    torch.testing.assert_close(output.logits, expected["logits"], rtol=0, atol=ATOL)
    torch.testing.assert_close(output.hop_attentions, expected["attention"], rtol=0, atol=ATOL)
    torch.testing.assert_close(output.sentence_embedding, expected["sentence_embedding"], rtol=0, atol=ATOL)
    assert torch.equal(output.logits.argmax(-1), expected["prediction"])
    hidden = model.lin(input_ids, attention_mask=inputs["attention_mask"]).last_hidden_state
    torch.testing.assert_close(hidden, expected["bilstm_output"], rtol=0, atol=ATOL)
    # the original's mask is its pad ids: the tokenizer's attention_mask is the same mask
    torch.testing.assert_close(inputs["attention_mask"].bool(), input_ids != model.config.pad_token_id)


@torch.no_grad()
def test_both_penalty_variants_and_the_repo_loss(converted):
    model, _, inputs, expected, _ = converted
    input_ids = inputs["input_ids_batch_first"]
    # converted config: train.py's unsquared norm, and its loss = CE + coeff · mean
    assert model.config.penalty_type == "frobenius"
    mask = input_ids != model.config.pad_token_id  # the original's mask
    output = model(input_ids, mask, labels=inputs["targets"])
    torch.testing.assert_close(output.penalty, expected["penalty_repo_norm_per_example"], rtol=0, atol=ATOL)
    torch.testing.assert_close(output.penalty.mean(), expected["penalty_repo_frobenius_mean"], rtol=0, atol=ATOL)
    torch.testing.assert_close(output.loss, expected["loss_total_repo"], rtol=0, atol=ATOL)
    # the paper's squared Frobenius norm, P = ‖AAᵀ − I‖²_F
    model.config.penalty_type = "squared_frobenius"
    try:
        squared = model(input_ids, mask).penalty
    finally:
        model.config.penalty_type = "frobenius"
    torch.testing.assert_close(squared, expected["penalty_sq_frobenius_per_example"], rtol=0, atol=ATOL)
    torch.testing.assert_close(squared.mean(), expected["penalty_sq_frobenius_mean"], rtol=0, atol=ATOL)


def test_converted_config_reproduces_the_original_and_tokenizer_keeps_the_ids(converted):
    model, output, inputs, _, _ = converted
    config = model.config
    assert (config.pack_sequences, config.attention_mask_value, config.flatten_order) == (False, -10000.0, "hop_major")
    original = json.loads((fixture_dir("lin_self_attentive") / "original_config.json").read_text())
    assert config.num_hidden_layers == original["classifier_config"]["nlayers"]
    assert config.pad_token_id == original["pad_token_id"]
    tokenizer = AutoTokenizer.from_pretrained(output)
    assert tokenizer.pad_token_id == original["pad_token_id"]
    ids = inputs["input_ids_batch_first"][0].tolist()
    words = tokenizer.convert_ids_to_tokens(ids)
    assert tokenizer(" ".join(words))["input_ids"] == ids
    assert tokenizer("an unseen word")["input_ids"][-1] == tokenizer.unk_token_id == config.vocab_size - 1


def test_conversion_refuses_a_key_it_does_not_know(tmp_path):
    from hf_attn.conversion import rename_state_dict

    with pytest.raises(ValueError, match=r"encoder\.extra\.weight"):
        rename_state_dict({"encoder.extra.weight": torch.zeros(1)}, [(r"fc\.(weight|bias)", r"classifier.dense.\1")])


def _convert(output, *extra):
    fixture = fixture_dir("lin_self_attentive")
    command = [sys.executable, str(SCRIPT), "--checkpoint", str(fixture / "original_checkpoint.pt"), "--output"]
    result = subprocess.run([*command, str(output), *extra], capture_output=True, text=True, check=False)
    return result


@torch.no_grad()
def test_the_original_runs_penalization_coefficient_travels_with_the_weights(tmp_path):
    """A run trained with --penalization-coeff 0.7: given its arguments, the converted loss is the original's
    loss_ce + 0.7 · penalty; a command-line flag overrides the file; mismatched architecture arguments are refused."""
    fixture = fixture_dir("lin_self_attentive")
    inputs, expected = load_file(fixture / "inputs.safetensors"), load_file(fixture / "expected.safetensors")
    input_ids = inputs["input_ids"].t().contiguous()
    hidden = json.loads((fixture / "original_config.json").read_text())["classifier_config"]["nhid"]
    arguments = tmp_path / "train_args.json"
    arguments.write_text(json.dumps({"--penalization-coeff": 0.7, "--nhid": hidden, "--lr": 0.001}))

    def loss_of(output) -> torch.Tensor:
        model = AutoModelForSequenceClassification.from_pretrained(output).eval()
        return model(input_ids, input_ids != model.config.pad_token_id, labels=inputs["targets"]).loss

    penalty = expected["penalty_repo_frobenius_mean"]
    result = _convert(tmp_path / "from_file", "--config", str(arguments))
    assert result.returncode == 0, result.stderr
    torch.testing.assert_close(loss_of(tmp_path / "from_file"), expected["loss_ce"] + 0.7 * penalty, rtol=0, atol=ATOL)
    report = json.loads((tmp_path / "from_file" / "hf_attn_conversion.json").read_text())
    assert report["training_arguments"]["penalization_coeff"] == 0.7
    # The fixture's own record (its coefficient) reproduces loss_total_repo; the flag wins over a file.
    assert _convert(tmp_path / "fixture_args", "--config", str(fixture / "original_config.json")).returncode == 0
    torch.testing.assert_close(loss_of(tmp_path / "fixture_args"), expected["loss_total_repo"], rtol=0, atol=ATOL)
    assert _convert(tmp_path / "flag", "--config", str(arguments), "--penalization-coeff", "0.2").returncode == 0
    torch.testing.assert_close(loss_of(tmp_path / "flag"), expected["loss_ce"] + 0.2 * penalty, rtol=0, atol=ATOL)
    arguments.write_text(json.dumps({"--penalization-coeff": 0.7, "--nhid": 10 * hidden + 1}))
    refused = _convert(tmp_path / "mismatch", "--config", str(arguments))
    assert refused.returncode != 0 and f"--nhid {10 * hidden + 1}" in refused.stderr
