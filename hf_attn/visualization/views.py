"""From a model and a text to an `AttentionFigure`: every attention map the head returns, drawn by what its keys are.

The registry says, for each attention field, which input mask its keys follow (`Architecture.attention_fields`):
that decides the picture, so a new architecture is drawn without code of its own.

- keys of a text (`attention_mask`, `pair_attention_mask`, `concept_attention_mask`): a distribution over tokens is
  the text shaded by it; several rows (Lin's hops, AttentionXML's labels, BiBloSA's features) are a heatmap, rows ×
  tokens, and Lin's hops also their sum, the view of the paper's figures;
- `<keys>@<queries>` and `/causal`: queries × keys heatmaps (the LSTMN's tape, STCKA's self-attention);
- `/sentences`: the sentences of a document shaded by their weight, each with its words shaded inside (HAN);
- a level an architecture registers (`hf_attn.data.masks.register_mask_level`) is drawn by the view its folder
  registers for it (`register_level_view`: BiBloSA's blocks, in its `visualization_biblosa.py`).

An architecture whose picture needs more than its maps (decoding first: the Transformer, SGM; a top-k of labels:
AttentionXML; weights that are parameters: ELMo's scalar mix; a support set: the few-shot models) names its own view
in its registry row (`Architecture.attention_view`, kept in its folder's `visualization_<name>.py`); the helpers it
builds on are here, below the registry (a head's row is `head.architecture`; `hf_attn.visualization.pictures`
finds a model's head and draws it): `encode`, `real_tokens`, `maps_panels`, `decode_with_attentions` (a
sequence-to-sequence head's maps for its own output or a given target), and `few_shot_view` (the two few-shot
architectures share it).
An architecture with neither raises `NotImplementedError` naming it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from transformers import GenerationConfig, PreTrainedModel, PreTrainedTokenizerBase

from ..data.kinds import CLASS, INPUT_KINDS, SENTENCE
from ..data.masks import ROW_MEANINGS, MaskSpec, level_sizes
from ..tokenization.bpe import ids_to_tokens
from .figure import HeatmapPanel, TextPanel

MAX_TOKENS = 512


def encode(head, tokenizer: PreTrainedTokenizerBase, text: str, pair: str | None) -> dict[str, torch.Tensor]:
    """The model's inputs for one text (and its pair, for pair heads; `head` None: a head of one text), as the head's
    input kind encodes texts, refusing texts too long to draw."""
    kind = SENTENCE if head is None else head.inputs
    inputs = kind.encode(tokenizer, [text], None if pair is None or not kind.pair else [pair])
    for name, ids in inputs.items():
        if name.endswith("input_ids") and ids.shape[-1] > MAX_TOKENS:
            raise ValueError(f"The text is too long to draw: {ids.shape[-1]} tokens (at most {MAX_TOKENS}).")
    return inputs


def real_tokens(tokenizer, inputs: dict[str, torch.Tensor], mask_name: str) -> list:
    """The real tokens of the input that a mask belongs to (a document: a list per sentence)."""
    ids_name = mask_name.replace("attention_mask", "input_ids")
    ids, mask = inputs[ids_name][0], inputs[mask_name][0].bool()
    if ids.dim() == 2:  # a document: sentences of words
        rows = zip(ids, mask, strict=True)
        return [ids_to_tokens(tokenizer, ids_name, row[row_mask].tolist()) for row, row_mask in rows if row_mask.any()]
    return ids_to_tokens(tokenizer, ids_name, ids[mask].tolist())


def _row_labels(config, spec: MaskSpec, rows: int) -> list[str]:
    """The names of a map's rows, as its spec declares them (`#hops`, `#labels`, `#features`; else "row i")."""
    if spec.rows == "labels" and rows == len(config.id2label):
        return [config.id2label.get(index, str(index)) for index in range(rows)]
    word = ROW_MEANINGS[spec.rows][0] if spec.rows not in (None, "labels") else "row"  # candidates: rows, not labels
    return [f"{word} {index + 1}" for index in range(rows)]


# A registered mask level's drawing: `(title, weights of one example, the keys' real tokens, size) -> panels`, `size`
# being what the level's `sized_by` map gives (`hf_attn.data.masks.level_sizes`).
LEVEL_VIEWS: dict[str, Callable[[str, torch.Tensor, list, int | None], list]] = {}


def register_level_view(level: str, draw: Callable[[str, torch.Tensor, list, int | None], list]) -> None:
    """Draws the maps of mask level `level` with `draw` (a model folder's `visualization_<name>.py` registers the
    views of the levels it registers)."""
    LEVEL_VIEWS[level] = draw


def field_panels(
    config, field: str, spec: MaskSpec | str, value: torch.Tensor, inputs: dict, tokenizer, size: int | None = None
) -> list:
    """The panels of one attention field (batch of one), by what its keys are (module docstring); `size`: what its
    mask level's `sized_by` map gives (`level_sizes`)."""
    name = field.replace("_", " ")
    weights = value[0].detach().float()
    spec = MaskSpec.parse(spec)
    if spec.queries is not None:
        keys, queries = real_tokens(tokenizer, inputs, spec.keys), real_tokens(tokenizer, inputs, spec.queries)
        return [HeatmapPanel(name, weights[: len(queries), : len(keys)].tolist(), queries, keys)]
    mask_name, level = spec.keys, spec.level
    if level == "causal":
        tokens = real_tokens(tokenizer, inputs, mask_name)
        return [
            HeatmapPanel(
                f"{name} (each token over its prefix)", weights[: len(tokens), : len(tokens)].tolist(), tokens, tokens
            )
        ]
    if level == "sentences":  # a document's sentence weights (its word maps are drawn from their own field)
        sentences = real_tokens(tokenizer, inputs, mask_name)
        labels = [" ".join(words[:6]) + (" …" if len(words) > 6 else "") for words in sentences]
        return [TextPanel(f"{name} (sentences)", labels, weights[: len(sentences)].tolist())]
    if level in LEVEL_VIEWS:
        return LEVEL_VIEWS[level](name, weights, real_tokens(tokenizer, inputs, mask_name), size)
    tokens = real_tokens(tokenizer, inputs, mask_name)
    if tokens and isinstance(tokens[0], list):  # word maps of a document: one row of words per sentence
        rows = weights.reshape(-1, weights.shape[-1])
        scale = max(float(row[: len(words)].max()) for row, words in zip(rows, tokens, strict=False)) or 1.0
        return [
            TextPanel(f"{name}, sentence {index + 1}", words, rows[index, : len(words)].tolist(), scale)
            for index, words in enumerate(tokens)
        ]
    weights = weights[..., : len(tokens)]
    if weights.dim() == 1:
        return [TextPanel(name, tokens, weights.tolist())]
    rows = weights.reshape(-1, len(tokens))
    if rows.shape[0] == 1:
        return [TextPanel(name, tokens, rows[0].tolist())]
    panels = [HeatmapPanel(name, rows.tolist(), _row_labels(config, spec, rows.shape[0]), tokens)]
    if spec.rows is not None and ROW_MEANINGS[spec.rows][1]:  # their sum, a reading of its own (Lin et al., fig. 2)
        panels.append(TextPanel(f"{name} summed over the {spec.rows}", tokens, rows.sum(0).tolist()))
    return panels


def prediction_caption(model: PreTrainedModel, logits: torch.Tensor) -> str:
    """`prediction: <label> (<probability>)` for a class head's logits `(1, C)`."""
    probabilities = logits.float().softmax(-1)[0]
    best = int(probabilities.argmax())
    return f"prediction: {model.config.id2label.get(best, str(best))} ({float(probabilities[best]):.3f})"


def generic_view(model: PreTrainedModel, head, tokenizer, text: str, pair: str | None = None) -> tuple[list, str]:
    """Every map the head returns, drawn by what its keys are (module docstring)."""
    architecture = head.architecture
    if not head.inputs.viewable:
        viewable = ", ".join(sorted(name for name, kind in INPUT_KINDS.items() if kind.viewable))
        raise NotImplementedError(
            f"No attention view for {architecture.display_name}'s {head.inputs.name!r} inputs yet "
            f"(views exist for: {viewable})."
        )
    inputs = encode(head, tokenizer, text, pair)
    output = model(**{name: tensor.to(model.device) for name, tensor in inputs.items()}, **head.attention_kwargs)
    caption = "weights as the model computes them"
    if head.labels is CLASS:
        caption = f"{prediction_caption(model, output.logits)}; {caption}"
    return maps_panels(model, head, tokenizer, inputs, output), caption


def maps_panels(model: PreTrainedModel, head, tokenizer, inputs: dict[str, torch.Tensor], output: Any) -> list:
    """The panels of every attention field of `head` in `output` (the model's output for `inputs`, a batch of one);
    a tuple of per-layer maps is drawn by its last layer."""
    specs = head.architecture.attention_masks
    maps = {field: getattr(output, field, None) for field in head.attention_fields}
    maps = {
        field: (value[-1] if isinstance(value, tuple) else value).cpu()
        for field, value in maps.items()
        if value is not None
    }
    sizes = level_sizes({field: specs[field] for field in maps}, maps)
    panels = []
    for field, value in maps.items():
        panels += field_panels(model.config, field, specs[field], value, inputs, tokenizer, sizes[field])
    return panels


@torch.no_grad()
def decode_with_attentions(
    model: PreTrainedModel,
    head,
    tokenizer,
    text: str,
    target: str | None = None,
    default_new_tokens: int = 64,
    **generate_kwargs: Any,
) -> tuple[dict[str, torch.Tensor], torch.Tensor, Any]:
    """A sequence-to-sequence head's maps over its output for `text`: `generate()` decodes it with the model's
    generation settings and `generate_kwargs` (at most `default_new_tokens` new tokens when neither sets a length),
    or `target` is read as the output (teacher forcing); one forward pass over the decoded sequence then returns the
    maps. Returns the encoder inputs, the sequence `(T + 1,)` (the decoder start, then the T emitted ids; row t of a
    decoder map is the step that emitted id t + 1) and the output (`output_attentions=True`). `head`: the model's
    registry head (`None`: a head of one text)."""
    inputs = encode(head, tokenizer, text, None)
    inputs = {name: tensor.to(model.device) for name, tensor in inputs.items()}
    start = model.config.decoder_start_token_id
    if target is not None:
        ids = tokenizer([target], return_tensors="pt")["input_ids"][0].to(model.device)
        sequence = torch.cat([ids.new_tensor([start]), ids])
    else:
        settings = model.generation_config
        if (
            not {"max_new_tokens", "max_length"} & set(generate_kwargs)
            and settings.max_new_tokens is None
            and settings.max_length == GenerationConfig().max_length
        ):
            generate_kwargs["max_new_tokens"] = default_new_tokens
        sequence = model.generate(**inputs, **generate_kwargs)
        sequence = (sequence if isinstance(sequence, torch.Tensor) else sequence.sequences)[0]
        if sequence[0] != start:  # generate() puts the decoder start first; keep the layout if a model does not
            sequence = torch.cat([sequence.new_tensor([start]), sequence])
        pad = model.config.pad_token_id
        if pad is not None and pad != start:  # a beam ended early is padded after its EOS
            sequence = torch.cat([sequence[:1], sequence[1:][sequence[1:] != pad]])
    if sequence.numel() > MAX_TOKENS:
        raise ValueError(f"The output is too long to draw: {sequence.numel()} tokens (at most {MAX_TOKENS}).")
    output = model(**inputs, decoder_input_ids=sequence[None, :-1], output_attentions=True, return_dict=True)
    return inputs, sequence.cpu(), output


def few_shot_view(
    model: PreTrainedModel,
    head,
    tokenizer,
    text: str,
    pair: str | None = None,
    support: Mapping[str, Sequence[str]] | Sequence[Sequence[Any]] | None = None,
    entities: Sequence[int] | None = None,
) -> tuple[list, str]:
    """A few-shot head's attention for the query `text` given a support set: the query's word weights (HAPN), each
    class's instance weights over its support texts (per class a distribution over its shots), and each class's
    feature weights z_i (Proto-HATT eq. 10, HAPN's λ_i; ≥ 0, not a distribution: drawn on their own scale).

    Args:
        support: label → its texts, or rows `(label, text)`; a relation model's rows are `(label, text, head, tail)`
            (its entities' word indices), and the query's are `entities = (head, tail)`. At least 2 labels.
    """
    if support is None:
        raise ValueError(
            f"{type(model).__name__} labels a query from a support set: pass `support` (label -> texts; "
            "`hf-attn visualize --support LABEL=TEXT ...` or --support FILE)."
        )
    rows = (
        [(label, item) for label, texts in support.items() for item in texts]
        if isinstance(support, Mapping)
        else [tuple(row) for row in support]
    )
    if not rows or any(len(row) not in (2, 4) for row in rows):
        raise ValueError("`support` rows must be (label, text) or (label, text, head, tail).")
    labels, texts = [row[0] for row in rows], [row[1] for row in rows]
    relations = {"support_entities": None, "query_entities": None}
    if entities is not None or any(len(row) == 4 for row in rows):
        if entities is None or len(entities) != 2 or any(len(row) != 4 for row in rows):
            raise ValueError(
                "A relation model needs `entities=(head, tail)` for the query and every support row "
                "as (label, text, head, tail)."
            )
        relations = {
            "support_entities": [(int(row[2]), int(row[3])) for row in rows],
            "query_entities": [(int(entities[0]), int(entities[1]))],
        }
    [result] = model.predict(texts, labels, [text], tokenizer, output_attentions=True, **relations)
    panels = []
    if "word_attention" in result:
        tokens, weights = zip(*result["word_attention"], strict=True) if result["word_attention"] else ((), ())
        panels.append(TextPanel("query word attentions", list(tokens), list(weights)))
    for label, weights in result.get("instance_attention", {}).items():
        shots = [_shorten(item) for name, item in zip(labels, texts, strict=True) if name == label]
        panels.append(TextPanel(f"instance attentions of class {label!r} (its support texts)", shots, weights))
    scores = result.get("feature_scores")
    if scores:
        features = [str(index + 1) for index in range(len(next(iter(scores.values()))))]
        title = "feature attentions (per class, a weight per feature)"
        panels.append(HeatmapPanel(title, list(scores.values()), [str(label) for label in scores], features))
    if not panels:
        raise ValueError(f"{type(model).__name__} has no attention to draw (a plain prototypical network).")
    label = result["label"]
    return panels, f"prediction: {label} ({result['scores'][label]:.3f}); weights as the model computes them"


def _shorten(text: str, words: int = 6) -> str:
    split = text.split()
    return " ".join(split[:words]) + (" …" if len(split) > words else "")
