"""A training run (hf_attn.commands.train) does each thing once: the config is built once, each checkpoint is
verified once, the output folder's lock is taken once and the finished folder is written by one staged save, and
the card is written from the model and tokenizer in memory (nothing is read back from disk to write it).

The real functions run: each is wrapped by a counter that calls it through (`Counter.wrap`), where the pipeline
looks it up. The command's path is traced too (`benchmarks/call_walk.py`): one step a room."""

from __future__ import annotations

import collections
import functools
import importlib.util
import json
import sys
from pathlib import Path

import pytest
from transformers import PreTrainedModel, PreTrainedTokenizerBase

import hf_attn.cards
import hf_attn.utils.locks
import hf_attn.utils.saving
from hf_attn.commands.train import train
from hf_attn.registry.index import default_architecture
from hf_attn.registry.table import get_architecture
from tests.helpers import REPO_ROOT, temporary_files


class Counter(collections.Counter):
    """Counts calls by name (and, with `key`, by what the call names), calling each function through."""

    def wrap(self, monkeypatch, owners, name, key=None):
        original = getattr(owners[0], name)

        @functools.wraps(original)
        def counted(*args, **kwargs):
            self[(name, key(*args, **kwargs)) if key else name] += 1
            return original(*args, **kwargs)

        for owner in owners:
            monkeypatch.setattr(owner, name, counted)


@pytest.fixture
def counts(monkeypatch):
    counter = Counter()
    config_class = get_architecture(default_architecture()).config_class
    original_init = config_class.__init__

    def counted_init(self, *args, **kwargs):
        counter["config built"] += type(self) is config_class
        original_init(self, *args, **kwargs)

    monkeypatch.setattr(config_class, "__init__", counted_init)
    saving = hf_attn.utils.saving
    counter.wrap(monkeypatch, [saving], "checkpoint_problem", key=lambda path: Path(path).name)
    counter.wrap(monkeypatch, [saving, hf_attn.cards], "staged_save", key=lambda folder: Path(folder).name)
    counter.wrap(monkeypatch, [hf_attn.utils.locks], "_take", key=lambda path: Path(path).parent.name)
    for owner, name in ((PreTrainedModel, "from_pretrained"), (PreTrainedTokenizerBase, "from_pretrained")):
        original = getattr(owner, name).__func__

        def reloaded(cls, *args, _original=original, _what=owner.__name__, **kwargs):
            counter[f"{_what} read back"] += 1
            return _original(cls, *args, **kwargs)

        monkeypatch.setattr(owner, name, classmethod(reloaded))
    return counter


OPTIONS = {
    "num_train": 48,
    "num_eval": 8,
    "batch_size": 8,
    "save_steps": 3,
    "seed": 0,
    "disable_tqdm": True,
    "logging_steps": 100,
    "config": {
        key: value
        for key, value in get_architecture(default_architecture()).tiny_config.items()
        if key not in ("vocab_size", "num_labels", "pad_token_id")
    },
}


def command_line(options: dict) -> list[str]:
    """`options` (`train()`'s keywords) as `hf-attn train` flags, spelt with dashes (`--batch-size`)."""
    argv = []
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        if key == "config":
            argv += [flag, *(f"{name}={json.dumps(field)}" for name, field in value.items())]
        else:
            argv += [flag] if value is True else [flag, str(value)]
    return argv


@pytest.mark.parametrize("entry", ["hf-attn train", "train()"])
def test_one_training_run_does_each_thing_once(counts, tmp_path, entry):
    out = tmp_path / "run"
    if entry == "train()":
        train(out, max_steps=3, **OPTIONS)
    else:
        from hf_attn.cli import main

        main(["train", "--output_dir", str(out), "--max_steps", "3", *command_line(OPTIONS)])
    assert counts["config built"] == 1, counts
    # A save into a staging folder (the model's and the tokenizer's, inside the finished folder's) writes there
    # directly: it stages nothing of its own.
    staging = hf_attn.utils.saving.STAGING_PREFIX
    saves = {key[1]: n for key, n in counts.items() if key[0] == "staged_save" and not key[1].startswith(staging)}
    assert saves == {"checkpoint-3": 1, "run": 1}, counts  # the checkpoint's, and the finished folder's: no other
    assert counts[("_take", "run")] == 1, counts  # the output folder's lock, held from the start to the last save
    assert counts["PreTrainedModel read back"] == counts["PreTrainedTokenizerBase read back"] == 0, counts
    card = (out / "README.md").read_text()
    assert "accuracy" in card and json.loads((out / "hf_attn_training.json").read_text())["metrics"]
    assert f'from_pretrained("{out}")' in card and "\n# run\n" in card and "saving-" not in card  # not the staging


@functools.cache
def call_walk():
    """`benchmarks/call_walk.py`, the tracer of a request's walk through the rooms, as a module."""
    spec = importlib.util.spec_from_file_location("call_walk", REPO_ROOT / "benchmarks" / "call_walk.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # where its dataclass's annotations are looked up
    spec.loader.exec_module(module)
    return module


# The strict walk of `hf-attn train` on a CSV (`call_walk.py --strict`): every call between two of hf_attn's modules
# and its return a move. 254 before each step of the data path was one call into the module that does it; a change
# that sends the request back and forth again fails here.
STRICT_STAYS = 120


def test_the_command_takes_each_step_in_one_room(tmp_path):
    """`hf-attn train` on a CSV, traced: the command hands the request to a room five times (the options read, then
    checked against the output folder; the run prepared, then fitted; the folder saved), no room is entered more
    than twice and none calls back up the layers. The same walk counted strictly (every call between modules a
    move) is the rooms' inner traffic: the tracer does see it, and it stays under `STRICT_STAYS`."""
    walk = call_walk().walk(call_walk().review_request(tmp_path))
    assert walk.steps == [
        "hf_attn.options: parse_arguments",
        "hf_attn.options: check_output_folder",
        "hf_attn.training: prepare_run",
        "hf_attn.training: fit_run",
        "hf_attn.cards: save_trained",
    ]
    rooms = walk.rooms()
    assert max(rooms.values()) <= 2 and len(walk.stays) - len(rooms) <= 10 and walk.climbs == [], walk.summary()
    assert walk.rooms(strict=True)["hf_attn.data.cache"] >= 3, walk.summary(strict=True)
    assert len(walk.strict) <= STRICT_STAYS, walk.summary(strict=True)


def test_the_strict_walk_counts_a_generators_body_in_its_reader():
    """A generator's body runs in its reader's stay (`call_walk.py`'s docstring), also when it calls a library: the
    library's return into the generator and the generator's yield to its reader are no moves. Two functions
    written as if in `hf_attn.data.rows` (the reader) and `hf_attn.data.cache` (the generator)."""
    cache = {"__name__": "hf_attn.data.cache", "json": json}
    exec("def encoded(values):\n    for value in values:\n        yield json.dumps(value)\n", cache)
    rows = {"__name__": "hf_attn.data.rows", "encoded": cache["encoded"]}
    exec("def read(values):\n    return list(encoded(values))\n", rows)
    walk = call_walk().trace(rows["read"], [1, 2, 3])
    assert [room for room, _, _ in walk.strict] == ["hf_attn.data.rows", "hf_attn.commands.train"], walk.strict
    assert walk.steps == ["hf_attn.data: read"] and walk.climbs == []


def test_a_resumed_run_verifies_each_checkpoint_once(counts, tmp_path):
    out = tmp_path / "run"
    train(out, max_steps=3, **OPTIONS)
    counts.clear()
    train(out, max_steps=6, resume_from_checkpoint=True, overwrite_output_dir=True, **OPTIONS)
    checked = {key[1]: count for key, count in counts.items() if key[0] == "checkpoint_problem"}
    assert checked == {"checkpoint-3": 1}, counts
    assert counts["config built"] == 1 and counts[("staged_save", "run")] == 1, counts
    assert counts[("_take", "run")] == 1 and counts["PreTrainedModel read back"] == 0, counts


TINY_RUN = {"arch": "lin_self_attentive", "num_train": 16, "num_eval": 8, "max_steps": 1, "batch_size": 8,
            "save_strategy": "no", "disable_tqdm": True, "report_to": "none",
            "config_overrides": {"embedding_size": 8, "hidden_size": 8, "attention_hidden_size": 8,
                                 "classifier_hidden_size": 8}}  # fmt: skip


def test_training_into_a_trained_model_is_refused_unless_asked(tmp_path):
    from hf_attn.commands.train import train
    from hf_attn.utils.integrity import verify_folder

    folder = tmp_path / "run"
    train(folder, **{**TINY_RUN, "save_strategy": "steps", "save_steps": 1})
    checkpoint = folder / "checkpoint-1"  # written by Trainer through save_pretrained: staged, recorded, no leftovers
    assert verify_folder(checkpoint, require_record=True) == ["model.safetensors"]
    assert temporary_files(checkpoint) == [] and temporary_files(folder) == []
    weights = (folder / "model.safetensors").read_bytes()
    with pytest.raises(FileExistsError, match=r"already holds a saved model.*--overwrite_output_dir"):
        train(folder, **TINY_RUN, seed=1)
    assert (folder / "model.safetensors").read_bytes() == weights  # untouched
    train(folder, **TINY_RUN, seed=1, overwrite_output_dir=True)
    assert (folder / "model.safetensors").read_bytes() != weights
    assert temporary_files(folder) == []
