"""hf_attn: the classic attention architectures of NLP as native Hugging Face models.

`import hf_attn` registers every architecture with the transformers Auto classes and exposes each one's config,
models and extra public objects, all read from the registry rows the model folders declare (`hf_attn.registry`).

One exception keeps the command line quick: when the `hf-attn` console script runs `list` or only asks for help,
nothing is registered at import (that would import torch and transformers, seconds, for a listing); the first
attribute asked of the package then registers everything as usual.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from typing import Any

__version__ = "0.1.0"

_LIGHT_COMMANDS = ("list", "-h", "--help", "--version")


def _light_cli_call() -> bool:
    """Whether this process is `hf-attn list`, `hf-attn --help` or a bare `hf-attn` (`--debug` aside)."""
    if os.path.basename(sys.argv[0] if sys.argv else "") != "hf-attn":
        return False
    rest = [argument for argument in sys.argv[1:] if argument != "--debug"]
    return not rest or rest[0] in _LIGHT_COMMANDS


def _load() -> None:
    """Registers every architecture and exposes the public objects of its row."""
    from .registry import ARCHITECTURES, get_architecture, list_models, register_all

    register_all()
    public = {obj.__name__: obj for architecture in ARCHITECTURES.values() for obj in architecture.public_objects}
    globals().update(public)
    globals().update(ARCHITECTURES=ARCHITECTURES, get_architecture=get_architecture, list_models=list_models)
    globals()["__all__"] = ["ARCHITECTURES", "get_architecture", "list_models", *sorted(public)]


if _light_cli_call():

    def __getattr__(name: str) -> Any:
        # Dunders, and submodules (`from . import demo` asks the package first): not the registry's objects.
        if name.startswith("__") or importlib.util.find_spec(f"{__name__}.{name}") is not None:
            raise AttributeError(name)
        _load()
        if name not in globals():
            raise AttributeError(f"module 'hf_attn' has no attribute {name!r}")
        return globals()[name]

else:
    _load()
