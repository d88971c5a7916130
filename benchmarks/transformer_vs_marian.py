"""hf_attn's Transformer against transformers' MarianMTModel: same config (the paper's base model), same weights.

Measures on one device, in one run, both models with fp32 weights (their runs interleaved, A B then B A, so that
neither always runs second: `timing.time_alternating`) (`--dtype bf16`: the steps under bf16 autocast,
as `Trainer(bf16=True)` runs them):
  (a) training-step throughput, target tokens per second of a forward + backward pass with the same loss;
  (b) beam-4 generation throughput, generated tokens per second (both forced to the same length);
  (c) the peak memory of one training step over what is held before it (CUDA: allocated bytes; CPU: resident
      memory, so only the growth of the process's peak), and its ratio to Marian's;
  (d) MFU: achieved GFLOP/s of hf_attn's training step over the device's measured matmul GFLOP/s at the model's
      GEMM shapes, in the step's dtype (and over `--peak-tflops`, the card's nominal rate, when given).
With `--compile` both models' training steps run under `torch.compile` (compilation excluded: the warm-up step
compiles) and generation under each model's compiled forward. With `--static-cache` both generate on a static cache
(`cache_implementation="static"`), whose decoding step transformers compiles by itself on an accelerator.
Prints a table and, last, `RESULT train_ratio=<x> generate_ratio=<y> mfu=<z> marian_mfu=<w> peak_gib=<p>
marian_peak_gib=<q> peak_vs_marian=<p/q>` (time ratios: Marian's time / hf_attn's).

    .venv/bin/python benchmarks/transformer_vs_marian.py [--batch 16] [--length 64] [--repeats 3] [--device cpu]
        [--dtype fp32|bf16] [--compile] [--static-cache] [--peak-tflops 989]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import torch
from timing import (  # benchmarks/timing.py
    device_name,
    peak_memory,
    profile_summary,
    reset_peak_memory,
    time_alternating,
    time_call,
)
from transformers import MarianConfig, MarianMTModel

from hf_attn.models.vaswani_transformer.convert_vaswani_transformer_to_hf import convert


def paired_models(vocab_size: int, layers: int, d_model: int, heads: int, ffn: int):
    """A random Marian model with the paper's base configuration, and the same weights as hf_attn's model."""
    torch.manual_seed(0)
    config = MarianConfig(
        vocab_size=vocab_size, d_model=d_model, encoder_layers=layers, decoder_layers=layers,
        encoder_attention_heads=heads, decoder_attention_heads=heads, encoder_ffn_dim=ffn, decoder_ffn_dim=ffn,
        activation_function="relu", dropout=0.1, attention_dropout=0.0, activation_dropout=0.0,
        max_position_embeddings=512, scale_embedding=True, pad_token_id=0, eos_token_id=3, decoder_start_token_id=0,
    )  # fmt: skip
    marian = MarianMTModel(config)
    with tempfile.TemporaryDirectory() as source, tempfile.TemporaryDirectory() as target:
        marian.save_pretrained(source)
        ours = convert("marian", source, target)
    ours.config.label_smoothing = 0.0  # Marian's loss has none: time the same loss
    return marian, ours


def training_step(model, batch):
    def step():
        model.zero_grad(set_to_none=True)
        model(**batch).loss.backward()

    return step


def training_flops(config, batch: int, source: int, target: int) -> float:
    """Matmul FLOPs of one forward + backward pass (backward = 2 × forward), from the layer shapes."""
    d, f, v = config.d_model, config.encoder_ffn_dim, config.vocab_size
    encoder = config.encoder_layers * (
        2 * batch * source * (4 * d * d + 2 * d * f) + 2 * 2 * batch * source * source * d  # projections + QKᵀ, AV
    )
    decoder = config.decoder_layers * (
        2 * batch * target * (4 * d * d + 2 * d * f)  # self-attention projections + FFN
        + 2 * batch * (target * 2 * d * d + source * 2 * d * d)  # cross-attention: Q, out on target; K, V on source
        + 2 * 2 * batch * target * (target + source) * d  # QKᵀ and AV, self and cross
    )
    output = 2 * batch * target * d * v
    return 3.0 * (encoder + decoder + output)


def matmul_gflops(config, tokens: int, repeats: int, device: torch.device, dtype: torch.dtype) -> float:
    """The device's GEMM rate in `dtype` at the model's shapes, weighted by each shape's share of the FLOPs."""
    d, f, v = config.d_model, config.encoder_ffn_dim, config.vocab_size
    shapes = [(tokens, d, d, 8), (tokens, d, f, 2), (tokens, f, d, 2), (tokens, d, v, 1)]  # (m, k, n, weight)
    total_flops, total_time = 0.0, 0.0
    for m, k, n, weight in shapes:
        a, b = torch.randn(m, k, device=device, dtype=dtype), torch.randn(k, n, device=device, dtype=dtype)
        seconds = time_call(lambda a=a, b=b: torch.mm(a, b), repeats * 3, device)
        flops = 2.0 * m * k * n * weight
        total_flops += flops
        total_time += seconds * weight
    return total_flops / total_time / 1e9


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--length", type=int, default=64, help="source and target tokens per sentence")
    parser.add_argument("--vocab", type=int, default=8000)
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--d-model", type=int, default=512)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--ffn", type=int, default=2048)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--generate-tokens", type=int, default=32)
    parser.add_argument("--generate-batch", type=int, help="sentences per generate() call (default: --batch)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32")
    parser.add_argument("--compile", action="store_true", help="torch.compile both models")
    parser.add_argument(
        "--static-cache", action="store_true", help="beam search on a static cache (compiled by transformers on a GPU)"
    )
    parser.add_argument("--peak-tflops", type=float, help="the device's nominal rate in --dtype, for a second MFU")
    parser.add_argument("--profile-dir", help="write the training steps' torch.profiler summary there")
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float32

    marian, ours = paired_models(args.vocab, args.layers, args.d_model, args.heads, args.ffn)
    marian, ours = marian.to(device), ours.to(device)
    generator = torch.Generator().manual_seed(1)
    source = torch.randint(4, args.vocab, (args.batch, args.length), generator=generator).to(device)
    labels = torch.randint(4, args.vocab, (args.batch, args.length), generator=generator).to(device)
    batch = {"input_ids": source, "attention_mask": torch.ones_like(source), "labels": labels}
    autocast = torch.autocast(device.type, dtype=dtype, enabled=dtype != torch.float32)
    forwards = {"marian": marian.forward, "ours": ours.forward}
    if args.compile:
        for model in (marian, ours):
            model.forward = torch.compile(model.forward)

    rows = []
    marian.train(), ours.train()
    tokens = args.batch * args.length
    with autocast:
        steps = [training_step(marian, batch), training_step(ours, batch)]
        train_marian, train_ours = time_alternating(steps, args.repeats, device)
        # Peak memory of one more step each, over what is held before it (weights, gradients of the last step).
        peaks = {}
        for name, model in (("marian", marian), ("ours", ours)):
            model.zero_grad(set_to_none=True)
            reset_peak_memory(device)
            before = peak_memory(device)
            training_step(model, batch)()
            peaks[name] = (peak_memory(device) - before) / 2**30
    rows.append(("training step (tokens/s)", tokens / train_marian, tokens / train_ours))
    if args.profile_dir:  # where a training step's time goes, for work without a GPU
        with autocast:
            summaries = [profile_summary(training_step(model, batch), device, f"{name} training step, {tokens} "
                                         f"target tokens, {args.dtype}{', compiled' if args.compile else ''}")[0]
                         for name, model in (("hf_attn", ours), ("Marian", marian))]  # fmt: skip
        name = f"transformer_t{tokens}{'_compiled' if args.compile else ''}.txt"
        Path(args.profile_dir).mkdir(parents=True, exist_ok=True)
        (Path(args.profile_dir) / name).write_text("\n\n".join(summaries) + "\n")
    rows.append(("training step peak memory (GiB)", peaks["marian"], peaks["ours"]))
    if args.compile:  # generation below: each model's compiled forward for the decoding steps as well
        torch._dynamo.reset()
        if args.static_cache:  # on a static cache transformers compiles the decoding step itself (accelerators)
            marian.forward, ours.forward = forwards["marian"], forwards["ours"]

    marian.eval(), ours.eval()
    generate = {
        "num_beams": 4, "do_sample": False, "max_new_tokens": args.generate_tokens,
        "min_new_tokens": args.generate_tokens, "bad_words_ids": None, "forced_eos_token_id": None,
    }  # fmt: skip
    if args.static_cache:  # both models decode on fixed-size key/value buffers (Marian supports it too)
        generate["cache_implementation"] = "static"
    prompt = source[: args.generate_batch or args.batch, : args.length]
    with torch.no_grad(), autocast:
        decoders = [lambda: marian.generate(prompt, **generate), lambda: ours.generate(prompt, **generate)]
        generate_marian, generate_ours = time_alternating(decoders, max(1, args.repeats - 1), device)
    generated = prompt.size(0) * args.generate_tokens
    if args.compile:
        marian.forward, ours.forward = forwards["marian"], forwards["ours"]
    rows.append(("beam-4 generation (tokens/s)", generated / generate_marian, generated / generate_ours))

    flops = training_flops(ours.config, args.batch, args.length, args.length)
    peak = matmul_gflops(ours.config, tokens, args.repeats, device, dtype)
    achieved_ours, achieved_marian = flops / train_ours / 1e9, flops / train_marian / 1e9
    rows.append(("training GFLOP/s (matmul FLOPs)", achieved_marian, achieved_ours))
    rows.append(("MFU vs measured matmul GFLOP/s", achieved_marian / peak, achieved_ours / peak))
    if args.peak_tflops:
        nominal = args.peak_tflops * 1e3
        name = f"MFU vs nominal {args.peak_tflops:g} TFLOP/s"
        rows.append((name, achieved_marian / nominal, achieved_ours / nominal))

    setting = (
        f"d_model {args.d_model}, {args.layers}+{args.layers} layers, {args.heads} heads, d_ff {args.ffn}, "
        f"vocab {args.vocab}; batch {args.batch} x {args.length} tokens, {args.dtype}"
        f"{', compiled' if args.compile else ''}{', static cache' if args.static_cache else ''}, {device_name(device)}"
    )
    print(f"\nTransformer base ({setting}), torch {torch.__version__}; matmul peak {peak:.1f} GFLOP/s\n")
    print(f"| {'measure':34s} | {'Marian':>10s} | {'hf_attn':>10s} | {'ratio':>6s} |")
    print(f"|{'-' * 36}|{'-' * 12}|{'-' * 12}|{'-' * 8}|")
    for name, theirs, mine in rows:
        ratio = mine / theirs if theirs else float("nan")
        print(f"| {name:34s} | {theirs:10.2f} | {mine:10.2f} | {ratio:6.3f} |")
    train_ratio = train_marian / train_ours
    generate_ratio = generate_marian / generate_ours
    mfu = achieved_ours / (args.peak_tflops * 1e3 if args.peak_tflops else peak)
    marian_mfu = achieved_marian / (args.peak_tflops * 1e3 if args.peak_tflops else peak)
    print(
        f"RESULT train_ratio={train_ratio:.3f} generate_ratio={generate_ratio:.3f} mfu={mfu:.3f} "
        f"marian_mfu={marian_mfu:.3f} peak_gib={peaks['ours']:.3f} marian_peak_gib={peaks['marian']:.3f} "
        f"peak_vs_marian={peaks['ours'] / peaks['marian'] if peaks['marian'] else float('nan'):.3f}"
    )


if __name__ == "__main__":
    main()
