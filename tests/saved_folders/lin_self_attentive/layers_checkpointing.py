"""Gradient checkpointing for layers whose inputs or outputs are not plain tensors.

transformers' `GradientCheckpointingLayer` hands a layer's `forward` to the checkpoint function with the keyword
arguments bound and the positional arguments as the checkpoint's inputs. Under torch's reentrant checkpoint
(`gradient_checkpointing_kwargs={"use_reentrant": True}`) that keeps the graph only when

1. some positional input requires a gradient: a layer that embeds ids inside (the few-shot instance encoders, SGM's
   encoder) has none, and
2. the outputs are tensors or tuples of tensors: the tensors of a dataclass (the LSTMN layer's output) or of a tuple
   led by a mask come out of the replay without a graph.

Otherwise the layer's parameters get no gradient and nothing says so. `CheckpointingLayer` hands the checkpoint
every tensor of the arguments, positional or keyword, plus an empty tensor that requires a gradient when none of
them does (so the reentrant function records a backward at all), and carries the outputs through it as a flat
tuple of tensors (`torch.utils._pytree`), rebuilt afterwards. Both checkpoint modes then see the whole graph, and
transformers' own use of the layer (`gradient_checkpointing_enable`, the `_gradient_checkpointing_func` it sets) is
unchanged.
"""

from __future__ import annotations

import dataclasses
from functools import wraps
from typing import Any

import torch
from torch import nn
from torch.utils import _pytree as pytree
from transformers.modeling_layers import GradientCheckpointingLayer

__all__ = ["CheckpointingLayer"]


def _is_tensor(value: Any) -> bool:
    return isinstance(value, torch.Tensor)


def _register_dataclasses(value: Any) -> None:
    """Makes the dataclasses in an output (nested too) pytree nodes, once each; `ModelOutput`s, tuples, lists and
    dicts already are."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        if type(value) not in pytree.SUPPORTED_NODES:
            pytree.register_dataclass(type(value))
        children = [getattr(value, field.name) for field in dataclasses.fields(value)]
    elif isinstance(value, tuple | list):
        children = list(value)
    elif isinstance(value, dict):
        children = list(value.values())
    else:
        return
    for child in children:
        _register_dataclasses(child)


class CheckpointingLayer(GradientCheckpointingLayer):
    """A `GradientCheckpointingLayer` whose checkpoint sees every tensor it reads and returns (module docstring).
    Subclasses write `forward` as usual.

    The checkpoint replays the layer through `self.forward`, so hooks and wrappers on the instance see the replay as
    they see the first call (transformers' tests count them); `_replaying` lets that call through to the layer's
    own `forward`. transformers before 5.2x checkpointed in `GradientCheckpointingLayer.__call__` instead, with the
    same two gaps: `__call__` is `nn.Module`'s here, so only this wrapper checkpoints, on every version."""

    __call__ = nn.Module.__call__
    _replaying = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # GradientCheckpointingLayer's own wrapping is replaced by this one, not stacked on it.
        super(GradientCheckpointingLayer, cls).__init_subclass__(**kwargs)
        forward = cls.forward

        @wraps(forward)
        def forward_with_checkpointing(self: CheckpointingLayer, *args: Any, **kwargs: Any) -> Any:
            outermost = type(self).forward is forward_with_checkpointing
            checkpointing = self.gradient_checkpointing and self.training and torch.is_grad_enabled()
            if self._replaying or not (checkpointing and outermost):
                return forward(self, *args, **kwargs)
            leaves, spec = pytree.tree_flatten((args, kwargs))
            places = [index for index, leaf in enumerate(leaves) if _is_tensor(leaf)]
            inputs = [leaves[index] for index in places]
            if not any(tensor.requires_grad for tensor in inputs) and any(p.requires_grad for p in self.parameters()):
                inputs.append(torch.empty(0, requires_grad=True))  # the reentrant function then records a backward
            returned: dict[str, Any] = {}

            def run(*tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
                values = list(leaves)
                for index, tensor in zip(places, tensors, strict=False):
                    values[index] = tensor
                call_args, call_kwargs = pytree.tree_unflatten(values, spec)
                self._replaying = True
                try:
                    output = self.forward(*call_args, **call_kwargs)
                finally:
                    self._replaying = False
                _register_dataclasses(output)
                flat, returned["spec"] = pytree.tree_flatten(output)
                returned["leaves"] = flat  # the non-tensor leaves are taken from here
                return tuple(leaf for leaf in flat if _is_tensor(leaf))

            tensors = iter(self._gradient_checkpointing_func(run, *inputs))
            flat = [next(tensors) if _is_tensor(leaf) else leaf for leaf in returned["leaves"]]
            return pytree.tree_unflatten(flat, returned["spec"])

        cls.forward = forward_with_checkpointing
