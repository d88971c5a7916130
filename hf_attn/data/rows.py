"""Rows made canonical: the one module that puts a split in the form of a task shape, for a split read whole
(`canonical_rows`) and for a stream (`hf_attn.data.streaming`, with the same `RowRules`).

`canonical_rows` checks the columns, makes them canonical (`text`, `pair`, `label`; see `hf_attn.tasks`) and
returns the run's `TaskData`, built for both paths by one function (`CanonicalRows.task_data`): class names
from a `ClassLabel` feature or collected from the training split, label sets from a list column or a separator, tags
per word. Rows it cannot use (an empty text, no label: SNLI's -1 or "-") are dropped and counted, never silently; a
held-out label that training never saw is an error. Nested columns are named with dots (`translation.de`, the WMT
datasets' layout).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from datasets import ClassLabel, Dataset, Features, IterableDataset, Value
from datasets import Sequence as SequenceFeature

from .cache import cached_filter, cached_map, cached_split, column_values, sample_rows
from .request import MIN_EVAL_SAMPLES, DataRequest
from .task_data import LabelFormat, TaskData, TaskLayout

# Label values that mean "no label" (SNLI: -1 in the Hub dataset, "-" as gold_label in the original jsonl).
NO_LABEL = (None, -1, "-", "")


def _column(split: Dataset, name: str | None, option: str, split_name: str) -> Dataset:
    """`split`, flattened when `name` is a nested column (`translation.de`); an error naming `option` if missing."""
    if name is None or name in split.column_names:
        return split
    if "." in name:
        flat = split.flatten()
        if name in flat.column_names:
            return flat
    raise ValueError(f"{option} {name!r} is not a column of the {split_name} split (columns: {split.column_names}).")


def is_empty(text: Any) -> bool:
    """Whether a text (or a label cell, a label set, a row of tags) holds nothing: `None`, blank, only blanks."""
    if isinstance(text, list | tuple):
        return not any(str(word).strip() for word in text)
    return text is None or not str(text).strip()


def _as_text(text: Any) -> str:
    """A text, or a list of words joined by spaces (token-classification datasets store words)."""
    return " ".join(map(str, text)) if isinstance(text, list | tuple) else str(text)


def _feature_names(train: Dataset, column: str) -> list[str] | None:
    """The names of a `ClassLabel` column (or of a list of `ClassLabel`s), whose values are ids into them."""
    feature = train.features[column]
    inner = feature.feature if isinstance(feature, SequenceFeature) else feature
    if isinstance(inner, list):  # datasets' `List` feature of a list column
        inner = inner[0]
    inner = getattr(inner, "feature", inner)
    return list(inner.names) if isinstance(inner, ClassLabel) else None


def _collect_names(train: Dataset, column: str, multi: bool, separator: str | None) -> list[str]:
    """The label names of the training split, each as written (a `3` and a `neutral` are two classes, whatever
    the type the reader gave the column): integers in numeric order, else names in alphabetical order (read a batch
    at a time: `column_values`, which decodes a column of mixed types)."""
    names = set()
    for value in column_values(train, column):
        for item in _label_items(value, multi, separator, column):
            if item not in NO_LABEL and str(item).strip():  # a blank cell is no label (`RowRules.why_dropped`)
                names.add(str(item))
    if all(_is_integer(name) for name in names):
        return sorted(names, key=lambda name: (int(name), name))
    return sorted(names)


def _is_integer(name: str) -> bool:
    try:
        int(name)
    except ValueError:
        return False
    return True


def _label_items(value: Any, multi: bool, separator: str | None, column: str) -> list[Any]:
    if not multi:
        return [value]
    if isinstance(value, list | tuple):
        return list(value)
    if value is None:
        return []
    if separator is None:
        raise ValueError(
            f"--label-column {column!r} holds strings, not lists: give --label-separator (e.g. ' ' or ',') to split "
            "them into labels."
        )
    return [item.strip() for item in str(value).split(separator) if item.strip()]


DROP_COLUMN = "_hf_attn_dropped"  # why a row is dropped (`None`: kept), between the rewriting map and its filter
UNSEEN_COLUMN = "_hf_attn_unseen"  # per row of a label-set task, how many of its labels are left out


@dataclass(frozen=True)
class RowRules:
    """What the rows of one task must hold, and how a batch of them becomes canonical (`text`, `pair`, `label` and
    the kept columns): one object for a split read whole (`canonical_rows`) and for a stream
    (`hf_attn.data.streaming`), so both keep and refuse the same rows.

    Attributes:
        layout: the task shape's rows (`TaskLayout`).
        text_column / pair_column / label_column: the user's columns (`label_column` is `None` without labels).
        label_separator: splits a string column into a label set.
        names: the label names, index = id (`None` without labels).
        feature_names: the names of a `ClassLabel` column whose values are ids into them, else `None`.
        keep_columns: further columns kept as they are.
        seen: where the names come from, in messages ("the training split", "the model's labels").
        split_names: what messages call the two splits, by "train" and "held-out".
        drop_unknown: a row whose class is not among `names` is dropped ("unknown label") instead of refused: a
            stream's labels come from its first rows, and a later one may bring a new class.
    """

    layout: TaskLayout
    text_column: str
    pair_column: str | None
    label_column: str | None
    label_separator: str | None
    names: list[str] | None
    feature_names: list[str] | None
    keep_columns: tuple[str, ...] = ()
    seen: str = "the training split"
    split_names: tuple[tuple[str, str], ...] = (("train", "train"), ("held-out", "held-out"))
    drop_unknown: bool = False

    @functools.cached_property
    def index(self) -> dict[str, int]:
        return {name: position for position, name in enumerate(self.names or [])}

    @property
    def multi(self) -> bool:
        return self.layout.label_sets

    @property
    def tags(self) -> bool:
        return self.layout.label_format is LabelFormat.TAGS

    @property
    def classes(self) -> bool:
        return self.layout.label_format is LabelFormat.CLASS

    @property
    def ids(self) -> bool:
        return self.feature_names is not None

    def named(self, split: str) -> str:
        return dict(self.split_names)[split]

    def label_names_of(self, value: Any) -> list[str]:
        """The label names a label value holds (one class, a set, a tag per word), ids of a `ClassLabel` resolved."""
        items = _label_items(value, self.multi or self.tags, self.label_separator, self.label_column)
        return [self.feature_names[int(item)] if self.ids else str(item) for item in items]

    def unknown_of(self, value: Any) -> list[str]:
        """The names of `value` that are not among `names`, sorted."""
        return sorted({item for item in self.label_names_of(value) if item not in self.index})

    def encode_label(self, value: Any, split: str) -> Any:
        """A kept row's label as the canonical form has it: a class id, tag ids, or the known names of a set (a
        held-out label set may name labels that training never has, the long tail of an extreme task: no model can
        predict them; they are left out, and counted). A class that is not among `names` is refused, naming it."""
        if self.classes and not self.ids:  # a class by name (or number), the common case: one look-up
            found = self.index.get(str(value))
            if found is not None:
                return found
        items = self.label_names_of(value)
        if self.multi:
            return [item for item in items if item in self.index]
        unknown = sorted({item for item in items if item not in self.index})
        if unknown:
            names = self.names or []
            raise ValueError(
                f"label {unknown[0]!r} of the {self.named(split)} split never occurs in {self.seen} "
                f"(--label-column {self.label_column!r}; known labels: {', '.join(names[:20])}"
                f"{', ...' if len(names) > 20 else ''})."
            )
        return [self.index[item] for item in items] if self.tags else self.index[items[0]]

    def why_dropped(self, text: Any, pair: Any, value: Any) -> str | None:
        """Why a row is dropped ("empty text", "no label", ...), or `None` to keep it."""
        if is_empty(text):
            return "empty text"
        if self.pair_column is not None and is_empty(pair):
            return f"empty {self.layout.pair_is}"
        if self.label_column is not None:
            classes = self.classes
            blank = is_empty(value) if isinstance(value, str | list | tuple) else False  # an empty cell, set or tags
            if value is None or blank or (classes and value in NO_LABEL) or (classes and self.ids and int(value) < 0):
                return "no label"
            if self.tags and len(_label_items(value, True, self.label_separator, self.label_column)) != len(
                _as_text(text).split()
            ):
                return "tag count differs from word count"
            if self.drop_unknown and not self.multi and self.unknown_of(value):
                return "unknown label"
        return None

    def canonical(self, batch: dict[str, list], split: str = "train") -> dict[str, list]:
        """A batch in canonical form, row for row, with `DROP_COLUMN` saying which rows to drop and why (their label
        is a placeholder) and, for label sets, `UNSEEN_COLUMN`: the labels each row leaves out."""
        texts = batch[self.text_column]
        pairs = batch[self.pair_column] if self.pair_column is not None else [None] * len(texts)
        values = batch[self.label_column] if self.label_column is not None else [None] * len(texts)
        reasons = [self.why_dropped(*row) for row in zip(texts, pairs, values, strict=True)]
        rows: dict[str, list] = {"text": [_as_text(text) for text in texts]}
        if self.pair_column is not None:
            rows["pair"] = [_as_text(text) for text in pairs]
        if self.label_column is not None:
            empty = [] if self.multi or self.tags else -1  # a dropped row's label, of the column's type
            judged = list(zip(values, reasons, strict=True))
            rows["label"] = [empty if reason else self.encode_label(value, split) for value, reason in judged]
            if self.multi:
                rows[UNSEEN_COLUMN] = [0 if reason else len(self.unknown_of(value)) for value, reason in judged]
        rows.update({name: batch[name] for name in self.keep_columns})
        rows[DROP_COLUMN] = reasons
        return rows

    def features(self, split: Any) -> Features | None:
        """The canonical columns' types, declared rather than inferred: `datasets` would type a column from its
        first write batch, and a column whose first 1,000 values are `None` (the reason of `DROP_COLUMN` where the
        first bad row comes later) has no type to write a later value with. `None` for a stream whose columns'
        types are not known ahead (it writes nothing)."""
        if split.features is None:
            return None
        columns: dict[str, Any] = {"text": Value("string")}
        if self.pair_column is not None:
            columns["pair"] = Value("string")
        if self.label_column is not None:
            if self.multi:
                columns["label"] = SequenceFeature(Value("string"))
                columns[UNSEEN_COLUMN] = Value("int64")
            else:
                columns["label"] = SequenceFeature(Value("int64")) if self.tags else Value("int64")
        columns.update({name: split.features[name] for name in self.keep_columns})
        columns[DROP_COLUMN] = Value("string")
        return Features(columns)

    def step(self, split_name: str) -> tuple:
        """What making split `split_name` canonical by these rules does, for its cache key
        (`hf_attn.data.cache.step_fingerprint`)."""
        return ("canonical", dataclasses.asdict(self) | {"layout": self.layout.name}, split_name)


@dataclass(frozen=True)
class CanonicalRows:
    """A task's two splits in canonical form (`canonical_rows`, or a stream's: `hf_attn.data.streaming.stream_rows`),
    with what was found on the way; `task_data` makes the run's `TaskData` of them, the one place it is built for
    both.

    Attributes:
        train / eval: the canonical splits (streams, for a stream).
        rules: the rules that made them (`RowRules`: the layout, the label names).
        request: what was asked (`DataRequest`: the user's columns, the tokenizer's).
        source: what the card says of the data (`{"type", "name", "held_out"}`).
        dropped: per split, the rows left out and why.
        notes: status lines, printed once the data has passed every check.
        cached: every split's rows came from the `datasets` cache.
        vocabulary_rows: the rows a vocabulary is trained on when not the training split (a stream's first rows).
    """

    train: Any
    eval: Any
    rules: RowRules
    request: DataRequest
    source: dict[str, str]
    dropped: dict[str, dict[str, int]] = dataclasses.field(default_factory=dict)
    notes: tuple[str, ...] = ()
    cached: bool = False
    vocabulary_rows: Any = None

    def task_data(self, shape: str | None = None, notes: Sequence[str] = ()) -> TaskData:
        """The `TaskData` of these rows, complete. `shape`: the task shape trained (default: the layout's; a
        folder's variant of it, `hf_attn.tasks.heads.shape_for_head`). The held-out rows are those a training run
        scores (`rows_to_score`, the one rule; every one for `hf-attn evaluate`), with the status line that says so
        after the rows' own. `notes`: status lines said before the rows' own (what reading the files said)."""
        scored, scored_note = rows_to_score(self.train, self.eval, self.request)
        columns, label = self.request.columns, self.rules.label_column
        return TaskData(
            train=self.train,
            eval=scored,
            shape=shape or self.rules.layout.name,
            text_column="text",
            pair_column="pair" if columns.pair is not None else None,
            label_column="label" if label is not None else None,
            labels=self.rules.names,
            source={**self.source, "columns": ", ".join(filter(None, (columns.text, columns.pair, label)))},
            dropped=self.dropped,
            tokenizer_columns={keyword: column for _, keyword, column in columns.tokenizer},
            notes=(*notes, *self.notes, *([scored_note] if scored_note else [])),
            from_cache=["prepared rows"] if self.cached else [],
            vocabulary_rows=self.vocabulary_rows,
        )


@dataclass(frozen=True)
class HeldOutRows:
    """The training rows left, the rows `hold_out` held out of them, what the card calls them, and the status line
    that says so."""

    train: Dataset
    held_out: Dataset
    described: str
    note: str


def hold_out(train: Dataset, request: DataRequest) -> HeldOutRows:
    """The one rule for data without a held-out split: `request.held_out.fraction` of the training rows, drawn with
    its seed (`cached_split`, the same rows run after run), refused where no fraction or too few rows are left to
    hold out. Training holds them out of the usable rows, once the unusable are dropped (`canonical_rows`), so that a
    file's bad rows change nothing but their own absence."""
    policy = request.held_out
    if not 0 < policy.fraction < 1 or len(train) < 2:
        raise ValueError(f"--dataset {request.dataset} has no held-out split: give --eval-split or --eval-dataset.")
    kept, held = cached_split(train, policy.fraction, policy.seed)
    described = f"{policy.fraction:.0%} of {request.train_split} (seed {policy.seed})"
    note = f"[hf-attn] no held-out split in {request.dataset}: holding out {len(held)} training rows"
    return HeldOutRows(kept, held, described, note)


def rows_to_score(
    train: Dataset | IterableDataset, held_out: Dataset | IterableDataset, request: DataRequest
) -> tuple[Dataset | IterableDataset, str | None]:
    """The held-out rows a training run scores (`HeldOut.scoring`; all of them where it has none), and the status
    line that says so (`None`: all of them): a seeded sample of the held-out split when it is larger than
    `--max_eval_samples`, or, by default, than the rows the run trains on (at least `MIN_EVAL_SAMPLES`); of a
    stream's, its first rows (`hf_attn.data.streaming.stream_rows` held out no more when it chose them)."""
    policy, scoring = request.held_out, request.held_out.scoring
    if scoring is None:
        return held_out, None
    if not hasattr(train, "__len__"):
        limit = policy.stream_rows
        return held_out.take(limit), f"[hf-attn] held-out: scoring the first {limit} rows of the held-out stream"
    if scoring.rows is not None:
        limit, why = scoring.rows, "--max_eval_samples"
    else:
        trained = scoring.steps * scoring.batch if scoring.steps else math.ceil(scoring.epochs * len(train))
        limit = max(MIN_EVAL_SAMPLES, trained)
        why = f"about as many as the run trains on ({trained}); --max_eval_samples N chooses"
    if len(held_out) <= limit:
        return held_out, None
    note = f"[hf-attn] held-out: scoring {limit} of {len(held_out)} rows, a sample (seed {policy.seed}): {why}"
    return sample_rows(held_out, limit, policy.seed), note


def canonical_rows(
    train: Dataset,
    held_out: Dataset | None,
    layout: TaskLayout,
    request: DataRequest,
    source: dict[str, str],
    shape: str | None = None,
    notes: Sequence[str] = (),
) -> TaskData:
    """Checks the columns, drops (and counts) unusable rows, encodes labels: the run's `TaskData` of the two splits
    in canonical form (`CanonicalRows.task_data`). `layout`: the task shape's rows (a model folder's shape:
    `TaskShape.layout`). `request`: the columns, the label names to encode with (`labels`: a trained model's
    `id2label`, instead of the training split's), what messages call the splits, the rewriting `map`'s workers and
    `fresh` (`--overwrite_cache`), the held-out rows a training run scores. `source`: what the card says of the data.
    `shape`: the task shape trained, where not the layout's; `notes`: what reading the files said.

    `held_out` `None`: rows are held out of the usable training rows (`hold_out`, the one rule), so that a file's bad
    rows change nothing but their own absence: its held-out rows are those of the same file without them.

    One rewriting pass over each split, a batch at a time (`RowRules.canonical`), under a fingerprint of the split
    and the rules, so that a second run over the same file finds it in the `datasets` cache; the rows it marks are
    then counted and filtered out. Held-out rows that are the training rows (`hf-attn evaluate` scores one file) are
    prepared, and reported, once."""
    carve = held_out is None
    held_out = train if carve else held_out
    one_split = held_out is train
    rules, splits = row_rules(train, held_out, layout, request)
    prepared: dict[str, Dataset] = {}
    dropped: dict[str, dict[str, int]] = {}
    cached = True
    for split_name, split in splits.items():
        if one_split and split_name == "held-out":  # the same rows: the same result and counts, said once
            prepared[split_name] = prepared["train"]
            if "train" in dropped and not carve:
                dropped[split_name] = dict(dropped["train"])
            continue
        prepared[split_name], reused, lost = _prepared_split(split, split_name, rules, request.fresh, request.workers)
        cached &= reused
        if lost:
            dropped[split_name] = lost
    said: tuple[str, ...] = ()
    if carve:  # held out from the usable rows: the same rows as for the file without its bad ones
        held = hold_out(prepared["train"], request)
        prepared["train"], prepared["held-out"] = held.train, held.held_out
        source, said = {**source, "held_out": held.described}, (held.note,)
    rows = CanonicalRows(prepared["train"], prepared["held-out"], rules, request, source, dropped, said, cached)
    return rows.task_data(shape, notes)


def _prepared_split(
    split: Dataset, split_name: str, rules: RowRules, fresh: bool, workers: int | None
) -> tuple[Dataset, bool, dict[str, int]]:
    """One split made canonical by `rules` (one cached rewriting `map`, its dropped rows counted, said and filtered
    out), whether the cache answered, and the rows it left out and why."""
    canonical = functools.partial(rules.canonical, split=split_name)
    description = f"Preparing the {rules.named(split_name)} split"
    step, features = rules.step(split_name), rules.features(split)
    rows, reused = cached_map(
        split, canonical, step, description, workers, fresh, remove_columns=split.column_names, features=features
    )
    dropped: dict[str, int] = {}
    counts = Counter(reason for reason in column_values(rows, DROP_COLUMN) if reason is not None)
    if counts:
        dropped = dict(counts)
        tell_dropped(f"{rules.named(split_name)} split", counts, len(split))
        keep = lambda reasons: [reason is None for reason in reasons]  # noqa: E731
        rows = cached_filter(rows, keep, ("kept",), fresh, input_columns=DROP_COLUMN, batched=True)
    if rules.multi:
        unseen = sum(column_values(rows, UNSEEN_COLUMN))
        if unseen:
            dropped[f"labels not in {rules.seen}"] = unseen
            print(f"[hf-attn] {rules.named(split_name)} split: left out {unseen} labels that are not in {rules.seen}")
    rows = rows.remove_columns([name for name in (DROP_COLUMN, UNSEEN_COLUMN) if name in rows.column_names])
    return typed_labels(rows, rules), reused, dropped


def tell_dropped(
    where: str, counts: dict[str, int], total: int, rows: str = "rows", file: TextIO | None = None
) -> None:
    """Says, once per split and in the same words for every command (`train`, `evaluate`, `predict`), how many of its
    `total` rows are left out and why (`RowRules.why_dropped`'s reasons): `[hf-attn] <where>: dropped n of N rows
    (empty text: n)`, on `file` (standard output; `predict`'s standard error, beside its results). `where` names
    the split ("train split"); one with no row left is refused."""
    if not counts:
        return
    detail = ", ".join(f"{reason}: {count}" for reason, count in sorted(counts.items()))
    line = f"[hf-attn] {where}: dropped {sum(counts.values())} of {total} {rows} ({detail})"
    print(line, file=file or sys.stdout, flush=True)
    if sum(counts.values()) >= total:
        raise ValueError(f"The {where} has no usable row ({', '.join(sorted(counts))}).")


def row_rules(
    train: Any, held_out: Any, layout: TaskLayout, request: DataRequest, drop_unknown: bool = False
) -> tuple[RowRules, dict[str, Any]]:
    """The `RowRules` of a task on `train` (a split, or a stream's first rows) and the two splits with their columns
    checked (a nested column flattened): a missing column, or a task without the columns it needs, is refused
    naming the option. `drop_unknown`: `RowRules.drop_unknown` (a stream's)."""
    columns = request.columns
    named = dict(zip(("train", "held-out"), request.split_names, strict=True))
    needs_label = layout.has_labels
    label_column = columns.label if needs_label else None
    if needs_label and label_column is None:
        raise ValueError(f"A {layout.name} task needs --label-column.")
    if "pair_column" in layout.needs and columns.pair is None:
        raise ValueError(f"A {layout.name} task needs {layout.pair_option}.")
    splits = {"train": train, "held-out": held_out}
    for split_name in splits:
        for option, name in (
            ("--text-column", columns.text),
            (layout.pair_option, columns.pair),
            ("--label-column", label_column),
        ):
            splits[split_name] = _column(splits[split_name], name, option, named[split_name])
    names = list(request.labels) if request.labels is not None else None
    feature_names = _feature_names(splits["train"], label_column) if needs_label else None
    if needs_label and names is None:
        tagged = layout.label_sets or layout.label_format is LabelFormat.TAGS
        names = feature_names or _collect_names(splits["train"], label_column, tagged, columns.label_separator)
        if not names:
            raise ValueError(f"--label-column {label_column!r} of the train split holds no label.")
        if layout.label_format is LabelFormat.CLASS and not layout.label_sets:
            _refuse_a_class_per_row(splits["train"], label_column, columns.text, len(names))
    rules = RowRules(
        layout=layout,
        text_column=columns.text,
        pair_column=columns.pair,
        label_column=label_column,
        label_separator=columns.label_separator,
        names=names,
        feature_names=feature_names,
        keep_columns=columns.keep,
        seen="the training split" if request.labels is None else "the model's labels",
        split_names=tuple(named.items()),
        drop_unknown=drop_unknown,
    )
    return rules, splits


# A label column with a class for (nearly) every row is no classification: a text column read as the labels. Refused
# from this many training rows on (fewer could be a genuine tiny task) when the classes number this share of them.
CLASS_PER_ROW_ROWS, CLASS_PER_ROW_SHARE = 10, 0.9


def _refuse_a_class_per_row(train: Any, label_column: str, text_column: str, classes: int) -> None:
    """Refuses a label column with about a class per training row, naming the likely mistake: the text and label
    columns swapped (the text column has few values), or another column that holds the labels."""
    rows = len(train)
    if rows < CLASS_PER_ROW_ROWS or classes < CLASS_PER_ROW_SHARE * rows:
        return
    flat = [
        name
        for name in train.column_names
        if name != label_column and not isinstance(train.features.get(name), SequenceFeature | list)
    ]
    distinct = {name: len(set(map(str, column_values(train, name)))) for name in flat}
    few = {name: count for name, count in distinct.items() if count <= rows // 2}
    if text_column in few:
        hint = (
            f"--text_column {text_column!r} has only {few[text_column]} different values: are the two swapped? "
            f"(--text_column {label_column} --label_column {text_column})"
        )
    elif few:
        name = min(few, key=few.get)
        hint = f"the column {name!r} has {few[name]} different values: is it the labels? (--label_column {name})"
    else:
        hint = "name the column of the labels with --label_column"
    raise ValueError(
        f"--label_column {label_column!r} has {classes} different values in {rows} training rows, about a class per "
        f"row, which no classifier learns; {hint}."
    )


def typed_labels(rows: Any, rules: RowRules) -> Any:
    """`rows` with class and tag ids typed as integers: `map` keeps an output column's input type when the names
    agree, so string labels would come back as the strings "0", "1", ... of the class ids, which no collator
    batches."""
    if rules.label_column is None or not (rules.classes or rules.tags):
        return rows
    label_type = SequenceFeature(Value("int64")) if rules.tags else Value("int64")
    features = rows.features
    if features is not None and features["label"] != label_type:
        return rows.cast_column("label", label_type)
    return rows
