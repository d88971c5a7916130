"""The `hf-attn` command.

hf-attn list                      the registered architectures
hf-attn train --output-dir DIR    train on a synthetic task with Trainer (see `hf-attn train -h`)
hf-attn demo                      train, save, reload and inspect Lin et al. (2017) in about a minute
"""

from __future__ import annotations

import argparse
import sys

from . import demo, training
from .registry import ARCHITECTURES


def _list(_: argparse.Namespace) -> None:
    for name, architecture in sorted(ARCHITECTURES.items()):
        paper = architecture.paper
        heads = ", ".join(head.model_class.__name__ for head in architecture.heads)
        print(f"{name:24s} {architecture.display_name} ({paper.year}, arXiv:{paper.arxiv})\n{'':24s} heads: {heads}")


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
    args = parser.parse_args(argv)
    args.run(args)


if __name__ == "__main__":
    main(sys.argv[1:])
