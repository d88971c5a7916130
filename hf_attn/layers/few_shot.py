"""Few-shot building blocks shared by the prototypical networks (Proto-HATT, HAPN): the convolutional instance
encoder with entity position embeddings, episode input checks, prototypes and their distances, and `predict` over a
support set given as texts.

An episode is N classes ("ways") with K support instances ("shots") each, and queries to classify among the N.

Shape legend: ``B`` episodes, ``N`` ways, ``K`` shots, ``Q`` queries per episode, ``T`` tokens, ``E`` embedding
size (words, plus two position embeddings for relations), ``D`` hidden size, ``n`` instances (any flattening).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import torch
from torch import nn

from .checkpointing import CheckpointingLayer
from .validation import check_token_inputs, value_checks_apply

if TYPE_CHECKING:
    from transformers import PreTrainedConfig, PreTrainedTokenizerBase


class EpisodeConfig(Protocol):
    """The config fields episodes are drawn and read by: the `episodes` input kind (`hf_attn.data.kinds`), the
    few-shot task shape and `predict` below. Every few-shot architecture's config declares them (the registry
    refuses a row whose episode head's config lacks one, naming it). Its padding switch is the house's
    `mask_padding` (default `True`: padding never changes an example)."""

    num_ways: int  # N: the classes of an episode
    num_shots: int  # K: the support instances of each class
    num_queries: int  # the queries of each class
    max_sentence_length: int  # the longest text read (the original's fixed padded width)
    use_entity_positions: bool  # each text carries its head and tail entity positions (relations)


EPISODE_CONFIG_FIELDS = tuple(EpisodeConfig.__annotations__)


def relative_positions(entity_positions: torch.Tensor, length: int, max_distance: int) -> torch.Tensor:
    """Position ids of every token relative to the head and the tail entity, `(n, 2)` → `(n, 2, T)`.

    Zeng et al. (2014)'s position features as the FewRel code builds them: id = j − e + P for token j and entity
    token e, where P = `max_distance` (the original's `max_length`, whose position tables have 2P rows). An entity
    past the window is clamped to P − 1 and a distance to ±(P − 1), so every id lies in [1, 2P − 1] (id 0 is the
    tables' padding row and never occurs)."""
    entities = entity_positions.clamp(0, max_distance - 1)
    tokens = torch.arange(length, device=entity_positions.device)
    distances = tokens.view(*[1] * entities.dim(), length) - entities[..., None]
    return distances.clamp(-(max_distance - 1), max_distance - 1) + max_distance


class ConvolutionalInstanceEncoder(CheckpointingLayer):
    """The CNN instance encoder of the FewRel baselines (Zeng et al. 2014; Han et al. 2018; Gao et al. 2019, §3.1):
    x_t = [w_t; p¹_t; p²_t] (word embedding, and the two position embeddings when `position_embedding_size` > 0),
    h_t = ReLU(W * x_{t−m/2..t+m/2} + b) (a convolution of window m with zero padding at both ends), `(n, T, D)`.

    `mask_padding=True`: padded positions are zero before the convolution (as the zero padding past a sentence's
    end) and their states are zero, so a padded instance encodes exactly as alone. `False` is the FewRel code's
    behaviour: padding carries its (non-zero) position embeddings and its own states, so an instance's states
    depend on the width it was padded to (`max_sentence_length` in the original)."""

    def __init__(
        self,
        vocab_size: int,
        word_embedding_size: int,
        hidden_size: int,
        kernel_size: int,
        pad_token_id: int | None,
        position_embedding_size: int = 0,
        max_distance: int = 1,
        mask_padding: bool = True,
    ) -> None:
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab_size, word_embedding_size, padding_idx=pad_token_id)
        self.max_distance = max_distance
        self.mask_padding = mask_padding
        if position_embedding_size:
            self.head_position_embeddings = nn.Embedding(2 * max_distance, position_embedding_size, padding_idx=0)
            self.tail_position_embeddings = nn.Embedding(2 * max_distance, position_embedding_size, padding_idx=0)
        width = word_embedding_size + 2 * position_embedding_size
        self.convolution = nn.Conv1d(width, hidden_size, kernel_size, padding=kernel_size // 2)

    @property
    def uses_positions(self) -> bool:
        return hasattr(self, "head_position_embeddings")

    def embed(self, input_ids: torch.Tensor, entity_positions: torch.Tensor | None) -> torch.Tensor:
        """x_t, `(n, T)` ids (+ `(n, 2)` entity token indices) → `(n, T, E)`."""
        embedded = self.word_embeddings(input_ids)
        if self.uses_positions:
            positions = relative_positions(entity_positions, input_ids.size(-1), self.max_distance)
            head, tail = positions.unbind(dim=-2)
            embedded = torch.cat(
                [embedded, self.head_position_embeddings(head), self.tail_position_embeddings(tail)], dim=-1
            )
        return embedded

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        entity_positions: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """`(..., T)` ids of any number of instances (any leading axes), their mask (every position real when
        `None`; right-padded) and `(..., 2)` entity positions → (the boolean mask `(..., T)`, x `(..., T, E)`, h
        `(..., T, D)`). Bad ids or masks are a `ValueError` naming `input_ids` / `attention_mask`."""
        leading, length = input_ids.shape[:-1], input_ids.size(-1)
        rows = -1 if input_ids.numel() else 0  # an empty batch reaches the check, which names it
        flat_ids = input_ids.reshape(rows, length)
        mask = check_token_inputs(
            flat_ids,
            None if attention_mask is None else attention_mask.reshape(rows, attention_mask.size(-1)),
            self.word_embeddings.num_embeddings,
            right_padded=True,
        )
        if self.uses_positions and entity_positions is None:
            raise ValueError("`entity_positions` is required: the model embeds positions relative to the entities.")
        if self.uses_positions:
            if entity_positions.shape != (*leading, 2) or entity_positions.is_floating_point():
                raise ValueError(
                    f"`entity_positions` must hold integer token indices (head, tail) of shape {(*leading, 2)}, got "
                    f"{entity_positions.dtype} of shape {tuple(entity_positions.shape)}."
                )
            check_entity_positions(entity_positions.reshape(-1, 2), mask)
        embedded = self.embed(flat_ids, None if entity_positions is None else entity_positions.reshape(-1, 2))
        # The returned views are the tensors computed from (their gradients are there to read).
        embedded = embedded.view(*leading, length, -1)
        flat = embedded.view(-1, length, embedded.size(-1))
        inputs = flat * mask[..., None] if self.mask_padding else flat
        states = torch.relu(self.convolution(inputs.transpose(1, 2))).transpose(1, 2)
        if self.mask_padding:
            states = states * mask[..., None]
        return mask.view(*leading, length), embedded, states.view(*leading, length, -1)


def entity_token_positions(encoding: Any, index: int, words: Sequence[int], length: int) -> list[int]:
    """The token index of each word index in `words` for text `index` of a fast tokenizer's batch encoding (its
    first token; the last token when truncation cut the word off)."""
    word_ids = encoding.word_ids(index)
    first = {word: position for position, word in reversed(list(enumerate(word_ids))) if word is not None}
    return [first.get(int(word), max(length - 1, 0)) for word in words]


def check_entity_positions(positions: torch.Tensor, mask: torch.Tensor, name: str = "entity_positions") -> None:
    """Refuses entity token indices `(…, 2)` outside their text (`mask` `(…, T)`): negative, or at or past the
    text's length (an empty text's only index is 0). The position features would clamp them silently into the
    tables and describe a different sentence. A value check (`value_checks_apply`)."""
    if not value_checks_apply(positions) or not positions.numel():
        return
    if int(positions.min()) < 0:
        raise ValueError(f"`{name}` holds a negative token index ({int(positions.min())}).")
    lengths = mask.sum(dim=-1).clamp(min=1)  # (…,)
    outside = positions >= lengths[..., None]
    if outside.any():
        where = tuple(int(index) for index in outside.nonzero()[0])
        raise ValueError(
            f"`{name}` holds token index {int(positions[where])} at {where[:-1]} "
            f"({'head' if where[-1] == 0 else 'tail'}), outside its text of {int(lengths[where[:-1]])} tokens: "
            "entity positions must lie within the text (0 ≤ index < its length)."
        )


def check_episode_inputs(
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor | None,
    support_input_ids: torch.Tensor,
    support_attention_mask: torch.Tensor | None,
    vocab_size: int,
    entity_positions: torch.Tensor | None = None,
    support_entity_positions: torch.Tensor | None = None,
    uses_positions: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Validates an episode batch: queries `input_ids (B, Q, T)`, support `support_input_ids (B, N, K, T)` (N ≥ 2
    ways), right-padded masks, and entity positions `(B, Q, 2)` / `(B, N, K, 2)` exactly when the model reads
    them. Returns the boolean masks `(B, Q, T)` and `(B, N, K, T)`; errors name the argument at fault."""
    query_mask = check_token_inputs(
        input_ids, attention_mask, vocab_size, shape="(episodes, queries, tokens)", right_padded=True
    )
    support_mask = check_token_inputs(
        support_input_ids,
        support_attention_mask,
        vocab_size,
        shape="(episodes, ways, shots, tokens)",
        name="support_input_ids",
        batch_size=input_ids.size(0),
        right_padded=True,
    )
    if support_input_ids.size(1) < 2:
        raise ValueError(
            f"`support_input_ids` holds {support_input_ids.size(1)} class: an episode needs at least 2 classes "
            "(ways) to choose between."
        )
    expected = {
        "entity_positions": (entity_positions, (*input_ids.shape[:2], 2), query_mask),
        "support_entity_positions": (support_entity_positions, (*support_input_ids.shape[:3], 2), support_mask),
    }
    for name, (positions, shape, mask) in expected.items():
        if not uses_positions:
            if positions is not None:
                raise ValueError(f"`{name}` was given, but this model has no position embeddings.")
            continue
        if positions is None:
            raise ValueError(f"`{name}` is required: the model embeds token positions relative to the two entities.")
        if tuple(positions.shape) != shape or positions.is_floating_point():
            raise ValueError(
                f"`{name}` must hold integer token indices (head, tail) of shape {shape}, got {positions.dtype} of "
                f"shape {tuple(positions.shape)}."
            )
        check_entity_positions(positions, mask, name)
    return query_mask, support_mask


def squared_distance_logits(
    prototypes: torch.Tensor, queries: torch.Tensor, feature_weights: torch.Tensor | None = None
) -> torch.Tensor:
    """Logits = −d(c_i, q) = −Σ_d z_d (c_{i,d} − q_d)²: the squared Euclidean distance of Snell et al. (2017),
    weighted per feature by z (Gao et al. 2019, eq. 9; Sun et al. 2019, eq. 12) when given.

    Args:
        prototypes: `(B, N, D)` (one per class) or `(B, Q, N, D)` (query-specific).
        queries: `(B, Q, D)`.
        feature_weights: `(B, N, D)` per-class feature weights, or `None` (all 1).
    Returns: `(B, Q, N)`.
    """
    if prototypes.dim() == 3:
        prototypes = prototypes[:, None]
    squared = (prototypes - queries[:, :, None, :]) ** 2
    if feature_weights is not None:
        squared = squared * feature_weights[:, None]
    return -squared.sum(dim=-1)


def mean_prototypes(support: torch.Tensor, shot_mask: torch.Tensor) -> torch.Tensor:
    """c_i = the mean of class i's support encodings (Snell et al. 2017, eq. 1) over its real shots: `(B, N, K, D)`,
    `(B, N, K)` → `(B, N, D)` (zero for a class without one)."""
    weights = shot_mask.to(support.dtype)
    return (support * weights[..., None]).sum(dim=2) / weights.sum(dim=2, keepdim=True).clamp(min=1)


class FewShotPredictionMixin:
    """`predict` for the few-shot heads: label names for query texts, from a support set of texts and their labels.

    The support set is one episode: its classes in order of first appearance (N ≥ 2), each with its texts as
    shots, padded with empty shots when the classes have different counts and the model allows it
    (`supports_ragged_shots`); the queries are classified in chunks of `batch_size`."""

    supports_ragged_shots = True

    @torch.no_grad()
    def predict(
        self,
        support_texts: Sequence[str],
        support_labels: Sequence[Any],
        query_texts: Sequence[str],
        tokenizer: PreTrainedTokenizerBase,
        support_entities: Sequence[tuple[int, int]] | None = None,
        query_entities: Sequence[tuple[int, int]] | None = None,
        output_attentions: bool = False,
        batch_size: int = 64,
    ) -> list[Any]:
        """The label of each query text: a list of label names (`support_labels`' values); with
        `output_attentions=True`, one dict per query with `label`, `scores` (probability per label), and the maps
        the model has: `instance_attention` (per label, a weight per support text), `feature_scores` (per label, a
        weight per feature), `word_attention` (the query's `(token, weight)` pairs).

        Args:
            support_texts / support_labels: the support set, one label per text.
            query_texts: the texts to classify.
            tokenizer: the model's tokenizer (word-level: token t is word t of a text without punctuation).
            support_entities / query_entities: for a relation model, each text's (head, tail) word indices.
        """
        if len(support_texts) != len(support_labels):
            raise ValueError(
                f"`support_labels` must give one label per support text: {len(support_labels)} labels for "
                f"{len(support_texts)} texts."
            )
        names = list(dict.fromkeys(support_labels))
        if len(names) < 2:
            raise ValueError(f"`support_labels` must hold at least 2 distinct labels, got {names}.")
        if self.config.use_entity_positions and (support_entities is None or query_entities is None):
            raise ValueError(
                "`support_entities` and `query_entities` are required: this model reads each text's (head, tail) "
                "entity word indices."
            )
        shots = [[i for i, label in enumerate(support_labels) if label == name] for name in names]
        counts = {len(indices) for indices in shots}
        fixed = None if self.supports_ragged_shots else self.config.num_shots
        if fixed is not None and counts != {fixed}:
            raise ValueError(
                f"`support_labels`: this model's feature attention is tied to K = {fixed} shots per class "
                f"(num_shots), got {sorted(counts)} texts per label."
            )
        most_shots = max(counts)
        support = _encode_texts(tokenizer, list(support_texts), support_entities, self.config)
        empty = _encode_texts(tokenizer, [""], [(0, 0)] if support_entities is not None else None, self.config)
        rows = [[support[i] for i in indices] + [empty[0]] * (most_shots - len(indices)) for indices in shots]
        # The original Proto-HATT pads every text to max_sentence_length, and without masks the padding counts.
        width = None if getattr(self.config, "mask_padding", True) else self.config.max_sentence_length
        support_batch = _stack(rows, tokenizer.pad_token_id or 0, prefix="support_", width=width)
        results: list[Any] = []
        for start in range(0, len(query_texts), batch_size):
            texts = list(query_texts[start : start + batch_size])
            entities = None if query_entities is None else list(query_entities[start : start + batch_size])
            encoded = [_encode_texts(tokenizer, texts, entities, self.config)]
            queries = _stack(encoded, tokenizer.pad_token_id or 0, width=width)
            inputs = {name: tensor.to(self.device) for name, tensor in {**support_batch, **queries}.items()}
            output = self(**inputs, return_dict=True)
            probabilities = output.logits[0].float().softmax(dim=-1)
            for row, scores in enumerate(probabilities):
                label = names[int(scores.argmax())]
                if not output_attentions:
                    results.append(label)
                    continue
                result = {"label": label, "scores": dict(zip(names, scores.tolist(), strict=True))}
                instance = getattr(output, "instance_attentions", None)
                if instance is not None:
                    result["instance_attention"] = {
                        name: instance[0, row, n, : len(shots[n])].tolist() for n, name in enumerate(names)
                    }
                features = getattr(output, "feature_scores", None)
                if features is not None:
                    result["feature_scores"] = {name: features[0, n].tolist() for n, name in enumerate(names)}
                words = getattr(output, "word_attentions", None)
                if words is not None:
                    length = int(inputs["attention_mask"][0, row].sum())
                    tokens = tokenizer.convert_ids_to_tokens(inputs["input_ids"][0, row, :length].tolist())
                    result["word_attention"] = list(zip(tokens, words[0, row, :length].tolist(), strict=True))
                results.append(result)
        return results


def _encode_texts(
    tokenizer: PreTrainedTokenizerBase,
    texts: list[str],
    entities: Sequence[tuple[int, int]] | None,
    config: PreTrainedConfig,
) -> list[dict[str, Any]]:
    """Token ids (truncated to the model's `max_sentence_length`) and, for relations, each text's entity token
    indices (the first token of the entity word)."""
    encoded = tokenizer(texts, truncation=True, max_length=config.max_sentence_length)
    rows = []
    for index in range(len(texts)):
        row = {"input_ids": encoded["input_ids"][index], "attention_mask": encoded["attention_mask"][index]}
        if entities is not None:
            row["entity_positions"] = entity_token_positions(encoded, index, entities[index], len(row["input_ids"]))
        rows.append(row)
    return rows


def _stack(
    rows: list[list[dict[str, Any]]], pad_token_id: int, prefix: str = "", width: int | None = None
) -> dict[str, torch.Tensor]:
    """Rows of encoded texts (one list per class, or one list of queries) → one episode's tensors, padded to the
    longest text or to `width`: support `(1, N, K, T)` (`prefix="support_"`), queries `(1, Q, T)`."""
    width = width or max([len(item["input_ids"]) for row in rows for item in row] + [1])  # an empty text: 1 pad
    batch: dict[str, torch.Tensor] = {}
    for name, pad in (("input_ids", pad_token_id), ("attention_mask", 0)):
        values = [[item[name] + [pad] * (width - len(item[name])) for item in row] for row in rows]
        batch[prefix + name] = torch.tensor(values)
    if "entity_positions" in rows[0][0]:
        batch[prefix + "entity_positions"] = torch.tensor([[item["entity_positions"] for item in row] for row in rows])
    return {name: tensor[None] if prefix else tensor for name, tensor in batch.items()}
