"""Bi-BloSAN: Bi-Directional Block Self-Attention for Fast and Memory-Efficient Sequence Modeling.

Tao Shen, Tianyi Zhou, Guodong Long, Jing Jiang, Chengqi Zhang. ICLR 2018. arXiv:1804.00857.
Original code (TensorFlow 1): https://github.com/taoshen58/BiBloSA

Each direction (forward, backward) maps the tokens, h = act(x W + b), and runs a masked block self-attention
(mBloSA, §3.2) over h: the sequence is split into m blocks of r tokens; inside every block a masked
multi-dimensional token2token self-attention (§3.1, scores c·tanh((W_1 h_i + W_2 h_j + b)/c), strict direction
masks) gives s; a multi-dimensional source2token summary per block gives v; a masked self-attention over the m
summaries with its fusion gate gives e; a context-fusion gate mixes [h; s; e of the token's block]. The two
directions are concatenated, u = [u_fw; u_bw] (2H), and a multi-dimensional source2token attention pools u into the
sentence vector (§3.3). Multi-dimensional means feature-wise: a score is a vector, and the softmax runs over tokens
separately for each feature.

This port follows the original code, which differs from the paper in places (`../shared/fixtures/biblosa`):
- Each direction has its own parameters, its own input map included; everything attends over the mapped h; the
  final gate mixes act(new context) with h, not with the raw x; there is no gate after the intra-block attention,
  and the block summaries are taken over s, the intra-block output.
- The block length r is a config value, or the original's in-graph rule (`block_length="auto"`, eq. 19's
  r = ⌈(2n)^(1/3)⌉ computed in float32 on the padded width, overshoot at perfect cubes included).
- Dropout sits on the input of every dense layer, as the original's `keep_prob`.
What differs from the original, on purpose:
- `mask_padding=True` (default): blocks made only of padding are not keys of the inter-block attention, padded
  positions of the token output are zero and an all-padding sentence pools to zeros. The original lets padding blocks
  in, so a sentence's vector depends on how far its batch is padded; `mask_padding=False` reproduces it
  (the converter sets it).
- Memory: the multi-dimensional attentions are computed in chunks and their backward pass recomputes the scores
  (`block_attention.py`), so training keeps O(n·H) per layer instead of O(n·r·H); `recompute_block_attention=False`
  gives plain autograd.
- Attention maps are returned averaged over the H features (each row is still a distribution over the allowed keys);
  the sentence-level source2token weights are also returned per feature.
- Embedding rows all train; the original keeps the ids 0 (padding) and 1 (UNK) at zero and the GloVe-only rows fixed.

Shape legend: B batch, T tokens (n, the padded width), E embedding size (d), H hidden width of one direction, r block
length, m = ⌈T / r⌉ blocks, C classifier hidden units, L labels.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import nn
from transformers import PreTrainedModel
from transformers import initialization as init
from transformers.utils import ModelOutput

from hf_attn.layers.checkpointing import CheckpointingLayer
from hf_attn.layers.losses import classification_loss
from hf_attn.layers.masking import masked_softmax
from hf_attn.layers.outputs import output_flags
from hf_attn.layers.validation import check_token_inputs, embed_inputs
from hf_attn.utils.loading import SafetensorsLoadingMixin

from .block_attention import multi_dimensional_attention
from .configuration_biblosa import BiBlosaConfig

# ---------------------------------------------------------------------------------------------------------------
# Outputs
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class BiBlosaModelOutput(ModelOutput):
    """
    Args:
        last_hidden_state (`torch.FloatTensor` of shape `(B, T, 2H)`): u = [u_fw; u_bw], the token-level output.
        sentence_embedding (`torch.FloatTensor` of shape `(B, 2H)`): the source2token sentence vector (§3.3).
        sentence_attentions (`torch.FloatTensor` of shape `(B, T)`): the sentence-level source2token weights averaged
            over the 2H features: how much of the sentence vector each token makes.
        sentence_feature_attentions (`torch.FloatTensor` of shape `(B, 2H, T)`): the same weights per feature.
        block_attentions (`torch.FloatTensor` of shape `(B, 2, m, r, r)`): the intra-block attention of each
            direction (0 forward, 1 backward), query × key inside each block, averaged over the H features.
        inter_block_attentions (`torch.FloatTensor` of shape `(B, 2, m, m)`, *optional*): the inter-block attention
            of each direction over the block summaries, averaged over the features; with `output_attentions` only
            (quadratic in m = n / r, it alone would make memory grow as n² when r is small).
        hidden_states / attentions (`tuple(torch.FloatTensor)`, *optional*): the embeddings and u, and the maps above,
            when asked for (`output_hidden_states` / `output_attentions`; the head contract, CONTRIBUTING.md).
    """

    last_hidden_state: torch.FloatTensor | None = None
    sentence_embedding: torch.FloatTensor | None = None
    sentence_attentions: torch.FloatTensor | None = None
    sentence_feature_attentions: torch.FloatTensor | None = None
    block_attentions: torch.FloatTensor | None = None
    inter_block_attentions: torch.FloatTensor | None = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None
    attentions: tuple[torch.FloatTensor, ...] | None = None


@dataclass
class BiBlosaSequenceClassifierOutput(ModelOutput):
    """
    Args:
        loss (`torch.FloatTensor` of shape `()`, *optional*): the task loss (+ the original's L2 term when
            `config.l2_regularization` > 0), when `labels` are given.
        logits (`torch.FloatTensor` of shape `(B, L)`): class scores before softmax.
        sentence_embedding, sentence_attentions, sentence_feature_attentions, block_attentions,
            inter_block_attentions: as [`BiBlosaModelOutput`].
        hidden_states / attentions (`tuple(torch.FloatTensor)`, *optional*): as [`BiBlosaModelOutput`].
    """

    loss: torch.FloatTensor | None = None
    logits: torch.FloatTensor | None = None
    sentence_embedding: torch.FloatTensor | None = None
    sentence_attentions: torch.FloatTensor | None = None
    sentence_feature_attentions: torch.FloatTensor | None = None
    block_attentions: torch.FloatTensor | None = None
    inter_block_attentions: torch.FloatTensor | None = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None
    attentions: tuple[torch.FloatTensor, ...] | None = None


@dataclass
class BiBlosaPairClassifierOutput(ModelOutput):
    """
    Args:
        loss (`torch.FloatTensor` of shape `()`, *optional*): as [`BiBlosaSequenceClassifierOutput`].
        logits (`torch.FloatTensor` of shape `(B, L)`): class scores before softmax.
        sentence_embedding, sentence_attentions, sentence_feature_attentions, block_attentions,
            inter_block_attentions: the first sentence's (premise), as [`BiBlosaModelOutput`].
        pair_sentence_embedding, pair_sentence_attentions, pair_sentence_feature_attentions, pair_block_attentions,
            pair_inter_block_attentions: the second sentence's (hypothesis); its block length may differ with
            `block_length="auto"`.
        hidden_states / attentions (`tuple(torch.FloatTensor)`, *optional*): the premise's, then the hypothesis's.
    """

    loss: torch.FloatTensor | None = None
    logits: torch.FloatTensor | None = None
    sentence_embedding: torch.FloatTensor | None = None
    sentence_attentions: torch.FloatTensor | None = None
    sentence_feature_attentions: torch.FloatTensor | None = None
    block_attentions: torch.FloatTensor | None = None
    inter_block_attentions: torch.FloatTensor | None = None
    pair_sentence_embedding: torch.FloatTensor | None = None
    pair_sentence_attentions: torch.FloatTensor | None = None
    pair_sentence_feature_attentions: torch.FloatTensor | None = None
    pair_block_attentions: torch.FloatTensor | None = None
    pair_inter_block_attentions: torch.FloatTensor | None = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None
    attentions: tuple[torch.FloatTensor, ...] | None = None


@dataclass
class BlockDirectionOutput(ModelOutput):
    """What one direction of mBloSA computes (§3.2), block by block; `BiBlosaDirection.forward` returns it.

    Args:
        output (`(B, T, H)`): u of this direction, cut back to the input's width.
        hidden (`(B, m, r, H)`): h = act(x W + b), the mapped tokens (at padded positions too).
        intra_output (`(B, m, r, H)`): s, the intra-block attention result.
        summary_weights (`(B, m, r, H)`): the source2token weights of each block's summary.
        block_summaries (`(B, m, H)`): v, one summary per block.
        block_hidden (`(B, m, H)`): g = act(v W + b), the inter-block attention's mapped input.
        inter_output (`(B, m, H)`): o, the inter-block attention result.
        inter_gate (`(B, m, H)`): F, the inter-block fusion gate.
        block_output (`(B, m, H)`): e = F ⊙ g + (1 − F) ⊙ o.
        fusion_input (`(B, m, r, 3H)`): [h; s; e tiled over the block].
        fusion_gate (`(B, m, r, H)`): G of the context fusion.
        intra_attentions (`(B, m, r, r)`) / inter_attentions (`(B, m, m)`): the attention maps, feature-averaged.
    """

    output: torch.FloatTensor | None = None
    hidden: torch.FloatTensor | None = None
    intra_output: torch.FloatTensor | None = None
    summary_weights: torch.FloatTensor | None = None
    block_summaries: torch.FloatTensor | None = None
    block_hidden: torch.FloatTensor | None = None
    inter_output: torch.FloatTensor | None = None
    inter_gate: torch.FloatTensor | None = None
    block_output: torch.FloatTensor | None = None
    fusion_input: torch.FloatTensor | None = None
    fusion_gate: torch.FloatTensor | None = None
    intra_attentions: torch.FloatTensor | None = None
    inter_attentions: torch.FloatTensor | None = None


# ---------------------------------------------------------------------------------------------------------------
# Building blocks
# ---------------------------------------------------------------------------------------------------------------

ACTIVATIONS = {"elu": nn.functional.elu, "relu": nn.functional.relu, "linear": lambda values: values}


def _float32(value: float) -> float:
    """`value` rounded to the nearest float32, as a Python float."""
    return struct.unpack("f", struct.pack("f", value))[0]


def original_block_length(padded_length: int) -> int:
    """The original's in-graph block length for a tensor of padded width n (eq. 19's memory optimum):
    r = ⌈float32(2n) ** float32(1/3)⌉. float32's 1/3 is 0.33333334, so perfect cubes overshoot: n = 108, 256, 500,
    864 give 7, 9, 11, 13 (the original's values). Computed on Python floats rounded to float32 (no tensor op, so
    `torch.compile` traces through it); equal to float32 `pow` for every n up to 200,000."""
    return math.ceil(_float32(_float32(2.0 * padded_length) ** _float32(1.0 / 3.0)))


def block_length_for_lengths(lengths: list[int], batch_size: int) -> int:
    """The block length the original training scripts (`*_main.py train()`) fix for a dataset: with μ and σ the mean
    and (population) standard deviation of the training sentence lengths, n̂ = μ + σ·√(2 ln batch_size) and
    r = ⌈(2n̂)^(1/3)⌉ + 1 (the `+ 1` carries the original's `# fixme`), in float64."""
    if not lengths:
        raise ValueError("`lengths` is empty: the rule needs the training sentence lengths.")
    mean = sum(lengths) / len(lengths)
    std = math.sqrt(sum((length - mean) ** 2 for length in lengths) / len(lengths))
    expected = mean + std * math.sqrt(2.0 * math.log(float(batch_size)))
    return math.ceil(math.pow(2 * expected, 1.0 / 3)) + 1


def resolve_block_length(block_length: int | str, padded_length: int) -> int:
    """r for an input of padded width n: the config's int, or the original's rule for `"auto"`."""
    return original_block_length(padded_length) if block_length == "auto" else int(block_length)


def split_into_blocks(values: torch.Tensor, block_length: int) -> torch.Tensor:
    """`(B, T, …)` → `(B, m, r, …)`, zero-padded to m·r positions (§3.2: the last block is padded)."""
    blocks = -(-values.size(1) // block_length)
    padding = blocks * block_length - values.size(1)  # 0 … r − 1; concatenated even when 0 (no branch on a size)
    values = torch.nn.functional.pad(values, (0, 0) * (values.dim() - 2) + (0, padding))
    return values.reshape(values.size(0), blocks, block_length, *values.shape[2:])


def multi_dimensional_source2token(
    logits: torch.Tensor, values: torch.Tensor, mask: torch.Tensor, dim: int, exclude_masked: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """Multi-dimensional source2token attention (§3.1): a softmax over `dim` for every feature, then Σ P ⊙ values.

    `exclude_masked=True` gives masked positions exactly 0 and a row without a real position all zeros. `False` is
    the original's −1e30 additive mask without the multiplication afterwards: an all-padding row is uniform.
    Returns `(pooled, weights)`.
    """
    mask = mask.to(torch.bool)[..., None]
    if exclude_masked:
        weights = masked_softmax(logits, mask, dim=dim)
    else:
        weights = torch.softmax(logits.masked_fill(~mask, torch.finfo(logits.dtype).min), dim=dim)
    return (weights * values).sum(dim=dim), weights


class BiBlosaDirection(CheckpointingLayer):
    """One direction of Bi-BloSAN: the token map and the masked block self-attention (mBloSA, §3.2).

    Parameters, with the original's names:
        token_map: h = act(x W + b) (`split_seq/bn_dense_map`).
        intra_key / intra_query / intra_bias: W_1 h_j, W_2 h_i and b of the intra-block score (`self_attention/
            linear_dependent_head` columns [:H] and [H:], `f_bias`).
        summary_scores: the block summary's source2token logits s W + b (`source2token_self_attn`).
        inter_map: g = act(v W + b) (`self_attn_inter_block/disa/bn_dense_map`).
        inter_key / inter_query / inter_bias: the inter-block score (`linear_dependent`, `linear_head`, `f_bias`).
        inter_gate_map / inter_gate_attention / inter_gate_bias: F = σ(g W_g1 + o W_g2 + b) (`linear_fusion_i`,
            `linear_fusion_a`, `o_bias`).
        fusion_map / fusion_gate: the context fusion's new context and gate over [h; s; E] (`combination/
            linear_new_context_and_gate` columns [:H] and [H:]).
    """

    def __init__(self, config: BiBlosaConfig, direction: str) -> None:
        super().__init__()
        hidden = config.hidden_size
        self.direction = direction
        self.config = config
        self.activation = ACTIVATIONS[config.hidden_act]
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.token_map = nn.Linear(config.embedding_size, hidden)
        self.intra_key = nn.Linear(hidden, hidden, bias=False)
        self.intra_query = nn.Linear(hidden, hidden, bias=False)
        self.intra_bias = nn.Parameter(torch.zeros(hidden))
        self.summary_scores = nn.Linear(hidden, hidden)
        self.inter_map = nn.Linear(hidden, hidden)
        self.inter_key = nn.Linear(hidden, hidden, bias=False)
        self.inter_query = nn.Linear(hidden, hidden, bias=False)
        self.inter_bias = nn.Parameter(torch.zeros(hidden))
        self.inter_gate_map = nn.Linear(hidden, hidden)
        self.inter_gate_attention = nn.Linear(hidden, hidden)
        self.inter_gate_bias = nn.Parameter(torch.zeros(hidden))
        self.fusion_map = nn.Linear(3 * hidden, hidden)
        self.fusion_gate = nn.Linear(3 * hidden, hidden)

    def attention(
        self,
        hidden: torch.Tensor,
        mask: torch.Tensor,
        key: nn.Linear,
        query: nn.Linear,
        bias: torch.Tensor,
        with_maps: bool = True,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Masked multi-dimensional token2token self-attention in this direction (§3.1) over `(G, L, H)` sequences:
        f(h_i, h_j) = c·tanh([W_1 h_j + W_2 h_i + b]/c) + M_ij, P = softmax_j per feature, s_i = Σ_j P_ij ⊙ h_j."""
        dropped = self.dropout(hidden)
        return multi_dimensional_attention(
            key(dropped), query(dropped), bias, hidden, mask, self.direction, self.config.score_scale,
            recompute=self.config.recompute_block_attention, with_maps=with_maps,
        )  # fmt: skip

    def forward(
        self, inputs: torch.Tensor, mask: torch.Tensor, block_length: int, inter_maps: bool = True
    ) -> BlockDirectionOutput:
        """`inputs (B, T, E)`, `mask (B, T)` bool → [`BlockDirectionOutput`] with u `(B, T, H)`. `inter_maps=False`
        leaves out the inter-block map `(B, m, m)`, the one tensor quadratic in the number of blocks."""
        batch_size, length = mask.shape
        act, drop, hidden_size = self.activation, self.dropout, self.config.hidden_size
        mask_blocks = split_into_blocks(mask, block_length)  # (B, m, r), False at the padding added
        blocks = mask_blocks.size(1)
        hidden = act(self.token_map(drop(split_into_blocks(inputs, block_length))))  # h, (B, m, r, H)

        # (1) Intra-block: the same masked attention inside every block, h^l = g_m(x^l, M).
        intra_output, intra_attentions = self.attention(
            hidden.flatten(0, 1), mask_blocks.flatten(0, 1), self.intra_key, self.intra_query, self.intra_bias
        )
        intra_output = intra_output.view_as(hidden)  # s, (B, m, r, H)

        # (2) Inter-block: a source2token summary per block v^l = g_s2t(s^l), then masked self-attention over the
        # summaries o = g_m(v, M) and the gate e = F ⊙ g + (1 − F) ⊙ o.
        block_summaries, summary_weights = multi_dimensional_source2token(
            self.summary_scores(drop(intra_output)), intra_output, mask_blocks, dim=2,
            exclude_masked=self.config.mask_padding,
        )  # fmt: skip
        block_hidden = act(self.inter_map(drop(block_summaries)))  # g, (B, m, H)
        real_blocks = mask_blocks.any(dim=-1) if self.config.mask_padding else torch.ones_like(mask_blocks[..., 0])
        inter_output, inter_attentions = self.attention(
            block_hidden, real_blocks, self.inter_key, self.inter_query, self.inter_bias, with_maps=inter_maps
        )  # o, (B, m, H)
        inter_gate = torch.sigmoid(
            self.inter_gate_map(drop(block_hidden))
            + self.inter_gate_attention(drop(inter_output))
            + self.inter_gate_bias
        )
        block_output = inter_gate * block_hidden + (1 - inter_gate) * inter_output  # e, (B, m, H)

        # (3) Context fusion: E repeats e over its block's r tokens; u = G ⊙ act(W_f1 [h; s; E] + b) + (1 − G) ⊙ h.
        tiled = block_output[:, :, None, :].expand(-1, -1, block_length, -1)
        fusion_input = drop(torch.cat([hidden, intra_output, tiled], dim=-1))  # (B, m, r, 3H)
        fusion_gate = torch.sigmoid(self.fusion_gate(fusion_input))
        fused = fusion_gate * act(self.fusion_map(fusion_input)) + (1 - fusion_gate) * hidden
        output = fused.reshape(batch_size, blocks * block_length, hidden_size)
        # The first T positions, as a gather: a slice's layout would branch (in a traced graph) on m·r == T.
        output = output.index_select(1, torch.arange(length, device=output.device))
        if self.config.mask_padding:
            output = output * mask[..., None].to(output.dtype)
        return BlockDirectionOutput(
            output=output,
            hidden=hidden,
            intra_output=intra_output,
            summary_weights=summary_weights,
            block_summaries=block_summaries,
            block_hidden=block_hidden,
            inter_output=inter_output,
            inter_gate=inter_gate,
            block_output=block_output,
            fusion_input=fusion_input,
            fusion_gate=fusion_gate,
            intra_attentions=intra_attentions.view(batch_size, blocks, block_length, block_length),
            inter_attentions=inter_attentions,
        )


class BiBlosaSentencePooling(nn.Module):
    """The sentence encoding (§3.3): multi-dimensional source2token attention over u = [u_fw; u_bw],
    f(u_i) = W_2 act(W_1 u_i + b_1) + b_2, softmax over tokens per feature, s = Σ_i P_i ⊙ u_i
    (the original's `multi_dim_attn_for_block`)."""

    def __init__(self, config: BiBlosaConfig) -> None:
        super().__init__()
        width = 2 * config.hidden_size
        self.config = config
        self.activation = ACTIVATIONS[config.hidden_act]
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.dense = nn.Linear(width, width)
        self.scores = nn.Linear(width, width)

    def forward(self, hidden_states: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """`(B, T, 2H)`, `(B, T)` → sentence vector `(B, 2H)` and the weights `(B, T, 2H)`."""
        logits = self.scores(self.dropout(self.activation(self.dense(self.dropout(hidden_states)))))
        return multi_dimensional_source2token(
            logits, hidden_states, mask, dim=1, exclude_masked=self.config.mask_padding
        )


class BiBlosaEncoder(nn.Module):
    """Bi-BloSAN (§3.3): a forward and a backward mBloSA, each with its own parameters, concatenated, then the
    sentence-level source2token pooling."""

    def __init__(self, config: BiBlosaConfig) -> None:
        super().__init__()
        self.config = config
        self.forward_attention = BiBlosaDirection(config, "forward")
        self.backward_attention = BiBlosaDirection(config, "backward")
        self.pooling = BiBlosaSentencePooling(config)

    def forward(
        self, inputs: torch.Tensor, mask: torch.Tensor, inter_maps: bool = True
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """`(B, T, E)`, `(B, T)` bool → u `(B, T, 2H)`, sentence vector `(B, 2H)`, its weights `(B, T, 2H)`, the
        intra-block maps `(B, 2, m, r, r)` and the inter-block maps `(B, 2, m, m)` (`None` without `inter_maps`)."""
        block_length = resolve_block_length(self.config.block_length, mask.size(1))
        forward = self.forward_attention(inputs, mask, block_length, inter_maps)
        backward = self.backward_attention(inputs, mask, block_length, inter_maps)
        hidden_states = torch.cat([forward.output, backward.output], dim=-1)  # u = [u_fw; u_bw]
        sentence, weights = self.pooling(hidden_states, mask)
        block_maps = torch.stack([forward.intra_attentions, backward.intra_attentions], dim=1)
        inter = None
        if inter_maps:  # quadratic in m: only when asked for
            inter = torch.stack([forward.inter_attentions, backward.inter_attentions], dim=1)
        return hidden_states, sentence, weights, block_maps, inter


# ---------------------------------------------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------------------------------------------


class BiBlosaPreTrainedModel(SafetensorsLoadingMixin, PreTrainedModel):
    config_class = BiBlosaConfig
    base_model_prefix = "biblosa"
    supports_gradient_checkpointing = True  # per layer or level: its GradientCheckpointingLayer modules
    _input_embed_layer = "embeddings"  # transformers' get/set_input_embeddings find them
    _no_split_modules: ClassVar[list[str]] = ["BiBlosaDirection"]

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        """As the original: every dense weight Glorot-uniform (TensorFlow's `get_variable` default), every bias 0
        (the score biases f_bias and the gate's o_bias too); word embeddings N(0, initializer_range²) (the paper
        loads GloVe), the padding row zero."""
        if isinstance(module, nn.Linear):
            init.xavier_uniform_(module.weight)
            if module.bias is not None:
                init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            init.normal_(module.weight, std=self.config.initializer_range)
            if module.padding_idx is not None and not getattr(module.weight, "_is_hf_initialized", False):
                init.zeros_(module.weight[module.padding_idx])
        elif isinstance(module, BiBlosaDirection):
            for bias in (module.intra_bias, module.inter_bias, module.inter_gate_bias):
                init.zeros_(bias)

    def l2_penalty(self) -> torch.Tensor:
        """The original's weight-decay term Σ‖W‖²/2 over its `reg_vars`: every dense weight matrix except the
        inter-block key and query projections (called without `wd` there); the embeddings are not in it."""
        weights = [
            module.weight
            for name, module in self.named_modules()
            if isinstance(module, nn.Linear) and not name.endswith(("inter_key", "inter_query"))
        ]
        return sum(weight.float().square().sum() for weight in weights) / 2

    def _loss(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """The task loss by `problem_type`, plus `l2_regularization` · the L2 term (the original's `wd`)."""
        loss = classification_loss(self.config, logits, labels)
        if self.config.l2_regularization:
            loss = loss + self.config.l2_regularization * self.l2_penalty()
        return loss


class BiBlosaModel(BiBlosaPreTrainedModel):
    """Word embeddings → Bi-BloSAN (§3.3) → token output u `(B, T, 2H)` and the sentence vector `(B, 2H)`."""

    def __init__(self, config: BiBlosaConfig) -> None:
        super().__init__(config)
        self.embeddings = nn.Embedding(config.vocab_size, config.embedding_size, padding_idx=config.pad_token_id)
        self.encoder = BiBlosaEncoder(config)
        self.post_init()

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        inputs_embeds: torch.FloatTensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
    ) -> BiBlosaModelOutput | tuple:
        r"""
        Args:
            input_ids (`torch.LongTensor` of shape `(B, T)`): token ids, right-padded.
            attention_mask (`torch.Tensor` of shape `(B, T)`, *optional*): 1 for tokens, 0 for padding; every position
                is a token when omitted.
            inputs_embeds (`torch.FloatTensor` of shape `(B, T, E)`, *optional*): word vectors instead of
                `input_ids` (every position is a token unless `attention_mask` says otherwise).
        """
        output_attentions, output_hidden_states, return_dict = output_flags(
            self.config, output_attentions, output_hidden_states, return_dict
        )
        inputs_embeds, mask = embed_inputs(
            self.embeddings, input_ids, inputs_embeds, attention_mask,
            right_padded=True,  # blocks are cut from the first position: left padding would move them
        )  # fmt: skip
        hidden_states, sentence, weights, block_maps, inter_maps = self.encoder(
            inputs_embeds, mask, inter_maps=output_attentions
        )
        feature_weights = weights.transpose(1, 2)  # (B, 2H, T)
        sentence_attentions = feature_weights.mean(dim=1)  # (B, T)
        output = BiBlosaModelOutput(
            last_hidden_state=hidden_states,
            sentence_embedding=sentence,
            sentence_attentions=sentence_attentions,
            sentence_feature_attentions=feature_weights,
            block_attentions=block_maps,
            inter_block_attentions=inter_maps,
            hidden_states=(inputs_embeds, hidden_states) if output_hidden_states else None,
            attentions=(sentence_attentions, block_maps, inter_maps) if output_attentions else None,
        )
        return output if return_dict else output.to_tuple()


class BiBlosaForSequenceClassification(BiBlosaPreTrainedModel):
    """The original's sentence classifier (SST, TREC, CR, SUBJ, MPQA; `exp_SC`): logits = act(s W_1 + b_1) W_2, the
    output layer without a bias."""

    def __init__(self, config: BiBlosaConfig) -> None:
        super().__init__(config)
        self.biblosa = BiBlosaModel(config)
        self.activation = ACTIVATIONS[config.hidden_act]
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.dense = nn.Linear(2 * config.hidden_size, config.classifier_hidden_size)
        self.out_proj = nn.Linear(config.classifier_hidden_size, config.num_labels, bias=False)
        self.post_init()

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        inputs_embeds: torch.FloatTensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
    ) -> BiBlosaSequenceClassifierOutput | tuple:
        r"""
        Args:
            input_ids (`torch.LongTensor` of shape `(B, T)`): token ids, right-padded.
            attention_mask (`torch.Tensor` of shape `(B, T)`, *optional*): 1 for tokens, 0 for padding.
            labels (`torch.Tensor` of shape `(B,)` or `(B, L)`, *optional*): class ids (-100: ignored), regression
                targets, or multi-hot vectors, by `config.problem_type`.
            inputs_embeds (`torch.FloatTensor` of shape `(B, T, E)`, *optional*): word vectors instead of ids.
        """
        output_attentions, output_hidden_states, return_dict = output_flags(
            self.config, output_attentions, output_hidden_states, return_dict
        )
        encoded = self.biblosa(
            input_ids, attention_mask, inputs_embeds, output_attentions, output_hidden_states, return_dict=True
        )
        hidden = self.activation(self.dense(self.dropout(encoded.sentence_embedding)))  # (B, C)
        logits = self.out_proj(self.dropout(hidden))  # (B, L)
        output = BiBlosaSequenceClassifierOutput(
            loss=self._loss(logits, labels) if labels is not None else None,
            logits=logits,
            sentence_embedding=encoded.sentence_embedding,
            sentence_attentions=encoded.sentence_attentions,
            sentence_feature_attentions=encoded.sentence_feature_attentions,
            block_attentions=encoded.block_attentions,
            inter_block_attentions=encoded.inter_block_attentions,
            hidden_states=encoded.hidden_states,
            attentions=encoded.attentions,
        )
        return output if return_dict else output.to_tuple()


class BiBlosaPairHead(nn.Module):
    """The original's SNLI output layers (`exp_SNLI`): p = act([s1; s2; s1 − s2; s1 ⊙ s2] W + b), a highway layer
    p' = σ(p W_g + b_g) ⊙ act(p W_m + b_m) + (1 − σ(p W_g + b_g)) ⊙ p, and logits = p' W_o + b_o."""

    def __init__(self, config: BiBlosaConfig) -> None:
        super().__init__()
        hidden = config.classifier_hidden_size
        self.activation = ACTIVATIONS[config.hidden_act]
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.dense = nn.Linear(8 * config.hidden_size, hidden)
        self.highway_gate = nn.Linear(hidden, hidden)
        self.highway_map = nn.Linear(hidden, hidden)
        self.out_proj = nn.Linear(hidden, config.num_labels)

    def forward(self, premise: torch.Tensor, hypothesis: torch.Tensor) -> torch.Tensor:
        features = torch.cat([premise, hypothesis, premise - hypothesis, premise * hypothesis], dim=-1)  # (B, 8H)
        hidden = self.activation(self.dense(self.dropout(features)))  # (B, C)
        dropped = self.dropout(hidden)
        gate = torch.sigmoid(self.highway_gate(dropped))
        hidden = gate * self.activation(self.highway_map(dropped)) + (1 - gate) * hidden
        return self.out_proj(self.dropout(hidden))  # (B, L)


class BiBlosaForPairClassification(BiBlosaPreTrainedModel):
    """Sentence-pair classification (SNLI, §4.1): one shared encoder for both sentences, the features
    [s1; s2; s1 − s2; s1 ⊙ s2] and the original's highway output layers.

    Inputs follow hf_attn's pair convention: the premise as `input_ids`/`attention_mask`, the hypothesis as
    `pair_input_ids`/`pair_attention_mask`. With `block_length="auto"` each gets its own r, as in the original.
    """

    def __init__(self, config: BiBlosaConfig) -> None:
        super().__init__(config)
        self.biblosa = BiBlosaModel(config)
        self.classifier = BiBlosaPairHead(config)
        self.post_init()

    def forward(
        self,
        input_ids: torch.LongTensor,
        pair_input_ids: torch.LongTensor,
        attention_mask: torch.Tensor | None = None,
        pair_attention_mask: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
    ) -> BiBlosaPairClassifierOutput | tuple:
        r"""
        Args:
            input_ids (`torch.LongTensor` of shape `(B, T)`): the premise's token ids, right-padded.
            pair_input_ids (`torch.LongTensor` of shape `(B, T')`): the hypothesis's token ids, right-padded.
            attention_mask (`torch.Tensor` of shape `(B, T)`, *optional*): the premise's mask.
            pair_attention_mask (`torch.Tensor` of shape `(B, T')`, *optional*): the hypothesis's mask.
            labels (`torch.Tensor` of shape `(B,)`, *optional*): class ids (-100: ignored).
        """
        output_attentions, output_hidden_states, return_dict = output_flags(
            self.config, output_attentions, output_hidden_states, return_dict
        )
        # Checked here so that errors name the pair arguments (the encoder checks again, cheaply).
        vocab_size = self.config.vocab_size
        attention_mask = check_token_inputs(input_ids, attention_mask, vocab_size, right_padded=True)
        pair_attention_mask = check_token_inputs(
            pair_input_ids, pair_attention_mask, vocab_size, name="pair_input_ids",
            batch_size=input_ids.size(0), right_padded=True,
        )  # fmt: skip
        flags = {"output_attentions": output_attentions, "output_hidden_states": output_hidden_states}
        premise = self.biblosa(input_ids, attention_mask, **flags, return_dict=True)
        hypothesis = self.biblosa(pair_input_ids, pair_attention_mask, **flags, return_dict=True)
        logits = self.classifier(premise.sentence_embedding, hypothesis.sentence_embedding)
        output = BiBlosaPairClassifierOutput(
            loss=self._loss(logits, labels) if labels is not None else None,
            logits=logits,
            sentence_embedding=premise.sentence_embedding,
            sentence_attentions=premise.sentence_attentions,
            sentence_feature_attentions=premise.sentence_feature_attentions,
            block_attentions=premise.block_attentions,
            inter_block_attentions=premise.inter_block_attentions,
            pair_sentence_embedding=hypothesis.sentence_embedding,
            pair_sentence_attentions=hypothesis.sentence_attentions,
            pair_sentence_feature_attentions=hypothesis.sentence_feature_attentions,
            pair_block_attentions=hypothesis.block_attentions,
            pair_inter_block_attentions=hypothesis.inter_block_attentions,
            hidden_states=premise.hidden_states + hypothesis.hidden_states if output_hidden_states else None,
            attentions=premise.attentions + hypothesis.attentions if output_attentions else None,
        )
        return output if return_dict else output.to_tuple()


__all__ = [
    "BiBlosaForPairClassification",
    "BiBlosaForSequenceClassification",
    "BiBlosaModel",
    "BiBlosaPreTrainedModel",
    "block_length_for_lengths",
    "original_block_length",
]
