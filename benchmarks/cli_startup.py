"""How fast hf_attn starts: `import hf_attn` against `import torch, transformers`, and every `hf-attn COMMAND --help`.

Issue 47's goals, measured in one run on one machine:

- `import hf_attn` costs at most 1.3× `import torch, transformers` (the ratio is printed). It imports neither: Auto
  registration waits for transformers to load its Auto classes (`hf_attn.registry.auto`), so the row
  "import hf_attn, then AutoConfig" shows what a user who touches transformers pays, registration included.
- `hf-attn COMMAND --help` answers in under 1.5 s, for every command.

Each command runs `--repeats` times in a fresh process, after one warm-up run (so the file cache is warm); the
median wall time is reported. Prints a table and, last,
`RESULT import_ratio=<x> import_s=<s> peer_s=<s> slowest_help_s=<s> slowest_help=<command>`.

    .venv/bin/python benchmarks/cli_startup.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

SCRIPT = Path(sys.executable).with_name("hf-attn")
COMMANDS = ("list", "train", "evaluate", "predict", "recipes", "demo", "card", "push", "verify", "visualize")
IMPORT_GOAL, HELP_GOAL_S = 1.3, 1.5


def wall_seconds(command: list[str], repeats: int) -> float:
    """Median wall seconds of running `command` to completion, after one warm-up run."""
    subprocess.run(command, capture_output=True, check=True)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(command, capture_output=True, check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    python = [sys.executable, "-c"]
    imports = {
        "python -c pass (the interpreter)": [*python, "pass"],
        "import torch, transformers (peer)": [*python, "import torch, transformers"],
        "import hf_attn": [*python, "import hf_attn"],
        "import hf_attn, then AutoConfig (registers)": [
            *python,
            "import hf_attn; from transformers import AutoConfig",
        ],
    }
    helps = {"hf-attn --help": [str(SCRIPT), "--help"]}
    helps |= {f"hf-attn {command} --help": [str(SCRIPT), command, "--help"] for command in COMMANDS}
    seconds = {name: wall_seconds(command, args.repeats) for name, command in (imports | helps).items()}

    peer, ours = seconds["import torch, transformers (peer)"], seconds["import hf_attn"]
    ratio = ours / peer
    slowest = max(helps, key=seconds.__getitem__)
    print(f"\nStart-up, median of {args.repeats} fresh processes\n")
    print(f"| {'command':46s} | {'seconds':>8s} | {'goal':>18s} |")
    print(f"|{'-' * 48}|{'-' * 10}|{'-' * 20}|")
    for name in imports | helps:
        goal = ""
        if name == "import hf_attn":
            goal = f"{ratio:.2f}× peer ≤ {IMPORT_GOAL}× {'✓' if ratio <= IMPORT_GOAL else '✗'}"
        elif name in helps:
            goal = f"< {HELP_GOAL_S} s {'✓' if seconds[name] < HELP_GOAL_S else '✗'}"
        print(f"| {name:46s} | {seconds[name]:8.2f} | {goal:>18s} |")
    print(
        f"RESULT import_ratio={ratio:.3f} import_s={ours:.2f} peer_s={peer:.2f} "
        f"slowest_help_s={seconds[slowest]:.2f} slowest_help={slowest.split()[1]}"
    )


if __name__ == "__main__":
    main()
