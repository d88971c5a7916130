"""The Transformer.

Ashish Vaswani, Noam Shazeer, Niki Parmar, Jakob Uszkoreit, Llion Jones, Aidan N. Gomez, Łukasz Kaiser,
Illia Polosukhin. *Attention Is All You Need*. NeurIPS 2017. arXiv:1706.03762.
Original code: https://github.com/tensorflow/tensor2tensor

An encoder-decoder built from multi-head scaled dot-product attention (eq. 1, §3.2.2) and position-wise
feed-forward networks (eq. 2), each sub-layer wrapped as LayerNorm(x + Dropout(Sublayer(x))) (§3.1, §5.4), with
sinusoidal positions (§3.5) added to embeddings scaled by √d_model and shared between source, target and the
pre-softmax projection (§3.4).

What differs from the paper / the original code:
- Beam search uses transformers' length penalty (score / length^α); the paper (after GNMT) divides by
  ((5 + length) / 6)^α. Set `length_penalty=0.6, num_beams=4` for the paper's setting.
- Switches load other implementations' checkpoints: pre-LN with final LayerNorms, [sin | cos] positions with the
  tensor2tensor timescale and fairseq's offset, separate source/target embeddings, an output bias (Marian).
- Attention runs through transformers' attention interface (SDPA by default); the maps are computed eagerly when
  `output_attentions=True`. A row that would mask every key attends to the first key alone (its queries are
  padding and ignored), so an all-padding example never produces NaN and its output does not depend on the
  padding width. Sources must be right-padded: positions count from the first token.

Shape legend: B batch, S source tokens, T target tokens, D d_model, H heads, K = D / H, F d_ff, V vocabulary.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

import torch
from torch import nn
from transformers import EncoderDecoderCache, GenerationMixin, PreTrainedModel
from transformers import initialization as init
from transformers.activations import ACT2FN
from transformers.cache_utils import Cache, DynamicCache
from transformers.modeling_layers import GradientCheckpointingLayer
from transformers.modeling_outputs import (
    BaseModelOutput,
    BaseModelOutputWithPastAndCrossAttentions,
    Seq2SeqLMOutput,
    Seq2SeqModelOutput,
)
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

from hf_attn.layers.generation_cache import cache_argument, cache_field, output_cache
from hf_attn.layers.losses import fused_linear_cross_entropy, token_cross_entropy
from hf_attn.layers.outputs import output_flags
from hf_attn.layers.positions import sinusoidal_positions
from hf_attn.layers.sequences import shift_tokens_right
from hf_attn.layers.validation import embed_inputs
from hf_attn.utils.loading import SafetensorsLoadingMixin

from .configuration_vaswani_transformer import VaswaniTransformerConfig

# ---------------------------------------------------------------------------------------------------------------
# Building blocks
# ---------------------------------------------------------------------------------------------------------------


def key_padding_mask(mask: torch.Tensor | None) -> torch.Tensor | None:
    """`(B, S)` 1/0 → `(B, 1, 1, S)` boolean (True = may be attended), or `None` without a mask. A row
    without any real key attends to its first key alone: its queries are padding themselves, an empty row would be
    NaN, and one fixed key keeps its output independent of how far it is padded."""
    if mask is None:
        return None
    mask = mask.to(torch.bool).clone()
    mask[:, 0] |= ~mask.any(dim=-1)
    return mask[:, None, None, :]


def causal_mask(
    query_length: int,
    past_length: int | torch.Tensor,
    padding: torch.Tensor | None,
    device: torch.device,
    capacity: int | None = None,
) -> torch.Tensor | None:
    """Decoder self-attention mask `(B|1, 1, T, past + T)`: position t sees keys ≤ past + t (eq. 1's masking,
    §3.2.3), and no padded key. `None` when plain causal masking from the first position suffices.

    With a static cache of `capacity` slots the keys are all the slots, `(B|1, 1, T, capacity)`, and `past_length`
    is a 0-d device tensor (no host read: one graph for every step): the unwritten slots lie past past + t and are
    never seen, and `padding` (B, ≤ capacity) is read as zeros past its end. A row left without a key (a padding
    query) sees every key of a dynamic cache, and a static cache's first slot (never an unwritten one): not NaN."""
    if capacity is None and padding is None and (past_length == 0 or query_length == 1):
        return None  # SDPA applies is_causal for T > 1 without past; a single query sees everything
    keys = torch.arange(past_length + query_length if capacity is None else capacity, device=device)
    queries = past_length + torch.arange(query_length, device=device)
    mask = (keys[None, :] <= queries[:, None])[None, None]  # (1, 1, T, keys)
    if padding is not None:
        padding = padding.to(torch.bool)
        if capacity is not None:
            padding = nn.functional.pad(padding, (0, capacity - padding.size(-1)))
        mask = mask & padding[:, None, None, :]
        fallback = (keys == 0) if capacity is not None else torch.ones_like(keys, dtype=torch.bool)
        mask = mask | fallback & ~mask.any(dim=-1, keepdim=True)
    return mask


def eager_attention_forward(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float,
    dropout: float = 0.0,
    **kwargs,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention(Q, K, V) = softmax(Q Kᵀ / √d_k) V (eq. 1), materialising the weights `(B, H, T, S)`."""
    weights = torch.matmul(query, key.transpose(2, 3)) * scaling
    if attention_mask is not None:
        weights = weights.masked_fill(~attention_mask, torch.finfo(weights.dtype).min)
    elif module.is_causal and query.size(2) > 1:
        causal = torch.ones(query.size(2), key.size(2), dtype=torch.bool, device=query.device).tril(
            key.size(2) - query.size(2)
        )
        weights = weights.masked_fill(~causal, torch.finfo(weights.dtype).min)
    weights = nn.functional.softmax(weights, dim=-1, dtype=torch.float32).to(query.dtype)
    weights = nn.functional.dropout(weights, p=dropout, training=module.training)
    output = torch.matmul(weights, value).transpose(1, 2).contiguous()  # (B, T, H, K)
    return output, weights


class VaswaniAttention(nn.Module):
    """MultiHead(Q, K, V) = Concat(head_1, …, head_h) W^O, head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V) (§3.2.2).

    Self-attention when `key_value_states` is None, encoder-decoder attention otherwise (§3.2.3). With a cache, the
    decoder's self-attention keys/values grow by one step per token, and cross-attention keys/values are computed
    once from the encoder output and reused.
    """

    def __init__(
        self, config: VaswaniTransformerConfig, num_heads: int, is_causal: bool = False, layer_idx: int | None = None
    ) -> None:
        super().__init__()
        self.config = config
        self.num_heads = num_heads
        self.head_dim = config.d_model // num_heads
        self.scaling = self.head_dim**-0.5
        self.is_causal = is_causal
        self.layer_idx = layer_idx
        self.dropout = config.attention_dropout
        bias = config.attention_bias
        self.q_proj = nn.Linear(config.d_model, config.d_model, bias=bias)
        self.k_proj = nn.Linear(config.d_model, config.d_model, bias=bias)
        self.v_proj = nn.Linear(config.d_model, config.d_model, bias=bias)
        self.out_proj = nn.Linear(config.d_model, config.d_model, bias=bias)

    def _heads(self, states: torch.Tensor) -> torch.Tensor:
        return states.view(*states.shape[:-1], self.num_heads, self.head_dim).transpose(1, 2)  # (B, H, L, K)

    def forward(
        self,
        hidden_states: torch.Tensor,
        key_value_states: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        past_key_values: Cache | None = None,
        output_attentions: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        is_cross = key_value_states is not None
        query = self._heads(self.q_proj(hidden_states))
        cache = None
        if past_key_values is not None:
            cache = past_key_values.cross_attention_cache if is_cross else past_key_values.self_attention_cache
        if is_cross and cache is not None and past_key_values.is_updated.get(self.layer_idx):
            key, value = cache.layers[self.layer_idx].keys, cache.layers[self.layer_idx].values
        else:
            source = key_value_states if is_cross else hidden_states
            key, value = self._heads(self.k_proj(source)), self._heads(self.v_proj(source))
            if cache is not None:
                key, value = cache.update(key, value, self.layer_idx)
                if is_cross:
                    past_key_values.is_updated[self.layer_idx] = True

        implementation = self.config._attn_implementation or "eager"
        attention: Callable = eager_attention_forward
        if not output_attentions and implementation != "eager":
            attention = ALL_ATTENTION_FUNCTIONS.get_interface(implementation, eager_attention_forward)
        output, weights = attention(
            self,
            query,
            key,
            value,
            attention_mask,
            scaling=self.scaling,
            dropout=self.dropout if self.training else 0.0,
            is_causal=self.is_causal and attention_mask is None and query.size(2) > 1,
        )
        output = self.out_proj(output.reshape(*hidden_states.shape[:-1], -1))
        return output, (weights if output_attentions else None)


class VaswaniFeedForward(nn.Module):
    """FFN(x) = max(0, x W_1 + b_1) W_2 + b_2 (eq. 2), applied to each position separately."""

    def __init__(self, config: VaswaniTransformerConfig, inner_size: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(config.d_model, inner_size, bias=config.ffn_bias)
        self.fc2 = nn.Linear(inner_size, config.d_model, bias=config.ffn_bias)
        self.activation = ACT2FN[config.activation_function]
        self.activation_dropout = nn.Dropout(config.activation_dropout)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.activation_dropout(self.activation(self.fc1(hidden_states))))


class VaswaniSublayer(nn.Module):
    """The residual wrapper of §3.1 / §5.4: post-LN `LayerNorm(x + Dropout(Sublayer(x)))` (paper) or pre-LN
    `x + Dropout(Sublayer(LayerNorm(x)))`."""

    def __init__(self, config: VaswaniTransformerConfig) -> None:
        super().__init__()
        self.layer_norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.dropout)
        self.normalize_before = config.normalize_before

    def forward(self, hidden_states: torch.Tensor, sublayer: Callable) -> tuple[torch.Tensor, ...]:
        inputs = self.layer_norm(hidden_states) if self.normalize_before else hidden_states
        output, *extra = sublayer(inputs)
        hidden_states = hidden_states + self.dropout(output)
        if not self.normalize_before:
            hidden_states = self.layer_norm(hidden_states)
        return (hidden_states, *extra)


class VaswaniEncoderLayer(GradientCheckpointingLayer):
    """Multi-head self-attention, then the feed-forward network, each in a residual sub-layer (§3.1)."""

    def __init__(self, config: VaswaniTransformerConfig) -> None:
        super().__init__()
        self.self_attn = VaswaniAttention(config, config.encoder_attention_heads)
        self.self_attn_sublayer = VaswaniSublayer(config)
        self.ffn = VaswaniFeedForward(config, config.encoder_ffn_dim)
        self.ffn_sublayer = VaswaniSublayer(config)

    def forward(
        self, hidden_states: torch.Tensor, attention_mask: torch.Tensor | None, output_attentions: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        hidden_states, weights = self.self_attn_sublayer(
            hidden_states,
            lambda x: self.self_attn(x, attention_mask=attention_mask, output_attentions=output_attentions),
        )
        (hidden_states,) = self.ffn_sublayer(hidden_states, lambda x: (self.ffn(x),))
        return hidden_states, weights


class VaswaniDecoderLayer(GradientCheckpointingLayer):
    """Masked self-attention, encoder-decoder attention, then the feed-forward network (§3.1)."""

    def __init__(self, config: VaswaniTransformerConfig, layer_idx: int) -> None:
        super().__init__()
        self.self_attn = VaswaniAttention(config, config.decoder_attention_heads, is_causal=True, layer_idx=layer_idx)
        self.self_attn_sublayer = VaswaniSublayer(config)
        self.encoder_attn = VaswaniAttention(config, config.decoder_attention_heads, layer_idx=layer_idx)
        self.encoder_attn_sublayer = VaswaniSublayer(config)
        self.ffn = VaswaniFeedForward(config, config.decoder_ffn_dim)
        self.ffn_sublayer = VaswaniSublayer(config)

    def forward(
        self,
        hidden_states: torch.Tensor,
        attention_mask: torch.Tensor | None,
        encoder_hidden_states: torch.Tensor,
        encoder_attention_mask: torch.Tensor | None,
        past_key_values: Cache | None = None,
        output_attentions: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        hidden_states, self_weights = self.self_attn_sublayer(
            hidden_states,
            lambda x: self.self_attn(
                x, attention_mask=attention_mask, past_key_values=past_key_values, output_attentions=output_attentions
            ),
        )
        hidden_states, cross_weights = self.encoder_attn_sublayer(
            hidden_states,
            lambda x: self.encoder_attn(
                x,
                key_value_states=encoder_hidden_states,
                attention_mask=encoder_attention_mask,
                past_key_values=past_key_values,
                output_attentions=output_attentions,
            ),
        )
        (hidden_states,) = self.ffn_sublayer(hidden_states, lambda x: (self.ffn(x),))
        return hidden_states, self_weights, cross_weights


class VaswaniEmbedding(nn.Module):
    """Token embedding · √d_model (§3.4) + sinusoidal position encoding (§3.5), then dropout (§5.4).

    The token table belongs to the model (shared between encoder, decoder and output projection, §3.4), so it is
    passed in and held by reference, not registered here."""

    def __init__(self, config: VaswaniTransformerConfig, embed_tokens: nn.Embedding) -> None:
        super().__init__()
        object.__setattr__(self, "embed_tokens", embed_tokens)  # not a submodule: owned by the model
        self.scale = config.d_model**0.5 if config.scale_embedding else 1.0
        self.dropout = nn.Dropout(config.dropout)
        self.config = config
        self._table: torch.Tensor | None = None

    def positions(
        self, length: int, past_length: int | torch.Tensor, device: torch.device, dtype: torch.dtype
    ) -> torch.Tensor:
        config = self.config
        if isinstance(past_length, torch.Tensor):  # a static cache's count, on the device: read nothing
            index = config.position_offset + past_length + torch.arange(length, device=device)  # (L,)
            layout, timescale = config.sinusoid_layout, config.sinusoid_timescale
            if torch.compiler.is_compiling():  # the L rows the step needs, in the graph
                return sinusoidal_positions(0, config.d_model, layout, timescale, positions=index).to(dtype)
            size = config.max_position_embeddings + config.position_offset
            if self._table is None or self._table.size(0) < size or self._table.device != device:
                self._table = sinusoidal_positions(size, config.d_model, layout, timescale).to(device)
            return self._table.index_select(0, index).to(dtype)  # (L, D)
        needed = self.config.position_offset + past_length + length
        if torch.compiler.is_compiling():  # in the graph: a table cached on the module is state, and a recompile
            table = sinusoidal_positions(
                needed, config.d_model, config.sinusoid_layout, config.sinusoid_timescale, device
            )
            return table[needed - length :].to(dtype)  # (L, D)
        if self._table is None or self._table.size(0) < needed or self._table.device != device:
            size = max(needed, self.config.max_position_embeddings + self.config.position_offset)
            table = sinusoidal_positions(
                size, self.config.d_model, self.config.sinusoid_layout, self.config.sinusoid_timescale
            )
            self._table = table.to(device)
        start = self.config.position_offset + past_length
        return self._table[start : start + length].to(dtype)  # (L, D)

    def forward(self, tokens: torch.Tensor, past_length: int | torch.Tensor = 0) -> torch.Tensor:
        """`tokens`: ids `(B, L)`, or their rows of the token table `(B, L, D)` (`inputs_embeds`)."""
        embeddings = (self.embed_tokens(tokens) if not tokens.is_floating_point() else tokens) * self.scale
        embeddings = embeddings + self.positions(tokens.size(1), past_length, embeddings.device, embeddings.dtype)
        return self.dropout(embeddings)


# ---------------------------------------------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------------------------------------------


class VaswaniTransformerPreTrainedModel(SafetensorsLoadingMixin, PreTrainedModel):
    config_class = VaswaniTransformerConfig
    base_model_prefix = "model"
    supports_gradient_checkpointing = True  # per layer or level: its GradientCheckpointingLayer modules
    _no_split_modules: ClassVar[list[str]] = ["VaswaniEncoderLayer", "VaswaniDecoderLayer"]
    _supports_sdpa = True
    _supports_flash_attn = False

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        """tensor2tensor's scheme: projections Xavier-uniform with zero biases, embeddings N(0, d_model^-0.5) with a
        zero padding row, LayerNorms (1, 0)."""
        if isinstance(module, nn.Linear):
            init.xavier_uniform_(module.weight)
            if module.bias is not None:
                init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            init.normal_(module.weight, mean=0.0, std=self.config.d_model**-0.5)
            if module.padding_idx is not None and not getattr(module.weight, "_is_hf_initialized", False):
                init.zeros_(module.weight[module.padding_idx])
        elif isinstance(module, nn.LayerNorm):
            init.ones_(module.weight)
            init.zeros_(module.bias)
        elif isinstance(module, VaswaniTransformerForConditionalGeneration) and module.output_bias is not None:
            init.zeros_(module.output_bias)


class VaswaniTransformerEncoder(VaswaniTransformerPreTrainedModel):
    """The encoder stack (§3.1): N layers over the embedded source."""

    def __init__(self, config: VaswaniTransformerConfig, embed_tokens: nn.Embedding) -> None:
        super().__init__(config)
        self.embeddings = VaswaniEmbedding(config, embed_tokens)
        self.layers = nn.ModuleList(VaswaniEncoderLayer(config) for _ in range(config.encoder_layers))
        self.layer_norm = (
            nn.LayerNorm(config.d_model, eps=config.layer_norm_eps) if config.encoder_final_layer_norm else None
        )
        self.post_init()

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        inputs_embeds: torch.FloatTensor | None = None,
        **kwargs,
    ) -> BaseModelOutput:
        output_attentions, output_hidden_states, return_dict = output_flags(
            self.config, output_attentions, output_hidden_states, return_dict
        )
        tokens, mask = embed_inputs(
            self.embeddings.embed_tokens, input_ids, inputs_embeds, attention_mask,
            right_padded=True,
        )  # fmt: skip
        hidden_states = self.embeddings(tokens)  # (B, S, D)
        self_mask = key_padding_mask(None if attention_mask is None else mask)  # no mask: SDPA's fastest kernels
        all_states, all_weights = [], []
        for layer in self.layers:
            all_states.append(hidden_states)
            hidden_states, weights = layer(hidden_states, self_mask, output_attentions)
            all_weights.append(weights)
        if self.layer_norm is not None:
            hidden_states = self.layer_norm(hidden_states)
        output = BaseModelOutput(
            last_hidden_state=hidden_states,
            hidden_states=(*all_states, hidden_states) if output_hidden_states else None,
            attentions=tuple(all_weights) if output_attentions else None,
        )
        return output if return_dict else output.to_tuple()


def static_capacity(cache: Cache | None) -> int | None:
    """The slots of the decoder's self-attention cache when it is a static one (fixed-size buffers, the tokens
    written counted on the device), else `None`."""
    self_attention = getattr(cache, "self_attention_cache", cache)
    if self_attention is None or not getattr(self_attention, "is_compileable", False):
        return None
    return self_attention.layers[0].max_cache_len


class VaswaniTransformerDecoder(VaswaniTransformerPreTrainedModel):
    """The decoder stack (§3.1): N layers of masked self-attention, encoder-decoder attention and feed-forward."""

    def __init__(self, config: VaswaniTransformerConfig, embed_tokens: nn.Embedding) -> None:
        super().__init__(config)
        self.embeddings = VaswaniEmbedding(config, embed_tokens)
        self.layers = nn.ModuleList(VaswaniDecoderLayer(config, index) for index in range(config.decoder_layers))
        self.layer_norm = (
            nn.LayerNorm(config.d_model, eps=config.layer_norm_eps) if config.decoder_final_layer_norm else None
        )
        self.post_init()

    def forward(
        self,
        input_ids: torch.LongTensor | None,
        encoder_hidden_states: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        encoder_attention_mask: torch.Tensor | None = None,
        past_key_values: Cache | None = None,
        use_cache: bool | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        cache: Cache | None = None,
        inputs_embeds: torch.FloatTensor | None = None,
        **kwargs,
    ) -> BaseModelOutputWithPastAndCrossAttentions:
        output_attentions, output_hidden_states, return_dict = output_flags(
            self.config, output_attentions, output_hidden_states, return_dict
        )
        past_key_values = cache_argument(past_key_values, cache)  # transformers ≥ 5.24 names it `cache`
        tokens, _ = embed_inputs(
            self.embeddings.embed_tokens, input_ids, inputs_embeds, None,
            name="decoder_input_ids",
        )  # fmt: skip
        use_cache = self.config.use_cache if use_cache is None else use_cache
        if self.training and any(layer.gradient_checkpointing for layer in self.layers):
            use_cache = False  # a checkpointed layer runs twice: it must not write a cache
        if use_cache and past_key_values is None:
            past_key_values = EncoderDecoderCache(DynamicCache(), DynamicCache())
        past_length = past_key_values.get_seq_length() if past_key_values is not None else 0
        # A static cache (`generate(cache_implementation="static")`): keys and values live in fixed buffers of
        # `capacity` slots, and the tokens written so far are counted on the device.
        capacity = static_capacity(past_key_values)
        if capacity is not None:
            past_length = torch.as_tensor(past_length, device=tokens.device)
        batch_size = tokens.size(0)
        if capacity is not None:
            if attention_mask is not None and (attention_mask.dim() != 2 or attention_mask.size(1) > capacity):
                raise ValueError(
                    f"`decoder_attention_mask` must have shape (batch, ≤ {capacity}) with a static cache of "
                    f"{capacity} tokens, got {tuple(attention_mask.shape)}."
                )
        elif attention_mask is not None and tuple(attention_mask.shape) != (batch_size, past_length + tokens.size(1)):
            total = past_length + tokens.size(1)
            raise ValueError(
                f"`decoder_attention_mask` must have shape (batch, cached + new target tokens) = {(batch_size, total)}"
                f", got {tuple(attention_mask.shape)}."
            )
        if encoder_hidden_states.size(0) != batch_size:
            raise ValueError(
                f"`decoder_input_ids` must have the batch size of the source: got {batch_size} and "
                f"{encoder_hidden_states.size(0)}."
            )
        hidden_states = self.embeddings(tokens, past_length)  # (B, T, D)
        self_mask = causal_mask(tokens.size(1), past_length, attention_mask, tokens.device, capacity)
        cross_mask = key_padding_mask(encoder_attention_mask)
        all_states, self_weights, cross_weights = [], [], []
        for layer in self.layers:
            all_states.append(hidden_states)
            hidden_states, own, cross = layer(
                hidden_states, self_mask, encoder_hidden_states, cross_mask,
                past_key_values=past_key_values, output_attentions=output_attentions,
            )  # fmt: skip
            self_weights.append(own)
            cross_weights.append(cross)
        if self.layer_norm is not None:
            hidden_states = self.layer_norm(hidden_states)
        output = BaseModelOutputWithPastAndCrossAttentions(
            last_hidden_state=hidden_states,
            **cache_field(past_key_values if use_cache else None),
            hidden_states=(*all_states, hidden_states) if output_hidden_states else None,
            attentions=tuple(self_weights) if output_attentions else None,
            cross_attentions=tuple(cross_weights) if output_attentions else None,
        )
        return output if return_dict else output.to_tuple()


class VaswaniTransformerModel(VaswaniTransformerPreTrainedModel):
    """Encoder + decoder with shared (or separate) token embeddings (§3.4); returns the decoder states."""

    # A dotted path: SafetensorsLoadingMixin's get/set_input_embeddings follow it.
    _input_embed_layer = "encoder.embeddings.embed_tokens"

    def __init__(self, config: VaswaniTransformerConfig) -> None:
        super().__init__(config)
        if config.share_encoder_decoder_embeddings:
            self.shared = nn.Embedding(config.vocab_size, config.d_model, padding_idx=config.pad_token_id)
            source_embeddings = target_embeddings = self.shared
        else:
            self.source_embeddings = nn.Embedding(config.vocab_size, config.d_model, padding_idx=config.pad_token_id)
            self.target_embeddings = nn.Embedding(config.vocab_size, config.d_model, padding_idx=config.pad_token_id)
            source_embeddings, target_embeddings = self.source_embeddings, self.target_embeddings
        self.encoder = VaswaniTransformerEncoder(config, source_embeddings)
        self.decoder = VaswaniTransformerDecoder(config, target_embeddings)
        self.post_init()

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        """The one hand-written setter of hf_attn (as in transformers' Marian and BART): a shared embedding is
        owned by the model (`shared`) and read by the encoder and decoder, which must both see the new one."""
        if self.config.share_encoder_decoder_embeddings:
            self.shared = value
            object.__setattr__(self.decoder.embeddings, "embed_tokens", value)
        else:
            self.source_embeddings = value
        object.__setattr__(self.encoder.embeddings, "embed_tokens", value)

    def get_encoder(self) -> VaswaniTransformerEncoder:
        return self.encoder

    def get_decoder(self) -> VaswaniTransformerDecoder:
        return self.decoder

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        decoder_input_ids: torch.LongTensor | None = None,
        decoder_attention_mask: torch.Tensor | None = None,
        encoder_outputs: BaseModelOutput | tuple | None = None,
        past_key_values: Cache | None = None,
        use_cache: bool | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        cache: Cache | None = None,
        inputs_embeds: torch.FloatTensor | None = None,
        decoder_inputs_embeds: torch.FloatTensor | None = None,
        **kwargs,
    ) -> Seq2SeqModelOutput:
        r"""
        Args:
            input_ids (`torch.LongTensor` of shape `(B, S)`): source token ids, right-padded.
            attention_mask (`torch.Tensor` of shape `(B, S)`, *optional*): 1 for source tokens, 0 for padding.
            decoder_input_ids (`torch.LongTensor` of shape `(B, T)`): target ids, starting with the start token.
            decoder_attention_mask (`torch.Tensor` of shape `(B, T)`, *optional*): 1 for target tokens.
            encoder_outputs (*optional*): a precomputed encoder output (generation reuses it).
            past_key_values / cache (`Cache`, *optional*): an `EncoderDecoderCache` from a previous step (`cache` is
                transformers ≥ 5.24's name).
            inputs_embeds / decoder_inputs_embeds (`torch.FloatTensor` of shape `(B, S|T, D)`, *optional*): rows of
                the token table (`get_input_embeddings()`) instead of the source / target ids; scaled by √d_model and
                given positions as the ids' rows are.
        """
        output_attentions, output_hidden_states, return_dict = output_flags(
            self.config, output_attentions, output_hidden_states, return_dict
        )
        if encoder_outputs is None:
            encoder_outputs = self.encoder(
                input_ids, attention_mask, output_attentions, output_hidden_states, True, inputs_embeds=inputs_embeds
            )
        elif not isinstance(encoder_outputs, BaseModelOutput):
            encoder_outputs = BaseModelOutput(*encoder_outputs)
        decoder_outputs = self.decoder(
            decoder_input_ids,
            encoder_outputs.last_hidden_state,
            attention_mask=decoder_attention_mask,
            encoder_attention_mask=attention_mask,
            cache=cache_argument(past_key_values, cache),
            use_cache=use_cache,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
            return_dict=True,
            inputs_embeds=decoder_inputs_embeds,
        )
        output = Seq2SeqModelOutput(
            last_hidden_state=decoder_outputs.last_hidden_state,
            **cache_field(output_cache(decoder_outputs)),
            decoder_hidden_states=decoder_outputs.hidden_states,
            decoder_attentions=decoder_outputs.attentions,
            cross_attentions=decoder_outputs.cross_attentions,
            encoder_last_hidden_state=encoder_outputs.last_hidden_state,
            encoder_hidden_states=encoder_outputs.hidden_states,
            encoder_attentions=encoder_outputs.attentions,
        )
        return output if return_dict else output.to_tuple()


class VaswaniTransformerForConditionalGeneration(VaswaniTransformerPreTrainedModel, GenerationMixin):
    """The translation model: the Transformer with the pre-softmax projection tied to the target embeddings (§3.4),
    and `generate()` (greedy, beam search, sampling) with a KV cache.

    `outputs.loss` is plain cross-entropy against `labels`, as in every transformers model. In training mode it is
    computed fused with the output projection (`config.fused_output_loss`), and `outputs.logits` is then `None`;
    evaluation and generation return the logits. The paper's label
    smoothing (ε_ls = 0.1, §5.4) is a training argument, `TrainingArguments(label_smoothing_factor=0.1)`, which
    `hf-attn train` and the recipes set from `config.label_smoothing`.

    The loss sums over target tokens and divides by their count, or by `num_items_in_batch` when `Trainer` passes
    it, so that gradient accumulation weighs every token alike.
    """

    accepts_loss_kwargs = True  # the loss divides by `num_items_in_batch` (see `forward`)

    def __init__(self, config: VaswaniTransformerConfig) -> None:
        super().__init__(config)
        self.model = VaswaniTransformerModel(config)
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        self.output_bias = nn.Parameter(torch.zeros(config.vocab_size)) if config.output_bias else None
        target = "model.shared.weight" if config.share_encoder_decoder_embeddings else "model.target_embeddings.weight"
        self._tied_weights_keys = {"lm_head.weight": target}
        self.post_init()

    def get_encoder(self) -> VaswaniTransformerEncoder:
        return self.model.encoder

    def get_decoder(self) -> VaswaniTransformerDecoder:
        return self.model.decoder

    def get_output_embeddings(self) -> nn.Linear:
        return self.lm_head

    def set_output_embeddings(self, value: nn.Linear) -> None:
        self.lm_head = value

    def create_masks_for_generate(self, *args, attention_mask: torch.Tensor | None = None, **kwargs):
        """`generate()` asks a model on a static cache for its decoder masks; the decoder makes its own from the
        cache (`causal_mask`), so the 2D padding mask (or `None`) is handed through as it is."""
        return attention_mask

    def fuses_output_loss(self) -> bool:
        """Whether a forward with labels computes its loss fused (`config.fused_output_loss`): in training mode,
        with the plain `nn.Linear` projection (a projection PEFT wrapped, say, computes its logits)."""
        return self.training and self.config.fused_output_loss and type(self.lm_head) is nn.Linear

    def prepare_decoder_input_ids_from_labels(self, labels: torch.Tensor) -> torch.Tensor:
        return shift_tokens_right(labels, self.config.pad_token_id, self.config.decoder_start_token_id)

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        decoder_input_ids: torch.LongTensor | None = None,
        decoder_attention_mask: torch.Tensor | None = None,
        encoder_outputs: BaseModelOutput | tuple | None = None,
        past_key_values: Cache | None = None,
        labels: torch.LongTensor | None = None,
        use_cache: bool | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        num_items_in_batch: int | torch.Tensor | None = None,
        cache: Cache | None = None,
        inputs_embeds: torch.FloatTensor | None = None,
        decoder_inputs_embeds: torch.FloatTensor | None = None,
        **kwargs,
    ) -> Seq2SeqLMOutput:
        r"""
        Args:
            labels (`torch.LongTensor` of shape `(B, T)`, *optional*): target ids (-100 = ignored); without
                `decoder_input_ids` they are shifted right to make them.
            num_items_in_batch (*optional*): the number of target tokens in the whole (accumulated) batch.
        """
        output_attentions, output_hidden_states, return_dict = output_flags(
            self.config, output_attentions, output_hidden_states, return_dict
        )
        if labels is not None and decoder_input_ids is None and decoder_inputs_embeds is None:
            decoder_input_ids = self.prepare_decoder_input_ids_from_labels(labels)
            use_cache = False
        outputs = self.model(
            input_ids,
            attention_mask=attention_mask,
            decoder_input_ids=decoder_input_ids,
            decoder_attention_mask=decoder_attention_mask,
            encoder_outputs=encoder_outputs,
            cache=cache_argument(past_key_values, cache),
            use_cache=use_cache,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
            return_dict=True,
            inputs_embeds=inputs_embeds,
            decoder_inputs_embeds=decoder_inputs_embeds,
        )
        loss = logits = None
        if labels is not None and self.fuses_output_loss():
            # W h and the loss together, chunk by chunk, their gradients formed now: no (B, T, V) logits at all
            loss = fused_linear_cross_entropy(
                outputs.last_hidden_state, self.lm_head.weight, self.output_bias, labels, num_items_in_batch
            )
        else:
            logits = self.lm_head(outputs.last_hidden_state)  # (B, T, V)
            if self.output_bias is not None:
                logits = logits + self.output_bias
            if labels is not None:
                loss = token_cross_entropy(logits, labels, num_items_in_batch)  # plain: ε_ls is a training argument
        output = Seq2SeqLMOutput(
            loss=loss,
            logits=logits,
            **cache_field(output_cache(outputs)),
            decoder_hidden_states=outputs.decoder_hidden_states,
            decoder_attentions=outputs.decoder_attentions,
            cross_attentions=outputs.cross_attentions,
            encoder_last_hidden_state=outputs.encoder_last_hidden_state,
            encoder_hidden_states=outputs.encoder_hidden_states,
            encoder_attentions=outputs.encoder_attentions,
        )
        return output if return_dict else output.to_tuple()


__all__ = [
    "VaswaniTransformerForConditionalGeneration",
    "VaswaniTransformerModel",
    "VaswaniTransformerPreTrainedModel",
]
