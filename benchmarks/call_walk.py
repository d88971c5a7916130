"""The walk of one `hf-attn train` request through the package's rooms, traced with `sys.setprofile`.

A *room* is a package by job (`hf_attn.options`, `hf_attn.data`, `hf_attn.tasks`, `hf_attn.utils`, ...; a top-level
module is a room of its own, and a model folder is one room: the architecture's own code). The command's own
package, `hf_attn.commands`, is the *hallway*: the request starts there (`hf_attn.commands.train.main(argv)`) and
goes out to the rooms one step at a time. The calls are followed as long as each caller is hf_attn's own code (what
a library calls back, a `map` function or the model inside `Trainer`, is the library's walk).

The request is in the room the hallway last handed it to. A room calling a room that the layer table
(`tests/test_imports.py`) lets it import, its own layer or one below, is that room using its tools: the request
stays where it is. A call into a higher layer is a *climb* (a callback, or a rule of the layers broken in practice):
the request moves there. A *stay* is a run of the walk in one room, entered from the hallway or by a climb, and a
*re-entry* is a stay in a room after its first (the issue's "returns"). Returning to the hallway starts no stay.

With `--strict`, every call from one module of hf_attn into another is a move and every return into a caller
another, the count the issue first made (modules as rooms): the rooms' inner traffic, for comparison.

The request is a CSV of reviews trained for a few steps, the path a user's first command takes:

    python benchmarks/call_walk.py [--rooms] [--path] [--strict]
"""

from __future__ import annotations

import argparse
import collections
import csv
import inspect
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HALLWAY = "hf_attn.commands"
# What the last `walk` saw beside its stays: each call the hallway made into a room (`room: function`), and each
# call from a room into a higher layer than its own (`function (module) <- caller's module`).
steps: list[str] = []
climbs: list[str] = []


def module_of(module: str | None) -> str | None:
    """`module` if it is hf_attn's, a model folder's modules as one (`hf_attn.models.<name>`); `None` outside."""
    if not module or not (module == "hf_attn" or module.startswith("hf_attn.")):
        return None
    parts = module.split(".")
    return ".".join(parts[:3]) if len(parts) > 2 and parts[1] == "models" else module


def room_of(module: str) -> str:
    """The room of one of hf_attn's modules (as `module_of` names it): its package below `hf_attn`."""
    parts = module.split(".")
    return ".".join(parts[:3]) if len(parts) > 2 and parts[1] == "models" else ".".join(parts[:2])


def layer(module: str) -> int:
    """A module's layer index in the test suite's table (lowest first)."""
    sys.path.insert(0, str(ROOT))
    from tests.test_imports import layer_of

    return layer_of(module)


def _name(frame) -> str:
    return getattr(frame.f_code, "co_qualname", frame.f_code.co_name)  # Python 3.10 has no qualified name


def walk(argv: list[str], strict: bool = False) -> list[tuple[str, str, str]]:
    """The stays of the request, in order: (room, how it was entered: `hallway`, `climb` or with `strict` `call` /
    `return`, the function entered)."""
    from hf_attn.commands import train as training

    # Per frame from `main` down: (its module, the room holding the request); `None` for a library's frame.
    stack: list[tuple[str, str] | None] = [("hf_attn.commands.train", HALLWAY)]
    resumed: set = set()  # generators' frames (kept alive until the walk ends), whose later calls resume them
    stays: list[tuple[str, str, str]] = []
    steps.clear()
    climbs.clear()

    def followed() -> bool:
        # Followed while every frame from `main` down is hf_attn's: code that a library calls back (a `map`
        # function, a Trainer callback, a model's forward inside the training loop) is that library's walk.
        return bool(stack) and None not in stack

    def stay(room: str, how: str, frame) -> None:
        if not stays or stays[-1][0] != room:
            stays.append((room, how, f"{_name(frame)} ({frame.f_globals.get('__name__')})"))

    def profile(frame, event, _arg):
        if event == "call":
            was_followed, caller = followed(), stack[-1] if stack else None
            if frame in resumed:  # a generator pulled again: its room as at its first call
                stack.append(caller)
                return
            module = module_of(frame.f_globals.get("__name__"))
            if frame.f_code.co_flags & (inspect.CO_GENERATOR | inspect.CO_ASYNC_GENERATOR):
                resumed.add(frame)
            if module is None or not was_followed:
                stack.append(None if module is None else (module, caller[1] if caller else HALLWAY))
                return
            calling_module, holder = caller
            room = room_of(module)
            if room_of(calling_module) != HALLWAY and layer(module) > layer(calling_module):
                climbs.append(f"{_name(frame)} ({module}) <- {calling_module}")
            if room_of(calling_module) == HALLWAY and room != HALLWAY:
                steps.append(f"{room}: {_name(frame)}")
            if strict:
                holder = module
                if module != calling_module:
                    stay(module, "call", frame)
            elif room_of(calling_module) == HALLWAY and room != HALLWAY:
                holder = room
                stay(room, "hallway", frame)
            elif room == holder or layer(module) <= layer(calling_module):
                pass  # the holder's own code, or a tool of the calling room's: the request stays where it is
            else:
                holder = room
                stay(room, "climb", frame)
            stack.append((module, holder))
        elif event == "return" and stack:
            stack.pop()
            if strict and followed() and stack[-1][0] != module_of(frame.f_globals.get("__name__")):
                stay(stack[-1][0], "return", frame)

    sys.setprofile(profile)
    try:
        training.main(argv)
    finally:
        sys.setprofile(None)
    return stays


def review_request(folder: Path) -> list[str]:
    """The arguments of `hf-attn train` on a CSV of reviews written into `folder`, trained for two steps."""
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / "reviews.csv"
    with data.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["text", "label"])
        writer.writerows([f"the food was {word} {i}", label] for i in range(64)
                         for word, label in (("great", "pos"), ("awful", "neg")))  # fmt: skip
    return ["--dataset", str(data), "--output_dir", str(folder / "run"), "--max_steps", "2", "--report_to", "none",
            "--disable_tqdm", "true", "--save_strategy", "no"]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rooms", action="store_true", help="print each room's stays")
    parser.add_argument("--path", action="store_true", help="print every stay, with the function that began it")
    parser.add_argument("--strict", action="store_true", help="every call or return between modules a move")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        stays = walk(review_request(Path(folder)), args.strict)
    rooms = collections.Counter(room for room, _, _ in stays)
    re_entries = len(stays) - len(rooms)
    print(f"{len(stays)} stays in {len(rooms)} rooms ({re_entries} re-entries), {len(climbs)} climbs back up")
    print(f"most entered: {', '.join(f'{room} {count}' for room, count in rooms.most_common(5))}")
    if not args.strict:
        print(f"the hallway's {len(steps)} steps: {'; '.join(steps)}")
    if args.path:
        for room, how, function in stays:
            print(f"  {how:8s} {room:32s} {function}")
        for climb in climbs:
            print(f"  climb: {climb}")
    if args.rooms:
        for room, count in rooms.most_common():
            print(f"  {count:3d}  {room}")


if __name__ == "__main__":
    main()
