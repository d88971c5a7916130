"""Saves and checkpoints (hf_attn.utils.saving): a save is staged and atomic, a kill during it leaves the earlier or
the new weights, a full disk is said in one line with the earlier model kept; a checkpoint that is complete but does
not load is passed over on resume and named, and one whose save was killed is skipped."""

from __future__ import annotations

import errno
import json
import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from transformers import TrainerCallback

from hf_attn.commands.train import train
from hf_attn.registry.table import ARCHITECTURES
from hf_attn.utils.locks import LOCK_NAME
from hf_attn.utils.saving import STAGING_PREFIX, SaveError, checkpoint_problem, last_complete_checkpoint
from tests.helpers import head_of, temporary_files, tiny_config

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


# A ~100 MB model saved by forked children (the parent imports once). Each stdin line is `seed delay`: a child
# builds the model of that seed, prints its weights' fingerprint, tells the parent it starts `save_pretrained` and
# prints "saved" after it; the parent kills it `delay` seconds after the start (never when delay < 0) and prints
# "done <seconds from the start to the child's end>". The parent kills its own unreaped child: no pid reuse.
SAVER = textwrap.dedent(
    """
    import os, signal, sys, time
    import torch
    from hf_attn import LinSelfAttentiveConfig, LinSelfAttentiveForSequenceClassification

    folder = sys.argv[1]
    config = LinSelfAttentiveConfig(vocab_size=100_000, embedding_size=256, hidden_size=8, attention_hidden_size=8,
                                    classifier_hidden_size=8)
    for line in sys.stdin:
        seed, delay = line.split()
        started, ready = os.pipe()
        pid = os.fork()
        if pid == 0:
            torch.manual_seed(int(seed))
            model = LinSelfAttentiveForSequenceClassification(config)
            print("fingerprint", repr(float(model.get_input_embeddings().weight[:64].detach().double().sum())),
                  flush=True)
            os.write(ready, b"s")
            model.save_pretrained(folder)
            print("saved", flush=True)
            os._exit(0)
        os.read(started, 1)
        start = time.perf_counter()
        if float(delay) >= 0:
            time.sleep(float(delay))
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        print("done", time.perf_counter() - start, flush=True)
    """
)


def fingerprint_of(folder) -> float:
    from hf_attn.models.lin_self_attentive.modeling_lin_self_attentive import LinSelfAttentiveForSequenceClassification

    model = LinSelfAttentiveForSequenceClassification.from_pretrained(folder)
    return float(model.get_input_embeddings().weight[:64].detach().double().sum())


def test_a_save_killed_at_random_moments_leaves_the_earlier_or_the_new_weights(tmp_path):
    """Ten kills at least, and more (up to 30) until three fell inside a save: on a loaded machine a save takes
    longer or shorter than the first one, which sets the window the kills fall in."""
    folder = tmp_path / "model"
    log = open(tmp_path / "saver.log", "w")  # noqa: SIM115
    saver = subprocess.Popen([sys.executable, "-c", SAVER, str(folder)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=log, text=True, bufsize=1)  # fmt: skip

    def save(seed: int, delay: float = -1.0) -> tuple[float, bool, float]:
        """The new weights' fingerprint, whether the save finished, and the seconds it ran."""
        saver.stdin.write(f"{seed} {delay}\n")
        saver.stdin.flush()
        fingerprint, finished = None, False
        while True:
            line = saver.stdout.readline().split()
            assert line, f"the saver stopped: {(tmp_path / 'saver.log').read_text()[-2000:]}"
            if line[0] == "fingerprint":
                fingerprint = float(line[1])
            elif line[0] == "saved":
                finished = True
            elif line[0] == "done":
                return fingerprint, finished, float(line[1])

    try:
        earlier, finished, duration = save(0)  # one whole save: the window the kills fall in
        assert finished and fingerprint_of(folder) == earlier and temporary_files(folder) == []
        moments, interrupted, kept_new, kills = random.Random(36), 0, 0, 0
        for seed in range(1, 31):
            if kills >= 10 and interrupted >= 3:
                break
            kills += 1
            new, finished, _ = save(seed, moments.uniform(0, 1.1 * duration))
            interrupted += not finished
            loaded = fingerprint_of(folder)
            assert loaded in (earlier, new), f"kill {seed}: the folder holds neither the earlier nor the new weights"
            kept_new += loaded == new
            earlier = loaded
            # A killed save leaves at most its staging folder and its lock file (which nobody holds: the OS released
            # the lock with the process), both removed by the next save.
            leftovers = temporary_files(folder)
            assert all(name.startswith(STAGING_PREFIX) or name == LOCK_NAME for name in leftovers), leftovers
        last, finished, _ = save(31)
        assert finished and fingerprint_of(folder) == last
        assert temporary_files(folder) == []  # the stale staging folders went with the next save
    finally:
        saver.stdin.close()
        saver.wait(timeout=60)
        log.close()
    print(f"{interrupted} of {kills} kills fell inside a save of {duration:.2f} s; {kept_new} left the new weights")
    assert interrupted >= 3, f"only {interrupted} of {kills} kills fell inside a save"


def test_a_save_over_an_earlier_one_removes_its_stale_shards(tmp_path):
    model, _, _ = head_of("lin_self_attentive", "LinSelfAttentiveForSequenceClassification")
    (tmp_path / "model-00001-of-00002.safetensors").write_bytes(b"old shard")
    (tmp_path / "model.safetensors.index.json").write_text("{}")
    (tmp_path / f"{STAGING_PREFIX}killed").mkdir()
    model.save_pretrained(tmp_path)
    names = sorted(path.name for path in tmp_path.iterdir())
    assert "model.safetensors" in names and "config.json" in names
    assert not [name for name in names if "-of-" in name or name.endswith(".index.json")]
    assert temporary_files(tmp_path) == []
    type(model).from_pretrained(tmp_path)


def test_resuming_skips_a_checkpoint_whose_save_was_killed(tmp_path):
    from safetensors.torch import save_file

    for step, complete in ((2, True), (4, True), (6, False)):
        checkpoint = tmp_path / f"checkpoint-{step}"
        checkpoint.mkdir()
        save_file({"weight": torch.zeros(2)}, checkpoint / "model.safetensors")
        if complete:
            (checkpoint / "trainer_state.json").write_text(json.dumps({"global_step": step}))
    skipped = []
    assert last_complete_checkpoint(tmp_path, skipped.append) == str(tmp_path / "checkpoint-4")
    assert skipped == [f"skipped checkpoint-6: {tmp_path / 'checkpoint-6' / 'trainer_state.json'} is missing (the "
                       "save did not complete)"]  # fmt: skip
    assert last_complete_checkpoint(tmp_path / "none") is None


def test_a_write_fault_is_found_along_the_causes_of_a_wrapping_error():
    """`datasets` wraps a refused write in an error of its own: `write_fault` finds the OS's refusal behind it, and
    nothing behind an error that is not one."""
    import errno

    from hf_attn.utils.saving import write_fault

    full = OSError(errno.ENOSPC, "No space left on device")
    try:
        try:
            raise full
        except OSError as error:
            raise RuntimeError("An error occurred while generating the dataset") from error
    except RuntimeError as wrapped:
        assert write_fault(wrapped) is full
    assert write_fault(FileNotFoundError(errno.ENOENT, "missing")) is None
    assert write_fault(ValueError("bad row")) is None
