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


def profile_summary(
    function: Callable[[], object], device: torch.device, label: str, calls: int = 3
) -> tuple[str, float]:
    """A `torch.profiler` summary of `calls` runs of `function` (after two warm-up runs), and the device kernels
    one call ran. The summary: kernels per call, the share of the wall time the GPU sat idle (no kernel running),
    and the kernels by total time, so that work without a GPU reads where the time goes. On a CPU it lists the
    operators instead (there is no device time), and the kernels per call are 0."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    function()
    function()
    cuda = device.type == "cuda"
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    if cuda:
        torch.cuda.synchronize()
    with profile(activities=activities) as profiler:
        start = time.perf_counter()
        for _ in range(calls):
            function()
        if cuda:
            torch.cuda.synchronize()
        wall = (time.perf_counter() - start) * 1e6  # µs
    events = [event for event in profiler.events() if event.device_type == DeviceType.CUDA] if cuda else []
    lines = [f"## {label}: {calls} calls, {wall / calls / 1e3:.3f} ms a call (wall)"]
    if not cuda:
        table = profiler.key_averages().table(sort_by="self_cpu_time_total", row_limit=15, max_name_column_width=60)
        return "\n".join([*lines, table]), 0.0
    intervals = sorted((event.time_range.start, event.time_range.end) for event in events)
    busy, reached = 0.0, float("-inf")
    for begin, end in intervals:  # the union of the kernels' intervals: time some kernel ran
        if end > reached:
            busy += end - max(begin, reached)
            reached = end
    by_name: dict[str, list[float]] = {}
    for event in events:
        by_name.setdefault(event.name, []).append(event.time_range.end - event.time_range.start)
    kernels = len(events) / calls
    lines.append(
        f"kernels a call: {kernels:.0f}; GPU busy {busy / wall:.1%} of the wall time, idle {1 - busy / wall:.1%}"
    )
    lines.append(f"{'kernel':<70} {'a call':>7} {'ms a call':>10} {'share':>6}")
    total = sum(sum(times) for times in by_name.values()) or 1.0
    for name, times in sorted(by_name.items(), key=lambda item: -sum(item[1]))[:15]:
        short = name if len(name) <= 70 else name[:67] + "..."
        lines.append(
            f"{short:<70} {len(times) / calls:>7.0f} {sum(times) / calls / 1e3:>10.3f} {sum(times) / total:>6.1%}"
        )
    return "\n".join(lines), kernels
