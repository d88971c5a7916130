"""Your data as `datasets` reads it: a Hub dataset or local files, through `datasets.load_dataset`.

`load_splits` reads the training and held-out splits: a Hub id (`stanfordnlp/snli`, with a config and split names),
a folder `load_dataset` understands (`train.csv`, `test.csv`, ...), a folder in the extreme multi-label text layout
(`train_texts.txt` + `train_labels.txt`, ...; `load_xmc_text_folder`), or one file, `.csv`, `.tsv`, `.json`, `.jsonl`,
`.parquet` or `.txt` (one text per line, for language models). A file that cannot be parsed is reported with the
row that breaks it. Without a held-out split, the caller holds out rows (`hf_attn.data.rows.hold_out`).
What the rows mean is `hf_attn.data.rows`'s job.
"""

from __future__ import annotations

import contextlib
import csv
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
from datasets import Dataset, DatasetDict
from datasets import utils as datasets_utils

from ..utils.inputs import Stage, refuse
from ..utils.paths import check_local_path
from ..utils.saving import write_fault
from .cache import cache_writes, load_built
from .request import DataRequest

# `datasets`' JSON reader reads a file in chunks of this many bytes, each typed on its own.
JSON_CHUNK = 10 << 20
FILE_FORMATS = {".csv": "csv", ".tsv": "csv", ".json": "json", ".jsonl": "json", ".parquet": "parquet", ".txt": "text"}
HELD_OUT_SPLITS = ("validation", "dev", "valid", "test")


def _holds_data(folder: Path) -> bool:
    """Whether a folder holds data `load_dataset` reads: a data file (`FILE_FORMATS`, Arrow) a few levels down, or
    a dataset `save_to_disk` wrote; never a model folder (whose config.json is JSON, but no rows)."""
    if (folder / "config.json").is_file() and any(folder.glob("*.safetensors")):
        return False
    if (folder / "dataset_dict.json").is_file() or (folder / "dataset_info.json").is_file():
        return True
    suffixes = {*FILE_FORMATS, ".arrow", ".gz", ".zst", ".bz2", ".xz"}
    for depth in ("*", "*/*", "*/*/*"):
        if any(item.suffix.lower() in suffixes and item.is_file() for item in folder.glob(depth)):
            return True
    return False


# A dataset given as a folder (a Hub id or a file is read by `load_dataset` or `_load_file`).
DATA = Stage(
    "a dataset (a .csv, .tsv, .json, .jsonl, .parquet or .txt file, a folder of them, or a Hub id)", _holds_data
)


def _file_format(path: Path, data_format: str | None) -> tuple[str, dict[str, Any]]:
    """The `load_dataset` builder of a local file, and its options."""
    builder = data_format or FILE_FORMATS.get(path.suffix.lower())
    if builder is None:
        raise ValueError(
            f"--dataset {path}: unknown file type {path.suffix!r}; use one of {', '.join(FILE_FORMATS)} or give "
            "--dataset-format (csv, json, parquet, text)."
        )
    options: dict[str, Any] = {}
    if builder == "csv" and path.suffix.lower() == ".tsv":
        options["delimiter"] = "\t"
    if builder == "text":
        options["keep_linebreaks"] = False
    return builder, options


def locate_parse_error(path: Path, builder: str, delimiter: str = ",") -> str | None:
    """`"line N: what is wrong"` (`"row N: …"` for a CSV/TSV record or a JSON Lines object) for the first place a
    local file does not parse, or `None`. Bytes that are not UTF-8 are found line by line in any format."""
    with path.open("rb") as raw:
        for number, line in enumerate(raw, start=1):
            try:
                line.decode("utf-8")
            except UnicodeDecodeError as error:
                byte = line[error.start : error.start + 1]
                return (
                    f"line {number}: not UTF-8 (byte {error.start + 1} of the line is {byte!r}); convert the file, "
                    "e.g. `iconv -f latin1 -t utf-8`"
                )
    with path.open(encoding="utf-8", newline="") as handle:
        if builder == "json":
            text = handle.read()
            if text.lstrip().startswith("["):  # one JSON array
                try:
                    json.loads(text)
                except json.JSONDecodeError as error:
                    return f"line {error.lineno}: {error.msg}"
                return None
            for number, line in enumerate(text.splitlines(), start=1):
                if line.strip():
                    try:
                        if not isinstance(json.loads(line), dict):
                            return f"row {number}: not a JSON object"
                    except json.JSONDecodeError as error:
                        return f"row {number}: {error.msg}"
        elif builder == "csv":
            rows = csv.reader(handle, delimiter=delimiter, strict=True)
            try:
                width = len(next(rows, []))
                for row in rows:
                    if row and len(row) != width:
                        return f"row {rows.line_num}: {len(row)} fields where the header has {width}"
            except csv.Error as error:
                return f"line {rows.line_num}: {error}"
    return None


@contextlib.contextmanager
def _quiet_errors() -> Iterator[None]:
    """datasets' error log off inside the block (a parse error is re-raised, naming the file and line, by
    `_load_file`), as it was after it. Its progress bar ("Generating train split") stays as the run has it: shown on
    a terminal, off in a log (`hf-attn train --no-progress`)."""
    verbosity = datasets_utils.logging.get_verbosity()
    datasets_utils.logging.set_verbosity(datasets_utils.logging.CRITICAL)
    try:
        yield
    finally:
        datasets_utils.logging.set_verbosity(verbosity)


def _type_changes(error: BaseException) -> bool:
    """Whether `error` (from `load_dataset`) is a column whose type changes between two of the reader's chunks:
    JSON lines of numbers, then a word 10 MB later. Within one chunk `datasets` types such a column `Json`."""
    while error is not None:
        text = str(error)
        if isinstance(error, pa.ArrowInvalid | TypeError) and (
            "as a scalar of type" in text or "changed from" in text or "Couldn't cast" in text
        ):
            return True
        error = error.__cause__ or error.__context__
    return False


def _load_file(path: Path, request: DataRequest, notes: list[str] | None = None) -> Dataset:
    """One local file as a split (a stream with `request.streaming`: nothing read until rows are asked for); what it
    says of the file (a header row skipped) goes to `notes`, or is printed. `request.fresh`: its Arrow copy built
    again.

    `request.columns.strings` (the text and label columns a task names) are read as strings, as written, whatever their
    first rows hold: a CSV's through a converter of each cell (pandas would type a column of codes `1001` as
    numbers, and a label column with an empty cell as floats, `3.0`, or fail at the first word 10,000 rows on). A
    JSON lines file whose column changes type between the reader's 10 MB chunks is read again as one chunk, where
    `datasets` types the column `Json` and its values come back as written (`0`, `"other"`)."""
    from .episodes import read_fewrel

    data_format, streaming, fresh = request.format, request.streaming, request.fresh
    column_names, string_columns = request.columns.header, request.columns.strings
    fewrel = read_fewrel(path) if data_format is None and not streaming else None  # FewRel's own layout
    if fewrel is not None:
        return fewrel
    builder, options = _file_format(path, data_format)
    if column_names:  # a file without a header row (e.g. a TSV of sentence pairs)
        if builder != "csv":
            raise ValueError("--column-names applies to .csv/.tsv files (their header row is then data).")
        options["column_names"] = list(column_names)
        if _header_row(path, column_names, options.get("delimiter", ",")):
            options["skiprows"] = 1
            note = (
                f"[hf-attn] --dataset {path}: its first row is the header --column_names names "
                f"({', '.join(column_names)}): read as the header, not as a training row"
            )
            print(note, flush=True) if notes is None else notes.append(note)
    if builder == "csv" and string_columns:
        options["converters"] = dict.fromkeys(string_columns, str)
    files = {"train": str(path)}
    try:
        with _quiet_errors():  # a failure's message stays the only line
            try:
                return load_built(
                    builder, data_files=files, split="train", streaming=streaming, fresh=fresh, **options
                )
            except Exception as error:
                if builder != "json" or streaming or not _type_changes(error):
                    raise
            whole = max(path.stat().st_size + 1, JSON_CHUNK)  # one chunk: its mixed columns typed Json
            return load_built(builder, data_files=files, split="train", fresh=fresh, chunksize=whole, **options)
    except Exception as error:
        if write_fault(error) is not None:  # its Arrow copy could not be written: not a parse error
            raise
        lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
        if len(lines) <= (1 if builder == "csv" and not column_names else 0):
            raise ValueError(f"--dataset {path} is empty: it holds no rows.") from error
        where = locate_parse_error(path, builder, options.get("delimiter", ","))
        cause = where or f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
        raise ValueError(f"--dataset {path} cannot be parsed as {builder}: {cause}") from error


def _header_row(path: Path, column_names: Sequence[str], delimiter: str) -> bool:
    """Whether the first row of a CSV/TSV given `--column_names` is its header: `True` when it holds those names
    (case and spaces aside), to be skipped; a first row that names some of them, or all in another order, is
    refused (read as data it would be a training row; read as the header it disagrees with the names given)."""
    with path.open(encoding="utf-8", errors="replace", newline="") as handle:
        first = next(csv.reader(handle, delimiter=delimiter), None)
    if not first:
        return False
    cells, given = [cell.strip().lower() for cell in first], [name.strip().lower() for name in column_names]
    if cells == given:
        return True
    if set(cells) & set(given):
        raise ValueError(
            f"--column_names {' '.join(column_names)}: the first row of {path} ({', '.join(first)}) is a header "
            "that names other columns: leave --column_names out to read the file's own header, or give the names "
            "in its order."
        )
    return False


XMC_SPLITS = {"train": "train", "valid": "validation", "test": "test"}


def load_xmc_text_folder(folder: Path) -> DatasetDict:
    """The extreme multi-label text layout of AttentionXML and the Extreme Classification Repository's raw-text
    sets: `{split}_texts.txt` (one tokenised text per line) beside `{split}_labels.txt` (the text's labels,
    space-separated, on the same line), for split in train / valid / test. Columns: `text`, `labels` (names)."""
    splits = {}
    for prefix, split in XMC_SPLITS.items():
        texts_path, labels_path = folder / f"{prefix}_texts.txt", folder / f"{prefix}_labels.txt"
        if not texts_path.is_file():
            continue
        if not labels_path.is_file():
            raise ValueError(f"--dataset {folder}: {texts_path.name} has no {labels_path.name} beside it.")
        texts = texts_path.read_text(encoding="utf-8").splitlines()
        labels = labels_path.read_text(encoding="utf-8").splitlines()
        if len(texts) != len(labels):
            raise ValueError(
                f"--dataset {folder}: {texts_path.name} has {len(texts)} lines but {labels_path.name} has "
                f"{len(labels)}; line i of one must be the labels of line i of the other."
            )
        splits[split] = Dataset.from_dict({"text": texts, "labels": [line.split() for line in labels]})
    return DatasetDict(splits)


@cache_writes()  # `datasets` converts each file to Arrow in its cache
def load_splits(
    request: DataRequest, notes: list[str] | None = None
) -> tuple[Dataset, Dataset | None, dict[str, str]]:
    """The training and held-out splits of `request.dataset` (a file, a folder or a Hub id), and a description of
    them.

    The held-out split is `request.held_out.dataset` (a file), else its `split`, else the first of
    validation/dev/valid/test the dataset has, else `None`: the caller holds out rows once the unusable ones are
    dropped (`hf_attn.data.rows.hold_out`), or a stream's first rows (`hf_attn.data.streaming`). With
    `request.streaming`, the splits are `IterableDataset`s. The Arrow copy `datasets` keeps of the data is checked
    before it is read, and built again where it does not read back, or with `request.fresh` (`--overwrite_cache`;
    `hf_attn.data.cache.load_built`). What it says of a file (a header row skipped) is appended to `notes`, or
    printed."""
    dataset, streaming, fresh = request.dataset, request.streaming, request.fresh
    check_local_path(dataset, "--dataset")
    if request.held_out.dataset is not None:
        check_local_path(request.held_out.dataset, "--eval-dataset")
    path, train_split = Path(dataset), request.train_split
    if path.is_file():
        splits = {"train": _load_file(path, request, notes)}
        train_split = "train"
    elif path.is_dir() and (path / "train_texts.txt").is_file():  # the extreme classification text layout
        splits = load_xmc_text_folder(path)  # two text files a split, read whole (a stream reads them as they are)
        splits = {name: split.to_iterable_dataset() for name, split in splits.items()} if streaming else splits
    elif path.is_dir() and request.format is not None:  # a folder of shards in one format (the 1B Word Benchmark)
        shards = sorted(str(item) for item in path.rglob("*") if item.is_file() and not item.name.startswith("."))
        if not shards:
            raise ValueError(f"--dataset {path} holds no file.")
        shards = {"train": shards}
        read = load_built(request.format, data_files=shards, split="train", streaming=streaming, fresh=fresh)
        splits, train_split = {"train": read}, "train"
    else:
        splits = _load_dataset(path, request)
        if train_split not in splits:
            raise ValueError(f"--train-split {train_split!r} is not a split of {dataset}; it has {list(splits)}.")
    if path.exists():
        source = {"type": f"local/{path.name}", "name": path.name}
    else:
        source = {"type": dataset, "name": f"{dataset} ({request.config})" if request.config else dataset}
    train = splits[train_split]
    if not streaming and len(train) == 0:  # a stream's emptiness shows when its first rows are read
        raise ValueError(f"The {train_split!r} split of --dataset {dataset} is empty.")
    held_out, source["held_out"] = _held_out_split(splits, train_split, request, notes)
    if held_out is None:
        del source["held_out"]
    elif not streaming and len(held_out) == 0:
        raise ValueError(f"The held-out split ({source['held_out']}) of --dataset {dataset} is empty.")
    return train, held_out, source


def _load_dataset(path: Path, request: DataRequest) -> Any:
    """A local folder `load_dataset` understands, or a Hub dataset, with its splits."""
    if path.is_dir() and not DATA.fits(path):
        raise refuse("--dataset", request.dataset, DATA)
    kind = "local folder" if path.is_dir() else "Hub dataset"
    try:
        # A configuration names a Hub dataset's variant; a local folder of files has none (a recipe's Hub
        # configuration must not break a local copy of the data).
        config = None if path.is_dir() else request.config
        return load_built(request.dataset, config, streaming=request.streaming, fresh=request.fresh)
    except Exception as error:
        message = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise ValueError(f"--dataset {request.dataset} ({kind}) cannot be loaded: {message}") from error


def _held_out_split(
    splits: Any, train_split: str, request: DataRequest, notes: list[str] | None
) -> tuple[Any, str | None]:
    """The held-out split the request names or the dataset has, and what the card calls it; `(None, None)`."""
    policy = request.held_out
    if policy.dataset is not None:
        return _load_file(Path(policy.dataset), request, notes), Path(policy.dataset).name
    if policy.split is not None:
        if policy.split not in splits:
            raise ValueError(
                f"--eval-split {policy.split!r} is not a split of {request.dataset}; it has {list(splits)}."
            )
        return splits[policy.split], policy.split
    found = next((split for split in HELD_OUT_SPLITS if split in splits and split != train_split), None)
    return (splits[found], found) if found is not None else (None, None)
