"""One writer a folder (hf_attn.utils.locks): a run into a folder another run is writing is refused at once, naming
the holder; a holder killed with SIGKILL leaves no lock; a plain `save_pretrained` into a held folder is refused."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hf_attn.registry.table import ARCHITECTURES
from hf_attn.utils.locks import LOCK_NAME, FolderInUseError
from tests.helpers import REPO_ROOT


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


@pytest.mark.long  # two `hf-attn train` processes, one waiting on the other (`make test-long`)
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
