"""What a run asks of its data (`hf_attn.data.request`): one frozen request built from the options, and the one rule
for data without a held-out split."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest
from datasets import Dataset

from hf_attn.data.request import Columns, DataRequest, HeldOut, hold_out
from hf_attn.options.arguments import HfAttnArguments
from hf_attn.registry.row import TokenizerColumn


def test_the_options_build_one_frozen_request():
    options = HfAttnArguments(
        dataset="reviews.csv", text_column="review", label_column="stars", eval_fraction=0.2, streaming=True,
        column_names=["review", "stars"], preprocessing_num_workers=2, overwrite_cache=True, max_eval_samples=300,
    )  # fmt: skip
    concepts = TokenizerColumn("concept_column", "concepts", "tags")
    request = options.data_request(seed=7, columns=[concepts])
    assert request.columns == Columns(
        text="review", label="stars", tokenizer=(("concept_column", "concepts", "tags"),),
        header=("review", "stars"), strings=("review", "stars", "tags"),
    )  # fmt: skip
    assert request.held_out == HeldOut(fraction=0.2, seed=7, stream_rows=300)
    assert (request.streaming, request.fresh, request.workers) == (True, True, 2)
    assert request.columns.keep == ("tags",)
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.streaming = False


def test_a_request_is_built_without_torch_or_datasets():
    """`hf-attn train --help` answers from the options alone: building a request loads neither."""
    code = (
        "import sys; from hf_attn.options.arguments import HfAttnArguments; "
        "HfAttnArguments(dataset='d.csv').data_request(); "
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
