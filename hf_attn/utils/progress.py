"""Progress bars off while a block runs: `hidden_progress_bars()`; a slow command's steps (`progress`) with them.

A command whose standard error is a log or a pipe, and a run with `--no-progress` (`disable_tqdm`), show no bar from
huggingface_hub (downloads, uploads), transformers ("Loading weights", shard writing) or datasets (file reading,
`map`): the results alone. The libraries' environment variables reach one imported inside the block; those already
imported are switched off directly; both are restored when the block ends, so that `train(..., disable_tqdm=True)`
in a notebook leaves the notebook's bars as they were.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

# Each library's variable, read when it is imported.
_VARIABLES = ("HF_HUB_DISABLE_PROGRESS_BARS", "HF_DATASETS_DISABLE_PROGRESS_BARS")
# How many `hidden_progress_bars` blocks are running: while one is, a command's steps are not shown either.
_hiding = 0


def _switches() -> list[tuple]:
    """`(is_enabled, disable, enable)` of each library already imported (none is imported here)."""
    switches = []
    if "huggingface_hub" in sys.modules:
        from huggingface_hub import utils as hub_utils

        switches.append(
            (
                lambda: not hub_utils.are_progress_bars_disabled(),
                hub_utils.disable_progress_bars,
                hub_utils.enable_progress_bars,
            )
        )
    if "transformers" in sys.modules:
        from transformers.utils import logging as hf_logging

        switches.append(
            (hf_logging.is_progress_bar_enabled, hf_logging.disable_progress_bar, hf_logging.enable_progress_bar)
        )
    if "datasets" in sys.modules:
        import datasets

        switches.append(
            (datasets.is_progress_bar_enabled, datasets.disable_progress_bars, datasets.enable_progress_bars)
        )
    return switches


@contextlib.contextmanager
def hidden_progress_bars(hidden: bool = True) -> Iterator[None]:
    """No progress bar of huggingface_hub, transformers or datasets while the block runs (module docstring);
    `hidden=False`: nothing changes."""
    global _hiding
    if not hidden:
        yield
        return
    variables = {name: os.environ.get(name) for name in _VARIABLES}
    for name in _VARIABLES:
        os.environ[name] = "1"
    switches = _switches()
    enabled = [is_enabled() for is_enabled, _, _ in switches]
    for _, disable, _ in switches:
        disable()
    _hiding += 1
    try:
        yield
    finally:
        _hiding -= 1
        for was_enabled, (_, _, enable) in zip(enabled, switches, strict=True):
            if was_enabled:
                enable()
        for name, value in variables.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def progress(message: str) -> None:
    """A step of a slow command (`loading MODEL ...`) on standard error, unless the bars are hidden: a log, a pipe or
    `--no-progress` gets the result alone."""
    if not _hiding:
        print(message, file=sys.stderr)
