"""Progress off while a block runs (`hf_attn.utils.progress`): every library's bars and a command's steps, turned
back on as they were when the block ends, so that a notebook keeps its bars."""

from __future__ import annotations

import os

import datasets
import pytest
from huggingface_hub import utils as hub_utils
from transformers.utils import logging as hf_logging

from hf_attn.utils.progress import hidden_progress_bars, progress


def bars_on() -> tuple[bool, bool, bool]:
    return not hub_utils.are_progress_bars_disabled(), hf_logging.is_progress_bar_enabled(), \
        datasets.is_progress_bar_enabled()  # fmt: skip


SWITCHES = ((hub_utils.enable_progress_bars, hub_utils.disable_progress_bars),
            (hf_logging.enable_progress_bar, hf_logging.disable_progress_bar),
            (datasets.enable_progress_bars, datasets.disable_progress_bars))  # fmt: skip


@pytest.fixture
def bars():
    """Every library's bars on for the test (another test of the run may have left one off), as they were after."""
    before = bars_on()
    for enable, _ in SWITCHES:
        enable()
    yield
    for was_on, (enable, disable) in zip(before, SWITCHES, strict=True):
        (enable if was_on else disable)()


def test_the_bars_and_the_steps_are_hidden_in_the_block_and_restored_after(bars, capsys, monkeypatch):
    monkeypatch.delenv("HF_DATASETS_DISABLE_PROGRESS_BARS", raising=False)
    assert bars_on() == (True, True, True)
    progress("loading a model ...")
    with hidden_progress_bars():
        assert bars_on() == (False, False, False) and os.environ["HF_DATASETS_DISABLE_PROGRESS_BARS"] == "1"
        progress("not shown")
        with hidden_progress_bars(hidden=False):  # `False` changes nothing: still hidden inside the outer block
            progress("not shown either")
    assert bars_on() == (True, True, True) and "HF_DATASETS_DISABLE_PROGRESS_BARS" not in os.environ
    progress("drawing ...")
    assert capsys.readouterr().err == "loading a model ...\ndrawing ...\n"


def test_a_bar_already_off_stays_off(bars):
    hf_logging.disable_progress_bar()
    try:
        with hidden_progress_bars():
            pass
        assert not hf_logging.is_progress_bar_enabled()
    finally:
        hf_logging.enable_progress_bar()
