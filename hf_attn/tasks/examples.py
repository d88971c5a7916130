"""Example files of every task's data layout: the shared shapes' (`hf_attn.data.examples`) and each
architecture's own, in its original's layout (its registry row's `example_files`, written by its folder: AttentionXML's
extreme multi-label text files, STCKA's Snippets with concepts). The manual's "Train on your own data" commands and the
tests train on them:

    python -c "from hf_attn.tasks.examples import write_example_files; write_example_files('my-data')"
"""

from __future__ import annotations

from pathlib import Path

from ..data.examples import write_shared_example_files
from ..registry.table import ARCHITECTURES

__all__ = ["write_example_files"]


def write_example_files(folder: str | Path, num_rows: int = 600, seed: int = 0) -> Path:
    """Writes every example file into `folder` (`num_rows` rows each, from generators seeded with `seed`); returns
    it."""
    folder = write_shared_example_files(folder, num_rows, seed)
    for architecture in ARCHITECTURES.values():
        if architecture.example_files is not None:
            architecture.example_files(folder, num_rows, seed)
    return folder
