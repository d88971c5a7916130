"""The one timer of the benchmarks: median wall time of a call, after a warm-up, synchronising CUDA around it."""

from __future__ import annotations

import resource
import statistics
import time
from collections.abc import Callable

import torch


def time_call(function: Callable[[], object], repeats: int, device: torch.device | None = None) -> float:
    """Median seconds of `function()` over `repeats` runs, after two warm-up runs (a CUDA-graphed loop,
    `hf_attn.layers.cuda_graphs`, runs eagerly on its first call and is captured on its second)."""
    function()
    function()
    synchronise = device is not None and device.type == "cuda"
    times = []
    for _ in range(max(1, repeats)):
        if synchronise:
            torch.cuda.synchronize()
        start = time.perf_counter()
        function()
        if synchronise:
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def time_alternating(
    functions: list[Callable[[], object]], repeats: int, device: torch.device | None = None
) -> list[float]:
    """Median seconds of each of `functions` over `repeats` rounds, the functions interleaved and their order
    reversed every other round (A B, B A, ...), after two warm-up runs each. Timing one peer's runs after the
    other's lets the one that runs second pay for what the first left behind (allocator state, caches): on the CPU,
    beam search's cache reorderings ran 30–40% slower in whichever model went second."""
    for function in functions:
        function()
        function()
    synchronise = device is not None and device.type == "cuda"
    times: list[list[float]] = [[] for _ in functions]
    for round_ in range(max(1, repeats)):
        order = list(range(len(functions)))[:: -1 if round_ % 2 else 1]
        for index in order:
            if synchronise:
                torch.cuda.synchronize()
            start = time.perf_counter()
            functions[index]()
            if synchronise:
                torch.cuda.synchronize()
            times[index].append(time.perf_counter() - start)
    return [statistics.median(values) for values in times]


def device_name(device: torch.device) -> str:
    """What the numbers were measured on: the GPU's name, or the CPU threads."""
    if device.type == "cuda":
        return f"{torch.cuda.get_device_name(device)} (CUDA {torch.version.cuda})"
    return f"{torch.get_num_threads()} CPU threads"


def peak_memory(device: torch.device) -> int:
    """Peak bytes so far: `torch.cuda.max_memory_allocated` on CUDA, the process's peak resident memory on CPU (run
    each configuration in its own process, and measure the growth over the call; `reset_peak_memory` starts anew)."""
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device)
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kilobytes on Linux


def reset_peak_memory(device: torch.device) -> None:
    """Starts the peak of `peak_memory` anew at the current use (on Linux, `/proc/self/clear_refs` resets the peak
    resident memory)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
    else:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
