"""BI-Attention's semi-supervised term pays off: with few labels, training with the unlabelled parallel pairs
(α > 0) beats training on the labelled pairs alone (α = 0) on held-out documents whose first view lost the cue."""

from __future__ import annotations

import statistics

import datasets
import pytest
import transformers

from hf_attn.commands.train import train
from hf_attn.data import (
    NEGATIVE_CUES,
    POSITIVE_CUES,
    get_synthetic_task,
)
from hf_attn.models.bi_attention.synthetic_bi_attention import _pseudo_translate, bilingual_evidence_documents
from tests.helpers import sentence_words

CONFIG = {"embedding_size": 32, "word_hidden_size": 32, "sentence_hidden_size": 32, "attention_size": 32}
ALPHA = 20.0  # the scale at which ‖r_view1 − r_view2‖² competes with the cross-entropy on this task


def held_out_accuracy(tmp_path, alpha: float, seed: int) -> float:
    """Trains through `Trainer` on 2000 pairs (5% labelled, 95% unlabelled with label −100, mixed in the same
    batches) and returns the held-out accuracy."""
    transformers.logging.set_verbosity_error()
    datasets.disable_progress_bars()
    result = train(
        tmp_path,
        arch="bi_attention",
        num_train=2000,
        num_eval=500,
        seed=seed,
        epochs=10,
        learning_rate=5e-3,
        config_overrides={**CONFIG, "bilingual_loss_weight": alpha},
        disable_tqdm=True,
        save=False,
        logging_steps=10**9,
    )
    print(f"\nseed {seed}, α = {alpha}: held-out accuracy {result.metrics['accuracy']:.3f}")
    return result.metrics["accuracy"]


def compare(tmp_path, seeds: list[int]) -> tuple[float, float]:
    with_pairs = statistics.mean(held_out_accuracy(tmp_path, ALPHA, seed) for seed in seeds)
    labelled_only = statistics.mean(held_out_accuracy(tmp_path, 0.0, seed) for seed in seeds)
    print(f"mean over seeds {seeds}: α = {ALPHA} {with_pairs:.3f}, α = 0 {labelled_only:.3f}")
    return with_pairs, labelled_only


@pytest.mark.long  # two training runs to compare, 80 s of CPU (`make test-long`)
def test_unlabelled_pairs_raise_held_out_accuracy(tmp_path):
    # One seed in every run (measured: α = 20 0.722, α = 0 0.528; seed 1: 0.810 with pairs); more seeds below.
    with_pairs, labelled_only = compare(tmp_path, seeds=[0])
    assert with_pairs >= labelled_only + 0.12
    assert with_pairs >= 0.65


@pytest.mark.slow
def test_the_gain_holds_over_more_seeds(tmp_path):
    with_pairs, labelled_only = compare(tmp_path, seeds=[2, 3, 4, 5])
    assert with_pairs >= labelled_only + 0.12


def test_bilingual_documents_translate_word_by_word_and_mark_unlabelled_pairs():
    assert _pseudo_translate(["the", "food", "was", "good", "."]) == ["doofu", "ehtu", "doogu", "sawu", "."]
    assert _pseudo_translate(["the", "food", "was", "good", "."], failed_word=3) == ["doofu", "ehtu", "sawu", "."]
    data = bilingual_evidence_documents(400, seed=1, labelled_fraction=0.25, target_cue_drop=1.0)
    labelled = [row for row in data if row["labelled"]]
    assert 60 < len(labelled) < 140 and all(row["label"] == -100 for row in data if not row["labelled"])
    for row in data:
        source, target = sentence_words(row["text"]), sentence_words(row["translation"])
        assert len(source) == len(target)
        evidence = row["evidence_sentence"]
        for index, (sentence, translation) in enumerate(zip(source, target, strict=True)):
            failed = row["labelled"] and index == evidence  # target_cue_drop=1: labelled translations lose the cue
            if not failed:
                assert translation == _pseudo_translate(sentence)
            else:
                assert len(translation) == len(sentence) - 1
    held_out = bilingual_evidence_documents(50, seed=2, **get_synthetic_task("bilingual_documents").held_out_kwargs)
    for row in held_out:  # the held-out first view never has the cue, the second always does
        assert row["labelled"] and not any(w in POSITIVE_CUES + NEGATIVE_CUES for w in row["text"].split())
        cue_words = [w[:-1][::-1] for w in row["translation"].split() if w[:-1][::-1] in POSITIVE_CUES + NEGATIVE_CUES]
        assert len(cue_words) == 1
