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
conversion scripts.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

STAGING_PREFIX = ".hf_attn-saving-"  # the staging folders of saves in progress (or killed)
WEIGHT_SUFFIXES = (".safetensors", ".safetensors.index.json", ".bin", ".bin.index.json")
SHARD = re.compile(r".*-\d{5}-of-\d{5}\.(safetensors|bin)")


def is_weight_file(name: str) -> bool:
    """Whether a file name is a weights file or a shard index (moved last, checked for stale shards)."""
    return name.endswith(WEIGHT_SUFFIXES)


def stale_staging(folder: str | os.PathLike) -> list[Path]:
    """The staging folders of earlier saves into `folder` that did not finish (killed)."""
    folder = Path(folder)
    return sorted(folder.glob(STAGING_PREFIX + "*")) if folder.is_dir() else []


@contextmanager
def staged_save(folder: str | os.PathLike) -> Iterator[Path]:
    """Yields a fresh staging folder inside `folder` (created if needed); when the block ends without an error,
    moves its files into `folder` (`commit_staged`). The staging folder is removed either way, and stale ones of
    killed saves before it starts."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for stale in stale_staging(folder):
        shutil.rmtree(stale, ignore_errors=True)
    staging = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=folder))
    try:
        yield staging
        commit_staged(staging, folder)
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


def last_complete_checkpoint(folder: str | os.PathLike) -> str | None:
    """The last `checkpoint-N` of a `Trainer` output folder whose save completed (its weights and
    `trainer_state.json`, which `Trainer` writes last), or `None`. transformers' `get_last_checkpoint` takes the
    highest N, even one a kill interrupted."""
    folder = Path(folder)
    if not folder.is_dir():
        return None
    numbered = [
        (int(match.group(1)), path)
        for path in folder.iterdir()
        if path.is_dir() and (match := re.fullmatch(r"checkpoint-(\d+)", path.name))
    ]
    for _, path in sorted(numbered, reverse=True):
        if (path / "trainer_state.json").is_file() and any(is_weight_file(file.name) for file in path.iterdir()):
            return str(path)
    return None
