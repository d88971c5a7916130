"""`hf-attn train`'s torch-free options (`hf_attn.options.arguments`): their help, each default said once, every
training argument listed."""

from __future__ import annotations

import dataclasses
import re
import subprocess

import pytest

from hf_attn.cli import COMMANDS, main
from tests.helpers import console_script


def test_train_help_all_lists_every_training_argument(capsys):
    from transformers import Seq2SeqTrainingArguments

    main(["train", "--help-all"])  # answered where `hf-attn train` looks at its help flags, once, as --help is
    shown = capsys.readouterr().out
    for item in dataclasses.fields(Seq2SeqTrainingArguments):
        if item.init:
            assert f"--{item.name}" in shown, item.name


@pytest.mark.parametrize("command", ["train", "evaluate"])
def test_help_says_each_default_once_and_a_switch_off_as_off(command):
    """Through the console script: an option whose help says its default in words gets no second `(default: None)`,
    and the `--no_save` complement of a switch that is on by default says it turns it off (transformers copies the
    switch's own help, which reads inverted there)."""
    result = subprocess.run([*console_script(), command, "--help"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    entries = re.split(r"\n  (?=-)", result.stdout)  # one entry an option, its help folded over lines
    twice = [entry.split()[0] for entry in entries if len(re.findall(r"\(default:", entry)) > 1]
    assert not twice, twice
    no_save = next(entry for entry in entries if entry.startswith("--no_save"))
    assert " ".join(no_save.split()) == "--no_save, --no-save turn --save off (default: --save is on)"
    held_out = next(entry for entry in entries if entry.startswith("--eval_split"))
    assert " ".join(held_out.split()).endswith("(default: validation, dev, valid or test)")


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_help_exits_zero_through_the_console_script(command):
    """`hf-attn COMMAND --help` prints its options and exits 0 for every command the CLI lists: a bare `%` in an
    option's help reaches argparse's formatter only when the help is printed (`faithfulness --k` once did)."""
    result = subprocess.run([*console_script(), command, "--help"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert "usage:" in result.stdout
