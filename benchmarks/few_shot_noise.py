"""Few-shot accuracy of Proto-HATT, HAPN and the plain prototypical network on the synthetic few-shot tasks
(64 training classes, 16 held-out classes never trained on), trained through `hf_attn.train`: `few_shot_topics`
(cue words among fillers) or `few_shot_relations` (the cues between a head and a tail entity, another class's cue
outside them: Proto-HATT's setting, relation classification with position embeddings).

Two tables, printed as Markdown:
(a) noisy supports (Proto-HATT's setting, Gao et al. 2019 §4.3): 5-way 5-shot with half of the support instances
    replaced by other classes', in training and evaluation, over several seeds; the gap to the prototypical network;
(b) clean supports: accuracy at 5-way / 10-way × 5-shot / 10-shot (one model per K, since Proto-HATT's feature
    attention is tied to K; N is free at evaluation), and HAPN's word attention on the class words (hit rate).

Accuracy is the mean over 500 fixed held-out episodes ± the 95% interval. CPU, fp32, 1 thread per run.

    python benchmarks/few_shot_noise.py [--task few_shot_topics|few_shot_relations] [--seeds 0 1 2]
        [--part noise|clean|all] [--num_train 3200] [--epochs 1] [--learning_rate 1e-3] [--ablations]

`--ablations` adds HAPN without its word attention to the noise table. Every model trains with the same budget
(`--epochs` over `--num_train` episodes, 8 per step, AdamW at `--learning_rate`).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import time
from pathlib import Path

import torch

MODELS = {  # label -> (architecture, head)
    "ProtoNet": ("proto_hatt", "ProtoHattProtoNetForFewShotClassification"),
    "Proto-HATT": ("proto_hatt", "ProtoHattForFewShotClassification"),
    "HAPN": ("hapn", "HapnForFewShotClassification"),
}
ABLATIONS = {"HAPN − word attention": ("hapn", "HapnForFewShotClassification", ["use_word_attention=false"])}
SIZES = ["hidden_size=64", "word_embedding_size=32", "max_sentence_length=20"]


def train_one(label: str, seed: int, shots: int, noise: float, args: argparse.Namespace):
    from hf_attn.commands.train import train

    arch, head, extra = (*MODELS[label], []) if label in MODELS else ABLATIONS[label]
    positions = f"use_entity_positions={args.task == 'few_shot_relations'}".lower()
    name = f"{args.task}-{label.replace(' ', '')}-k{shots}-noise{noise}-lr{args.learning_rate}-seed{seed}"
    return train(
        arch=arch,
        head=head,
        task=args.task,
        output_dir=str(Path(args.output) / name),
        num_train=args.num_train,
        num_eval=800,
        num_train_epochs=args.epochs,
        learning_rate=args.learning_rate,
        per_device_train_batch_size=8,
        seed=seed,
        config=[*SIZES, positions, f"num_shots={shots}", "num_ways=5", "num_queries=5", *extra],
        support_noise=noise,
        eval_episodes=500,
        disable_tqdm=True,
        report_to="none",
        logging_steps=10_000,
        save=False,
    )


def evaluate_at(result, ways: int) -> dict[str, float]:
    """The trained model's held-out accuracy at `ways` classes per episode (same K, same fixed episode seed)."""
    trainer = result.trainer
    episodes = copy.copy(trainer.eval_dataset)
    episodes.ways = ways
    episodes.eligible = sorted(
        n for n, rows in episodes.classes.items() if len(rows) >= episodes.shots + episodes.queries
    )
    metrics = trainer.evaluate(eval_dataset=episodes)
    return {key.removeprefix("eval_"): value for key, value in metrics.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", choices=["few_shot_topics", "few_shot_relations"], default="few_shot_topics")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--part", choices=["noise", "clean", "all"], default="all")
    parser.add_argument("--num_train", type=int, default=3200)
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--learning_rate", type=float, default=1e-3)
    parser.add_argument("--ablations", action="store_true", help="add HAPN without word attention (noise table)")
    parser.add_argument("--output", default="/tmp/few_shot_noise")
    parser.add_argument("--json", help="write the numbers here too")
    args = parser.parse_args()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", 1)))
    record: dict[str, object] = {"task": args.task, "learning_rate": args.learning_rate, "epochs": args.epochs}
    print(f"{args.task}, {args.epochs:g} epoch(s) of {args.num_train} episodes, learning rate {args.learning_rate:g}")

    if args.part in ("noise", "all"):
        rows = {label: [] for label in [*MODELS, *(ABLATIONS if args.ablations else [])]}
        for seed in args.seeds:
            for label in rows:
                start = time.time()
                metrics = train_one(label, seed, 5, 0.5, args).metrics
                rows[label].append(metrics["accuracy"])
                print(f"[noise] {label} seed {seed}: {metrics['accuracy']:.4f} ± {metrics['accuracy_ci95']:.4f} "
                      f"({time.time() - start:.0f} s)", flush=True)  # fmt: skip
        print("\n(a) 5-way 5-shot, 50% support noise, held-out accuracy (%) per seed and mean\n")
        print("| model | " + " | ".join(f"seed {s}" for s in args.seeds) + " | mean | vs ProtoNet |")
        print("|---|" + "---|" * (len(args.seeds) + 2))
        base = sum(rows["ProtoNet"]) / len(rows["ProtoNet"])
        for label, values in rows.items():
            mean = sum(values) / len(values)
            cells = " | ".join(f"{100 * v:.1f}" for v in values)
            print(f"| {label} | {cells} | {100 * mean:.1f} | {100 * (mean - base):+.1f} |")
        record["noise"] = rows

    if args.part in ("clean", "all"):
        table = {}
        for label in MODELS:
            for shots in (5, 10):
                result = train_one(label, args.seeds[0], shots, 0.0, args)
                for ways in (5, 10):
                    metrics = evaluate_at(result, ways)
                    table[(label, ways, shots)] = metrics
                    print(f"[clean] {label} {ways}-way {shots}-shot: {metrics['accuracy']:.4f}", flush=True)
                if label == "HAPN":
                    record[f"hapn_word_attention_k{shots}"] = {
                        k: result.metrics[k] for k in ("hit_rate", "evidence_mass", "evidence_mass_uniform")
                    }
        print("\n(b) clean supports, held-out accuracy (%) ± 95% interval\n")
        settings = [(5, 5), (5, 10), (10, 5), (10, 10)]
        print("| model | " + " | ".join(f"{n}-way {k}-shot" for n, k in settings) + " |")
        print("|---|" + "---|" * len(settings))
        for label in MODELS:
            cells = " | ".join(
                f"{100 * table[(label, n, k)]['accuracy']:.1f} ± {100 * table[(label, n, k)]['accuracy_ci95']:.1f}"
                for n, k in settings
            )
            print(f"| {label} | {cells} |")
        for shots in (5, 10):
            words = record.get(f"hapn_word_attention_k{shots}")
            if words:
                print(
                    f"\nHAPN word attention ({shots}-shot model): hit rate {words['hit_rate']:.3f}, mass on the "
                    f"class words {words['evidence_mass']:.3f} (uniform: {words['evidence_mass_uniform']:.3f})"
                )
        record["clean"] = {f"{label} {n}-way {k}-shot": m["accuracy"] for (label, n, k), m in table.items()}
    if args.json:
        Path(args.json).write_text(json.dumps(record, indent=2, default=float))


if __name__ == "__main__":
    main()
