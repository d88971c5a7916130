"""The task shapes by name: the shared ones (`hf_attn.tasks`) and those the model folders add (a row's `tasks`
module, e.g. AttentionXML's label-tree training), with the lookups that go through them.

A folder's module lists its shapes in a `TASK_SHAPES` tuple and imports `hf_attn.tasks` for their base classes; this
module imports both, so nothing in `hf_attn.tasks` names a folder. A folder's shape that trains other heads on the
data of a shared shape says so (`variant_of`), and joins that shape's `variants`.
"""

from __future__ import annotations

import importlib
from typing import Any

from transformers import AutoConfig, AutoTokenizer, PreTrainedModel

from .registry import ARCHITECTURES, Architecture, Head, get_architecture
from .tasks import (
    Classification,
    FewShotClassification,
    LanguageModeling,
    MultiLabel,
    PairClassification,
    SequenceToSequence,
    TaskShape,
    TokenClassification,
)

__all__ = ["TASK_SHAPES", "load_trained", "shape_of", "trained_head"]


def _folder_shapes(architecture: Architecture) -> tuple[TaskShape, ...]:
    """The shapes of `architecture`'s own `tasks` module (`Architecture.tasks`), none without one."""
    if architecture.tasks is None:
        return ()
    package = architecture.config_class.__module__.rpartition(".")[0]
    return tuple(importlib.import_module(f"{package}.{architecture.tasks}").TASK_SHAPES)


def _all_shapes() -> dict[str, TaskShape]:
    shared = (
        Classification(),
        PairClassification(),
        MultiLabel(),
        SequenceToSequence(),
        LanguageModeling(),
        TokenClassification(),
        FewShotClassification(),
    )
    shapes = {shape.name: shape for shape in shared}
    for architecture in ARCHITECTURES.values():
        for shape in _folder_shapes(architecture):
            if shape.name in shapes:
                raise ValueError(f"hf_attn/models/{architecture.name}: a task shape {shape.name!r} exists already.")
            shapes[shape.name] = shape
            if shape.variant_of is not None:
                base = shapes[shape.variant_of]
                base.variants = (*base.variants, shape.name)
    return shapes


TASK_SHAPES: dict[str, TaskShape] = _all_shapes()


def shape_of(head: Head) -> TaskShape:
    """The task shape that trains `head` (the first that accepts it)."""
    return next(shape for shape in TASK_SHAPES.values() if shape.accepts(head))


def trained_head(model_path: str, option: str = "MODEL") -> tuple[Any, Head]:
    """The config of the model saved at `model_path` and its head's registry entry, read without its weights (what
    a command checks its options against before loading them). The folder is read as a model folder stage
    (`hf_attn.utils.inputs`): a file, a folder without config.json or a config that does not parse is named."""
    from .utils.inputs import MODEL, read_input

    config = read_input(option, model_path, MODEL, lambda: AutoConfig.from_pretrained(model_path))
    architecture = get_architecture(config.model_type)
    class_name = (config.architectures or [None])[0]
    head = next((head for head in architecture.heads if head.model_class.__name__ == class_name), None)
    if head is None:
        raise ValueError(f"{model_path}: {class_name or 'the base model'} is not a task head of {architecture.name}.")
    return config, head


def load_trained(
    model_path: str, option: str = "MODEL", head: Head | None = None
) -> tuple[PreTrainedModel, Any, Head, TaskShape]:
    """The model saved at `model_path` (its head's class), its tokenizer, the head's registry entry and its shape;
    each read names `option` and the folder when it fails (`hf_attn.utils.inputs`). `head`: the one `trained_head`
    found already (a command that checked its options against it), so that the config is not read again."""
    from .utils.inputs import MODEL, read_input

    if head is None:
        _, head = trained_head(model_path, option)
    try:
        tokenizer = AutoTokenizer.from_pretrained(model_path)
    except (OSError, ValueError) as error:
        raise ValueError(f"{model_path} has no tokenizer (save one with the model): {error}") from error
    model = read_input(option, model_path, MODEL, lambda: head.model_class.from_pretrained(model_path)).eval()
    return model, tokenizer, head, shape_of(head)
