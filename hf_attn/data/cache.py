"""A split read at the libraries' speed, and read once: Arrow batches instead of rows, and work found again in the
`datasets` cache on a second run.

- **Batches, never rows.** Indexing a `datasets.Dataset` by row (or iterating one of its columns) decodes each row
  in Python: about 90 µs a row, 90 s for a million. `arrow_batches` reads the columns a step needs as Arrow record
  batches (a few ms for 10,000 rows), and `column_values` hands their Python values on one batch at a time, so no
  step holds a whole split as Python objects.
- **Work done once.** `cached_map` is `Dataset.map(batched=True)` under a fingerprint of our own
  (`step_fingerprint`: the input split's fingerprint and what the step does, made by the step itself), so the
  `datasets` cache finds the result of a second run over the same file with the same options even when the mapped
  function captures objects `datasets` cannot hash the same way twice (a tokenizer, a config). It says whether it
  computed or found its result. `keep_tokenizer` keeps a trained vocabulary beside the split's cache files, under the
  fingerprint of the split and the trainer's options, where `saved_tokenizer` finds it again.
- **Nothing broken reused.** Each file a step writes to the cache has its SHA-256 kept beside it (with its size and
  modification time: a file that still has both is not hashed again, `_differs`). A cached file that does not read
  back whole (cut short by a full disk or a copy, emptied) or whose bytes differ from their checksum (garbled) is
  removed before the step would read it, the step computed again, and one line names the file
  (`drop_unreadable`; a kept vocabulary, likewise, in `saved_tokenizer`). The Arrow copy `datasets` builds of a
  dataset's own files is checked the same way before it is loaded, and built again when it fails (`load_built`).
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
import errno
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import datasets.config
import pyarrow as pa
from datasets import Dataset, load_dataset, load_dataset_builder
from datasets.features.features import decode_nested_example, require_decoding
from datasets.fingerprint import Hasher

from ..utils.integrity import sha256_of_file, sha256_of_files
from ..utils.saving import PERMISSION_FAULTS, io_errno, write_fault

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

ROWS_PER_BATCH = 10_000
# Below this many rows a map runs in this process: forking workers and joining their shards costs a second or two.
PARALLEL_FROM_ROWS = 50_000
MAX_WORKERS = 8
# Bumped when a cached step's output changes meaning, so that no run reads a cache an older hf_attn wrote.
CACHE_VERSION = "hf_attn-data-2"  # 2: declared column types, and rows with a blank label dropped
TOKENIZERS_PARALLELISM = "TOKENIZERS_PARALLELISM"


def arrow_batches(split: Dataset, columns: Sequence[str], batch_size: int = ROWS_PER_BATCH) -> Iterator[pa.Table]:
    """`columns` of `split` as Arrow tables of up to `batch_size` rows, in order (an indices mapping, e.g. a held-out
    split carved from the training rows, is followed)."""
    yield from split.select_columns(list(columns)).with_format("arrow").iter(batch_size=batch_size)


def column_batches(split: Dataset, column: str, batch_size: int = ROWS_PER_BATCH) -> Iterator[list[Any]]:
    """The Python values of one column of `split`, as lists decoded a batch at a time (`arrow_batches`): as `map`
    and indexing give them, so a column the reader typed `Json` (JSON lines whose values change type: numbers,
    then a word) reads `0` and `"other"`, not their JSON text."""
    feature = (split.features or {}).get(column)
    decode = feature is not None and require_decoding(feature)
    for batch in arrow_batches(split, [column], batch_size):
        values = batch.column(0).to_pylist()
        yield [decode_nested_example(feature, value) for value in values] if decode else values


def column_values(split: Dataset, column: str, batch_size: int = ROWS_PER_BATCH) -> Iterator[Any]:
    """The Python values of one column of `split`, one by one (`column_batches`)."""
    for batch in column_batches(split, column, batch_size):
        yield from batch


def fingerprint(*parts: Any) -> str:
    """A `datasets` fingerprint of `parts` (and of `CACHE_VERSION`): equal parts give the same one in every process."""
    return Hasher.hash((CACHE_VERSION, *parts))


# What a loaded tokenizer's `init_kwargs` hold beside its options: where it was read from and how, not how it encodes.
_LOADING_KWARGS = frozenset(
    {
        "name_or_path",
        "is_local",
        "local_files_only",
        "auto_map",
        "vocab_file",
        "tokenizer_file",
        "tokenizer_object",
        "added_tokens_decoder",
        "backend",
        "_commit_hash",
    }
)


def tokenizer_fingerprint(tokenizer: PreTrainedTokenizerBase) -> str:
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


def step_fingerprint(split: Dataset, step: Sequence[Any]) -> str:
    """The fingerprint of what a cached step makes of `split` (`cached_map`, `cached_filter`, `cached_split`): the
    split's own and `step`, what the step does (its name, then every option that changes its output). Each step
    makes its key from the split it reads, so no caller can leave the split out of it."""
    return fingerprint(split._fingerprint, *step)


def encoding_step(tokenizer: PreTrainedTokenizerBase, parts: tuple) -> tuple:
    """What encoding a split does, for its key (`step_fingerprint`): the tokenizer (`tokenizer_fingerprint`) and what
    the encoder reads (`parts`: `hf_attn.tasks.base.encoding_parts`)."""
    return ("encoding", tokenizer_fingerprint(tokenizer), *parts)


def encode_splits(
    splits: Sequence[tuple[Dataset, Sequence[str], tuple | None]],
    encode: Callable[[dict[str, list]], dict[str, list]],
    tokenizer: PreTrainedTokenizerBase | None = None,
    workers: int | None = None,
    fresh: bool = False,
) -> tuple[list[Dataset], bool]:
    """Each `(split, keep, parts)` encoded by `encode` (a task shape's encoder; batched `map`), its other columns
    dropped except `keep`, under the fingerprint its `parts` make with `tokenizer` (`encoding_step`, through
    `cached_map`; `parts` `None`: `datasets` fingerprints the function itself, and a stream is encoded as it is
    read); and whether the `datasets` cache held every split already. `fresh` (`--overwrite_cache`): encoded again
    whatever the cache holds."""
    encoded, cached = [], True
    for split, keep, parts in splits:
        names = split.column_names if split.column_names is not None else list(next(iter(split.take(1)), {}))
        remove = [name for name in names if name not in keep]
        if parts is None:
            encoded.append(split.map(encode, batched=True, remove_columns=remove))
            cached = False
            continue
        step = encoding_step(tokenizer, parts)
        mapped, reused = cached_map(split, encode, step, "Encoding", workers, fresh, remove_columns=remove)
        encoded.append(mapped)
        cached = cached and reused
    return encoded, cached


def map_workers(rows: int, workers: int | None) -> int | None:
    """The `num_proc` of a map over `rows` rows: `workers` when given (`--preprocessing_num_workers`), else every core
    (at most `MAX_WORKERS`) from `PARALLEL_FROM_ROWS` rows on, else none (this process)."""
    if workers is not None:
        return workers if workers > 1 else None
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return min(cores, MAX_WORKERS) if rows >= PARALLEL_FROM_ROWS and cores > 1 else None


@contextlib.contextmanager
def cache_writes(folder: str | os.PathLike | None = None) -> Iterator[None]:
    """A write the file system refuses inside the block (a full disk, a read-only folder: `WRITE_FAULTS`; a folder
    this process may not write: `PERMISSION_FAULTS`) ends it as one `OSError` that names the `datasets` cache folder
    (`folder`, else the whole cache) and how to put the cache elsewhere. Of what the block wrote, nothing half-done
    is read later: `datasets` writes each file aside first, and so does this module."""
    try:
        yield
    except Exception as error:  # an OSError, or a library's error quoting the OS's words (`tokenizers`' saves)
        where = Path(folder if folder is not None else os.path.expanduser(str(datasets.config.HF_DATASETS_CACHE)))
        fault = write_fault(error) or (write_fault(error, PERMISSION_FAULTS) if _unwritable(where) else None)
        if fault is None:
            raise
        code = io_errno(fault)
        remedy = "make room there" if code in (errno.ENOSPC, errno.EDQUOT) else "make it writable"
        raise OSError(
            code,
            f"the datasets cache {where} cannot be written: {remedy}, or put the cache elsewhere "
            "(HF_DATASETS_CACHE=/another/folder)",
        ) from error


def _unwritable(folder: Path) -> bool:
    """Whether this process may not write in `folder` (or, where it is not made yet, in the nearest folder above
    it): a permission refused there is the cache's, not an input file's."""
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return not os.access(folder, os.W_OK)


def cached_map(
    split: Dataset,
    function: Callable[[dict[str, list]], dict[str, list]],
    step: Sequence[Any],
    description: str,
    workers: int | None = None,
    fresh: bool = False,
    **options: Any,
) -> tuple[Dataset, bool]:
    """`split.map(function, batched=True, **options)` under the fingerprint of `split` and `step`, what the map does
    (`step_fingerprint`), on `map_workers` processes, with a progress bar named `description` (where `datasets` shows
    bars); returns the mapped split and whether it came from the cache (every file it reads was there before the
    call). `fresh` (`--overwrite_cache`): computed again and written afresh, whatever the cache holds."""
    started = time.time()
    key = step_fingerprint(split, step)
    drop_unreadable(split, key)
    parallelism = os.environ.get(TOKENIZERS_PARALLELISM)
    try:
        with cache_writes(cache_folder(split)):
            mapped = split.map(
                function,
                batched=True,
                new_fingerprint=key,
                desc=description,
                num_proc=map_workers(len(split), workers),
                load_from_cache_file=not fresh,
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
    return mapped, _reused([(split, mapped, key)], started)[0]


def cached_filter(
    split: Dataset, function: Callable[..., list[bool]], step: Sequence[Any], fresh: bool = False, **options: Any
) -> Dataset:
    """`split.filter(function, **options)` under the fingerprint of `split` and `step` (`step_fingerprint`), its cache
    file checked and kept as `cached_map`'s are."""
    started = time.time()
    key = step_fingerprint(split, step)
    drop_unreadable(split, key)
    with cache_writes(cache_folder(split)):
        kept = split.filter(function, new_fingerprint=key, load_from_cache_file=not fresh, **options)
    _reused([(split, kept, key)], started)
    return kept


def cached_split(split: Dataset, fraction: float, seed: int) -> tuple[Dataset, Dataset]:
    """`split.train_test_split(test_size=fraction, seed=seed)` (the same rows) under fingerprints of our own, its two
    index files checked and kept as `cached_map`'s are."""
    started = time.time()
    keys = (
        step_fingerprint(split, ("training part", fraction, seed)),
        step_fingerprint(split, ("held-out part", fraction, seed)),
    )
    for key in keys:
        drop_unreadable(split, key)
    with cache_writes(cache_folder(split)):
        parts = split.train_test_split(
            test_size=fraction, seed=seed, train_new_fingerprint=keys[0], test_new_fingerprint=keys[1]
        )
    _reused([(split, parts["train"], keys[0]), (split, parts["test"], keys[1])], started)
    return parts["train"], parts["test"]


def _reused(steps: Sequence[tuple[Dataset, Dataset, str]], started: float) -> list[bool]:
    """For each `(split, result, key)` of steps that began at `started`: whether the files written under `key`
    beside `split`'s (`cache-KEY*.arrow`, the ones `result` reads) were all in the cache before; the checksums of the
    files just written are kept beside them (every file hashed in one pass: `_write_checksums`)."""
    reused, written = [], {}
    for split, result, key in steps:
        folder = cache_folder(split)
        files = [Path(item["filename"]) for item in result.cache_files] if folder is not None else []
        files = [path for path in files if path.parent == folder and path.name.startswith(f"cache-{key}")]
        reused.append(bool(files) and all(path.stat().st_mtime < started for path in files))
        if files and not reused[-1]:
            written[_checksums_of(folder, key)] = files
    _write_checksums(written)
    return reused


def _why_unreadable(path: Path) -> str | None:
    """Why the Arrow file `path` does not read back whole (truncated, empty, a broken message), or `None` when it
    does: every record batch read, as `datasets` would read it, from a memory map (no copy of its data)."""
    try:
        with pa.memory_map(str(path)) as source:
            pa.ipc.open_stream(source).read_all()
    except (pa.ArrowException, OSError) as error:
        return str(error) or type(error).__name__
    return None


def _checksums_of(folder: Path, key: str) -> Path:
    """Where the checksums of the files `cached_map` wrote under the fingerprint `key` are kept."""
    return folder / f"hf_attn-{key}.sha256.json"


def _read_checksums(path: Path) -> dict[str, Any]:
    try:
        checksums = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # none, or cut short itself: the files are still read back whole below
        return {}
    return checksums if isinstance(checksums, dict) else {}


def _differs(path: Path, record: Any) -> bool:
    """Whether the bytes of `path` differ from those its `record` (`_write_checksums`) was written for. A file with the
    size and modification time recorded is not read again, as git's index does: a write into it, a truncation or a copy
    over it changes them, and reading a million rows' files on every run would cost a second run most of its time.
    Otherwise it is hashed (a file only touched still matches). A bare digest (an earlier record) is compared."""
    if isinstance(record, dict):
        stat = path.stat()
        if (stat.st_size, stat.st_mtime_ns) == (record.get("size"), record.get("mtime_ns")):
            return False
        record = record.get("sha256")
    return sha256_of_file(path) != record


def _write_checksums(written: dict[Path, Sequence[Path]]) -> None:
    """For each checksums file, the records of its files by name (each file's SHA-256, and the size and modification
    time it had then), every file hashed in one pass; each written aside and renamed into place (never half a
    record)."""
    files = [file for group in written.values() for file in group]
    digests = dict(zip(files, sha256_of_files(files), strict=True)) if files else {}
    for path, group in written.items():
        records = {}
        for file in group:
            stat = file.stat()
            records[file.name] = {"sha256": digests[file], "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
        staging = path.with_name(f".{path.name}.{os.getpid()}")
        try:
            with cache_writes(path.parent):
                staging.write_text(json.dumps(records), encoding="utf-8")
                staging.replace(path)
        finally:
            staging.unlink(missing_ok=True)


def _fault(path: Path, checksums: dict[str, Any]) -> str | None:
    """Why the cached file `path` cannot be trusted, or `None`: missing, not reading back whole (an Arrow file), or
    bytes that differ from the checksum written with it (when one was)."""
    if not path.is_file():
        return "it is missing"
    why = _why_unreadable(path) if path.suffix == ".arrow" else None
    if why is None and path.name in checksums and _differs(path, checksums[path.name]):
        why = "its bytes differ from the checksum written with it"
    return why


def _say_unreadable(path: Path, why: str, then: str) -> None:
    print(f"[hf-attn] the datasets cache file {path} does not read back ({why}): {then}", file=sys.stderr, flush=True)


def drop_unreadable(split: Dataset, key: str) -> None:
    """Removes the cache files `split.map` would find under the fingerprint `key` (`cache-KEY*.arrow`: one, or a
    shard per worker) when one of them does not read back whole or its bytes differ from the checksum written with
    it, saying so in one line that names it, so that the step is computed again. A file cut short (a full disk, a
    copy cut off) would otherwise end every later run on the same data with an Arrow error that names no file, and
    one garbled inside its data would be trained on."""
    folder = cache_folder(split)
    if folder is None:
        return
    files = sorted(folder.glob(f"cache-{key}*.arrow"))
    checksums = _read_checksums(_checksums_of(folder, key)) if files else {}
    for path in files:
        why = _fault(path, checksums)
        if why is not None:
            for other in (*files, _checksums_of(folder, key)):
                other.unlink(missing_ok=True)
            _say_unreadable(path, why, "removed, and computed again")
            return


# The checksums of the files `datasets` built from a dataset's own files (its Arrow copy and `dataset_info.json`),
# in the folder it built them in; every file hf_attn derives from them lies in that folder too.
BUILT_CHECKSUMS = "hf_attn-built.sha256.json"


def _built_files(folder: Path) -> list[Path]:
    """What `datasets` built in `folder`: its Arrow copy of each split (`csv-train.arrow`, or shards of it) and the
    description it reads first (`dataset_info.json`); the files derived from them (`cache-*`) are not its."""
    arrow = (path for path in folder.glob("*.arrow") if not path.name.startswith("cache-"))
    return sorted([*arrow, folder / datasets.config.DATASET_INFO_FILENAME])


def _built_fault(folder: Path) -> tuple[Path, str] | None:
    """The first file of a built dataset in `folder` that cannot be trusted, and why; `None` when all can (or when
    nothing is built there yet)."""
    info = folder / datasets.config.DATASET_INFO_FILENAME
    if not info.exists():
        return None
    checksums = _read_checksums(folder / BUILT_CHECKSUMS)
    named = [folder / name for name in checksums if not (folder / name).exists()]  # a shard gone
    for path in (*named, *_built_files(folder)):
        why = _fault(path, checksums)
        if why is None and path == info:
            try:
                json.loads(info.read_text(encoding="utf-8"))
            except (OSError, ValueError) as error:  # written before any checksum was: read it as `datasets` would
                why = str(error) or type(error).__name__
        if why is not None:
            return path, why
    return None


def _built_folder(path: str, name: str | None, options: dict[str, Any]) -> Path:
    """The folder where `datasets` builds `load_dataset(path, name, **options)` in its cache. A builder reads that
    folder's `dataset_info.json` when it is made, so where the file does not read the builder is made in an empty
    cache of its own and its folder moved under the real cache (the same relative path: the data's own hash)."""
    try:
        return Path(load_dataset_builder(path, name, **options).cache_dir)
    except ValueError:  # a `JSONDecodeError` or `UnicodeDecodeError`: an info file damaged, or an option refused
        with tempfile.TemporaryDirectory() as elsewhere:
            folder = Path(load_dataset_builder(path, name, cache_dir=elsewhere, **options).cache_dir)
            return Path(os.path.expanduser(str(datasets.config.HF_DATASETS_CACHE))) / folder.relative_to(elsewhere)


def load_built(
    path: str,
    name: str | None = None,
    *,
    split: str | None = None,
    streaming: bool = False,
    fresh: bool = False,
    **options: Any,
) -> Any:
    """`datasets.load_dataset(path, name, split=split, streaming=streaming, **options)`, the Arrow copy `datasets`
    keeps of the data (built once, in its cache) checked first. A copy that does not read back whole, or whose bytes
    differ from the checksums written when it was built (`BUILT_CHECKSUMS`), is named in one line, its folder
    removed (with what hf_attn derived from the copy in it) and the copy built again; with `fresh`
    (`--overwrite_cache`) every copy is built again (`download_mode="force_redownload"`). A stream builds nothing."""
    if streaming:
        return load_dataset(path, name, split=split, streaming=True, **options)
    folder = _built_folder(path, name, options)
    fault = _built_fault(folder)
    if fault is not None:
        shutil.rmtree(folder, ignore_errors=True)
        _say_unreadable(*fault, then=f"{folder} is removed, and built again from the data files")
    loaded = load_dataset(path, name, split=split, download_mode="force_redownload" if fresh else None, **options)
    if fresh or fault is not None or not (folder / BUILT_CHECKSUMS).exists():
        _write_checksums({folder / BUILT_CHECKSUMS: [path for path in _built_files(folder) if path.exists()]})
    return loaded


def cache_folder(split: Dataset) -> Path | None:
    """The folder of `split`'s cache files (where `datasets` keeps what it maps from it), or `None` for a split held
    in memory."""
    files = getattr(split, "cache_files", None)  # a stream (`IterableDataset`) has none
    return Path(files[0]["filename"]).parent if files else None


# The checksums of a kept vocabulary's files, inside its folder.
VOCABULARY_CHECKSUMS = "hf_attn.sha256.json"


def saved_tokenizer(split: Dataset, key: str, load: Callable[[Path], Any]) -> Any | None:
    """The tokenizer trained on `split` that `keep_tokenizer` kept beside the split's cache files under `key` (the
    split's fingerprint and the trainer's options), read by `load`; `None` when there is none (a split held in memory
    has none). One whose files differ from the checksums kept with them, or that does not load, is removed, in one
    line that names it, for the caller to train again and `keep_tokenizer` to replace."""
    folder = cache_folder(split)
    if folder is None:
        return None
    saved = folder / "hf_attn_tokenizers" / key
    if not saved.is_dir():
        return None
    checksums = _read_checksums(saved / VOCABULARY_CHECKSUMS)
    changed = [
        name for name, record in checksums.items() if not (saved / name).is_file() or _differs(saved / name, record)
    ]
    why = f"{changed[0]} differs from its checksum" if changed else None if checksums else "no checksums kept with it"
    if why is None:
        try:
            return load(saved)
        except Exception as error:  # the `tokenizers` library raises a bare Exception on a file it cannot parse
            why = str(error).splitlines()[0] if str(error) else type(error).__name__
    shutil.rmtree(saved, ignore_errors=True)
    print(
        f"[hf-attn] the kept vocabulary {saved} does not load ({why}): removed, and trained again",
        file=sys.stderr,
        flush=True,
    )
    return None


def keep_tokenizer(split: Dataset, key: str, tokenizer: PreTrainedTokenizerBase) -> None:
    """Keeps `tokenizer`, trained on `split`, beside the split's cache files under `key`, with the checksums of its
    files, for `saved_tokenizer` to find (nothing for a split held in memory). The folder is written aside and
    renamed into place, so a run killed while saving leaves no half-written tokenizer to load."""
    folder = cache_folder(split)
    if folder is None:
        return
    saved = folder / "hf_attn_tokenizers" / key
    with cache_writes(folder):
        saved.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=saved.parent, prefix=".staging-"))
    try:
        with cache_writes(folder):
            tokenizer.save_pretrained(staging)
        kept = sorted(path for path in staging.iterdir() if path.is_file())
        _write_checksums({staging / VOCABULARY_CHECKSUMS: kept})
        with contextlib.suppress(OSError):  # another process saved it first: the same vocabulary, from the same split
            staging.rename(saved)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def vocabulary(
    rows: Dataset,
    columns: tuple[str | None, ...],
    kind: Any,
    settings: tuple,
    knowledge: dict[str, Any],
    fresh: bool = False,
) -> tuple[PreTrainedTokenizerBase, bool]:
    """A tokenizer of `kind` (a `TokenizerKind`) trained on the texts of `columns` of `rows`, with `settings`
    (vocabulary size, minimum frequency, lower-casing) and `knowledge` (what the kind reads beside the texts: STCKA's
    concepts); or the same vocabulary found again beside the rows' cache files (`saved_tokenizer`, keyed by the rows'
    fingerprint and every option of the trainer; `fresh`: trained again all the same). Returns it and whether it was
    found. A million texts are trained in a process of their own (`train_apart`), so that their mapped pages do not
    stay with this one; what is trained is kept (`keep_tokenizer`) for the next run to find."""
    from transformers import AutoTokenizer

    key = step_fingerprint(rows, ("vocabulary", *columns, kind.name, settings, knowledge))
    found = None if fresh else saved_tokenizer(rows, key, AutoTokenizer.from_pretrained)
    if found is not None:
        return found, True
    texts = len(rows) * sum(column is not None for column in columns)
    if cache_folder(rows) is not None and texts >= APART_FROM_TEXTS and kind.reads_once and not knowledge:
        tokenizer = train_apart(kind, rows, columns, settings, AutoTokenizer.from_pretrained)
    else:
        tokenizer = train_vocabulary(kind, rows, columns, settings, **knowledge)
    keep_tokenizer(rows, key, tokenizer)
    return tokenizer, False


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
    return split.select(chosen, keep_in_memory=True)  # the indices in memory: no cache file of them to break


def text_batches(split: Any, columns: Iterable[str | None], batch_size: int = ROWS_PER_BATCH) -> Iterator[list[str]]:
    """The texts of the given columns of `split` (`None` columns skipped), a column after the other, as lists of up
    to `batch_size`: what a vocabulary is trained on (the trainers take batches as they come). A split read through
    an indices mapping (the training rows left once the held-out ones are drawn) is read in the order of its table
    (`_in_table_order`): the same texts, so the same counts; a trainer that ranks tied words by first occurrence
    (ELMo's) sees them in the file's order rather than the draw's."""
    for column in columns:
        if column is None:
            continue
        if isinstance(split, Dataset) and split._indices is not None and not require_decoding(split.features[column]):
            yield from _in_table_order(split, column, batch_size)
        else:
            yield from column_batches(split, column, batch_size)


def _in_table_order(split: Dataset, column: str, batch_size: int) -> Iterator[list[str]]:
    """The values of `column` of the rows an indices mapping selects, read in contiguous Arrow batches of the table
    beneath it: a gather of each batch by its sorted positions, not one gather of scattered rows per batch of the
    mapping (180,000 rows of a 90% draw: 0.07 s against 0.84 s on 2 cores). The same values, in the table's order."""
    import numpy as np

    positions = np.sort(split._indices.column(0).to_numpy())
    table = split.data.table.select([column])
    start = 0
    for batch in table.to_batches(max_chunksize=batch_size):
        end = start + batch.num_rows
        low, high = np.searchsorted(positions, [start, end])
        if high > low:
            yield batch.column(0).take(pa.array(positions[low:high] - start)).to_pylist()
        start = end
