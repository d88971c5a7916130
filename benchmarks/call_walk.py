"""The walk of one `hf-attn train` request through the package's rooms (its modules), traced with `sys.setprofile`.

A room is a module of `hf_attn` (a model folder counts as one room: the architecture's own code), or with
`--packages` a package by job (`hf_attn.data`, `hf_attn.tasks`, `hf_attn.commands`, ...; a top-level module is one
room). Following the calls from `hf_attn.commands.train.main(argv)` as long as each caller is hf_attn's own code
(what a library calls back, a `map` function or the model inside `Trainer`, is the library's walk), a *stay* is a run
of calls in one room; a *re-entry* is a stay in a room after its first (the issue's "returns"), entered either by a
call into the room or by a return into it from a room it had called (a *return*). A *climb* is a call into a room
the layer table (`tests/test_imports.py`) puts above the caller's. The request is a CSV of reviews trained for a few
steps, the path a user's first command takes:

    python benchmarks/call_walk.py [--packages] [--rooms]    # the counts, and with --rooms each room's stays
"""

from __future__ import annotations

import argparse
import collections
import csv
import inspect
import itertools
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def room_of(module: str | None, packages: bool = False) -> str | None:
    """The room of a module name: `hf_attn.models.<name>` for anything in a model folder, the module otherwise (with
    `packages`, its package below `hf_attn`); `None` outside hf_attn."""
    if not module or not (module == "hf_attn" or module.startswith("hf_attn.")):
        return None
    parts = module.split(".")
    if len(parts) > 2 and parts[1] == "models":
        return ".".join(parts[:3])
    return ".".join(parts[:2]) if packages else module


def walk(argv: list[str], packages: bool = False) -> list[tuple[str, str]]:
    """The rooms the request passes through, in order, each with how it was entered (`call` or `return`)."""
    from hf_attn.commands import train as training

    stack: list[str | None] = [room_of("hf_attn.commands.train", packages)]
    resumed: set = set()  # generators' frames (kept alive until the walk ends), whose later calls resume them
    path: list[tuple[str, str]] = []

    def current() -> str | None:
        # Followed while every frame from `main` down is hf_attn's: code that a library calls back (a `map`
        # function, a Trainer callback, a model's forward inside the training loop) is that library's walk.
        return None if not stack or None in stack else stack[-1]

    def profile(frame, event, _arg):
        if event not in ("call", "return"):
            return
        before = current()
        if event == "call" and frame in resumed:  # a generator pulled again: the pull's room, as the first call's
            stack.append(stack[-1] if stack else None)
        elif event == "call":
            stack.append(room_of(frame.f_globals.get("__name__"), packages))
            if frame.f_code.co_flags & (inspect.CO_GENERATOR | inspect.CO_ASYNC_GENERATOR):
                resumed.add(frame)
        elif stack:
            stack.pop()
        after = current()
        if after is not None and (not path or (before is not None and after != before)):
            path.append((after, event))

    sys.setprofile(profile)
    try:
        training.main(argv)
    finally:
        sys.setprofile(None)
    return path


def layer(room: str) -> int:
    """A room's layer index in the test suite's table (lowest first; -1 for a room the table does not place)."""
    sys.path.insert(0, str(ROOT))
    from tests.test_imports import layer_of

    try:
        return layer_of(room)
    except ValueError:
        return -1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rooms", action="store_true", help="print each room's stays")
    parser.add_argument("--packages", action="store_true", help="a room is a package by job, not a module")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder) / "reviews.csv"
        with data.open("w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["text", "label"])
            writer.writerows([f"the food was {word} {i}", label] for i in range(64)
                             for word, label in (("great", "pos"), ("awful", "neg")))  # fmt: skip
        argv = ["--dataset", str(data), "--output_dir", str(Path(folder) / "run"), "--max_steps", "2",
                "--report_to", "none", "--disable_tqdm", "true", "--save_strategy", "no"]  # fmt: skip
        path = walk(argv, args.packages)
    stays = collections.Counter(room for room, _ in path)
    returns = sum(1 for _, how in path if how == "return")
    climbs = sum(
        1 for (before, _), (after, how) in itertools.pairwise(path) if how == "call" and layer(after) > layer(before)
    )
    print(f"{len(path)} stays in {len(stays)} rooms ({len(path) - len(stays)} re-entries), {climbs} climbs back up, "
          f"{returns} returns into a caller")  # fmt: skip
    print(f"most entered: {', '.join(f'{room} {count}' for room, count in stays.most_common(5))}")
    if args.rooms:
        for room, count in stays.most_common():
            print(f"  {count:3d}  {room}")


if __name__ == "__main__":
    main()
