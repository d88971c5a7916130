"""Bi-BloSAN's memory claim, measured: peak memory and time of one training step (forward + backward) against the
sequence length, for

- `biblosa`: hf_attn's `BiBlosaModel` (the default: the block attentions' backward pass recomputes their scores);
- `biblosa-stored`: the same model with `recompute_block_attention=False` (plain autograd keeps the scores);
- `biblosa-compiled`: the default model under `torch.compile` (compilation excluded: a first step compiles);
- `disan`: a DiSAN-style baseline of the same sizes (Shen et al., AAAI 2018, the model Bi-BloSAN is built to
  replace): per direction h = act(W x + b), full masked multi-dimensional token2token self-attention over all n tokens
  (a (B, n, n, H) score tensor, the same c·tanh scores and strict direction masks), the fusion gate
  u = G ⊙ h + (1 − G) ⊙ s, the two directions concatenated and the same source2token pooling, written in plain
  PyTorch as DiSAN's own code is;
- `sdpa`: a standard Transformer encoder layer of the same width 2H (`nn.TransformerEncoderLayer`, 4 heads,
  feed-forward 4·2H, post-LN; its attention is `scaled_dot_product_attention`) followed by mean pooling.

Every configuration runs in two processes of its own: one measures peak memory, the growth of the process's peak
resident memory over a step after a first step (CPU, with `MALLOC_MMAP_THRESHOLD_` lowered so that freed tensors
leave the resident set) or `torch.cuda.max_memory_allocated` (CUDA); the other times steps with the default
allocator (the median of `--repeats`, after a first step). Bi-BloSAN's block length is the paper's memory-optimal rule
r = ⌈(2n)^(1/3)⌉ (`--block-length auto`) or a fixed r: a small r makes many blocks (m = n / r), and the inter-block
attention over them costs O(m²·H) time but, chunked, only O(n·H) memory. `biblosa-pair` is the pair head on two
sentences of n tokens. A configuration whose estimated stored score tensors exceed `--memory-limit-gb` is skipped.
`--measures memory` alone also reports the measured step's time (one step, no median: long inputs).

Prints a table (peak MiB and milliseconds per step for each model and length) and, last,
`RESULT memory_ratio_n1024=<disan peak / biblosa peak> speed_ratio_n1024=<disan time / biblosa time>
time_vs_sdpa_n1024=<biblosa time / sdpa time> compiled_time_vs_sdpa_n1024=<the same, compiled>
compiled_memory_ratio_n1024=<disan peak / compiled biblosa peak> memory_vs_sdpa_n1024=<biblosa peak / sdpa peak>
time_vs_sdpa_n4096=... memory_vs_sdpa_n4096=...` (nan where a model was not run at that n). On CUDA the eager
Bi-BloSAN runs the fused Triton kernels (`hf_attn/models/biblosa/triton_block_attention.py`) when triton is
installed.

    .venv/bin/python benchmarks/biblosa_memory.py [--lengths 64 128 256 512 1024 2048 4096] [--batch 2]
        [--hidden 64] [--repeats 3] [--device cpu] [--memory-limit-gb 8] [--block-length auto]
    # one 20,000-token example at small block lengths (the README's second table)
    .venv/bin/python benchmarks/biblosa_memory.py --lengths 20000 --batch 1 --models biblosa biblosa-pair \
        --measures memory --block-length 3
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import peak_memory, profile_summary, reset_peak_memory, time_call

MODELS = ("biblosa", "biblosa-pair", "biblosa-stored", "biblosa-compiled", "disan", "sdpa")


class DisanDirection(nn.Module):
    """One direction of DiSAN: full masked multi-dimensional token2token attention over all n tokens + fusion gate."""

    def __init__(self, width: int, hidden: int, direction: str) -> None:
        super().__init__()
        self.direction, self.scale = direction, 5.0
        self.map = nn.Linear(width, hidden)
        self.key, self.query = nn.Linear(hidden, hidden, bias=False), nn.Linear(hidden, hidden, bias=False)
        self.bias = nn.Parameter(torch.zeros(hidden))
        self.gate_h, self.gate_s = nn.Linear(hidden, hidden), nn.Linear(hidden, hidden, bias=False)

    def forward(self, inputs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        h = nn.functional.elu(self.map(inputs))  # (B, n, H)
        scores = self.scale * torch.tanh((self.key(h)[:, None] + self.query(h)[:, :, None] + self.bias) / self.scale)
        positions = torch.arange(h.size(1), device=h.device)
        order = (
            positions[None, :] < positions[:, None]
            if self.direction == "forward"
            else positions[None, :] > positions[:, None]
        )
        allowed = (order & mask[:, :, None] & mask[:, None, :])[..., None]  # (B, n, n, 1)
        probabilities = torch.softmax(scores.masked_fill(~allowed, torch.finfo(scores.dtype).min), dim=2) * allowed
        attended = (probabilities * h[:, None]).sum(dim=2)  # (B, n, H): the (B, n, n, H) tensors stay for backward
        gate = torch.sigmoid(self.gate_h(h) + self.gate_s(attended))
        return gate * h + (1 - gate) * attended


class Disan(nn.Module):
    def __init__(self, width: int, hidden: int) -> None:
        super().__init__()
        self.directions = nn.ModuleList(
            [DisanDirection(width, hidden, "forward"), DisanDirection(width, hidden, "backward")]
        )
        self.pool_map, self.pool_scores = nn.Linear(2 * hidden, 2 * hidden), nn.Linear(2 * hidden, 2 * hidden)

    def forward(self, inputs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        u = torch.cat([direction(inputs, mask) for direction in self.directions], dim=-1)
        logits = self.pool_scores(nn.functional.elu(self.pool_map(u))).masked_fill(~mask[..., None], -1e30)
        return (torch.softmax(logits, dim=1) * u).sum(dim=1)


class SdpaEncoder(nn.Module):
    def __init__(self, width: int, hidden: int) -> None:
        super().__init__()
        self.project = nn.Linear(width, 2 * hidden)
        self.layer = nn.TransformerEncoderLayer(
            2 * hidden, nhead=4, dim_feedforward=8 * hidden, batch_first=True, dropout=0.0
        )

    def forward(self, inputs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        states = self.layer(self.project(inputs), src_key_padding_mask=~mask)
        return (states * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)


class BiBlosa(nn.Module):
    """hf_attn's `BiBlosaModel` on word vectors, to its sentence vector; with `pair`, the pair head
    (`BiBlosaForPairClassification`) on two sentences of the same length, to its logits."""

    def __init__(self, width: int, hidden: int, recompute: bool, block_length: int | str, pair: bool) -> None:
        super().__init__()
        from hf_attn.models.biblosa.configuration_biblosa import BiBlosaConfig
        from hf_attn.models.biblosa.modeling_biblosa import BiBlosaForPairClassification, BiBlosaModel

        config = BiBlosaConfig(vocab_size=10, embedding_size=width, hidden_size=hidden, block_length=block_length,
                               hidden_dropout_prob=0.0, recompute_block_attention=recompute)  # fmt: skip
        self.pair = pair
        self.model = BiBlosaForPairClassification(config) if pair else BiBlosaModel(config)

    def forward(self, inputs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        if self.pair:
            embed = self.model.biblosa.embeddings
            # The premise as vectors would need inputs_embeds on the pair head: ids of the same length instead.
            ids = (inputs[..., 0].abs() * 7).long() % (embed.num_embeddings - 1) + 1
            return self.model(input_ids=ids, attention_mask=mask, pair_input_ids=ids.flip(1),
                              pair_attention_mask=mask).logits  # fmt: skip
        return self.model(inputs_embeds=inputs, attention_mask=mask).sentence_embedding


def build(kind: str, width: int, hidden: int, block_length: int | str = "auto") -> nn.Module:
    if kind.startswith("biblosa"):
        return BiBlosa(width, hidden, kind != "biblosa-stored", block_length, pair=kind == "biblosa-pair")
    return {"disan": Disan, "sdpa": SdpaEncoder}[kind](width, hidden)


def estimated_gb(kind: str, batch: int, length: int, hidden: int, block_length: str = "auto") -> float:
    """The bytes of the score tensors a step keeps: ~8 (B, n, n, H) tensors for DiSAN, ~8 (B, n, r, H) and
    ~8 (B, m, m, H) (m = n / r blocks) for the stored Bi-BloSAN; the recomputing one keeps none."""
    if kind == "disan":
        return 8 * batch * length * length * hidden * 4 / 2**30
    if kind != "biblosa-stored":
        return 0.0
    r = 24 if block_length == "auto" else int(block_length)
    return 8 * batch * (length * r + (length / r) ** 2) * hidden * 4 / 2**30


def child(kind: str, length: int, batch: int, hidden: int, repeats: int, device: torch.device, measure: str,
          block_length: int | str = "auto", profile_dir: str | None = None) -> dict:  # fmt: skip
    """One configuration in this process: the peak memory growth of a training step (`measure="memory"`), or its
    median seconds (`"time"`; with `profile_dir` its `torch.profiler` summary is added to `biblosa_n<length>.txt`
    there)."""
    torch.manual_seed(0)
    model = build(kind, hidden, hidden, block_length).to(device)
    if kind.endswith("compiled"):
        model = torch.compile(model)
    inputs = torch.randn(batch, length, hidden, device=device)
    mask = torch.ones(batch, length, dtype=torch.bool, device=device)
    mask[1:, length - length // 4 :] = False  # the other rows a quarter shorter

    def step(width: int = length) -> None:
        model(inputs[:, :width], mask[:, :width]).square().sum().backward()

    if measure == "time":
        result = {"ms": time_call(step, repeats, device) * 1000}  # time_call warms up (and compiles) first
        if profile_dir:
            summary, _ = profile_summary(step, device, f"{kind}, B = {batch}, n = {length}, H = {hidden}")
            Path(profile_dir).mkdir(parents=True, exist_ok=True)
            with (Path(profile_dir) / f"biblosa_n{length}.txt").open("a") as handle:
                handle.write(summary + "\n\n")
        return result
    # A first step: the kernels' one-time buffers (oneDNN, thread pools), the gradients' storage and a compiled
    # model's compilation are not the step's memory. Uncompiled, a step of at most 1024 tokens sets them up as well
    # (a 20,000-token step at r = 3 takes minutes).
    step(length if kind.endswith("compiled") else min(length, 1024))
    reset_peak_memory(device)
    baseline = torch.cuda.memory_allocated(device) if device.type == "cuda" else peak_memory(device)
    started = time.perf_counter()
    step()
    return {"peak_mb": (peak_memory(device) - baseline) / 2**20, "one_step_ms": (time.perf_counter() - started) * 1000}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[64, 128, 256, 512, 1024, 2048, 4096])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=64, help="H per direction (the input width too); 2H = output")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--memory-limit-gb", type=float, default=8.0)
    parser.add_argument("--block-length", default="auto", help="Bi-BloSAN's r: an int, or auto (r = ⌈(2n)^(1/3)⌉)")
    parser.add_argument("--measures", nargs="+", default=["memory", "time"], choices=["memory", "time"])
    parser.add_argument("--child", nargs=3, metavar=("MODEL", "LENGTH", "MEASURE"), help=argparse.SUPPRESS)
    parser.add_argument("--profile-dir", help="write each timed run's torch.profiler summary there")
    args = parser.parse_args()
    device = torch.device(args.device)
    if args.child:
        kind, length, measure = args.child
        block_length = args.block_length if args.block_length == "auto" else int(args.block_length)
        result = child(
            kind, int(length), args.batch, args.hidden, args.repeats, device, measure, block_length, args.profile_dir
        )
        print(json.dumps(result))
        return
    threads = {"OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "2")}
    # Memory: large tensors mmapped, so that what is freed leaves the resident set; time: the default allocator.
    environments = {"memory": {**os.environ, **threads, "MALLOC_MMAP_THRESHOLD_": "65536"},
                    "time": {**os.environ, **threads}}  # fmt: skip
    environments = {measure: environments[measure] for measure in args.measures}
    results: dict[tuple[str, int], dict] = {}
    for length in args.lengths:
        for kind in args.models:
            if estimated_gb(kind, args.batch, length, args.hidden, args.block_length) > args.memory_limit_gb:
                continue
            result = {}
            for measure, environment in environments.items():
                command = [sys.executable, __file__, "--child", kind, str(length), measure, "--batch",
                           str(args.batch), "--hidden", str(args.hidden), "--repeats", str(args.repeats),
                           "--device", args.device, "--block-length", args.block_length,
                           *(["--profile-dir", args.profile_dir] if args.profile_dir else [])]  # fmt: skip
                finished = subprocess.run(command, capture_output=True, text=True, env=environment)
                if finished.returncode != 0:
                    print(f"{kind} n={length} ({measure}): failed\n{finished.stderr[-2000:]}", file=sys.stderr)
                    break
                result.update(json.loads(finished.stdout.strip().splitlines()[-1]))
            else:
                results[kind, length] = result
                print(f"  {kind:>16} n={length:>5}: {result}", file=sys.stderr, flush=True)
    print(
        f"\nOne training step (forward + backward), batch {args.batch}, H = {args.hidden} per direction, "
        f"Bi-BloSAN's r = {args.block_length}, {args.device}"
    )
    header = "| n | " + " | ".join(f"{kind} MiB | {kind} ms" for kind in args.models) + " |"
    print(header)
    print("|---" * (1 + 2 * len(args.models)) + "|")
    for length in args.lengths:
        cells = []
        for kind in args.models:
            result = results.get((kind, length))
            result = result or {}
            milliseconds = result.get("ms", result.get("one_step_ms"))  # the median, or the measured step alone
            cells += [f"{result['peak_mb']:.0f}" if "peak_mb" in result else "–",
                      f"{milliseconds:.0f}" if milliseconds is not None else "–"]  # fmt: skip
        print(f"| {length} | " + " | ".join(cells) + " |")
    ours, full, sdpa = (results.get((kind, 1024), {}) for kind in ("biblosa", "disan", "sdpa"))
    compiled = results.get(("biblosa-compiled", 1024), {})

    def ratio(numerator: dict, denominator: dict, key: str) -> str:
        if key in numerator and key in denominator:
            return f"{numerator[key] / max(denominator[key], 1e-9):.2f}"
        return "nan"

    long_ours, long_sdpa = (results.get((kind, 4096), {}) for kind in ("biblosa", "sdpa"))
    print(f"RESULT memory_ratio_n1024={ratio(full, ours, 'peak_mb')} speed_ratio_n1024={ratio(full, ours, 'ms')} "
          f"time_vs_sdpa_n1024={ratio(ours, sdpa, 'ms')} compiled_time_vs_sdpa_n1024={ratio(compiled, sdpa, 'ms')} "
          f"compiled_memory_ratio_n1024={ratio(full, compiled, 'peak_mb')} "
          f"memory_vs_sdpa_n1024={ratio(ours, sdpa, 'peak_mb')} "
          f"time_vs_sdpa_n4096={ratio(long_ours, long_sdpa, 'ms')} "
          f"memory_vs_sdpa_n4096={ratio(long_ours, long_sdpa, 'peak_mb')}")  # fmt: skip


if __name__ == "__main__":
    main()
