"""pytest setup shared by every test."""

from __future__ import annotations

import os

import pytest
import torch

# Without a CUDA device, Triton's kernels run in its interpreter (tests/test_kernels.py checks them there). The
# variable is read when a kernel is defined, so it is set before any test module imports hf_attn.
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

# Marks transformers' common test files put on their tests (tests/test_transformers_common.py runs them).
TRANSFORMERS_MARKS = (
    "accelerate_tests", "flash_attn_test", "flash_attn_3_test", "flash_attn_4_test", "torch_compile_test"
)  # fmt: skip


def pytest_configure(config) -> None:
    for mark in TRANSFORMERS_MARKS:
        config.addinivalue_line("markers", f"{mark}: a mark of transformers' common tests")
    # Under pytest-xdist each worker gets one of the machine's cores: torch's default (every core per process)
    # oversubscribes the CPU and makes small ops many times slower. Child processes inherit the setting.
    if os.environ.get("PYTEST_XDIST_WORKER") is not None:
        workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
        threads = max(1, (os.cpu_count() or 1) // workers)
        torch.set_num_threads(threads)
        os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = str(threads)


@pytest.fixture
def hub():
    """A Hub-API server on 127.0.0.1 (`tests/hub_server.py`) with two users, alice and bob."""
    from tests.hub_server import ALICE, BOB, HubServer

    with HubServer(tokens={ALICE: "alice", BOB: "bob"}) as server:
        yield server
