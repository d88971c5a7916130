"""Saves that a kill cannot half-do, and folders that a new save does not silently replace.

**Atomic saves.** `staged_save(folder)` gives a staging folder inside `folder` (a hidden `.hf_attn-saving-*`, on the
same filesystem, so that every move is one `os.replace`). The save writes everything there; on success the files
move into `folder` one rename each, the weights (`*.safetensors`) last, and the staging folder goes. The weights
carry their own integrity record (`hf_attn.utils.integrity`), so the weights file is complete, recorded and in place
in one rename: at any moment a kill leaves `folder` with the earlier weights or the new ones, never a truncated or
unrecorded file. A staging folder left by a killed save is removed by the next save into the same folder.

What this does not make atomic: the set of files as a whole. The other files (config, code, tokenizer) move first,
each atomically, so a kill between those moves and the weights' leaves the new config beside the earlier weights:
the earlier save when the config is unchanged (a model saved again, a checkpoint), a mix when it changed. A sharded
save (weights over transformers' 50 GB default shard size) moves its shards one by one.

**No silent overwrite.** `holds_model(folder)` says whether a folder holds a saved model (a `config.json` beside
weights); `refuse_overwrite` turns that into an error naming the flag that allows it, for `hf-attn train` and the
conversion scripts. A save holds the folder's lock (`hf_attn.utils.locks`) from its staging to its last move: a
second writer into the same folder at the same time is refused, naming the folder and the holder, instead of the two
interleaving their files.

**I/O faults named.** A save that fails for lack of space, for permissions or because its folder vanished raises a
`SaveError` (an `OSError`) that says which, where, and what became of the folder: the earlier model stays (the
staging folder goes), so its one line says "the earlier model there is intact".

**Checkpoints that load.** `checkpoint_problem` says why a `Trainer` checkpoint cannot be resumed from (a save a kill
cut short, weights that do not load or do not match their record, an optimizer or scheduler file that is truncated
or corrupted, a trainer state that does not parse); `last_complete_checkpoint` takes the newest one without a
problem and names each one it passes over.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import tempfile
import zipfile
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from .locks import folder_lock

if TYPE_CHECKING:
    from transformers import TrainingArguments

STAGING_PREFIX = ".hf_attn-saving-"  # the staging folders of saves in progress (or killed)
WEIGHT_SUFFIXES = (".safetensors", ".safetensors.index.json", ".bin", ".bin.index.json")
SHARD = re.compile(r".*-\d{5}-of-\d{5}\.(safetensors|bin)")


def is_weight_file(name: str) -> bool:
    """Whether a file name is a weights file or a shard index (moved last, checked for stale shards)."""
    return name.endswith(WEIGHT_SUFFIXES)


def is_staging(folder: str | os.PathLike) -> bool:
    """Whether `folder` is the staging folder of a save in progress: what is written there is staged already (the
    enclosing `staged_save` moves it in), so a save into it writes directly."""
    return Path(folder).name.startswith(STAGING_PREFIX)


def stale_staging(folder: str | os.PathLike) -> list[Path]:
    """The staging folders of earlier saves into `folder` that did not finish (killed)."""
    folder = Path(folder)
    return sorted(folder.glob(STAGING_PREFIX + "*")) if folder.is_dir() else []


class SaveError(OSError):
    """A save that the file system refused (no space, no permission, its folder gone), said in one line; `fault`
    is which."""

    def __init__(self, message: str, fault: str) -> None:
        super().__init__(message)
        self.fault = fault


# errno -> what a user reads; a library that reports the OS error in its message only (safetensors' Rust I/O) is
# matched on the OS's own words. `WRITE_FAULTS`: those only a write meets (a missing input file is also ENOENT).
_IO_FAULTS = {
    errno.ENOSPC: "no space left on device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
    errno.EROFS: "read-only file system",
    errno.ENOENT: "the folder vanished",
}
_IO_WORDS = {
    "No space left on device": errno.ENOSPC,
    "Disk quota exceeded": errno.EDQUOT,
    "Permission denied": errno.EACCES,
    "Read-only file system": errno.EROFS,
    "No such file or directory": errno.ENOENT,
}


WRITE_FAULTS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS}


def io_errno(error: BaseException) -> int | None:
    """The OS error behind `error`: an `OSError`'s errno, or the one a library's message quotes; else `None`."""
    code = getattr(error, "errno", None) if isinstance(error, OSError) else None
    if code is None:
        code = next((number for words, number in _IO_WORDS.items() if words in str(error)), None)
    return code


# A permission refused: a write to a folder this process may not write (or a read of a file it may not read).
PERMISSION_FAULTS = {errno.EACCES, errno.EPERM}


def write_fault(error: BaseException, faults: Collection[int] = WRITE_FAULTS) -> BaseException | None:
    """The write the file system refused (an errno of `faults`) behind `error`, itself or along its causes
    (`datasets` wraps a failed write in a `DatasetGenerationError`), or `None`."""
    seen: BaseException | None = error
    while seen is not None:
        if io_errno(seen) in faults:
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def io_fault(error: BaseException) -> str | None:
    """What the file system refused, when `error` is a write that failed for lack of space, permissions or a
    vanished folder (`io_errno`), in a user's words; else `None`."""
    return _IO_FAULTS.get(io_errno(error))


@contextmanager
def staged_save(folder: str | os.PathLike) -> Iterator[Path]:
    """Yields a fresh staging folder inside `folder` (created if needed), holding `folder`'s lock; when the block
    ends without an error, moves its files into `folder` (`commit_staged`). The staging folder is removed either
    way, and stale ones of killed saves before it starts. A write the file system refuses is a `SaveError` naming
    the fault and the folder. Into another save's staging folder (`is_staging`: a training run's finished folder,
    model, tokenizer and card), the files are staged already: they are written there directly, moved in by that
    save."""
    folder = Path(folder)
    if is_staging(folder):
        yield folder
        return
    folder.mkdir(parents=True, exist_ok=True)
    with folder_lock(folder, writer="a save"):
        earlier = "the earlier model there is intact" if holds_model(folder) else "nothing was saved there"
        for stale in stale_staging(folder):
            shutil.rmtree(stale, ignore_errors=True)
        staging = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=folder))
        try:
            yield staging
            commit_staged(staging, folder)
        except Exception as error:
            # a save nested in this one (a model's own staged save into our staging folder) names this folder
            fault = error.fault if isinstance(error, SaveError) else io_fault(error)
            if fault is None:
                raise
            raise SaveError(f"{fault} while saving to {folder}; {earlier}", fault) from error
        finally:
            shutil.rmtree(staging, ignore_errors=True)


def commit_staged(staging: Path, folder: Path) -> None:
    """Moves every file of `staging` to the same relative path in `folder`: the other files first, then the
    weights (shards before their index), each with one `os.replace`; then removes weights of an earlier save that
    the new one does not have (stale shards, a stale index), as transformers' `save_pretrained` does."""
    files = sorted(path for path in staging.rglob("*") if path.is_file())
    weights = [path for path in files if is_weight_file(path.name)]
    others = [path for path in files if not is_weight_file(path.name)]
    weights.sort(key=lambda path: path.name.endswith(".index.json"))  # shards, then the index naming them
    for path in others + weights:
        target = folder / path.relative_to(staging)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(path, target)
    written = {path.name for path in weights}
    if written:
        sharded = any(name.endswith(".index.json") for name in written)
        for old in folder.iterdir():
            if old.name in written or not old.is_file():
                continue
            if SHARD.fullmatch(old.name) or (
                not sharded and old.name.endswith(".index.json") and is_weight_file(old.name)
            ):
                old.unlink(missing_ok=True)


def holds_model(folder: str | os.PathLike) -> bool:
    """Whether `folder` holds a saved model: a `config.json` beside a weights file."""
    folder = Path(folder)
    if not (folder / "config.json").is_file():
        return False
    return any(path.is_file() and is_weight_file(path.name) for path in folder.iterdir())


def refuse_overwrite(folder: str | os.PathLike, allow: str, what: str = "the new model") -> None:
    """Raises `FileExistsError` when `folder` holds a saved model; `allow` says how to go on anyway (the flag that
    replaces it)."""
    if holds_model(folder):
        raise FileExistsError(
            f"{folder} already holds a saved model, which {what} would replace. Choose another folder, or {allow}."
        )


def checkpoint_problem(path: str | os.PathLike) -> str | None:
    """Why `Trainer` cannot resume from the checkpoint folder `path`, naming the file, or `None` when every part
    loads: its trainer state (`trainer_state.json`, which `Trainer` writes last: without it the save did not
    complete) parses, its weights open and match the record in their header (`hf_attn.utils.integrity`), and its
    optimizer, scheduler and random states (zip archives of `torch.save`) are whole, every member's CRC checked.
    Nothing is unpickled, and nothing is changed."""
    from .integrity import check_loads, verify_file

    path = Path(path)
    if not path.is_dir():
        return f"{path} is not a checkpoint folder"
    state = path / "trainer_state.json"
    if not state.is_file():
        return f"{state} is missing (the save did not complete)"
    try:
        json.loads(state.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        return f"{state} does not parse ({' '.join(str(error).split())})"
    files = sorted(path.iterdir())
    if not any(is_weight_file(file.name) for file in files):
        return f"{path} holds no weights file"
    for file in files:
        try:
            if file.name.endswith(".safetensors"):
                check_loads(file)  # its header parses and its tensors cover the file
                verify_file(file)  # its bytes against the sha256 in its header, when it has one
            elif file.suffix in (".pt", ".pth", ".bin"):  # torch.save's zip archives
                if not zipfile.is_zipfile(file):  # its directory, at the end, is gone: cut short
                    return f"{file} is truncated or corrupted (not a whole torch.save archive)"
                with zipfile.ZipFile(file) as archive:
                    broken = archive.testzip()
                if broken is not None:
                    return f"{file} is corrupted (its member {broken} fails its CRC)"
        except (OSError, zipfile.BadZipFile, EOFError) as error:
            message = " ".join(str(error).split())
            return message if str(file) in message else f"{file} does not load ({message})"
    return None


def report_on_main(args: TrainingArguments, prefix: str = "") -> Callable[[str], None]:
    """A `report` for `last_complete_checkpoint`: prints `[hf-attn] <prefix><line>` from a run's main process only
    (`args.process_index` 0), so a distributed run names each passed-over checkpoint once."""

    def say(line: str) -> None:
        if args.process_index == 0:
            print(f"[hf-attn] {prefix}{line}", flush=True)

    return say


def last_complete_checkpoint(folder: str | os.PathLike, report: Callable[[str], None] | None = None) -> str | None:
    """The newest `checkpoint-N` of a `Trainer` output folder that can be resumed from (`checkpoint_problem`), or
    `None`; each newer one passed over is named, with why, through `report` (one line each). transformers'
    `get_last_checkpoint` takes the highest N, even one a kill interrupted or a disk fault damaged."""
    folder = Path(folder)
    if not folder.is_dir():
        return None
    numbered = [
        (int(match.group(1)), path)
        for path in folder.iterdir()
        if path.is_dir() and (match := re.fullmatch(r"checkpoint-(\d+)", path.name))
    ]
    for _, path in sorted(numbered, reverse=True):
        problem = checkpoint_problem(path)
        if problem is None:
            return str(path)
        if report is not None:
            report(f"skipped {path.name}: {problem}")
    return None


def resume_point(
    resume: str | bool | None, folder: str, started: bool = True, report: Callable[[str], None] | None = None
) -> str | bool | None:
    """What `Trainer.train(resume_from_checkpoint=...)` gets: the path asked for, refused in one line naming the file
    when it does not load (`checkpoint_problem`), or for `True` the newest checkpoint of `folder` that loads
    (`last_complete_checkpoint`: one a kill cut short, or whose weights, optimizer, scheduler or state are damaged,
    is passed over and named through `report`; transformers' `get_last_checkpoint` would take it), a `ValueError`
    naming the folder when there is none. With `started=False` (a later stage of a multi-stage run, which may not
    have begun when the run stopped) none is no error: nothing. Nothing is deleted."""
    if resume is True:
        checkpoint = last_complete_checkpoint(folder, report)
        if checkpoint is None and started:
            raise ValueError(
                f"--resume_from_checkpoint true: {folder} holds no checkpoint (checkpoint-N) that loads to resume "
                "from."
            )
        return checkpoint
    if isinstance(resume, str):
        problem = checkpoint_problem(resume)
        if problem is not None:
            raise ValueError(
                f"--resume_from_checkpoint {resume}: {problem}. Nothing was changed; --resume_from_checkpoint true "
                "takes the newest checkpoint that loads."
            )
    return resume or None


def remove_if_worthless(folder: Path) -> None:
    """After a failed run that made `folder`: removes it unless it holds what the run achieved (a checkpoint to
    resume from, a saved model), so that no empty or half-made output folder is left behind."""
    if not folder.is_dir():
        return
    kept = [path for path in folder.iterdir() if path.name.startswith("checkpoint-") or path.suffix == ".safetensors"]
    kept += list(folder.glob("pretraining/checkpoint-*"))
    if not kept:
        shutil.rmtree(folder, ignore_errors=True)
