"""Training on your own data, from the command line alone: files in real datasets' layouts (written by
`hf_attn.tasks.examples`), every architecture's task shape, word vectors, Trainer flags, recipes, bad inputs."""

from __future__ import annotations

import csv
import json
import re

import pytest
from datasets import ClassLabel, Dataset, Features, Value

from hf_attn.cli import main
from hf_attn.data import cue_word_pairs, topic_labels, toy_translation
from hf_attn.recipes import list_recipes, load_recipe, paper_number
from hf_attn.registry.table import get_architecture
from tests.helpers import REPO_ROOT

QUIET = ["--no-progress", "--save_strategy", "no", "--logging_steps", "1000", "--report_to", "none"]
LIN = ["--config", "embedding_size=16", "hidden_size=16", "attention_hidden_size=16", "attention_hops=2",
       "classifier_hidden_size=16", "hidden_dropout_prob=0", "penalty_coefficient=0"]  # fmt: skip
HAN = ["--config", "embedding_size=16", "word_hidden_size=16", "sentence_hidden_size=16", "word_attention_size=16",
       "sentence_attention_size=16"]  # fmt: skip


def train_cli(capsys, *arguments: str) -> dict:
    """`hf-attn train ARGUMENTS`; the metrics it prints, and everything it printed under `"printed"`."""
    main(["train", *arguments, *QUIET])
    printed = capsys.readouterr().out
    metrics = json.loads(printed[printed.rindex("\n{") :])
    return {**metrics, "printed": printed}


@pytest.mark.parametrize(("arch", "config", "bar"), [("lin_self_attentive", LIN, 0.7), ("han", HAN, 0.9)])
def test_a_five_class_review_csv_trains_lin_and_han(files, tmp_path, capsys, arch, config, bar):
    """Star ratings 1-5 set by one cue word: chance is 0.2."""
    metrics = train_cli(
        capsys, "--arch", arch, "--dataset", str(files / "reviews.csv"), "--text_column", "review",
        "--label_column", "stars", "--output_dir", str(tmp_path / arch), "--num_train_epochs", "8",
        "--learning_rate", "2e-2", *config,
    )  # fmt: skip
    assert metrics["accuracy"] >= bar, metrics
    saved = json.loads((tmp_path / arch / "config.json").read_text())
    assert saved["id2label"] == {str(i): str(i + 1) for i in range(5)}  # labels collected from the data, in order
    main(["predict", str(tmp_path / arch), "we paid at the counter . the food was superb ."])
    printed = capsys.readouterr().out
    assert '"label": "5"' in printed and re.search(r"attends to: superb", printed), printed


def test_an_snli_jsonl_drops_and_counts_unlabelled_pairs_and_trains_pair_heads(files, tmp_path, capsys):
    """label -1 (no gold label) rows are dropped and reported; Lin's pair head trains on the rest."""
    metrics = train_cli(
        capsys, "--arch", "lin_self_attentive", "--head", "LinSelfAttentiveForPairClassification",
        "--dataset", str(files / "snli.jsonl"), "--text_column", "premise", "--text_pair_column", "hypothesis",
        "--eval_dataset", str(files / "snli.jsonl"), "--output_dir", str(tmp_path / "lin"), "--max_steps", "4",
        *LIN,
    )  # fmt: skip
    assert "train split: dropped 30 of 600 rows (no label: 30)" in metrics["printed"]
    assert "held-out split: dropped 30 of 600 rows (no label: 30)" in metrics["printed"]
    record = json.loads((tmp_path / "lin" / "hf_attn_training.json").read_text())
    assert record["settings"]["dropped rows"] == {"train": {"no label": 30}, "held-out": {"no label": 30}}
    assert record["settings"]["training examples"] == 570


# Each file format on a learnable task written in it (`learnable`, tests/training/conftest.py), from the command line
# alone, to a stated bar. Measured values (seeds 0 / 1) in comments.
def predict_cli(capsys, model, *texts: str, pair: tuple[str, ...] = ()) -> list[dict]:
    main(["predict", str(model), *texts, *(["--pair", *pair] if pair else []), "--json"])
    return json.loads(capsys.readouterr().out)


PAIR_HEADS = {
    # The paper's pair head: each sentence encoded alone, then F_r = F_h ⊙ F_p. Measured 0.98 / 0.81.
    "lin_self_attentive": (["--head", "LinSelfAttentiveForPairClassification", "--num_train_epochs", "20",
                            "--learning_rate", "5e-3", "--per_device_train_batch_size", "16",
                            "--config", "embedding_size=32", "hidden_size=32", "attention_hidden_size=32",
                            "attention_hops=2", "classifier_hidden_size=32", "hidden_dropout_prob=0",
                            "penalty_coefficient=0"], 0.7),
    # Deep fusion: the hypothesis's LSTMN reads the premise's tape token by token. Measured 1.0 / 1.0.
    "lstmn": (["--head", "LstmnForPairClassification", "--num_train_epochs", "10", "--learning_rate", "3e-3",
               "--config", "embedding_size=32", "hidden_size=64", "hidden_dropout_prob=0", "fusion=deep",
               "initializer_range=0.3"], 0.9),
}  # fmt: skip


@pytest.mark.parametrize("arch", sorted(PAIR_HEADS))
def test_an_snli_jsonl_trains_lin_pair_head_and_lstmn_deep_fusion(learnable, tmp_path, capsys, arch):
    """ "the red cat" / "the cat is red": same object and colour, another object, another colour (chance 1/3)."""
    options, bar = PAIR_HEADS[arch]
    metrics = train_cli(
        capsys, "--arch", arch, "--dataset", str(learnable / "snli.jsonl"), "--text_column", "premise",
        "--text_pair_column", "hypothesis", "--output_dir", str(tmp_path / arch), *options,
    )  # fmt: skip
    assert "train split: dropped" in metrics["printed"]  # SNLI's -1 rows
    assert metrics["accuracy"] >= bar, metrics
    unseen = cue_word_pairs(30, seed=12345, min_objects=1, max_objects=1)
    predictions = predict_cli(capsys, tmp_path / arch, *unseen["premise"], pair=tuple(unseen["hypothesis"]))
    hits = sum(p["label"] == str(label) for p, label in zip(predictions, unseen["label"], strict=True))
    assert hits >= bar * 30, predictions  # labels are the file's values, collected as names


# SGM's decoder and the binary-relevance baseline on the same small encoder.
TOPIC_CONFIG = ["--config", "embedding_size=32", "encoder_hidden_size=32", "encoder_layers=1",
                "hidden_dropout_prob=0.1", "decoder_hidden_size=32", "decoder_layers=1", "attention_size=32",
                "decoder_initial_state=zeros"]  # fmt: skip


@pytest.mark.parametrize(
    ("head", "epochs", "bar"),
    [
        ("SgmForMultiLabelGeneration", "20", 0.8),
        ("SgmForMultiLabelClassification", "10", 0.9),
    ],  # 0.98 / 0.88, 1.0 / 0.99
)
def test_a_list_of_labels_jsonl_trains_sgm_and_binary_relevance(learnable, tmp_path, capsys, head, epochs, bar):
    """12 topics, 1-3 drawn per text (a subtopic brings its parent), each evidenced by its own words."""
    metrics = train_cli(
        capsys, "--arch", "sgm", "--head", head, "--dataset", str(learnable / "topics.jsonl"),
        "--label_column", "labels", "--output_dir", str(tmp_path / "sgm"), "--num_train_epochs", epochs,
        "--learning_rate", "1e-2", *TOPIC_CONFIG,
    )  # fmt: skip
    assert metrics["micro_f1"] >= bar and metrics["hamming_loss"] <= 0.1, metrics
    saved = json.loads((tmp_path / "sgm" / "config.json").read_text())
    assert sorted(saved["id2label"].values()) == sorted(topic_labels())  # collected from the list column
    (prediction,) = predict_cli(capsys, tmp_path / "sgm", "today sports1w0 during the night sports1w2 said")
    assert sorted(prediction["labels"]) == ["sports", "sports1"], prediction  # the subtopic brings its parent


def test_a_headerless_tsv_of_sentence_pairs_trains_the_transformer_and_predict_translates(learnable, tmp_path, capsys):
    """Lexical substitution, adjective-noun reordering and gender agreement; beam 4. Measured BLEU 98.2."""
    metrics = train_cli(
        capsys, "--arch", "vaswani_transformer", "--dataset", str(learnable / "pairs.tsv"), "--column_names",
        "source", "target", "--text_column", "source", "--target_column", "target", "--output_dir",
        str(tmp_path / "transformer"), "--num_train_epochs", "15", "--schedule", "noam", "--warmup_steps", "300",
        "--config", "d_model=64", "encoder_layers=2", "decoder_layers=2", "encoder_attention_heads=4",
        "decoder_attention_heads=4", "encoder_ffn_dim=128", "decoder_ffn_dim=128",
    )  # fmt: skip
    assert metrics["bleu"] >= 80.0, metrics
    unseen = toy_translation(20, seed=12345)
    predictions = predict_cli(capsys, tmp_path / "transformer", *unseen["source"])
    exact = sum(p["translation"] == target for p, target in zip(predictions, unseen["target"], strict=True))
    assert exact >= 12, list(zip(predictions, unseen["target"], strict=True))


def one_line_error(arguments: list[str]) -> str:
    with pytest.raises(SystemExit) as error:
        main(["train", *arguments, *QUIET])
    message = str(error.value)
    assert "\n" not in message and message.startswith("hf-attn train: "), message
    return message


def test_bad_inputs_are_one_line_errors_naming_the_problem(files, tmp_path):
    reviews = ["--dataset", str(files / "reviews.csv"), "--output_dir", str(tmp_path / "x")]
    assert "--text-column 'text' is not a column of the train split" in one_line_error(reviews)
    assert "--label-column 'rating'" in one_line_error(
        [*reviews, "--text_column", "review", "--label_column", "rating"]
    )
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"text": "fine", "label": 1}\n{"text": "fine", "label": 0}\n{"text": "oops", "label": \n')
    assert "row 3" in one_line_error(["--dataset", str(broken), "--output_dir", str(tmp_path / "y")])
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("text,label\na b,1\nc d,0,extra\n")
    assert "row 3: 3 fields where the header has 2" in one_line_error(["--dataset", str(ragged)])
    unseen = tmp_path / "unseen.csv"
    with unseen.open("w", newline="") as handle:
        csv.writer(handle).writerows([["stars", "review"], [6, "a stellar review"]])
    message = one_line_error([*reviews, "--text_column", "review", "--label_column", "stars",
                              "--eval_dataset", str(unseen)])  # fmt: skip
    assert "label '6' of the held-out split never occurs in the training split" in message
    empty = tmp_path / "empty.csv"
    empty.write_text("stars,review\n")
    assert "is empty" in one_line_error(["--dataset", str(empty), "--text_column", "review"])
    blank = tmp_path / "blank.csv"
    blank.write_text("stars,review\n1,\n2,  \n")
    assert "no usable row (empty text)" in one_line_error(
        ["--dataset", str(blank), "--text_column", "review", "--label_column", "stars", "--eval_dataset", str(blank)]
    )


# Each recipe on a few rows in its real dataset's layout (columns, label encoding, files), for one step.
YELP = Features(
    {"label": ClassLabel(names=["1 star", "2 star", "3 stars", "4 stars", "5 stars"]), "text": Value("string")}
)
IMDB = Features({"text": Value("string"), "label": ClassLabel(names=["neg", "pos"])})
SNLI = Features({"premise": Value("string"), "hypothesis": Value("string"),
                 "label": ClassLabel(names=["entailment", "neutral", "contradiction"])})  # fmt: skip


SENTIMENT = ["very negative", "negative", "neutral", "positive", "very positive"]


def recipe_data(name: str, folder, files) -> list[str]:
    """Writes `name`'s dataset in its real layout into `folder`; returns the options that point the recipe at it."""
    folder.mkdir()
    dataset = load_recipe(name).arguments.get("dataset")
    reviews = list(csv.DictReader((files / "reviews.csv").open()))[:24]
    if dataset in ("SetFit/sst5", "SetFit/sst2"):  # text, label (an id), label_text
        names = SENTIMENT if dataset.endswith("5") else ["negative", "positive"]
        for split in ("train", "validation", "test"):
            rows = [{"text": row["review"], "label": int(row["stars"]) % len(names),
                     "label_text": names[int(row["stars"]) % len(names)]} for row in reviews]  # fmt: skip
            Dataset.from_list(rows).to_parquet(folder / f"{split}.parquet")
    elif dataset == "CogComp/trec":  # text, coarse_label, fine_label
        for split in ("train", "test"):
            rows = [{"text": row["review"], "coarse_label": int(row["stars"]) % 6, "fine_label": int(row["stars"])}
                    for row in reviews]  # fmt: skip
            Dataset.from_list(rows).to_parquet(folder / f"{split}.parquet")
    elif dataset == "snippets":  # the STCKA authors' texts with their concepts, as JSON lines
        lines = (files / "snippets" / "train.tsv").read_text().splitlines()[:24]
        rows = [dict(zip(("text", "concepts", "label"), line.split("\t"), strict=True)) for line in lines]
        for split in ("train", "dev", "test"):
            (folder / f"{split}.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    elif dataset == "train_wiki.json":  # FewRel's own files
        from tests.helpers import write_fewrel

        write_fewrel(folder / "train_wiki.json", list(range(8)), 12, seed=0)
        write_fewrel(folder / "val_wiki.json", list(range(8, 14)), 12, seed=1)
        return ["--dataset", str(folder / "train_wiki.json"), "--eval_dataset", str(folder / "val_wiki.json"),
                "--eval_episodes", "4"]  # fmt: skip
    elif dataset == "EUR-Lex":  # the AttentionXML original's texts and labels, one document a line
        import shutil

        folder.rmdir()
        shutil.copytree(files / "xmc", folder)
    elif dataset == "stanfordnlp/imdb":  # text, label (neg/pos); the unsupervised split's label is -1
        rows = [{"text": row["review"], "label": int(row["stars"]) % 2} for row in reviews]
        for split in ("train", "test", "unsupervised"):
            labelled = rows if split != "unsupervised" else [{**row, "label": -1} for row in rows]
            Dataset.from_list(labelled, features=IMDB).to_parquet(folder / f"{split}.parquet")
    elif dataset == "ucirvine/reuters21578":  # ModApte: text, title, topics (a list, empty for some stories), ...
        topics = [json.loads(line) for line in (files / "topics.jsonl").read_text().splitlines()[:24]]
        rows = [{"text": row["text"], "title": row["text"][:20], "topics": [] if index == 3 else row["labels"],
                 "lewis_split": "TRAIN"} for index, row in enumerate(topics)]  # fmt: skip
        for split in ("train", "test", "unused"):
            Dataset.from_list(rows).to_parquet(folder / f"{split}.parquet")
    elif dataset == "bentrevett/multi30k":  # en, de
        pairs = [line.split("\t") for line in (files / "pairs.tsv").read_text().splitlines()[:24]]
        for split in ("train", "validation", "test"):
            Dataset.from_list([{"en": source, "de": target} for source, target in pairs]).to_parquet(
                folder / f"{split}.parquet"
            )
    elif "yelp" in name:
        reader = csv.DictReader((files / "reviews.csv").open())
        rows = [{"label": int(row["stars"]) - 1, "text": row["review"]} for row in reader][:24]
        for split in ("train", "test"):
            Dataset.from_list(rows, features=YELP).to_parquet(folder / f"{split}.parquet")
    elif "snli" in name:
        rows = [json.loads(line) for line in (files / "snli.jsonl").read_text().splitlines()[:24]]
        for split in ("train", "validation", "test"):
            Dataset.from_list(rows, features=SNLI).to_parquet(folder / f"{split}.parquet")
    elif name.startswith("sgm"):
        lines = (files / "topics.jsonl").read_text().splitlines()[:24]
        for split in ("train", "valid" if "rcv1" in name else "val", "test"):
            (folder / f"{split}.jsonl").write_text("\n".join(lines) + "\n")
    elif name.startswith("transformer"):
        pairs = [line.split("\t") for line in (files / "pairs.tsv").read_text().splitlines()[:24]]
        rows = [{"translation": {"de": target, "en": source}} for source, target in pairs]
        for split in ("train", "validation", "test"):
            Dataset.from_list(rows).to_parquet(folder / f"{split}.parquet")
    elif name.startswith("elmo"):
        lines = (files / "corpus.txt").read_text().splitlines()[:40]
        (folder / "news.en-00001-of-00100").write_text("\n".join(lines[:20]) + "\n")
        (folder / "news.en-00002-of-00100").write_text("\n".join(lines[20:]) + "\n")
        (folder.parent / "heldout.txt").write_text("\n".join(lines[:10]) + "\n")
        return ["--dataset", str(folder), "--eval_dataset", str(folder.parent / "heldout.txt")]
    return ["--dataset", str(folder)]


@pytest.mark.parametrize("name", list_recipes())
def test_every_recipe_runs_end_to_end_on_rows_in_its_datasets_layout(name, files, tmp_path, capsys):
    recipe = load_recipe(name)
    architecture = get_architecture(recipe.arguments["arch"])
    tiny = {key: value for key, value in architecture.tiny_config.items()  # less what the vocabulary sets
            if not key.endswith(("vocab_size", "pad_token_id")) and key != "num_labels"}  # fmt: skip
    output = tmp_path / "model"
    # The paper's word vectors are not here: a recipe that names them trains without (`--word_vectors none`).
    vectors = ["--word_vectors", "none"] if "word_vectors" in recipe.arguments else []
    main(["train", "--recipe", name, *recipe_data(name, tmp_path / "data", files), "--output_dir", str(output),
          "--max_steps", "1", "--no-progress", "--num_train_epochs", "1", *vectors,
          "--config", *(f"{key}={json.dumps(value)}" for key, value in tiny.items())])  # fmt: skip
    capsys.readouterr()
    record = json.loads((output / "hf_attn_training.json").read_text())
    assert record["settings"]["recipe"] == name and record["settings"]["steps"] == 1
    assert record["paper"] == recipe.paper
    card = (output / "README.md").read_text()
    assert "| metric | measured | paper |" in card and paper_number(recipe.paper) in card, card


def test_a_recipe_names_the_papers_word_vectors_and_a_local_copy_replaces_them(files, tmp_path, capsys):
    """A recipe's word vectors are the paper's file: where it is not here the run is refused in one line naming
    `--word_vectors PATH` and `none`; a local copy given with `--word_vectors` is read into the embedding."""
    recipe = next(name for name in list_recipes() if load_recipe(name).arguments.get("arch") == "lstmn"
                  and "word_vectors" in load_recipe(name).arguments)  # fmt: skip
    data = recipe_data(recipe, tmp_path / "data", files)
    short = ["--max_steps", "1", "--no-progress", "--config", "hidden_size=8", "embedding_size=4"]
    message = one_line_error(["--recipe", recipe, *data, "--output_dir", str(tmp_path / "refused"), *short])
    assert "(from recipe" in message and "--word_vectors PATH" in message and "--word_vectors none" in message
    vectors = tmp_path / "vectors.txt"
    vectors.write_text("the 0.1 0.2 0.3 0.4\nwas -0.1 0.5 0.2 0.0\n")
    main(["train", "--recipe", recipe, *data, "--output_dir", str(tmp_path / "run"), "--word_vectors", str(vectors),
          *short])  # fmt: skip
    assert "word vectors vectors.txt: 2 of" in capsys.readouterr().out


@pytest.mark.long  # the manual's commands as written, each a fresh `hf-attn` (`make test-long`)
def test_the_manuals_commands_for_your_own_data_run_as_written(tmp_path):
    """The first block of the manual's "Train on your own data" page, run with this environment's executables."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    section = (REPO_ROOT / "docs" / "pages" / "own-data.md").read_text()
    block = section[section.index("```bash\n") + 8 : section.index("```\n", section.index("```bash\n") + 8)]
    script = block.replace(".venv/bin/", str(Path(sys.executable).parent) + "/")
    result = subprocess.run(["bash", "-e", "-c", script], cwd=tmp_path, capture_output=True, text=True,
                            timeout=600, env={**os.environ, "OMP_NUM_THREADS": "1"})  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert '"label": "5"' in result.stdout and '"translation": "' in result.stdout, result.stdout[-3000:]
    assert json.loads((tmp_path / "runs/han-reviews/eval.json").read_text())["accuracy"] >= 0.9
