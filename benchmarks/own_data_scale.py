"""Your data at scale (issue 55): `hf-attn train` on a CSV of 100,000 and 1,000,000 rows against the floor any
pipeline needs, measured in one run on one machine.

The data: synthetic reviews, 10–40 words a row drawn from a 30,000-word Zipf vocabulary, 5 labels (a `text,label`
CSV); for the BPE tokenizer, the same texts with a target text (the words reversed: `text,target`).

The floor, per tokenizer kind, in a fresh process: `datasets.load_dataset("csv")`, a `tokenizers` model with the
package's normaliser and pre-tokeniser (word-level, or BPE for the BPE kind) trained from the rows in 10,000-row
Arrow batches, then one batched `map` whose function returns `encode_batch`'s ids (`tokenizers`' threads on every
core), written to the `datasets` cache: the path the libraries' own users take. (Before, the floor looped
`encode_batch` over Arrow batches and kept the ids in memory, which another machine measured slower.) hf_attn, in a
fresh process with a fresh `datasets` cache: `hf_attn.commands.train.train` with
`--max_steps 5`, no saving, no evaluation during training; its time to the first training step (from the
process's start, imports included), its data steps (the status line's reading and preparing, vocabulary,
encoding), and the peak resident memory of the main process (`VmHWM`: `ru_maxrss` would keep the benchmark's own
size, inherited through fork and exec; the map workers' `ru_maxrss` beside it). Then
the same run again on the same cache: its data time against the first's. Last, a `--streaming` run of
`lin_self_attentive` at each size, whose peak should not grow with the file, and, at the largest size, a first run
on the same file with 1% of its rows bad (an empty or a blank text, spread through it), whose data time should be
within 5% of the clean file's. The table's "rest" is the first step's time less the data steps': imports, the
model, the `Trainer`.

One architecture per tokenizer kind: `lin_self_attentive` (word-level), `han` (document), `vaswani_transformer`
(BPE). Issue 55's goals, for the word-level and document kinds:

- time to the first step ≤ 1.5× the floor at 1,000,000 rows;
- peak memory grows from 100k to 1M rows by no more than the floor's growth plus 10%;
- a second run's data time ≤ 0.2× the first's;
- a streamed run's peak at 1M ≤ 1.2× its peak at 100k;
- (issue 71) a file with 1% bad rows: data time ≤ 1.05× the clean file's.

Run it alone (nothing else busy on the machine): about 15 minutes on 2 cores.

    .venv/bin/python benchmarks/own_data_scale.py [--rows 100000 1000000] [--archs lin_self_attentive han]
        [--output benchmarks/results/own_data_scale.md]
    .venv/bin/python benchmarks/own_data_scale.py --bad_rows_only --rows 1000000 --archs lin_self_attentive han
        --repeats 3 --output benchmarks/results/own_data_bad_rows.md   # the 1%-bad-rows goal, on medians

Prints a table per architecture and `RESULT name value goal met|MISSED` lines; `--output` writes the same as
Markdown.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ARCHITECTURES = {"lin_self_attentive": "word_level", "han": "document", "vaswani_transformer": "bpe"}
TIME_GOAL, GROWTH_GOAL, RERUN_GOAL, STREAM_GOAL, BAD_ROWS_GOAL = 1.5, 1.1, 0.2, 1.2, 1.05
BAD_SHARE = 0.01  # issue 71: a file with 1% bad rows prepares within 5% of the clean file's data time
EVAL_ROWS = 200  # the held-out rows scored after the 5 steps (beam search of the base Transformer takes its time)


def write_data(path: Path, rows: int, kind: str, seed: int = 0, bad_share: float = 0.0) -> None:
    """`rows` synthetic reviews as CSV: `text,label` (label 1–5), or `text,target` for the BPE kind; `bad_share` of
    the rows, spread through the file at random, have an empty or a blank text (issue 71's bad rows)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.csv as pacsv

    rng = np.random.default_rng(seed)
    syllables = ["ka", "lo", "mi", "ne", "ru", "ta", "po", "si", "de", "va", "gu", "be", "zo", "fi", "ha"]
    words = []
    for index in range(30_000):
        word, rest = "", index
        for _ in range(3):
            word, rest = word + syllables[rest % 15], rest // 15
        words.append(word + (str(rest) if rest else ""))
    vocabulary = np.array(words)
    lengths = rng.integers(10, 41, rows)
    tokens = vocabulary[(rng.zipf(1.1, int(lengths.sum())) - 1) % len(vocabulary)]
    bounds = np.concatenate([[0], np.cumsum(lengths)])
    texts = [" ".join(tokens[bounds[i] : bounds[i + 1]]) for i in range(rows)]
    if bad_share:
        for number, index in enumerate(rng.choice(rows, int(rows * bad_share), replace=False)):
            texts[index] = "" if number % 2 else "   "
    columns = {"text": texts}
    if kind == "bpe":
        columns["target"] = [" ".join(reversed(text.split())) for text in texts]
    else:
        columns["label"] = rng.integers(1, 6, rows)
    pacsv.write_csv(pa.table(columns), path)


FLOOR = """
import time
started = time.perf_counter()
import json, resource, sys
def peak_mib():  # this process's high-water mark since its exec (ru_maxrss keeps the forking parent's)
    status = dict(line.split(":", 1) for line in open("/proc/self/status"))
    return int(status["VmHWM"].split()[0]) / 1024
import datasets
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
path, kind = sys.argv[1], sys.argv[2]
imported = time.perf_counter()
rows = datasets.load_dataset("csv", data_files={"train": path}, split="train")
loaded = time.perf_counter()
if kind == "bpe":
    tokenizer = Tokenizer(models.BPE(unk_token="[UNK]", end_of_word_suffix="</w>"))
    trainer = trainers.BpeTrainer(vocab_size=8000, min_frequency=2, special_tokens=["[PAD]", "[UNK]"],
                                  end_of_word_suffix="</w>", show_progress=False)
    steps = [normalizers.NFKC()]
else:
    tokenizer = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    trainer = trainers.WordLevelTrainer(vocab_size=30000, special_tokens=["[PAD]", "[UNK]"], show_progress=False)
    steps = [normalizers.NFKC(), normalizers.Lowercase()]
tokenizer.normalizer = normalizers.Sequence(steps)
tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
    [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation(behavior="isolated")])
columns = ["text", "target"] if kind == "bpe" else ["text"]
def batches():
    for column in columns:
        for batch in rows.select_columns([column]).with_format("arrow").iter(batch_size=10_000):
            yield batch.column(0).to_pylist()
tokenizer.train_from_iterator(batches(), trainer=trainer)
trained = time.perf_counter()
# The encoding as `datasets` users write it: one batched `map` whose function returns `encode_batch`'s ids
# (`tokenizers`' Rust threads on every core), written to the `datasets` cache as hf_attn's encoding is.
def encode(batch):
    return {f"{column}_ids": [e.ids for e in tokenizer.encode_batch(batch[column])] for column in columns}
encoded_rows = rows.map(encode, batched=True)
encoded = time.perf_counter()
print("FLOOR " + json.dumps({
    "imports": imported - started, "reading": loaded - imported, "vocabulary": trained - loaded,
    "encoding": encoded - trained, "total": encoded - started, "peak_mib": peak_mib()}))
"""

OURS = """
import time
started = time.perf_counter()
import json, resource, sys
def peak_mib():  # this process's high-water mark since its exec (ru_maxrss keeps the forking parent's)
    status = dict(line.split(":", 1) for line in open("/proc/self/status"))
    return int(status["VmHWM"].split()[0]) / 1024
from transformers import TrainerCallback
from hf_attn.commands.train import train
options = json.loads(sys.argv[1])
first_step = {}
class FirstStep(TrainerCallback):
    def on_step_begin(self, args, state, control, **kwargs):
        first_step.setdefault("seconds", time.perf_counter() - started)
result = train(callbacks=[FirstStep()], **options)
print("OURS " + json.dumps({
    "first_step": first_step["seconds"], "total": time.perf_counter() - started,
    "peak_mib": peak_mib(), "workers_peak_mib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
"""


def run(script: str, arguments: list[str], cache: Path) -> tuple[dict, str]:
    """Runs `script` in a fresh interpreter with `cache` as its `datasets` cache; its JSON result and its output."""
    env = {**os.environ, "HF_DATASETS_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}
    env.pop("TOKENIZERS_PARALLELISM", None)
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), *arguments], env=env, capture_output=True, text=True,
        check=False,
    )  # fmt: skip
    output = result.stdout + result.stderr
    marker = next((line for line in output.splitlines() if line.startswith(("FLOOR ", "OURS "))), None)
    if result.returncode != 0 or marker is None:
        raise RuntimeError(f"{arguments[:2]} failed:\n{output[-3000:]}")
    return json.loads(marker.split(" ", 1)[1]), output


def data_steps(output: str) -> dict[str, float]:
    """The seconds of each data step from the run's status line (`[hf-attn] data: ...`)."""
    line = next(line for line in output.splitlines() if line.startswith("[hf-attn] data:"))
    steps = re.findall(r"([a-z][a-z ]*?) ([0-9.]+) s", line.split(";", 1)[1])
    return {name: float(seconds) for name, seconds in steps}


def options(arch: str, path: Path, output: Path, streaming: bool = False) -> list[str]:
    kind = ARCHITECTURES[arch]
    chosen = {
        "arch": arch, "dataset": str(path), "output_dir": str(output), "max_steps": 5, "save": False,
        "save_strategy": "no", "eval_strategy": "no", "report_to": "none", "disable_tqdm": True,
        "overwrite_output_dir": True, "streaming": streaming, "max_eval_samples": EVAL_ROWS,
    }  # fmt: skip
    if kind == "bpe":
        chosen["target_column"] = "target"
    else:
        chosen["label_column"] = "label"
    return [json.dumps(chosen)]


def measure(arch: str, rows: list[int], folder: Path) -> dict:
    """The floor, a first and a second hf_attn run, and a streamed run, at each size."""
    kind = ARCHITECTURES[arch]
    results: dict[int, dict] = {}
    for count in rows:
        path = folder / f"{kind}-{count}.csv"
        if not path.exists():
            write_data(path, count, kind)
        floor, _ = run(FLOOR, [str(path), kind], folder / f"floor-cache-{arch}-{count}")
        cache = folder / f"cache-{arch}-{count}"
        first, first_output = run(OURS, options(arch, path, folder / "out"), cache)
        second, second_output = run(OURS, options(arch, path, folder / "out"), cache)
        entry = {"floor": floor, "first": first, "second": second}
        entry["first"]["steps"], entry["second"]["steps"] = data_steps(first_output), data_steps(second_output)
        if arch == "lin_self_attentive":
            streamed, _ = run(OURS, options(arch, path, folder / "out", streaming=True), folder / f"stream-{count}")
            entry["streamed"] = streamed
        if kind != "bpe" and count == max(rows):  # the same file with 1% bad rows, on a fresh cache
            bad = folder / f"{kind}-{count}-bad.csv"
            write_data(bad, count, kind, bad_share=BAD_SHARE)
            dirty, dirty_output = run(OURS, options(arch, bad, folder / "out"), folder / f"cache-{arch}-{count}-bad")
            dirty["steps"] = data_steps(dirty_output)
            entry["bad_rows"] = dirty
        results[count] = entry
        print(f"{arch} {count}: {json.dumps(entry)}", flush=True)
    return results


def bad_rows(arch: str, count: int, folder: Path, repeats: int) -> list[str]:
    """The 1%-bad-rows comparison alone, `repeats` times: a clean and a bad first run, in turn, each on a fresh
    cache, and the medians of their data times (one pair is too few: the vocabulary step alone varies by 10–20%
    between two runs of the same file on this machine). Its Markdown lines and RESULT line."""
    kind = ARCHITECTURES[arch]
    clean_path, bad_path = folder / f"{kind}-{count}.csv", folder / f"{kind}-{count}-bad.csv"
    if not clean_path.exists():
        write_data(clean_path, count, kind)
    if not bad_path.exists():
        write_data(bad_path, count, kind, bad_share=BAD_SHARE)
    times: dict[str, list[float]] = {"clean": [], "bad": []}
    for repeat in range(repeats):
        for name, path in (("clean", clean_path), ("bad", bad_path)):
            _, output = run(OURS, options(arch, path, folder / "out"), folder / f"cache-{arch}-{name}-{repeat}")
            times[name].append(sum(data_steps(output).values()))
            print(f"{arch} {count} {name} {repeat}: {times[name][-1]:.1f} s", flush=True)
    clean, bad = (sorted(values)[len(values) // 2] for values in (times["clean"], times["bad"]))
    return [
        f"### {arch}: {count:,} rows, {BAD_SHARE:.0%} of them bad, {repeats} runs of each in turn",
        "",
        f"data time, median: {bad:.1f} s against the clean file's {clean:.1f} s ({bad / clean:.3f}×); every run: "
        f"bad {', '.join(f'{v:.1f}' for v in times['bad'])} s, "
        f"clean {', '.join(f'{v:.1f}' for v in times['clean'])} s",
        "",
        _result(f"{arch}_bad_rows_median_data_time_vs_clean", bad / clean, BAD_ROWS_GOAL),
    ]


def report(arch: str, results: dict[int, dict]) -> list[str]:
    """The Markdown table of one architecture, and its RESULT lines."""
    lines = [
        f"### {arch} ({ARCHITECTURES[arch]} tokenizer)",
        "",
        "| rows | floor: reading / vocabulary / encoding, total | hf_attn: reading and preparing / vocabulary / "
        "encoding | the rest (imports, model, Trainer) | first step | ratio | peak MiB (floor) | second run's data "
        "time |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for count, entry in sorted(results.items()):
        floor, first, second = entry["floor"], entry["first"], entry["second"]
        steps = first["steps"]
        data_first, data_second = sum(steps.values()), sum(second["steps"].values())
        ours = " / ".join(f"{seconds:.1f}" for seconds in steps.values())
        lines.append(
            f"| {count:,} | {floor['reading']:.1f} / {floor['vocabulary']:.1f} / {floor['encoding']:.1f}, "
            f"{floor['total']:.1f} s | {ours} s | {first['first_step'] - data_first:.1f} s | "
            f"{first['first_step']:.1f} s | "
            f"{first['first_step'] / floor['total']:.2f}× | {first['peak_mib']:.0f} (workers "
            f"{first['workers_peak_mib']:.0f}; floor {floor['peak_mib']:.0f}) | {data_second:.1f} s = "
            f"{data_second / max(data_first, 0.1):.2f}× |"
        )
    lines.append("")
    results_lines = []
    sizes = sorted(results)
    largest, smallest = results[sizes[-1]], results[sizes[0]]
    if "bad_rows" in largest:
        clean, dirty = sum(largest["first"]["steps"].values()), sum(largest["bad_rows"]["steps"].values())
        lines += [
            f"{sizes[-1]:,} rows with {BAD_SHARE:.0%} bad (an empty or blank text, spread through the file): data "
            f"{' / '.join(f'{v:.1f}' for v in largest['bad_rows']['steps'].values())} s = {dirty:.1f} s against the "
            f"clean file's {clean:.1f} s ({dirty / clean:.2f}×)",
            "",
        ]
        results_lines.append(_result(f"{arch}_bad_rows_data_time_vs_clean", dirty / clean, BAD_ROWS_GOAL))
    if ARCHITECTURES[arch] != "bpe":
        ratio = largest["first"]["first_step"] / largest["floor"]["total"]
        results_lines.append(_result(f"{arch}_first_step_vs_floor_{sizes[-1]}", ratio, TIME_GOAL))
        if len(sizes) > 1:
            ours = largest["first"]["peak_mib"] - smallest["first"]["peak_mib"]
            floor = largest["floor"]["peak_mib"] - smallest["floor"]["peak_mib"]
            results_lines.append(_result(f"{arch}_peak_growth_vs_floor_growth", ours / max(floor, 1.0), GROWTH_GOAL))
        rerun = sum(largest["second"]["steps"].values()) / max(sum(largest["first"]["steps"].values()), 0.1)
        results_lines.append(_result(f"{arch}_second_run_data_time", rerun, RERUN_GOAL))
    if "streamed" in largest and len(sizes) > 1:
        streamed = largest["streamed"]["peak_mib"] / smallest["streamed"]["peak_mib"]
        results_lines.append(_result("streamed_peak_growth", streamed, STREAM_GOAL))
        lines.append(
            "streamed (--streaming) peak: "
            + ", ".join(f"{count:,} rows {results[count]['streamed']['peak_mib']:.0f} MiB" for count in sizes)
        )
        lines.append("")
    return lines + results_lines


def _result(name: str, value: float, goal: float) -> str:
    return f"RESULT {name} {value:.3f} goal <= {goal} {'met' if value <= goal else 'MISSED'}"


def machine() -> str:
    """The machine and the versions the numbers are of."""
    import platform

    import datasets
    import pandas
    import pyarrow
    import tokenizers
    import torch
    import transformers

    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.processor())  # fmt: skip
    return (
        f"{model}, {os.cpu_count()} cores; Python {platform.python_version()}, torch {torch.__version__}, "
        f"transformers {transformers.__version__}, datasets {datasets.__version__}, "
        f"tokenizers {tokenizers.__version__}, pyarrow {pyarrow.__version__}, pandas {pandas.__version__}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--archs", nargs="+", default=list(ARCHITECTURES), choices=list(ARCHITECTURES))
    parser.add_argument("--output", type=Path, default=None, help="also write the report as Markdown here")
    parser.add_argument("--bad_rows_only", action="store_true",
                        help="only the 1%%-bad-rows comparison, at the largest --rows, --repeats times")  # fmt: skip
    parser.add_argument("--repeats", type=int, default=3, help="runs of each file for --bad_rows_only")
    arguments = parser.parse_args()
    if arguments.bad_rows_only:
        with tempfile.TemporaryDirectory(prefix="own-data-bad-rows-") as folder:
            lines = ["# Own data with bad rows", "", machine(), ""]
            for arch in arguments.archs:
                lines += [*bad_rows(arch, max(arguments.rows), Path(folder), arguments.repeats), ""]
        text = "\n".join(lines)
        print(text)
        if arguments.output is not None:
            arguments.output.write_text(text + "\n")
        return
    with tempfile.TemporaryDirectory(prefix="own-data-scale-") as folder:
        lines = ["# Own data at scale", "", f"{machine()}; {', '.join(map(str, arguments.rows))} rows", ""]
        for arch in arguments.archs:
            lines += report(arch, measure(arch, arguments.rows, Path(folder)))
    text = "\n".join(lines)
    print(text)
    if arguments.output is not None:
        arguments.output.parent.mkdir(parents=True, exist_ok=True)
        arguments.output.write_text(text + "\n")


if __name__ == "__main__":
    main()
