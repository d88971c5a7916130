"""A command's mistakes as one line: what `hf-attn` (and `python -m hf_attn.commands.train`) print instead of a
traceback.

A user's mistake, as the code under a command reports it, is a bad option or value (`ValueError`, e.g. a config
field's validation error), a missing or unreadable file or folder (`OSError`), a missing optional package
(`ImportError`) or an unsupported request (`NotImplementedError`); a malformed input file is a `ValueError` naming the
file and line (`hf_attn.data.files`). `run_command` ends the command on one of these with one line,
`hf-attn COMMAND: what is wrong (--debug shows the traceback)`, and exit status 1; Ctrl-C with
`hf-attn COMMAND: interrupted` and status 130. Memory the sizes asked for exhausted and a weights file that does not
parse are a user's too (`user_error`), as are the weights of a folder whose config.json was edited to other sizes,
a write the file system refused (no space, no permission, a vanished folder: `hf_attn.utils.saving.io_fault`),
and every exception of a library's own class (datasets, huggingface_hub, tokenizers, yaml, ...: the library met the
user's file, folder, network or option), named with its library. What remains, a Python exception raised under
hf_attn's code (a `RuntimeError`, a `KeyError`, ...), is a bug of ours and keeps its traceback; `--debug` keeps it
for the mistakes too.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from .saving import WRITE_FAULTS, io_errno, io_fault


class OneLineUsageErrors:
    """A mixin for `argparse.ArgumentParser` (and transformers' `HfArgumentParser`): a usage error is one line,
    `PROG: message (see PROG --help)`, like every other mistake of a command."""

    prog: str

    def error(self, message: str) -> None:
        raise SystemExit(f"{self.prog}: {message} (see {self.prog} --help)")


class CommandParser(OneLineUsageErrors, argparse.ArgumentParser):
    """argparse, with a usage error as one line: `hf-attn COMMAND: message (see hf-attn COMMAND --help)`."""


USER_ERRORS: tuple[type[BaseException], ...] = (ValueError, OSError, ImportError, NotImplementedError)


def one_line(error: BaseException) -> str:
    """An exception's message on one line (transformers' and the Hub's messages span several)."""
    return " ".join(str(error).split()) or type(error).__name__


def debug_flags(argv: list[str]) -> list[int]:
    """Where `--debug` is ours: everywhere, but `train --debug VALUE` is TrainingArguments' own option (e.g.
    `underflow_overflow`) and goes to the Trainer."""
    training = bool(argv) and argv[0] == "train"
    return [
        index
        for index, argument in enumerate(argv)
        if argument == "--debug" and not (training and index + 1 < len(argv) and not argv[index + 1].startswith("-"))
    ]


def run_command(run: Callable[[list[str]], object], argv: list[str]) -> None:
    """Runs `run(argv)` (`argv[0]` names the command, `--debug` taken out); a user's mistake (`USER_ERRORS`) ends
    it with one line (`SystemExit`, status 1), or with its traceback under `--debug`."""
    ours = debug_flags(argv)
    argv = [argument for index, argument in enumerate(argv) if index not in ours]
    command = next((argument for argument in argv if not argument.startswith("-")), "")
    try:
        run(argv)
    except KeyboardInterrupt as interrupt:
        if ours:
            raise
        # Ctrl-C: one line and the shell's status for SIGINT, not a traceback through the training loop (with
        # where a training run can go on from, when it says).
        detail = f"; {one_line(interrupt)}" if str(interrupt) else ""
        print(f"hf-attn {command or '(no command)'}: interrupted{detail}", file=sys.stderr)
        raise SystemExit(130) from None
    except Exception as error:
        what = user_error(error)
        if ours or what is None:
            raise
        message = f"hf-attn {command or '(no command)'}: {what} (--debug shows the traceback)"
        raise SystemExit(message) from None


def user_error(error: BaseException) -> str | None:
    """The one line for an error a user can cause (`USER_ERRORS`, memory exhausted by the sizes asked for, a
    weights file that does not parse), or `None` for a bug of ours, which keeps its traceback."""
    name = type(error).__name__
    # torch.OutOfMemoryError (CUDA) and the CPU allocator's failure are RuntimeErrors, told by name and message
    out_of_memory = name == "OutOfMemoryError" or "can't allocate memory" in str(error)
    if isinstance(error, MemoryError) or out_of_memory:
        return (
            f"out of memory ({one_line(error)[:160]}): lower --per_device_train_batch_size or --max_length, or use "
            "--gradient_accumulation_steps"
        )
    # A write the file system refused outside a staged save (a checkpoint, say): the fault first, then the OS's words
    # (a missing or unreadable input file, also an OSError, keeps its own message below).
    if (isinstance(error, OSError) or name == "SafetensorError") and io_errno(error) in WRITE_FAULTS:
        return f"{io_fault(error)}: {one_line(error)}"
    if isinstance(error, RuntimeError) and "PytorchStreamWriter failed writing file" in str(error):
        # torch.save (a checkpoint's optimizer state) on a full disk: its message does not give the OS's reason
        return f"a checkpoint file could not be written (is the disk full?): {one_line(error)}"
    if name == "SafetensorError":  # safetensors' own error: a weights file cut short or not safetensors
        return f"a weights file does not load: {one_line(error)}"
    if isinstance(error, RuntimeError) and "ignore_mismatched_sizes" in str(error):  # transformers' loading
        return (
            "the weights do not fit the sizes of the config.json beside them (was it edited? transformers' report "
            "above lists each weight)"
        )
    if isinstance(error, USER_ERRORS):
        return one_line(error)
    library = _library(error)
    if library is not None:
        return f"{library}: {name}: {one_line(error)}"
    return None


def _library(error: BaseException) -> str | None:
    """The distribution-level package that defines the exception's class, when it is neither Python's nor hf_attn's
    (a third party's own error class: it reports what it met, e.g. a data file it cannot build a dataset from)."""
    package = type(error).__module__.split(".")[0]
    return None if package in ("builtins", "hf_attn", "__main__") else package
