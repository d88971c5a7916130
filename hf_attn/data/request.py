"""What a run asks of its data, in one frozen object (`DataRequest`): where the held-out rows come from (`HeldOut`,
held out of the training rows by `hf_attn.data.rows.hold_out` where the data has none) and how many of them a
training run scores (`Scoring`, applied by `hf_attn.data.rows.rows_to_score`).

A request is built once, from the options (`DataRequest.of`), and every step of the data path takes it whole:
reading the splits (`hf_attn.data.files.load_splits`), making their rows canonical (`hf_attn.data.rows.canonical_rows`)
or streaming them (`hf_attn.data.streaming.stream_rows`). No step takes the options one by one, so none can forget one
or read it differently.

This module imports nothing beyond the standard library at import time: the options build a request without
loading `datasets`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

__all__ = [
    "MIN_EVAL_SAMPLES",
    "Columns",
    "DataOptions",
    "DataRequest",
    "HeldOut",
    "Scoring",
    "TrainingLength",
]

# Held-out rows scored by default: as many as the run trains on, and never fewer than this (a small held-out split
# says little: 2,000 rows give an accuracy to about +-2%).
MIN_EVAL_SAMPLES = 2000


class DataOptions(Protocol):
    """The options a request is read from, by their option names (`hf_attn.options.arguments.HfAttnArguments`)."""

    dataset: str | None
    dataset_config: str | None
    train_split: str
    dataset_format: str | None
    text_column: str
    text_pair_column: str | None
    target_column: str | None
    label_column: str | None
    label_separator: str | None
    column_names: list[str] | None
    eval_dataset: str | None
    eval_split: str | None
    eval_fraction: float
    max_eval_samples: int | None
    streaming: bool
    tokenizer_sample_rows: int
    overwrite_cache: bool
    preprocessing_num_workers: int | None


class TrainingLength(Protocol):
    """What a training run's arguments say of how much it trains (`transformers.TrainingArguments`' fields)."""

    seed: int
    max_steps: int
    num_train_epochs: float
    per_device_train_batch_size: int
    gradient_accumulation_steps: int
    world_size: int


@dataclass(frozen=True)
class Columns:
    """The columns a task reads, as the user named them.

    Attributes:
        text: the text (the source text, for seq2seq; `--text_column`).
        pair: the second text of a pair or the target text (`--text_pair_column`, `--target_column`).
        label: the labels (`--label_column`; `None`: the task reads none, or `label` / `labels` is found).
        label_separator: splits a string column into a label set (`--label_separator`).
        tokenizer: (option that named it, keyword of the tokenizer's call, column) for what the tokenizer reads
            beside each text, kept as they are (`ArchitectureArguments.columns`: STCKA's `--concept_column`).
        header: the names of a headerless CSV's columns (`--column_names`).
        strings: the columns a local file's reader reads as strings, as written (`DataRequest.of`).
    """

    text: str = "text"
    pair: str | None = None
    label: str | None = None
    label_separator: str | None = None
    tokenizer: tuple[tuple[str, str, str], ...] = ()
    header: tuple[str, ...] | None = None
    strings: tuple[str, ...] = ()
    # The further columns kept beside the canonical ones (the tokenizer's), from `tokenizer`.
    keep: tuple[str, ...] = field(init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "keep", tuple(column for _, _, column in self.tokenizer))


@dataclass(frozen=True)
class Scoring:
    """How many held-out rows a training run scores (`hf_attn.data.rows.rows_to_score`): `rows`
    (`--max_eval_samples`), else about as many as it trains on, and at least `MIN_EVAL_SAMPLES`: `steps` × `batch`
    examples where it counts steps (`--max_steps`), else `epochs` × its training rows. A five-step run on a million
    rows does not score 100,000.

    Attributes:
        rows: the held-out rows scored at most (`--max_eval_samples`).
        steps: the steps the run trains (`--max_steps`; `None`: it counts epochs).
        batch: the examples of one step, over every process.
        epochs: the epochs it trains when it counts no steps (`--num_train_epochs`).
    """

    rows: int | None = None
    steps: int | None = None
    batch: int = 1
    epochs: float = 1.0

    @classmethod
    def of(cls, rows: int | None, training: TrainingLength) -> Scoring:
        """The scoring of a run trained as `training` says, at most `rows` rows where given."""
        batch = training.per_device_train_batch_size * training.gradient_accumulation_steps * training.world_size
        steps = training.max_steps if training.max_steps > 0 else None
        return cls(rows=rows, steps=steps, batch=batch, epochs=training.num_train_epochs)


@dataclass(frozen=True)
class HeldOut:
    """Where the held-out rows come from: a file (`dataset`), else a split (`split`), else the first of
    validation / dev / valid / test the dataset has, else `fraction` of the usable training rows, drawn with `seed`
    (`hf_attn.data.rows.hold_out`). A stream without one holds out its first `stream_rows` rows.

    Attributes:
        dataset: a file of held-out rows (`--eval_dataset`).
        split: the held-out split's name (`--eval_split`).
        fraction: the share of training rows held out when the data has no held-out split (`--eval_fraction`).
        seed: the seed of that draw (the run's `--seed`).
        stream_rows: the rows a stream without a held-out split holds out (`--max_eval_samples`, else 2,000).
        scoring: how many of the held-out rows a training run scores (`Scoring`; `None`: every one, as
            `hf-attn evaluate` scores them).
    """

    dataset: str | None = None
    split: str | None = None
    fraction: float = 0.1
    seed: int = 0
    stream_rows: int = 2000
    scoring: Scoring | None = None


@dataclass(frozen=True)
class DataRequest:
    """Everything the data path reads of the options, typed and frozen.

    Attributes:
        dataset: a file, a folder or a Hub id (`--dataset`).
        config: the Hub dataset's configuration (`--dataset_config`).
        train_split: the training split (`--train_split`).
        format: the builder of a local file or folder (`--dataset_format`: csv, json, parquet, text).
        columns: the columns read (`Columns`).
        held_out: where the held-out rows come from (`HeldOut`).
        streaming: read as training asks for rows (`--streaming`; `hf_attn.data.streaming`).
        sample_rows: a stream's first rows, which give its vocabulary and labels (`--tokenizer_sample_rows`).
        fresh: every cached step computed again and written afresh (`--overwrite_cache`).
        workers: processes of the rewriting `map` (`--preprocessing_num_workers`).
        labels: the label names to encode with (a trained model's), instead of the training split's.
        split_names: what messages call the training and the held-out split (`hf-attn evaluate`: "evaluation").
    """

    dataset: str
    config: str | None = None
    train_split: str = "train"
    format: str | None = None
    columns: Columns = field(default_factory=Columns)
    held_out: HeldOut = field(default_factory=HeldOut)
    streaming: bool = False
    sample_rows: int = 100_000
    fresh: bool = False
    workers: int | None = None
    labels: tuple[str, ...] | None = None
    split_names: tuple[str, str] = ("train", "held-out")

    @classmethod
    def of(
        cls, options: DataOptions, tokenizer: Sequence[tuple[str, str, str]], training: TrainingLength | None = None
    ) -> DataRequest:
        """The request `options` make, built once where a command has read them, with the columns the tokenizer reads
        beside each text (`tokenizer`: (option, keyword, column); the architecture's own options',
        `ArchitectureArguments.columns`, or `hf-attn evaluate`'s, the run's); for a training run (`training`: its
        arguments), its seed (the held-out draw; 0 without one) and how many held-out rows it scores (`Scoring`)."""
        pair = options.target_column or options.text_pair_column
        # Read as strings, as written: the text, its pair, the label (named, or the `label` / `labels` a task finds
        # by itself), and the tokenizer's columns.
        label = options.label_column
        named = [options.text_column, pair, label, *([] if label else ["label", "labels"])]
        strings = tuple(dict.fromkeys(name for name in [*named, *(column for _, _, column in tokenizer)] if name))
        columns = Columns(
            text=options.text_column,
            pair=pair,
            label=label,
            label_separator=options.label_separator,
            tokenizer=tuple(tuple(column) for column in tokenizer),
            header=tuple(options.column_names) if options.column_names else None,
            strings=strings,
        )
        held_out = HeldOut(
            dataset=options.eval_dataset,
            split=options.eval_split,
            fraction=options.eval_fraction,
            seed=training.seed if training is not None else 0,
            stream_rows=options.max_eval_samples or MIN_EVAL_SAMPLES,
            scoring=Scoring.of(options.max_eval_samples, training) if training is not None else None,
        )
        return cls(
            dataset=options.dataset or "",
            config=options.dataset_config,
            train_split=options.train_split,
            format=options.dataset_format,
            columns=columns,
            held_out=held_out,
            streaming=options.streaming,
            sample_rows=options.tokenizer_sample_rows,
            fresh=options.overwrite_cache,
            workers=options.preprocessing_num_workers,
        )
