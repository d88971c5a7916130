"""`hf-attn demo`: train the default architecture (`hf-attn list` marks it) on its synthetic task, reload it the way
users do, and show what its attention reads.

Steps: train with `Trainer` (progress bar) → the held-out metrics → `save_pretrained` → the head's Auto class +
`AutoTokenizer` → `pipeline(<the head's task>)` → for a few held-out texts, the words each row of the head's first
attention map weighs most (one row a hop for Lin et al.'s heads). Nothing here names an architecture: the default
row says what the demo trains (`Architecture.demo`), and the head contract the rest.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

    from ..registry.row import Head

SHOWN_TEXTS = 4  # held-out texts the demo predicts and shows the attention of


def describe_attention(
    model: PreTrainedModel, head: Head, tokenizer: PreTrainedTokenizerBase, text: str, top: int = 2
) -> list[str]:
    """The `top` words the head's first attention map weighs most for `text`, with their weights: one line per row
    of a map of several distributions (its hops, labels or features: the field's mask spec, `hf_attn.data.masks`),
    else one line."""
    import torch

    from ..tasks.prediction import model_inputs, top_attended
    from ..tokenization.bpe import ids_to_tokens

    field = head.attention_fields[0]
    spec = head.architecture.attention_masks[field]
    inputs = model_inputs(head, tokenizer, [text], None, model.device)
    with torch.no_grad():
        output = model(**inputs, **head.attention_kwargs)
    if spec.rows is None:
        attended = top_attended(model, head, inputs, output, tokenizer, top)[0]
        return ["    attends to: " + ", ".join(f"{token} ({weight:.2f})" for token, weight in attended)]
    maps = getattr(output, field)[0]  # (R, T): one distribution over the text a row
    real = inputs[spec.keys][0].bool()
    ids = inputs[spec.ids][0]
    row_name = spec.rows.removesuffix("s")
    lines = []
    for row, weights in enumerate(maps.float()):
        weights = weights.masked_fill(~real, -1.0)
        values, indices = weights.topk(min(top, int(real.sum())))
        words = ids_to_tokens(tokenizer, spec.ids, ids[indices].tolist())
        picks = ", ".join(f"{word} ({value:.2f})" for word, value in zip(words, values.tolist(), strict=True))
        lines.append(f"    {row_name} {row}: {picks}")
    return lines


def _said(prediction: Any) -> str:
    """A pipeline's answer for one text: `label (score)` where it has them (a classifier's), else its fields."""
    prediction = prediction[0] if isinstance(prediction, list) else prediction
    if {"label", "score"} <= set(prediction):
        return f"{prediction['label']} ({prediction['score']:.3f})"
    return ", ".join(f"{key}: {value}" for key, value in prediction.items())


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
    import transformers
    from transformers import AutoTokenizer, pipeline

    from ..data import get_synthetic_task
    from ..registry.index import default_architecture
    from ..registry.table import get_architecture
    from ..tasks.heads import find_head
    from .train import train  # here, not at the top: `hf-attn --help` builds this parser without torch

    architecture = get_architecture(default_architecture())
    task = get_synthetic_task(architecture.synthetic_task)
    print(f"hf_attn demo: {architecture.display_name} on the synthetic {architecture.synthetic_task} task")
    started = time.perf_counter()
    demo = dict(architecture.demo)
    result = train(
        output_dir=args.output_dir,
        arch=architecture.name,
        num_train=args.num_train,
        num_eval=1000,
        seed=args.seed,
        epochs=args.epochs,
        config_overrides=demo.pop("config", {}),
        logging_steps=10**9,
        **demo,
    )
    seconds = time.perf_counter() - started
    print(f"\ntrained in {seconds:.0f} s; held-out (1000 examples):")
    for name, value in result.metrics.items():
        print(f"  {name:32s}  {value:.3f}")

    output_dir = Path(args.output_dir)
    _, head = find_head(result.model)
    auto_class = getattr(transformers, head.auto_class)
    model = auto_class.from_pretrained(output_dir).eval()
    tokenizer = AutoTokenizer.from_pretrained(output_dir)
    print(f"\nsaved to {output_dir}/ and reloaded with {head.auto_class} + AutoTokenizer")
    _, held_out = task.splits(0, SHOWN_TEXTS, seed=args.seed + 1)
    texts = list(held_out[task.text_column])
    predictor = pipeline(head.pipeline_tag, model=model, tokenizer=tokenizer)
    for text, prediction in zip(texts, predictor(texts), strict=True):
        print(f'\n  "{text}"\n    -> {_said(prediction)}')
        print("\n".join(describe_attention(model, head, tokenizer, text)))
    return {**result.metrics, "seconds": seconds}


if __name__ == "__main__":
    main()
