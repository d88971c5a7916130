"""A run's fitting step (`hf_attn.training.fitting`), through the command line: an architecture's first stage
(ELMo's biLM), word vectors copied into the model, Trainer flags (bf16, accumulation, resuming, evaluation steps,
TensorBoard), and the training record the card is written from."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from hf_attn.cli import main
from hf_attn.registry.table import get_architecture
from tests.training.test_preparation import LIN, train_cli


def test_a_plain_text_file_trains_the_elmo_bilm(learnable, tmp_path, capsys):
    """Blank lines are dropped and counted; held-out perplexity of the forward and backward LMs. Measured 5.30 /
    5.63, where the held-out unigram perplexity is 68 and the vocabulary has 106 words."""
    metrics = train_cli(
        capsys, "--arch", "elmo", "--dataset", str(learnable / "corpus.txt"), "--output_dir", str(tmp_path / "elmo"),
        "--num_train_epochs", "4", "--learning_rate", "5e-3", "--config", "character_embedding_size=8",
        "filters=[[1,16],[2,16],[3,32]]", "projection_dim=32", "hidden_size=64", "num_hidden_layers=2", "dropout=0.0",
    )  # fmt: skip
    assert re.search(r"train split: dropped \d+ of \d+ rows \(empty text: \d+\)", metrics["printed"])
    assert metrics["perplexity"] <= 8.0, metrics
    saved = json.loads((tmp_path / "elmo" / "config.json").read_text())
    assert saved["architectures"] == [get_architecture("elmo").pretraining_head]


def write_glove(path, words: list[str], dimension: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    vectors = {word: rng.normal(size=dimension).astype(np.float32) for word in words}
    path.write_text("".join(f"{w} {' '.join(f'{x:.6f}' for x in v)}\n" for w, v in vectors.items()))
    return {word: np.array([float(f"{x:.6f}") for x in v], dtype=np.float32) for word, v in vectors.items()}


@pytest.mark.parametrize("freeze", [False, True])
def test_word_vectors_initialise_covered_rows_and_freeze_keeps_them(files, tmp_path, capsys, freeze):
    # Words of the reviews, one the data never has, and a capitalised one (the tokenizer lower-cases).
    vectors = write_glove(tmp_path / "glove.txt", ["superb", "Awful", "food", "zebra", "the"], dimension=16)
    output = tmp_path / "model"
    metrics = train_cli(
        capsys, "--dataset", str(files / "reviews.csv"), "--text_column", "review", "--label_column", "stars",
        "--output_dir", str(output), "--max_steps", "3", "--learning_rate", "0.1", "--word_vectors",
        str(tmp_path / "glove.txt"), *(["--freeze_embeddings"] if freeze else []), *LIN,
    )  # fmt: skip
    assert re.search(r"word vectors glove.txt: 4 of \d+ vocabulary words covered", metrics["printed"])
    vocabulary = json.loads((output / "tokenizer.json").read_text())["model"]["vocab"]
    weights = load_file(output / "model.safetensors")
    embedding = next(value for key, value in weights.items() if "embed" in key and value.shape[-1] == 16)
    for word in ("superb", "awful", "food", "the"):
        row = embedding[vocabulary[word]].numpy()
        source = vectors["Awful" if word == "awful" else word]
        assert np.array_equal(row, source) == freeze, word  # trained rows moved off the file's vectors
    record = json.loads((output / "hf_attn_training.json").read_text())
    assert "glove.txt: 4 of" in record["settings"]["word vectors"]
    assert ("frozen" in record["settings"]["word vectors"]) == freeze
    # Trained, the words the file does not cover start at its vectors' scale (Kim 2014), not the model's 0.02;
    # frozen, they keep the model's (fixed noise as loud as a real word would drown the covered ones).
    covered = np.stack([vectors[word] for word in ("superb", "Awful", "food", "the")])
    from transformers import AutoTokenizer

    specials = set(AutoTokenizer.from_pretrained(output).all_special_tokens)
    others = [index for word, index in vocabulary.items()
              if word not in specials | {"superb", "awful", "food", "the"}]  # fmt: skip
    spread = embedding[others].std().item()
    if freeze:
        assert spread < 0.1 * covered.std(), (spread, covered.std())
    else:
        assert 0.5 * covered.std() < spread < 1.5 * covered.std(), (spread, covered.std())


def test_frozen_vectors_covering_part_of_the_vocabulary_train_through_the_console_script(tmp_path):
    """`--freeze_embeddings` with a vectors file that covers 176 of 323 words: the 5 cue words' classes are read
    past 16 distractor words a text, most of them uncovered. Frozen at the vectors' scale, the uncovered rows were
    fixed noise as loud as the cue words: held-out accuracy 0.82 and 0.65 (seeds 0, 1; 0.87, 0.82 for 2, 3), where
    the model's scale gives 0.93 and 0.95 (0.88, 0.98), as before the variance matching."""
    import csv
    import random
    import subprocess

    from hf_attn.data.synthetic import cue_word_sentiment
    from tests.helpers import console_script

    rng, vectors_rng = random.Random(0), np.random.default_rng(0)
    distractors = [f"w{index}" for index in range(220)]
    with (tmp_path / "reviews.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["label", "text"])
        for row in cue_word_sentiment(600, seed=0):
            tokens = row["text"].split()
            for _ in range(16):
                tokens.insert(rng.randint(0, len(tokens)), rng.choice(distractors))
            writer.writerow([row["label"], " ".join(tokens)])
    with (tmp_path / "reviews.csv").open() as handle:
        words = sorted({word for row in csv.DictReader(handle) for word in row["text"].split()})
    covered = [word for word in words if not word.startswith("w") or vectors_rng.random() < 0.4]
    assert (len(covered), len(words)) == (176, 323)
    with (tmp_path / "glove.txt").open("w") as handle:  # GloVe's text format at GloVe's scale (std about 0.4)
        for word in covered:
            handle.write(word + " " + " ".join(f"{value:.5f}" for value in vectors_rng.normal(0, 0.4, 50)) + "\n")
    accuracies = []
    for seed in (0, 1):
        command = [*console_script(), "train", "--dataset", str(tmp_path / "reviews.csv"), "--output_dir",
                   str(tmp_path / f"lin{seed}"), "--num_train_epochs", "12", "--learning_rate", "2e-2",
                   "--word_vectors", str(tmp_path / "glove.txt"), "--freeze_embeddings", "--seed", str(seed),
                   "--no-progress", *LIN, "embedding_size=50"]  # fmt: skip
        result = subprocess.run(command, capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, result.stderr[-2000:]
        assert "glove.txt: 176 of 323 vocabulary words covered (54.5%), 50-d, frozen" in result.stdout
        accuracies.append(json.loads(result.stdout[result.stdout.rindex("\n{") :])["accuracy"])
    assert np.mean(accuracies) >= 0.9, accuracies


def test_word_vectors_of_another_width_than_the_embedding_are_refused(files, tmp_path):
    write_glove(tmp_path / "g.txt", ["cat"], 16)
    with pytest.raises(SystemExit, match="16-d vectors but the model's word embedding is 8-d"):
        main(["train", "--dataset", str(files / "reviews.csv"), "--text_column", "review", "--label_column", "stars",
              "--word_vectors", str(tmp_path / "g.txt"), "--output_dir", str(tmp_path / "x"), "--config",
              "embedding_size=8"])  # fmt: skip


def test_bf16_gradient_accumulation_and_resume_through_the_command_line(files, tmp_path, capsys):
    """A run stopped after its step-2 checkpoint and resumed (`--resume_from_checkpoint true`) ends with the weights
    of an uninterrupted run, under bf16 autocast with 2 accumulation steps per optimizer step."""
    common = ["--dataset", str(files / "reviews.csv"), "--text_column", "review", "--label_column", "stars",
              "--bf16", "--gradient_accumulation_steps", "2", "--per_device_train_batch_size", "8",
              "--lr_scheduler_type", "constant", "--seed", "5", *LIN]  # fmt: skip
    train_cli(capsys, *common, "--output_dir", str(tmp_path / "straight"), "--max_steps", "4")
    record = json.loads((tmp_path / "straight" / "hf_attn_training.json").read_text())["settings"]
    assert record["precision"] == "bf16" and record["gradient accumulation steps"] == 2 and record["steps"] == 4
    stopped = tmp_path / "stopped"
    main(["train", *common, "--output_dir", str(stopped), "--max_steps", "2", "--save_steps", "2",
          "--no-progress", "--logging_steps", "1000"])  # fmt: skip
    assert (stopped / "checkpoint-2").is_dir()
    main(["train", *common, "--output_dir", str(stopped), "--max_steps", "4", "--resume_from_checkpoint", "true",
          "--no-progress", "--save_strategy", "no", "--logging_steps", "1000"])  # fmt: skip
    capsys.readouterr()
    straight, resumed = (
        load_file(tmp_path / "straight" / "model.safetensors"),
        load_file(stopped / "model.safetensors"),
    )
    assert straight.keys() == resumed.keys()
    for name, weight in straight.items():
        assert torch.equal(weight, resumed[name]), name


def test_eval_strategy_and_report_to_tensorboard_through_the_command_line(files, tmp_path, capsys):
    """`--eval_strategy steps` scores the held-out split every `--eval_steps`; `--report_to tensorboard` writes
    the training loss and those held-out metrics as TensorBoard scalars under output_dir/runs."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    output = tmp_path / "lin"
    main(["train", "--arch", "lin_self_attentive", "--dataset", str(files / "reviews.csv"), "--text_column",
          "review", "--label_column", "stars", "--output_dir", str(output), "--max_steps", "30", "--eval_strategy",
          "steps", "--eval_steps", "10", "--logging_steps", "10", "--report_to", "tensorboard", "--no-progress",
          "--save_strategy", "no", *LIN])  # fmt: skip
    capsys.readouterr()
    (run,) = (output / "runs").iterdir()
    events = EventAccumulator(str(run))
    events.Reload()
    # Every 10 steps, then the pipeline's final held-out score (the one it prints and records).
    assert [event.step for event in events.Scalars("eval/accuracy")] == [10, 20, 30, 30]
    assert [event.step for event in events.Scalars("train/loss")] == [10, 20, 30]
    record = json.loads((output / "hf_attn_training.json").read_text())
    assert events.Scalars("eval/accuracy")[-1].value == pytest.approx(record["metrics"]["accuracy"], abs=1e-4)
