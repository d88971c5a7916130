"""A task's data in canonical form, and what each task shape's rows hold (the data side of `hf_attn.tasks`).

The loaders (`hf_attn.data.rows` for a file or a Hub dataset, whole or streamed; the synthetic tasks;
`hf_attn.data.episodes`) put a dataset's columns in the canonical form of its shape and return a `TaskData`, frozen:
a run's data step (`hf_attn.training.preparation.task_data`) completes it once, with `dataclasses.replace`, and
nothing fills it in afterwards; `TASK_LAYOUTS` says, per shape, which columns it cannot do
without and whether its labels are one class or a set. The shapes' training behaviour (`hf_attn.tasks.TaskShape`)
reads its layout from here: one source for both.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # datasets loads in a second: imported where rows become a Dataset, not at `import hf_attn`
    from datasets import Dataset


def dataset_from_rows(rows: dict[str, list]) -> Dataset:
    """`datasets.Dataset.from_dict(rows)`, datasets imported on first use (not at `import hf_attn`)."""
    from datasets import Dataset

    return Dataset.from_dict(rows)


class LabelFormat(Enum):
    """How a label column is read from a file (a head's labels are its `LabelKind`)."""

    CLASS = "a class name or id"
    LABEL_SET = "label names"
    TAGS = "a tag per word"
    EPISODE_CLASS = "a class name, new classes at test time"
    NONE = "no label column"


@dataclass(frozen=True)
class TaskLayout:
    """What the rows of one task shape hold.

    Attributes:
        name: the shape's name (`classification`, `multi_label`, ...).
        needs: the `TaskData` columns the shape cannot work without (`label_column`, `pair_column`).
        label_sets: each example has a set of labels (a list of names), not one class.
        label_format: how a label column is read from a file (`LabelFormat`).
    """

    name: str
    needs: tuple[str, ...] = ("label_column",)
    label_sets: bool = False
    label_format: LabelFormat = LabelFormat.CLASS
    pair_option: str = "--text-pair-column"  # the option naming the second text's column
    pair_is: str = "second text"  # what the second text is, in messages
    # Whether the shape reads a label column (a language model or seq2seq task does not); from `needs`.
    has_labels: bool = field(init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "has_labels", "label_column" in self.needs)


TASK_LAYOUTS: dict[str, TaskLayout] = {
    layout.name: layout
    for layout in (
        TaskLayout("classification"),
        TaskLayout("pair_classification", needs=("label_column", "pair_column")),
        TaskLayout("multi_label", label_sets=True, label_format=LabelFormat.LABEL_SET),
        TaskLayout(
            "seq2seq",
            needs=("pair_column",),
            label_format=LabelFormat.NONE,
            pair_option="--target-column",
            pair_is="target",
        ),
        TaskLayout("language_modeling", needs=(), label_format=LabelFormat.NONE),
        TaskLayout("token_classification", label_format=LabelFormat.TAGS),
        TaskLayout("few_shot", label_format=LabelFormat.EPISODE_CLASS),
    )
}


def get_task_layout(name: str) -> TaskLayout:
    """The layout of the task shape `name`, with a clear error for unknown names."""
    if name not in TASK_LAYOUTS:
        raise ValueError(f"Unknown task shape {name!r}; known: {', '.join(TASK_LAYOUTS)}.")
    return TASK_LAYOUTS[name]


@dataclass(frozen=True)
class TaskData:
    """A task's training and held-out splits, with what their columns mean. Frozen (a new one is
    `dataclasses.replace(data, ...)`); its dicts are read, never written.

    Attributes:
        train / eval: the splits, columns in canonical form (see the module docstring).
        shape: the name of the task shape (a key of `TASK_SHAPES`).
        text_column: the text (the source, for seq2seq).
        pair_column: the second text of a pair, or the target text of seq2seq.
        label_column: the labels (`None`: none, e.g. a language model).
        labels: class / tag names, index = id; `None` for shapes that collect them (multi-label).
        evidence_column: per example, where the label's evidence lies (a token or sentence index; synthetic tasks).
        source: `{"type", "name", "description"}` of the data, for the card.
        dropped: per split, the rows the loader dropped and why (`{"train": {"empty text": 3}}`), for the record.
        episode_settings: the settings of a few-shot task's episodes beyond the model's N, K, Q: `eval_episodes` (the
            fixed held-out episodes), `noise_rate` (the share of support instances replaced by other classes') and
            `train_ways` (N of the training episodes, where it is not the model's).
        tokenizer_columns: further columns the tokenizer reads beside each text, keyword of its call -> column
            (STCKA's concept column: `{"concepts": ...}`; `ArchitectureArguments.columns`).
        resources: files the task ships for the tokenizer, by name (a synthetic task's; STCKA's `knowledge_base`).
    """

    train: Dataset
    eval: Dataset
    shape: str
    text_column: str
    pair_column: str | None = None
    label_column: str | None = None
    labels: list[str] | None = None
    evidence_column: str | None = None
    source: dict[str, str] = field(default_factory=dict)
    dropped: dict[str, dict[str, int]] = field(default_factory=dict)
    episode_settings: dict[str, Any] = field(default_factory=dict)
    tokenizer_columns: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()  # status lines, printed once the data has passed every check
    resources: dict[str, str] = field(default_factory=dict)
    # The steps whose results came from the `datasets` cache (`hf_attn.data.cache`), for the run's status line.
    from_cache: tuple[str, ...] = ()
    # The rows a vocabulary is trained on when not the training split: a stream's first rows (`data.streaming`).
    vocabulary_rows: Dataset | None = None
    # Read from the fields above when built (plain attributes: what every step reads, read without a call).
    # Whether the splits are streams (`datasets.IterableDataset`: read as training asks, no length).
    streamed: bool = field(init=False, compare=False)
    # The rows a vocabulary is trained on: `vocabulary_rows` where set, else the training split.
    vocabulary_source: Dataset = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        for name in ("notes", "from_cache"):  # a list given is kept as a tuple: nothing appends to it later
            object.__setattr__(self, name, tuple(getattr(self, name)))
        object.__setattr__(self, "streamed", not hasattr(self.train, "__len__"))
        source = self.vocabulary_rows if self.vocabulary_rows is not None else self.train
        object.__setattr__(self, "vocabulary_source", source)

    def texts(self, split: Dataset | None = None) -> Iterator[str]:
        """Every text of `split` (default: train), pairs and targets included: what a vocabulary is trained on."""
        for batch in self.text_batches(split):
            yield from batch

    def text_batches(self, split: Dataset | None = None) -> Iterator[list[str]]:
        """`texts(split)` as lists read from Arrow batches (`hf_attn.data.cache.text_batches`), never a row at a
        time."""
        from .cache import text_batches

        split = split if split is not None else self.vocabulary_source
        yield from text_batches(split, (self.text_column, self.pair_column))

    def count_texts(self, split: Dataset | None = None) -> int:
        """How many texts `texts(split)` yields (a progress bar's total)."""
        split = self.vocabulary_source if split is None else split
        return len(split) * sum(column is not None for column in (self.text_column, self.pair_column))
