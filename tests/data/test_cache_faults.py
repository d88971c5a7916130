"""A data cache that keeps nothing broken (issue 67): every file a run reuses from the `datasets` cache (the file's
Arrow copy, the prepared rows, the held-out part's indices, the encodings, the kept vocabulary) damaged, or the cache
unwritable, or a run killed while it writes there. Each fault is recovered from (the file named in one line, computed
again, the run equal to one on a clean cache) or refused in one line, through `hf-attn train` and through `train()`.
The console-script runs (a fresh process each) are in the `long` tier."""

from __future__ import annotations

import csv
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import datasets
import pytest

from hf_attn import train
from hf_attn.cli import main
from hf_attn.data.cache import BUILT_CHECKSUMS
from tests.data.test_cache import LIN_OPTIONS, data_line, train_printed, write_reviews
from tests.helpers import console_script, one_line_faults
from tests.training.test_preparation import LIN, QUIET

# `train()`'s keywords for the runs of `LIN_OPTIONS` and `QUIET` on a review CSV.
LIN_KEYWORDS = {
    "arch": "lin_self_attentive",
    "config": {name: int(value) for name, value in (item.split("=") for item in LIN[1:])},
    "text_column": "review",
    "label_column": "stars",
    "overwrite_output_dir": True,
    "max_steps": 3,
    "disable_tqdm": True,
    "save_strategy": "no",
    "logging_steps": 1000,
    "report_to": "none",
}
FAULTS = ["cut to half", "emptied", "garbled"]


def damage(path: Path, fault: str) -> None:
    """`path` cut to half its size or emptied (as a full disk or a copy cut short leaves a file), or garbled: 16
    bytes in its middle inverted, its size kept."""
    size = path.stat().st_size
    with path.open("r+b") as handle:
        if fault == "garbled":
            handle.seek(size // 2)
            middle = handle.read(16)
            handle.seek(size // 2)
            handle.write(bytes(255 - byte for byte in middle))
        else:
            handle.truncate(size // 2 if fault == "cut to half" else 0)


def review_run(tmp_path: Path, data: Path, steps: int = 3) -> list[str]:
    """`hf-attn train`'s options for `LIN_OPTIONS` on the review CSV `data`."""
    return [*LIN_OPTIONS, "--dataset", str(data), "--text_column", "review", "--label_column", "stars",
            "--output_dir", str(tmp_path / "run"), "--overwrite_output_dir", "--max_steps", str(steps)]  # fmt: skip


def repaired(errors: str) -> list[str]:
    """The lines saying a cached file was removed and computed again."""
    return [line for line in errors.splitlines() if line.startswith("[hf-attn] the ") and "removed, and" in line]


def named(lines: list[str]) -> set[str]:
    """The cache files the lines of `repaired` name."""
    return {match[1] for line in lines if (match := re.match(r"\[hf-attn\] the datasets cache file (\S+) ", line))}


def reviews_with_empty_texts(path: Path) -> Path:
    """600 reviews, then 40 rows without a text: the kept rows are a cached step of their own."""
    write_reviews(path, 600)
    with path.open("a", newline="") as handle:
        csv.writer(handle).writerows([[3, ""]] * 40)
    return path


@pytest.mark.parametrize("fault", FAULTS)
def test_a_cached_file_that_does_not_read_back_is_named_and_computed_again(tmp_path, cache, capsys, fault):
    """`hf-attn train`: every file derived from the data that a second run would reuse (the prepared rows, the kept
    ones, the indices of the two parts held out from them, each part's encoding, the kept vocabulary) damaged
    (`damage`): the
    next run names each in one line, computes it again and trains as the clean run did; the run after that reuses
    everything again."""
    run = review_run(tmp_path, reviews_with_empty_texts(tmp_path / "reviews.csv"))
    clean, _ = train_printed(capsys, *run)
    mapped = sorted(cache.rglob("cache-*.arrow"))
    vocabulary = sorted(cache.rglob("hf_attn_tokenizers/*/tokenizer.json"))
    assert len(mapped) == 6 and len(vocabulary) == 1, (mapped, vocabulary)
    for path in (*mapped, *vocabulary):
        damage(path, fault)
    assert main(["train", *run, *QUIET]) in (0, None)
    printed, errors = capsys.readouterr()
    again = json.loads(printed[printed.rindex("\n{") :])
    lines = repaired(errors)
    assert len(lines) == len(mapped) + 1 and named(lines) == {str(path) for path in mapped}, lines
    assert any(line.startswith(f"[hf-attn] the kept vocabulary {vocabulary[0].parent} ") for line in lines), lines
    assert "(cached)" not in data_line(printed), printed
    assert again["accuracy"] == clean["accuracy"] and again["loss"] == pytest.approx(clean["loss"], abs=1e-6)
    _, printed = train_printed(capsys, *run)
    assert data_line(printed).count("(cached)") == 3, printed


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("built", ["csv-train.arrow", "dataset_info.json"])
def test_a_damaged_arrow_copy_of_the_file_is_built_again_through_train(tmp_path, cache, capsys, fault, built):
    """`train()`: the Arrow copy `datasets` made of the CSV, or the description it reads first, damaged. The next run
    names it in one line, removes its folder (what was derived from it goes with it), reads the file again and trains
    as the clean run did; the run after that reuses everything."""
    data = write_reviews(tmp_path / "reviews.csv", 600)
    options = {**LIN_KEYWORDS, "dataset": str(data)}
    clean = train(tmp_path / "run", **options).metrics
    (path,) = cache.rglob(built)
    assert (path.parent / BUILT_CHECKSUMS).is_file()
    damage(path, fault)
    capsys.readouterr()
    again = train(tmp_path / "run", **options).metrics
    printed, errors = capsys.readouterr()
    lines = repaired(errors)
    assert len(lines) == 1 and named(lines) == {str(path)}, errors
    assert f"{path.parent} is removed, and built again from the data files" in lines[0], lines
    assert "(cached)" not in data_line(printed), printed
    assert same_run(again, clean), (again, clean)
    train(tmp_path / "run", **options)
    assert data_line(capsys.readouterr().out).count("(cached)") == 3


@pytest.fixture
def small_disk(tmp_path):
    """A 32 KiB tmpfs (mounting needs the right to: the test is skipped, saying why, where there is none); the test
    makes room with `grow(small_disk)`."""
    folder = tmp_path / "small-disk"
    folder.mkdir()
    mount(["-t", "tmpfs", "-o", "size=32k", "tmpfs", str(folder)])
    yield folder
    subprocess.run(["umount", str(folder)], check=False)


@pytest.fixture
def read_only_cache(tmp_path):
    """A cache folder this process cannot write: a read-only tmpfs where it runs as root (whom permissions do not
    stop), else a folder without write permission; `grow` makes it writable."""
    folder = tmp_path / "read-only"
    folder.mkdir()
    if os.geteuid() == 0:
        mount(["-t", "tmpfs", "-o", "size=64m,ro", "tmpfs", str(folder)])
        yield folder
        subprocess.run(["umount", str(folder)], check=False)
    else:
        folder.chmod(0o555)
        yield folder
        folder.chmod(0o755)


def mount(arguments: list[str]) -> None:
    mounted = subprocess.run(["mount", *arguments], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"no tmpfs can be mounted here: {mounted.stderr.decode().strip() or mounted.returncode}")


def grow(folder: Path) -> None:
    """`folder` (a `small_disk` or a `read_only_cache`) made writable, with room."""
    if os.path.ismount(folder):
        subprocess.run(["mount", "-o", "remount,rw,size=64m", str(folder)], check=True)
    else:
        folder.chmod(0o755)


# What the one line tells the user to do, for each cache that cannot be written.
REMEDIES = {"small_disk": "make room there", "read_only_cache": "make it writable"}


def left_half_written(folder: Path) -> list[Path]:
    """What a refused run left in the cache that a later run could take for a finished file: `datasets`' own Arrow
    copies and `cache-*` files outside the folders it writes aside (`*.incomplete`, `tmp*`)."""
    return [path for path in folder.rglob("*.arrow") if ".incomplete" not in str(path)]


@pytest.mark.parametrize("disk", ["small_disk", "read_only_cache"])
def test_a_cache_that_cannot_be_written_raises_one_error_naming_it_through_train(tmp_path, request, monkeypatch, disk):
    """`train()` with the `datasets` cache on a full disk or in a folder it cannot write: one `OSError` naming the
    cache and `HF_DATASETS_CACHE`, nothing half-written left there; once it can be written, the same call trains as
    on a clean cache."""
    folder = request.getfixturevalue(disk)
    data = write_reviews(tmp_path / "reviews.csv", 600)
    options = {**LIN_KEYWORDS, "dataset": str(data)}
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "clean-cache")
    clean = train(tmp_path / "run", **options).metrics
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", folder)
    with pytest.raises(OSError, match=f"the datasets cache {folder} cannot be written") as refused:
        train(tmp_path / "run", **options)
    assert REMEDIES[disk] in str(refused.value), refused.value
    assert "HF_DATASETS_CACHE=/another/folder" in str(refused.value)
    assert left_half_written(folder) == []
    grow(folder)
    again = train(tmp_path / "run", **options).metrics
    assert same_run(again, clean), (again, clean)


def console_run(tmp_path: Path, data: Path, cache: Path, steps: int = 2) -> tuple[list[str], dict[str, str]]:
    """`hf-attn train` (the console script) on the review CSV `data`, with `cache` as `HF_DATASETS_CACHE`."""
    return [*console_script(), "train", *review_run(tmp_path, data, steps), *QUIET], {
        **os.environ,
        "HF_DATASETS_CACHE": str(cache),
    }


# `train()` in a process of its own, as a user's script calls it: its metrics printed as `hf-attn train` prints them
# (rounded to 4 places), so that the two entries' runs compare.
TRAIN_SCRIPT = (
    "import json, sys\nfrom hf_attn import train\nmetrics = train(**json.loads(sys.argv[1])).metrics\n"
    "print('\\n' + json.dumps({key: round(value, 4) for key, value in metrics.items()}))"
)


def api_run(tmp_path: Path, data: Path, cache: Path, steps: int = 2) -> tuple[list[str], dict[str, str]]:
    """`train()` (in a fresh process) as `console_run` runs `hf-attn train`."""
    options = {**LIN_KEYWORDS, "output_dir": str(tmp_path / "run"), "dataset": str(data), "max_steps": steps}
    return [sys.executable, "-c", TRAIN_SCRIPT, json.dumps(options)], {**os.environ, "HF_DATASETS_CACHE": str(cache)}


def metrics_of(result: subprocess.CompletedProcess) -> dict:
    """The held-out metrics a finished `hf-attn train` printed last."""
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout[result.stdout.rindex("\n{") :])


def same_run(one: dict, other: dict) -> bool:
    """Whether two runs' printed metrics agree: the same accuracy, the same loss to 1e-6."""
    return one["accuracy"] == other["accuracy"] and one["loss"] == pytest.approx(other["loss"], abs=1e-6)


@pytest.mark.long
@pytest.mark.parametrize("disk", ["small_disk", "read_only_cache"])
def test_a_cache_that_cannot_be_written_ends_the_run_in_one_line_that_names_it(tmp_path, request, disk):
    """`hf-attn train` with `HF_DATASETS_CACHE` on a full disk or in a folder it cannot write: exit status 1, one
    line naming the cache folder and how to move it, nothing on standard output; once it can be written, the same
    command trains as on a clean cache."""
    folder = request.getfixturevalue(disk)
    data = write_reviews(tmp_path / "reviews.csv", 600)
    command, environment = console_run(tmp_path, data, folder)
    refused = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=300)
    message = f"the datasets cache {re.escape(str(folder))} cannot be written: {REMEDIES[disk]}"
    assert one_line_faults(refused, message) == [], (refused.stdout[-500:], refused.stderr[-2000:])
    assert "HF_DATASETS_CACHE=/another/folder" in refused.stderr
    assert left_half_written(folder) == []
    grow(folder)
    trained = metrics_of(subprocess.run(command, capture_output=True, text=True, env=environment, timeout=300))
    command, environment = console_run(tmp_path, data, tmp_path / "clean-cache")
    clean = metrics_of(subprocess.run(command, capture_output=True, text=True, env=environment, timeout=300))
    assert same_run(trained, clean), (trained, clean)


@pytest.mark.long
def test_the_console_script_names_each_damaged_file_and_trains_as_on_a_clean_cache(tmp_path):
    """`hf-attn train` as a user runs it: the files derived from the data damaged (each of `FAULTS` in turn), then
    the file's Arrow copy: each next run exits 0, names every damaged file on standard error (nothing but the run's
    own lines on standard output) and prints the clean run's metrics."""
    cache = tmp_path / "datasets-cache"
    command, environment = console_run(tmp_path, reviews_with_empty_texts(tmp_path / "reviews.csv"), cache)

    def train_once() -> tuple[dict, subprocess.CompletedProcess]:
        result = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=300)
        return metrics_of(result), result

    clean, _ = train_once()
    derived = sorted([*cache.rglob("cache-*.arrow"), *cache.rglob("hf_attn_tokenizers/*/tokenizer.json")])
    for index, path in enumerate(derived):
        damage(path, FAULTS[index % len(FAULTS)])
    again, result = train_once()
    lines = repaired(result.stderr)
    assert len(lines) == len(derived) and named(lines) == {str(path) for path in derived if path.suffix == ".arrow"}
    assert "does not read back" not in result.stdout and same_run(again, clean), (again, clean)
    (built,) = cache.rglob("csv-train.arrow")
    damage(built, "cut to half")
    again, result = train_once()
    assert named(repaired(result.stderr)) == {str(built)} and same_run(again, clean), result.stderr[-2000:]


def cache_state(cache: Path) -> dict[str, object]:
    """What a run has written to `cache` so far: whether `datasets` is converting the file (its `*.incomplete`
    folder), a file being written aside (`tmp*`), how many `cache-*` files are in place, and whether the vocabulary
    is kept."""
    folders = [path for path in cache.glob("csv/*/*/*") if path.is_dir() and not path.name.endswith(".incomplete")]
    folder = folders[0] if folders else None
    return {
        "converting": any(cache.glob("csv/*/*/*.incomplete")),
        "writing": folder is not None and any(folder.glob("tmp*")),
        "built": folder is not None and (folder / BUILT_CHECKSUMS).is_file(),  # the file's Arrow copy is complete
        "cached": len(list(folder.glob("cache-*.arrow"))) if folder else 0,
        "vocabulary": folder is not None and any((folder / "hf_attn_tokenizers").glob("[!.]*")),
    }


# The points of data preparation a run is killed at, in the order a run reaches them (one run each: the steps before
# a point are cached by then); the cache files are, in order, the prepared rows, the indices of the two parts held
# out from them (2 files), the encodings.
KILL_POINTS: dict[str, Callable[[dict], bool]] = {
    "converting the file to Arrow": lambda state: state["converting"],
    "preparing the training rows": lambda state: state["writing"] and state["built"] and state["cached"] == 0,
    "training the vocabulary": lambda state: state["cached"] == 3 and not state["vocabulary"],
    "encoding the training rows": lambda state: state["writing"] and state["cached"] == 3 and state["vocabulary"],
}


def kill_at(command: list[str], environment: dict, cache: Path, point: Callable[[dict], bool]) -> bool:
    """Starts `command` and kills it (SIGKILL) once the cache shows `point`; `False` when the run ended first."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environment)
    try:
        while process.poll() is None:
            if point(cache_state(cache)):
                process.send_signal(signal.SIGKILL)
                process.wait(timeout=60)
                return True
            time.sleep(0.001)
        return False
    finally:
        process.communicate(timeout=60)


@pytest.mark.long
def test_a_run_killed_while_it_prepares_the_data_leaves_nothing_the_next_run_trusts(tmp_path):
    """A run on 30,000 rows killed (SIGKILL) at each of `KILL_POINTS`, one run after another on the same cache, by
    turns `hf-attn train` and `train()` in a script of its own: the run after the last kill exits 0, names no damaged
    file, and prints the metrics of a run on a clean cache; the run after that reuses every step. (A point a run went
    past before it was seen is tried again on an emptied cache, at most twice.)"""
    data = write_reviews(tmp_path / "reviews.csv", 30_000)
    command, environment = console_run(tmp_path, data, tmp_path / "clean-cache")
    clean = metrics_of(subprocess.run(command, capture_output=True, text=True, env=environment, timeout=600))
    cache = tmp_path / "datasets-cache"
    entries = [console_run(tmp_path, data, cache), api_run(tmp_path, data, cache)]
    for index, (name, point) in enumerate(KILL_POINTS.items()):
        command, environment = entries[index % 2]
        for _ in range(3):
            if kill_at(command, environment, cache, point):
                break
            subprocess.run(["rm", "-rf", str(cache)], check=True)
        else:
            pytest.fail(f"three runs went past {name!r} before it was seen")
        # The kill fell inside the step: what it was writing aside (an `.incomplete` folder, a `tmp*` file) is there.
        assert point(cache_state(cache)), (name, cache_state(cache))
    for command, environment in entries:
        result = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=600)
        assert "does not read back" not in result.stderr, result.stderr[-2000:]
        assert same_run(metrics_of(result), clean), (result.stdout[-1000:], clean)
    assert data_line(result.stdout).count("(cached)") == 3, result.stdout[-2000:]
