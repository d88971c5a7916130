"""HAPN: Hierarchical Attention Prototypical Networks for Few-Shot Text Classification.

Shengli Sun, Qingfeng Sun, Kevin Zhou, Tengchao Lv. EMNLP-IJCNLP 2019, ACL Anthology D19-1045. No public code.

A prototypical network (Snell et al. 2017) with attention at three levels:
1. instance encoder (§3.1): embeddings w_t (+ position embeddings p_t for relation data), one convolution of
   window m with ReLU, keeping the word states h_1..h_T (no pooling);
2. word-level attention (§3.2), shared by support and query: u_t = tanh(W_w h_t + b_w), α_t = softmax_t(u_tᵀ u_w),
   s = Σ_t α_t h_t;
3. feature-level attention (§3.3): per class, the support instances' states max-pooled over words, S_ci ∈ R^{K×d},
   go through three convolutions that give λ_i ∈ R^d; d(c_i, q) = Σ λ_i ⊙ (c_i − q)²;
4. instance-level multi cross attention (§3.4): s_φ = f_φ(s_i^j), q_φ = f_φ(q), mca = [s_φ; q_φ; |s_φ − q_φ|;
   s_φ ⊙ q_φ], γ_i^j = sum(tanh(f_φ'(mca))), β = softmax over the K shots, c_i = Σ_j β_i^j s_i^j (query-specific);
5. logits = −d(c_i, q), softmax over the N classes.

What the paper leaves open, and the choices here (each a config field):
- sizes: the CNN has `hidden_size` filters (230, as Proto-HATT), u_t and u_w have `word_attention_size`, f_φ and
  f_φ' output `instance_attention_size` (both default to `hidden_size`); every layer has a bias;
- the feature attention: Proto-HATT's channels 1 → 32 → 64 → 1 with ReLU between, dropout before the last, and
  ReLU on λ (`feature_attention_activation`), but with kernels of extent `feature_attention_kernel` (3) along the
  shot axis, zero-padded, averaged over the real shots at the end: λ is defined for any K (Proto-HATT's kernels
  (K, 1) tie a model to one K);
- masks: padding never changes an instance (zero inputs to the convolution at padded positions, zero states
  there, masked word attention), and an empty support instance (a padded shot) is left out of the instance
  attention, the feature attention and the prototype, so classes may have different numbers of shots;
- ablations: `use_word_attention=False` max-pools the states, `use_feature_attention=False` weighs every feature
  1, `use_instance_attention=False` averages the shots.

Shape legend: B episodes, N ways, K shots, Q queries per episode, T tokens, E embedding size, D hidden size,
A attention size.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from torch import nn
from transformers import PreTrainedModel
from transformers import initialization as init
from transformers.utils import ModelOutput

from hf_attn.layers.attention import AdditiveAttentionPooling
from hf_attn.layers.few_shot import (
    ConvolutionalInstanceEncoder,
    FewShotPredictionMixin,
    check_episode_inputs,
    mean_prototypes,
    squared_distance_logits,
)
from hf_attn.layers.losses import token_cross_entropy
from hf_attn.layers.masking import masked_softmax
from hf_attn.layers.outputs import output_flags
from hf_attn.utils.loading import SafetensorsLoadingMixin

from .configuration_hapn import HapnConfig


@dataclass
class HapnModelOutput(ModelOutput):
    """
    Args:
        last_hidden_state (`torch.FloatTensor` of shape `(..., T, D)`): the word states h_t (zero at padding).
        pooler_output (`torch.FloatTensor` of shape `(..., D)`): s, the word-attention encoding (max-pooled states
            without the word attention).
        max_pooled_output (`torch.FloatTensor` of shape `(..., D)`): the states max-pooled over words (the input of
            the feature attention).
        word_attentions (`torch.FloatTensor` of shape `(..., T)`): α_t (zero at padding; `None` without the
            word attention).
        hidden_states (`tuple(torch.FloatTensor)`, *optional*): `(embeddings (..., T, E), h (..., T, D))`.
    """

    last_hidden_state: torch.FloatTensor | None = None
    pooler_output: torch.FloatTensor | None = None
    max_pooled_output: torch.FloatTensor | None = None
    word_attentions: torch.FloatTensor | None = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None


@dataclass
class HapnFewShotOutput(ModelOutput):
    """
    Args:
        loss (`torch.FloatTensor` of shape `()`, *optional*): cross-entropy of the queries' labels.
        logits (`torch.FloatTensor` of shape `(B, Q, N)`): −d(c_i, q) per query and class.
        word_attentions (`torch.FloatTensor` of shape `(B, Q, T)`): α over each query's tokens.
        support_word_attentions (`torch.FloatTensor` of shape `(B, N, K, T)`): α over each support instance's
            tokens.
        instance_attentions (`torch.FloatTensor` of shape `(B, Q, N, K)`): β, per query a distribution over each
            class's shots.
        feature_scores (`torch.FloatTensor` of shape `(B, N, D)`): λ_i, per class a weight ≥ 0 per feature.
        prototypes (`torch.FloatTensor` of shape `(B, Q, N, D)` or `(B, N, D)`): c_i.
        hidden_states (`tuple(torch.FloatTensor)`, *optional*): `(support word states (B, N, K, T, D), query word
            states (B, Q, T, D), support encodings (B, N, K, D), query encodings (B, Q, D))`.
        attentions (`tuple(torch.FloatTensor)`, *optional*): the maps above that the model has, when asked.
    """

    loss: torch.FloatTensor | None = None
    logits: torch.FloatTensor | None = None
    word_attentions: torch.FloatTensor | None = None
    support_word_attentions: torch.FloatTensor | None = None
    instance_attentions: torch.FloatTensor | None = None
    feature_scores: torch.FloatTensor | None = None
    prototypes: torch.FloatTensor | None = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None
    attentions: tuple[torch.FloatTensor, ...] | None = None


class FeatureLevelAttention(nn.Module):
    """§3.3: λ_i from class i's max-pooled support instances S_ci `(K, D)`: convolutions along the shot axis (each
    feature column read with the same filters, as Proto-HATT), Conv → ReLU for the hidden layers, dropout, the
    output convolution, the mean over the real shots, and an activation giving λ ≥ 0 (see the module docstring)."""

    def __init__(self, config: HapnConfig) -> None:
        super().__init__()
        kernel = (config.feature_attention_kernel, 1)
        padding = (config.feature_attention_kernel // 2, 0)
        channels = [1, *config.feature_attention_channels]
        self.convolutions = nn.ModuleList(
            nn.Conv2d(inputs, outputs, kernel, padding=padding) for inputs, outputs in itertools.pairwise(channels)
        )
        self.dropout = nn.Dropout(config.feature_attention_dropout_prob)
        self.output = nn.Conv2d(channels[-1], 1, kernel, padding=padding)
        self.activation = {"relu": torch.relu, "softplus": nn.functional.softplus, "sigmoid": torch.sigmoid}[
            config.feature_attention_activation
        ]

    def forward(self, support: torch.Tensor, shot_mask: torch.Tensor) -> torch.Tensor:
        """`(B, N, K, D)` max-pooled support states and the shot mask `(B, N, K)` → λ `(B, N, D)`."""
        batch, ways, shots, size = support.shape
        keep = shot_mask.reshape(batch * ways, 1, shots, 1).to(support.dtype)
        features = support.reshape(batch * ways, 1, shots, size) * keep
        for convolution in self.convolutions:
            features = torch.relu(convolution(features)) * keep  # a padded shot reads as the zero padding
        features = self.output(self.dropout(features))  # (B·N, 1, K, D)
        pooled = (features * keep).sum(dim=2) / keep.sum(dim=2).clamp(min=1)  # mean over the real shots
        return self.activation(pooled).view(batch, ways, size)


class MultiCrossAttention(nn.Module):
    """§3.4: instance-level multi cross attention. s_φ = f_φ(s), q_φ = f_φ(q); γ = sum(tanh(f_φ'([s_φ; q_φ;
    |s_φ − q_φ|; s_φ ⊙ q_φ]))); β = softmax over the K shots; c_i = Σ_j β_j s_i^j."""

    def __init__(self, hidden_size: int, attention_size: int) -> None:
        super().__init__()
        self.projection = nn.Linear(hidden_size, attention_size)  # f_φ
        self.matching = nn.Linear(4 * attention_size, attention_size)  # f_φ'

    def forward(
        self, support: torch.Tensor, queries: torch.Tensor, shot_mask: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """support `(B, N, K, D)`, queries `(B, Q, D)`, shot mask `(B, N, K)` → prototypes `(B, Q, N, D)` and β
        `(B, Q, N, K)`."""
        support_projected = self.projection(support)[:, None]  # (B, 1, N, K, A)
        query_projected = self.projection(queries)[:, :, None, None]  # (B, Q, 1, 1, A)
        support_projected, query_projected = torch.broadcast_tensors(support_projected, query_projected)
        features = torch.cat(
            [
                support_projected,
                query_projected,
                (support_projected - query_projected).abs(),
                support_projected * query_projected,
            ],
            dim=-1,
        )  # mca, (B, Q, N, K, 4A)
        scores = torch.tanh(self.matching(features)).sum(dim=-1)  # γ, (B, Q, N, K)
        weights = masked_softmax(scores, shot_mask[:, None], dim=-1)  # β
        prototypes = (weights[..., None] * support[:, None]).sum(dim=3)
        return prototypes, weights


class HapnPreTrainedModel(SafetensorsLoadingMixin, PreTrainedModel):
    config_class = HapnConfig
    base_model_prefix = "hapn"
    supports_gradient_checkpointing = True  # per layer or level: its GradientCheckpointingLayer modules
    main_input_name = "input_ids"
    accepts_loss_kwargs = False  # the loss is a mean over the batch's queries
    _no_split_modules: ClassVar[list[str]] = []

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        """PyTorch's defaults for the convolutions and linear layers (the paper states none), word embeddings
        N(0, 1/d_w) (the scale of unit-norm GloVe rows; `--word_vectors` loads GloVe), position embeddings N(0, 1),
        padding rows zero, the context vector u_w ~ N(0, initializer_range), and the feature attention's last bias 1
        (λ starts positive: a ReLU on scores that all start below 0 would pass no gradient)."""
        if isinstance(module, nn.Linear | nn.Conv1d | nn.Conv2d):
            init.kaiming_uniform_(module.weight, a=5**0.5)
            bound = 1 / module.weight[0].numel() ** 0.5
            init.uniform_(module.bias, -bound, bound)
            if module is getattr(getattr(self, "feature_attention", None), "output", None):
                init.ones_(module.bias)  # λ starts near 1: every feature starts in the distance
        elif isinstance(module, nn.Embedding):
            words = module is self.get_input_embeddings()
            init.normal_(module.weight, std=module.embedding_dim**-0.5 if words else 1.0)
            if module.padding_idx is not None and not getattr(module.weight, "_is_hf_initialized", False):
                init.zeros_(module.weight[module.padding_idx])
        elif isinstance(module, AdditiveAttentionPooling):
            init.normal_(module.context, std=self.config.initializer_range)


class HapnModel(HapnPreTrainedModel):
    """The instance encoder (§3.1) with the word-level attention (§3.2): `(…, T)` token ids → word states h
    `(…, T, D)`, the attended encoding s `(…, D)` and the max-pooled states `(…, D)`."""

    # A dotted path: SafetensorsLoadingMixin's get/set_input_embeddings follow it.
    _input_embed_layer = "encoder.word_embeddings"

    def __init__(self, config: HapnConfig) -> None:
        super().__init__(config)
        self.encoder = ConvolutionalInstanceEncoder(
            config.vocab_size,
            config.word_embedding_size,
            config.hidden_size,
            config.kernel_size,
            config.pad_token_id,
            position_embedding_size=config.position_embedding_size if config.use_entity_positions else 0,
            max_distance=config.max_sentence_length,
        )
        if config.use_word_attention:
            self.word_attention = AdditiveAttentionPooling(config.hidden_size, config.word_attention_size)
        self.post_init()

    def forward(
        self,
        input_ids: torch.LongTensor,
        attention_mask: torch.Tensor | None = None,
        entity_positions: torch.LongTensor | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        **kwargs: Any,
    ) -> HapnModelOutput | tuple:
        r"""
        Args:
            input_ids (`torch.LongTensor` of shape `(..., T)`): token ids of any number of instances, right-padded.
            attention_mask (`torch.Tensor` of shape `(..., T)`, *optional*): 1 for tokens, 0 for padding.
            entity_positions (`torch.LongTensor` of shape `(..., 2)`, *optional*): head and tail entity token
                indices (required with `use_entity_positions`).
        """
        _, output_hidden_states, return_dict = output_flags(self.config, None, output_hidden_states, return_dict)
        mask, embedded, states = self.encoder(input_ids, attention_mask, entity_positions)
        max_pooled = states.max(dim=-2).values  # states ≥ 0 and zero at padding: the max over real tokens
        weights = None
        pooled = max_pooled
        if self.config.use_word_attention:
            length, size = states.shape[-2:]
            pooled, weights = self.word_attention(
                states.reshape(-1, length, size), mask.reshape(-1, length), map_shape=mask.shape
            )
            pooled = pooled.view(max_pooled.shape)  # one hop: (n, 1, H) → (…, H)
        output = HapnModelOutput(
            last_hidden_state=states,
            pooler_output=pooled,
            max_pooled_output=max_pooled,
            word_attentions=weights,
            hidden_states=(embedded, states) if output_hidden_states else None,
        )
        return output if return_dict else output.to_tuple()


class HapnForFewShotClassification(FewShotPredictionMixin, HapnPreTrainedModel):
    """HAPN (§3): scores each query against the N classes of its episode, for any N and K (classes may have
    different numbers of shots: pad with empty support instances). `labels (B, Q)`: the index of each query's class
    among the episode's N (−100: a padded query)."""

    def __init__(self, config: HapnConfig) -> None:
        super().__init__(config)
        self.hapn = HapnModel(config)
        if config.use_feature_attention:
            self.feature_attention = FeatureLevelAttention(config)
        if config.use_instance_attention:
            self.instance_attention = MultiCrossAttention(config.hidden_size, config.instance_attention_size)
        self.post_init()

    def forward(
        self,
        input_ids: torch.LongTensor,
        support_input_ids: torch.LongTensor,
        attention_mask: torch.Tensor | None = None,
        support_attention_mask: torch.Tensor | None = None,
        entity_positions: torch.LongTensor | None = None,
        support_entity_positions: torch.LongTensor | None = None,
        labels: torch.LongTensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        **kwargs: Any,
    ) -> HapnFewShotOutput | tuple:
        r"""
        Args:
            input_ids (`torch.LongTensor` of shape `(B, Q, T)`): the queries' token ids, right-padded (a query of
                all padding is a padded query slot).
            support_input_ids (`torch.LongTensor` of shape `(B, N, K, T)`): the support set (an all-padding
                instance is a padded shot).
            attention_mask / support_attention_mask (*optional*): 1 for tokens, 0 for padding.
            entity_positions / support_entity_positions (`torch.LongTensor` of shape `(B, Q, 2)` / `(B, N, K,
                2)`, *optional*): head and tail entity token indices (with `use_entity_positions`).
            labels (`torch.LongTensor` of shape `(B, Q)`, *optional*): class index in [0, N), −100 to ignore.
        """
        output_attentions, output_hidden_states, return_dict = output_flags(
            self.config, output_attentions, output_hidden_states, return_dict
        )
        query_mask, support_mask = check_episode_inputs(
            input_ids, attention_mask, support_input_ids, support_attention_mask, self.config.vocab_size,
            entity_positions, support_entity_positions, self.config.use_entity_positions,
        )  # fmt: skip
        support_encoded = self.hapn(support_input_ids, support_mask.long(), support_entity_positions, return_dict=True)
        query_encoded = self.hapn(input_ids, query_mask.long(), entity_positions, return_dict=True)
        support, queries = support_encoded.pooler_output, query_encoded.pooler_output
        shot_mask = support_mask.any(dim=-1)
        feature_scores = None
        if self.config.use_feature_attention:
            feature_scores = self.feature_attention(support_encoded.max_pooled_output, shot_mask)
        instance_attentions = None
        if self.config.use_instance_attention:
            prototypes, instance_attentions = self.instance_attention(support, queries, shot_mask)
        else:
            prototypes = mean_prototypes(support, shot_mask)
        logits = squared_distance_logits(prototypes, queries, feature_scores)
        loss = token_cross_entropy(logits, labels) if labels is not None else None
        maps = (query_encoded.word_attentions, support_encoded.word_attentions, instance_attentions)
        output = HapnFewShotOutput(
            loss=loss,
            logits=logits,
            word_attentions=query_encoded.word_attentions,
            support_word_attentions=support_encoded.word_attentions,
            instance_attentions=instance_attentions,
            feature_scores=feature_scores,
            prototypes=prototypes,
            hidden_states=(support_encoded.last_hidden_state, query_encoded.last_hidden_state, support, queries)
            if output_hidden_states
            else None,
            attentions=tuple(m for m in maps if m is not None) or None if output_attentions else None,
        )
        return output if return_dict else output.to_tuple()


__all__ = ["HapnForFewShotClassification", "HapnModel", "HapnPreTrainedModel"]
