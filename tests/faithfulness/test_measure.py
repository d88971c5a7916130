"""The faithfulness measures (`hf_attn.faithfulness`) on models whose evidence is known: a trained Lin's attention
is on the cue word of the cue task, so erasing by attention beats erasing at random and its ranking agrees with
leave-one-out; forced uniform (the softmax patched in this test only), the same measure finds nothing, which shows
it can fail; so do a trained HAN's and STCKA's. A head the question has no meaning for is refused in one line."""

from __future__ import annotations

import math

import datasets
import pytest
import torch
import transformers
from torch.utils.data import DataLoader

import hf_attn.layers.attention
from hf_attn.commands.train import train
from hf_attn.data.collators import PaddingCollator
from hf_attn.faithfulness import measure_faithfulness
from hf_attn.faithfulness.measure import check_measurable
from hf_attn.registry.table import ARCHITECTURES
from hf_attn.tasks.scoring import encoded_input_columns
from tests.helpers import make_inputs, tiny_config

pytest.importorskip("captum", reason='the faithfulness extra: pip install "hf_attn[faithfulness]"')

LIN = ARCHITECTURES["lin_self_attentive"]


def batches_of(result, size: int = 64, rows: int = 128):
    """The trained run's held-out rows as the model's padded input batches."""
    split = result.trainer.eval_dataset
    columns = encoded_input_columns(split)
    split = split.select(range(min(rows, len(split)))).select_columns(columns)
    return list(DataLoader(split, batch_size=size, collate_fn=PaddingCollator(result.model.config.pad_token_id)))


@pytest.fixture(scope="module")
def trained_lin(tmp_path_factory):
    """Lin et al. (`hf-attn demo`'s sizes) trained on the cue task, where one word decides the class."""
    transformers.logging.set_verbosity_error()
    datasets.disable_progress_bars()
    return train(
        tmp_path_factory.mktemp("lin"), num_train=1500, num_eval=200, seed=1, epochs=6, learning_rate=1e-2,
        config_overrides=LIN.demo["config"], disable_tqdm=True, save=False, logging_steps=10**9,
    )  # fmt: skip


def test_a_trained_models_attention_erases_better_than_random_and_agrees_with_leave_one_out(trained_lin):
    """The cue decides the class and the attention is on it: removing the single most-attended token (k = 1% of a
    short text) costs the prediction more than removing a random one, beyond both confidence intervals and by 0.15
    on average (about 0.25 against 0.04 here), and the attention ranks the tokens as leave-one-out does more than a
    random ranking."""
    head = LIN.heads[0]
    report = measure_faithfulness(trained_lin.model, head, batches_of(trained_lin, rows=200), ig_steps=16)
    attention, random = report.comprehensiveness["attention"][0], report.comprehensiveness["random"][0]
    assert report.examples == 200 and attention.n == 200
    assert attention.low > random.high and attention.mean > random.mean + 0.15, (attention, random)
    assert report.flips["attention"].low > report.flips["random"].high, report.flips
    tau = report.agreement["leave_one_out"]
    assert tau["attention"].low > tau["random"].high and tau["attention"].mean > tau["random"].mean + 0.1, tau
    assert report.aopc["sufficiency"]["attention"].mean < report.aopc["sufficiency"]["random"].mean
    assert report.convergence_delta.mean < 0.05, report.convergence_delta


# HAN on the evidence documents (one sentence's cue decides) and STCKA on its concept topics (only the concepts of an
# unseen entity tell the topic), at the sizes of their learning tests.
TRAINED = {
    "han": {"num_train": 1500, "epochs": 6, "learning_rate": 5e-3, "config_overrides": {
        "embedding_size": 32, "word_hidden_size": 32, "sentence_hidden_size": 32, "word_attention_size": 32,
        "sentence_attention_size": 32}},
    "stcka": {"num_train": 2000, "epochs": 5, "learning_rate": 1e-2,
              "config_overrides": {"embedding_size": 32, "hidden_size": 32}},
}  # fmt: skip


@pytest.mark.long  # the learning tests of the two models run in the default tier already
@pytest.mark.parametrize("name", sorted(TRAINED))
def test_a_trained_han_and_stcka_attend_to_what_decides(tmp_path, name):
    """HAN's word-times-sentence weights and STCKA's concept weights, trained on tasks whose evidence is known:
    removing the top-ranked token (a word; STCKA: a concept) costs the prediction more than a random one, beyond
    both intervals, and the ranking agrees with leave-one-out more than a random one."""
    transformers.logging.set_verbosity_error()
    datasets.disable_progress_bars()
    result = train(tmp_path, arch=name, num_eval=200, seed=1, disable_tqdm=True, save=False, logging_steps=10**9,
                   **TRAINED[name])  # fmt: skip
    assert result.metrics["accuracy"] >= 0.9, result.metrics
    report = measure_faithfulness(result.model, ARCHITECTURES[name].heads[0], batches_of(result, rows=200),
                                  ks=(1, 10, 50), ig_steps=16)  # fmt: skip
    attention, random = report.comprehensiveness["attention"][0], report.comprehensiveness["random"][0]
    assert attention.low > random.high and attention.mean > random.mean + 0.15, (attention, random)
    tau = report.agreement["leave_one_out"]
    assert tau["attention"].low > tau["random"].high, tau


def test_attention_forced_uniform_erases_no_better_than_random(trained_lin, monkeypatch):
    """The same model with every attention map forced uniform over the real tokens: ranking by it is ranking at
    random, and the measure says so (the two comprehensiveness intervals overlap at every k)."""

    def uniform(scores, mask, dim=-1):
        weights = torch.ones_like(scores) if mask is None else mask.expand_as(scores).to(scores.dtype)
        return weights / weights.sum(dim, keepdim=True).clamp(min=1)

    monkeypatch.setattr(hf_attn.layers.attention, "masked_softmax", uniform)
    batch = batches_of(trained_lin, rows=4)[0]
    with torch.no_grad():  # the patch reaches the model: every hop spreads over the real tokens alike
        hops = trained_lin.model(**batch, output_attentions=True).hop_attentions
    lengths = batch["attention_mask"].sum(-1, keepdim=True)[:, None]
    assert torch.allclose(hops, batch["attention_mask"][:, None].float() / lengths)
    report = measure_faithfulness(trained_lin.model, LIN.heads[0], batches_of(trained_lin), ks=(1, 10, 50), ig_steps=4)
    pairs = zip(report.comprehensiveness["attention"], report.comprehensiveness["random"], strict=True)
    for attention, random in pairs:
        assert attention.low <= random.high and random.low <= attention.high, (attention, random)


def test_a_head_that_generates_is_refused_in_one_line():
    head = ARCHITECTURES["vaswani_transformer"].heads[0]
    with pytest.raises(ValueError, match=r"generates its output .* not for generation"):
        check_measurable(head)


def test_erasing_needs_bins_within_the_text(trained_lin):
    with pytest.raises(ValueError, match=r"--k 0 120: each k is a share of a text's tokens in \(0, 100\]"):
        measure_faithfulness(trained_lin.model, LIN.heads[0], batches_of(trained_lin, rows=4), ks=(0, 120))


def test_an_example_with_nothing_to_rank_is_skipped_and_counted():
    """An all-padding row (a text without a concept, for STCKA) has no token to rank: it is left out of every
    figure and counted, and the others' figures are finite."""
    head = LIN.heads[0]
    config = tiny_config(LIN)
    model = head.model_class(config).eval()
    report = measure_faithfulness(model, head, [make_inputs(head, config, [6, 0, 4], seed=3)], ig_steps=2)
    assert report.examples == 2 and report.skipped == 1
    assert all(math.isfinite(e.mean) for e in report.comprehensiveness["attention"])
    with pytest.raises(ValueError, match=r"no example to measure: the rows hold no token to rank \(1 without one\)"):
        measure_faithfulness(model, head, [make_inputs(head, config, [0], seed=3)], ig_steps=2)


def test_a_relation_episode_is_measured_with_its_entities_following_their_tokens():
    """HAPN reading a relation's entity positions: every erasure keeps them within the shorter text (the model
    checks them, `check_entity_positions`, and would refuse an index past its end), and the figures are finite."""
    hapn = ARCHITECTURES["hapn"]
    head = hapn.heads[0]
    config = tiny_config(hapn, use_entity_positions=True)
    model = head.model_class(config).eval()
    inputs = make_inputs(head, config, [7, 5], seed=1)
    assert "entity_positions" in inputs
    report = measure_faithfulness(model, head, [inputs], ks=(10, 50), ig_steps=4)
    assert report.examples == inputs["input_ids"].shape[0] * inputs["input_ids"].shape[1]
    assert all(math.isfinite(e.mean) for row in report.comprehensiveness.values() for e in row)
