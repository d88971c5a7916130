"""One writer per folder: an OS lock that a run or a save holds on the folder it writes, and that a second writer is
refused at once by, naming the folder and the process that holds it.

The lock is `fcntl.flock` on a file in the folder (`.hf_attn-lock`), which also says who holds it (process id and
command line). The operating system releases it when the holder's process ends, however it ends (a SIGKILL too), so
a killed run leaves no stale lock: the file may stay, but nobody holds it, and the next writer takes it. The holder
removes the file when it lets go. A process that opened the file just before its holder removed it would lock a
file no longer in the folder: after locking, the lock is taken again unless the folder still shows that very file.

A process may take the same folder's lock again while it holds it (`hf-attn train` holds its output folder from the
overwrite check to its last save, and that save takes the lock too). Without `fcntl` (Windows) no lock is taken.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: folders are not locked
    fcntl = None  # type: ignore[assignment]

LOCK_NAME = ".hf_attn-lock"
_HELD: dict[str, int] = {}  # folder (resolved) -> how many times this process holds its lock


class FolderInUseError(OSError):
    """Another process holds the lock of the folder this one was going to write."""


def lock_holder(folder: str | os.PathLike) -> str:
    """Who holds `folder`'s lock, as its file says (`process <pid>: <command>`), or "another process"."""
    try:
        text = (Path(folder) / LOCK_NAME).read_text().strip()
    except OSError:
        text = ""
    return text or "another process"


def _take(path: Path) -> int | None:
    """A descriptor of `path` locked exclusively, or `None` when another process holds it."""
    while True:
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(descriptor)
            return None
        try:  # the holder may have removed the file between our open and our lock: lock the one there now
            current = os.stat(path).st_ino
        except FileNotFoundError:
            current = None
        if current == os.fstat(descriptor).st_ino:
            return descriptor
        os.close(descriptor)


@contextmanager
def folder_lock(folder: str | os.PathLike, writer: str = "another writer") -> Iterator[Path]:
    """Holds `folder`'s lock (the folder is created if needed) while the block runs; yields the folder. Raises
    `FolderInUseError` at once, naming the folder and the holder, when another process holds it; `writer` says, in
    that message, what was refused (a run, a save)."""
    folder = Path(folder)
    key = str(folder.resolve())
    if fcntl is None or key in _HELD:
        _HELD[key] = _HELD.get(key, 0) + 1
        try:
            yield folder
        finally:
            _HELD[key] -= 1
            if not _HELD[key]:
                del _HELD[key]
        return
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / LOCK_NAME
    descriptor = _take(path)
    if descriptor is None:
        raise FolderInUseError(
            f"{folder} is in use by {lock_holder(folder)}: {writer} into it was refused, so that neither overwrites "
            "the other. Wait for it to finish, or choose another folder."
        )
    os.ftruncate(descriptor, 0)
    os.write(descriptor, f"process {os.getpid()}: {' '.join(sys.argv) or 'python'}\n".encode())
    _HELD[key] = 1
    try:
        yield folder
    finally:
        del _HELD[key]
        path.unlink(missing_ok=True)  # while still holding it: a waiting process then locks a fresh file
        os.close(descriptor)
