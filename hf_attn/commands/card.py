"""`hf-attn card MODEL_DIR`: write README.md, the model card, into a saved model folder (with an attention picture of
its example)."""

from __future__ import annotations

import argparse

from .visualize import add_view_arguments, view_inputs


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model_dir")
    parser.add_argument("--repo-id", help="the Hub repo the card's snippets load from")
    parser.add_argument("--base-model", help="the Hub model this one was fine-tuned from")
    parser.add_argument(
        "--example",
        help="a text whose attention the card shows (attention.png); default: "
        "the training or conversion record's example",
    )
    add_view_arguments(parser, "the example")


def run(args: argparse.Namespace) -> None:
    from ..cards import write_model_card
    from ..utils.paths import check_repo_id

    if args.repo_id is not None:
        check_repo_id(args.repo_id, "--repo-id")
    example = None
    if args.example:
        from ..tasks.heads import trained_head
        from ..visualization.pictures import check_view_options

        example = {"text": args.example, **view_inputs(args)}
        _, head = trained_head(args.model_dir, "MODEL_DIR")  # the example's options against the saved head first
        check_view_options(head, example.get("pair"), {k: v for k, v in example.items() if k not in ("text", "pair")})
    elif args.pair or args.support or args.entities:
        raise ValueError("--pair, --support and --entities belong to an --example.")
    written = write_model_card(args.model_dir, repo_id=args.repo_id, base_model=args.base_model, example=example)
    print(f"wrote {written}")
