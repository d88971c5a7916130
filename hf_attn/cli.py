"""The `hf-attn` command.

hf-attn list                      the registered architectures
hf-attn train --output-dir DIR    train on a synthetic task with Trainer (see `hf-attn train -h`)
hf-attn demo                      train, save, reload and inspect Lin et al. (2017) in about a minute
hf-attn verify DIR                check a saved model folder's weights against its checksums.json
"""

from __future__ import annotations

import argparse
import sys

from . import demo, training
from .cards import write_model_card
from .hub import push_model_dir
from .registry import ARCHITECTURES
from .utils.integrity import MANIFEST_NAME, verify_folder, write_manifest


def _list(_: argparse.Namespace) -> None:
    for name, architecture in sorted(ARCHITECTURES.items()):
        paper = architecture.paper
        heads = ", ".join(head.model_class.__name__ for head in architecture.heads)
        print(f"{name:24s} {architecture.display_name} ({paper.year}, {paper.reference})\n{'':24s} heads: {heads}")


def _card(args: argparse.Namespace) -> None:
    print(f"wrote {write_model_card(args.model_dir, repo_id=args.repo_id, base_model=args.base_model)}")


def _push(args: argparse.Namespace) -> None:
    commit = push_model_dir(
        args.model_dir, args.repo_id, private=args.private, revision=args.revision, commit_message=args.message
    )
    print(f"pushed {args.model_dir} to {args.repo_id} (revision {args.revision or 'main'}): commit {commit.oid}")


def _verify(args: argparse.Namespace) -> None:
    if args.update:
        print(f"wrote {write_manifest(args.model_dir)}")
        return
    try:
        checked = verify_folder(args.model_dir, require_manifest=True)
    except OSError as error:
        sys.exit(f"hf-attn verify: {error}")
    print(f"{args.model_dir}: {', '.join(checked) or 'no weight files'} match {MANIFEST_NAME}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="hf-attn", description="Classic attention architectures of NLP.")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="list the registered architectures").set_defaults(run=_list)
    train_parser = commands.add_parser("train", help="train a model on a synthetic task with Trainer")
    training.add_arguments(train_parser)
    train_parser.set_defaults(run=training.run_from_args)
    demo_parser = commands.add_parser("demo", help="train, save, reload and inspect Lin et al. (2017)")
    demo.add_arguments(demo_parser)
    demo_parser.set_defaults(run=demo.run)
    card_parser = commands.add_parser("card", help="write README.md (the model card) into a saved model folder")
    card_parser.add_argument("model_dir")
    card_parser.add_argument("--repo-id", help="the Hub repo the card's snippets load from")
    card_parser.add_argument("--base-model", help="the Hub model this one was fine-tuned from")
    card_parser.set_defaults(run=_card)
    push_parser = commands.add_parser("push", help="upload a saved model folder to the Hub (token: HF_TOKEN)")
    push_parser.add_argument("model_dir")
    push_parser.add_argument("repo_id")
    push_parser.add_argument("--private", action="store_true", help="create the repo private")
    push_parser.add_argument("--revision", help="push to this branch (created if missing)")
    push_parser.add_argument("--message", help="commit message")
    push_parser.set_defaults(run=_push)
    verify_parser = commands.add_parser("verify", help=f"check a saved model folder against its {MANIFEST_NAME}")
    verify_parser.add_argument("model_dir")
    verify_parser.add_argument(
        "--update", action="store_true", help=f"write {MANIFEST_NAME} for the weights as they are now instead"
    )
    verify_parser.set_defaults(run=_verify)
    args = parser.parse_args(argv)
    args.run(args)


if __name__ == "__main__":
    main(sys.argv[1:])
