"""`hf-attn faithfulness`'s speed on the CPU (issue 68): examples per second of `measure_faithfulness` (its
erasures, leave-one-out, gradient × input and Integrated Gradients, all batched) for every head it measures, beside
the same model's own batched inference over the same examples, measured in one run on one machine.

Each head is its registry row's tiny config (`Architecture.tiny_config`, the vocabulary raised to 1,000 words),
untrained: speed does not depend on the weights. The examples are the head's random inputs
(`InputKind.example_inputs`) of 8–24 tokens (documents: sentences of them; a few-shot head: episodes, each of whose
queries is measured), in batches of `--batch` examples. Per
example, the measures run 2·|k| + 1 erasures per ranking (3 rankings), one per token for leave-one-out, and
`--ig_steps` Integrated Gradients points, so the ratio to inference is about their count, which is the measure's
floor: this benchmark shows how close the batching comes to it.

    .venv/bin/python benchmarks/faithfulness.py [--examples 64] [--batch 32] [--ig_steps 32] [--repeats 3]
        [--output benchmarks/results/faithfulness.md]

Prints a table and `RESULT <head> examples_per_second=<x> inference_per_second=<y>` lines.
"""

from __future__ import annotations

import argparse
import platform
from pathlib import Path

import torch
from timing import time_call  # benchmarks/timing.py, beside this script

from hf_attn.faithfulness import ERASER_KS, measure_faithfulness
from hf_attn.faithfulness.measure import check_measurable
from hf_attn.registry.table import ARCHITECTURES


def measured_heads() -> list:
    """Every (architecture, head) pair the measures take."""
    pairs = []
    for architecture in ARCHITECTURES.values():
        for head in architecture.heads:
            try:
                check_measurable(head)
            except (ValueError, NotImplementedError):
                continue
            pairs.append((architecture, head))
    return pairs


def head_batches(architecture, head, examples: int, batch: int, seed: int = 0) -> tuple[torch.nn.Module, list]:
    """An untrained tiny model of `head` and `examples` random inputs in batches of `batch`."""
    torch.manual_seed(seed)
    config = architecture.config_class(**{**architecture.tiny_config, "vocab_size": 1000})
    model = head.model_class(config).eval()
    generator = torch.Generator().manual_seed(seed)
    batches = []
    for start in range(0, examples, batch):
        size = min(batch, examples - start)
        lengths = torch.randint(8, 25, (size,), generator=generator).tolist()
        pair = torch.randint(8, 25, (size,), generator=generator).tolist() if head.inputs.pair else None
        batches.append(head.inputs.example_inputs(config, lengths, generator, pair))
    return model, batches


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=64)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--ig_steps", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--output", type=Path, default=None, help="also write the report as Markdown here")
    args = parser.parse_args()
    lines = [
        "# Faithfulness measures: speed on the CPU",
        "",
        f"{platform.processor() or platform.machine()}, {torch.get_num_threads()} threads, torch {torch.__version__}; "
        f"{args.examples} examples of 8–24 tokens, batches of {args.batch}, k = {', '.join(map(str, ERASER_KS))}%, "
        f"{args.ig_steps} Integrated Gradients steps; median of {args.repeats} (a few-shot head's example: an "
        "episode, each of its queries measured)",
        "",
        "| head | measured examples/s | inference examples/s | inference / measured |",
        "|---|---|---|---|",
    ]
    results = []
    for architecture, head in measured_heads():
        model, batches = head_batches(architecture, head, args.examples, args.batch)

        def measure(model=model, head=head, batches=batches) -> None:
            measure_faithfulness(model, head, batches, ig_steps=args.ig_steps, batch_size=args.batch)

        def infer(model=model, batches=batches) -> None:
            with torch.no_grad():
                for inputs in batches:
                    model(**inputs)

        measured = args.examples / time_call(measure, args.repeats)
        inference = args.examples / time_call(infer, args.repeats)
        name = head.model_class.__name__
        lines.append(f"| {name} | {measured:.1f} | {inference:.0f} | {inference / measured:.0f}× |")
        results.append(f"RESULT {name} examples_per_second={measured:.2f} inference_per_second={inference:.1f}")
        print(lines[-1], flush=True)
    report = "\n".join([*lines, "", *results, ""])
    print(report)
    if args.output is not None:
        args.output.write_text(report)


if __name__ == "__main__":
    main()
