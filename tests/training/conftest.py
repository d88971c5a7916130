"""The example files the training tests read, written once a session (`hf_attn.tasks.examples`)."""

from __future__ import annotations

import pytest

from hf_attn.tasks.examples import write_example_files


@pytest.fixture(scope="session")
def files(tmp_path_factory):
    """Every layout's example files, 600 rows each."""
    return write_example_files(tmp_path_factory.mktemp("data"), num_rows=600, seed=0)


@pytest.fixture(scope="session")
def learnable(tmp_path_factory):
    """Every layout's example files, 1,500 rows each, a learnable task in each (the held-out split is the 10% `train`
    holds out)."""
    return write_example_files(tmp_path_factory.mktemp("learnable"), num_rows=1500, seed=0)
