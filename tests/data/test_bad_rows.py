"""Your file as it is (issue 71): a file with bad rows anywhere trains, evaluates and predicts as the same file
without them, and says how many it left out.

The property, for files hypothesis generates: a task kind the CLI trains (`KINDS`), a format (CSV, JSON lines,
Parquet), and bad rows (an empty, blank or null text, an empty label: `DEFECTS`) put in at any row: the first, either
side of `datasets`' write batches of 1,000 rows (issue 71's traceback came from a first batch without a bad row),
the second worker's shard (`--preprocessing_num_workers 2`), and, under `slow`, either side of the readers' chunks
of 10,000 rows. The data the run then trains and scores on (its label names, training rows and held-out rows, in
order) equals the clean file's, and the count told for each split equals the rows put in. The commands are checked
on whole runs: `train` with and without an evaluation file (the same metrics as the clean file), `evaluate` (the
same metrics) and `predict --file` (one result a line, an empty line's a defined empty one)."""

from __future__ import annotations

import csv
import json
import random
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from hf_attn.cli import main
from hf_attn.data.request import DataRequest
from hf_attn.options.reading import parse_arguments
from hf_attn.registry.table import get_architecture
from hf_attn.training.preparation import task_data
from tests.training.test_preparation import QUIET

WORDS = [f"w{index}" for index in range(40)]
FORMATS = ("csv", "jsonl", "parquet")
WRITE_BATCH = 1_000  # `datasets`' rows per Arrow write batch (`writer_batch_size`)
READ_CHUNK = 10_000  # rows per chunk of `datasets`' CSV reader (pandas), and per batch of hf_attn's reads


def words(rng: random.Random, low: int = 3, high: int = 8) -> list[str]:
    return [rng.choice(WORDS) for _ in range(rng.randint(low, high))]


@dataclass(frozen=True)
class Kind:
    """A task kind the CLI trains: its architecture, its columns' options, a clean row, and the column that holds
    its text and its label (where bad rows put their defects). A list value (words, tags, a label set) is written
    to a CSV joined by spaces, read back with `--label_separator " "`."""

    arch: str
    options: tuple[str, ...]
    row: Callable[[random.Random, int], dict[str, Any]]
    text: str = "text"
    label: str = "label"
    csv_options: tuple[str, ...] = ()
    config: dict[str, Any] = field(default_factory=dict)


def _class(rng: random.Random, index: int) -> Any:
    return [1, 2, 3, "neutral"][index % 4]  # numbers and a word: a JSON column whose values change type


KINDS = {
    "classification": Kind(
        "lin_self_attentive", (), lambda rng, i: {"text": " ".join(words(rng)), "label": _class(rng, i)}
    ),
    "pairs": Kind(
        "lin_self_attentive", ("--text_pair_column", "hypothesis"),
        lambda rng, i: {"text": " ".join(words(rng)), "hypothesis": " ".join(words(rng)), "label": _class(rng, i)},
    ),
    "multi-label": Kind(
        "attention_xml", ("--label_column", "labels"),
        lambda rng, i: {"text": " ".join(words(rng)), "labels": sorted({f"t{i % 5}", f"t{(i * 7) % 3}"})},
        label="labels", csv_options=("--label_separator", " "),
    ),
    "seq2seq": Kind(
        "vaswani_transformer", ("--text_column", "source", "--target_column", "target"),
        lambda rng, i: {"source": " ".join(words(rng)), "target": " ".join(words(rng))},
        text="source", label="target",
    ),
    "few-shot": Kind("hapn", (), lambda rng, i: {"text": " ".join(words(rng)), "label": f"class {i % 12}"}),
    "tagging": Kind(
        "elmo", ("--text_column", "words", "--label_column", "tags"),
        lambda rng, i: (lambda w: {"words": w, "tags": [f"T{len(word) % 3}" for word in w]})(words(rng)),
        text="words", label="tags", csv_options=("--label_separator", " "),
    ),
    "concepts": Kind(
        "stcka", ("--concept_column", "concepts"),
        lambda rng, i: {"text": " ".join(words(rng)), "concepts": " ".join(words(rng, 1, 3)), "label": _class(rng, i)},
    ),
}  # fmt: skip

# Each bad row: what it changes and the reason a run tells for it.
DEFECTS = {
    "empty text": ("text", "", "empty text"),
    "blank text": ("text", "   ", "empty text"),
    "null text": ("text", None, "empty text"),
    "empty label": ("label", "", "no label"),
}


def bad_row(kind: Kind, row: dict[str, Any], defect: str) -> tuple[dict[str, Any], str]:
    """`row` with `defect`, and the reason told for it (a seq2seq's empty label is an empty target)."""
    where, value, reason = DEFECTS[defect]
    column = kind.text if where == "text" else kind.label
    if value is not None and isinstance(row[column], list):  # a list column: an empty list, or a blank word
        value = [] if value == "" else [value]
    if where == "label" and kind.label == "target":
        reason = "empty target"
    return {**row, column: value}, reason


def write_rows(path: Path, rows: list[dict[str, Any]], file_format: str) -> Path:
    """`rows` as a CSV (a list joined by spaces, `None` an empty cell), JSON lines or Parquet file."""
    path = path.with_suffix(f".{file_format}")
    if file_format == "csv":
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            for row in rows:
                writer.writerow(
                    {k: " ".join(v) if isinstance(v, list) else "" if v is None else v for k, v in row.items()}
                )
    elif file_format == "jsonl":
        path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    else:  # one type a column: a label of numbers and words written as strings
        columns = {name: [row[name] for row in rows] for name in rows[0]}
        columns = {name: values if any(isinstance(v, list) for v in values) else
                   [None if v is None else str(v) for v in values] for name, values in columns.items()}  # fmt: skip
        pq.write_table(pa.table(columns), path)
    return path


@dataclass
class Files:
    """A clean file, the same file with bad rows put in, and the reasons they are told for."""

    clean: Path
    defected: Path
    reasons: Counter


def make_files(folder: Path, kind: Kind, file_format: str, rows: int, inserted: list[tuple[int, str]], seed: int,
               name: str = "train") -> Files:  # fmt: skip
    rng = random.Random(seed)
    clean = [kind.row(rng, index) for index in range(rows)]
    defected, reasons = list(clean), Counter()
    for position, defect in sorted(inserted, reverse=True):  # each before the clean row at `position`
        row, reason = bad_row(kind, kind.row(rng, position), defect)
        defected.insert(min(position, len(defected)), row)
        reasons[reason] += 1
    folder.mkdir(parents=True, exist_ok=True)
    return Files(write_rows(folder / f"{name}-clean", clean, file_format),
                 write_rows(folder / f"{name}-defected", defected, file_format), reasons)  # fmt: skip


TOLD = re.compile(r"^\[hf-attn\] (.+) split: dropped (\d+) of (\d+) rows \((.*)\)$", re.MULTILINE)


def told(printed: str) -> dict[str, Counter]:
    """The dropped rows each split's line tells, by reason."""
    counts = {}
    for split, _, _, detail in TOLD.findall(printed):
        counts[split] = Counter(
            {reason: int(n) for reason, n in (part.rsplit(": ", 1) for part in detail.split(", "))}
        )
    return counts


def options_of(kind: Kind, file_format: str, data: Path, eval_data: Path | None, workers: int | None) -> list[str]:
    argv = ["--arch", kind.arch, "--dataset", str(data), *kind.options, "--no-progress", "--seed", "3"]
    argv += [*kind.csv_options] if file_format == "csv" else []
    argv += ["--eval_dataset", str(eval_data)] if eval_data else []
    argv += ["--preprocessing_num_workers", str(workers)] if workers else []
    return argv


def prepared(argv: list[str], capsys) -> tuple[dict[str, Any], dict[str, Counter]]:
    """What a run of `argv` trains and scores on (`task_data`, the data step of `hf-attn train`), and what it told."""
    capsys.readouterr()
    options, args = parse_arguments(argv)
    data, _, _ = task_data(
        options,
        get_architecture(options.arch),
        args,
        DataRequest.of(options, options.architecture_arguments.columns(), args),
    )
    printed = capsys.readouterr().out
    seen = {"labels": data.labels, "train": data.train.to_list(), "eval": data.eval.to_list()}
    return seen, told(printed)


def positions(rows: int, chunked: bool) -> st.SearchStrategy[int]:
    """Where bad rows go: anywhere, with the edges drawn often (the first row, the last, the write batches', the
    second worker's shard, and the read chunks' when the file is that long)."""
    edges = [0, 1, rows // 2, rows // 2 + 1, rows - 1, rows]
    edges += [edge + delta for edge in range(WRITE_BATCH, rows, WRITE_BATCH) for delta in (-1, 0, 1)]
    if chunked:
        edges += [edge + delta for edge in range(READ_CHUNK, rows, READ_CHUNK) for delta in (-1, 0, 1)]
    return st.one_of(st.sampled_from(sorted({edge for edge in edges if 0 <= edge <= rows})), st.integers(0, rows))


def defect_cases(rows: int, chunked: bool = False) -> st.SearchStrategy:
    return st.tuples(
        st.sampled_from(FORMATS),
        st.lists(st.tuples(positions(rows, chunked), st.sampled_from(list(DEFECTS))), min_size=1, max_size=4),
        st.booleans(),  # an evaluation file beside the training file (with bad rows of its own)
        st.sampled_from([None, 2]),  # the preparing map on this process, or on two workers
    )


def check_the_property(tmp_path: Path, capsys, kind_name: str, rows: int, case: tuple, seed: int) -> None:
    file_format, inserted, with_eval, workers = case
    kind = KINDS[kind_name]
    folder = tmp_path / f"{kind_name}-{seed}"
    train = make_files(folder, kind, file_format, rows, inserted, seed)
    held = make_files(folder, kind, file_format, 150, inserted[:1], seed + 1, "eval") if with_eval else None
    expected = {"train": train.reasons, **({"held-out": held.reasons} if held else {})}
    clean, clean_told = prepared(options_of(kind, file_format, train.clean, held and held.clean, workers), capsys)
    defected, defected_told = prepared(options_of(kind, file_format, train.defected, held and held.defected,
                                                  workers), capsys)  # fmt: skip
    assert clean_told == {}, clean_told
    assert defected_told == expected, (defected_told, expected, case)
    for part in ("labels", "train", "eval"):
        assert defected[part] == clean[part], (part, case)


# A failing case is reported as found, not shrunk: each case prepares two files, and shrinking took minutes.
FOUND = (Phase.explicit, Phase.reuse, Phase.generate)


# The default run: each kind on files across the first write batches, a few drawn cases each.
@pytest.mark.parametrize("kind_name", list(KINDS))
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture], phases=FOUND)
@given(case=defect_cases(2_100), seed=st.integers(0, 1000))
def test_bad_rows_anywhere_leave_the_data_as_the_clean_files(tmp_path, capsys, cache, kind_name, case, seed):
    check_the_property(tmp_path, capsys, kind_name, 2_100, case, seed)


@pytest.mark.slow
@pytest.mark.parametrize("kind_name", list(KINDS))
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture], phases=FOUND)
@given(case=defect_cases(21_000, chunked=True), seed=st.integers(0, 1000))
def test_bad_rows_across_the_readers_chunks_leave_the_data_as_the_clean_files(tmp_path, capsys, cache, kind_name,
                                                                              case, seed):  # fmt: skip
    check_the_property(tmp_path, capsys, kind_name, 21_000, case, seed)


def metrics_of(capsys, argv: list[str]) -> tuple[dict, str]:
    capsys.readouterr()
    main(argv)
    printed = capsys.readouterr().out
    return json.loads(printed[printed.rindex("\n{") :]), printed


LIN_TINY = ["--config", "embedding_size=12", "hidden_size=8", "attention_hidden_size=10", "attention_hops=2"]


@pytest.mark.parametrize("with_eval", [False, True], ids=["held out of the file", "an evaluation file"])
def test_train_on_a_file_with_late_bad_rows_scores_as_the_clean_file(tmp_path, capsys, cache, with_eval):
    """Issue 71's file: 3,057 reviews, empty texts at rows 1,457, 2,996 and 2,997, trained with and without an
    evaluation file: each run tells the 3 rows, and its metrics are the clean file's."""
    kind = KINDS["classification"]
    inserted = [(1_457, "empty text"), (2_996, "empty text"), (2_996, "blank text")]
    train = make_files(tmp_path, kind, "csv", 3_054, inserted, seed=0)
    held = make_files(tmp_path, kind, "csv", 300, [(250, "null text")], seed=1, name="dev") if with_eval else None
    runs = {}
    for name in ("clean", "defected"):
        data = getattr(train, name)
        argv = ["train", *options_of(kind, "csv", data, held and getattr(held, name), None), *LIN_TINY,
                "--max_steps", "3", "--output_dir", str(tmp_path / name), *QUIET]  # fmt: skip
        runs[name] = metrics_of(capsys, argv)
    (clean, _), (defected, printed) = runs["clean"], runs["defected"]
    assert told(printed) == {
        "train": Counter({"empty text": 3}),
        **({"held-out": Counter({"empty text": 1})} if held else {}),
    }
    assert defected["accuracy"] == clean["accuracy"] and defected["loss"] == pytest.approx(clean["loss"], abs=1e-6)


def test_evaluate_and_predict_on_files_with_bad_rows(tmp_path, capsys, cache):
    """`hf-attn evaluate` on a file with bad rows past its first write batch scores as on the clean file, told in
    `train`'s words; `predict --file` gives one result a line, in order, an empty or blank line's `{"dropped":
    "empty text"}`, the others' those of the clean lines."""
    kind = KINDS["classification"]
    train = make_files(tmp_path, kind, "jsonl", 600, [], seed=0)
    model = tmp_path / "model"
    metrics_of(capsys, ["train", *options_of(kind, "jsonl", train.clean, None, None), *LIN_TINY, "--max_steps", "2",
                        "--output_dir", str(model), *QUIET])  # fmt: skip
    scored = make_files(
        tmp_path, kind, "jsonl", 1_500, [(1_200, "null text"), (1_499, "empty label")], seed=2, name="dev"
    )
    results = {}
    for name in ("clean", "defected"):
        capsys.readouterr()
        main(["evaluate", str(model), "--dataset", str(getattr(scored, name))])
        printed = capsys.readouterr().out
        results[name] = (json.loads(printed[printed.index("{") :]), told(printed))
    assert results["clean"][1] == {} and results["defected"][1] == {"evaluation": scored.reasons}

    def scores(metrics: dict) -> dict:  # the metrics, without how long they took
        return {key: value for key, value in metrics.items() if "time" not in key and "per_second" not in key}

    assert scores(results["defected"][0]) == scores(results["clean"][0]) and "accuracy" in results["clean"][0]
    lines = ["w1 w2 w3", "", "w4 w5", "   ", "w6"]
    (tmp_path / "lines.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "kept.txt").write_text("\n".join(line for line in lines if line.strip()) + "\n", encoding="utf-8")
    answers = {}
    for name in ("lines", "kept"):
        capsys.readouterr()
        main(["predict", str(model), "--file", str(tmp_path / f"{name}.txt"), "--json"])
        out, err = capsys.readouterr()
        answers[name] = (json.loads(out), err)
    given, err = answers["lines"]
    assert [answer["text"] for answer in given] == lines
    assert [answer for answer in given if not answer["text"].strip()] == [
        {"text": "", "dropped": "empty text"}, {"text": "   ", "dropped": "empty text"}
    ]  # fmt: skip
    assert [answer for answer in given if answer["text"].strip()] == answers["kept"][0]
    assert "[hf-attn] predict: dropped 2 of 5 texts (empty text: 2)" in err, err


def test_labels_whose_type_changes_are_classes_as_written(tmp_path, capsys, cache):
    """Issue 71's JSON lines: labels `0`, `1`, `2` until 60 rows labelled `"other"` (within `datasets`' first
    chunk: a `Json` column) are 4 classes, named as written; a CSV column of codes is text, and its labels are
    not read as floats where a cell is empty."""
    rng = random.Random(0)
    rows = [{"text": " ".join(words(rng)), "label": index % 3} for index in range(2_440)]
    rows += [{"text": " ".join(words(rng)), "label": "other"} for _ in range(60)]
    mixed = write_rows(tmp_path / "mixed", rows, "jsonl")
    seen, _ = prepared(["--arch", "lin_self_attentive", "--dataset", str(mixed), "--no-progress"], capsys)
    assert seen["labels"] == ["0", "1", "2", "other"]
    codes = [{"text": str(1000 + index), "label": index % 2 + 1} for index in range(1_200)]
    codes += [{"text": "", "label": 1}, {"text": "a word", "label": None}]
    codes_file = write_rows(tmp_path / "codes", codes, "csv")
    seen, said = prepared(["--arch", "lin_self_attentive", "--dataset", str(codes_file), "--no-progress"], capsys)
    assert seen["labels"] == ["1", "2"] and said == {"train": Counter({"empty text": 1, "no label": 1})}
    assert {row["text"] for row in seen["train"] + seen["eval"]} == {str(1000 + index) for index in range(1_200)}


@pytest.mark.slow
def test_a_json_lines_file_whose_label_changes_type_past_the_first_chunk_trains(tmp_path, capsys, cache):
    """More than 10 MB of numeric labels, then words: the reader's chunks disagree on the column's type, and the
    file is read again as one chunk (its column typed `Json`), not refused."""
    rng = random.Random(0)
    rows = [{"text": " ".join(words(rng, 20, 30)), "label": index % 3} for index in range(100_000)]
    rows += [{"text": "w1 w2", "label": "other"} for _ in range(50)]
    path = write_rows(tmp_path / "big", rows, "jsonl")
    assert path.stat().st_size > 10 << 20
    seen, _ = prepared(["--arch", "lin_self_attentive", "--dataset", str(path), "--no-progress"], capsys)
    assert seen["labels"] == ["0", "1", "2", "other"]
