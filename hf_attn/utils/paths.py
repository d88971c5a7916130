"""Local path or Hub id: a name that can only be a local path, and is missing, is reported at once; a repo id the
Hub would refuse is refused here.

`--dataset`, a model folder and a few other arguments take a local path or a Hub id. Given a path that does not exist,
datasets and transformers ask the Hub for it (with retries: tens of seconds offline) and then blame the Hub. A Hub id
is `name` or `user/name` of letters, digits, `-`, `_` and `.`; a name that cannot be one (a file suffix such as
`.csv`, two slashes, a leading `./`, `/` or `~`, a first folder that exists here, a character the Hub refuses) is a
local path, and a missing one is a `FileNotFoundError` that says so.
"""

from __future__ import annotations

import re
from pathlib import Path

# Suffixes of files a Hub id never ends with (a repo name may hold dots, but not a data or weights file's suffix).
FILE_SUFFIXES = (
    ".csv",
    ".tsv",
    ".json",
    ".jsonl",
    ".txt",
    ".parquet",
    ".arrow",
    ".safetensors",
    ".bin",
    ".pt",
    ".npz",
    ".h5",
    ".hdf5",
    ".zip",
    ".gz",
    ".tar",
    ".xml",
    ".yaml",
    ".yml",
)
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*(/[A-Za-z0-9][A-Za-z0-9_.-]*)?$")


def looks_local(name: str) -> bool:
    """Whether `name` can only be a local path (module docstring)."""
    path = Path(name).expanduser()
    if path.exists() or name.startswith(("/", "./", "../", "~", ".\\")) or "\\" in name:
        return True
    if name.lower().endswith(FILE_SUFFIXES) or name.count("/") > 1 or not _HUB_ID.match(name):
        return True
    return "/" in name and Path(name.split("/", 1)[0]).is_dir()


def check_local_path(name: str, option: str) -> None:
    """Raises `FileNotFoundError` naming `option` when `name` can only be a local path and does not exist."""
    if looks_local(name) and not Path(name).expanduser().exists():
        raise FileNotFoundError(
            f"{option} {name}: no such file or folder (it is a local path, not a Hub id: check the path, "
            f"relative to {Path.cwd()})"
        )


def check_repo_id(repo_id: str, name: str = "repo_id") -> None:
    """Refuses a repo id the Hub would refuse (an empty user or name, a stray slash, a bad character), naming the
    argument: a card titled "/lin-demo", or a push that fails after its upload started, helps nobody."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(repo_id)
    except HFValidationError as error:
        raise ValueError(f"{name} {repo_id!r} is not a Hub repo id (user/name or name): {error}") from None
