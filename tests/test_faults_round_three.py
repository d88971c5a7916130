"""Reliability, round three (issue 49): faults met on a shared machine or a long run. A checkpoint that is complete
but does not load is passed over on resume and named; a run into a folder another run is writing is refused at once,
naming the holder; a save the file system refuses (no space) says so in one line and keeps the earlier model."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from transformers import TrainerCallback

from hf_attn.registry import ARCHITECTURES
from hf_attn.training import train
from hf_attn.utils.locks import LOCK_NAME, FolderInUseError
from hf_attn.utils.saving import STAGING_PREFIX, SaveError, checkpoint_problem
from tests.helpers import REPO_ROOT

SIZES = {key: value for key, value in ARCHITECTURES["lin_self_attentive"].tiny_config.items()
         if key not in ("vocab_size", "num_labels", "pad_token_id")}  # fmt: skip
RUN = {"arch": "lin_self_attentive", "num_train": 32, "num_eval": 8, "batch_size": 8, "config_overrides": SIZES,
       "disable_tqdm": True, "logging_steps": 100, "report_to": "none"}  # fmt: skip


class Steps(TrainerCallback):
    """Records the global step after each optimizer step: which steps a (resumed) run trained."""

    def __init__(self) -> None:
        self.steps: list[int] = []

    def on_step_end(self, args, state, control, **kwargs):
        self.steps.append(state.global_step)


def cut_in_half(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


# ---------------------------------------------------------------------------------------------------------------
# A checkpoint that does not load
# ---------------------------------------------------------------------------------------------------------------


def test_resume_passes_over_checkpoints_that_do_not_load_and_names_each(tmp_path, capsys):
    """checkpoint-6's weights cut to half their size, checkpoint-4's optimizer too: `--resume_from_checkpoint true`
    names both with the file and the reason, trains on from checkpoint-2 (steps 3 to 6 again), deletes nothing."""
    folder = tmp_path / "run"
    train(folder, **RUN, max_steps=6, save_strategy="steps", save_steps=2)
    cut_in_half(folder / "checkpoint-6" / "model.safetensors")
    cut_in_half(folder / "checkpoint-4" / "optimizer.pt")
    assert "model.safetensors does not load" in checkpoint_problem(folder / "checkpoint-6")
    assert "optimizer.pt" in checkpoint_problem(folder / "checkpoint-4")
    assert checkpoint_problem(folder / "checkpoint-2") is None
    capsys.readouterr()

    steps = Steps()
    result = train(folder, **RUN, max_steps=6, save_strategy="steps", save_steps=2, resume_from_checkpoint=True,
                   callbacks=[steps])  # fmt: skip
    printed = capsys.readouterr().out
    assert f"[hf-attn] skipped checkpoint-6: {folder / 'checkpoint-6' / 'model.safetensors'} does not load" in printed
    assert f"[hf-attn] skipped checkpoint-4: {folder / 'checkpoint-4' / 'optimizer.pt'}" in printed
    assert steps.steps == [3, 4, 5, 6], steps.steps
    assert result.trainer.state.global_step == 6
    assert sorted(path.name for path in folder.glob("checkpoint-*")) == [
        "checkpoint-2",
        "checkpoint-4",
        "checkpoint-6",
    ]


def test_an_explicit_checkpoint_that_does_not_load_is_refused_naming_the_file(tmp_path):
    folder = tmp_path / "run"
    train(folder, **RUN, max_steps=2, save_strategy="steps", save_steps=2)
    checkpoint = folder / "checkpoint-2"
    cut_in_half(checkpoint / "model.safetensors")
    before = sorted(path.name for path in checkpoint.iterdir())
    with pytest.raises(ValueError, match=rf"--resume_from_checkpoint {checkpoint}: {checkpoint}/model.safetensors "
                                         r"does not load \(.*\)\. Nothing was changed"):  # fmt: skip
        train(folder, **RUN, max_steps=4, resume_from_checkpoint=str(checkpoint), overwrite_output_dir=True)
    assert sorted(path.name for path in checkpoint.iterdir()) == before


def test_a_checkpoint_with_a_corrupted_byte_is_caught_by_its_record(tmp_path):
    """Not cut short but changed: the weights' sha256 record (in their header) no longer matches; an optimizer
    whose stored bytes changed fails its zip CRC."""
    folder = tmp_path / "run"
    train(folder, **RUN, max_steps=2, save_strategy="steps", save_steps=2)
    checkpoint = folder / "checkpoint-2"
    weights = checkpoint / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-3] ^= 0xFF
    weights.write_bytes(bytes(data))
    assert "does not match the sha256 recorded in its header" in checkpoint_problem(checkpoint)
    weights.write_bytes(bytes(data[:-3]) + bytes([data[-3] ^ 0xFF]) + bytes(data[-2:]))  # restored
    assert checkpoint_problem(checkpoint) is None
    optimizer = checkpoint / "optimizer.pt"
    data = bytearray(optimizer.read_bytes())
    data[len(data) // 3] ^= 0xFF
    optimizer.write_bytes(bytes(data))
    assert "optimizer.pt" in checkpoint_problem(checkpoint)


# ---------------------------------------------------------------------------------------------------------------
# One run per output folder
# ---------------------------------------------------------------------------------------------------------------


def _cli(*arguments: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "TOKENIZERS_PARALLELISM": "false"}
    return subprocess.Popen([sys.executable, "-m", "hf_attn.cli", *arguments], cwd=REPO_ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip


def _wait_for(path: Path, process: subprocess.Popen, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def test_a_second_run_into_a_folder_in_use_is_refused_naming_the_holder(tmp_path):
    """A Lin run and a HAN run into one folder: the one that comes second, while the first trains, exits 1 with one
    line naming the folder and the first run's process; the first finishes, exit 0, and the folder holds its
    model."""
    folder = tmp_path / "shared"
    first = _cli("train", "--arch", "lin_self_attentive", "--output_dir", str(folder), "--num_train", "400",
                 "--num_eval", "16", "--max_steps", "40", "--batch-size", "8", "--no-progress", "--report_to",
                 "none")  # fmt: skip
    _wait_for(folder / LOCK_NAME, first)
    second = _cli("train", "--arch", "han", "--output_dir", str(folder), "--num_train", "16", "--num_eval", "8",
                  "--max_steps", "1", "--no-progress", "--report_to", "none")  # fmt: skip
    _, error = second.communicate(timeout=300)
    assert second.returncode == 1, error
    assert error.strip().count("\n") == 0, error  # one line
    assert f"{folder} is in use by process {first.pid}: " in error and "this run into it was refused" in error, error
    assert first.poll() is None  # refused at once: the first run still trains
    _, error = first.communicate(timeout=600)
    assert first.returncode == 0, error
    assert '"model_type": "lin_self_attentive"' in (folder / "config.json").read_text()
    assert not (folder / LOCK_NAME).exists()


def test_a_killed_run_leaves_no_lock_and_a_save_into_a_held_folder_is_refused(tmp_path):
    """The lock is the OS's: a holder killed with SIGKILL releases it, and the next writer takes it. While it is
    held, a plain `save_pretrained` into the folder (another writer) is refused, naming the holder, and writes
    nothing."""
    from hf_attn.models.lin_self_attentive.modeling_lin_self_attentive import LinSelfAttentiveForSequenceClassification
    from tests.helpers import tiny_config

    folder = tmp_path / "held"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from hf_attn.utils.locks import folder_lock\n"
         "with folder_lock(sys.argv[1]):\n    print('held', flush=True); time.sleep(600)", str(folder)],
        cwd=REPO_ROOT, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)}, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "held"
        model = LinSelfAttentiveForSequenceClassification(tiny_config(ARCHITECTURES["lin_self_attentive"]))
        with pytest.raises(FolderInUseError, match=rf"{folder} is in use by process {holder.pid}: .*a save into it"):
            model.save_pretrained(folder)
        assert sorted(path.name for path in folder.iterdir()) == [LOCK_NAME]
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    model.save_pretrained(folder)  # the killed holder's lock went with its process
    assert (folder / "model.safetensors").is_file() and not (folder / LOCK_NAME).exists()


# ---------------------------------------------------------------------------------------------------------------
# A full disk
# ---------------------------------------------------------------------------------------------------------------


def full_disk_on_weights():
    """A weights writer that fails halfway as a full disk fails a write: the first half of the bytes reach the file,
    then `OSError(ENOSPC)`, what the operating system answers (simulated: a small full file system needs a mount)."""
    from safetensors.torch import save_file

    def save_half_then_fail(tensors, filename, metadata=None):
        save_file(tensors, filename, metadata=metadata)
        cut_in_half(Path(filename))
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(filename))

    return save_half_then_fail


def test_a_save_on_a_full_disk_says_so_and_keeps_the_earlier_model(tmp_path, monkeypatch):
    import transformers.modeling_utils

    from hf_attn.models.lin_self_attentive.modeling_lin_self_attentive import LinSelfAttentiveForSequenceClassification
    from tests.helpers import tiny_config

    folder = tmp_path / "model"
    config = tiny_config(ARCHITECTURES["lin_self_attentive"])
    LinSelfAttentiveForSequenceClassification(config).save_pretrained(folder)
    weights = (folder / "model.safetensors").read_bytes()
    monkeypatch.setattr(transformers.modeling_utils, "safe_save_file", full_disk_on_weights())
    message = f"no space left on device while saving to {folder}; the earlier model there is intact"
    with pytest.raises(SaveError, match=f"^{message}$"):
        LinSelfAttentiveForSequenceClassification(config).save_pretrained(folder)
    assert (folder / "model.safetensors").read_bytes() == weights
    assert not list(folder.glob(STAGING_PREFIX + "*")) and not (folder / LOCK_NAME).exists()


def test_hf_attn_train_on_a_full_disk_says_so_in_one_line(tmp_path, monkeypatch, capsys):
    """The run's final save (model, tokenizer, record, card, all staged) fails on the weights: one line, the
    earlier model in place, no staging folder."""
    import transformers.modeling_utils

    from hf_attn.cli import main

    folder = tmp_path / "run"
    arguments = ["train", "--arch", "lin_self_attentive", "--output_dir", str(folder), "--num_train", "16",
                 "--num_eval", "8", "--max_steps", "1", "--save_strategy", "no", "--no-progress",
                 "--report_to", "none"]  # fmt: skip
    main(arguments)
    weights = (folder / "model.safetensors").read_bytes()
    monkeypatch.setattr(transformers.modeling_utils, "safe_save_file", full_disk_on_weights())
    with pytest.raises(SystemExit) as raised:
        main([*arguments, "--overwrite_output_dir", "--seed", "1"])
    assert str(raised.value) == (
        f"hf-attn train: no space left on device while saving to {folder}; the earlier model there is intact "
        "(--debug shows the traceback)"
    )
    assert (folder / "model.safetensors").read_bytes() == weights
    assert not list(folder.glob(STAGING_PREFIX + "*")) and not (folder / LOCK_NAME).exists()


def test_a_full_disk_outside_a_staged_save_is_named_and_a_missing_input_keeps_its_message():
    """A checkpoint's own write (`Trainer`'s `torch.save` of the optimizer) meeting a full disk: the fault first;
    a missing input file, also an OSError, is not called a vanished folder."""
    from hf_attn.utils.errors import user_error

    full = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "runs/x/checkpoint-4/optimizer.pt")
    assert user_error(full) == f"no space left on device: {full}"
    missing = FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), "data/train.csv")
    assert user_error(missing) == str(missing)
    torch_save = RuntimeError("[enforce fail at inline_container.cc:664] . PytorchStreamWriter failed writing file "
                              "data/0: file write failed")  # fmt: skip
    assert user_error(torch_save).startswith("a checkpoint file could not be written (is the disk full?): ")
