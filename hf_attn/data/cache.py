"""A split read at the libraries' speed, and read once: Arrow batches instead of rows, and work found again in the
`datasets` cache on a second run.

- **Batches, never rows.** Indexing a `datasets.Dataset` by row (or iterating one of its columns) decodes each row
  in Python: about 90 µs a row, 90 s for a million. `arrow_batches` reads the columns a step needs as Arrow record
  batches (a few ms for 10,000 rows), and `column_values` hands their Python values on one batch at a time, so no
  step holds a whole split as Python objects.
- **Work done once.** `cached_map` is `Dataset.map(batched=True)` under a fingerprint of our own (`fingerprint`:
  the input split's fingerprint and what the step does), so the `datasets` cache finds the result of a second run
  over the same file with the same options even when the mapped function captures objects `datasets` cannot hash
  the same way twice (a tokenizer, a config). It says whether it computed or found its result. `keep_tokenizer`
  keeps a trained vocabulary beside the split's cache files, under the fingerprint of the split and the trainer's
  options, where `saved_tokenizer` finds it again.
- **Workers.** `map_workers` is `--preprocessing_num_workers` (transformers' examples' name): given, it is used;
  unset, a split of `PARALLEL_FROM_ROWS` rows or more is mapped on every core (up to `MAX_WORKERS`), a smaller one
  in this process (starting workers costs more than it saves).
- **A vocabulary apart.** Reading a split memory-maps its Arrow files, and every page read stays resident in the
  reading process for as long as the split is open: a vocabulary trained on a million texts would leave a few
  hundred MB of mapped text in the training process for the whole run. From `APART_FROM_TEXTS` texts on,
  `train_apart` trains it in a process of its own (spawned: no thread pool of the `tokenizers` library is
  inherited), which saves it for this one to load.

A split held in memory (a synthetic task, `Dataset.from_dict`) has no cache file: it is mapped each time, as
`datasets` does, and its tokenizer trained each time.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
from datasets import Dataset
from datasets.fingerprint import Hasher

ROWS_PER_BATCH = 10_000
# Below this many rows a map runs in this process: forking workers and joining their shards costs a second or two.
PARALLEL_FROM_ROWS = 50_000
MAX_WORKERS = 8
# Bumped when a cached step's output changes meaning, so that no run reads a cache an older hf_attn wrote.
CACHE_VERSION = "hf_attn-data-1"
TOKENIZERS_PARALLELISM = "TOKENIZERS_PARALLELISM"


def arrow_batches(split: Dataset, columns: Sequence[str], batch_size: int = ROWS_PER_BATCH) -> Iterator[pa.Table]:
    """`columns` of `split` as Arrow tables of up to `batch_size` rows, in order (an indices mapping, e.g. a held-out
    split carved from the training rows, is followed)."""
    yield from split.select_columns(list(columns)).with_format("arrow").iter(batch_size=batch_size)


def column_batches(split: Dataset, column: str, batch_size: int = ROWS_PER_BATCH) -> Iterator[list[Any]]:
    """The Python values of one column of `split`, as lists decoded a batch at a time (`arrow_batches`)."""
    for batch in arrow_batches(split, [column], batch_size):
        yield batch.column(0).to_pylist()


def column_values(split: Dataset, column: str, batch_size: int = ROWS_PER_BATCH) -> Iterator[Any]:
    """The Python values of one column of `split`, one by one (`column_batches`)."""
    for batch in column_batches(split, column, batch_size):
        yield from batch


def fingerprint(*parts: Any) -> str:
    """A `datasets` fingerprint of `parts` (and of `CACHE_VERSION`): equal parts give the same one in every process."""
    return Hasher.hash((CACHE_VERSION, *parts))


# What a loaded tokenizer's `init_kwargs` hold beside its options: where it was read from and how, not how it encodes.
_LOADING_KWARGS = frozenset(
    {"name_or_path", "is_local", "local_files_only", "auto_map", "vocab_file", "tokenizer_file", "tokenizer_object",
     "added_tokens_decoder", "backend", "_commit_hash"}
)  # fmt: skip


def tokenizer_fingerprint(tokenizer: Any) -> str:
    """What a tokenizer's encodings depend on, the same for a tokenizer just trained and for its saved copy loaded
    again: its class, its `tokenizers` pipeline (vocabulary, normalizer, splitting, special tokens) and its options
    (`init_kwargs`, less where it was loaded from)."""
    options = {
        name: str(getattr(value, "content", value))  # a special token: `AddedToken` once loaded, a string before
        for name, value in sorted(tokenizer.init_kwargs.items())
        if name not in _LOADING_KWARGS
    }
    backend = getattr(tokenizer, "backend_tokenizer", None)
    return fingerprint(type(tokenizer).__qualname__, backend.to_str() if backend is not None else None, options)


def map_workers(rows: int, workers: int | None) -> int | None:
    """The `num_proc` of a map over `rows` rows: `workers` when given (`--preprocessing_num_workers`), else every core
    (at most `MAX_WORKERS`) from `PARALLEL_FROM_ROWS` rows on, else none (this process)."""
    if workers is not None:
        return workers if workers > 1 else None
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return min(cores, MAX_WORKERS) if rows >= PARALLEL_FROM_ROWS and cores > 1 else None


def cached_map(
    split: Dataset,
    function: Callable[[dict[str, list]], dict[str, list]],
    key: str,
    description: str,
    workers: int | None = None,
    **options: Any,
) -> tuple[Dataset, bool]:
    """`split.map(function, batched=True, **options)` under the fingerprint `key`, on `map_workers` processes, with
    a progress bar named `description` (where `datasets` shows bars); returns the mapped split and whether it came
    from the cache (every file it reads was there before the call)."""
    started = time.time()
    parallelism = os.environ.get(TOKENIZERS_PARALLELISM)
    try:
        mapped = split.map(
            function,
            batched=True,
            new_fingerprint=key,
            desc=description,
            num_proc=map_workers(len(split), workers),
            **options,
        )
    finally:
        # `datasets` sets TOKENIZERS_PARALLELISM=false for its workers and then swaps `os.environ` back, which leaves
        # the variable in the process's C environment: every later `tokenizers` call here (a vocabulary trained
        # after the map) would run on one thread, half as fast on two cores. Put the C environment back as it was.
        if parallelism is None:
            os.unsetenv(TOKENIZERS_PARALLELISM)
        else:
            os.putenv(TOKENIZERS_PARALLELISM, parallelism)
    files = [Path(item["filename"]) for item in mapped.cache_files]
    reused = bool(split.cache_files) and bool(files) and all(path.stat().st_mtime < started for path in files)
    return mapped, reused


def cache_folder(split: Dataset) -> Path | None:
    """The folder of `split`'s cache files (where `datasets` keeps what it maps from it), or `None` for a split held
    in memory."""
    files = getattr(split, "cache_files", None)  # a stream (`IterableDataset`) has none
    return Path(files[0]["filename"]).parent if files else None


def saved_tokenizer(split: Dataset, key: str, load: Callable[[Path], Any]) -> Any | None:
    """The tokenizer trained on `split` that `keep_tokenizer` kept beside the split's cache files under `key` (the
    split's fingerprint and the trainer's options), read by `load`; `None` when there is none (a split held in memory
    has none) or it does not load, in which case the damaged folder is removed for the next one to replace."""
    folder = cache_folder(split)
    if folder is None:
        return None
    saved = folder / "hf_attn_tokenizers" / key
    if (saved / "tokenizer_config.json").is_file():
        try:
            return load(saved)
        except (OSError, ValueError):  # damaged: trained again by the caller, and replaced by `keep_tokenizer`
            shutil.rmtree(saved, ignore_errors=True)
    return None


def keep_tokenizer(split: Dataset, key: str, tokenizer: Any) -> None:
    """Keeps `tokenizer`, trained on `split`, beside the split's cache files under `key`, for `saved_tokenizer` to find
    (nothing for a split held in memory). The folder is written aside and renamed into place, so a run killed while
    saving leaves no half-written tokenizer to load."""
    folder = cache_folder(split)
    if folder is None:
        return
    saved = folder / "hf_attn_tokenizers" / key
    saved.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=saved.parent, prefix=".staging-"))
    try:
        tokenizer.save_pretrained(staging)
        with contextlib.suppress(OSError):  # another process saved it first: the same vocabulary, from the same split
            staging.rename(saved)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


# From this many texts on, a vocabulary is trained apart (`train_apart`): below it, starting the process (a second or
# two of imports) costs more than the mapped text weighs.
APART_FROM_TEXTS = 500_000


def train_apart(
    kind: Any, split: Dataset, columns: Sequence[str | None], settings: tuple, load: Callable[[str], Any]
) -> Any:
    """A vocabulary of tokenizer kind `kind` (a `TokenizerKind`) trained on the `columns` of `split` (a split with
    cache files) in a spawned process, with `settings` (vocabulary size, minimum frequency, lower-casing), and the
    tokenizer `load` reads from where that process saved it (module docstring)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    import datasets

    shown = datasets.is_progress_bar_enabled()
    arguments = (kind.trainer.__module__, kind.name, split, list(columns), settings, shown)
    with tempfile.TemporaryDirectory(prefix="hf_attn-vocabulary-") as folder:
        with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
            pool.submit(_train_and_save, *arguments, folder).result()
        return load(folder)


def _train_and_save(
    module: str, kind: str, split: Dataset, columns: list[str | None], settings: tuple, shown: bool, folder: str
) -> None:
    """`train_apart`'s process: imports the module that registers the kind, trains, saves to `folder`."""
    import importlib

    import datasets

    from ..tokenization.kinds import get_tokenizer_kind

    importlib.import_module(module)  # registers the kind, which crossed into this process by its name
    if not shown:
        datasets.disable_progress_bars()
    train_vocabulary(get_tokenizer_kind(kind), split, columns, settings).save_pretrained(folder)


def train_vocabulary(kind: Any, split: Any, columns: Sequence[str | None], settings: tuple, **knowledge: Any) -> Any:
    """A tokenizer of `kind` (`hf_attn.tokenization.kinds`) trained on the texts of `columns` of `split`, read in
    batches (`text_batches`) under a progress bar of the texts (where `datasets` shows bars); `settings`: vocabulary
    size, minimum frequency, lower-casing; `knowledge`: what a kind reads beside the texts (STCKA's concepts)."""
    from datasets.utils import tqdm

    from ..tokenization.kinds import train_tokenizer

    with tqdm(total=len(split) * sum(c is not None for c in columns), desc="Vocabulary", unit=" texts") as bar:

        def counted() -> Iterator[list[str]]:
            for batch in text_batches(split, columns):
                bar.update(len(batch))
                yield batch

        return train_tokenizer(kind, counted(), *settings, **knowledge)


def sample_rows(split: Dataset, count: int, seed: int) -> Dataset:
    """`count` rows of `split` drawn without replacement by `seed`, in their order in the split."""
    import numpy as np

    if count >= len(split):
        return split
    chosen = np.sort(np.random.default_rng(seed).choice(len(split), size=count, replace=False))
    return split.select(chosen)


def text_batches(split: Any, columns: Iterable[str | None], batch_size: int = ROWS_PER_BATCH) -> Iterator[list[str]]:
    """The texts of the given columns of `split` (`None` columns skipped), a column after the other, as lists of up
    to `batch_size`: what a vocabulary is trained on (the `tokenizers` trainers take batches as they come)."""
    for column in columns:
        if column is not None:
            yield from column_batches(split, column, batch_size)
