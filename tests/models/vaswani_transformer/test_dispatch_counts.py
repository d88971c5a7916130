"""The operators one training step dispatches, the Transformer against Marian (`benchmarks/dispatch_counts.py`):
on a GPU each is a kernel launch, so the count is the measure of launch overhead that work without a GPU has."""

from __future__ import annotations

import pytest

from tests.helpers import load_benchmark

pytest.importorskip("triton")


@pytest.fixture(scope="module")
def counts():
    module = load_benchmark("dispatch_counts")
    marian, ours = load_benchmark("transformer_vs_marian").paired_models(32000, 6, 512, 8, 2048)
    marian.train(), ours.train()
    results = {}
    try:
        for gpu_path in (True, False):
            for batch in (128, 400):  # 8k and 25.6k target tokens of 64-token sentences
                results[gpu_path, batch] = tuple(
                    sum(module.step_count(model, batch, 64, 32000, gpu_path).values()) for model in (ours, marian)
                )
    finally:  # the benchmark sets the loss's path for each count: put the defaults back
        from hf_attn.layers import losses

        losses.LOSS_KERNEL_ON_CPU, losses.LOSS_CHUNK_ELEMENTS = False, module.CPU_CHUNK_ELEMENTS
    return results


@pytest.mark.parametrize("batch", [128, 400], ids=["8k", "25.6k"])
def test_a_transformer_training_step_dispatches_at_most_1_1x_marians_operators_on_the_gpu_path(counts, batch):
    """The base model at vocabulary 32,000 (fake tensors: shapes only): on the GPU's path (the fused output loss
    one kernel a chunk, chunks of 2²⁸ logits) at most 1.1× Marian's operators, and the CPU's path, with PyTorch's
    loss in 2²⁵-logit chunks, more than the GPU's (the count sees the chunks: it can fail)."""
    ours, marian = counts[True, batch]
    assert ours <= 1.1 * marian, (ours, marian)
    cpu_ours, cpu_marian = counts[False, batch]
    assert cpu_marian == marian and cpu_ours > ours
