"""Every input a command reads, named when it is wrong: one place for each stage's reading.

A command reads its inputs in stages: the data, a model folder, a tokenizer, word vectors, an original checkpoint, a
Hub transfer. Given the wrong kind of input, the library each stage calls answers about itself ("It looks like the
config file at 'good.csv' is not a valid JSON file", "pop from empty list", "No task.toml or instruction.md files
found"), not about the input. `read_input` stands between a stage and its library:

1. a local path that is missing, or of the wrong kind (a file where a folder goes, a folder without the file the
   stage reads), is refused before the library sees it: `--tokenizer good.csv is a CSV file, not a tokenizer (a
   folder holding tokenizer.json, or a Hub id)`;
2. an error the library raises while reading it becomes one line naming the option, the input, what it was expected
   to be, and the library's own words (`InputError`, a `ValueError`: `hf_attn.utils.errors` prints it as it is).

An error raised by hf_attn's own code inside the read passes through untouched: a deliberate message (a
`ValueError`, an integrity `OSError`) is already the one line, and anything else is a bug of ours that keeps its
traceback. `what_is` tells what a path is, by its name and first bytes, for these lines.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypeVar

from .paths import check_local_path, looks_local

T = TypeVar("T")

# What a file is: a kind (found by its name, its suffix or its first bytes, `file_kind`), and how a line says it.
KINDS = {
    "csv": "a CSV file",
    "tsv": "a TSV file",
    "json": "a JSON file",
    "jsonl": "a JSON Lines file",
    "parquet": "a Parquet file",
    "arrow": "an Arrow file",
    "text": "a text file",
    "markdown": "a Markdown file",
    "safetensors": "a safetensors weights file",
    "bin": "a binary file (pickle weights?)",
    "torch": "a PyTorch checkpoint",
    "pickle": "a pickle file",
    "npz": "a NumPy archive",
    "npy": "a NumPy array file",
    "hdf5": "an HDF5 file",
    "yaml": "a YAML file",
    "zip": "a zip archive (a PyTorch checkpoint?)",
    "gzip": "a gzip file",
    "html": "an HTML file",
    "png": "a PNG image",
    "python": "a Python file",
    "binary": "a binary file",
    "empty": "an empty file",
    # Files of a transformers folder, given where their folder goes.
    "config": "a model's config.json",
    "tokenizer": "a tokenizer's tokenizer.json",
    "tokenizer_config": "a tokenizer's tokenizer_config.json",
    "weights": "a saved model's weights (model.safetensors)",
}
NAMES = {
    "config.json": "config",
    "tokenizer.json": "tokenizer",
    "tokenizer_config.json": "tokenizer_config",
    "model.safetensors": "weights",
}
SUFFIXES = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".json": "json",
    ".jsonl": "jsonl",
    ".parquet": "parquet",
    ".arrow": "arrow",
    ".txt": "text",
    ".md": "markdown",
    ".safetensors": "safetensors",
    ".bin": "bin",
    ".pt": "torch",
    ".pth": "torch",
    ".pkl": "pickle",
    ".npz": "npz",
    ".npy": "npy",
    ".h5": "hdf5",
    ".hdf5": "hdf5",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".zip": "zip",
    ".gz": "gzip",
    ".html": "html",
    ".png": "png",
    ".py": "python",
}
MAGIC = (
    (b"PK\x03\x04", "zip"),
    (b"\x89HDF", "hdf5"),
    (b"\x80\x02", "pickle"),
    (b"PAR1", "parquet"),
    (b"\x89PNG", "png"),
)


def file_kind(path: Path) -> str:
    """The kind of an existing file (a key of `KINDS`): by its name, its suffix, then its first 512 bytes."""
    if path.stat().st_size == 0:
        return "empty"
    kind = NAMES.get(path.name) or SUFFIXES.get(path.suffix.lower())
    if kind is not None:
        return kind
    with path.open("rb") as handle:
        head = handle.read(512)
    kind = next((kind for magic, kind in MAGIC if head.startswith(magic)), None)
    if kind is not None:
        return kind
    if len(head) >= 9 and head[8:9] == b"{" and int.from_bytes(head[:8], "little") < 100_000_000:
        return "safetensors"  # an 8-byte header length, then the JSON header
    try:
        head.decode("utf-8")
    except UnicodeDecodeError:
        return "binary"
    return "text"


def what_is(path: str | os.PathLike) -> str:
    """What `path` is, as a line names it: "a CSV file", "a <model_type> model folder (config.json, model.safetensors,
    ...)", "an empty folder", "a folder holding notes.md", "missing"."""
    path = Path(path)
    if path.is_dir():
        names = sorted(item.name for item in path.iterdir() if not item.name.startswith("."))
        if not names:
            return "an empty folder"
        weights = [name for name in names if name.endswith(".safetensors")]
        if "config.json" in names and weights:
            kind = model_type(path)
            return f"a {f'{kind} ' if kind else ''}model folder (config.json, {', '.join(weights[:2])}, ...)"
        return f"a folder holding {', '.join(names[:4])}" + (f" and {len(names) - 4} more" if len(names) > 4 else "")
    return KINDS[file_kind(path)] if path.exists() else "missing"


def is_file_of(*kinds: str) -> Callable[[Path], bool]:
    """A `Stage.fits` test: an existing file of one of `kinds` (`file_kind`)."""
    return lambda path: path.is_file() and file_kind(path) in kinds


def model_type(folder: Path) -> str | None:
    """The `model_type` of the config.json in `folder` (`None`: none, or not readable)."""
    try:
        return json.loads((folder / "config.json").read_text(encoding="utf-8")).get("model_type")
    except (OSError, ValueError, AttributeError):
        return None


@dataclass(frozen=True)
class Stage:
    """A kind of input: what it is expected to be (said when it is not), and whether a local path looks like one
    (`fits`, `None`: whatever exists)."""

    expected: str
    fits: Callable[[Path], bool] | None = None
    hub: bool = True  # a Hub id is a valid input (else a local path only)


def _holds(*names: str) -> Callable[[Path], bool]:
    return lambda path: path.is_dir() and any((path / name).is_file() for name in names)


MODEL = Stage("a model folder (holding config.json and model.safetensors) or a Hub id", _holds("config.json"))


def model_folder(kind: str, name: str) -> Stage:
    """A model folder of one `model_type` (`kind`: `marian`), `name` as a line says it ("a Marian model")."""
    return Stage(
        f"{name} folder (config.json with model_type {kind!r}) or a Hub id",
        lambda path: _holds("config.json")(path) and model_type(path) == kind,
    )


MODEL_FOLDER = replace(MODEL, expected="a model folder (holding config.json and model.safetensors)", hub=False)
TOKENIZER = Stage(
    "a tokenizer (a folder holding tokenizer.json, or a Hub id)", _holds("tokenizer.json", "tokenizer_config.json")
)
# A vectors file is text or binary (its reader checks the rest): a file of another known kind is none.
WORD_VECTORS = Stage(
    "a word vectors file (GloVe or word2vec text, word2vec .bin)",
    is_file_of("text", "bin", "binary", "csv", "tsv"),
    hub=False,
)
# What torch.save writes: a zip archive, a pickle before torch 1.6 (by suffix or first bytes).
CHECKPOINT = Stage(
    "the original implementation's PyTorch checkpoint (a file torch.save wrote)",
    is_file_of("torch", "zip", "pickle", "bin", "binary"),
    hub=False,
)


class InputError(ValueError):
    """An input that is not what its option takes: the option, the input, what it is, what it should be."""


def refuse(option: str, value: str | os.PathLike, stage: Stage, found: str | None = None) -> InputError:
    """The error for `value` given as `option` when it is not a `stage` input: "OPTION VALUE is FOUND, not EXPECTED"
    (`found`: what it is, `what_is(value)` unless given)."""
    path = Path(value)
    inside = stage.fits is not None and path.is_file() and stage.fits(path.parent)  # a file of the right folder
    hint = f": give the folder that holds it, {path.parent}" if inside else ""
    return InputError(f"{option} {value} is {found or what_is(value)}, not {stage.expected}{hint}.")


def check_input(option: str, value: str | os.PathLike, stage: Stage) -> bool:
    """Refuses `value` given as `option` when it is a local path that is missing or not a `stage` input (`refuse`);
    returns whether it is local (else a Hub id). Commands call it on every input path before any work."""
    name = str(value)
    local = not stage.hub or looks_local(name)
    if local:
        check_local_path(name, option)
        if stage.fits is not None and not stage.fits(Path(name).expanduser()):
            raise refuse(option, name, stage)
    return local


def read_input(option: str, value: str | os.PathLike, stage: Stage, read: Callable[[], T]) -> T:
    """`read()` of the input `value` given as `option`, a `stage` input: a missing local path or one of the wrong kind
    is refused first (`check_input`), and an error a library raises while reading it becomes an `InputError` naming
    the option, the input and what it should be, with the library's words (module docstring)."""
    name = str(value)
    local = check_input(option, name, stage)
    try:
        return read()
    except Exception as error:
        if raised_by_hf_attn(error):
            raise
        from .hub_faults import transfer_fault, transfer_file

        fault = None if local else transfer_fault(error, missing=False)
        if fault is not None:  # a Hub id whose download failed: the transfer's cause, not the input's kind
            raise InputError(f"{option} {name}: downloading {transfer_file(error) or 'it'} failed: {fault}.") from None
        said = " ".join(str(error).split()) or type(error).__name__
        what = f" ({what_is(name)})" if local else ""
        raise InputError(f"{option} {name}{what} does not read as {stage.expected}: {said}") from error


_PACKAGE = str(Path(__file__).resolve().parents[1])


def raised_by_hf_attn(error: BaseException) -> bool:
    """Whether the innermost frame of `error`'s traceback is hf_attn's code (its own message or its own bug), not a
    library's reaction to an input."""
    traceback = error.__traceback__
    if traceback is None:
        return False
    while traceback.tb_next is not None:
        traceback = traceback.tb_next
    return os.path.abspath(traceback.tb_frame.f_code.co_filename).startswith(_PACKAGE + os.sep)
