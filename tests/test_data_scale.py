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
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hf_attn.cli import main
from hf_attn.data.cache import cached_map, column_values
from hf_attn.data.examples import review_rows
from hf_attn.data.rows import prepare_task_data
from hf_attn.tokenization.kinds import WORD_LEVEL_TOKENIZER, train_tokenizer
from tests.commands.test_train_data import LIN, QUIET

from .test_distributed import free_port
from .test_hub import hub, run_client  # noqa: F401 (the loopback Hub fixture)

LIN_OPTIONS = ["--arch", "lin_self_attentive", *LIN]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A `datasets` cache of the test's own: what one run leaves there, the next finds."""
    folder = tmp_path / "datasets-cache"
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", folder)
    return folder


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


def test_workers_prepare_and_encode_the_same_rows_and_leave_tokenizers_parallel(tmp_path, monkeypatch):
    """`--preprocessing_num_workers 2`: the same canonical rows as one process, in the same order. datasets sets
    TOKENIZERS_PARALLELISM=false for its workers and leaves it in the C environment; `cached_map` puts it back, so
    that a vocabulary trained afterwards (and any child process) is not held to one thread."""
    monkeypatch.delenv("TOKENIZERS_PARALLELISM", raising=False)
    rows = [
        {"review": row["review"], "stars": row["stars"] if i % 50 else None} for i, row in enumerate(review_rows(400))
    ]
    split = datasets.Dataset.from_list(rows)
    one = prepare_task_data(split, split, "classification", "review", label_column="stars")
    two = prepare_task_data(split, split, "classification", "review", label_column="stars", workers=2)
    assert one.train.to_dict() == two.train.to_dict() and len(one.train) == 392
    assert one.dropped == two.dropped == {"train": {"no label": 8}, "held-out": {"no label": 8}}
    tokenizer = train_tokenizer(WORD_LEVEL_TOKENIZER, one.texts())
    encode = lambda batch: dict(tokenizer(batch["text"]))  # noqa: E731
    encoded, cached = cached_map(one.train, encode, "encoded-rows-2", "Encoding", workers=2)
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
        data = prepare_task_data(rows, rows.select(range(10)), "classification", "review", label_column="stars")
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
    bars = (r"Generating train split: .*600", r"Preparing the train split: 100%.*540/540",
            r"Vocabulary: 100%.*540/540", r"Encoding: 100%.*540/540", r"100%\|[^|]*\| 1/1")  # fmt: skip
    for bar in bars:
        assert re.search(bar, shown), (bar, shown[:3000])
    logged = subprocess.run([*env_command, "--output_dir", str(tmp_path / "log")], cwd=tmp_path, capture_output=True,
                            text=True, check=True)  # fmt: skip
    assert not re.search(r"Vocabulary|Encoding|Preparing|Generating|it/s", logged.stdout + logged.stderr)


def write_shards(folder: Path, rows: list[dict], shards: int) -> Path:
    """`rows` as `shards` Parquet files, in order (`part-0.parquet` holds the first)."""
    folder.mkdir(parents=True, exist_ok=True)
    size = -(-len(rows) // shards)
    for index in range(shards):
        part = rows[index * size : (index + 1) * size]
        pq.write_table(pa.Table.from_pylist(part), folder / f"part-{index}.parquet")
    return folder


def test_a_stream_of_local_shards_trains_with_labels_and_vocabulary_from_its_first_rows(tmp_path, capsys):
    """`--streaming` over 3 Parquet shards: held-out rows are the first 200, labels and vocabulary come from the next
    300 (`--tokenizer_sample_rows`); a later class those rows never had is skipped, not refused, and a word only
    later rows hold is unknown. The model still learns the task (5 classes, chance 0.2; measured 1.0)."""
    rows = [{"text": row["review"], "label": f"{row['stars']} stars"} for row in review_rows(1700, seed=0)]
    rows[1000:1010] = [{"text": "an utterly zyzzyvaesque night .", "label": "6 stars"}] * 10
    folder = write_shards(tmp_path / "shards", rows, 3)
    metrics, printed = train_printed(
        capsys, *LIN_OPTIONS, "--dataset", str(folder), "--dataset_format", "parquet", "--streaming",
        "--max_steps", "150", "--batch-size", "16", "--learning_rate", "2e-2", "--tokenizer_sample_rows", "300",
        "--max_eval_samples", "200", "--output_dir", str(tmp_path / "out"),
    )  # fmt: skip
    assert "[hf-attn] streaming: no held-out split; holding out the first 200 training rows" in printed
    assert "vocabulary and labels from the first 300 training rows (--tokenizer_sample_rows)" in printed
    assert "[hf-attn] data: streamed;" in printed
    config = json.loads((tmp_path / "out" / "config.json").read_text())
    assert sorted(config["id2label"].values()) == [f"{stars} stars" for stars in range(1, 6)]
    vocabulary = json.loads((tmp_path / "out" / "tokenizer.json").read_text())["model"]["vocab"]
    assert "zyzzyvaesque" not in vocabulary and "superb" in vocabulary
    record = json.loads((tmp_path / "out" / "hf_attn_training.json").read_text())
    assert record["settings"]["training examples"] == "streamed" and record["settings"]["steps"] == 150
    print(f"\nstreamed accuracy {metrics['accuracy']:.4f}")
    assert metrics["accuracy"] >= 0.7, metrics


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ([], "--streaming reads the data as training asks for it, with no length to count epochs by: give"),
        (["--max_steps", "2", "--label_separator", " "],
         "--streaming: a multi_label task needs its whole training split ahead (the labels sorted by their"),
    ],
)  # fmt: skip
def test_a_stream_without_what_it_needs_is_refused_in_one_line(tmp_path, capsys, arguments, message):
    folder = write_shards(tmp_path / "shards", [{"text": "a b", "label": "x y"}] * 20, 2)
    with pytest.raises(SystemExit) as stopped:
        main(["train", *LIN_OPTIONS, "--dataset", str(folder), "--dataset_format", "parquet", "--streaming",
              "--output_dir", str(tmp_path / "out"), *arguments, *QUIET])  # fmt: skip
    line = str(stopped.value.code)  # `run_command` ends a user's mistake with its one line
    assert "\n" not in line and line.startswith("hf-attn train: ") and message in line, line


def test_a_hub_dataset_of_several_parquet_shards_streams_from_the_hub(hub, tmp_path):  # noqa: F811
    """A dataset pushed with 4 training shards and a validation split trains with `--streaming`: every shard is
    read from the Hub server, nothing is downloaded to the local cache, and the validation split is the held-out."""
    body = """
        import os
        from datasets import Dataset, DatasetDict
        from hf_attn.cli import main
        from hf_attn.data.examples import review_rows
        rows = [{"text": row["review"], "label": str(row["stars"])} for row in review_rows(1200, seed=0)]
        splits = {"train": Dataset.from_list(rows[:1000]), "validation": Dataset.from_list(rows[1000:])}
        DatasetDict(splits).push_to_hub(ARGS["repo"], num_shards={"train": 4, "validation": 1})
        main(["train", "--arch", "lin_self_attentive", "--dataset", ARGS["repo"], "--streaming", "--max_steps", "20",
              "--batch-size", "16", "--output_dir", "out", "--no-progress", "--save_strategy", "no", "--report_to",
              "none", "--tokenizer_sample_rows", "300", "--config", "embedding_size=16", "hidden_size=16",
              "attention_hidden_size=16", "attention_hops=2", "classifier_hidden_size=16"])
        files = [str(path) for path in Path(os.environ["HF_HOME"]).rglob("*") if path.is_file()]
        report(files=files, record=json.loads(Path("out/hf_attn_training.json").read_text()))
    """
    result = run_client(hub, body, tmp_path / "client", repo="alice/reviews-stream")
    read = {path.rsplit("/", 1)[-1] for method, path in hub.state.requests if method == "GET" and ".parquet" in path}
    assert read == {f"train-0000{i}-of-00004.parquet" for i in range(4)} | {"validation-00000-of-00001.parquet"}
    assert not [path for path in result["files"] if path.endswith((".parquet", ".arrow"))], result["files"]
    record = result["record"]
    assert record["dataset"]["description"] == "columns text, label; held-out: validation"
    assert record["settings"]["training examples"] == "streamed" and record["settings"]["steps"] == 20


STREAM_SCRIPT = """
import json
from hf_attn.commands.train import train
result = train("out", arch="lin_self_attentive", dataset="shards", dataset_format="parquet", streaming=True,
               max_steps=4, per_device_train_batch_size=8, tokenizer_sample_rows=256, max_eval_samples=16,
               disable_tqdm=True, save_strategy="no", report_to="none",
               config={"embedding_size": 8, "hidden_size": 8, "attention_hidden_size": 8, "attention_hops": 2,
                       "classifier_hidden_size": 8})
trainer, tokenizer = result.trainer, result.tokenizer
seen = [tokenizer.convert_ids_to_tokens(row[0]) for batch in trainer.get_train_dataloader()
        for row in batch["input_ids"].tolist()]
with open(f"seen-{trainer.args.process_index}.json", "w") as handle:
    json.dump(seen, handle)
"""


def test_two_processes_each_read_their_own_shards_of_a_stream(tmp_path):
    """`accelerate launch --num_processes 2` over 4 shards whose rows begin with their shard's marker word: the
    training loader of rank 0 reads shards 0 and 2, rank 1's shards 1 and 3, every training row once (the first 16
    rows, held out, never), and both ranks train on one vocabulary."""
    words = ["the", "food", "was", "good", "bad", "fine", "great", "awful", "place", "service", "staff"]
    rows = [{"text": f"marker{shard} row{i} " + " ".join(words[(i + k) % len(words)] for k in range(5)),
             "label": str(i % 2)} for shard in range(4) for i in range(64)]  # fmt: skip
    write_shards(tmp_path / "shards", rows, 4)
    (tmp_path / "run.py").write_text(STREAM_SCRIPT)
    accelerate = Path(sys.executable).with_name("accelerate")
    command = [str(accelerate), "launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
               "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", str(free_port()),
               "run.py"]  # fmt: skip
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf_home"), "OMP_NUM_THREADS": "1", "ACCELERATE_CONFIG_FILE": ""}
    result = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, check=False)
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-4000:]
    seen = [json.loads((tmp_path / f"seen-{rank}.json").read_text()) for rank in (0, 1)]
    assert sorted(set(seen[0])) == ["marker0", "marker2"] and sorted(set(seen[1])) == ["marker1", "marker3"], seen
    assert (len(seen[0]), len(seen[1])) == (64 + 48, 64 + 64)  # rank 0's shard 0 lost its 16 held-out rows
    hashes = set(re.findall(r"rank [01]/2: 4 steps, .*vocabulary ([0-9a-f]{12})", log))
    assert len(hashes) == 1, log[-3000:]


def test_a_vocabulary_trained_apart_is_the_one_trained_here(tmp_path, capsys, monkeypatch):
    """From `APART_FROM_TEXTS` texts on (lowered here to 100), the vocabulary is trained in a spawned process of its
    own (`hf_attn.data.cache.train_apart`): the same vocabulary, the same run, as when trained in this one."""
    import hf_attn.commands.train

    data = write_reviews(tmp_path / "reviews.csv", 600)
    run = [*LIN_OPTIONS, "--dataset", str(data), "--text_column", "review", "--label_column", "stars", "--max_steps",
           "3"]  # fmt: skip
    calls = []
    real = hf_attn.commands.train.train_apart
    monkeypatch.setattr(hf_attn.commands.train, "train_apart", lambda *args: calls.append(args) or real(*args))
    results = {}
    for apart in (False, True):
        monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / f"cache-{apart}")
        monkeypatch.setattr(hf_attn.commands.train, "APART_FROM_TEXTS", 100 if apart else 10**9)
        metrics, _ = train_printed(capsys, *run, "--output_dir", str(tmp_path / f"run-{apart}"))
        vocabulary = json.loads((tmp_path / f"run-{apart}" / "tokenizer.json").read_text())["model"]["vocab"]
        results[apart] = (metrics["accuracy"], metrics["loss"], vocabulary)
    assert len(calls) == 1  # the second run, and only it, trained apart
    assert results[True][2] == results[False][2] and len(results[True][2]) > 50
    assert results[True][:2] == pytest.approx(results[False][:2])
