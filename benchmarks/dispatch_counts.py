"""Operators one training step dispatches: hf_attn's Transformer against transformers' Marian, without a GPU.

On a GPU each dispatched operator is at least one kernel launch, and a step of small kernels is bound by them. This
counts, for one training step (forward with labels and backward) of each model, the ATen operators that compute
(views and bare allocations excluded, as `hf_attn.layers.kernels.LaunchCounter` does), at the paper's base model
and vocabulary 32,000, for batches of 8k and 25.6k target tokens (128 and 400 sentences of 64 tokens, as
`gpu_report.py` times them). The step runs on fake tensors (`FakeTensorMode`: shapes and dtypes, no data, no
arithmetic), so the 25.6k-token batch costs nothing to count. Two paths: the GPU's (the fused output loss as one
Triton kernel a chunk, an operator of its own, in chunks of `CUDA_LOSS_CHUNK_ELEMENTS`), and the CPU's (the loss in
PyTorch operations, in chunks of `LOSS_CHUNK_ELEMENTS`). Prints a table and, last, `RESULT ours_8k=… marian_8k=…
ratio_8k=… ours_25k=… marian_25k=… ratio_25k=…` for the GPU path, `cpu_ratio_8k=… cpu_ratio_25k=…` for the CPU's
(ratio: ours over Marian's).

    .venv/bin/python benchmarks/dispatch_counts.py [--vocab 32000] [--length 64] [--batches 128 400]
"""

from __future__ import annotations

import argparse
from collections import Counter

import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.utils._python_dispatch import TorchDispatchMode
from transformer_vs_marian import paired_models  # beside this script

from hf_attn.layers import losses
from hf_attn.layers.validation import value_checks

# Operators that allocate or reinterpret memory, launching nothing on a GPU (views are found by their schema).
NO_LAUNCH = {"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "lift_fresh", "detach"}
CPU_CHUNK_ELEMENTS = losses.LOSS_CHUNK_ELEMENTS


class Dispatched(TorchDispatchMode):
    """Counts the computing operators dispatched while active, by name: ATen's and custom operators (a kernel each),
    not views, bare allocations or `prim` metadata."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: Counter[str] = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.overloadpacket.__name__
        if func.namespace not in {"prim", "prims"} and not func.is_view and name not in NO_LAUNCH:
            self.counts[name] += 1
        return func(*args, **(kwargs or {}))


def step_count(model: torch.nn.Module, batch: int, length: int, vocab: int, gpu_path: bool) -> Counter[str]:
    """The operators of one training step of `model` on a fake batch of `batch` × `length` tokens each side, on the
    GPU's path of the fused output loss or the CPU's."""
    losses.LOSS_KERNEL_ON_CPU = gpu_path
    losses.LOSS_CHUNK_ELEMENTS = losses.CUDA_LOSS_CHUNK_ELEMENTS if gpu_path else CPU_CHUNK_ELEMENTS
    fake = FakeTensorMode(allow_non_fake_inputs=True)
    with fake:
        parameters = {name: fake.from_tensor(value).requires_grad_() for name, value in model.named_parameters()}
        source = torch.randint(4, vocab, (batch, length))
        inputs = {"input_ids": source, "attention_mask": torch.ones_like(source),
                  "labels": torch.randint(4, vocab, (batch, length))}  # fmt: skip
        counter = Dispatched()
        with counter, value_checks(False):  # no host reads of (fake) values
            loss = torch.func.functional_call(model, parameters, (), inputs).loss
            torch.autograd.grad(loss, list(parameters.values()), allow_unused=True)
    return counter.counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--length", type=int, default=64)
    parser.add_argument("--batches", type=int, nargs="+", default=[128, 400])
    parser.add_argument("--layers", type=int, default=6)
    args = parser.parse_args()
    marian, ours = paired_models(args.vocab, args.layers, 512, 8, 2048)
    marian.train(), ours.train()
    results = {}
    print(f"operators of one training step (forward with labels + backward), vocabulary {args.vocab}, base model")
    print("| path | target tokens | Marian | hf_attn | ratio | hf_attn's most frequent beyond Marian's |")
    print("|---|---|---|---|---|---|")
    for gpu_path in (True, False):
        for batch in args.batches:
            theirs = step_count(marian, batch, args.length, args.vocab, gpu_path)
            mine = step_count(ours, batch, args.length, args.vocab, gpu_path)
            extra = ", ".join(f"{name} +{count}" for name, count in (mine - theirs).most_common(5))
            total_theirs, total_mine = sum(theirs.values()), sum(mine.values())
            results[gpu_path, batch] = (total_mine, total_theirs)
            path = "GPU" if gpu_path else "CPU"
            print(f"| {path} | {batch * args.length} | {total_theirs} | {total_mine} | "
                  f"{total_mine / total_theirs:.3f} | {extra} |")  # fmt: skip
    fields = []
    for batch, label in zip(args.batches, ("8k", "25k"), strict=False):
        mine, theirs = results[True, batch]
        fields += [f"ours_{label}={mine}", f"marian_{label}={theirs}", f"ratio_{label}={mine / theirs:.3f}"]
    for batch, label in zip(args.batches, ("8k", "25k"), strict=False):
        mine, theirs = results[False, batch]
        fields.append(f"cpu_ratio_{label}={mine / theirs:.3f}")
    print("RESULT " + " ".join(fields))


if __name__ == "__main__":
    main()
