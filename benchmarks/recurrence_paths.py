"""The recurrences' two GPU paths by size: the persistent kernel (one launch a layer) against the per-step loop.

The LSTMN layer and ELMo's clipped LSTM each run either as one persistent Triton kernel (`triton_persistent.py`:
one program a batch row, the T steps inside it, every weight read from L2 at every step) or as the per-step loop
(GEMMs over the whole GPU and fused step kernels, replayed as a CUDA graph). Which is faster depends on the
weights' size: this measures both, inference and training (forward + backward), at several widths, in µs a step,
so that `PERSISTENT_MAX_WEIGHTS` (`fast_recurrence.py`, `fused_lstm.py`) sits where the measurement says.

LSTMN: B = 32, T = 256, embeddings 300, A = H. ELMo: B = 32, T = 22 (20 tokens and the boundaries), both
directions, P = H / 4. Strict float32. The last line is `RESULT lstmn_crossover=<the largest recurrent weight count,
of those measured, at which the persistent kernel trained faster; 0 if at none> elmo_crossover=<the same>`.

    python benchmarks/recurrence_paths.py [--device cuda]
"""

from __future__ import annotations

import argparse
import math
import os

import torch
from timing import time_call  # benchmarks/timing.py, beside this script

from hf_attn import ElmoConfig, LstmnConfig
from hf_attn.models.elmo import fused_lstm
from hf_attn.models.elmo.modeling_elmo import ElmoLstmLayer
from hf_attn.models.lstmn import fast_recurrence
from hf_attn.models.lstmn.modeling_lstmn import LstmnLayer


def use_persistent(persistent: bool) -> None:
    """Forces either path for both recurrences (the size limits lifted for the persistent one)."""
    os.environ["HF_ATTN_LSTMN_PERSISTENT"] = os.environ["HF_ATTN_ELMO_PERSISTENT"] = "1" if persistent else "0"
    fast_recurrence.PERSISTENT_MAX_WEIGHTS = fused_lstm.PERSISTENT_MAX_WEIGHTS = math.inf


def lstmn_runs(hidden: int, device: torch.device, batch: int = 32, steps: int = 256):
    config = LstmnConfig(embedding_size=300, hidden_size=hidden, hidden_dropout_prob=0.0)
    layer = LstmnLayer(config, config.embedding_size).to(device)
    for parameter in layer.parameters():
        torch.nn.init.uniform_(parameter, -0.05, 0.05)
    inputs = torch.randn(batch, steps, config.embedding_size, device=device, requires_grad=True)
    mask = torch.ones(batch, steps, dtype=torch.bool, device=device)

    def infer() -> None:
        with torch.no_grad():
            layer(inputs, mask)

    def train() -> None:
        layer(inputs, mask).hidden.sum().backward()

    weights = (4 * hidden + 2 * hidden) * hidden  # W', W_h, W_h̃ (A = H)
    return weights, steps, infer, train


def elmo_runs(hidden: int, device: torch.device, batch: int = 32, steps: int = 22):
    projection = hidden // 4
    config = ElmoConfig(hidden_size=hidden, projection_dim=projection, dropout=0.0)
    layer = ElmoLstmLayer(projection, config, residual=False).to(device)
    for parameter in layer.parameters():
        torch.nn.init.normal_(parameter, std=0.05)
    inputs = torch.randn(2, batch, steps, projection, device=device, requires_grad=True)
    state = (torch.zeros(2, batch, hidden, device=device), torch.zeros(2, batch, projection, device=device))

    def infer() -> None:
        with torch.no_grad():
            layer(inputs, state)

    def train() -> None:
        layer(inputs, state)[0].sum().backward()

    weights = 4 * hidden * projection + projection * hidden  # W_hh and W_proj, a direction
    return weights, steps, infer, train


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    device = torch.device(args.device)
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(0)
    crossovers = {}
    for model, make, widths in (
        ("lstmn", lstmn_runs, (64, 128, 256, 450)),
        ("elmo", elmo_runs, (128, 256, 512, 1024)),
    ):
        print(f"\n{model}: µs a step | {'H':>5} {'weights':>9} | {'persistent infer':>16} {'train':>8} | "
              f"{'per-step infer':>14} {'train':>8} | faster in training")  # fmt: skip
        crossovers[model] = 0
        for hidden in widths:
            weights, steps, infer, train = make(hidden, device)
            times = {}
            for persistent in (True, False):
                use_persistent(persistent)
                times[persistent] = [time_call(run, args.repeats, device) * 1e6 / steps for run in (infer, train)]
            faster = "persistent" if times[True][1] < times[False][1] else "per-step"
            if faster == "persistent":
                crossovers[model] = weights
            print(f"{'':>17} | {hidden:>5} {weights:>9} | {times[True][0]:>16.1f} {times[True][1]:>8.1f} | "
                  f"{times[False][0]:>14.1f} {times[False][1]:>8.1f} | {faster}", flush=True)  # fmt: skip
    print(f"RESULT lstmn_crossover={crossovers['lstmn']} elmo_crossover={crossovers['elmo']}")


if __name__ == "__main__":
    main()
