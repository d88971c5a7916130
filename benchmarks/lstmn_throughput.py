"""LSTMN throughput: hf_attn's fast recurrence against the straightforward step loop, on the same weights.

The peer is `LstmnLayer.forward_reference`: the LSTMN as one would first write it, a Python step loop that grows
the tape with `torch.cat`, projects the whole tape (W_h h_i) again at every step and lets autograd differentiate it.
The fast path (`LstmnLayer.forward`) precomputes the input projections of all steps in one GEMM, writes each state
and its key W_h h_t once into preallocated tapes, and runs a hand-written backward pass. Before timing, both are
checked to give the same outputs and gradients.

Sizes: the paper's (embeddings 300, hidden 450, attention 450), one layer, batches of 32, fp32, every sequence full
length. For each T it prints tokens/s of inference (no graph) and training (forward + backward of the summed
states) for both, the speedups, and the memory autograd keeps for backward (MiB, from `saved_tensors_hooks`); the
reference runs up to `--reference-max-length` (its cost grows as T²·H·A). A second table puts the fast path beside
`nn.LSTM(300, 450)` (cuDNN on a GPU), the speed an LSTMN layer cannot pass (it reads its whole tape at every step)
but should not trail by much. The last line is `RESULT speedup_t256=<training speedup over the reference at
T = 256> vs_lstm_train_t256=<fast / nn.LSTM training tokens/s> vs_lstm_infer_t256=<the same for inference>`.

    .venv/bin/python benchmarks/lstmn_throughput.py [--lengths 64 128 256 512 1024] [--device cpu]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import torch
from timing import time_call  # benchmarks/timing.py, beside this script

from hf_attn import LstmnConfig
from hf_attn.models.lstmn.modeling_lstmn import LstmnLayer


def saved_mib(run: Callable[[], torch.Tensor]) -> float:
    """MiB of tensors autograd keeps for the backward pass of `run`."""
    total = 0

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        nonlocal total
        total += tensor.numel() * tensor.element_size()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        run()
    return total / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[64, 128, 256, 512, 1024])
    parser.add_argument("--reference-max-length", type=int, default=256)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()
    device = torch.device(args.device)
    torch.manual_seed(0)
    config = LstmnConfig(embedding_size=300, hidden_size=450, hidden_dropout_prob=0.0)
    layer = LstmnLayer(config, config.embedding_size).to(device)
    for parameter in layer.parameters():  # the original's U(−0.05, 0.05)
        torch.nn.init.uniform_(parameter, -0.05, 0.05)

    # Same weights, same results: outputs and gradients, before any timing.
    inputs = torch.randn(4, 48, config.embedding_size, device=device, requires_grad=True)
    mask = torch.ones(4, 48, dtype=torch.bool, device=device)
    results = []
    for forward in (layer.forward, layer.forward_reference):
        layer.zero_grad()
        inputs.grad = None
        output = forward(inputs, mask)
        (output.hidden.square().sum() + output.cells.sum()).backward()
        results.append((output.hidden.detach(), inputs.grad.clone(), layer.key_projection.weight.grad.clone()))
    differences = [(ours - theirs).abs().max().item() for ours, theirs in zip(*results, strict=True)]
    print(f"fast vs reference (T=48): max |Δ| outputs {differences[0]:.1e}, input grads {differences[1]:.1e}, "
          f"W_h grads {differences[2]:.1e}")  # fmt: skip
    assert max(differences) < 1e-4, differences

    header = (
        f"{'T':>5} | {'fast infer tok/s':>16} {'fast train tok/s':>16} {'saved MiB':>9} | "
        f"{'ref infer tok/s':>15} {'ref train tok/s':>15} {'saved MiB':>9} | {'infer ×':>7} {'train ×':>7}"
    )
    print(f"device: {device}, batch {args.batch}, embedding 300, hidden 450, attention 450, fp32")
    print(header)
    print("-" * len(header))
    speedups = {}
    for steps in args.lengths:
        inputs = torch.randn(args.batch, steps, config.embedding_size, device=device, requires_grad=True)
        mask = torch.ones(args.batch, steps, dtype=torch.bool, device=device)
        tokens = args.batch * steps
        row = [f"{steps:>5} "]
        times = {}
        for name, forward in (("fast", layer.forward), ("reference", layer.forward_reference)):
            if name == "reference" and steps > args.reference_max_length:
                row.append(f"| {'—':>15} {'—':>15} {'—':>9} ")
                continue

            def infer(forward=forward, inputs=inputs, mask=mask) -> None:
                with torch.no_grad():
                    forward(inputs, mask)

            def train_step(forward=forward, inputs=inputs, mask=mask) -> None:
                output = forward(inputs, mask)
                output.hidden.sum().backward()

            infer_time = time_call(infer, args.repeats, device)
            train_time = time_call(train_step, args.repeats, device)
            memory = saved_mib(lambda forward=forward, inputs=inputs, mask=mask: forward(inputs, mask))
            times[name] = (infer_time, train_time)
            width = 16 if name == "fast" else 15
            row.append(f"| {tokens / infer_time:>{width}.0f} {tokens / train_time:>{width}.0f} {memory:>9.1f} ")
        if "reference" in times:
            infer_speedup = times["reference"][0] / times["fast"][0]
            train_speedup = times["reference"][1] / times["fast"][1]
            speedups[steps] = train_speedup
            row.append(f"| {infer_speedup:>7.2f} {train_speedup:>7.2f}")
        else:
            row.append(f"| {'—':>7} {'—':>7}")
        print("".join(row), flush=True)
    lstm = torch.nn.LSTM(config.embedding_size, config.hidden_size, batch_first=True).to(device)
    print(f"\n{'T':>5} | {'nn.LSTM infer tok/s':>19} {'nn.LSTM train tok/s':>19} | {'LSTMN/LSTM infer':>16} "
          f"{'LSTMN/LSTM train':>16}")  # fmt: skip
    versus = {}
    for steps in args.lengths:
        inputs = torch.randn(args.batch, steps, config.embedding_size, device=device, requires_grad=True)
        mask = torch.ones(args.batch, steps, dtype=torch.bool, device=device)
        tokens = args.batch * steps

        def lstm_infer(inputs=inputs) -> None:
            with torch.no_grad():
                lstm(inputs)

        def lstm_train(inputs=inputs) -> None:
            lstm(inputs)[0].sum().backward()

        def lstmn_infer(inputs=inputs, mask=mask) -> None:
            with torch.no_grad():
                layer(inputs, mask)

        def lstmn_train(inputs=inputs, mask=mask) -> None:
            layer(inputs, mask).hidden.sum().backward()

        times = [time_call(run, args.repeats, device) for run in (lstm_infer, lstm_train, lstmn_infer, lstmn_train)]
        versus[steps] = (times[0] / times[2], times[1] / times[3])
        print(f"{steps:>5} | {tokens / times[0]:>19.0f} {tokens / times[1]:>19.0f} | {versus[steps][0]:>16.3f} "
              f"{versus[steps][1]:>16.3f}", flush=True)  # fmt: skip
    infer_versus, train_versus = versus.get(256, (float("nan"), float("nan")))
    print(f"RESULT speedup_t256={speedups.get(256, float('nan')):.2f} vs_lstm_train_t256={train_versus:.3f} "
          f"vs_lstm_infer_t256={infer_versus:.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
