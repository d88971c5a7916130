"""Your data at scale: a split read in batches and read once (a second run finds its work in the
`datasets` cache), on several processes, with progress a person can see, an evaluation in proportion to the run, and
data larger than memory read as a stream (local shards, the loopback Hub, two processes). The speed itself is
measured in `benchmarks/own_data_scale.py`, never asserted here."""

from __future__ import annotations

import csv
import fcntl
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import tracemalloc
from pathlib import Path

import datasets
import pytest

from hf_attn.cli import main
from hf_attn.data.cache import cached_map, column_values
from hf_attn.data.examples import review_rows
from hf_attn.tokenization.kinds import WORD_LEVEL_TOKENIZER, train_tokenizer
from tests.data.requests import canonical_task_data
from tests.training.test_preparation import LIN, QUIET

LIN_OPTIONS = ["--arch", "lin_self_attentive", *LIN]


def write_reviews(path: Path, num_rows: int, seed: int = 0) -> Path:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["stars", "review"])
        writer.writeheader()
        writer.writerows(review_rows(num_rows, seed))
    return path


def train_printed(capsys, *arguments: str) -> tuple[dict, str]:
    """`hf-attn train ARGUMENTS`: the metrics it prints and everything it printed."""
    main(["train", *arguments, *QUIET])
    printed = capsys.readouterr().out
    return json.loads(printed[printed.rindex("\n{") :]), printed


def data_line(printed: str) -> str:
    return next(line for line in printed.splitlines() if line.startswith("[hf-attn] data:"))


def arrow_files(folder: Path) -> dict[Path, float]:
    return {path: path.stat().st_mtime_ns for path in folder.rglob("*.arrow")}


def test_a_second_run_reads_its_rows_vocabulary_and_encoding_from_the_datasets_cache(tmp_path, cache, capsys):
    """The same file and options again: every data step is found, nothing is written, the run is the same. A new
    vocabulary size trains the vocabulary and encodes again (the prepared rows are kept); another model size only
    builds another model."""
    data = write_reviews(tmp_path / "reviews.csv", 600)
    run = [*LIN_OPTIONS, "--dataset", str(data), "--text_column", "review", "--label_column", "stars",
           "--output_dir", str(tmp_path / "run"), "--overwrite_output_dir", "--max_steps", "3"]  # fmt: skip
    first, printed = train_printed(capsys, *run)
    line = data_line(printed)
    assert (
        line.startswith("[hf-attn] data: 540 training rows, 60 held-out; reading and preparing")
        and "(cached)" not in line
    )
    written = arrow_files(cache)
    second, printed = train_printed(capsys, *run)
    line = data_line(printed)
    assert line.count("(cached)") == 3 and "reused from the datasets cache" in line, line
    assert arrow_files(cache) == written  # nothing mapped again, nothing rewritten
    assert second["accuracy"] == first["accuracy"] and second["loss"] == pytest.approx(first["loss"], abs=1e-6)
    _, printed = train_printed(capsys, *run, "--max_vocab_size", "40")
    steps = dict(
        re.findall(r"(reading and preparing|vocabulary|encoding) [0-9.]+ s( \(cached\))?", data_line(printed))
    )
    assert steps == {"reading and preparing": " (cached)", "vocabulary": "", "encoding": ""}, printed
    _, printed = train_printed(capsys, *run[:-2], "--max_steps", "3", "--config", "hidden_size=8")
    assert data_line(printed).count("(cached)") == 3, printed  # the encoding does not depend on the model's size


def test_overwrite_cache_prepares_trains_the_vocabulary_and_encodes_again(tmp_path, cache, capsys):
    """`--overwrite_cache` (transformers' examples' option): every data step computed again and written afresh (the
    file's Arrow copy too), the status line showing none as cached, the run the same; the run after it reuses what
    it wrote."""
    data = write_reviews(tmp_path / "reviews.csv", 600)
    run = [*LIN_OPTIONS, "--dataset", str(data), "--text_column", "review", "--label_column", "stars",
           "--output_dir", str(tmp_path / "run"), "--overwrite_output_dir", "--max_steps", "3"]  # fmt: skip
    first, _ = train_printed(capsys, *run)
    written = arrow_files(cache)
    again, printed = train_printed(capsys, *run, "--overwrite_cache")
    assert "(cached)" not in data_line(printed), printed
    rewritten = arrow_files(cache)
    # The file's Arrow copy, its prepared rows, the indices of the two parts held out from them, and each part's
    # encoding.
    assert len(written) == 6 and rewritten.keys() == written.keys(), (written, rewritten)
    assert all(rewritten[path] != written[path] for path in written), (written, rewritten)
    assert again["accuracy"] == first["accuracy"] and again["loss"] == pytest.approx(first["loss"], abs=1e-6)
    _, printed = train_printed(capsys, *run)
    assert data_line(printed).count("(cached)") == 3, printed


def test_workers_prepare_and_encode_the_same_rows_and_leave_tokenizers_parallel(tmp_path, monkeypatch):
    """`--preprocessing_num_workers 2`: the same canonical rows as one process, in the same order. datasets sets
    TOKENIZERS_PARALLELISM=false for its workers and leaves it in the C environment; `cached_map` puts it back, so
    that a vocabulary trained afterwards (and any child process) is not held to one thread."""
    monkeypatch.delenv("TOKENIZERS_PARALLELISM", raising=False)
    rows = [
        {"review": row["review"], "stars": row["stars"] if i % 50 else None} for i, row in enumerate(review_rows(400))
    ]
    split = datasets.Dataset.from_list(rows)
    one = canonical_task_data(split, split, "classification", "review", label_column="stars")
    two = canonical_task_data(split, split, "classification", "review", label_column="stars", workers=2)
    assert one.train.to_dict() == two.train.to_dict() and len(one.train) == 392
    assert one.dropped == two.dropped == {"train": {"no label": 8}, "held-out": {"no label": 8}}
    tokenizer = train_tokenizer(WORD_LEVEL_TOKENIZER, one.texts())
    encode = lambda batch: dict(tokenizer(batch["text"]))  # noqa: E731
    encoded, cached = cached_map(one.train, encode, ("encoded rows", 2), "Encoding", workers=2)
    assert not cached and encoded["input_ids"] == [tokenizer(text)["input_ids"] for text in one.train["text"]]
    seen = subprocess.run(["sh", "-c", "echo ${TOKENIZERS_PARALLELISM-unset}"], capture_output=True, text=True)
    assert seen.stdout.strip() == "unset"


def test_preparing_a_split_holds_one_batch_of_it_in_python(tmp_path):
    """Labels, dropped rows and the vocabulary's texts are read a batch at a time (`hf_attn.data.cache`): the Python
    memory the preparation peaks at does not grow with the split (measured with tracemalloc: 2.6 MB at 20,000 rows,
    3.0 MB at 80,000; reading the label column and the texts whole, as before, held 10.1 MB at 80,000)."""
    peaks = []
    for num_rows in (20_000, 80_000):
        rows = datasets.Dataset.from_list(review_rows(num_rows, seed=1))
        rows = rows.map(lambda batch: batch, batched=True, cache_file_name=str(tmp_path / f"{num_rows}.arrow"))
        tracemalloc.start()
        data = canonical_task_data(rows, rows.select(range(10)), "classification", "review", label_column="stars")
        texts = sum(len(batch) for batch in data.text_batches())
        labels = sum(1 for _ in column_values(data.train, "label"))
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        assert texts == labels == num_rows
    assert peaks[1] < 1.5 * peaks[0], peaks


def test_a_short_run_scores_a_sample_of_a_large_held_out_split(tmp_path, capsys):
    """Two steps of 8 rows do not score 2,500 held-out rows: a seeded sample of 2,000 (the floor), said in one
    status line; `--max_eval_samples` chooses; a run that trains on more rows than there are held out scores all."""
    folder = tmp_path / "reviews"
    folder.mkdir()
    write_reviews(folder / "train.csv", 300)
    write_reviews(folder / "test.csv", 2500, seed=1)
    run = [*LIN_OPTIONS, "--dataset", str(folder), "--text_column", "review", "--label_column", "stars",
           "--overwrite_output_dir", "--batch-size", "8"]  # fmt: skip
    _, printed = train_printed(capsys, *run, "--output_dir", str(tmp_path / "a"), "--max_steps", "2")
    assert (
        "[hf-attn] held-out: scoring 2000 of 2500 rows, a sample (seed 0): about as many as the run trains on (16)"
        in printed
    )
    record = json.loads((tmp_path / "a" / "hf_attn_training.json").read_text())
    assert record["settings"]["held-out examples"] == 2000
    _, printed = train_printed(capsys, *run, "--output_dir", str(tmp_path / "b"), "--max_steps", "2",
                               "--max_eval_samples", "100")  # fmt: skip
    assert "scoring 100 of 2500 rows, a sample (seed 0): --max_eval_samples" in printed
    assert json.loads((tmp_path / "b" / "hf_attn_training.json").read_text())["settings"]["held-out examples"] == 100
    _, printed = train_printed(capsys, *run, "--output_dir", str(tmp_path / "c"), "--num_train_epochs", "9")
    assert "[hf-attn] held-out: scoring" not in printed  # 2,700 training rows seen: all 2,500 held-out rows scored
    assert json.loads((tmp_path / "c" / "hf_attn_training.json").read_text())["settings"]["held-out examples"] == 2500


def _run_on_a_terminal(command: list[str], cwd: Path) -> str:
    """`command`'s output when its standard output and error are a terminal (a pseudo-terminal)."""
    leader, follower = pty.openpty()
    # A new pseudo-terminal is 0 columns wide, and tqdm draws a 0-column bar: give it a terminal's size.
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
    # Not the switches an in-process `hf-attn` run of another test left in this process (`hidden_progress_bars`).
    env = {name: value for name, value in os.environ.items() if "PROGRESS" not in name and "TQDM" not in name}
    process = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=follower, stderr=follower)
    os.close(follower)
    output = b""
    while True:
        ready, _, _ = select.select([leader], [], [], 300)
        if not ready:
            process.kill()
            break
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closed: the process has ended
            break
        if not chunk:
            break
        output += chunk
    process.wait(timeout=60)
    os.close(leader)
    assert process.returncode == 0, output.decode(errors="replace")[-3000:]
    return output.decode(errors="replace")


def test_each_long_stage_shows_its_progress_on_a_terminal_and_none_in_a_log(tmp_path):
    """On a terminal: reading ("Generating train split"), preparing, the vocabulary and encoding each show a bar
    with their row counts, and the evaluation its batches; into a log, none."""
    data = write_reviews(tmp_path / "reviews.csv", 600)
    env_command = [sys.executable, "-m", "hf_attn.cli", "train", *LIN_OPTIONS, "--dataset", str(data),
                   "--text_column", "review", "--label_column", "stars", "--max_steps", "2", "--save_strategy", "no",
                   "--report_to", "none"]  # fmt: skip
    shown = _run_on_a_terminal([*env_command, "--output_dir", str(tmp_path / "terminal")], tmp_path)
    bars = (r"Generating train split: .*600", r"Preparing the train split: 100%.*600/600",
            r"Vocabulary: 100%.*540/540", r"Encoding: 100%.*540/540", r"100%\|[^|]*\| 1/1")  # fmt: skip
    for bar in bars:
        assert re.search(bar, shown), (bar, shown[:3000])
    logged = subprocess.run([*env_command, "--output_dir", str(tmp_path / "log")], cwd=tmp_path, capture_output=True,
                            text=True, check=True)  # fmt: skip
    assert not re.search(r"Vocabulary|Encoding|Preparing|Generating|it/s", logged.stdout + logged.stderr)


def test_a_vocabulary_trained_apart_is_the_one_trained_here(tmp_path, capsys, monkeypatch):
    """From `APART_FROM_TEXTS` texts on (lowered here to 100), the vocabulary is trained in a spawned process of its
    own (`hf_attn.data.cache.train_apart`): the same vocabulary, the same run, as when trained in this one."""
    import hf_attn.data.cache

    data = write_reviews(tmp_path / "reviews.csv", 600)
    run = [*LIN_OPTIONS, "--dataset", str(data), "--text_column", "review", "--label_column", "stars", "--max_steps",
           "3"]  # fmt: skip
    calls = []
    real = hf_attn.data.cache.train_apart
    monkeypatch.setattr(hf_attn.data.cache, "train_apart", lambda *args: calls.append(args) or real(*args))
    results = {}
    for apart in (False, True):
        monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / f"cache-{apart}")
        monkeypatch.setattr(hf_attn.data.cache, "APART_FROM_TEXTS", 100 if apart else 10**9)
        metrics, _ = train_printed(capsys, *run, "--output_dir", str(tmp_path / f"run-{apart}"))
        vocabulary = json.loads((tmp_path / f"run-{apart}" / "tokenizer.json").read_text())["model"]["vocab"]
        results[apart] = (metrics["accuracy"], metrics["loss"], vocabulary)
    assert len(calls) == 1  # the second run, and only it, trained apart
    assert results[True][2] == results[False][2] and len(results[True][2]) > 50
    assert results[True][:2] == pytest.approx(results[False][:2])


def test_the_held_out_lines_come_in_the_order_the_rows_are_chosen(tmp_path, capsys):
    """A file without a held-out split: the rows held out are said first, then the sample of them that is scored."""
    write_reviews(tmp_path / "reviews.csv", 300)
    run = [*LIN_OPTIONS, "--dataset", str(tmp_path / "reviews.csv"), "--text_column", "review", "--label_column",
           "stars", "--output_dir", str(tmp_path / "out"), "--max_steps", "1", "--max_eval_samples", "5"]  # fmt: skip
    _, printed = train_printed(capsys, *run)
    held = printed.index(f"[hf-attn] no held-out split in {tmp_path / 'reviews.csv'}: holding out 30 training rows")
    assert held < printed.index("[hf-attn] held-out: scoring 5 of 30 rows, a sample (seed 0): --max_eval_samples")
