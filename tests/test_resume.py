"""A training run killed with SIGKILL mid-epoch and resumed from its last checkpoint ends with exactly the weights of
an uninterrupted run (same seed): for a sentence (LSTMN), a document (HAN) and a seq2seq (Transformer) architecture.
Checkpoints every 4 steps, 6 steps an epoch, killed after step 7: the resumed run restarts mid-epoch from step 4
(weights, optimizer, schedule, dropout RNG and data order restored) and crosses the epoch boundary."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap

import pytest
import torch

from hf_attn.commands.train import parse_arguments, train
from hf_attn.registry.table import get_architecture

KILL_AFTER_STEP = 7
KILLED_RUN = textwrap.dedent(
    f"""
    import json, os, signal, sys
    from transformers import TrainerCallback
    from hf_attn.commands.train import train

    class KillMidEpoch(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step == {KILL_AFTER_STEP}:
                os.kill(os.getpid(), signal.SIGKILL)

    train(**json.loads(sys.argv[1]), callbacks=[KillMidEpoch()])
    """
)


def run_options(arch: str, output_dir) -> dict:
    sizes = {
        key: value
        for key, value in get_architecture(arch).tiny_config.items()
        if key not in ("vocab_size", "num_labels", "pad_token_id")
    }
    return {
        "output_dir": str(output_dir),
        "arch": arch,
        "num_train": 48,
        "num_eval": 8,
        "batch_size": 8,
        "max_steps": 10,
        "save_steps": 4,
        "seed": 3,
        "learning_rate": 1e-2,
        "config_overrides": sizes,
        "disable_tqdm": True,
        "logging_steps": 100,
        "num_beams": 1,
    }


@pytest.mark.parametrize("arch", ["lstmn", "han", "vaswani_transformer"])
def test_killed_and_resumed_training_equals_uninterrupted_training(arch, tmp_path):
    options = run_options(arch, tmp_path / "killed")
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_RUN, json.dumps(options)], capture_output=True, text=True, timeout=600
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    checkpoints = sorted(path.name for path in (tmp_path / "killed").glob("checkpoint-*"))
    assert checkpoints == ["checkpoint-4"], checkpoints  # killed after step 7: step 8's checkpoint never came

    # The uninterrupted run gets the killed run's vocabulary: the BPE trainer orders tied merges by hash-map order,
    # so two runs of the same seed may train different ones. The resumed run must find it in the checkpoint.
    reference = run_options(arch, tmp_path / "uninterrupted")
    uninterrupted = train(**reference, tokenizer=str(tmp_path / "killed" / "checkpoint-4")).model.state_dict()

    resumed = train(**options, resume_from_checkpoint=True)
    assert resumed.trainer.state.global_step == 10
    resumed_weights = resumed.model.state_dict()
    assert resumed_weights.keys() == uninterrupted.keys()
    for name, weight in uninterrupted.items():
        assert torch.equal(resumed_weights[name], weight), name


def test_resuming_without_a_checkpoint_is_a_clear_error(tmp_path):
    options = run_options("lstmn", tmp_path / "never-ran")
    with pytest.raises(ValueError, match="checkpoint"):
        train(**options, resume_from_checkpoint=True)


def test_the_command_line_takes_checkpointing_options():
    """transformers' own flags, through `hf-attn train`'s HfArgumentParser (`true`: the last checkpoint)."""
    base = ["--output-dir", "runs/x", "--save_steps", "4", "--tokenizer", "runs/tok"]
    options, args = parse_arguments([*base, "--resume_from_checkpoint", "true"])
    assert (args.save_steps, args.resume_from_checkpoint, options.tokenizer) == (4, True, "runs/tok")
    _, args = parse_arguments([*base, "--resume-from-checkpoint", "runs/x/checkpoint-4"])
    assert args.resume_from_checkpoint == "runs/x/checkpoint-4"
    assert parse_arguments(base)[1].resume_from_checkpoint is None


def test_elmo_refuses_a_checkpoint_path_it_cannot_assign_to_a_stage(tmp_path):
    options = run_options("elmo", tmp_path / "elmo")
    with pytest.raises(ValueError, match="two stages"):
        train(**options, resume_from_checkpoint=str(tmp_path / "elmo" / "checkpoint-4"))
