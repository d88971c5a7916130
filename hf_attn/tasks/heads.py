"""Which shape and which head: the task shapes by name, the shared ones (`hf_attn.tasks`) and those the model
folders add (a row's `tasks` module, e.g. AttentionXML's label-tree training), and the one place that finds a
head, for a run's options (`pick_head`, `shape_for_head`), a saved folder (`trained_head`, `load_trained`) and a
model in memory (`find_head`): training, evaluation, prediction and pictures all ask here.

A folder's module lists its shapes in a `TASK_SHAPES` tuple and imports `hf_attn.tasks` for their base classes; this
module imports both, so nothing in `hf_attn.tasks` names a folder. A folder's shape that trains other heads on the
data of a shared shape says so (`variant_of`), and joins that shape's `variants`.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

from transformers import AutoConfig, AutoTokenizer, PreTrainedModel

from ..registry.table import ARCHITECTURES, Architecture, Head, get_architecture
from .base import TaskShape
from .classification import Classification, PairClassification
from .few_shot import FewShotClassification
from .language_modeling import LanguageModeling
from .multi_label import MultiLabel
from .seq2seq import SequenceToSequence
from .token_classification import TokenClassification

__all__ = [
    "TASK_SHAPES",
    "choose_head",
    "find_head",
    "head_named",
    "heads_for",
    "load_trained",
    "pick_head",
    "shape_for_head",
    "shape_of",
    "trained_head",
]


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


def head_named(architecture: Architecture, class_name: str | None) -> Head | None:
    """The head of `architecture` whose model class is called `class_name` (a config's `architectures[0]`), or
    `None` (the base model, or another architecture's class)."""
    return next((head for head in architecture.heads if head.model_class.__name__ == class_name), None)


def heads_for(architecture: Architecture, shape: TaskShape, name: str | None) -> list[Head]:
    """The heads of `architecture` that `shape` trains, only the one called `name` where it is given."""
    return [head for head in shape.heads(architecture) if name is None or head.model_class.__name__ == name]


def shape_for_head(shape: TaskShape, architecture: Architecture, name: str | None) -> TaskShape:
    """`shape`, or the variant of it (same data, another training: `label_tree` for `multi_label`) that has the
    head asked for by name."""
    if name is None or heads_for(architecture, shape, name):
        return shape
    return next((TASK_SHAPES[v] for v in shape.variants if heads_for(architecture, TASK_SHAPES[v], name)), shape)


def pick_head(architecture: Architecture, shape: TaskShape, name: str | None) -> Head:
    """The head a run trains: the first of `heads_for`, or an error that lists the architecture's heads."""
    heads = heads_for(architecture, shape, name)
    if not heads:
        wanted = f"{name} " if name else ""
        available = ", ".join(head.model_class.__name__ for head in architecture.heads)
        raise ValueError(f"{architecture.name} has no head {wanted}for {shape.name} tasks (its heads: {available}).")
    return heads[0]


def choose_head(
    architecture: Architecture, wanted: Sequence[str], name: str | None, streaming: bool = False
) -> tuple[TaskShape, TaskShape, Head | None]:
    """What a run's data and options choose, in one step: the data's shape (the first of the shapes `wanted` that
    `architecture` has a head for, else the last), the shape that trains the head asked for by `name`
    (`shape_for_head`: the data's, or a variant of it), and that head: the first of `heads_for`, or `None` where
    there is none, for `pick_head` to name what is missing once the rows have named a missing column (a column
    not there is why no head fits). Data read as a stream (`streaming`, `--streaming`) for a shape that needs its
    whole training split ahead (`TaskShape.streams` false) is refused, naming the option."""
    found = next(
        (
            (TASK_SHAPES[shape], heads)
            for shape in wanted
            if (heads := heads_for(architecture, TASK_SHAPES[shape], name))
        ),
        (TASK_SHAPES[wanted[-1]], []),
    )
    data_shape, heads = found
    if streaming and not data_shape.streams:
        raise ValueError(
            f"--streaming: a {data_shape.name} task needs its whole training split ahead ({data_shape.needs_ahead}); "
            "train without --streaming."
        )
    shape = shape_for_head(data_shape, architecture, name)
    if shape is not data_shape:  # a variant's heads
        heads = heads_for(architecture, shape, name)
    return data_shape, shape, next(iter(heads), None)


def find_head(model: PreTrainedModel) -> tuple[Architecture, Head]:
    """The registry row and head of `model` (a ValueError for a base model)."""
    architecture = get_architecture(model.config.model_type)
    head = head_named(architecture, type(model).__name__)
    if head is None or type(model) is not head.model_class:
        raise ValueError(
            f"{type(model).__name__} is not a head of {architecture.name}: pass a head, not the base model."
        )
    return architecture, head


def trained_head(model_path: str, option: str = "MODEL") -> tuple[Any, Head]:
    """The config of the model saved at `model_path` and its head's registry entry, read without its weights (what
    a command checks its options against before loading them). The folder is read as a model folder stage
    (`hf_attn.utils.inputs`): a file, a folder without config.json or a config that does not parse is named."""
    from ..utils.inputs import MODEL, read_input

    config = read_input(option, model_path, MODEL, lambda: AutoConfig.from_pretrained(model_path))
    architecture = get_architecture(config.model_type)
    class_name = (config.architectures or [None])[0]
    head = head_named(architecture, class_name)
    if head is None:
        raise ValueError(f"{model_path}: {class_name or 'the base model'} is not a task head of {architecture.name}.")
    return config, head


def load_trained(
    model_path: str, option: str = "MODEL", head: Head | None = None
) -> tuple[PreTrainedModel, Any, Head, TaskShape]:
    """The model saved at `model_path` (its head's class), its tokenizer, the head's registry entry and its shape;
    each read names `option` and the folder when it fails (`hf_attn.utils.inputs`). `head`: the one `trained_head`
    found already (a command that checked its options against it), so that the config is not read again."""
    from ..utils.inputs import MODEL, read_input

    if head is None:
        _, head = trained_head(model_path, option)
    try:
        tokenizer = AutoTokenizer.from_pretrained(model_path)
    except (OSError, ValueError) as error:
        raise ValueError(f"{model_path} has no tokenizer (save one with the model): {error}") from error
    model = read_input(option, model_path, MODEL, lambda: head.model_class.from_pretrained(model_path)).eval()
    return model, tokenizer, head, shape_of(head)
