"""What a run asks of its data (`hf_attn.data.request`): one frozen request built from the options, and the one rule
for data without a held-out split."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from types import SimpleNamespace

import pytest
from datasets import Dataset

from hf_attn.data.request import Columns, DataRequest, HeldOut, Scoring
from hf_attn.data.rows import hold_out, rows_to_score
from hf_attn.options.arguments import HfAttnArguments
from hf_attn.registry.row import TokenizerColumn


def test_the_options_build_one_frozen_request():
    options = HfAttnArguments(
        dataset="reviews.csv", text_column="review", label_column="stars", eval_fraction=0.2, streaming=True,
        column_names=["review", "stars"], preprocessing_num_workers=2, overwrite_cache=True, max_eval_samples=300,
    )  # fmt: skip
    concepts = TokenizerColumn("concept_column", "concepts", "tags")
    training = SimpleNamespace(
        seed=7, max_steps=5, num_train_epochs=3.0, per_device_train_batch_size=4, gradient_accumulation_steps=2,
        world_size=2,
    )  # fmt: skip
    request = DataRequest.of(options, [concepts], training)
    assert request.columns == Columns(
        text="review", label="stars", tokenizer=(("concept_column", "concepts", "tags"),),
        header=("review", "stars"), strings=("review", "stars", "tags"),
    )  # fmt: skip
    scoring = Scoring(rows=300, steps=5, batch=16, epochs=3.0)
    assert request.held_out == HeldOut(fraction=0.2, seed=7, stream_rows=300, scoring=scoring)
    assert DataRequest.of(options, [concepts]).held_out == HeldOut(fraction=0.2, stream_rows=300)
    assert (request.streaming, request.fresh, request.workers) == (True, True, 2)
    assert request.columns.keep == ("tags",)
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.streaming = False


def test_a_request_is_built_without_torch_or_datasets():
    """`hf-attn train --help` answers from the options alone: building a request loads neither."""
    code = (
        "import sys; from hf_attn.options.arguments import HfAttnArguments; "
        "from hf_attn.data.request import DataRequest; DataRequest.of(HfAttnArguments(dataset='d.csv'), []); "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'datasets'}))"
    )
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "[]\n"


def test_the_held_out_rule_draws_a_seeded_share_and_refuses_what_it_cannot():
    rows = Dataset.from_dict({"text": [f"text {i}" for i in range(20)]})
    request = DataRequest("reviews.csv", held_out=HeldOut(fraction=0.25, seed=1))
    held = hold_out(rows, request)
    assert (len(held.train), len(held.held_out), held.described) == (15, 5, "25% of train (seed 1)")
    assert not set(held.train["text"]) & set(held.held_out["text"])
    assert hold_out(rows, request).held_out["text"] == held.held_out["text"]
    for fraction, size in ((1.0, 20), (0.25, 1)):
        policy = dataclasses.replace(request.held_out, fraction=fraction)
        with pytest.raises(ValueError, match=r"--dataset reviews.csv has no held-out split: give --eval-split"):
            hold_out(rows.select(range(size)), dataclasses.replace(request, held_out=policy))


def test_a_training_run_scores_about_as_many_held_out_rows_as_it_trains_on():
    """The one rule for the held-out rows scored (`rows_to_score`): `--max_eval_samples`, else as many as the run
    trains on and at least MIN_EVAL_SAMPLES, a seeded sample; every row where the request has no scoring."""
    train = Dataset.from_dict({"text": [f"train {i}" for i in range(3000)]})
    held_out = Dataset.from_dict({"text": [f"held {i}" for i in range(5000)]})

    def scored(**scoring):
        request = DataRequest("d.csv", held_out=HeldOut(seed=3, scoring=Scoring(**scoring) if scoring else None))
        return rows_to_score(train, held_out, request)

    assert scored() == (held_out, None)
    rows, note = scored(rows=100)
    assert len(rows) == 100 and "scoring 100 of 5000 rows, a sample (seed 3): --max_eval_samples" in note
    assert scored(rows=100)[0]["text"] == rows["text"] and rows["text"] != held_out["text"][:100]
    assert len(scored(steps=5, batch=16)[0]) == 2000  # 80 rows trained: at least MIN_EVAL_SAMPLES
    assert len(scored(steps=300, batch=10)[0]) == 3000
    assert len(scored(epochs=1.5)[0]) == 4500
    assert scored(epochs=2.0) == (held_out, None)
