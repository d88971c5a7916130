"""hf_attn: the classic attention architectures of NLP as native Hugging Face models.

`import hf_attn` registers every architecture with transformers' Auto classes and pipelines, and exposes each one's
config, models and extra public objects: the names its folder's `__init__.py` lists in `__all__` (`PUBLIC`), so
that a new architecture brings its names in its folder. It imports neither torch nor transformers: registration
happens as transformers loads its Auto classes (`hf_attn.registry.auto`), and each name is imported from its
module when first asked for, so that `hf-attn --help` and `hf-attn list` answer at once.
"""

from __future__ import annotations

import functools
import importlib
from typing import TYPE_CHECKING, Any

from .registry.auto import install as _install_auto_registration

__version__ = "0.1.0"


@functools.cache
def _public() -> dict[str, str]:
    """Every public name -> its module: hf_attn's own (`PACKAGE_NAMES`) and each model folder's (the `__all__` of
    its `__init__.py`), read when a name is first asked for."""
    from .registry.index import PACKAGE_NAMES, public_names

    return {**PACKAGE_NAMES, **public_names()}


_install_auto_registration()


def __getattr__(name: str) -> Any:
    if name in ("PUBLIC", "__all__"):  # `from hf_attn import *` reads `__all__` here too
        return dict(_public()) if name == "PUBLIC" else sorted(_public())
    module = _public().get(name)
    if module is None:
        raise AttributeError(f"module 'hf_attn' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_public()))


# What an IDE or a type checker follows, generated from the public names (`python -m hf_attn.registry.index`
# rewrites it; tests/registry/test_auto.py keeps it current). The architectures' names are in hf_attn/models.
if TYPE_CHECKING:
    # <generated: the public names>
    from .commands.train import train
    from .registry.auto import register_all
    from .registry.table import ARCHITECTURES, get_architecture, list_models
    from .visualization.pictures import visualize

    __all__ = [
        "ARCHITECTURES",
        "get_architecture",
        "list_models",
        "register_all",
        "train",
        "visualize",
    ]

    # </generated>
    from . import models
    from .models import *  # noqa: F403

    __all__ += models.__all__
