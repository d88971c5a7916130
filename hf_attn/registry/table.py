"""The one table of hf_attn: every architecture, its classes, paper, original code, tokenizer, synthetic task and
card metadata. Auto registration, `import hf_attn`, the common tests, the CLI and the model cards all read it.

Each model folder declares its own row (`hf_attn/models/<name>/architecture.py`: `ARCHITECTURE = Architecture(...)`);
`ARCHITECTURES` is built by finding the folders, so adding an architecture touches its folder, its card template and
its tests (CONTRIBUTING.md). A folder that misses a piece fails here, with a message naming the piece.

This module imports neither torch nor transformers: the rows import the models, so `ARCHITECTURES` is read from the
folders when first asked for (`__getattr__`, PEP 562), and a folder's `architecture.py` can import this module
without a circle.
"""

from __future__ import annotations

import importlib
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any

from .index import MODELS, ROW_FILE
from .row import Architecture, ArchitectureArguments, Head, Paper, ViewArguments

__all__ = ["Architecture", "Head", "Paper", "get_architecture", "list_models"]


MODELS_DIR = MODELS  # the model folders (`index.MODELS`, the one definition)
CARDS_DIR = Path(__file__).resolve().parents[1] / "model_cards"


def _check_row(name: str, folder: Path, module: Any, cards_dir: Path) -> Architecture:
    """The folder's row, or a `ValueError` naming the piece the folder lacks."""
    where = f"hf_attn/models/{name}"
    for piece in (f"configuration_{name}.py", f"modeling_{name}.py"):
        if not (folder / piece).is_file():
            raise ValueError(
                f"{where} has no {piece}: a model folder holds its config and its model (CONTRIBUTING.md)."
            )
    row = getattr(module, "ARCHITECTURE", None)
    if row is None:
        raise ValueError(f"{where}/{ROW_FILE} declares no ARCHITECTURE = Architecture(...) (its registry row).")
    if not isinstance(row, Architecture):
        raise ValueError(f"{where}: ARCHITECTURE must be an hf_attn.registry.Architecture, got {type(row).__name__}.")
    if row.name != name:
        raise ValueError(f"{where}: the row's name is {row.name!r}; it must be the folder's name, {name!r}.")
    if row.config_class.model_type != name:
        raise ValueError(f"{where}: {row.config_class.__name__}.model_type must be {name!r}.")
    if row.pretraining_head is not None and row.pretraining_head not in {h.model_class.__name__ for h in row.heads}:
        raise ValueError(f"{where}: pretraining_head {row.pretraining_head!r} is not one of its heads.")
    declared = {field.name for field in fields(row.config_class)} if is_dataclass(row.config_class) else set()
    for head in row.heads:
        unknown = [field for field in head.attention_fields if field not in row.attention_fields]
        if unknown:
            raise ValueError(
                f"{where}: {head.model_class.__name__}'s fields {unknown} have no mask in attention_fields."
            )
        lacking = [field for field in head.inputs.config_fields if field not in declared]
        if lacking:
            raise ValueError(
                f"{where}: {head.model_class.__name__} reads {head.inputs} inputs, whose kind reads the config fields "
                f"{', '.join(lacking)}, which {row.config_class.__name__} lacks."
            )
    if row.converter is not None and not (folder / f"{row.converter}.py").is_file():
        raise ValueError(
            f"{where}: its converter {row.converter!r} is not a module of the folder ({row.converter}.py)."
        )
    if row.tasks is not None and not (folder / f"{row.tasks}.py").is_file():
        raise ValueError(f"{where}: its task shapes {row.tasks!r} are not a module of the folder ({row.tasks}.py).")
    for name_of_field, base in (("arguments", ArchitectureArguments), ("view_arguments", ViewArguments)):
        options = getattr(row, name_of_field)  # an options class of the folder's: a dataclass of the right base
        fits = isinstance(options, type) and issubclass(options, base) and is_dataclass(options)
        if options is not None and not fits:
            raise ValueError(
                f"{where}: its {name_of_field} must be a dataclass subclassing hf_attn.registry.row.{base.__name__}."
            )
    if row.view_arguments is not None and row.attention_view is None:
        raise ValueError(f"{where}: view_arguments are the options of its own attention_view, and it has none.")
    if row.default and "config" not in row.demo:
        raise ValueError(
            f"{where}: the default architecture says what `hf-attn demo` trains: demo={{'config': {{...}}, ...}}."
        )
    if not (cards_dir / f"{name}.md").is_file():
        raise ValueError(f"{where} has no card template: add model_cards/{name}.md.")
    public = getattr(importlib.import_module(module.__name__.rpartition(".")[0]), "__all__", None)
    missing = [cls.__name__ for cls in row.public_objects if cls.__name__ not in (public or ())]
    if missing:
        raise ValueError(
            f"{where}/__init__.py: its `__all__` (what `import hf_attn` exposes) lacks {', '.join(missing)}, "
            "which its row names."
        )
    return row


def _is_model_folder(path: Path) -> bool:
    return path.is_dir() and ((path / ROW_FILE).is_file() or (path / "__init__.py").is_file())


def discover_architectures(
    package: str = "hf_attn.models", models_dir: Path = MODELS_DIR, cards_dir: Path = CARDS_DIR
) -> dict[str, Architecture]:
    """Imports the row of every folder of `models_dir` (a package of `package`), by name."""
    rows = {}
    for folder in sorted(path for path in models_dir.iterdir() if _is_model_folder(path)):
        if not (folder / ROW_FILE).is_file():
            raise ValueError(
                f"hf_attn/models/{folder.name} has no {ROW_FILE}: a model folder declares its registry "
                "row there (CONTRIBUTING.md)."
            )
        module = importlib.import_module(f"{package}.{folder.name}.{ROW_FILE.removesuffix('.py')}")
        rows[folder.name] = _check_row(folder.name, folder, module, cards_dir)
    return rows


def _architectures() -> dict[str, Architecture]:
    """`ARCHITECTURES`, read from the folders on the first call. The dict is bound before it is filled: a row's
    modules (e.g. its attention view) may import it while the rows load, and then hold the same dict."""
    rows = globals().get("ARCHITECTURES")
    if rows is None:
        globals()["ARCHITECTURES"] = rows = {}
        try:
            rows.update(discover_architectures())
        except BaseException:
            del globals()["ARCHITECTURES"]  # a folder's error is raised again on the next look, not an empty table
            raise
    return rows


def __getattr__(name: str) -> Any:
    # `ARCHITECTURES` when first asked for (module docstring).
    if name == "ARCHITECTURES":
        return _architectures()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def get_architecture(name: str) -> Architecture:
    """The registry row of `name` (a `model_type`), with a clear error for unknown names."""
    architectures = _architectures()
    if name not in architectures:
        raise ValueError(f"Unknown architecture {name!r}; hf_attn has: {', '.join(sorted(architectures))}.")
    return architectures[name]


def list_models() -> list[str]:
    """The registered architecture names."""
    from .index import read_index

    return [row.name for row in read_index()]
