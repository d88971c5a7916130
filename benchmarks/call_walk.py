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
another, the count the issue first made (modules as rooms): the rooms' inner traffic, for comparison. A generator's
body runs in the stay of whoever pulls it (an iterator handed down the layers is read, not a call back up).

The request is a CSV of reviews trained for a few steps, the path a user's first command takes:

    python benchmarks/call_walk.py [--rooms] [--path] [--strict]
"""

from __future__ import annotations

import argparse
import collections
import csv
import functools
import inspect
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HALLWAY = "hf_attn.commands"


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


@functools.cache
def layer(module: str) -> int:
    """A module's layer index in the test suite's table (lowest first)."""
    sys.path.insert(0, str(ROOT))
    from tests.test_imports import layer_of

    return layer_of(module)


def _name(frame) -> str:
    return getattr(frame.f_code, "co_qualname", frame.f_code.co_name)  # Python 3.10 has no qualified name


@dataclass
class Walk:
    """One request's walk. `stays`: (room, how it was entered: `hallway` or `climb`, the function entered), in
    order; `steps`: each call the hallway made into a room (`room: function`); `climbs`: each call from a room into a
    higher layer than its own (`function (module) <- caller's module`); `strict`: the same walk with every call or
    return between two modules a move (room: the module; how: `call` or `return`)."""

    stays: list[tuple[str, str, str]] = field(default_factory=list)
    steps: list[str] = field(default_factory=list)
    climbs: list[str] = field(default_factory=list)
    strict: list[tuple[str, str, str]] = field(default_factory=list)

    def rooms(self, strict: bool = False) -> collections.Counter:
        """How many stays each room had."""
        return collections.Counter(room for room, _, _ in (self.strict if strict else self.stays))

    def summary(self, strict: bool = False) -> str:
        stays, rooms = (self.strict if strict else self.stays), self.rooms(strict)
        return (
            f"{len(stays)} stays in {len(rooms)} rooms ({len(stays) - len(rooms)} re-entries), {len(self.climbs)} "
            f"climbs back up; most entered: {', '.join(f'{room} {count}' for room, count in rooms.most_common(5))}"
        )


def _enter(stays: list[tuple[str, str, str]], room: str, how: str, frame) -> None:
    if not stays or stays[-1][0] != room:
        stays.append((room, how, f"{_name(frame)} ({frame.f_globals.get('__name__')})"))


def walk(argv: list[str]) -> Walk:
    """Traces `hf_attn.commands.train.main(argv)` (module docstring)."""
    from hf_attn.commands import train as training

    return trace(training.main, argv)


def trace(request: Callable[..., object], *args: object, start: str = "hf_attn.commands.train") -> Walk:
    """The walk of `request(*args)`, a function of hf_attn's called as if from module `start` of the hallway (module
    docstring)."""
    found = Walk()
    # Per frame from the start down: (its module, the room holding the request, the module its body counts in for
    # the strict walk); `None` for a library's frame. A generator's body counts in its reader's module.
    stack: list[tuple[str, str, str] | None] = [(start, HALLWAY, start)]
    generators: dict = {}  # a generator's frame (alive until the walk ends) -> its module

    def profile(frame, event, _arg):
        if event == "return":
            if stack:
                stack.pop()
            # Back in a frame of hf_attn's: a move when the code that returns counts in another module (a library
            # returning into hf_attn's frame, or a generator yielding to its reader, starts nothing new).
            returning = module_of(frame.f_globals.get("__name__"))
            if frame in generators:
                returning = None
            if stack and None not in stack and returning is not None and stack[-1][2] != returning:
                _enter(found.strict, stack[-1][2], "return", frame)
            return
        if event != "call":
            return
        caller = stack[-1] if stack else None
        followed = caller is not None and None not in stack
        module = generators.get(frame) or module_of(frame.f_globals.get("__name__"))
        if frame.f_code.co_flags & (inspect.CO_GENERATOR | inspect.CO_ASYNC_GENERATOR):
            # A generator's body runs as its reader pulls it: an iterator handed down the layers is read, not a
            # call back up. It runs in the reader's stay, and counts in the reader's module.
            generators[frame] = module
            reader = caller[2] if caller else start
            stack.append(None if module is None else (module, caller[1] if caller else HALLWAY, reader))
            return
        if module is None or not followed:
            stack.append(None if module is None else (module, caller[1] if caller else HALLWAY, module))
            return
        calling_module, holder, counted_in = caller
        room, from_hallway = room_of(module), room_of(calling_module) == HALLWAY
        if module != counted_in:
            _enter(found.strict, module, "call", frame)
        if from_hallway and room != HALLWAY:  # the hallway hands the request to a room
            holder = room
            found.steps.append(f"{room}: {_name(frame)}")
            _enter(found.stays, room, "hallway", frame)
        elif layer(module) > layer(calling_module):  # a call up the layers: the request moves there
            found.climbs.append(f"{_name(frame)} ({module}) <- {calling_module}")
            if room != holder:
                holder = room
                _enter(found.stays, room, "climb", frame)
        # else: the holder's own code, or a tool of the calling room's: the request stays where it is
        stack.append((module, holder, module))

    sys.setprofile(profile)
    try:
        request(*args)
    finally:
        sys.setprofile(None)
    return found


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
        found = walk(review_request(Path(folder)))
    print(found.summary(args.strict))
    if not args.strict:
        print(f"the hallway's {len(found.steps)} steps: {'; '.join(found.steps)}")
    if args.path:
        for room, how, function in found.strict if args.strict else found.stays:
            print(f"  {how:8s} {room:32s} {function}")
        for climb in found.climbs:
            print(f"  climb: {climb}")
    if args.rooms:
        for room, count in found.rooms(args.strict).most_common():
            print(f"  {count:3d}  {room}")


if __name__ == "__main__":
    main()
