"""Step loops replayed as CUDA graphs: a recurrence's thousands of small launches become one.

A Python loop over T steps launches a few kernels per step, forward and backward; at the LSTMN's T = 256 the
launches, not the arithmetic, set the step time (capturing the loop alone was measured 4.4× faster on a GPU).
`GraphedLoop` captures such a loop once per signature (the tensors' shapes, dtypes, strides and device, and the
other arguments) with `torch.cuda.graph`, and replays it: the tensor arguments are copied into the graph's static
inputs, the recorded launches run again, and the outputs are cloned out of the graph's memory pool (the next
replay overwrites it).

When it captures: only with every tensor argument on CUDA, outside any other capture (a
`torch.compile(mode="reduce-overhead")` graph around an operator that uses it) and outside tracing, and only for a
signature met before (`eager_calls` times): a shape that comes once, such as an epoch's last short batch, runs
eagerly instead of paying for a capture. At most `max_graphs` signatures are captured, each holding its memory
pool; past that, new signatures run eagerly (never evicting one to capture another: batches of ever-changing
lengths would otherwise capture on every call, slower than no graph). `HF_ATTN_CUDA_GRAPHS=0` turns capture off.

The loop must be capturable: no host read of a device value, no copy from pageable host memory, no allocation whose
size depends on values. The LSTMN and ELMo loops are; `make test-gpu` runs them captured against eager.
"""

from __future__ import annotations

import collections
import os
from collections.abc import Callable
from typing import Any

import torch
from torch.utils._pytree import tree_map


def _signature(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return ("tensor", tuple(value.shape), tuple(value.stride()), value.dtype, value.device)
    if isinstance(value, (list, tuple)):
        return tuple(_signature(item) for item in value)
    return value


def _tensors(values: Any) -> list[torch.Tensor]:
    found: list[torch.Tensor] = []
    tree_map(lambda value: found.append(value) if isinstance(value, torch.Tensor) else None, list(values))
    return found


def graphs_enabled() -> bool:
    """Whether `GraphedLoop` may capture (`HF_ATTN_CUDA_GRAPHS`, default on)."""
    return os.environ.get("HF_ATTN_CUDA_GRAPHS", "1").lower() not in {"0", "false", "no", "off"}


class _Captured:
    """One captured call: its static inputs (the arguments' own layout), the graph and its static outputs."""

    def __init__(self, function: Callable[..., Any], arguments: tuple) -> None:
        self.inputs = tree_map(lambda value: value.clone() if isinstance(value, torch.Tensor) else value, arguments)
        with torch.cuda.device(_tensors(arguments)[0].device):
            # Warm up on a side stream first: kernels compile (Triton), libraries pick their algorithms and allocate
            # their workspaces outside the capture, as `torch.cuda.graph`'s documentation asks.
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                function(*self.inputs)
            torch.cuda.current_stream().wait_stream(side)
            self.graph = torch.cuda.CUDAGraph()
            # "thread_local": a backward loop is captured on autograd's device thread, while other threads (a data
            # loader pinning memory) may call CUDA; only this thread's calls must be capturable.
            with torch.cuda.graph(self.graph, capture_error_mode="thread_local"):
                self.outputs = function(*self.inputs)

    def replay(self, arguments: tuple) -> Any:
        for static, value in zip(_tensors(self.inputs), _tensors(arguments), strict=True):
            static.copy_(value)
        self.graph.replay()
        return tree_map(lambda value: value.clone() if isinstance(value, torch.Tensor) else value, self.outputs)


class GraphedLoop:
    """Calls `function(*arguments)` (tensors, lists of tensors, `None`s and plain values; it returns the same
    kinds), replayed as a CUDA graph where the module docstring says it may be. Same results as the eager call."""

    def __init__(self, function: Callable[..., Any], max_graphs: int = 16, eager_calls: int = 1) -> None:
        self.function = function
        self.max_graphs, self.eager_calls = max_graphs, eager_calls
        self.graphs: dict[Any, _Captured] = {}
        self.calls: collections.Counter = collections.Counter()

    def capturable(self, arguments: tuple) -> bool:
        tensors = _tensors(arguments)
        return (
            graphs_enabled()
            and bool(tensors)
            and all(tensor.is_cuda for tensor in tensors)
            and not torch.compiler.is_compiling()
            and not torch.cuda.is_current_stream_capturing()
        )

    def __call__(self, *arguments: Any) -> Any:
        if not self.capturable(arguments):
            return self.function(*arguments)
        key = _signature(arguments)
        captured = self.graphs.get(key)
        if captured is None:
            if len(self.calls) > 10_000:  # many one-off shapes: forget them rather than grow without end
                self.calls.clear()
            self.calls[key] += 1
            if self.calls[key] <= self.eager_calls or len(self.graphs) >= self.max_graphs:
                return self.function(*arguments)
            captured = self.graphs[key] = _Captured(self.function, arguments)
        return captured.replay(arguments)

    def clear(self) -> None:
        """Drops every captured graph (and with it their memory pools)."""
        self.graphs.clear()
        self.calls.clear()
