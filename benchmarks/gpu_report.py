"""The GPU report: every GPU figure of the speed goals, from the benchmarks beside this script, in one run.

Each benchmark runs in its own process with `--device cuda` (a failure or a timeout costs its own figures only, and
says why). The figures and their goals:

- `lstmn_vs_cudnn_train` / `_infer`: LSTMN layer training / inference tokens/s over `nn.LSTM(300, 450)`'s, B = 32,
  T = 256, both in strict float32 (`lstmn_throughput.py`); goals ≥ 0.5 / ≥ 0.6. `_tf32`: the same against cuDNN at
  its default TF32, recorded.
- `elmo_vs_nn_lstm_train` / `_infer`: the exact ELMo over `nn.LSTM(proj_size)` stacks, both in strict float32
  (`elmo_throughput.py`); goals ≥ 0.9 / ≥ 1.0. `_tf32`: against cuDNN at its default TF32, recorded.

Each recurrence's figure is printed with the kernels one batch runs (from `torch.profiler`), and with
`--profile-dir` the recurrences', the Transformer's and BiBloSA's benchmarks write their profiler summaries there
(kernels by time, launches, idle share).
`lstmn_persistent_crossover_weights` / `elmo_…`: the largest recurrent weight count at which the persistent kernel
trained faster than the per-step loop (`recurrence_paths.py`), recorded.
- `han_packed_over_default`, `lin_packed_over_default`: a bf16 training step's time with packing over the default
  unpacked path (`rnn_paths.py`; above 1, the default is faster), recorded; `rnn_weight_copy_warnings`: cuDNN's
  per-call weight-copy warnings on the default path, goal 0.
- `transformer_bf16_8k_vs_marian` (≥ 1.1), `_mfu` and `transformer_bf16_25k_vs_marian` (≥ 1.15), `_mfu`: the
  eager bf16 training step over Marian's, 8k- and 25.6k-token batches (`transformer_vs_marian.py`), with each
  step's peak memory over Marian's (`_peak_vs_marian`, 25.6k: ≤ 0.75).
- `transformer_compiled_25k_vs_marian` (≥ 1.2), `transformer_compiled_25k_mfu` (≥ 0.40) and
  `transformer_beam4_vs_marian` (≥ 1.5): both models compiled, beam search on a static cache
  (`transformer_vs_marian.py --compile --static-cache`).
- `biblosa_time_vs_sdpa` (and `_4096`): the eager Bi-BloSAN training step (on the fused Triton kernels) at n = 1024
  (4096), B = 2, H = 64, over one SDPA encoder layer's (≤ 1.5); `biblosa_memory_vs_sdpa` (`_4096`): its peak memory
  over SDPA's (≤ 2); `biblosa_memory_vs_disan`: DiSAN's peak memory over Bi-BloSAN's (≥ 50) (`biblosa_memory.py`;
  DiSAN does not fit at 4096 and is skipped there).
- `attentionxml_tree_speedup_100k` (≥ 6) and `_memory_100k` (≥ 30): flat over tree at 100k labels
  (`attentionxml_scale.py`), kept from the first GPU measurement.

MFU is the matmul FLOPs of a training step over the card's bf16 matmul rate, measured here on an 8192³ GEMM (the
"peak" line). The vocabulary of the Transformer runs is 32k (the output projection and loss at the size that
matters). Ends with one line per figure: `RESULT <figure> <value> goal <op> <target> <met|MISSED|FAILED>`.

    .venv/bin/python benchmarks/gpu_report.py [--only lstmn elmo paths rnn transformer biblosa attentionxml]
        [--timeout 240] [--profile-dir DIR]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

import torch
from timing import device_name, time_call  # benchmarks/timing.py, beside this script

HERE = Path(__file__).resolve().parent
BIBLOSA_MODELS = ["biblosa", "biblosa-compiled", "disan", "sdpa"]
TRANSFORMER = ["--vocab", "32000", "--length", "64", "--dtype", "bf16", "--repeats", "3", "--generate-batch", "32"]

# figure -> (benchmark key, RESULT field, goal operator, goal target); "" marks a figure recorded without a goal
FIGURES: dict[str, tuple[str, str, str, float | None]] = {
    "lstmn_vs_cudnn_train": ("lstmn", "vs_lstm_train_t256", ">=", 0.5),
    "lstmn_vs_cudnn_infer": ("lstmn", "vs_lstm_infer_t256", ">=", 0.6),
    "lstmn_vs_cudnn_tf32_train": ("lstmn", "vs_tf32_lstm_train_t256", "", None),
    "lstmn_vs_cudnn_tf32_infer": ("lstmn", "vs_tf32_lstm_infer_t256", "", None),
    "elmo_vs_nn_lstm_train": ("elmo", "train_ratio", ">=", 0.9),
    "elmo_vs_nn_lstm_infer": ("elmo", "ratio_vs_nn_lstm", ">=", 1.0),
    "elmo_vs_nn_lstm_tf32_train": ("elmo", "tf32_train_ratio", "", None),
    "elmo_vs_nn_lstm_tf32_infer": ("elmo", "tf32_ratio", "", None),
    "lstmn_persistent_crossover_weights": ("paths", "lstmn_crossover", "", None),
    "elmo_persistent_crossover_weights": ("paths", "elmo_crossover", "", None),
    "han_packed_over_default": ("rnn", "han_packed_over_default", "", None),
    "lin_packed_over_default": ("rnn", "lin_packed_over_default", "", None),
    "rnn_weight_copy_warnings": ("rnn", "weight_copy_warnings", "<=", 0.0),
    "transformer_bf16_8k_vs_marian": ("transformer_8k", "train_ratio", ">=", 1.1),
    "transformer_bf16_8k_mfu": ("transformer_8k", "mfu", "", None),
    "transformer_bf16_8k_peak_vs_marian": ("transformer_8k", "peak_vs_marian", "", None),
    "transformer_bf16_25k_vs_marian": ("transformer_25k", "train_ratio", ">=", 1.15),
    "transformer_bf16_25k_mfu": ("transformer_25k", "mfu", "", None),
    "transformer_bf16_25k_peak_vs_marian": ("transformer_25k", "peak_vs_marian", "<=", 0.75),
    "transformer_compiled_25k_vs_marian": ("transformer_compiled", "train_ratio", ">=", 1.2),
    "transformer_compiled_25k_mfu": ("transformer_compiled", "mfu", ">=", 0.40),
    "transformer_beam4_vs_marian": ("transformer_compiled", "generate_ratio", ">=", 1.5),
    "biblosa_time_vs_sdpa": ("biblosa", "time_vs_sdpa_n1024", "<=", 1.5),
    "biblosa_time_vs_sdpa_4096": ("biblosa", "time_vs_sdpa_n4096", "<=", 1.5),
    "biblosa_memory_vs_sdpa": ("biblosa", "memory_vs_sdpa_n1024", "<=", 2.0),
    "biblosa_memory_vs_sdpa_4096": ("biblosa", "memory_vs_sdpa_n4096", "<=", 2.0),
    "biblosa_compiled_time_vs_sdpa": ("biblosa", "compiled_time_vs_sdpa_n1024", "", None),
    "biblosa_memory_vs_disan": ("biblosa", "memory_ratio_n1024", ">=", 50.0),
    "attentionxml_tree_speedup_100k": ("attentionxml", "tree_speedup_100k", ">=", 6.0),
    "attentionxml_tree_memory_100k": ("attentionxml", "tree_memory_ratio_100k", ">=", 30.0),
}


# figure -> the RESULT field of the kernels one batch of it runs
KERNELS = {
    "lstmn_vs_cudnn_train": "kernels_train_t256",
    "lstmn_vs_cudnn_infer": "kernels_infer_t256",
    "elmo_vs_nn_lstm_train": "kernels_train",
    "elmo_vs_nn_lstm_infer": "kernels_infer",
}


def benchmarks(peak_tflops: float, profile_dir: str | None) -> dict[str, list[str]]:
    """Each benchmark's command line (after the Python executable)."""
    peak = ["--peak-tflops", f"{peak_tflops:.1f}"]
    profile = ["--profile-dir", str(Path(profile_dir).resolve())] if profile_dir else []
    return {
        "lstmn": ["lstmn_throughput.py", "--lengths", "256", "--reference-max-length", "0", *profile],
        "elmo": ["elmo_throughput.py", *profile],
        "paths": ["recurrence_paths.py"],
        "rnn": ["rnn_paths.py"],
        "transformer_8k": ["transformer_vs_marian.py", *TRANSFORMER, *peak, "--batch", "128", *profile],
        "transformer_25k": ["transformer_vs_marian.py", *TRANSFORMER, *peak, "--batch", "400", *profile],
        "transformer_compiled": [
            "transformer_vs_marian.py",
            *TRANSFORMER,
            *peak,
            "--batch",
            "400",
            "--compile",
            "--static-cache",
            *profile,
        ],
        "biblosa": ["biblosa_memory.py", "--lengths", "1024", "4096", "--models", *BIBLOSA_MODELS, *profile],
        "attentionxml": ["attentionxml_scale.py", "--parts", "scale", "--labels", "100000"],
    }


def bf16_peak_tflops(device: torch.device) -> float:
    """The card's bf16 matmul rate, measured on one 8192³ GEMM (the denominator of MFU)."""
    size = 8192
    a = torch.randn(size, size, device=device, dtype=torch.bfloat16)
    b = torch.randn(size, size, device=device, dtype=torch.bfloat16)
    seconds = time_call(lambda: torch.mm(a, b), 10, device)
    return 2 * size**3 / seconds / 1e12


def run(name: str, arguments: list[str], device: str, timeout: float) -> tuple[dict[str, str], str]:
    """Runs one benchmark; returns its last RESULT line's fields and, on failure, why."""
    command = [sys.executable, str(HERE / arguments[0]), *arguments[1:], "--device", device]
    start = time.perf_counter()
    try:
        finished = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=HERE)
    except subprocess.TimeoutExpired as error:
        output = error.stdout.decode() if isinstance(error.stdout, bytes) else (error.stdout or "")
        print(output, flush=True)
        return {}, f"timed out after {timeout:.0f} s"
    print(f"## {name} ({time.perf_counter() - start:.0f} s): {' '.join(arguments)}\n{finished.stdout}", flush=True)
    if finished.returncode != 0:
        print(finished.stderr[-3000:], flush=True)
        return {}, f"exit {finished.returncode}"
    lines = [line for line in finished.stdout.splitlines() if line.startswith("RESULT ")]
    if not lines:
        return {}, "no RESULT line"
    return dict(re.findall(r"(\w+)=([^\s]+)", lines[-1])), ""


def verdict(value: float, operator: str, target: float | None) -> str:
    if value != value:  # nan
        return "FAILED"
    if not operator:
        return "recorded"
    met = value >= target if operator == ">=" else value <= target
    return "met" if met else "MISSED"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parts = ["lstmn", "elmo", "paths", "rnn", "transformer", "biblosa", "attentionxml"]
    parser.add_argument("--only", nargs="+", choices=parts)
    parser.add_argument("--timeout", type=float, default=240.0, help="seconds per benchmark")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--profile-dir", help="where the recurrences' benchmarks write their profiler summaries")
    args = parser.parse_args()
    device = torch.device(args.device)
    peak = bf16_peak_tflops(device) if device.type == "cuda" else 1.0
    print(f"GPU report: {device_name(device)}, torch {torch.__version__}; bf16 matmul peak {peak:.0f} TFLOP/s\n")
    results: dict[str, tuple[dict[str, str], str]] = {}
    for name, arguments in benchmarks(peak, args.profile_dir).items():
        if args.only and not any(name.startswith(part) for part in args.only):
            continue
        results[name] = run(name, arguments, args.device, args.timeout)
    print()
    for figure, (name, field, operator, target) in FIGURES.items():
        if name not in results:
            continue
        fields, failure = results[name]
        value = float(fields.get(field, "nan"))
        goal = f"goal {operator} {target:g}" if operator else "goal -"
        why = f" ({failure})" if failure else ""
        launches = f" (kernels a batch: {fields[KERNELS[figure]]})" if KERNELS.get(figure) in fields else ""
        print(f"RESULT {figure} {value:.3f} {goal} {verdict(value, operator, target)}{why}{launches}")


if __name__ == "__main__":
    main()
