"""The training record a run keeps beside its model (`hf_attn_training.json`), typed: what `hf_attn.training.fitting`
writes and what the card (`hf_attn.cards`), `hf-attn evaluate` and `hf-attn faithfulness` read, by field.

The file's layout is the one hf_attn has always written, so that a folder saved before this module reads back the
same: `dataset`, `settings` (the card's table of the run, each row under the words the card shows), `metrics`,
`evaluation options`, `paper` and `example`. A setting the run did not have is left out of the file, and reads back
as `None`.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["EVALUATION_OPTIONS", "TRAINING_FILE", "DatasetRecord", "RunSettings", "TrainingRecord"]

TRAINING_FILE = "hf_attn_training.json"
# The key under which the record keeps the options `hf-attn evaluate` takes from the run when it is not given them.
EVALUATION_OPTIONS = "evaluation options"


@dataclass(frozen=True)
class DatasetRecord:
    """The data a run trained on: its type and name (the card's model-index) and a description."""

    type: str
    name: str
    description: str


def _shown(words: str) -> dict[str, str]:
    """A setting's metadata: the words the card's table (and the file) names it by."""
    return {"shown": words}


@dataclass(frozen=True)
class RunSettings:
    """The settings of a run, as the card's table shows them; `None`: the run had no such setting."""

    training_examples: int | str | None = field(default=None, metadata=_shown("training examples"))
    held_out_examples: int | str | None = field(default=None, metadata=_shown("held-out examples"))
    dropped_rows: dict[str, dict[str, int]] | None = field(default=None, metadata=_shown("dropped rows"))
    seed: int | None = field(default=None, metadata=_shown("seed"))
    steps: int | None = field(default=None, metadata=_shown("steps"))
    batch_size_per_process: int | None = field(default=None, metadata=_shown("batch size per process"))
    gradient_accumulation_steps: int | None = field(default=None, metadata=_shown("gradient accumulation steps"))
    processes: int | None = field(default=None, metadata=_shown("processes"))
    learning_rate: float | None = field(default=None, metadata=_shown("learning rate"))
    schedule: str | None = field(default=None, metadata=_shown("schedule"))
    optimizer: str | None = field(default=None, metadata=_shown("optimizer"))
    precision: str | None = field(default=None, metadata=_shown("precision"))
    vocabulary: str | None = field(default=None, metadata=_shown("vocabulary"))
    word_vectors: str | None = field(default=None, metadata=_shown("word vectors"))
    task_options: dict[str, Any] | None = field(default=None, metadata=_shown("task options"))
    config_overrides: dict[str, Any] | None = field(default=None, metadata=_shown("config overrides"))
    max_length: int | None = field(default=None, metadata=_shown("max length"))
    recipe: str | None = field(default=None, metadata=_shown("recipe"))
    # Rows of a saved table that this version has no field for (a later version's), kept and shown as they are.
    others: dict[str, Any] = field(default_factory=dict)
    # The settings the run had, by the words the card shows (an empty dict or list is no setting): set when built.
    shown: dict[str, Any] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        named = [item for item in dataclasses.fields(self) if "shown" in item.metadata]
        pairs = [(item.metadata["shown"], getattr(self, item.name)) for item in named]
        shown = {words: value for words, value in [*pairs, *self.others.items()] if value not in (None, {}, [])}
        object.__setattr__(self, "shown", shown)

    @classmethod
    def from_shown(cls, shown: dict[str, Any]) -> RunSettings:
        """The settings of a saved record's table, each row into its field (a row without one into `others`)."""
        names = {item.metadata["shown"]: item.name for item in dataclasses.fields(cls) if "shown" in item.metadata}
        known = {names[words]: value for words, value in shown.items() if words in names}
        return cls(**known, others={words: value for words, value in shown.items() if words not in names})


@dataclass(frozen=True)
class TrainingRecord:
    """What a training run records (module docstring).

    Attributes:
        dataset: the data it trained on.
        settings: the run's settings (`RunSettings`).
        metrics: the held-out metrics the card shows, by name.
        evaluation_options: what `hf-attn evaluate` takes from the run unless given, by option name (`max_length`,
            the columns its tokenizer reads: STCKA's `concept_column`).
        paper: the recipe's paper and its number (`hf_attn.recipes.Recipe.paper`), for a run from a recipe.
        example: a held-out example whose attention the card draws (`{"text", "pair"?, "support"?, ...}`).
    """

    dataset: DatasetRecord
    settings: RunSettings
    metrics: dict[str, float]
    evaluation_options: dict[str, Any] = field(default_factory=dict)
    paper: dict[str, Any] | None = None
    example: dict[str, Any] | None = None

    @classmethod
    def of_run(
        cls,
        source: dict[str, str],
        settings: RunSettings,
        metrics: dict[str, float],
        evaluation_options: dict[str, Any],
        paper: dict[str, Any] | None,
        example: dict[str, Any] | None,
    ) -> TrainingRecord:
        """A run's record, its dataset read from the data's `source` (`TaskData.source`: `type`, `name`, and a
        `description`, else its columns and held-out split said)."""
        description = (
            source.get("description") or f"columns {source.get('columns')}; held-out: {source.get('held_out')}"
        )
        dataset = DatasetRecord(source["type"], source["name"], description)
        return cls(dataset, settings, metrics, evaluation_options, paper, example)

    def as_json(self) -> dict[str, Any]:
        """The file's layout (module docstring)."""
        record: dict[str, Any] = {
            "dataset": dataclasses.asdict(self.dataset),
            "settings": self.settings.shown,
            "metrics": self.metrics,
        }
        if self.evaluation_options:
            record[EVALUATION_OPTIONS] = self.evaluation_options
        if self.paper is not None:
            record["paper"] = self.paper
        if self.example is not None:
            record["example"] = self.example
        return record

    @classmethod
    def from_json(cls, record: dict[str, Any]) -> TrainingRecord:
        """A record from the file's layout (a folder saved before this module's time included)."""
        return cls(
            dataset=DatasetRecord(**record["dataset"]),
            settings=RunSettings.from_shown(record.get("settings", {})),
            metrics=dict(record.get("metrics", {})),
            evaluation_options=dict(record.get(EVALUATION_OPTIONS, {})),
            paper=record.get("paper"),
            example=record.get("example"),
        )

    def save(self, folder: str | Path) -> Path:
        """Writes the record into `folder`; returns its path."""
        path = Path(folder) / TRAINING_FILE
        path.write_text(json.dumps(self.as_json(), indent=2, default=str), encoding="utf-8")
        return path

    @classmethod
    def read(cls, folder: str | Path) -> TrainingRecord | None:
        """The record saved in `folder`, or `None` where it has none (a converted model, or one saved by hand)."""
        path = Path(folder) / TRAINING_FILE
        return cls.from_json(json.loads(path.read_text(encoding="utf-8"))) if path.is_file() else None
