"""`hf-attn push MODEL_DIR REPO_ID`: upload a saved model folder (weights, code, tokenizer, card) to the Hub."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model_dir")
    parser.add_argument("repo_id")
    parser.add_argument("--private", action="store_true", help="create the repo private")
    parser.add_argument("--revision", help="push to this branch (created if missing)")
    parser.add_argument("--message", help="commit message")


def run(args: argparse.Namespace) -> None:
    from ..hub import push_model_dir

    commit = push_model_dir(
        args.model_dir, args.repo_id, private=args.private, revision=args.revision, commit_message=args.message
    )
    print(f"pushed {args.model_dir} to {args.repo_id} (revision {args.revision or 'main'}): commit {commit.oid}")
