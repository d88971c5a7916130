"""The RNN heads' recurrent paths on one device: the default (`reversed_rnn`) against PyTorch's packing.

`PackedBiRNN` never packs (hf_attn/layers/rnn.py): it runs `reversed_rnn`, one kernel call per layer and
direction over the padded batch (cuDNN or oneDNN; on CUDA the weights laid out by direction once:
`compact_by_direction`), each direction over a row's real tokens only. Packing (`pack_padded_sequence`, PyTorch's
packed RNN) gives the same outputs; on the CPU its backward grows with T², since it slices its input once per step
and each slice's backward writes a zero tensor the size of the input. This benchmark times a training step
(forward, loss, backward; bf16 autocast on CUDA) of HAN and Lin et al. at the papers' sizes on the default path
and, on the same model and batch, with packing forced, and counts the "not part of single contiguous chunk of
memory" warnings the default path raised (0 once the weights are laid out by direction). Outputs of both paths are
checked equal first.

Sizes: HAN (Yang 2016: embeddings 200, GRUs 50 per direction, attention 100), 32 documents of up to 15 sentences
× 30 words; Lin (2017: embeddings 100, LSTM 300 per direction, d_a 350, r 30, MLP 3000), 32 texts of 1 to
`--tokens` tokens (100: a sentence; 400: a review cut short). The last line is `RESULT
han_packed_over_default=<x> lin_packed_over_default=<y> weight_copy_warnings=<n>` (packed step time over default
step time: above 1, the default path is faster).

    .venv/bin/python benchmarks/rnn_paths.py [--device cuda] [--repeats 5] [--tokens 100]
"""

from __future__ import annotations

import argparse
import contextlib
import warnings

import torch
from han_throughput import random_documents  # benchmarks/, beside this script
from timing import device_name, time_call
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from hf_attn import HanConfig, HanForDocumentClassification, LinSelfAttentiveConfig
from hf_attn import LinSelfAttentiveForSequenceClassification as LinClassifier
from hf_attn.layers.rnn import PackedBiRNN


def packed_forward(self, inputs, attention_mask=None, pack=True, initial_state=None):
    """`PackedBiRNN.forward` as it was before `reversed_rnn` ran on the CPU too: PyTorch's packed run."""
    lengths = attention_mask.sum(dim=-1)
    packed = pack_padded_sequence(inputs, lengths.clamp(min=1).cpu(), batch_first=True, enforce_sorted=False)
    outputs, _ = self.rnn(packed, initial_state)
    outputs, _ = pad_packed_sequence(outputs, batch_first=True, total_length=inputs.size(1))
    return outputs * (lengths > 0)[:, None, None].to(outputs.dtype)


@contextlib.contextmanager
def packing_forced():
    """`PackedBiRNN` packs (PyTorch's packed RNN) on any device."""
    original = PackedBiRNN.forward
    PackedBiRNN.forward = packed_forward
    try:
        yield
    finally:
        PackedBiRNN.forward = original


def sentences(batch: int, max_tokens: int, vocab_size: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, max_tokens + 1, (batch,), generator=generator)
    mask = (torch.arange(max_tokens)[None, :] < lengths[:, None]).long()
    return torch.randint(1, vocab_size, (batch, max_tokens), generator=generator) * mask, mask


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=100, help="Lin's longest text (its lengths: 1 to this)")
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    torch.manual_seed(0)
    han = HanForDocumentClassification(HanConfig(vocab_size=20000, num_labels=5)).to(device).train()
    documents, document_mask = random_documents(args.batch, 15, 30, 20000)
    lin = LinClassifier(LinSelfAttentiveConfig(vocab_size=20000, num_labels=5, hidden_dropout_prob=0.0))
    lin = lin.to(device).train()
    tokens, token_mask = sentences(args.batch, args.tokens, 20000)
    cases = {
        "han": (han, {"input_ids": documents.to(device), "attention_mask": document_mask.to(device)}),
        "lin": (lin, {"input_ids": tokens.to(device), "attention_mask": token_mask.to(device)}),
    }
    labels = torch.randint(0, 5, (args.batch,), device=device)
    autocast = device.type == "cuda"
    lin_tokens = f"Lin up to {args.tokens} tokens"
    print(f"device: {device_name(device)}, torch {torch.__version__}, bf16 autocast: {autocast}, {lin_tokens}")
    print(f"{'model':>5} | {'default ms':>10} {'packed ms':>10} | {'packed / default':>16}")
    ratios, copy_warnings = {}, 0
    for name, (model, inputs) in cases.items():
        model.eval()
        with torch.no_grad():
            default_logits = model(**inputs).logits
            with packing_forced():
                packed_logits = model(**inputs).logits
        difference = (default_logits - packed_logits).abs().max().item()
        assert difference < 1e-3, f"{name}: the two paths differ by {difference}"
        model.train()

        def step(model=model, inputs=inputs) -> None:
            model.zero_grad(set_to_none=True)
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=autocast):
                loss = model(**inputs, labels=labels).loss
            loss.backward()

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            default = time_call(step, args.repeats, device)
        copy_warnings += sum("contiguous chunk of memory" in str(warning.message) for warning in caught)
        with packing_forced():
            packed = time_call(step, args.repeats, device)
        ratios[name] = packed / default
        print(f"{name:>5} | {default * 1e3:>10.2f} {packed * 1e3:>10.2f} | {ratios[name]:>16.3f}", flush=True)
    print(f"RESULT han_packed_over_default={ratios['han']:.3f} lin_packed_over_default={ratios['lin']:.3f} "
          f"weight_copy_warnings={copy_warnings}")  # fmt: skip


if __name__ == "__main__":
    main()
