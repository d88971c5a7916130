"""How fast `hf-attn` starts: `list` and `--help` against the interpreter alone and a full `import hf_attn`.

`hf-attn list` and `hf-attn --help` read the registry from its source files (`hf_attn.registry_index`) and import
neither torch nor transformers; the peers are `python -c pass` (the floor: the interpreter itself) and
`python -c "import hf_attn"` (what every command cost before: torch, transformers and every model registered).
Each command runs `--repeats` times in a fresh process (after one warm-up run, so the file cache is warm); the
median wall time is reported.
Prints a table and, last, `RESULT list_s=<seconds> help_s=<seconds> import_s=<seconds>`.

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
    commands = {
        "hf-attn list": [str(SCRIPT), "list"],
        "hf-attn --help": [str(SCRIPT), "--help"],
        "python -c pass (floor)": [sys.executable, "-c", "pass"],
        "python -c 'import hf_attn' (peer)": [sys.executable, "-c", "import hf_attn"],
    }
    seconds = {name: wall_seconds(command, args.repeats) for name, command in commands.items()}
    print(f"\nStart-up, median of {args.repeats} fresh processes\n")
    print(f"| {'command':36s} | {'seconds':>8s} |")
    print(f"|{'-' * 38}|{'-' * 10}|")
    for name, value in seconds.items():
        print(f"| {name:36s} | {value:8.2f} |")
    print(
        f"RESULT list_s={seconds['hf-attn list']:.2f} help_s={seconds['hf-attn --help']:.2f} "
        f"import_s={seconds[list(commands)[-1]]:.2f}"
    )


if __name__ == "__main__":
    main()
