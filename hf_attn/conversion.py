"""Helpers shared by the scripts in `conversion/`: safe checkpoint reading, regex key mapping, parity reports, and the
conversion record with the card."""

from __future__ import annotations

import argparse
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from .utils.errors import OneLineUsageErrors
from .utils.saving import refuse_overwrite


@dataclass(frozen=True)
class CheckpointLayout:
    """What an original implementation's checkpoint holds, checked before a converter reads it (an unrelated file
    would otherwise end in a `KeyError` or a mapping error far inside the converter).

    Attributes:
        description: what it is, as a line says it ("Lin et al.'s checkpoint: a dict with `state_dict` and `config`").
        keys: the keys a dict checkpoint must have.
        weights: regular expressions of weight names a state dict must hold (each matched by one name at least),
            read under the first of `within` the checkpoint has (`state_dict`), else at its top level, with a
            DataParallel `module.` prefix taken off.
        within: the keys a state dict may sit under.
    """

    description: str
    keys: tuple[str, ...] = ()
    weights: tuple[str, ...] = ()
    within: tuple[str, ...] = ()

    def problem(self, checkpoint: Any) -> str | None:
        """What `checkpoint` holds instead of this layout, or `None` when it fits."""
        if not isinstance(checkpoint, Mapping):
            return f"a {type(checkpoint).__name__}"
        keys = [repr(str(key)) for key in checkpoint]
        shown = ", ".join(keys[:5]) + (f" and {len(keys) - 5} more" if len(keys) > 5 else "")
        missing = [key for key in self.keys if key not in checkpoint]
        if missing:
            return f"a dict of {shown or 'nothing'} (no {', '.join(repr(key) for key in missing)})"
        state = next((checkpoint[key] for key in self.within if isinstance(checkpoint.get(key), Mapping)), checkpoint)
        names = [str(name).removeprefix("module.") for name in state]
        absent = [pattern for pattern in self.weights if not any(re.fullmatch(pattern, name) for name in names)]
        if absent:
            return f"weights named {', '.join(names[:4]) or 'nothing'}{', ...' if len(names) > 4 else ''}"
        return None


def load_original_checkpoint(
    path: str | Path, layout: CheckpointLayout | None = None, option: str = "--checkpoint"
) -> Any:
    """Reads an original PyTorch checkpoint with `weights_only=True` (tensors and plain containers only, never
    arbitrary pickled objects) as the checkpoint stage of a command (`hf_attn.utils.inputs`): a file that is not a
    PyTorch checkpoint is named as what it is, and one that does not hold `layout` says what it holds instead."""
    from .utils.inputs import CHECKPOINT, InputError, read_input

    checkpoint = read_input(option, path, CHECKPOINT, lambda: torch.load(path, map_location="cpu", weights_only=True))
    problem = layout.problem(checkpoint) if layout is not None else None
    if problem is not None:
        raise InputError(f"{option} {path} holds {problem}, not {layout.description}.")
    return checkpoint


def sha256_of(path: str | Path) -> str:
    """The file's SHA-256, recorded as conversion provenance."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def rename_state_dict(
    state_dict: Mapping[str, torch.Tensor], rules: Sequence[tuple[str, str | None]]
) -> dict[str, torch.Tensor]:
    """Maps original keys to hf_attn keys with a table of `(regex, replacement)`; a `None` replacement drops the key.

    Each key must match exactly one rule (full match), so a key the table forgot is an error, not a silent drop.
    """
    renamed: dict[str, torch.Tensor] = {}
    for key, tensor in state_dict.items():
        matches = [(pattern, target) for pattern, target in rules if re.fullmatch(pattern, key)]
        if len(matches) != 1:
            raise ValueError(f"Checkpoint key {key!r} matches {len(matches)} mapping rules (expected exactly 1).")
        pattern, target = matches[0]
        if target is not None:
            renamed[re.sub(f"^{pattern}$", target, key)] = tensor
    return renamed


def max_abs_diffs(
    actual: Mapping[str, torch.Tensor], expected: Mapping[str, torch.Tensor], atol: float, rtol: float = 0.0
) -> dict[str, float]:
    """Max |actual − expected| per name; raises `AssertionError` naming every tensor with an element beyond
    `atol + rtol · |expected|` (`torch.isclose`'s rule: `rtol` for values whose rounding error grows with their
    size, such as a sum over many features)."""
    diffs, failing = {}, {}
    for name in actual:
        got, want = actual[name].detach().double(), expected[name].double()
        excess = (got - want).abs()
        diffs[name] = excess.max().item() if want.numel() else 0.0
        if want.numel() and not bool((excess <= atol + rtol * want.abs()).all()):
            failing[name] = diffs[name]
    if failing:
        raise AssertionError(f"parity beyond atol={atol}, rtol={rtol}: {failing}")
    return diffs


def conversion_record(
    original_code: str, script: str | Path, checkpoint: str | Path, output: str | Path, **details: Any
) -> dict[str, Any]:
    """The conversion record's common fields: the original code, the script, the checkpoint with its SHA-256 and
    the output folder; `details` adds the script's own (layout, training arguments, parity max-diffs, ...)."""
    return {
        "original_code": original_code,
        "script": _package_path(script),
        "checkpoint": Path(checkpoint).name,
        "sha256": sha256_of(checkpoint),
        "output": str(output),
        **details,
    }


class ConverterParser(OneLineUsageErrors, argparse.ArgumentParser):
    """A converter's command line; a usage error is one line, as every `hf-attn` command's."""


def converter_parser(doc: str | None, prog: str | None = None) -> ConverterParser:
    """A converter's parser: the first line of its module docstring as description, `prog` as its name
    (`hf-attn convert ARCH` when the CLI runs it; the script's name otherwise)."""
    return ConverterParser(prog=prog, description=doc.splitlines()[0] if doc else None)


def _package_path(script: str | Path) -> str:
    """`hf_attn/models/<name>/convert_....py` for a converter of the package (where it is wherever hf_attn is
    installed), else the file's name."""
    package = Path(__file__).resolve().parent
    path = Path(script).resolve()
    return f"hf_attn/{path.relative_to(package).as_posix()}" if path.is_relative_to(package) else path.name


def add_output_arguments(parser: argparse.ArgumentParser, help: str = "folder for the converted model") -> None:
    """The converters' `--output` folder and `--overwrite`: a folder that already holds a model is refused
    (`check_output`) unless `--overwrite` is given."""
    parser.add_argument("--output", required=True, help=help)
    parser.add_argument("--overwrite", action="store_true", help="replace a model already saved in --output")


def check_output(args: argparse.Namespace) -> None:
    """Refuses to convert into a folder that holds a model (`FileExistsError` naming `--overwrite`)."""
    if not args.overwrite:
        refuse_overwrite(args.output, "pass --overwrite to replace it", what="the converted model")


# The converters' `--example` option.
EXAMPLE_HELP = "a text whose attention the card shows (attention.png; the folder needs a tokenizer)"


def finish_conversion(output_dir: str | Path, record: dict[str, Any], example: str | None = None) -> None:
    """Writes the record beside the converted weights (`hf_attn_conversion.json`) and the model card, which shows
    it as provenance (a converted folder always ships a card) and, with an `example` text, the picture of the
    converted model's attention for it; then prints the record."""
    from .cards import CONVERSION_FILE, write_model_card

    if example:
        record["example"] = {"text": example}
    (Path(output_dir) / CONVERSION_FILE).write_text(json.dumps(record, indent=2))
    write_model_card(output_dir)
    print(json.dumps(record, indent=2))
