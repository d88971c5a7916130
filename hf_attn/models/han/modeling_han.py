"""Hierarchical Attention Networks for Document Classification.

Zichao Yang, Diyi Yang, Chris Dyer, Xiaodong He, Alex Smola, Eduard Hovy. NAACL 2016. doi:10.18653/v1/N16-1174.
No official code was released.

A document is a sequence of sentences, a sentence a sequence of words. A bidirectional GRU reads the words of each
sentence (eq. 2–4); word attention with a learned context vector u_w pools them into a sentence vector s_i
(eq. 5–7); a bidirectional GRU reads the sentence vectors (eq. 8–10); sentence attention with a context vector u_s
pools them into the document vector v (eq. 9–10); p = softmax(W_c v + b_c) (eq. 11), trained with the negative
log-likelihood of the correct label (eq. 12).

What differs from the paper:
- Padding is excluded exactly at both levels: GRUs run packed over the real words and the real sentences only,
  and padded words / empty sentences get zero attention, so a document's outputs do not depend on its batch.
  An empty document (no word at all) gets a zero document vector and finite logits; its attention rows are zero.
- Speed: every non-empty sentence of the batch goes through ONE packed word-GRU call (the paper batches documents
  of similar size instead); the result is the same as running sentence by sentence.
- Optional dropout (`hidden_dropout_prob`, default 0 like the paper) on embeddings, sentence and document vectors.
- `rnn_type="lstm"` swaps both GRUs for LSTMs (a common variant); the paper's model is the default.

Shape legend: B documents, S sentences, T words per sentence, E embedding size, Hw / Hs GRU units per direction
of the word / sentence encoder, Aw / As attention sizes, L labels.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
from transformers import PreTrainedConfig, PreTrainedModel
from transformers import initialization as init
from transformers.utils import ModelOutput

from .configuration_han import HanConfig

# ---------------------------------------------------------------------------------------------------------------
# Outputs
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class HanModelOutput(ModelOutput):
    """
    Args:
        document_embedding (`torch.FloatTensor` of shape `(B, 2Hs)`): v, the document vector (eq. 10).
        sentence_hidden_states (`torch.FloatTensor` of shape `(B, S, 2Hs)`): h_i, the sentence encoder's states
            (eq. 8; zero at empty sentences).
        sentence_embeddings (`torch.FloatTensor` of shape `(B, S, 2Hw)`): s_i, the sentence vectors (eq. 7).
        word_hidden_states (`torch.FloatTensor` of shape `(B, S, T, 2Hw)`): h_it, the word encoder's states (eq. 4).
        word_attentions (`torch.FloatTensor` of shape `(B, S, T)`): α_it (eq. 6), one distribution over the words
            of each sentence (a zero row for an empty sentence).
        sentence_attentions (`torch.FloatTensor` of shape `(B, S)`): α_i (eq. 9), one distribution over the
            sentences of each document (a zero row for an empty document).
    """

    document_embedding: torch.FloatTensor | None = None
    sentence_hidden_states: torch.FloatTensor | None = None
    sentence_embeddings: torch.FloatTensor | None = None
    word_hidden_states: torch.FloatTensor | None = None
    word_attentions: torch.FloatTensor | None = None
    sentence_attentions: torch.FloatTensor | None = None


@dataclass
class HanDocumentClassifierOutput(ModelOutput):
    """
    Args:
        loss (`torch.FloatTensor` of shape `()`, *optional*): the task loss (eq. 12 for single-label problems), when
            `labels` are given.
        logits (`torch.FloatTensor` of shape `(B, L)`): W_c v + b_c, before the softmax of eq. 11.
        document_embedding (`torch.FloatTensor` of shape `(B, 2Hs)`): v.
        word_attentions (`torch.FloatTensor` of shape `(B, S, T)`): α_it.
        sentence_attentions (`torch.FloatTensor` of shape `(B, S)`): α_i.
    """

    loss: torch.FloatTensor | None = None
    logits: torch.FloatTensor | None = None
    document_embedding: torch.FloatTensor | None = None
    word_attentions: torch.FloatTensor | None = None
    sentence_attentions: torch.FloatTensor | None = None


# ---------------------------------------------------------------------------------------------------------------
# Primitives, copied from hf_attn.layers and hf_attn.utils so that this file is self-contained for trust_remote_code
# ---------------------------------------------------------------------------------------------------------------


# Copied from hf_attn.layers.masking.masked_softmax
def masked_softmax(scores: torch.Tensor, mask: torch.Tensor | None, dim: int = -1) -> torch.Tensor:
    """Softmax of ``scores`` over ``dim`` restricted to the positions where ``mask`` is true.

    Masked positions get exactly 0. A row without a single unmasked position gives all zeros, never NaN:
    such rows are what an all-padding example produces, and a NaN there would poison the whole batch's gradient.

    Args:
        scores: attention logits, e.g. ``(B, R, T)``.
        mask: boolean or 0/1 tensor broadcastable to ``scores`` (e.g. ``(B, 1, T)``); ``None`` means no masking.
        dim: the dimension to normalise over.
    """
    if mask is None:
        return torch.softmax(scores, dim=dim)
    mask = mask.to(torch.bool)
    # The most negative finite value, not -inf: exp(min - max) is exactly 0 whenever a row has a real score,
    # and a fully masked row stays finite (uniform) before the multiplication below zeroes it.
    scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    return torch.softmax(scores, dim=dim) * mask


# Copied from hf_attn.layers.attention.AdditiveAttentionPooling
class AdditiveAttentionPooling(nn.Module):
    """Multi-hop additive attention pooling.

    Args:
        input_size: ``D``, features of each position.
        attention_size: ``A``, hidden units of the scorer (Lin: d_a; HAN: the context-vector size).
        num_hops: ``R``, independent attention distributions (Lin: r; HAN: 1).
        bias: whether ``W_1`` has a bias (HAN: yes; Lin: no).
        dropout: dropout on the scorer's input only (Lin et al.'s implementation drops ``H`` before ``W_s1``
            while pooling the un-dropped ``H``).
        additive_mask_value: ``None`` excludes masked positions exactly (zero weight; an all-masked row pools to
            zeros). A float reproduces implementations that instead add ``value`` to masked scores (Lin et al.'s
            code adds -10000), which differs only on all-masked rows.

    Parameters: ``projection`` (W_1, b_1) and ``context`` (``(R, A)``, one context vector per hop). ``context`` starts
    at zero, so every hop starts uniform: there a penalty on the attention (Lin et al.'s P) has no gradient, and
    the task loss decides where the hops go before anything else can lock them onto arbitrary tokens.

    ``forward(hidden_states, attention_mask=None, values=None)`` scores ``hidden_states`` and pools ``values``
    (default: ``hidden_states``; BI-Attention scores sentences from more features than it pools).

    Returns from ``forward``: ``(pooled (B, R, D'), weights (B, R, T))``, ``D'`` the features of the pooled values.
    """

    def __init__(
        self,
        input_size: int,
        attention_size: int,
        num_hops: int = 1,
        bias: bool = True,
        dropout: float = 0.0,
        additive_mask_value: float | None = None,
    ) -> None:
        super().__init__()
        self.projection = nn.Linear(input_size, attention_size, bias=bias)
        self.context = nn.Parameter(torch.zeros(num_hops, attention_size))
        self.dropout = nn.Dropout(dropout)
        self.additive_mask_value = additive_mask_value

    def forward(
        self,
        hidden_states: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        values: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        keys = torch.tanh(self.projection(self.dropout(hidden_states)))  # u_t, (B, T, A)
        scores = torch.matmul(self.context, keys.transpose(1, 2))  # e = w_rᵀ u_t, (B, R, T)
        mask = None if attention_mask is None else attention_mask[:, None, :].to(torch.bool)  # (B, 1, T)
        if mask is not None and self.additive_mask_value is not None:
            weights = torch.softmax(scores + self.additive_mask_value * (~mask).to(scores.dtype), dim=-1)
        else:
            weights = masked_softmax(scores, mask, dim=-1)
        pooled = torch.bmm(weights, hidden_states if values is None else values)  # (B, R, D')
        return pooled, weights


# Copied from hf_attn.layers.rnn.PackedBiRNN
class PackedBiRNN(nn.Module):
    """Runs a batch-first ``nn.LSTM``/``nn.GRU``/``nn.RNN`` over right-padded inputs, packed by their lengths.

    ``pack_padded_sequence(enforce_sorted=False)`` sorts by length and restores the batch order on the way out.
    Outputs at padded positions are zero; an all-padding row yields zeros (it runs one step internally, since
    packing needs lengths ≥ 1, and that step is discarded).

    Args:
        rnn: the recurrent module; must be built with ``batch_first=True``.

    ``forward(inputs (B, T, D), attention_mask (B, T) | None, pack=True) -> (B, T, K·H)``. With ``pack=False`` (or
    no mask) the RNN runs over every position, pads included, as several original implementations do.
    """

    def __init__(self, rnn: nn.RNNBase) -> None:
        super().__init__()
        if not rnn.batch_first:
            raise ValueError("PackedBiRNN expects an RNN built with batch_first=True.")
        self.rnn = rnn

    @property
    def output_size(self) -> int:
        """``K·H``: features per position of the outputs."""
        hidden = getattr(self.rnn, "proj_size", 0) or self.rnn.hidden_size
        return hidden * (2 if self.rnn.bidirectional else 1)

    def forward(
        self, inputs: torch.Tensor, attention_mask: torch.Tensor | None = None, pack: bool = True
    ) -> torch.Tensor:
        if attention_mask is None or not pack:
            return self.rnn(inputs)[0]
        mask = attention_mask.to(torch.bool)
        lengths = mask.sum(dim=-1)
        positions = torch.arange(mask.size(-1), device=mask.device)
        if not torch.equal(mask, positions[None, :] < lengths[:, None]):
            raise ValueError(
                "PackedBiRNN needs right-padded inputs (attention_mask of the form 1…1 0…0); "
                "use a tokenizer with padding_side='right'."
            )
        packed = pack_padded_sequence(inputs, lengths.clamp(min=1).cpu(), batch_first=True, enforce_sorted=False)
        outputs, _ = self.rnn(packed)
        outputs, _ = pad_packed_sequence(outputs, batch_first=True, total_length=inputs.size(1))
        return outputs * (lengths > 0)[:, None, None].to(outputs.dtype)


# Copied from hf_attn.layers.hierarchy.run_rnn_skipping_masked
def run_rnn_skipping_masked(rnn: PackedBiRNN, inputs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Runs `rnn` over the unmasked items of each row of `inputs (B, L, D)`, in order, as one packed call.

    Unmasked items are first moved to the front of their row (a stable sort keeps their order), the RNN runs packed
    by their counts, and the outputs are moved back. A row without unmasked items gives zeros.

    Returns `(B, L, K·H)`, zero at masked items.
    """
    if inputs.size(0) == 0:  # nothing to run (packing needs at least one sequence)
        return inputs.new_zeros(*inputs.shape[:2], rnn.output_size)
    mask = mask.to(torch.bool)
    lengths = mask.sum(dim=-1)
    positions = torch.arange(mask.size(-1), device=mask.device)
    if torch.equal(mask, positions < lengths[:, None]):  # already right-padded: the common case, no reordering
        return rnn(inputs, mask)
    order = torch.sort((~mask).to(torch.int8), dim=-1, stable=True).indices  # unmasked first, in order, (B, L)
    aligned = rnn(inputs.gather(1, order[..., None].expand_as(inputs)), positions < lengths[:, None])
    # Scatter back: aligned slot j of a row holds item order[j]; its padded slots hold zeros for the masked items.
    return torch.zeros_like(aligned).scatter(1, order[..., None].expand_as(aligned), aligned)


# Copied from hf_attn.layers.hierarchy.run_rnn_over_sentences
def run_rnn_over_sentences(rnn: PackedBiRNN, inputs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Runs `rnn` over the words of every sentence of `inputs (B, S, T, D)` in ONE packed call.

    Only the N sentences with at least one unmasked word enter the RNN; the outputs are scattered back to their
    `(B, S)` slots. Returns `(B, S, T, K·H)`, zero at masked words and empty sentences.
    """
    batch, sentences, words, features = inputs.shape
    flat_mask = mask.reshape(batch * sentences, words).to(torch.bool)
    nonempty = flat_mask.any(dim=-1).nonzero().squeeze(-1)  # (N,)
    encoded = run_rnn_skipping_masked(
        rnn, inputs.reshape(batch * sentences, words, features)[nonempty], flat_mask[nonempty]
    )  # (N, T, K·H)
    outputs = encoded.new_zeros(batch * sentences, words, encoded.size(-1)).index_copy(0, nonempty, encoded)
    return outputs.view(batch, sentences, words, -1)


# Copied from hf_attn.layers.validation.check_token_inputs
def check_token_inputs(
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor | None,
    vocab_size: int,
    pad_token_id: int | None = None,
    shape: str = "(batch, tokens)",
    name: str = "input_ids",
    batch_size: int | None = None,
) -> torch.Tensor:
    """Validates token ids and their mask; returns the mask as a boolean tensor.

    Args:
        input_ids: integer token ids whose rank is the number of names in ``shape``.
        attention_mask: 1 for real tokens, 0 for padding, same shape as ``input_ids``; ``None`` derives it from
            ``pad_token_id`` (every position is real when that is ``None`` too).
        vocab_size: ids must lie in ``[0, vocab_size)``.
        pad_token_id: the padding id used when no mask is given.
        shape: the expected shape, e.g. ``"(batch, tokens)"``; its rank is checked and it is quoted in errors.
        name: the argument's name, quoted in errors.
        batch_size: the batch size ``input_ids`` must have: the first sequence's, when checking a pair's second.
    """
    rank = shape.count(",") + 1
    if not isinstance(input_ids, torch.Tensor):
        raise ValueError(f"`{name}` must be a torch.Tensor of shape {shape}, got {type(input_ids).__name__}.")
    if input_ids.dim() != rank:
        raise ValueError(
            f"`{name}` must have {rank} dimensions {shape}, got shape {tuple(input_ids.shape)} "
            f"({input_ids.dim()} dimensions)."
        )
    if batch_size is not None and input_ids.size(0) != batch_size:
        raise ValueError(
            f"`{name}` must have the batch size of `input_ids`: got {input_ids.size(0)} and {batch_size}."
        )
    if input_ids.is_floating_point() or input_ids.is_complex():
        raise ValueError(f"`{name}` must hold integer token ids, got dtype {input_ids.dtype}.")
    if input_ids.numel() > 0:
        smallest, largest = int(input_ids.min()), int(input_ids.max())
        if smallest < 0 or largest >= vocab_size:
            raise ValueError(
                f"`{name}` holds token ids outside the vocabulary [0, {vocab_size}): min {smallest}, max {largest}. "
                "Was the tokenizer built for this model?"
            )
    mask_name = name.replace("input_ids", "attention_mask")
    if attention_mask is None:
        if pad_token_id is None:
            return torch.ones_like(input_ids, dtype=torch.bool)
        return input_ids != pad_token_id
    if attention_mask.shape != input_ids.shape:
        raise ValueError(
            f"`{mask_name}` must have the same shape as `{name}` {shape}: got {tuple(attention_mask.shape)} "
            f"for a `{name}` of shape {tuple(input_ids.shape)}."
        )
    return attention_mask.to(torch.bool)


# Copied from hf_attn.layers.losses.classification_loss
def classification_loss(config: PreTrainedConfig, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """The task loss by `config.problem_type` (inferred from `num_labels` and the labels' dtype, as transformers)."""
    if config.problem_type is None:
        if config.num_labels == 1:
            config.problem_type = "regression"
        elif labels.dtype in (torch.long, torch.int):
            config.problem_type = "single_label_classification"
        else:
            config.problem_type = "multi_label_classification"
    if config.problem_type == "regression":
        return nn.functional.mse_loss(logits.squeeze(-1), labels.to(logits.dtype).view(-1))
    if config.problem_type == "single_label_classification":
        return nn.functional.cross_entropy(logits.view(-1, config.num_labels), labels.view(-1))
    return nn.functional.binary_cross_entropy_with_logits(logits, labels.to(logits.dtype))


# Copied from hf_attn.utils.hub_cache.SafetensorsLoadingMixin
class SafetensorsLoadingMixin:
    """`from_pretrained` for hf_attn models: safetensors only, and honest about broken downloads.

    - A folder holding only pickle weights is refused (`use_safetensors=False` raises): loading never unpickles.
    - If loading a Hub model fails, cached weights whose content does not match their hash are evicted and the
      error says so, so a retry downloads them again instead of trusting a corrupt file.
    - transformers' generic "can't load" `OSError` gets the root cause of the failure appended.

    Listed before `PreTrainedModel` in a model's bases.
    """

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, *args, **kwargs):
        if kwargs.get("use_safetensors") is False:
            raise ValueError("hf_attn models load safetensors only; pickle checkpoints are never unpickled.")
        kwargs["use_safetensors"] = True
        try:
            return super().from_pretrained(pretrained_model_name_or_path, *args, **kwargs)
        except Exception as error:
            if os.path.isdir(str(pretrained_model_name_or_path)):
                raise
            revision, cache_dir = kwargs.get("revision"), kwargs.get("cache_dir")
            evicted = evict_corrupt_downloads(str(pretrained_model_name_or_path), revision, cache_dir)
            if evicted:
                raise OSError(
                    f"The downloaded {', '.join(evicted)} of {pretrained_model_name_or_path} did not match its "
                    "hash (corrupted in transit); it was removed from the cache. Retry to download it again."
                ) from error
            # transformers' OSError names the files it looked for; the network's reason is at the chain's end.
            root, depth = error, 0
            while (root.__cause__ or root.__context__) is not None and depth < 20:
                root, depth = root.__cause__ or root.__context__, depth + 1
            if isinstance(error, OSError) and root is not error:
                raise OSError(f"{error}\nCaused by {type(root).__name__}: {root}") from error
            raise


# Copied from hf_attn.utils.hub_cache.evict_corrupt_downloads
def evict_corrupt_downloads(repo_id: str, revision: str | None = None, cache_dir: str | None = None) -> list[str]:
    """Removes cached `*.safetensors` files of `repo_id@revision` whose content does not hash to their etag.

    Returns the names of the evicted files (empty for local folders and repos not in the cache).
    """
    from huggingface_hub import try_to_load_from_cache

    config_path = try_to_load_from_cache(repo_id, "config.json", cache_dir=cache_dir, revision=revision)
    if not isinstance(config_path, str):
        return []
    snapshot = os.path.dirname(config_path)
    evicted = []
    for name in sorted(os.listdir(snapshot)):
        path = os.path.join(snapshot, name)
        blob = os.path.realpath(path)
        expected = os.path.basename(blob)
        if not name.endswith(".safetensors") or not re.fullmatch(r"[0-9a-f]{64}", expected):
            continue  # only LFS files are named by their sha256
        digest = hashlib.sha256()
        with open(blob, "rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
        if digest.hexdigest() != expected:
            os.remove(path)
            os.remove(blob)
            evicted.append(name)
    return evicted


# ---------------------------------------------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------------------------------------------


def _bidirectional_rnn(config: HanConfig, input_size: int, hidden_size: int) -> PackedBiRNN:
    rnn_class = nn.GRU if config.rnn_type == "gru" else nn.LSTM
    return PackedBiRNN(rnn_class(input_size, hidden_size, bidirectional=True, batch_first=True))


class HanPreTrainedModel(SafetensorsLoadingMixin, PreTrainedModel):
    config_class = HanConfig
    base_model_prefix = "han"
    main_input_name = "input_ids"
    _no_split_modules: ClassVar[list[str]] = []
    supports_gradient_checkpointing = False
    accepts_loss_kwargs = False

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        """Embeddings, projections and the context vectors u_w, u_s ~ U(−range, range) ("randomly initialized and
        jointly learned", §2.2); biases 0; GRUs with PyTorch's U(−1/√H, 1/√H); the padding row at zero."""
        bound = self.config.initializer_range
        if isinstance(module, nn.Linear):
            init.uniform_(module.weight, -bound, bound)
            if module.bias is not None:
                init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            init.uniform_(module.weight, -bound, bound)
            if module.padding_idx is not None and not getattr(module.weight, "_is_hf_initialized", False):
                init.zeros_(module.weight[module.padding_idx])
        elif isinstance(module, nn.RNNBase):
            rnn_bound = module.hidden_size**-0.5
            for parameter in module.parameters():
                init.uniform_(parameter, -rnn_bound, rnn_bound)
        elif isinstance(module, AdditiveAttentionPooling):
            init.uniform_(module.context, -bound, bound)


class HanModel(HanPreTrainedModel):
    """Word encoder + word attention (eq. 2–7) → sentence encoder + sentence attention (eq. 8–10) → v."""

    def __init__(self, config: HanConfig) -> None:
        super().__init__(config)
        self.embeddings = nn.Embedding(config.vocab_size, config.embedding_size, padding_idx=config.pad_token_id)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.word_encoder = _bidirectional_rnn(config, config.embedding_size, config.word_hidden_size)
        # u_it = tanh(W_w h_it + b_w), α_it = softmax_t(u_itᵀ u_w) (eq. 5–6): one hop, W_w with a bias.
        self.word_attention = AdditiveAttentionPooling(2 * config.word_hidden_size, config.word_attention_size)
        self.sentence_encoder = _bidirectional_rnn(config, 2 * config.word_hidden_size, config.sentence_hidden_size)
        self.sentence_attention = AdditiveAttentionPooling(
            2 * config.sentence_hidden_size, config.sentence_attention_size
        )
        self.post_init()

    def get_input_embeddings(self) -> nn.Embedding:
        return self.embeddings

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.embeddings = value

    def forward(
        self,
        input_ids: torch.LongTensor,
        attention_mask: torch.Tensor | None = None,
        return_dict: bool | None = None,
    ) -> HanModelOutput | tuple:
        r"""
        Args:
            input_ids (`torch.LongTensor` of shape `(B, S, T)`): word ids of each sentence of each document, as
                `DocumentTokenizerFast` returns them.
            attention_mask (`torch.Tensor` of shape `(B, S, T)`, *optional*): 1 for words, 0 for padding; derived
                from `config.pad_token_id` when omitted. A sentence without a single word is padding.
        """
        mask = check_token_inputs(
            input_ids, attention_mask, self.config.vocab_size, self.config.pad_token_id, "(batch, sentences, words)"
        )
        batch, sentences, words = input_ids.shape
        embeddings = self.dropout(self.embeddings(input_ids))  # x_it = W_e w_it (eq. 1), (B, S, T, E)
        word_states = run_rnn_over_sentences(self.word_encoder, embeddings, mask)  # h_it (eq. 2–4), (B, S, T, 2Hw)
        sentence_embeddings, word_attentions = self.word_attention(
            word_states.view(batch * sentences, words, -1), mask.view(batch * sentences, words)
        )  # s_i = Σ_t α_it h_it (eq. 7): (B·S, 1, 2Hw), α_it: (B·S, 1, T)
        sentence_embeddings = sentence_embeddings.view(batch, sentences, -1)
        sentence_mask = mask.any(dim=-1)  # (B, S)
        sentence_states = run_rnn_skipping_masked(
            self.sentence_encoder, self.dropout(sentence_embeddings), sentence_mask
        )  # h_i (eq. 8), (B, S, 2Hs)
        document, sentence_attentions = self.sentence_attention(sentence_states, sentence_mask)  # v (eq. 9–10)
        output = HanModelOutput(
            document_embedding=document.squeeze(1),
            sentence_hidden_states=sentence_states,
            sentence_embeddings=sentence_embeddings,
            word_hidden_states=word_states,
            word_attentions=word_attentions.view(batch, sentences, words),
            sentence_attentions=sentence_attentions.squeeze(1),
        )
        return output if return_dict is not False else output.to_tuple()


class HanForDocumentClassification(HanPreTrainedModel):
    """The paper's classifier: p = softmax(W_c v + b_c) (eq. 11), loss −Σ_d log p_dj (eq. 12) for single-label
    problems (`problem_type` as in transformers: regression and multi-label also work)."""

    def __init__(self, config: HanConfig) -> None:
        super().__init__(config)
        self.han = HanModel(config)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.classifier = nn.Linear(2 * config.sentence_hidden_size, config.num_labels)
        self.post_init()

    def forward(
        self,
        input_ids: torch.LongTensor,
        attention_mask: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        return_dict: bool | None = None,
    ) -> HanDocumentClassifierOutput | tuple:
        r"""
        Args:
            input_ids (`torch.LongTensor` of shape `(B, S, T)`): word ids per sentence per document.
            attention_mask (`torch.Tensor` of shape `(B, S, T)`, *optional*): 1 for words, 0 for padding.
            labels (`torch.Tensor` of shape `(B,)` or `(B, L)`, *optional*): class ids, regression targets or
                multi-hot vectors, by `config.problem_type`.
        """
        encoded = self.han(input_ids, attention_mask=attention_mask)
        logits = self.classifier(self.dropout(encoded.document_embedding))  # (B, L)
        loss = classification_loss(self.config, logits, labels) if labels is not None else None
        output = HanDocumentClassifierOutput(
            loss=loss,
            logits=logits,
            document_embedding=encoded.document_embedding,
            word_attentions=encoded.word_attentions,
            sentence_attentions=encoded.sentence_attentions,
        )
        return output if return_dict is not False else output.to_tuple()


__all__ = ["HanForDocumentClassification", "HanModel", "HanPreTrainedModel"]
