"""AttentionXML at scale: one training step and inference, flat against the label tree, as the labels grow.

Flat AttentionXML scores every label: its attention is a (B, L, T) tensor, so time and memory grow with L. With the
label tree (§2.3) the deepest level scores C·K candidates whatever L is (C = 160 nodes of the level above, K = 8
children each), and inference runs the H + 1 levels' beams. Both sides here are hf_attn models of the same sizes
(the paper's: embedding 300, BiLSTM 256 per direction, linear [256]; texts of `--tokens` tokens).

- training step: forward + backward of one batch (flat: all L labels; tree: the deepest level on its C·K
  candidates, the most expensive level);
- inference: flat: all L labels; tree: the whole cascade (every level's beam);
- peak memory: the growth of the process's peak resident memory during the measured calls (CPU), or
  `torch.cuda.max_memory_allocated` (CUDA); each configuration runs in its own process.

Prints a table; the last line is `RESULT tree_speedup_100k=<flat step time / tree step time>
tree_memory_ratio_100k=<flat peak / tree peak>` at the largest label count. The comparison with LibMultiLabel's
AttentionXML (issue 18, part (b)) is not in this script yet.

    .venv/bin/python benchmarks/attentionxml_scale.py [--labels 1000 10000 100000] [--batch 32] [--tokens 100]
        [--repeats 2] [--device cpu]
"""

from __future__ import annotations

import argparse
import itertools
import json
import resource
import subprocess
import sys
from collections import Counter

import torch
from timing import time_call  # benchmarks/timing.py, beside this script

from hf_attn import AttentionXmlConfig, AttentionXmlForLabelTree, AttentionXmlForSequenceClassification

SIZES = {"vocab_size": 30000, "embedding_size": 300, "hidden_size": 256, "linear_sizes": [256]}


def balanced_tree(num_labels: int, children: int = 8, cluster_size: int = 8, height: int = 3) -> list[list[int]]:
    """Parents per level of a balanced tree like §2.2's (clusters of M labels, K-ary levels), top-down."""
    sizes = [num_labels, -(-num_labels // cluster_size)]
    while len(sizes) < height + 1 and sizes[-1] > children:
        sizes.append(-(-sizes[-1] // children))
    sizes.reverse()  # top-down
    parents = []
    for upper, lower in itertools.pairwise(sizes):
        per_node = -(-lower // upper)
        parents.append([child // per_node for child in range(lower)])
    return parents


def peak_memory(device: torch.device) -> int:
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device)
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kilobytes on Linux


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
        parents = balanced_tree(num_labels)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--tokens", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--one", nargs=2, metavar=("KIND", "LABELS"), help=argparse.SUPPRESS)  # a child process
    args = parser.parse_args()
    device = torch.device(args.device)
    if args.one:
        result = measure(args.one[0], int(args.one[1]), args.batch, args.tokens, args.repeats, device)
        print("MEASURED " + json.dumps(result))
        return
    rows = []
    for num_labels in args.labels:
        for kind in ("flat", "tree"):
            sizes = ["--batch", str(args.batch), "--tokens", str(args.tokens), "--repeats", str(args.repeats)]
            command = [sys.executable, __file__, "--one", kind, str(num_labels), *sizes, "--device", args.device]
            output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
            rows.append(json.loads(output[output.rindex("MEASURED ") + 9 :].splitlines()[0]))
    print(f"device {device}, batch {args.batch}, {args.tokens} tokens, fp32")
    print(f"{'labels':>8} {'model':>5} {'step s':>8} {'infer s':>8} {'step peak MB':>13}")
    for row in rows:
        print(f"{row['labels']:>8} {row['kind']:>5} {row['step_s']:>8.3f} {row['inference_s']:>8.3f} "
              f"{row['step_peak_mb']:>13.0f}")  # fmt: skip
    largest = max(args.labels)
    flat, tree = (next(r for r in rows if r["labels"] == largest and r["kind"] == k) for k in ("flat", "tree"))
    print(
        f"RESULT tree_speedup_{largest // 1000}k={flat['step_s'] / tree['step_s']:.2f} "
        f"tree_memory_ratio_{largest // 1000}k={flat['step_peak_mb'] / max(tree['step_peak_mb'], 1e-9):.2f}"
    )


if __name__ == "__main__":
    main()
