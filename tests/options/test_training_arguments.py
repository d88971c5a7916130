"""`HfAttnTrainingArguments`: transformers' `Seq2SeqTrainingArguments` with hf_attn's defaults (the torch-free
`HfAttnTrainingDefaults` first, so that its fields win), the data seeded by the seed, and `--resume_from_checkpoint
true` read as the last checkpoint."""

from __future__ import annotations

import dataclasses

from transformers import Seq2SeqTrainingArguments

from hf_attn.options.arguments import HfAttnTrainingDefaults
from hf_attn.options.training_arguments import HfAttnTrainingArguments


def test_hf_attns_defaults_win_over_transformers(tmp_path):
    args = HfAttnTrainingArguments(output_dir=str(tmp_path))
    ours = {item.name: item.default for item in dataclasses.fields(HfAttnTrainingDefaults)}
    theirs = Seq2SeqTrainingArguments(output_dir=str(tmp_path))
    # A field transformers has not (`overwrite_output_dir`, gone in transformers 5) is hf_attn's alone.
    changed = [
        name for name, default in ours.items() if default is not None and default != getattr(theirs, name, None)
    ]
    assert changed  # the defaults are hf_attn's own, not a copy of transformers'
    for name in changed:
        assert getattr(args, name) == ours[name], name
    assert isinstance(args, Seq2SeqTrainingArguments) and args.predict_with_generate is False


def test_the_data_seed_follows_the_seed_and_true_resumes_the_last_checkpoint(tmp_path):
    args = HfAttnTrainingArguments(output_dir=str(tmp_path), seed=7, resume_from_checkpoint="True")
    assert args.data_seed == 7 and args.resume_from_checkpoint is True
    kept = HfAttnTrainingArguments(output_dir=str(tmp_path), seed=7, data_seed=3, resume_from_checkpoint="ckpt")
    assert kept.data_seed == 3 and kept.resume_from_checkpoint == "ckpt"
    assert HfAttnTrainingArguments(output_dir=str(tmp_path)).use_cpu is True  # no accelerator on this machine
