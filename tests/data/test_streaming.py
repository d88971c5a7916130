"""Data larger than memory, read as a stream (`hf_attn.data.streaming`): local shards, the loopback Hub and two
processes, with labels and vocabulary from the first rows, and one line for what a stream lacks."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hf_attn.cli import main
from hf_attn.data.examples import review_rows
from tests.data.test_cache import LIN_OPTIONS, train_printed
from tests.test_distributed import free_port
from tests.test_hub import run_client
from tests.training.test_preparation import QUIET


def write_shards(folder: Path, rows: list[dict], shards: int) -> Path:
    """`rows` as `shards` Parquet files, in order (`part-0.parquet` holds the first)."""
    folder.mkdir(parents=True, exist_ok=True)
    size = -(-len(rows) // shards)
    for index in range(shards):
        part = rows[index * size : (index + 1) * size]
        pq.write_table(pa.Table.from_pylist(part), folder / f"part-{index}.parquet")
    return folder


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


def test_a_hub_dataset_of_several_parquet_shards_streams_from_the_hub(hub, tmp_path):
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
