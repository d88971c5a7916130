"""The `hf-attn` command.

hf-attn list                      the registered architectures
hf-attn train --output_dir DIR    train with Trainer, on a synthetic task or --dataset (see `hf-attn train -h`)
hf-attn evaluate MODEL --dataset  score a trained model on a dataset (JSON metrics)
hf-attn faithfulness MODEL --dataset  how faithful its attention is: erasure, agreement, flips (JSON)
hf-attn predict MODEL "text"      a trained model's prediction and the tokens it attends to (--file: one a line)
hf-attn recipes                   the papers' settings `hf-attn train --recipe NAME` runs
hf-attn demo                      train, save, reload and inspect the default architecture in about a minute
hf-attn verify DIR                check a saved model folder's weights against their integrity records
hf-attn visualize MODEL "text" --out F  draw its attention for the text (F: .html or .png)
hf-attn convert ARCH ...          convert an original implementation's checkpoint (see hf-attn convert ARCH --help)

A mistake the command can tell (a wrong option or value, a missing or unreadable file, a folder that holds no
model) ends it with one line, `hf-attn COMMAND: what is wrong`, and exit status 1; `--debug` anywhere on the
command line shows the traceback instead. `list` and `--help` import neither torch nor transformers.

Each command is a module of `hf_attn.commands`, with its own options (`COMMANDS`); this one dispatches.
"""

from __future__ import annotations

import importlib
import sys

from .utils.errors import CommandParser, debug_flags, run_command
from .utils.hub_faults import quiet_hub_logs
from .utils.progress import hidden_progress_bars


def _version() -> str:
    """The installed distribution's version (read from its metadata: no import of torch)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("hf_attn")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


# The commands, each a module of `hf_attn.commands` (imported when it runs, so that `--help` and `list` load no
# torch), with its line of help. A module has `add_arguments(parser)` and `run(args)`, or, where it reads the rest
# of the command line with a parser of its own (transformers' `HfArgumentParser`), `main(argv)`.
COMMANDS = {
    "list": "list the registered architectures",
    "train": "train with Trainer: a synthetic task or --dataset; every TrainingArguments flag",
    "evaluate": "score a trained model on a dataset; prints and writes JSON metrics",
    "faithfulness": "how faithful a trained model's attention is: erasure, agreement with gradients, flips",
    "predict": "a trained model's predictions for texts, with the tokens it attends to",
    "recipes": "the papers' settings (hf-attn train --recipe NAME)",
    "demo": "train, save, reload and inspect the default architecture on its synthetic task",
    "card": "write README.md (the model card) into a saved model folder",
    "push": "upload a saved model folder to the Hub (token: HF_TOKEN)",
    "verify": "check a saved model folder's weights against their records",
    "visualize": "draw a trained model's attention for a text (HTML/PNG)",
    "convert": "convert an original implementation's checkpoint to an hf_attn model folder",
}
NO_PROGRESS = {"--no-progress", "--disable_tqdm", "--disable-tqdm"}  # train's spellings of TrainingArguments' switch


def _train(argv: list[str]) -> None:
    """`hf-attn train`: its help answered from the torch-free options (`hf_attn.options.arguments`), before the
    training code loads (seconds); the run itself by `hf_attn.commands.train`."""
    from .options.arguments import HELP_ALL, help_request, print_train_help

    request = help_request(argv)  # the request's one look at its help flags
    if request == HELP_ALL:
        from .options.reading import print_full_help  # transformers' every option: loads transformers

        print_full_help()
    elif request is not None:
        print_train_help()
    else:
        from .commands import train

        train.main(argv)


def main(argv: list[str] | None = None) -> None:
    """Runs a command; a user's mistake ends it with one line and exit status 1 (`SystemExit`), or with its
    traceback under `--debug` (`hf_attn.utils.errors.run_command`)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    # No progress (bars, steps) where standard error is not a terminal (a log file, a pipe, a test) or asked so.
    quiet = not sys.stderr.isatty() or bool(NO_PROGRESS & set(argv))
    if quiet and argv[:1] == ["train"] and not NO_PROGRESS & set(argv):
        argv = [*argv, "--no-progress"]  # the Trainer's own bars too (TrainingArguments.disable_tqdm)
    if not debug_flags(argv):  # a failed transfer is told once, in its one line; --debug shows every retry
        quiet_hub_logs()
    with hidden_progress_bars(quiet):
        run_command(_run, argv)


def _run(argv: list[str]) -> None:
    if argv and argv[0] == "train":
        _train(argv[1:])
        return
    if argv and argv[0] in COMMANDS:
        command = importlib.import_module(f"hf_attn.commands.{argv[0]}")
        if not hasattr(command, "add_arguments"):
            command.main(argv[1:])
            return
        parser = CommandParser(prog=f"hf-attn {argv[0]}", description=COMMANDS[argv[0]])
        command.add_arguments(parser)
        command.run(parser.parse_args(argv[1:]))
        return
    parser = CommandParser(prog="hf-attn", description="Classic attention architectures of NLP.")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error (any command)")
    parser.add_argument("--version", action="version", version=f"hf-attn {_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, help_text in COMMANDS.items():
        commands.add_parser(name, help=help_text, add_help=False)
    parser.parse_args(argv)  # no command, or one that is not: its usage error, or the help asked for


if __name__ == "__main__":
    main(sys.argv[1:])
