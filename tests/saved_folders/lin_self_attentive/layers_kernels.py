"""Where the fused kernels run: whether triton is installed (found without importing it, so that `import hf_attn`
does not import triton) and whether a tensor is one the kernels take."""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Callable
from typing import Any

import torch


@functools.cache
def triton_installed() -> bool:
    """Whether `import triton` would find a package (a broken or blocked installation counts as none)."""
    try:
        return importlib.util.find_spec("triton") is not None
    except (ImportError, ValueError):
        return False


def kernels_apply(tensor: torch.Tensor, on_cpu: bool = False) -> bool:
    """Whether Triton kernels run for `tensor`: triton is installed and the tensor is on CUDA, or on the CPU when
    `on_cpu` (the tests, in Triton's interpreter: `TRITON_INTERPRET=1`)."""
    return triton_installed() and (tensor.is_cuda or (on_cpu and tensor.device.type == "cpu"))


# Operators that allocate or reinterpret memory without launching a kernel on a GPU (views are found by their schema).
_NO_LAUNCH = frozenset(
    {
        "empty",
        "empty_like",
        "empty_strided",
        "new_empty",
        "new_empty_strided",
        "lift_fresh",
        "detach",
        "resize_",
        "set_",
        "_local_scalar_dense",
        "is_nonzero",
        "item",
    }
)
# Operators that return their input unchanged when there is nothing to do, and copy through a child operator otherwise.
_PASS_THROUGH = frozenset({"to", "_to_copy", "contiguous", "reshape", "type_as", "flatten", "clone"})
_TRITON_LAUNCH = "triton::launch"


@functools.cache
def _launches(name: str) -> bool:
    """Whether the ATen operator `name` (the profiler's "aten::name") computes: not a view, not a bare allocation."""
    if name in _NO_LAUNCH:
        return False
    packet = getattr(torch.ops.aten, name, None)
    if packet is None:
        return True
    return not any(getattr(packet, overload).is_view for overload in packet.overloads())


class LaunchCounter:
    """Counts the kernel launches a block of code would make on a GPU, without one: each Triton kernel launch (in
    Triton's interpreter, `TRITON_INTERPRET=1`) and each outermost ATen operator that computes, read from
    `torch.profiler` (so the operators inside custom operators and autograd's backward nodes count too; views and
    bare allocations launch nothing, nor do operators on empty tensors, `.to()` or `.contiguous()` only when they
    copy, and the interpreter's own
    copies inside a Triton launch are not counted).

        with LaunchCounter() as launches:
            layer(inputs).sum().backward()
        launches.total, launches.triton, launches.aten, launches.names

    The recurrences' launch counts per sequence are tested this way (tests/test_kernels.py); on a GPU
    `benchmarks/gpu_report.py` counts the kernels the device ran, from `torch.profiler` too.
    """

    def __init__(self) -> None:
        self.triton = 0
        self.names: list[str] = []  # the ATen operators counted, in order

    @property
    def aten(self) -> int:
        return len(self.names)

    @property
    def total(self) -> int:
        return self.triton + self.aten

    def __enter__(self) -> LaunchCounter:
        self._patched = []
        if triton_installed():
            from triton.runtime import interpreter, jit

            # a kernel runs compiled (`JITFunction`) or in the interpreter (`InterpretedFunction`)
            for owner in (jit.JITFunction, interpreter.InterpretedFunction):
                self._patched.append((owner, owner.run))
                owner.run = self._counted(owner.run)
        self._profile = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True)
        self._profile.__enter__()
        return self

    def _counted(self, run: Callable[..., Any]) -> Callable[..., Any]:
        """`run` (a Triton kernel's launch) counted, and marked for the profiler (what it runs is not counted)."""
        counter = self

        def counted(function: Any, *args: Any, **kwargs: Any) -> Any:
            if kwargs.get("warmup"):
                return run(function, *args, **kwargs)
            counter.triton += 1
            with torch.profiler.record_function(_TRITON_LAUNCH):
                return run(function, *args, **kwargs)

        return counted

    def __exit__(self, *exc_info: object) -> None:
        self._profile.__exit__(*exc_info)
        for owner, original in self._patched:
            owner.run = original

        def aten_ancestor(event) -> bool:
            event = event.cpu_parent
            while event is not None:
                if event.name.startswith("aten::") or event.name == _TRITON_LAUNCH:
                    return True
                event = event.cpu_parent
            return False

        def computes(event) -> bool:
            name = event.name.removeprefix("aten::")
            shapes = [shape for shape in event.input_shapes if shape]
            if shapes and all(0 in shape for shape in shapes):  # only empty tensors in: nothing to launch
                return False
            if name in _PASS_THROUGH:  # `.to()`, `.contiguous()`, `.reshape()`: a launch only when they copy
                return any(computes(child) for child in event.cpu_children if child.name.startswith("aten::"))
            return _launches(name)

        events = sorted(self._profile.events(), key=lambda event: event.time_range.start)
        self.names = [
            event.name.removeprefix("aten::")
            for event in events
            if event.name.startswith("aten::") and not aten_ancestor(event) and computes(event)
        ]
