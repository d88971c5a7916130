"""Data larger than memory or disk: a Hub dataset or local files read as a stream (`hf-attn train --streaming`).

`hf_attn.data.files.load_splits` opens (a `DataRequest` with `streaming`) the training and held-out splits as
`datasets.IterableDataset`s: nothing is downloaded or converted ahead, rows are read as training asks for them.
`stream_rows` puts them in the canonical form of a
task shape with the same rules as a split read whole (`hf_attn.data.rows.RowRules`), lazily:

- what needs the whole split ahead comes from its first rows instead: the label names (unless a `ClassLabel`
  feature names them) and the vocabulary are read from the first `sample_rows` training rows
  (`--tokenizer_sample_rows`), and what they drop is counted and said;
- rows are dropped as they come, for the same reasons, and also a row whose class the first rows never had
  ("unknown label": it cannot be a class of the model);
- without a held-out split or file, the first `eval_rows` training rows are held out (kept in memory), and training
  reads every row but those;
- under `accelerate launch`, each process reads its own part of the training stream
  (`datasets.distributed.split_dataset_by_node`: whole files when their number divides by the processes, else every
  n-th row); the trainer then loads it as it is (`hf_attn.tasks.base.StreamShardTrainerMixin`).

A stream has no length: the run needs `--max_steps`, and the task shapes that need a whole split ahead (label
frequencies, a label tree, episodes) refuse it (`TaskShape.streams`).
"""

from __future__ import annotations

import functools
import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

from datasets import Dataset, IterableDataset
from datasets.distributed import split_dataset_by_node

from .request import DataRequest
from .rows import DROP_COLUMN, UNSEEN_COLUMN, CanonicalRows, RowRules, row_rules, typed_labels
from .task_data import TaskData, TaskLayout


def _row_key(row: dict[str, Any]) -> str:
    """A row's values as one string: equal rows, equal keys (a held-out row is known again in the stream)."""
    return json.dumps(row, sort_keys=True, default=str)


def _first_rows(stream: IterableDataset, count: int, what: str) -> Dataset:
    """The first `count` rows of `stream` as a `Dataset` held in memory (typed by the stream's features, where the
    stream knows them); a stream without a row is refused, naming `what` it is."""
    rows = list(stream.take(count))
    if not rows:
        raise ValueError(f"{what} is empty: the stream holds no row.")
    return Dataset.from_list(rows, features=stream.features)


def stream_rows(
    train: IterableDataset,
    held_out: IterableDataset | None,
    layout: TaskLayout,
    request: DataRequest,
    source: dict[str, str],
    process: tuple[int, int] = (0, 1),
    shape: str | None = None,
    notes: Sequence[str] = (),
) -> TaskData:
    """Canonical rows over streams (module docstring): `train` and `eval` are `IterableDataset`s made canonical as
    they are read, `vocabulary_rows` the canonical first `request.sample_rows` training rows, in the run's
    `TaskData`, built as of a split read whole (`CanonicalRows.task_data`; `shape`, `notes`: as
    `hf_attn.data.rows.canonical_rows` takes them). `process`: (rank, number of processes) of a distributed run,
    whose training stream is split between them."""
    said = []
    columns = request.columns
    if any(name is not None and "." in name for name in (columns.text, columns.pair, columns.label)):
        train = train.flatten()  # a nested column (`translation.de`) is named with dots
        held_out = held_out.flatten() if held_out is not None else None
    if held_out is None:
        # The first rows, held in memory, and training on every row but those. Not `skip(eval_rows)`: a stream split
        # between processes splits the skip too, and each process would train on some held-out rows.
        first = list(train.take(request.held_out.stream_rows))
        held = {_row_key(row) for row in first}
        held_out = Dataset.from_list(first, features=train.features)
        train = train.filter(lambda row: _row_key(row) not in held)
        said.append(f"[hf-attn] streaming: no held-out split; holding out the first {len(first)} training rows")
        source = {**source, "held_out": f"the first {len(first)} rows of the training stream"}
    sample = _first_rows(train, request.sample_rows, "The training split")
    first_held_out = _first_rows(held_out, 1, "The held-out split")
    rules, _ = row_rules(sample, first_held_out, layout, request, drop_unknown=True)
    columns = sample.column_names
    marked = _marked(sample, rules, "train", columns)
    counts = Counter(reason for reason in marked[DROP_COLUMN] if reason)
    dropped = f"; they drop {sum(counts.values())} ({', '.join(f'{r}: {n}' for r, n in counts.items())})"
    said.append(
        f"[hf-attn] streaming: vocabulary{' and labels' if rules.names else ''} from the first {len(sample)} training "
        f"rows (--tokenizer_sample_rows){dropped if counts else ''}; later rows that cannot be used are skipped as "
        "they come"
    )
    rank, processes = process
    if processes > 1:
        train = split_dataset_by_node(train, rank=rank, world_size=processes)
    rows = CanonicalRows(
        train=_canonical(train, rules, "train", columns),
        eval=_canonical(held_out, rules, "held-out", columns),
        rules=rules,
        request=request,
        source=source,
        notes=tuple(said),
        vocabulary_rows=_kept(marked, rules),
    )
    return rows.task_data(shape, notes)


def _marked(rows: Any, rules: RowRules, split: str, columns: list[str]) -> Any:
    """`rows` (a stream, or a split held in memory) in canonical form by `rules`, the rows to drop marked."""
    canonical = functools.partial(rules.canonical, split=split)
    return rows.map(canonical, batched=True, remove_columns=columns, features=rules.features(rows))


def _kept(marked: Any, rules: RowRules) -> Any:
    """The rows `_marked` keeps, without its marks."""
    kept = marked.filter(lambda reason: reason is None, input_columns=DROP_COLUMN)
    return typed_labels(kept.remove_columns([DROP_COLUMN, *([UNSEEN_COLUMN] if rules.multi else [])]), rules)


def _canonical(rows: Any, rules: RowRules, split: str, columns: list[str]) -> Any:
    """`rows` made canonical by `rules`, its dropped rows filtered out as they come."""
    return _kept(_marked(rows, rules, split, columns), rules)
