"""A trained model's rows to score: what `hf-attn evaluate` and `hf-attn faithfulness` share.

Both commands take `hf-attn train`'s data options and read the rows as training read its held-out split: the
same `DataRequest` (`hf_attn.data.request`), the model's own label names, and what the training run set that changes
what the model reads (its training record's `evaluation_options`: `--max_length`, the columns its tokenizer reads),
unless given.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..data.episodes import canonical_few_shot_rows
from ..data.files import load_splits
from ..data.request import DataRequest, HeldOut
from ..data.rows import canonical_rows, hold_out
from ..data.task_data import TaskData
from ..options.arguments import architecture_arguments
from ..registry.row import ArchitectureArguments, TokenizerColumn
from .heads import trained_head
from .record import TRAINING_FILE, TrainingRecord

if TYPE_CHECKING:
    from datasets import Dataset
    from transformers import PreTrainedConfig

    from .base import TaskShape

__all__ = [
    "evaluation_columns",
    "own_architecture_arguments",
    "run_options",
    "saved_json",
    "scored_data",
    "scored_rows",
    "training_seed",
]


def own_architecture_arguments(model: str, given: list) -> object | None:
    """The options of the model's own architecture among `given` (one instance per architecture's options class,
    as parsed; `None` for an architecture without options). Evaluation reads only the columns they name
    (`columns()`, the training run's where not given); an option that only training reads (a knowledge base to build
    the vocabulary from), or another architecture's, is refused in one line."""

    def default(item: dataclasses.Field) -> object:
        return item.default_factory() if item.default_factory is not dataclasses.MISSING else item.default

    classes = architecture_arguments()
    typed = {
        (name, item.name): getattr(options, item.name)
        for name, options in zip(classes, given, strict=True)
        for item in dataclasses.fields(options)
        if item.init and getattr(options, item.name) != default(item)
    }
    config, _ = trained_head(model)
    own = next((options for name, options in zip(classes, given, strict=True) if name == config.model_type), None)
    read = {column.option for column in own.columns()} if own is not None else set()
    for (name, option), _ in typed.items():
        if name != config.model_type:
            raise ValueError(f"--{option} is an option of --arch {name}; {model} is a {config.model_type} model.")
        if option not in read:
            raise ValueError(
                f"--{option}: a training option of --arch {name}, which evaluation does not read (the saved "
                "tokenizer holds what training built from it)."
            )
    return own


def saved_json(model_path: str, name: str) -> dict[str, Any]:
    """A JSON file of the saved model (`training_args.json`, the training record), from its folder or its Hub repo
    (transformers' `cached_file`); `{}` where the model has none (a converted model, or one saved by hand)."""
    from transformers.utils import cached_file

    path = cached_file(model_path, name, _raise_exceptions_for_missing_entries=False)
    return json.loads(Path(path).read_text(encoding="utf-8")) if path else {}


def run_options(model_path: str) -> dict[str, Any]:
    """What the training run set that `hf-attn evaluate` takes unless given (`TrainingRecord.evaluation_options`),
    from its record; `{}` for a model without one."""
    saved = saved_json(model_path, TRAINING_FILE)
    return TrainingRecord.from_json(saved).evaluation_options if saved else {}


def training_seed(model_path: str) -> int:
    """The seed the model was trained with (its `training_args.json`; 0, the default, elsewhere): the held-out
    episodes of a few-shot model are drawn with it."""
    return int(saved_json(model_path, "training_args.json").get("seed", 0))


def evaluation_columns(arguments: ArchitectureArguments | None, reused: dict[str, Any]) -> list[TokenizerColumn]:
    """The columns the model's tokenizer reads beside each text (`ArchitectureArguments.columns`: STCKA's
    `--concept_column`), each the one given, else the training run's (`reused`: `run_options`)."""
    if arguments is None:
        return []
    for item in dataclasses.fields(arguments):
        if getattr(arguments, item.name) is None and item.name in reused:
            setattr(arguments, item.name, reused[item.name])
    return arguments.columns()


def scored_rows(request: DataRequest) -> Dataset:
    """The rows to score: a file whole, or a split of a folder / Hub dataset (`--eval_split`, else the first of
    validation, dev, valid, test, else the rows `hold_out` holds out)."""
    is_file = Path(request.dataset).is_file()
    if is_file:  # the file is the rows scored, read once: no held-out split beside it
        request = dataclasses.replace(request, held_out=HeldOut())
    train, rows, _ = load_splits(dataclasses.replace(request, streaming=False))
    if is_file:
        return train
    return rows if rows is not None else hold_out(train, request).held_out


def scored_data(
    shape: TaskShape, rows: Dataset, request: DataRequest, config: PreTrainedConfig, episode_settings: dict[str, Any]
) -> TaskData:
    """`rows` (`scored_rows`) in the canonical form of the model's task shape, labels encoded with the model's own
    label names. `request.columns.tokenizer`: what the tokenizer reads beside each text (`evaluation_columns`), kept
    and passed to it. `episode_settings`: a few-shot model's held-out episodes (`TaskData.episode_settings`)."""
    if shape.episodic:  # classes are names, new at test time: the same episodes as training's held-out
        label = request.columns.label or "label"
        canonical, dropped = canonical_few_shot_rows(rows, "evaluation", request.columns.text, label)
        return TaskData(
            train=canonical,
            eval=canonical,
            shape=shape.name,
            text_column="text",
            label_column="label",
            dropped={"eval": dropped} if dropped else {},
            episode_settings=episode_settings,
        )
    for option, _, column in request.columns.tokenizer:
        if column not in rows.column_names:
            raise ValueError(
                f"--{option} {column!r} (the training run's, unless given) is not a column of the "
                f"evaluation data ({', '.join(rows.column_names)}): name the column with --{option}."
            )
    label = request.columns.label
    if label is None and shape.has_labels:
        label = next((name for name in ("label", "labels") if name in rows.column_names), "label")
    known = tuple(config.id2label.values()) if shape.has_labels else None
    columns = dataclasses.replace(request.columns, label=label if known else None)
    request = dataclasses.replace(request, columns=columns, labels=known, split_names=("evaluation", "evaluation"))
    return canonical_rows(rows, rows, shape.layout, request, {})
