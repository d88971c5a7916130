"""AttentionXML at scale: flat against the label tree as the labels grow, the tree against the flat model on a
5k-label task, and hf_attn's tree against LibMultiLabel's AttentionXML on the same data.

(a) `scale`: one training step and inference, flat vs tree, 1k → 100k labels. Flat AttentionXML scores every label:
    its attention is a (B, L, T) tensor, so time and memory grow with L. With the label tree (§2.3) the deepest level
    scores C·K candidates whatever L is (C = 160 nodes of the level above, K = 8 children each), and inference runs
    the levels' beams. Both sides are hf_attn models of the paper's sizes (embedding 300, BiLSTM 256 per direction,
    linear [256]; texts of `--tokens` tokens):
    - training step: forward + backward of one batch (flat: all L labels; tree: the deepest level on its C·K
      candidates, the most expensive level);
    - inference: flat: all L labels; tree: the whole cascade (every level's beam);
    - peak memory: the growth of the process's peak resident memory during the measured calls (CPU), or
      `torch.cuda.max_memory_allocated` (CUDA); each configuration runs in its own process.
(b) `quality`: the synthetic extreme task (`xmc_documents`, `--quality-labels` labels with power-law frequencies and
    a latent hierarchy), trained through `hf_attn.train` as a user would, flat and with the tree (K = M = 8,
    H = 3, C = 160): P@1/3/5 on held-out texts, training and inference time.
(c) `peer`: LibMultiLabel's AttentionXML (`libmultilabel.nn.attentionxml.PLTTrainer`, a two-level tree: clusters of
    `cluster_size` labels, then the labels of the `beam_width` best clusters) and hf_attn's tree of the same shape
    (`tree_height=1`: the clusters, then the labels; the same cluster size and beam), on the same data as (b), with
    the same sizes, word vectors (a shared random file), optimiser settings, batch size and epochs per level:
    training time (tree building included), inference time on the held-out texts, and P@1/3/5 (from each side's
    top-5 predictions, scored by the same `hf_attn.tasks.metrics.ranking_metrics`). LibMultiLabel runs in a child
    process (`pip install -e .[benchmark]`; `--peer-python` points at another environment that has it). It also
    validates after every epoch (its `PLTTrainer` needs a validation split, given 5% of the training texts), which
    its time includes: that is how it trains.

Prints a table per part; the last line is `RESULT tree_speedup_100k=<flat step time / tree step time>
tree_memory_ratio_100k=<flat peak / tree peak> tree_minus_flat_p1=<points> vs_libmultilabel_train=<their training
time / ours> vs_libmultilabel_p1=<our P@1 − theirs, in points>` for the parts run.

    .venv/bin/python benchmarks/attentionxml_scale.py [--parts scale quality peer] [--labels 1000 10000 100000]
        [--batch 32] [--tokens 100] [--repeats 2] [--device cpu] [--quality-labels 5000] [--quality-train 10000]
        [--epochs 5] [--peer-python PATH]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
import torch
from timing import peak_memory, time_call  # benchmarks/timing.py, beside this script

from hf_attn import AttentionXmlConfig, AttentionXmlForLabelTree, AttentionXmlForSequenceClassification
from hf_attn.models.attention_xml.modeling_attention_xml import contiguous_tree

SIZES = {"vocab_size": 30000, "embedding_size": 300, "hidden_size": 256, "linear_sizes": [256]}


def measure(kind: str, num_labels: int, batch: int, tokens: int, repeats: int, device: torch.device) -> dict:
    """One configuration, in this process: seconds per training step and per inference batch, and peak memory."""
    torch.manual_seed(0)
    input_ids = torch.randint(2, SIZES["vocab_size"], (batch, tokens), device=device)
    mask = torch.ones_like(input_ids)
    if kind == "flat":
        model = AttentionXmlForSequenceClassification(AttentionXmlConfig(**SIZES, num_labels=num_labels)).to(device)
        step_model, step_inputs = model, {"input_ids": input_ids, "attention_mask": mask}
        step_inputs["labels"] = (torch.rand(batch, num_labels, device=device) < 5 / num_labels).float()
        infer = model
    else:
        parents = contiguous_tree(num_labels, cluster_size=8, children=8, height=3)
        sizes = [max(parents[0]) + 1, *(len(p) for p in parents)]
        widths = [max(Counter(parent).values()) for parent in parents]
        config = AttentionXmlConfig(**SIZES, num_labels=num_labels, tree_level_sizes=sizes, tree_max_children=widths)
        infer = AttentionXmlForLabelTree(config).to(device)
        infer.set_tree(parents)
        step_model = infer.levels[-1]
        width = min(config.tree_top_candidates, sizes[-2]) * widths[-1]
        candidates = torch.randint(0, num_labels, (batch, width), device=device)
        step_inputs = {"input_ids": input_ids, "attention_mask": mask, "candidates": candidates,
                       "labels": (torch.rand(batch, width, device=device) < 0.05).float()}  # fmt: skip
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    baseline = peak_memory(device) if device.type == "cuda" else None
    step_model.train()

    def step() -> None:
        step_model.zero_grad(set_to_none=True)
        step_model(**step_inputs).loss.backward()

    before = peak_memory(device)
    step_seconds = time_call(step, repeats, device)
    step_peak = peak_memory(device) - (baseline if baseline is not None else before)
    infer.eval()
    with torch.no_grad():
        inference_seconds = time_call(lambda: infer(input_ids, mask), repeats, device)
    return {"kind": kind, "labels": num_labels, "step_s": step_seconds, "inference_s": inference_seconds,
            "step_peak_mb": max(step_peak, 0) / 2**20}  # fmt: skip


# (b) and (c): the synthetic task, written once in the extreme classification text layout.
SMALL = {"embedding_size": 64, "hidden_size": 64, "linear_sizes": [64]}
LEARNING = {"learning_rate": 5e-3, "batch_size": 64}


def write_task(folder: Path, num_labels: int, num_train: int, num_test: int) -> dict:
    """`train_*` / `test_*` texts and labels (`xmc_documents`), and a shared file of random word vectors."""
    from hf_attn.models.attention_xml.synthetic_attention_xml import xmc_documents

    data = xmc_documents(num_train + num_test, num_labels=num_labels, seed=0)
    folder.mkdir(parents=True, exist_ok=True)
    for split, rows in (("train", range(num_train)), ("test", range(num_train, num_train + num_test))):
        part = data.select(rows)
        (folder / f"{split}_texts.txt").write_text("\n".join(part["text"]) + "\n")
        (folder / f"{split}_labels.txt").write_text("\n".join(" ".join(ls) for ls in part["labels"]) + "\n")
    words = sorted({word for text in data["text"] for word in text.split()})
    rng = np.random.default_rng(0)
    vectors = rng.uniform(-1, 1, (len(words), SMALL["embedding_size"]))
    lines = [
        f"{word} " + " ".join(f"{value:.5f}" for value in vector) for word, vector in zip(words, vectors, strict=True)
    ]
    (folder / "vectors.txt").write_text("\n".join(lines) + "\n")
    gold = [line.split() for line in (folder / "test_labels.txt").read_text().splitlines()]
    return {"folder": folder, "gold": gold, "labels": [f"L{label}" for label in range(num_labels)]}


def score(top_labels: list[list[str]], gold: list[list[str]], names: list[str]) -> dict[str, float]:
    """P@1/3/5 of ranked label names against the references (`ranking_metrics` on the ranks as scores)."""
    from hf_attn.tasks.metrics import ranking_metrics

    index = {name: i for i, name in enumerate(names)}
    scores = np.zeros((len(gold), len(names)))
    truth = np.zeros_like(scores, dtype=bool)
    for row, (ranked, labels) in enumerate(zip(top_labels, gold, strict=True)):
        for rank, name in enumerate(ranked):
            scores[row, index[name]] = len(ranked) - rank
        truth[row, [index[name] for name in labels]] = True
    return {k: v for k, v in ranking_metrics(scores, truth).items() if k.startswith("precision")}


def ours(task: dict, head: str, epochs: int, config: dict, output: Path) -> dict:
    """hf_attn through `train()` (the CLI's pipeline): training time, then top-5 inference on the test texts."""
    from hf_attn.commands.train import train

    start = time.perf_counter()
    result = train(
        output, arch="attention_xml", head=head, dataset=str(task["folder"]), eval_split="test",
        word_vectors=str(task["folder"] / "vectors.txt"), epochs=epochs, config={**SMALL, **config},
        disable_tqdm=True, save=False, save_strategy="no", logging_steps=10**9, report_to="none",
        per_device_eval_batch_size=256, **LEARNING,
    )  # fmt: skip
    train_seconds = time.perf_counter() - start
    model, tokenizer = result.model.eval(), result.tokenizer
    texts = (task["folder"] / "test_texts.txt").read_text().splitlines()
    start = time.perf_counter()
    ranked = []
    with torch.no_grad():
        for begin in range(0, len(texts), 256):
            batch = tokenizer(texts[begin : begin + 256], padding=True, return_tensors="pt").to(model.device)
            output_ = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
            top = getattr(output_, "top_labels", None)
            top = output_.logits.topk(5).indices if top is None else top
            ranked += [[model.config.id2label[int(i)] for i in row] for row in top]
    infer_seconds = time.perf_counter() - start
    return {"train_s": train_seconds, "infer_s": infer_seconds, **score(ranked, task["gold"], task["labels"])}


PEER_CHILD = """
import json, sys, time, types
from pathlib import Path
import numpy as np, torch
from libmultilabel.nn.attentionxml import PLTTrainer
from libmultilabel.nn.data_utils import load_or_build_text_dict

folder, out = Path(sys.argv[1]), Path(sys.argv[2])
settings = json.loads(sys.argv[3])
torch.manual_seed(0)
def rows(split):
    texts = (folder / f"{split}_texts.txt").read_text().splitlines()
    labels = (folder / f"{split}_labels.txt").read_text().splitlines()
    return [{"text": t.split(), "label": l.split(), "index": i} for i, (t, l) in enumerate(zip(texts, labels))]
train, test = rows("train"), rows("test")
held = max(1, len(train) // 20)
datasets = {"train": train[held:], "val": train[:held], "test": test}
# Every label of the task: with only those that occur, LibMultiLabel 0.10 fails when they split into clusters of
# equal sizes (`np.asarray(clusters, dtype=object)` is then 2-D, and its rows cannot index).
classes = settings["labels"]
start = time.perf_counter()
word_dict, embed_vecs = load_or_build_text_dict(
    datasets["train"] + datasets["val"], embed_file=str(folder / "vectors.txt"), silent=True
)
work = Path(settings["work"])
class Config(types.SimpleNamespace):
    def used_items(self):  # what LibMultiLabel's own config object offers its log writer
        return dict(vars(self))


config = Config(
    multiclass=False, cluster_size=settings["cluster_size"], beam_width=settings["beam_width"],
    max_seq_length=500,
    network_config={
        "rnn_dim": 2 * settings["hidden_size"], "linear_size": settings["linear_sizes"], "embed_dropout": 0.2,
        "encoder_dropout": 0.0, "post_encoder_dropout": 0.5, "rnn_layers": 1, "freeze_embed_training": False,
    },
    loss_function="binary_cross_entropy_with_logits", optimizer="adam", learning_rate=settings["learning_rate"],
    momentum=0.9, weight_decay=0.0, lr_scheduler=None, scheduler_config=None, cpu=True, epochs=settings["epochs"],
    limit_train_batches=1.0, limit_val_batches=1.0, limit_test_batches=1.0, silent=True, early_stopping_metric="P@1",
    patience=settings["epochs"] + 1, val_metric="P@1", checkpoint_dir=str(work / "checkpoints"),
    monitor_metrics=["P@1", "P@3", "P@5"], metric_threshold=0.5, shuffle=True, batch_size=settings["batch_size"],
    data_workers=0, eval_batch_size=256, save_k_predictions=5, log_path=str(work / "log.json"),
    predict_out_path=str(work / "predictions.txt"),
)
trainer = PLTTrainer(config, classes=classes, embed_vecs=embed_vecs, word_dict=word_dict)
trainer.fit(datasets)
train_seconds = time.perf_counter() - start
start = time.perf_counter()
trainer.test(datasets["test"])
infer_seconds = time.perf_counter() - start
predictions = Path(config.predict_out_path).read_text().splitlines()
ranked = [[item.rsplit(":", 1)[0] for item in line.split()] for line in predictions]
out.write_text(json.dumps({"train_s": train_seconds, "infer_s": infer_seconds, "ranked": ranked}))
"""


def peer(task: dict, epochs: int, cluster_size: int, beam: int, python: str, work: Path) -> dict | None:
    """LibMultiLabel's AttentionXML in a child process; `None` (with the reason printed) when it is not installed."""
    check = subprocess.run([python, "-c", "import libmultilabel.nn.attentionxml"], capture_output=True, text=True)
    if check.returncode:
        print(f"peer skipped: LibMultiLabel does not import in {python} (pip install -e .[benchmark]): "
              f"{check.stderr.strip().splitlines()[-1] if check.stderr.strip() else check.returncode}")  # fmt: skip
        return None
    settings = {**SMALL, **LEARNING, "epochs": epochs, "cluster_size": cluster_size, "beam_width": beam,
                "work": str(work), "labels": task["labels"]}  # fmt: skip
    out = work / "peer.json"
    work.mkdir(parents=True, exist_ok=True)
    child = subprocess.run([python, "-c", PEER_CHILD, str(task["folder"]), str(out), json.dumps(settings)],
                           capture_output=True, text=True)  # fmt: skip
    if child.returncode:
        raise RuntimeError(f"LibMultiLabel failed:\n{child.stderr[-3000:]}")
    measured = json.loads(out.read_text())
    return {"train_s": measured["train_s"], "infer_s": measured["infer_s"],
            **score(measured["ranked"], task["gold"], task["labels"])}  # fmt: skip


def print_rows(title: str, rows: dict[str, dict]) -> None:
    print(title)
    print(f"{'model':>28} {'train s':>9} {'infer s':>8} {'P@1':>6} {'P@3':>6} {'P@5':>6}")
    for name, row in rows.items():
        print(f"{name:>28} {row['train_s']:>9.1f} {row['infer_s']:>8.2f} {row['precision_at_1']:>6.3f} "
              f"{row['precision_at_3']:>6.3f} {row['precision_at_5']:>6.3f}")  # fmt: skip


def scale(args: argparse.Namespace) -> dict[str, str]:
    rows = []
    for num_labels in args.labels:
        for kind in ("flat", "tree"):
            sizes = ["--batch", str(args.batch), "--tokens", str(args.tokens), "--repeats", str(args.repeats)]
            command = [sys.executable, __file__, "--one", kind, str(num_labels), *sizes, "--device", args.device]
            output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
            rows.append(json.loads(output[output.rindex("MEASURED ") + 9 :].splitlines()[0]))
    print(f"(a) device {args.device}, batch {args.batch}, {args.tokens} tokens, fp32")
    print(f"{'labels':>8} {'model':>5} {'step s':>8} {'infer s':>8} {'step peak MB':>13}")
    for row in rows:
        print(f"{row['labels']:>8} {row['kind']:>5} {row['step_s']:>8.3f} {row['inference_s']:>8.3f} "
              f"{row['step_peak_mb']:>13.0f}")  # fmt: skip
    largest = max(args.labels)
    flat, tree = (next(r for r in rows if r["labels"] == largest and r["kind"] == k) for k in ("flat", "tree"))
    return {
        f"tree_speedup_{largest // 1000}k": f"{flat['step_s'] / tree['step_s']:.2f}",
        f"tree_memory_ratio_{largest // 1000}k": f"{flat['step_peak_mb'] / max(tree['step_peak_mb'], 1e-9):.2f}",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--parts", nargs="+", choices=["scale", "quality", "peer"], default=["scale", "quality", "peer"]
    )
    parser.add_argument("--labels", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--tokens", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--quality-labels", type=int, default=5000)
    parser.add_argument("--quality-train", type=int, default=10000)
    parser.add_argument("--quality-test", type=int, default=1000)
    parser.add_argument("--epochs", type=int, default=5, help="epochs (per level of a tree)")
    parser.add_argument("--cluster-size", type=int, default=8, help="(c): labels per cluster, both sides")
    parser.add_argument("--beam", type=int, default=64, help="(c): clusters kept by level 0, both sides")
    parser.add_argument("--peer-python", default=sys.executable, help="(c): a Python with LibMultiLabel")
    parser.add_argument("--one", nargs=2, metavar=("KIND", "LABELS"), help=argparse.SUPPRESS)  # a child process
    args = parser.parse_args()
    if args.one:
        result = measure(
            args.one[0], int(args.one[1]), args.batch, args.tokens, args.repeats, torch.device(args.device)
        )
        print("MEASURED " + json.dumps(result))
        return
    results: dict[str, str] = {}
    if "scale" in args.parts:
        results.update(scale(args))
    if {"quality", "peer"} & set(args.parts):
        with tempfile.TemporaryDirectory() as scratch:
            work = Path(scratch)
            task = write_task(work / "data", args.quality_labels, args.quality_train, args.quality_test)
            title = (f"{args.quality_labels} labels, {args.quality_train} training / {args.quality_test} held-out "
                     f"texts, {args.epochs} epochs (per level), {args.device}")  # fmt: skip
            if "quality" in args.parts:
                rows = {
                    "hf_attn flat": ours(task, "AttentionXmlForSequenceClassification", args.epochs, {}, work / "f"),
                    "hf_attn tree (K=M=8, H=3)": ours(task, "AttentionXmlForLabelTree", args.epochs, {}, work / "t"),
                }
                print_rows(f"(b) {title}", rows)
                difference = (
                    rows["hf_attn tree (K=M=8, H=3)"]["precision_at_1"] - rows["hf_attn flat"]["precision_at_1"]
                )
                results["tree_minus_flat_p1"] = f"{100 * difference:.2f}"
            if "peer" in args.parts:
                shape = {"tree_height": 1, "tree_cluster_size": args.cluster_size, "tree_top_candidates": args.beam}
                rows = {
                    "hf_attn tree (2 levels)": ours(task, "AttentionXmlForLabelTree", args.epochs, shape, work / "p")
                }
                theirs = peer(task, args.epochs, args.cluster_size, args.beam, args.peer_python, work / "peer")
                if theirs is not None:
                    rows["LibMultiLabel PLTTrainer"] = theirs
                    mine = rows["hf_attn tree (2 levels)"]
                    results["vs_libmultilabel_train"] = f"{theirs['train_s'] / mine['train_s']:.2f}"
                    results["vs_libmultilabel_p1"] = f"{100 * (mine['precision_at_1'] - theirs['precision_at_1']):.2f}"
                print_rows(f"(c) {title}, cluster size {args.cluster_size}, beam {args.beam}", rows)
    print("RESULT " + " ".join(f"{key}={value}" for key, value in results.items()))


if __name__ == "__main__":
    main()
