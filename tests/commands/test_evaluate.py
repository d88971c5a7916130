"""`hf-attn evaluate` (`hf_attn.commands.evaluate`) through the console script, as a user runs it after `hf-attn
train`: it reads what the run set that changes what the model reads (`--max_length`, the columns its tokenizer reads),
names one file once, and draws a few-shot model's held-out episodes at the N, K and Q it is asked for where the model
allows it."""

from __future__ import annotations

import json
import subprocess

import pytest

from hf_attn.tasks.examples import write_example_files
from tests.helpers import console_script, one_line_faults, write_fewrel

pytestmark = pytest.mark.xdist_group("evaluate_command")

QUICK = ["--no-progress", "--save_strategy", "no", "--report_to", "none", "--num_train_epochs", "1"]


def hf_attn(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([*console_script(), *argv], capture_output=True, text=True, timeout=600)


def trained(result: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert result.returncode == 0, result.stderr[-2000:]
    return result


def evaluated(tmp_path, *argv: str) -> dict:
    """`hf-attn evaluate ARGV`'s metrics (the JSON it writes with `--output_file`), after checking that it ran and
    that what it printed is that JSON alone (rounded to 4 places)."""
    output = tmp_path / "metrics.json"
    result = hf_attn("evaluate", *argv, "--output_file", str(output))
    assert result.returncode == 0, result.stderr[-2000:]
    metrics = json.loads(output.read_text())
    assert json.loads(result.stdout) == {key: round(value, 4) for key, value in metrics.items()}, result.stdout
    return metrics


@pytest.fixture(scope="module")
def example_files(tmp_path_factory):
    return write_example_files(tmp_path_factory.mktemp("data"), num_rows=120)


def test_a_model_trained_on_a_concept_column_is_evaluated_with_that_column(example_files, tmp_path):
    """STCKA trained with `--concept_column` is scored with the run's column unless another is named; a file without
    it is refused in one line that names the option, not the tokenizer's Python keyword."""
    snippets = example_files / "snippets"
    run = tmp_path / "stcka"
    training = trained(hf_attn("train", "--arch", "stcka", "--dataset", str(snippets / "train.tsv"), "--eval_dataset",
                    str(snippets / "test.tsv"), "--column_names", "text", "concepts", "label", "--concept_column",
                    "concepts", "--output_dir", str(run), *QUICK, "--config", "embedding_size=8",
                    "hidden_size=8"))  # fmt: skip
    # The card's picture needs the example's concepts, which only the data holds: the run says so naming its own
    # folder, never the staging folder the save is written in first.
    assert f"[hf-attn] no attention picture for {run}: ValueError" in training.stderr
    assert ".hf_attn-saving" not in training.stdout + training.stderr
    reported = json.loads((run / "hf_attn_training.json").read_text())
    assert reported["evaluation options"] == {"concept_column": "concepts"}
    common = ["--dataset", str(snippets / "test.tsv"), "--column_names", "text", "concepts", "label"]
    for named in ([], ["--concept_column", "concepts"]):
        metrics = evaluated(tmp_path, str(run), *common, *named)  # printing the JSON alone
        assert metrics["examples"] == len((snippets / "test.tsv").read_text().splitlines())
        assert abs(metrics["accuracy"] - reported["metrics"]["accuracy"]) < 1e-6
    (tmp_path / "bare.csv").write_text("text,label\nwhat do you think of zokaben,business\n")
    refused = hf_attn("evaluate", str(run), "--dataset", str(tmp_path / "bare.csv"))
    assert not one_line_faults(refused, r"--concept_column 'concepts' .* not a column of the evaluation data"), (
        refused.stderr
    )
    # An option that only training reads, and another architecture's, are refused, each in one line.
    for option, message in ((["--concepts", str(snippets / "train.tsv")], "--concepts: a training option"),
                            (["--no_concepts"], "--no_concepts: a training option")):  # fmt: skip
        assert not one_line_faults(hf_attn("evaluate", str(run), *common, *option), message)


def test_evaluate_truncates_as_the_training_run_did(example_files, tmp_path):
    """A document model trained with `--max_length` (HAN: a budget of words per document) reads the same words at
    evaluation: the accuracy `hf-attn evaluate` gives on the held-out file is the run's own, and no
    too-long-sequence warning is printed."""
    reviews = example_files / "reviews.csv"
    run = tmp_path / "han"
    trained(hf_attn("train", "--arch", "han", "--dataset", str(reviews), "--text_column", "review", "--label_column",
                    "stars", "--eval_dataset", str(reviews), "--max_length", "6", "--output_dir", str(run), *QUICK,
                    "--learning_rate", "2e-2", "--config", "embedding_size=8", "word_hidden_size=8",
                    "sentence_hidden_size=8", "word_attention_size=8", "sentence_attention_size=8"))  # fmt: skip
    record = json.loads((run / "hf_attn_training.json").read_text())
    assert record["settings"]["max length"] == 6 and record["evaluation options"] == {"max_length": 6}
    common = ["evaluate", str(run), "--dataset", str(reviews), "--text_column", "review", "--label_column", "stars"]
    output = tmp_path / "metrics.json"
    reused = hf_attn(*common, "--output_file", str(output))
    assert reused.returncode == 0, reused.stderr[-2000:]
    assert "longer than the specified maximum" not in reused.stderr
    reused_metrics = json.loads(output.read_text())
    assert abs(reused_metrics["accuracy"] - record["metrics"]["accuracy"]) < 1e-6
    # Given again, the limit is the user's, and it reaches the document tokenizer: one word a review reads otherwise.
    shorter = hf_attn(*common, "--max_length", "1", "--output_file", str(output))
    assert shorter.returncode == 0, shorter.stderr[-2000:]
    assert json.loads(output.read_text())["loss"] != reused_metrics["loss"]


def test_one_evaluation_file_is_one_split_in_every_message(example_files, tmp_path):
    """A multi-label model scored on one file that holds labels it never saw says so once, naming the evaluation
    split, never a training split."""
    topics = example_files / "topics.jsonl"
    rows = [json.loads(line) for line in topics.read_text().splitlines()]
    (tmp_path / "train.jsonl").write_text(
        "".join(json.dumps({"text": row["text"], "labels": row["labels"][:1]}) + "\n" for row in rows)
    )
    run = tmp_path / "labels"
    small = ["embedding_size=8", "hidden_size=8", "linear_sizes=[8]"]
    trained(hf_attn("train", "--arch", "attention_xml", "--dataset", str(tmp_path / "train.jsonl"), "--output_dir",
                    str(run), *QUICK, "--config", *small))  # fmt: skip
    (tmp_path / "unseen.jsonl").write_text(
        "".join(json.dumps({"text": row["text"], "labels": [*row["labels"], "weather"]}) + "\n" for row in rows[:20])
    )
    result = hf_attn("evaluate", str(run), "--dataset", str(tmp_path / "unseen.jsonl"))
    assert result.returncode == 0, result.stderr[-2000:]
    seen = {row["labels"][0] for row in rows}
    unseen = sum(label not in seen for row in rows[:20] for label in [*row["labels"], "weather"])
    said = [line for line in (result.stdout + result.stderr).splitlines() if "left out" in line]
    assert said == [f"[hf-attn] evaluation split: left out {unseen} labels that are not in the model's labels"]


def test_few_shot_evaluation_takes_n_k_and_q_where_the_model_allows_them(tmp_path):
    """HAPN is scored at another N, K and Q than it trained with (its prototypes are means over any K); Proto-HATT's
    feature attention spans exactly its K shots, so another K is refused in one line; a classifier has no episodes."""
    write_fewrel(tmp_path / "train_wiki.json", list(range(8)), 12, seed=0)
    write_fewrel(tmp_path / "val_wiki.json", list(range(8, 14)), 12, seed=1)
    small = ["hidden_size=16", "word_embedding_size=8", "max_sentence_length=20", "num_ways=3", "num_shots=3",
             "num_queries=2"]  # fmt: skip
    runs = {}
    for arch in ("hapn", "proto_hatt"):
        runs[arch] = tmp_path / arch
        trained(hf_attn("train", "--arch", arch, "--dataset", str(tmp_path / "train_wiki.json"), "--eval_dataset",
                        str(tmp_path / "val_wiki.json"), "--output_dir", str(runs[arch]), *QUICK, "--eval_episodes",
                        "10", "--config", *small))  # fmt: skip
    held_out = ["--dataset", str(tmp_path / "val_wiki.json"), "--eval_episodes", "10"]
    metrics = evaluated(tmp_path, str(runs["hapn"]), *held_out, "--n_way", "5", "--k_shot", "4", "--n_query", "1")
    assert metrics["episodes"] == 10 and 0.0 <= metrics["accuracy"] <= 1.0
    assert (metrics["n_way"], metrics["k_shot"], metrics["n_query"]) == (5, 4, 1)
    assert not one_line_faults(
        hf_attn("evaluate", str(runs["proto_hatt"]), *held_out, "--k_shot", "4"),
        r"--k_shot 4: ProtoHatt\w+'s attention is tied to the K = 3 shots",
    )
    assert evaluated(tmp_path, str(runs["proto_hatt"]), *held_out, "--k_shot", "3", "--n_way", "4")["n_way"] == 4
    assert not one_line_faults(hf_attn("evaluate", str(runs["hapn"]), *held_out, "--n_way", "1"), "--n_way 1: give 2")


def test_a_model_folder_saved_before_loads_and_is_scored_as_it_was(tmp_path):
    """`tests/saved_folders/lin_self_attentive` was written by `hf-attn train` (hf_attn 0.1.0) and scored then by
    `hf-attn evaluate` on `held_out.csv` (`lin_self_attentive.evaluation.json`): today's code loads the same folder,
    scores the same rows to the same loss and accuracy, and writes its card from its training record."""
    import shutil

    from hf_attn.cards import render_model_card
    from hf_attn.commands.evaluate import evaluate
    from hf_attn.options.arguments import HfAttnArguments
    from tests.helpers import REPO_ROOT

    saved = REPO_ROOT / "tests" / "saved_folders"
    folder = shutil.copytree(saved / "lin_self_attentive", tmp_path / "lin_self_attentive")
    options = HfAttnArguments(dataset=str(saved / "held_out.csv"), text_column="review", label_column="stars")
    metrics = evaluate(str(folder), options)
    expected = json.loads((saved / "lin_self_attentive.evaluation.json").read_text())
    assert metrics["examples"] == expected["examples"] and metrics["accuracy"] == expected["accuracy"]
    assert metrics["loss"] == pytest.approx(expected["loss"], abs=1e-5)
    card = render_model_card(folder).content
    assert "| training examples | 120 |" in card and "| accuracy | 0.5000 |" in card


def test_a_translator_is_scored_on_its_generations_with_the_beams_asked(example_files, tmp_path, monkeypatch):
    """A head that generates is scored as training scores it (`TaskShape.ready`: `generate()`'s outputs, with the
    beams `--num_beams` asks for, else the model's: 4, the seq2seq shape's default its training saved); a classifier's
    beams are refused elsewhere (`tests/utils/test_inputs.py`). The console script trains; `evaluate` runs in this
    process, where `generate` is watched (called through) for the beams each held-out batch is decoded with."""
    from transformers import GenerationMixin

    from hf_attn.commands.evaluate import main as evaluate_main

    run = tmp_path / "transformer"
    columns = ["--column_names", "source", "target", "--text_column", "source", "--target_column", "target"]
    tiny = ["d_model=16", "encoder_layers=1", "decoder_layers=1", "encoder_attention_heads=2",
            "decoder_attention_heads=2", "encoder_ffn_dim=32", "decoder_ffn_dim=32"]  # fmt: skip
    trained(hf_attn("train", "--arch", "vaswani_transformer", "--dataset", str(example_files / "pairs.tsv"), *columns,
                    "--output_dir", str(run), *QUICK, "--max_steps", "2", "--config", *tiny))  # fmt: skip
    generate, beams_used = GenerationMixin.generate, []

    def watched(model, *args, **kwargs):
        beams_used.append(kwargs.get("num_beams", model.generation_config.num_beams))
        return generate(model, *args, **kwargs)

    monkeypatch.setattr(GenerationMixin, "generate", watched)
    for asked, beams in ((), 4), (("--num_beams", "1"), 1), (("--num_beams", "3"), 3):
        beams_used.clear()
        output = tmp_path / "metrics.json"
        evaluate_main([str(run), "--dataset", str(example_files / "pairs.tsv"), *columns, *asked,
                       "--output_file", str(output)])  # fmt: skip
        metrics = json.loads(output.read_text())
        assert {"bleu", "exact_match"} <= metrics.keys() and metrics["examples"] == 120, metrics
        assert beams_used and set(beams_used) == {beams}, (asked, beams_used)
