"""The one line a user reads (hf_attn.utils.errors): the operating system's faults named for what they mean."""

from __future__ import annotations

import errno
import os


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
