"""Proto-HATT: Hybrid Attention-Based Prototypical Networks for Noisy Few-Shot Relation Classification.

Tianyu Gao, Xu Han, Zhiyuan Liu, Maosong Sun. AAAI 2019. Original code: https://github.com/thunlp/HATT-Proto
(`models/proto_hatt.py`, `fewshot_re_kit/sentence_encoder.py`, `fewshot_re_kit/network/`).

A prototypical network (Snell et al. 2017) over a CNN instance encoder, with two attentions that make it robust to
noisy support sets:
1. instance encoder (§3.1): word + two position embeddings, a convolution of window m, ReLU, max-pooling;
2. instance-level attention (§3.2, eq. 6–8): query-specific prototypes c_i = Σ_j α_j x_i^j, α_j = softmax_j(e_j),
   e_j = sum(tanh(g(x_i^j) ⊙ g(x))), g one linear layer shared by support and query;
3. feature-level attention (§3.3, eq. 9–10): convolutions over the K shots of each class give a score z_i per
   feature, and d(s1, s2) = z_i · (s1 − s2)²;
4. logits = −d(c_i, q), softmax over the N classes (eq. 2).
The plain prototypical network (the paper's baseline, "Proto") is a head of its own on the same encoder.

What differs from the original code (a converted checkpoint sets `mask_padding=False` and reproduces its outputs):
- Masks: with `mask_padding=True` (the default), padded positions are zero before the convolution and excluded from
  max-pooling, so an instance encodes as if alone, and an empty support instance takes no part in the instance
  attention; the original embeds every position up to `max_sentence_length` (padding included, with non-zero
  position embeddings) and pools over all of them.
- Episodes are tensors `(B, N, K, T)` / `(B, Q, T)` (the original flattens them and passes N, K, Q), labels `(B, Q)`
  with −100 for padded queries, and a K other than `num_shots` is refused with a clear error (the original's
  feature attention silently misreads it or crashes).
- Entity positions are given as token indices `(…, 2)`; position ids are computed from them, as the original's
  data loader does (id = j − e + L, clamped).

Shape legend: B episodes, N ways, K shots, Q queries per episode, T tokens, E = d_w + 2 d_p, D hidden size.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from torch import nn
from transformers import PreTrainedModel
from transformers import initialization as init
from transformers.utils import ModelOutput

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

from .configuration_proto_hatt import ProtoHattConfig


@dataclass
class ProtoHattModelOutput(ModelOutput):
    """
    Args:
        last_hidden_state (`torch.FloatTensor` of shape `(..., T, D)`): the convolution's states h_t (zero at
            padding when masked).
        pooler_output (`torch.FloatTensor` of shape `(..., D)`): the instance encodings, max-pooled over tokens.
        hidden_states (`tuple(torch.FloatTensor)`, *optional*): `(embeddings (..., T, E), h (..., T, D))`.
    """

    last_hidden_state: torch.FloatTensor | None = None
    pooler_output: torch.FloatTensor | None = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None


@dataclass
class ProtoHattFewShotOutput(ModelOutput):
    """
    Args:
        loss (`torch.FloatTensor` of shape `()`, *optional*): cross-entropy of the queries' labels.
        logits (`torch.FloatTensor` of shape `(B, Q, N)`): −d(c_i, q) per query and class.
        instance_attentions (`torch.FloatTensor` of shape `(B, Q, N, K)`): α of eq. 8, per query a distribution
            over each class's shots (`None` for the plain prototypical network).
        feature_scores (`torch.FloatTensor` of shape `(B, N, D)`): z_i of eq. 10, per class a weight ≥ 0 per
            feature (`None` for the plain prototypical network).
        prototypes (`torch.FloatTensor` of shape `(B, Q, N, D)` or `(B, N, D)`): c_i, query-specific with the
            instance attention.
        hidden_states (`tuple(torch.FloatTensor)`, *optional*): `(support embeddings (B, N, K, T, E), query
            embeddings (B, Q, T, E), support encodings (B, N, K, D), query encodings (B, Q, D))`.
        attentions (`tuple(torch.FloatTensor)`, *optional*): `(instance_attentions,)`, when asked.
    """

    loss: torch.FloatTensor | None = None
    logits: torch.FloatTensor | None = None
    instance_attentions: torch.FloatTensor | None = None
    feature_scores: torch.FloatTensor | None = None
    prototypes: torch.FloatTensor | None = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None
    attentions: tuple[torch.FloatTensor, ...] | None = None


class InstanceLevelAttention(nn.Module):
    """§3.2: query-specific prototypes. e_j = sum(tanh(g(x_i^j) ⊙ g(x))) (eq. 7; tanh element-wise, then summed
    over features), α = softmax over the K shots (eq. 8), c_i = Σ_j α_j x_i^j (eq. 6)."""

    def __init__(self, hidden_size: int) -> None:
        super().__init__()
        self.projection = nn.Linear(hidden_size, hidden_size)  # g (the original's `fc`)

    def forward(
        self, support: torch.Tensor, queries: torch.Tensor, shot_mask: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """support `(B, N, K, D)`, queries `(B, Q, D)`, shot mask `(B, N, K)` or `None` → prototypes `(B, Q, N, D)`
        and α `(B, Q, N, K)`."""
        support_projected = self.projection(support)[:, None]  # (B, 1, N, K, D)
        query_projected = self.projection(queries)[:, :, None, None]  # (B, Q, 1, 1, D)
        scores = torch.tanh(support_projected * query_projected).sum(dim=-1)
        weights = masked_softmax(scores, None if shot_mask is None else shot_mask[:, None], dim=-1)
        prototypes = (weights[..., None] * support[:, None]).sum(dim=3)
        return prototypes, weights


class FeatureLevelAttention(nn.Module):
    """§3.3: per class, convolutions over its K support encodings (kernels (K, 1): every feature column read with
    the same filters) give z_i ∈ R^D (eq. 10). As the original: Conv → ReLU for each hidden layer (padding K // 2),
    dropout, a last convolution of kernel and stride (K, 1), and a ReLU on the score (z ≥ 0: a feature whose score
    is 0 leaves the distance)."""

    def __init__(self, config: ProtoHattConfig) -> None:
        super().__init__()
        shots = config.num_shots
        channels = [1, *config.feature_attention_channels]
        if shots % 2 == 0 and len(channels) - 1 >= shots:
            raise ValueError(
                f"num_shots = {shots} with {len(channels) - 1} feature-attention convolutions: for an even K each "
                "convolution (kernel K, padding K // 2) lengthens the shot axis by one, and the last one (kernel K, "
                "stride K) must reduce it to a single row, which needs fewer convolutions than K. The original "
                "crashes at K = 2 the same way; use an odd K or fewer feature_attention_channels."
            )
        self.convolutions = nn.ModuleList(
            nn.Conv2d(inputs, outputs, (shots, 1), padding=(shots // 2, 0))
            for inputs, outputs in itertools.pairwise(channels)
        )
        self.dropout = nn.Dropout(config.feature_attention_dropout_prob)
        self.output = nn.Conv2d(channels[-1], 1, (shots, 1), stride=(shots, 1))

    def forward(self, support: torch.Tensor) -> torch.Tensor:
        """`(B, N, K, D)` → z `(B, N, D)`."""
        batch, ways, shots, size = support.shape
        features = support.reshape(batch * ways, 1, shots, size)
        for convolution in self.convolutions:
            features = torch.relu(convolution(features))
        features = self.output(self.dropout(features))  # (B·N, 1, 1, D): one row, by the config's check
        return torch.relu(features).view(batch, ways, size)


class ProtoHattPreTrainedModel(SafetensorsLoadingMixin, PreTrainedModel):
    config_class = ProtoHattConfig
    base_model_prefix = "proto_hatt"
    supports_gradient_checkpointing = True  # per layer or level: its GradientCheckpointingLayer modules
    main_input_name = "input_ids"
    accepts_loss_kwargs = False  # the loss is a mean over the batch's queries
    _no_split_modules: ClassVar[list[str]] = []

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        """As the original: PyTorch's defaults for the convolutions, the linear layer and the position
        embeddings (N(0, 1), padding row 0). Word embeddings N(0, 1/d_w), the scale of the original's L2-normalised
        GloVe rows and of its UNK row (`--word_vectors` loads GloVe itself); the padding row (BLANK) is zero.

        Deviation: the feature attention's last bias starts at 1, so that the scores z start positive. With
        PyTorch's default it can start below 0 for every feature (the fixture's README saw it), and then the ReLU
        zeroes every distance and passes no gradient: the model cannot start learning."""
        if isinstance(module, nn.Linear | nn.Conv1d | nn.Conv2d):
            init.kaiming_uniform_(module.weight, a=math.sqrt(5))
            fan_in = module.weight[0].numel()
            init.uniform_(module.bias, -1 / math.sqrt(fan_in), 1 / math.sqrt(fan_in))
            if module is getattr(getattr(self, "feature_attention", None), "output", None):
                init.ones_(module.bias)  # see above
        elif isinstance(module, nn.Embedding):
            words = module is self.get_input_embeddings()
            init.normal_(module.weight, std=1 / math.sqrt(module.embedding_dim) if words else 1.0)
            if module.padding_idx is not None and not getattr(module.weight, "_is_hf_initialized", False):
                init.zeros_(module.weight[module.padding_idx])


class ProtoHattModel(ProtoHattPreTrainedModel):
    """The instance encoder (§3.1): `(…, T)` token ids → h `(…, T, D)` and the max-pooled encoding `(…, D)`."""

    # A dotted path: SafetensorsLoadingMixin's get/set_input_embeddings follow it.
    _input_embed_layer = "encoder.word_embeddings"

    def __init__(self, config: ProtoHattConfig) -> None:
        super().__init__(config)
        self.encoder = ConvolutionalInstanceEncoder(
            config.vocab_size,
            config.word_embedding_size,
            config.hidden_size,
            config.kernel_size,
            config.pad_token_id,
            position_embedding_size=config.position_embedding_size if config.use_entity_positions else 0,
            max_distance=config.max_sentence_length,
            mask_padding=config.mask_padding,
        )
        self.post_init()

    def forward(
        self,
        input_ids: torch.LongTensor,
        attention_mask: torch.Tensor | None = None,
        entity_positions: torch.LongTensor | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        **kwargs: Any,
    ) -> ProtoHattModelOutput | tuple:
        r"""
        Args:
            input_ids (`torch.LongTensor` of shape `(..., T)`): token ids of any number of instances, right-padded.
            attention_mask (`torch.Tensor` of shape `(..., T)`, *optional*): 1 for tokens, 0 for padding.
            entity_positions (`torch.LongTensor` of shape `(..., 2)`, *optional*): each instance's head and tail
                entity token indices (required with `use_entity_positions`).
        """
        _, output_hidden_states, return_dict = output_flags(self.config, None, output_hidden_states, return_dict)
        _, embedded, states = self.encoder(input_ids, attention_mask, entity_positions)
        pooled = states.max(dim=-2).values  # states ≥ 0 and zero at masked padding: the max over real tokens
        output = ProtoHattModelOutput(
            last_hidden_state=states,
            pooler_output=pooled,
            hidden_states=(embedded, states) if output_hidden_states else None,
        )
        return output if return_dict else output.to_tuple()


class ProtoHattForFewShotClassification(FewShotPredictionMixin, ProtoHattPreTrainedModel):
    """Proto-HATT (§3): the hybrid attention prototypical network, scoring each query against the N classes of its
    episode. `labels (B, Q)`: the index of each query's class among the episode's N (−100: a padded query)."""

    supports_ragged_shots = False  # the feature attention's kernels span exactly num_shots shots

    def __init__(self, config: ProtoHattConfig) -> None:
        super().__init__(config)
        self.proto_hatt = ProtoHattModel(config)
        self.instance_attention = InstanceLevelAttention(config.hidden_size)
        self.feature_attention = FeatureLevelAttention(config)
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
    ) -> ProtoHattFewShotOutput | tuple:
        r"""
        Args:
            input_ids (`torch.LongTensor` of shape `(B, Q, T)`): the queries' token ids, right-padded (a query of
                all padding is a padded query slot).
            support_input_ids (`torch.LongTensor` of shape `(B, N, K, T)`): the support set, K = `num_shots`.
            attention_mask / support_attention_mask (*optional*): 1 for tokens, 0 for padding.
            entity_positions / support_entity_positions (`torch.LongTensor` of shape `(B, Q, 2)` / `(B, N, K,
                2)`, *optional*): head and tail entity token indices (with `use_entity_positions`).
            labels (`torch.LongTensor` of shape `(B, Q)`, *optional*): class index in [0, N), −100 to ignore.
        """
        output_attentions, output_hidden_states, return_dict = output_flags(
            self.config, output_attentions, output_hidden_states, return_dict
        )
        _check_shots(support_input_ids, self.config.num_shots)
        encoded = _encode_episode(
            self.proto_hatt, self.config, input_ids, support_input_ids, attention_mask, support_attention_mask,
            entity_positions, support_entity_positions,
        )  # fmt: skip
        support, queries, shot_mask = encoded["support"], encoded["queries"], encoded["shot_mask"]
        prototypes, instance_attentions = self.instance_attention(
            support, queries, shot_mask if self.config.mask_padding else None
        )
        feature_scores = self.feature_attention(support)
        logits = squared_distance_logits(prototypes, queries, feature_scores)
        loss = token_cross_entropy(logits, labels) if labels is not None else None
        output = ProtoHattFewShotOutput(
            loss=loss,
            logits=logits,
            instance_attentions=instance_attentions,
            feature_scores=feature_scores,
            prototypes=prototypes,
            hidden_states=encoded["hidden_states"] if output_hidden_states else None,
            attentions=(instance_attentions,) if output_attentions else None,
        )
        return output if return_dict else output.to_tuple()


class ProtoHattProtoNetForFewShotClassification(FewShotPredictionMixin, ProtoHattPreTrainedModel):
    """The plain prototypical network (Snell et al. 2017; the paper's "Proto" baseline) on the same CNN encoder:
    c_i = the mean of class i's support encodings, logits = −‖c_i − q‖². Any N and K."""

    def __init__(self, config: ProtoHattConfig) -> None:
        super().__init__(config)
        self.proto_hatt = ProtoHattModel(config)
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
    ) -> ProtoHattFewShotOutput | tuple:
        r"""Arguments as [`ProtoHattForFewShotClassification`], with any K."""
        _, output_hidden_states, return_dict = output_flags(self.config, None, output_hidden_states, return_dict)
        encoded = _encode_episode(
            self.proto_hatt, self.config, input_ids, support_input_ids, attention_mask, support_attention_mask,
            entity_positions, support_entity_positions,
        )  # fmt: skip
        shot_mask = encoded["shot_mask"] if self.config.mask_padding else torch.ones_like(encoded["shot_mask"])
        prototypes = mean_prototypes(encoded["support"], shot_mask)
        logits = squared_distance_logits(prototypes, encoded["queries"])
        loss = token_cross_entropy(logits, labels) if labels is not None else None
        output = ProtoHattFewShotOutput(
            loss=loss,
            logits=logits,
            prototypes=prototypes,
            hidden_states=encoded["hidden_states"] if output_hidden_states else None,
        )
        return output if return_dict else output.to_tuple()


def _check_shots(support_input_ids: torch.Tensor, num_shots: int) -> None:
    if support_input_ids.dim() == 4 and support_input_ids.size(2) != num_shots:
        raise ValueError(
            f"`support_input_ids` has K = {support_input_ids.size(2)} shots per class, but this model's feature "
            f"attention is tied to K = {num_shots} (num_shots): its convolutions span exactly the K shots."
        )


def _encode_episode(
    encoder: ProtoHattModel,
    config: ProtoHattConfig,
    input_ids: torch.Tensor,
    support_input_ids: torch.Tensor,
    attention_mask: torch.Tensor | None,
    support_attention_mask: torch.Tensor | None,
    entity_positions: torch.Tensor | None,
    support_entity_positions: torch.Tensor | None,
) -> dict[str, Any]:
    """Checks an episode batch and encodes its support instances and queries, one encoder call each (so the hidden
    states returned are the tensors the outputs are computed from). Returns the support encodings `(B, N, K, D)`,
    the query encodings `(B, Q, D)`, the shot mask `(B, N, K)` (a support instance with a token) and the hidden
    states."""
    query_mask, support_mask = check_episode_inputs(
        input_ids, attention_mask, support_input_ids, support_attention_mask, config.vocab_size,
        entity_positions, support_entity_positions, config.use_entity_positions,
    )  # fmt: skip
    positions = config.use_entity_positions
    support = encoder(
        support_input_ids, support_mask.long(), support_entity_positions if positions else None,
        output_hidden_states=True, return_dict=True,
    )  # fmt: skip
    queries = encoder(
        input_ids, query_mask.long(), entity_positions if positions else None,
        output_hidden_states=True, return_dict=True,
    )  # fmt: skip
    return {
        "support": support.pooler_output,  # (B, N, K, D)
        "queries": queries.pooler_output,  # (B, Q, D)
        "shot_mask": support_mask.any(dim=-1),
        "hidden_states": (
            support.hidden_states[0],  # support embeddings (B, N, K, T, E)
            queries.hidden_states[0],  # query embeddings (B, Q, T, E)
            support.pooler_output,
            queries.pooler_output,
        ),
    }


__all__ = [
    "ProtoHattForFewShotClassification",
    "ProtoHattModel",
    "ProtoHattPreTrainedModel",
    "ProtoHattProtoNetForFewShotClassification",
]
