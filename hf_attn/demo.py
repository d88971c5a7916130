"""`hf-attn demo`: train Lin et al. (2017) on the cue-word sentiment task, reload it the way users do, and show
what each attention hop reads.

Steps: train with `Trainer` (progress bar) → held-out accuracy and attention hit rate → `save_pretrained` →
`AutoModelForSequenceClassification` + `AutoTokenizer` → `pipeline("text-classification")` → per-hop words.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

DEMO_SENTENCES = [
    "we went there on a sunday and the food was wonderful",
    "honestly the service was not good in the end",
    "my friend ordered the soup , a dreadful meal",
    "the story is set in a town and i found the cast not boring",
]

# A small Lin model: r = 4 hops with the penalty on; the paper's sizes (u=300, r=30, MLP 3000) take hours on a CPU.
DEMO_CONFIG = {
    "embedding_size": 32,
    "hidden_size": 32,
    "attention_hidden_size": 32,
    "attention_hops": 4,
    "classifier_hidden_size": 64,
    "hidden_dropout_prob": 0.1,
    "penalty_coefficient": 0.3,
}


def describe_hops(model: Any, tokenizer: Any, sentence: str, top: int = 2) -> list[str]:
    """One line per hop: the `top` words it attends to most, with their weights."""
    import torch

    encoded = tokenizer(sentence, return_tensors="pt")
    with torch.no_grad():
        attention = model(**encoded).hop_attentions[0]  # (R, T)
    words = tokenizer.convert_ids_to_tokens(encoded["input_ids"][0])
    lines = []
    for hop, weights in enumerate(attention):
        values, indices = weights.topk(min(top, weights.numel()))
        picks = ", ".join(f"{words[i]} ({v:.2f})" for v, i in zip(values.tolist(), indices.tolist(), strict=True))
        lines.append(f"    hop {hop}: {picks}")
    return lines


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--output-dir", default="hf-attn-demo", help="where the trained model is saved")
    parser.add_argument("--num-train", type=int, default=2000)
    parser.add_argument("--epochs", type=float, default=10)
    parser.add_argument("--seed", type=int, default=0)


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


def run(args: argparse.Namespace) -> dict[str, float]:
    """Runs the demo; returns the held-out metrics and the training time in seconds."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, pipeline

    from .training import train  # here, not at the top: `hf-attn --help` builds this parser without torch

    print("hf_attn demo: Lin et al. (2017) self-attentive sentence embedding on the cue-word sentiment task")
    started = time.perf_counter()
    result = train(
        output_dir=args.output_dir,
        num_train=args.num_train,
        num_eval=1000,
        seed=args.seed,
        epochs=args.epochs,
        learning_rate=1e-2,
        config_overrides=DEMO_CONFIG,
        logging_steps=10**9,
    )
    seconds = time.perf_counter() - started
    metrics = result.metrics
    print(f"\ntrained in {seconds:.0f} s; held-out (1000 sentences):")
    print(f"  accuracy                          {metrics['accuracy']:.3f}")
    print(f"  attention hit rate                {metrics['hit_rate']:.3f}  (the cue is the argmax of some hop)")
    print(f"  attention mass on the cue         {metrics['evidence_mass']:.3f}  (mean over hops)")
    print(f"                                    {metrics['best_hop_evidence_mass']:.3f}  (the hop that attends most)")

    output_dir = Path(args.output_dir)
    model = AutoModelForSequenceClassification.from_pretrained(output_dir).eval()
    tokenizer = AutoTokenizer.from_pretrained(output_dir)
    print(f"\nsaved to {output_dir}/ and reloaded with AutoModelForSequenceClassification + AutoTokenizer")
    classifier = pipeline("text-classification", model=model, tokenizer=tokenizer)
    for sentence, prediction in zip(DEMO_SENTENCES, classifier(DEMO_SENTENCES), strict=True):
        print(f'\n  "{sentence}"\n    -> {prediction["label"]} ({prediction["score"]:.3f})')
        print("\n".join(describe_hops(model, tokenizer, sentence)))
    return {**metrics, "seconds": seconds}


if __name__ == "__main__":
    main()
