"""`hf-attn predict MODEL "text" ...`: a trained model's prediction for each text (a label, a label set, a
translation, tags or a continuation, by its task shape), with the tokens its attention weighs most."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

# The result of a text with nothing to predict from (an empty or blank line of `--file`), in its place.
DROPPED = "dropped"


def predict(model_path: str, texts: list[str], pairs: list[str] | None = None, top_k: int = 5) -> list[dict[str, Any]]:
    """The model's prediction for each text (a label and the top-attended tokens, a label set, a translation,
    tags or a continuation, by its shape), one result per text in order: an empty or blank text (or pair) has
    nothing to predict from, and its result is `{"dropped": "empty text"}`; how many are told once, in the words
    of `train` and `evaluate` (`hf_attn.data.rows.tell_dropped`)."""
    from ..data.rows import is_empty, tell_dropped
    from ..tasks.heads import load_trained, shape_of, trained_head  # here: a usage error is told before torch loads

    _, head = trained_head(model_path)  # the texts against the saved head, before its weights load
    if pairs is not None and not head.inputs.pair:
        raise ValueError(
            f"--pair: {head.model_class.__name__} reads one text, not a pair; give the texts alone (--pair is for "
            "pair models)."
        )
    if pairs is not None and len(pairs) != len(texts):
        raise ValueError(f"--pair: {len(pairs)} second texts for {len(texts)} texts.")
    if head.inputs.pair and pairs is None:
        raise ValueError(f"{head.model_class.__name__} reads pairs: give the second text with --pair.")
    second = f"empty {shape_of(head).layout.pair_is}"  # what `train` calls a pair's empty second text
    reasons = [
        "empty text" if is_empty(text) else second if pairs and is_empty(pairs[i]) else None
        for i, text in enumerate(texts)
    ]
    kept = [index for index, reason in enumerate(reasons) if reason is None]
    counts = Counter(reason for reason in reasons if reason is not None)
    if not kept:
        raise ValueError(f"no text to predict: all {len(texts)} are empty.")
    tell_dropped("predict", counts, len(texts), "texts", file=sys.stderr)
    model, tokenizer, head, shape = load_trained(model_path, head=head)
    chosen = [texts[index] for index in kept]
    results = shape.predict(model, tokenizer, head, chosen, None if pairs is None else [pairs[i] for i in kept], top_k)
    answers: list[dict[str, Any]] = [{DROPPED: reason} for reason in reasons]
    for index, result in zip(kept, results, strict=True):
        answers[index] = result
    return answers


def _texts(args: argparse.Namespace) -> list[str]:
    """`predict`'s texts: the positional ones, or the lines of `--file` (`-`: standard input), never both; a lone
    positional text that names an existing file is refused (the user meant `--file`)."""
    if args.file is not None and args.texts:
        raise ValueError("give the texts either on the command line or with --file, not both.")
    if args.file is None:
        if not args.texts:
            raise ValueError("give the texts to predict, or --file PATH (one text a line; '-' reads standard input).")
        if len(args.texts) == 1 and Path(args.texts[0]).is_file():
            raise ValueError(
                f"{args.texts[0]!r} is a file: pass --file {args.texts[0]} to predict each of its lines (a text is "
                "taken as it is)."
            )
        return args.texts
    if args.file == "-":
        lines = sys.stdin.read().splitlines()
    else:
        try:
            lines = Path(args.file).read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            raise FileNotFoundError(f"--file {args.file}: no such file.") from None
        except UnicodeDecodeError as error:
            raise ValueError(f"--file {args.file}: not UTF-8 ({error.reason} at byte {error.start}).") from None
    if not any(line.strip() for line in lines):
        raise ValueError(f"--file {args.file} holds no text (one text a line).")
    return lines  # every line, an empty one too: one result per line (`predict`)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", help="a trained model folder or Hub id")
    parser.add_argument("texts", nargs="*", help="the texts (or --file)")
    parser.add_argument("--file", help="read the texts from this file, one a line ('-': standard input)")
    parser.add_argument("--pair", nargs="+", help="the second text of each pair (pair models)")
    parser.add_argument("--top_k", "--top-k", type=int, default=5, help="how many attended tokens to show")
    parser.add_argument("--json", action="store_true", help="print one JSON list (text, prediction, attended)")


def run(args: argparse.Namespace) -> None:
    """`hf-attn predict`: the texts read, each one's prediction printed (or one JSON list)."""
    if args.top_k < 0:
        raise ValueError(f"--top_k {args.top_k}: give 0 or more tokens to show.")
    args.texts = _texts(args)
    results = predict(args.model, args.texts, args.pair, args.top_k)
    if args.json:
        print(json.dumps([{"text": t, **r} for t, r in zip(args.texts, results, strict=True)], ensure_ascii=False))
        return
    for text, result in zip(args.texts, results, strict=True):
        if DROPPED in result:
            print(f"{text}\n  -> ({DROPPED}: {result[DROPPED]})")
            continue
        attended = result.pop("attended", None)
        print(f"{text}\n  -> {json.dumps(result, ensure_ascii=False)}")
        if attended:
            print("  attends to: " + ", ".join(f"{token} {weight:.3f}" for token, weight in attended))
