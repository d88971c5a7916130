"""`hf-attn verify MODEL_DIR`: check a saved model folder's weights against their integrity records (or record them
anew with `--update`)."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model_dir")
    parser.add_argument(
        "--update", action="store_true", help="record the weights as they are now instead (changed on purpose)"
    )


def run(args: argparse.Namespace) -> None:
    from ..utils.integrity import RECORD_KEY, verify_folder, write_records

    if args.update:
        print(f"recorded {', '.join(write_records(args.model_dir)) or 'no weight files'} ({RECORD_KEY})")
        return
    checked = verify_folder(args.model_dir, require_record=True)
    print(f"{args.model_dir}: {', '.join(checked)} match their integrity records")
