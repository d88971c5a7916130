"""ELMo throughput: hf_attn's exact biLM against `torch.nn.LSTM(proj_size=...)` stacks of the same sizes.

`nn.LSTM` is PyTorch's native recurrence (cuDNN on GPU; on CPU its C++ loop: oneDNN does not take projections). It
cannot clip cells or projections, so it cannot reproduce ELMo; it is the speed to aim for. The peer here is the
same character encoder followed by, per direction, L single-layer `nn.LSTM(P, H, proj_size=P)` with ELMo's
residual connections, the backward direction on reversed sentences. Before timing, the peer (given hf_attn's
weights) is checked equal to hf_attn's model with its clips switched off.

Sizes: the original ELMo (char CNN of the paper: 2048 filters, 2 highway layers, projection 512; 2 × 4096 LSTM cells
projected to 512, 93.6M parameters), batches of 32 sentences of 20 tokens (+ `<S>`, `</S>`), fp32.
Both compute in strict float32 (cuDNN's default TF32 is turned off; the peer's figure with TF32 is printed
beside, recorded). Prints sentences/s for inference and training (forward + backward) and the ratio, the kernels
a batch runs (GPU), and with `--profile-dir` writes a `torch.profiler` summary of every run there (`elmo.txt`). The
last line is `RESULT ratio_vs_nn_lstm=<inference ratio> train_ratio=<training ratio> tf32_ratio=… tf32_train_ratio=…
kernels_infer=… kernels_train=…`.

    .venv/bin/python benchmarks/elmo_throughput.py [--batch 32] [--tokens 20] [--repeats 3] [--device cpu]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
from timing import profile_summary, time_call  # benchmarks/timing.py, beside this script
from torch import nn

from hf_attn import ElmoConfig, ElmoModel
from hf_attn.models.elmo.modeling_elmo import reverse_padded


class NnLstmBiLm(nn.Module):
    """ELMo's biLM with `nn.LSTM` layers (no clipping): same character encoder, same residual wiring."""

    def __init__(self, elmo: ElmoModel) -> None:
        super().__init__()
        config = elmo.config
        self.character_encoder = elmo.character_encoder
        self.residual = [layer.residual for layer in elmo.bilm.layers]
        self.directions = nn.ModuleList(
            nn.ModuleList(
                nn.LSTM(config.projection_dim, config.hidden_size, proj_size=config.projection_dim, batch_first=True)
                for _ in range(config.num_hidden_layers)
            )
            for _ in range(2)
        )
        with torch.no_grad():  # hf_attn's weights, so that outputs can be compared without clipping
            for direction, lstms in enumerate(self.directions):
                for lstm, layer in zip(lstms, elmo.bilm.layers, strict=True):
                    lstm.weight_ih_l0.copy_(layer.weight_ih[direction])
                    lstm.weight_hh_l0.copy_(layer.weight_hh[direction])
                    lstm.bias_ih_l0.copy_(layer.bias[direction])
                    lstm.bias_hh_l0.zero_()
                    lstm.weight_hr_l0.copy_(layer.weight_proj[direction])

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        mask = attention_mask.bool()
        lengths = mask.sum(dim=1)
        embeddings = self.character_encoder(input_ids, mask)
        tops = []
        for direction, lstms in enumerate(self.directions):
            inputs = embeddings if direction == 0 else reverse_padded(embeddings, lengths)
            for lstm, residual in zip(lstms, self.residual, strict=True):
                outputs = lstm(inputs)[0]
                inputs = (outputs + inputs if residual else outputs) * mask[..., None]
            tops.append(inputs if direction == 0 else reverse_padded(inputs, lengths))
        return torch.cat(tops, dim=-1)


def character_batch(batch: int, tokens: int, config: ElmoConfig, seed: int = 0) -> dict[str, torch.Tensor]:
    """`batch` sentences of `tokens` random lower-case words (3–10 letters) as character ids, with boundaries."""
    from hf_attn.models.elmo.tokenization_elmo import build_elmo_tokenizer

    generator = torch.Generator().manual_seed(seed)
    lengths = torch.randint(3, 11, (batch, tokens), generator=generator).tolist()
    sentences = [
        [bytes(torch.randint(97, 123, (n,), generator=generator).tolist()).decode() for n in row] for row in lengths
    ]
    tokenizer = build_elmo_tokenizer(max_characters_per_token=config.max_characters_per_token)
    return dict(tokenizer(sentences, is_split_into_words=True, return_tensors="pt"))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--tokens", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--small", action="store_true", help="a small model (a smoke run), not the original sizes")
    parser.add_argument("--profile-dir", help="write a torch.profiler summary of each run there (elmo.txt)")
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    # Both in strict float32: cuDNN takes TF32 by default for its RNNs and convolutions, where our GEMMs follow
    # `torch.backends.cuda.matmul` (float32 by default). cuDNN's default is measured beside it, recorded.
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False

    torch.manual_seed(0)
    sizes = {"projection_dim": 64, "hidden_size": 256, "filters": [[1, 32], [2, 32], [3, 64]]} if args.small else {}
    config = ElmoConfig(dropout=0.0, **sizes)
    model = ElmoModel(config).to(device)
    peer = NnLstmBiLm(model).to(device)
    inputs = {name: tensor.to(device) for name, tensor in character_batch(args.batch, args.tokens, config).items()}

    with torch.no_grad():
        unclipped = ElmoModel(ElmoConfig(dropout=0.0, cell_clip=None, proj_clip=None, **sizes)).to(device).eval()
        unclipped.load_state_dict(model.state_dict())
        difference = (unclipped(**inputs).last_hidden_state - peer(**inputs)).abs().max().item()
    parameters = sum(p.numel() for p in model.parameters()) / 1e6
    print(f"parameters: {parameters:.1f}M; device {device}, torch threads {torch.get_num_threads()}")
    print(f"batch: {args.batch} sentences x {args.tokens} tokens (+ 2 boundaries)")
    print(f"check: hf_attn without clips vs nn.LSTM peer, max |diff| of the top layer = {difference:.2e}")
    if difference > 1e-4:
        raise SystemExit("the peer does not compute the same function; timings would be meaningless")

    def inference(module):
        def run():
            with torch.no_grad():
                module(**inputs)

        return run

    def training(module, top):
        def run():
            module.zero_grad(set_to_none=True)
            top(module(**inputs)).sum().backward()

        return run

    model.eval()
    peer.eval()
    rows = []
    summaries, kernels, tf32_ratios = [], {}, {}
    for name, ours, theirs in [
        ("inference", inference(model), inference(peer)),
        (
            "training (fwd + bwd)",
            training(model.train(), lambda output: output.last_hidden_state),
            training(peer.train(), lambda output: output),
        ),
    ]:
        our_time = time_call(ours, args.repeats, device)
        their_time = time_call(theirs, args.repeats, device)
        rows.append((name, args.batch / their_time, args.batch / our_time, their_time / our_time))
        for label, run in ((f"ELMo {name}", ours), (f"nn.LSTM {name}", theirs)):
            if device.type == "cuda" or args.profile_dir:  # the kernels a batch runs, and where the time goes
                summary, kernels[label] = profile_summary(run, device, f"{label}, {args.batch} x {args.tokens} tokens")
                summaries.append(summary)
        if device.type == "cuda":  # cuDNN at its default, TF32 (the peer only: our GEMMs stay float32)
            torch.backends.cudnn.allow_tf32 = True
            tf32_ratios[name] = time_call(theirs, args.repeats, device) / our_time
            torch.backends.cudnn.allow_tf32 = False
    if args.profile_dir:
        Path(args.profile_dir).mkdir(parents=True, exist_ok=True)
        (Path(args.profile_dir) / "elmo.txt").write_text("\n\n".join(summaries) + "\n")

    print()
    print("| measure | nn.LSTM(proj_size) stacks, sentences/s | hf_attn ELMo (exact, clipped), sentences/s | ratio |")
    print("|---|---|---|---|")
    for name, theirs, ours, ratio in rows:
        print(f"| {name} | {theirs:.1f} | {ours:.1f} | {ratio:.3f} |")
    nan = float("nan")
    inference, training = rows[0][0], rows[1][0]
    if tf32_ratios:
        print(f"cuDNN with TF32 (its default): inference ratio {tf32_ratios[inference]:.3f}, training "
              f"{tf32_ratios[training]:.3f}")  # fmt: skip
    if kernels:
        print(f"kernels a batch: ELMo inference {kernels[f'ELMo {inference}']:.0f}, training "
              f"{kernels[f'ELMo {training}']:.0f}; nn.LSTM {kernels[f'nn.LSTM {inference}']:.0f} / "
              f"{kernels[f'nn.LSTM {training}']:.0f}")  # fmt: skip
    infer_kernels, train_kernels = kernels.get(f"ELMo {inference}", nan), kernels.get(f"ELMo {training}", nan)
    ours_kernels = f"kernels_infer={infer_kernels:.0f} kernels_train={train_kernels:.0f}"
    print(f"RESULT ratio_vs_nn_lstm={rows[0][3]:.3f} train_ratio={rows[1][3]:.3f} "
          f"tf32_ratio={tf32_ratios.get(inference, nan):.3f} tf32_train_ratio={tf32_ratios.get(training, nan):.3f} "
          f"{ours_kernels}")  # fmt: skip


if __name__ == "__main__":
    main()
