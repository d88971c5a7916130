"""A Structured Self-Attentive Sentence Embedding.

Zhouhan Lin, Minwei Feng, Cicero Nogueira dos Santos, Mo Yu, Bing Xiang, Bowen Zhou, Yoshua Bengio.
ICLR 2017. arXiv:1703.03130. Reference PyTorch port: https://github.com/ExplorerFreda/Structured-Self-Attentive-Sentence-Embedding

A bidirectional LSTM reads the sentence into H (n × 2u, eq. 1–3). A two-layer MLP without biases scores every
token r times, A = softmax(W_s2 tanh(W_s1 Hᵀ)) (eq. 6), and the sentence becomes the matrix M = A H (r × 2u, eq. 7).
P = ‖AAᵀ − I‖²_F (eq. 8) pushes the r hops to attend to different tokens.

What differs from the paper / the original code:
- Padding is excluded exactly: the LSTM runs packed and padded tokens get zero attention, so an example's outputs
  do not depend on its batch. The original runs the LSTM over pads and adds −10000 to padded scores;
  `pack_sequences=False` and `attention_mask_value=-10000.0` reproduce that (the converter sets both).
- The penalty is the paper's squared Frobenius norm; the original code's sqrt(‖·‖²_F + 1e-10) is
  `penalty_type="frobenius"`. Examples without a single token get P = 0.
- Dropout sits where the original code puts it: embeddings, between LSTM layers, the attention MLP's input, and
  both layers of the classifier (the paper does not say).
- The pair head implements the gated multiplicative interaction of appendix B (F_h ⊙ F_p); its classifier MLP
  uses tanh like the single-sentence head.
- The annotation scorer looks at each h_t alone (a position-wise MLP), exactly as in the paper.

Shape legend: B batch, T tokens, E embedding size, U LSTM units per direction (u), D = 2U, A attention units (d_a),
R hops (r), F pair-interaction size, C classifier hidden units, L labels.
"""

from __future__ import annotations

import hashlib
import math
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

from .configuration_lin_self_attentive import LinSelfAttentiveConfig

# ---------------------------------------------------------------------------------------------------------------
# Outputs
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class LinSelfAttentiveModelOutput(ModelOutput):
    """
    Args:
        last_hidden_state (`torch.FloatTensor` of shape `(B, T, 2U)`): H, the BiLSTM states (zero at pads).
        sentence_embedding (`torch.FloatTensor` of shape `(B, R, 2U)`): M = A H, the sentence embedding matrix.
        hop_attentions (`torch.FloatTensor` of shape `(B, R, T)`): A, one distribution over tokens per hop.
        penalty (`torch.FloatTensor` of shape `(B,)`): P per example (eq. 8, or the original's unsquared norm).
    """

    last_hidden_state: torch.FloatTensor | None = None
    sentence_embedding: torch.FloatTensor | None = None
    hop_attentions: torch.FloatTensor | None = None
    penalty: torch.FloatTensor | None = None


@dataclass
class LinSelfAttentiveSequenceClassifierOutput(ModelOutput):
    """
    Args:
        loss (`torch.FloatTensor` of shape `()`, *optional*): task loss + penalty_coefficient · mean P, when
            `labels` are given.
        logits (`torch.FloatTensor` of shape `(B, L)`): class scores before softmax.
        sentence_embedding (`torch.FloatTensor` of shape `(B, R, 2U)`): M.
        hop_attentions (`torch.FloatTensor` of shape `(B, R, T)`): A.
        penalty (`torch.FloatTensor` of shape `(B,)`): P per example.
    """

    loss: torch.FloatTensor | None = None
    logits: torch.FloatTensor | None = None
    sentence_embedding: torch.FloatTensor | None = None
    hop_attentions: torch.FloatTensor | None = None
    penalty: torch.FloatTensor | None = None


@dataclass
class LinSelfAttentivePairClassifierOutput(ModelOutput):
    """
    Args:
        loss (`torch.FloatTensor` of shape `()`, *optional*): task loss + penalty_coefficient · (mean P of the first
            sentence + mean P of the second), when `labels` are given.
        logits (`torch.FloatTensor` of shape `(B, L)`): class scores before softmax.
        sentence_embedding (`torch.FloatTensor` of shape `(B, R, 2U)`): M of the first sentence (premise).
        hop_attentions (`torch.FloatTensor` of shape `(B, R, T)`): A of the first sentence.
        penalty (`torch.FloatTensor` of shape `(B,)`): P of the first sentence.
        pair_sentence_embedding (`torch.FloatTensor` of shape `(B, R, 2U)`): M of the second sentence (hypothesis).
        pair_hop_attentions (`torch.FloatTensor` of shape `(B, R, T')`): A of the second sentence.
        pair_penalty (`torch.FloatTensor` of shape `(B,)`): P of the second sentence.
    """

    loss: torch.FloatTensor | None = None
    logits: torch.FloatTensor | None = None
    sentence_embedding: torch.FloatTensor | None = None
    hop_attentions: torch.FloatTensor | None = None
    penalty: torch.FloatTensor | None = None
    pair_sentence_embedding: torch.FloatTensor | None = None
    pair_hop_attentions: torch.FloatTensor | None = None
    pair_penalty: torch.FloatTensor | None = None


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
# Building blocks
# ---------------------------------------------------------------------------------------------------------------


def annotation_penalty(
    hop_attentions: torch.Tensor, attention_mask: torch.Tensor, penalty_type: str = "squared_frobenius"
) -> torch.Tensor:
    """P = ‖A Aᵀ − I‖²_F per example (eq. 8), shape `(B,)`.

    `penalty_type="frobenius"` gives the original code's sqrt(‖A Aᵀ − I‖²_F + 1e-10) instead. Padded tokens carry
    no attention, so they do not enter A Aᵀ; an example without a single token gets P = 0.

    Args:
        hop_attentions: A, `(B, R, T)`.
        attention_mask: `(B, T)`, true at real tokens.
        penalty_type: `"squared_frobenius"` (paper) or `"frobenius"` (original code).
    """
    gram = torch.bmm(hop_attentions, hop_attentions.transpose(1, 2))  # A Aᵀ, (B, R, R)
    identity = torch.eye(gram.size(-1), dtype=gram.dtype, device=gram.device)
    penalty = (gram - identity).pow(2).sum(dim=(1, 2))
    if penalty_type == "frobenius":
        penalty = torch.sqrt(penalty + 1e-10)
    return penalty * attention_mask.any(dim=-1).to(penalty.dtype)


class LinSelfAttentiveClassificationHead(nn.Module):
    """The paper's MLP classifier on the flattened sentence matrix (§2.1, §4):
    logits = W_2 tanh(W_1 flat(M) + b_1) + b_2.

    Dropout comes before each layer, as in the original code.
    """

    def __init__(self, config: LinSelfAttentiveConfig, input_size: int) -> None:
        super().__init__()
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.dense = nn.Linear(input_size, config.classifier_hidden_size)
        self.out_proj = nn.Linear(config.classifier_hidden_size, config.num_labels)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        hidden = torch.tanh(self.dense(self.dropout(features)))  # (B, C)
        return self.out_proj(self.dropout(hidden))  # (B, L)


class GatedMultiplicativeInteraction(nn.Module):
    """Appendix B: F_h = batched_dot(M_h, W_fh), F_p = batched_dot(M_p, W_fp), F_r = F_h ⊙ F_p.

    `batched_dot` takes the hops as the batch axis: hop r of each sentence matrix is multiplied by its own
    `(2U, F)` slice of the 3-way weight tensors. Returns F_r of shape `(B, R, F)`.
    """

    def __init__(self, config: LinSelfAttentiveConfig) -> None:
        super().__init__()
        shape = (config.attention_hops, 2 * config.hidden_size, config.pair_interaction_size)
        self.premise_factor = nn.Parameter(torch.empty(shape))  # W_fp
        self.hypothesis_factor = nn.Parameter(torch.empty(shape))  # W_fh

    def forward(self, premise_embedding: torch.Tensor, hypothesis_embedding: torch.Tensor) -> torch.Tensor:
        premise_factors = torch.einsum("brd,rdf->brf", premise_embedding, self.premise_factor)  # F_p
        hypothesis_factors = torch.einsum("brd,rdf->brf", hypothesis_embedding, self.hypothesis_factor)  # F_h
        return premise_factors * hypothesis_factors  # F_r


def flatten_sentence_embedding(sentence_embedding: torch.Tensor, flatten_order: str) -> torch.Tensor:
    """`(B, R, D) -> (B, R·D)`: hop-major (row after row of M, the original's `M.view(B, -1)`) or feature-major."""
    if flatten_order == "feature_major":
        sentence_embedding = sentence_embedding.transpose(1, 2)
    return sentence_embedding.reshape(sentence_embedding.size(0), -1)


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


# ---------------------------------------------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------------------------------------------


class LinSelfAttentivePreTrainedModel(SafetensorsLoadingMixin, PreTrainedModel):
    config_class = LinSelfAttentiveConfig
    base_model_prefix = "lin"
    main_input_name = "input_ids"
    _no_split_modules: ClassVar[list[str]] = []
    supports_gradient_checkpointing = False
    accepts_loss_kwargs = False

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        """As the original code: embeddings and linear weights ~ U(−0.1, 0.1), biases 0, the LSTM with PyTorch's
        U(−1/√U, 1/√U); the pair factors ~ U(−1/√(2U), 1/√(2U)). The padding row starts at zero. Deviation:
        W_s2 starts at zero (uniform attention), see below."""
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
            rnn_bound = 1.0 / math.sqrt(module.hidden_size)
            for parameter in module.parameters():
                init.uniform_(parameter, -rnn_bound, rnn_bound)
        elif isinstance(module, AdditiveAttentionPooling):
            # W_s2 = 0: every hop starts uniform. There the penalty's gradient is the same for every token and
            # vanishes through the softmax, so the task loss shapes the hops before the penalty spreads them
            # (with a random W_s2 the penalty locks hops onto arbitrary tokens first).
            init.zeros_(module.context)
        elif isinstance(module, GatedMultiplicativeInteraction):
            factor_bound = 1.0 / math.sqrt(module.premise_factor.size(1))
            init.uniform_(module.premise_factor, -factor_bound, factor_bound)
            init.uniform_(module.hypothesis_factor, -factor_bound, factor_bound)


class LinSelfAttentiveModel(LinSelfAttentivePreTrainedModel):
    """Embeddings → BiLSTM (H, eq. 1–3) → r-hop self-attention (A, eq. 6) → M = A H (eq. 7), with P (eq. 8)."""

    def __init__(self, config: LinSelfAttentiveConfig) -> None:
        super().__init__(config)
        self.embeddings = nn.Embedding(config.vocab_size, config.embedding_size, padding_idx=config.pad_token_id)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.encoder = PackedBiRNN(
            nn.LSTM(
                config.embedding_size,
                config.hidden_size,
                num_layers=config.num_hidden_layers,
                dropout=config.hidden_dropout_prob if config.num_hidden_layers > 1 else 0.0,
                bidirectional=True,
                batch_first=True,
            )
        )
        # W_s1 (d_a × 2u) and W_s2 (r × d_a), both without biases (eq. 5–6).
        self.attention = AdditiveAttentionPooling(
            2 * config.hidden_size,
            config.attention_hidden_size,
            num_hops=config.attention_hops,
            bias=False,
            dropout=config.hidden_dropout_prob,
            additive_mask_value=config.attention_mask_value,
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
    ) -> LinSelfAttentiveModelOutput | tuple:
        r"""
        Args:
            input_ids (`torch.LongTensor` of shape `(B, T)`): token ids, right-padded.
            attention_mask (`torch.Tensor` of shape `(B, T)`, *optional*): 1 for tokens, 0 for padding; derived from
                `config.pad_token_id` when omitted.
        """
        mask = check_token_inputs(input_ids, attention_mask, self.config.vocab_size, self.config.pad_token_id)
        embeddings = self.dropout(self.embeddings(input_ids))  # (B, T, E)
        hidden_states = self.encoder(embeddings, mask, pack=self.config.pack_sequences)  # H, (B, T, 2U)
        sentence_embedding, hop_attentions = self.attention(hidden_states, mask)  # M (B, R, 2U), A (B, R, T)
        penalty = annotation_penalty(hop_attentions, mask, self.config.penalty_type)  # P, (B,)
        output = LinSelfAttentiveModelOutput(
            last_hidden_state=hidden_states,
            sentence_embedding=sentence_embedding,
            hop_attentions=hop_attentions,
            penalty=penalty,
        )
        return output if return_dict is not False else output.to_tuple()


class LinSelfAttentiveForSequenceClassification(LinSelfAttentivePreTrainedModel):
    """The paper's sentence classifier (Yelp, Age; §4.1–4.2): the MLP head on flat(M).

    Loss = task loss (by `problem_type`) + `penalty_coefficient` · mean_b P_b.
    """

    def __init__(self, config: LinSelfAttentiveConfig) -> None:
        super().__init__(config)
        self.lin = LinSelfAttentiveModel(config)
        self.classifier = LinSelfAttentiveClassificationHead(config, config.attention_hops * 2 * config.hidden_size)
        self.post_init()

    def forward(
        self,
        input_ids: torch.LongTensor,
        attention_mask: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        return_dict: bool | None = None,
    ) -> LinSelfAttentiveSequenceClassifierOutput | tuple:
        r"""
        Args:
            input_ids (`torch.LongTensor` of shape `(B, T)`): token ids, right-padded.
            attention_mask (`torch.Tensor` of shape `(B, T)`, *optional*): 1 for tokens, 0 for padding.
            labels (`torch.Tensor` of shape `(B,)` or `(B, L)`, *optional*): class ids, regression targets, or
                multi-hot vectors, by `config.problem_type`.
        """
        encoded = self.lin(input_ids, attention_mask=attention_mask)
        logits = self.classifier(flatten_sentence_embedding(encoded.sentence_embedding, self.config.flatten_order))
        loss = None
        if labels is not None:
            loss = classification_loss(self.config, logits, labels)
            loss = loss + self.config.penalty_coefficient * encoded.penalty.mean()
        output = LinSelfAttentiveSequenceClassifierOutput(
            loss=loss,
            logits=logits,
            sentence_embedding=encoded.sentence_embedding,
            hop_attentions=encoded.hop_attentions,
            penalty=encoded.penalty,
        )
        return output if return_dict is not False else output.to_tuple()


class LinSelfAttentiveForPairClassification(LinSelfAttentivePreTrainedModel):
    """Sentence-pair classification (SNLI, appendix B): one shared encoder embeds both sentences, the gated
    multiplicative interaction F_r = F_h ⊙ F_p combines them hop by hop, and the MLP head classifies flat(F_r).

    Inputs follow hf_attn's pair convention: the premise as `input_ids`/`attention_mask`, the hypothesis as
    `pair_input_ids`/`pair_attention_mask`. Loss = task loss + `penalty_coefficient` · (mean P_p + mean P_h).
    """

    def __init__(self, config: LinSelfAttentiveConfig) -> None:
        super().__init__(config)
        self.lin = LinSelfAttentiveModel(config)
        self.interaction = GatedMultiplicativeInteraction(config)
        self.classifier = LinSelfAttentiveClassificationHead(
            config, config.attention_hops * config.pair_interaction_size
        )
        self.post_init()

    def forward(
        self,
        input_ids: torch.LongTensor,
        pair_input_ids: torch.LongTensor,
        attention_mask: torch.Tensor | None = None,
        pair_attention_mask: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        return_dict: bool | None = None,
    ) -> LinSelfAttentivePairClassifierOutput | tuple:
        r"""
        Args:
            input_ids (`torch.LongTensor` of shape `(B, T)`): the premise's token ids, right-padded.
            pair_input_ids (`torch.LongTensor` of shape `(B, T')`): the hypothesis's token ids, right-padded.
            attention_mask (`torch.Tensor` of shape `(B, T)`, *optional*): the premise's mask.
            pair_attention_mask (`torch.Tensor` of shape `(B, T')`, *optional*): the hypothesis's mask.
            labels (`torch.Tensor` of shape `(B,)`, *optional*): class ids (or targets, by `config.problem_type`).
        """
        # Checked here so that errors name the pair arguments (the encoder checks again, cheaply).
        vocab_size, pad_token_id = self.config.vocab_size, self.config.pad_token_id
        attention_mask = check_token_inputs(input_ids, attention_mask, vocab_size, pad_token_id)
        pair_attention_mask = check_token_inputs(
            pair_input_ids, pair_attention_mask, vocab_size, pad_token_id, name="pair_input_ids",
            batch_size=input_ids.size(0),
        )  # fmt: skip
        premise = self.lin(input_ids, attention_mask=attention_mask)
        hypothesis = self.lin(pair_input_ids, attention_mask=pair_attention_mask)
        interaction = self.interaction(premise.sentence_embedding, hypothesis.sentence_embedding)  # (B, R, F)
        logits = self.classifier(flatten_sentence_embedding(interaction, self.config.flatten_order))
        loss = None
        if labels is not None:
            loss = classification_loss(self.config, logits, labels)
            loss = loss + self.config.penalty_coefficient * (premise.penalty.mean() + hypothesis.penalty.mean())
        output = LinSelfAttentivePairClassifierOutput(
            loss=loss,
            logits=logits,
            sentence_embedding=premise.sentence_embedding,
            hop_attentions=premise.hop_attentions,
            penalty=premise.penalty,
            pair_sentence_embedding=hypothesis.sentence_embedding,
            pair_hop_attentions=hypothesis.hop_attentions,
            pair_penalty=hypothesis.penalty,
        )
        return output if return_dict is not False else output.to_tuple()


__all__ = [
    "LinSelfAttentiveForPairClassification",
    "LinSelfAttentiveForSequenceClassification",
    "LinSelfAttentiveModel",
    "LinSelfAttentivePreTrainedModel",
]
