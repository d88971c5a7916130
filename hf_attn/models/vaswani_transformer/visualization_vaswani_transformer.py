"""The Transformer's attention pictures (Vaswani et al. 2017, §3.2.3: the three uses of attention).

For a source text, the model decodes its output (`generate()`, the model's generation settings) or reads a given
target (teacher forcing), and one forward pass returns every layer's maps, `(h, rows, keys)` each:

- cross attention: the emitted tokens × the source tokens (encoder-decoder attention, the alignment);
- encoder self-attention: source × source;
- decoder self-attention: the decoder's inputs × themselves (each over its prefix).

By default each layer's maps are averaged over the h heads (a mean of distributions is a distribution; the panel
says so); `heads="all"` draws every head, `layers=[...]` picks layers (0-based). `bertviz_view` hands the same
maps to bertviz's interactive `head_view` / `model_view`, which read transformers' `output_attentions` tuples.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from hf_attn.tokenization.bpe import readable_tokens
from hf_attn.visualization.figure import HeatmapPanel
from hf_attn.visualization.views import decode_with_attentions, real_tokens


def _tokens(tokenizer, ids: torch.Tensor) -> list[str]:
    """Token strings without BPE markers (`readable_tokens`); an id the tokenizer lacks (a model whose vocabulary is
    larger) is shown as `<id>`."""
    tokens = readable_tokens(tokenizer.convert_ids_to_tokens(ids.tolist()), tokenizer.all_special_tokens)
    return [token or f"<{index}>" for index, token in zip(ids.tolist(), tokens, strict=True)]


def transformer_view(
    model,
    head,
    tokenizer,
    text: str,
    pair: str | None = None,
    heads: str | Sequence[int] = "mean",
    layers: Sequence[int] | None = None,
    max_new_tokens: int | None = None,
) -> tuple[list[HeatmapPanel], str]:
    """Cross, encoder and decoder self-attention per layer for `text` (and the target `pair`, if given)."""
    length = {} if max_new_tokens is None else {"max_new_tokens": max_new_tokens}  # default: the model's settings
    inputs, sequence, output = decode_with_attentions(model, head, tokenizer, text, pair, **length)
    source = real_tokens(tokenizer, inputs, "attention_mask")
    decoder_inputs, emitted = _tokens(tokenizer, sequence[:-1]), _tokens(tokenizer, sequence[1:])
    kinds = (
        ("cross attention", output.cross_attentions, emitted, source),
        ("encoder self-attention", output.encoder_attentions, source, source),
        ("decoder self-attention", output.decoder_attentions, decoder_inputs, decoder_inputs),
    )
    panels = []
    for name, maps, rows, columns in kinds:
        chosen = list(range(len(maps))) if layers is None else list(layers)
        if not chosen or any(not 0 <= layer < len(maps) for layer in chosen):
            raise ValueError(f"`layers` must be indices of the model's {len(maps)} layers ({name}), got {chosen}.")
        for layer in chosen:
            weights = maps[layer][0, :, : len(rows), : len(columns)].float().cpu()  # (h, rows, keys)
            if heads == "mean":
                panels.append(HeatmapPanel(f"{name}, layer {layer + 1}, mean over the {weights.shape[0]} heads",
                                           weights.mean(0).tolist(), rows, columns))  # fmt: skip
                continue
            picked = range(weights.shape[0]) if heads == "all" else heads
            for index in picked:
                if not 0 <= index < weights.shape[0]:
                    raise ValueError(f"`heads`: {index} is not a head of the {weights.shape[0]}.")
                panels.append(HeatmapPanel(f"{name}, layer {layer + 1}, head {index + 1}", weights[index].tolist(),
                                           rows, columns))  # fmt: skip
    output_text = tokenizer.decode(sequence[1:], skip_special_tokens=True)
    how = "the given target (teacher forcing)" if pair is not None else "the model's output"
    return panels, f"{how}: {output_text!r}; rows of a decoder map: the emitted tokens; weights as computed"


def bertviz_view(
    model, tokenizer, text: str, target: str | None = None, view: str = "head", max_new_tokens: int | None = None
) -> Any:
    """bertviz's interactive `head_view` (or `model_view`) of the model's maps for `text` and its output (or
    `target`), as the `IPython.display.HTML` bertviz returns (a notebook shows it). Needs `pip install bertviz`."""
    try:
        from bertviz import head_view, model_view
    except ImportError as error:
        raise ImportError("bertviz_view needs bertviz: `pip install bertviz` (or hf_attn[bertviz]).") from error
    was_training = model.training
    model.eval()
    try:
        length = {} if max_new_tokens is None else {"max_new_tokens": max_new_tokens}
        inputs, sequence, output = decode_with_attentions(model, None, tokenizer, text, target, **length)
    finally:
        model.train(was_training)
    draw = {"head": head_view, "model": model_view}.get(view)
    if draw is None:
        raise ValueError(f"`view` must be 'head' or 'model', got {view!r}.")
    return draw(
        encoder_attention=[layer.cpu() for layer in output.encoder_attentions],
        decoder_attention=[layer.cpu() for layer in output.decoder_attentions],
        cross_attention=[layer.cpu() for layer in output.cross_attentions],
        encoder_tokens=real_tokens(tokenizer, inputs, "attention_mask"),
        decoder_tokens=_tokens(tokenizer, sequence[:-1]),
        html_action="return",
    )


__all__ = ["bertviz_view", "transformer_view"]
