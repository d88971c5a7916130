"""Fixtures of the data tests."""

from __future__ import annotations

import datasets
import pytest


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A `datasets` cache of the test's own: what one run leaves there, the next finds."""
    folder = tmp_path / "datasets-cache"
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", folder)
    return folder
