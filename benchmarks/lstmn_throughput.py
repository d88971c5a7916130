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
but should not trail by much. Both compute in strict float32 (cuDNN's default TF32 is turned off; its figure with
TF32 is printed beside, recorded). At T = 256 it also counts the kernels a batch runs and, with `--profile-dir`,
writes a `torch.profiler` summary there (`lstmn_t256.txt`: kernels by time, launches, the GPU's idle share). The
last line is `RESULT speedup_t256=<training speedup over the reference at T = 256> vs_lstm_train_t256=<fast /
nn.LSTM training tokens/s> vs_lstm_infer_t256=<the same for inference> vs_tf32_lstm_…=<the same against cuDNN with
TF32> kernels_train_t256=<kernels a training batch runs> kernels_infer_t256=<… an inference batch>`.

    .venv/bin/python benchmarks/lstmn_throughput.py [--lengths 64 128 256 512 1024] [--device cpu] [--profile-dir D]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

import torch
from timing import profile_summary, time_call  # benchmarks/timing.py, beside this script

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
    parser.add_argument("--profile-dir", help="write a torch.profiler summary of the T = 256 runs there")
    args = parser.parse_args()
    device = torch.device(args.device)
    # Both peers in strict float32: cuDNN's RNNs take TF32 by default (`torch.backends.cudnn.allow_tf32`), where
    # the LSTMN's kernels and GEMMs compute in float32. The cuDNN default is measured beside it, recorded.
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
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
    versus: dict[int, tuple[float, float]] = {}
    nan = float("nan")
    kernels: dict[str, float] = {}
    versus_tf32 = (nan, nan)
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
        if steps != 256:
            continue
        # the launches a batch of sequences costs, and where the time goes (GPU only)
        summaries = []
        for label, run in (("LSTMN inference", lstmn_infer), ("LSTMN training", lstmn_train),
                           ("nn.LSTM inference", lstm_infer), ("nn.LSTM training", lstm_train)):  # fmt: skip
            if device.type == "cuda" or args.profile_dir:
                summary, kernels[label] = profile_summary(run, device, f"{label}, B = {args.batch}, T = 256")
                summaries.append(summary)
        if args.profile_dir:
            Path(args.profile_dir).mkdir(parents=True, exist_ok=True)
            (Path(args.profile_dir) / "lstmn_t256.txt").write_text("\n\n".join(summaries) + "\n")
        if device.type == "cuda":  # cuDNN at its default, TF32: recorded beside the float32 figure
            torch.backends.cudnn.allow_tf32 = True
            tf32 = [time_call(run, args.repeats, device) for run in (lstm_infer, lstm_train)]
            torch.backends.cudnn.allow_tf32 = False
            versus_tf32 = (tf32[0] / times[2], tf32[1] / times[3])
            print(
                f"  cuDNN with TF32 (its default): LSTMN/LSTM infer {versus_tf32[0]:.3f}, train {versus_tf32[1]:.3f}"
            )
        if kernels:
            print(f"  kernels a batch: LSTMN inference {kernels['LSTMN inference']:.0f}, training "
                  f"{kernels['LSTMN training']:.0f}; nn.LSTM {kernels['nn.LSTM inference']:.0f} / "
                  f"{kernels['nn.LSTM training']:.0f}")  # fmt: skip
    infer_versus, train_versus = versus.get(256, (float("nan"), float("nan")))
    print(f"RESULT speedup_t256={speedups.get(256, float('nan')):.2f} vs_lstm_train_t256={train_versus:.3f} "
          f"vs_lstm_infer_t256={infer_versus:.3f} vs_tf32_lstm_train_t256={versus_tf32[1]:.3f} "
          f"vs_tf32_lstm_infer_t256={versus_tf32[0]:.3f} kernels_train_t256={kernels.get('LSTMN training', nan):.0f} "
          f"kernels_infer_t256={kernels.get('LSTMN inference', nan):.0f}")  # fmt: skip


if __name__ == "__main__":
    main()
