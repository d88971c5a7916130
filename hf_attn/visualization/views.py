"""From a model and a text to an `AttentionFigure`: every attention map the head returns, drawn by what its keys are.

The registry says, for each attention field, which input mask its keys follow (`Architecture.attention_fields`):
that decides the picture, so a new architecture is drawn without code of its own.

- keys of a text (`attention_mask`, `pair_attention_mask`, `concept_attention_mask`): a distribution over tokens is
  the text shaded by it; several rows (Lin's hops, AttentionXML's labels, BiBloSA's features) are a heatmap, rows ×
  tokens, and Lin's hops also their sum, the view of the paper's figures;
- `<keys>@<queries>` and `/causal`: queries × keys heatmaps (the LSTMN's tape, STCKA's self-attention);
- `/sentences`: the sentences of a document shaded by their weight, each with its words shaded inside (HAN);
- `/blocks`, `/block_summaries`: BiBloSA's intra-block maps as token × token matrices (one per direction) and its
  inter-block maps as block × block matrices.

Views for inputs that need more than a text (sequence-to-sequence decoding, few-shot support sets, characters) are
not built yet and raise `NotImplementedError` naming the architecture.
"""

from __future__ import annotations

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from ..tokenization.concepts import ids_to_tokens
from .figure import AttentionFigure, HeatmapPanel, TextPanel

SUPPORTED_INPUTS = ("sentence", "sentence_pair", "sentence_concepts", "document", "document_pair")
MAX_TOKENS = 512


def _head(model: PreTrainedModel):
    from ..registry import get_architecture

    architecture = get_architecture(model.config.model_type)
    head = next((head for head in architecture.heads if type(model) is head.model_class), None)
    if head is None:
        raise ValueError(
            f"{type(model).__name__} is not a head of {architecture.name}: pass a head, not the base model."
        )
    return architecture, head


def _encode(head, tokenizer: PreTrainedTokenizerBase, text: str, pair: str | None) -> dict[str, torch.Tensor]:
    inputs = dict(tokenizer([text], padding=True, return_tensors="pt"))
    if head.inputs in ("sentence_pair", "document_pair"):
        if pair is None:
            raise ValueError(f"{head.model_class.__name__} reads two texts: pass the second as `pair`.")
        second = tokenizer([pair], padding=True, return_tensors="pt")
        inputs.update(pair_input_ids=second["input_ids"], pair_attention_mask=second["attention_mask"])
    for name, ids in inputs.items():
        if name.endswith("input_ids") and ids.shape[-1] > MAX_TOKENS:
            raise ValueError(f"The text is too long to draw: {ids.shape[-1]} tokens (at most {MAX_TOKENS}).")
    return inputs


def _tokens(tokenizer, inputs: dict[str, torch.Tensor], mask_name: str) -> list:
    """The real tokens of the input that a mask belongs to (a document: a list per sentence)."""
    ids_name = mask_name.replace("attention_mask", "input_ids")
    ids, mask = inputs[ids_name][0], inputs[mask_name][0].bool()
    if ids.dim() == 2:  # a document: sentences of words
        rows = zip(ids, mask, strict=True)
        return [ids_to_tokens(tokenizer, ids_name, row[row_mask].tolist()) for row, row_mask in rows if row_mask.any()]
    return ids_to_tokens(tokenizer, ids_name, ids[mask].tolist())


def _row_labels(config, field: str, rows: int) -> list[str]:
    if rows == getattr(config, "num_labels", None) and "label" in field:
        return [config.id2label.get(index, str(index)) for index in range(rows)]
    if "hop" in field:
        return [f"hop {index + 1}" for index in range(rows)]
    if "feature" in field:
        return [f"feature {index + 1}" for index in range(rows)]
    return [f"row {index + 1}" for index in range(rows)]


def _panels(config, field: str, spec: str, value: torch.Tensor, inputs: dict, tokenizer, block_length: int) -> list:
    """The panels of one attention field (batch of one), by what its keys are (module docstring); `block_length`: r of
    the head's `/blocks` map of the same input, for its `/block_summaries` map."""
    name = field.replace("_", " ")
    weights = value[0].detach().float()
    if "@" in spec:
        keys_mask, _, queries_mask = spec.partition("@")
        keys, queries = _tokens(tokenizer, inputs, keys_mask), _tokens(tokenizer, inputs, queries_mask)
        return [HeatmapPanel(name, weights[: len(queries), : len(keys)].tolist(), queries, keys)]
    mask_name, _, level = spec.partition("/")
    if level == "causal":
        tokens = _tokens(tokenizer, inputs, mask_name)
        return [HeatmapPanel(f"{name} (each token over its prefix)", weights[: len(tokens), : len(tokens)].tolist(),
                             tokens, tokens)]  # fmt: skip
    if level == "sentences":  # a document's sentence weights (its word maps are drawn from their own field)
        sentences = _tokens(tokenizer, inputs, mask_name)
        labels = [" ".join(words[:6]) + (" …" if len(words) > 6 else "") for words in sentences]
        return [TextPanel(f"{name} (sentences)", labels, weights[: len(sentences)].tolist())]
    if level in ("blocks", "block_summaries"):
        return _block_panels(name, level, weights, _tokens(tokenizer, inputs, mask_name), block_length)
    tokens = _tokens(tokenizer, inputs, mask_name)
    if tokens and isinstance(tokens[0], list):  # word maps of a document: one row of words per sentence
        rows = weights.reshape(-1, weights.shape[-1])
        scale = max(float(row[: len(words)].max()) for row, words in zip(rows, tokens, strict=False)) or 1.0
        return [TextPanel(f"{name}, sentence {index + 1}", words, rows[index, : len(words)].tolist(), scale)
                for index, words in enumerate(tokens)]  # fmt: skip
    weights = weights[..., : len(tokens)]
    if weights.dim() == 1:
        return [TextPanel(name, tokens, weights.tolist())]
    rows = weights.reshape(-1, len(tokens))
    if rows.shape[0] == 1:
        return [TextPanel(name, tokens, rows[0].tolist())]
    panels = [HeatmapPanel(name, rows.tolist(), _row_labels(config, field, rows.shape[0]), tokens)]
    if "hop" in field:  # the paper's summed view (Lin et al., fig. 2)
        panels.append(TextPanel(f"{name} summed over the hops", tokens, rows.sum(0).tolist()))
    return panels


def _block_panels(name: str, level: str, weights: torch.Tensor, tokens: list[str], block_length: int) -> list:
    """BiBloSA: `(2, m, r, r)` intra-block maps as token × token matrices, `(2, m, m)` inter-block maps."""
    panels = []
    directions = ("forward", "backward")
    if level == "blocks":
        blocks, length = weights.shape[1], weights.shape[-1]
        n = len(tokens)
        for index, direction in enumerate(directions):
            full = torch.zeros(blocks * length, blocks * length)
            for block in range(blocks):
                span = slice(block * length, (block + 1) * length)
                full[span, span] = weights[index, block]
            panels.append(HeatmapPanel(f"{name}, {direction} (blocks of {length})", full[:n, :n].tolist(), tokens,
                                       tokens))  # fmt: skip
        return panels
    blocks = -(-len(tokens) // block_length)
    labels = [" ".join(tokens[block * block_length : (block + 1) * block_length]) for block in range(blocks)]
    for index, direction in enumerate(directions):
        panels.append(HeatmapPanel(f"{name}, {direction}", weights[index, :blocks, :blocks].tolist(), labels, labels))
    return panels


@torch.no_grad()
def visualize(
    model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, text: str, pair: str | None = None
) -> AttentionFigure:
    """The attention maps of `model` (a head of a registered architecture) for `text` (and `pair`, for pair heads)
    as an `AttentionFigure` (`.to_html()`, `.save_png(path)`, shown by notebooks)."""
    architecture, head = _head(model)
    if head.inputs not in SUPPORTED_INPUTS:
        raise NotImplementedError(
            f"No attention view for {architecture.display_name}'s {head.inputs!r} inputs yet "
            f"(views exist for: {', '.join(SUPPORTED_INPUTS)})."
        )
    if not head.attention_fields:
        raise ValueError(f"{head.model_class.__name__} returns no attention map to draw.")
    inputs = _encode(head, tokenizer, text, pair)
    was_training = model.training
    model.eval()
    output = model(**{name: tensor.to(model.device) for name, tensor in inputs.items()})
    model.train(was_training)
    caption = "weights as the model computes them"
    if head.labels == "class":
        probabilities = output.logits.float().softmax(-1)[0]
        best = int(probabilities.argmax())
        label = model.config.id2label.get(best, str(best))
        caption = f"prediction: {label} ({float(probabilities[best]):.3f}); {caption}"
    maps = {field: getattr(output, field, None) for field in head.attention_fields}
    maps = {field: (value[-1] if isinstance(value, tuple) else value).cpu() for field, value in maps.items()
            if value is not None}  # fmt: skip
    specs = architecture.attention_fields
    block_lengths = {specs[field].partition("/")[0]: value.shape[-1] for field, value in maps.items()
                     if specs[field].endswith("/blocks")}  # fmt: skip
    panels = []
    for field, value in maps.items():
        block_length = block_lengths.get(specs[field].partition("/")[0], 1)
        panels += _panels(model.config, field, specs[field], value, inputs, tokenizer, block_length)
    return AttentionFigure(f"{architecture.display_name}: {text[:80]}", panels, caption)
