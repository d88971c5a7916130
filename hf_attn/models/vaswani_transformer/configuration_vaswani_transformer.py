"""Configuration of the Transformer of Vaswani et al., *Attention Is All You Need* (NeurIPS 2017, arXiv:1706.03762)."""

from typing import ClassVar, Literal

from huggingface_hub.dataclasses import strict
from transformers import PreTrainedConfig
from transformers.utils.type_validators import interval, positive_int_field


@strict
class VaswaniTransformerConfig(PreTrainedConfig):
    r"""
    Configuration for [`VaswaniTransformerModel`] and [`VaswaniTransformerForConditionalGeneration`]. Defaults are the
    paper's base model (Table 3); the switches at the bottom load checkpoints of other implementations (Marian,
    fairseq, tensor2tensor).

    Args:
        vocab_size (`int`, *optional*, defaults to 37000):
            Shared source/target vocabulary (§5.1: 37000 byte-pair tokens for WMT En-De).
        d_model (`int`, *optional*, defaults to 512):
            Model dimension d_model (§3, base: 512, big: 1024).
        encoder_layers / decoder_layers (`int`, *optional*, defaults to 6):
            N, the stacked layers (§3.1, paper: 6).
        encoder_attention_heads / decoder_attention_heads (`int`, *optional*, defaults to 8):
            h, the parallel attention heads (§3.2.2, base: 8, big: 16).
        encoder_ffn_dim / decoder_ffn_dim (`int`, *optional*, defaults to 2048):
            d_ff, the inner size of the position-wise feed-forward networks (§3.3, base: 2048, big: 4096).
        dropout (`float`, *optional*, defaults to 0.1):
            P_drop on every sub-layer output and on the embedding sums (§5.4, base: 0.1, big: 0.3).
        attention_dropout (`float`, *optional*, defaults to 0.0):
            Dropout on the attention weights (not in the paper; tensor2tensor and fairseq offer it).
        activation_dropout (`float`, *optional*, defaults to 0.0):
            Dropout after the feed-forward activation (not in the paper).
        activation_function (`str`, *optional*, defaults to `"relu"`):
            The feed-forward activation (eq. 2: ReLU).
        label_smoothing (`float`, *optional*, defaults to 0.1):
            ε_ls of the training loss (§5.4, paper: 0.1). A training setting, not part of the model: `hf-attn train`
            passes it to `TrainingArguments(label_smoothing_factor=...)`; `outputs.loss` is plain cross-entropy.
        max_position_embeddings (`int`, *optional*, defaults to 1024):
            The longest sequence the position table covers.
        scale_embedding (`bool`, *optional*, defaults to `True`):
            Multiply embeddings by √d_model (§3.4).
        share_encoder_decoder_embeddings (`bool`, *optional*, defaults to `True`):
            One embedding matrix for source and target tokens (§3.4).
        tie_word_embeddings (`bool`, *optional*, defaults to `True`):
            The pre-softmax projection shares the target embedding matrix (§3.4).
        normalize_before (`bool`, *optional*, defaults to `False`):
            `False`: post-LN, LayerNorm(x + Sublayer(x)) as in the paper (§3.1); `True`: pre-LN.
        encoder_final_layer_norm / decoder_final_layer_norm (`bool`, *optional*, defaults to `False`):
            A LayerNorm after the last layer (what pre-LN implementations add).
        sinusoid_layout (`str`, *optional*, defaults to `"interleaved"`):
            `"interleaved"` sin/cos by dimension (paper, §3.5) or `"concatenated"` [sin | cos] (tensor2tensor,
            fairseq, Marian).
        sinusoid_timescale (`str`, *optional*, defaults to `"paper"`):
            `"paper"`: frequencies 1/10000^(2i/d); `"tensor2tensor"`: 1/10000^(i/(d/2−1)) (fairseq too).
        position_offset (`int`, *optional*, defaults to 0):
            Added to every position (fairseq: padding_idx + 1).
        attention_bias / ffn_bias (`bool`, *optional*, defaults to `True`):
            Biases in the attention projections / the feed-forward layers.
        output_bias (`bool`, *optional*, defaults to `False`):
            A bias on the output logits (Marian's `final_logits_bias`).
        fused_output_loss (`bool`, *optional*, defaults to `True`):
            In training mode with `labels`, run the pre-softmax projection and the loss together, chunk by chunk,
            with their gradients formed in the forward pass (`hf_attn.layers.losses.fused_linear_cross_entropy`):
            the `(tokens, V)` logits are never built, so `outputs.logits` is `None` there. Evaluation, `predict`
            and `generate` (eval mode, or no labels) return the full logits. `False`: always the logits.
    """

    model_type = "vaswani_transformer"
    keys_to_ignore_at_inference: ClassVar[list[str]] = ["past_key_values", "cache", "encoder_last_hidden_state"]
    attribute_map: ClassVar[dict[str, str]] = {
        "hidden_size": "d_model",
        "num_attention_heads": "encoder_attention_heads",
        "num_hidden_layers": "encoder_layers",
    }

    vocab_size: int = positive_int_field(default=37000)
    d_model: int = positive_int_field(default=512)
    encoder_layers: int = positive_int_field(default=6)
    decoder_layers: int = positive_int_field(default=6)
    encoder_attention_heads: int = positive_int_field(default=8)
    decoder_attention_heads: int = positive_int_field(default=8)
    encoder_ffn_dim: int = positive_int_field(default=2048)
    decoder_ffn_dim: int = positive_int_field(default=2048)
    dropout: float | int = interval(min=0.0, max=1.0, exclude_max=True)(default=0.1)
    attention_dropout: float | int = interval(min=0.0, max=1.0, exclude_max=True)(default=0.0)
    activation_dropout: float | int = interval(min=0.0, max=1.0, exclude_max=True)(default=0.0)
    activation_function: str = "relu"
    label_smoothing: float | int = interval(min=0.0, max=1.0, exclude_max=True)(default=0.1)
    max_position_embeddings: int = 1024
    scale_embedding: bool = True
    share_encoder_decoder_embeddings: bool = True
    tie_word_embeddings: bool = True
    normalize_before: bool = False
    encoder_final_layer_norm: bool = False
    decoder_final_layer_norm: bool = False
    sinusoid_layout: Literal["interleaved", "concatenated"] = "interleaved"
    sinusoid_timescale: Literal["paper", "tensor2tensor"] = "paper"
    position_offset: int = 0
    attention_bias: bool = True
    ffn_bias: bool = True
    output_bias: bool = False
    fused_output_loss: bool = True
    layer_norm_eps: float = 1e-5
    pad_token_id: int | None = 0
    bos_token_id: int | None = 2
    eos_token_id: int | list[int] | None = 3
    decoder_start_token_id: int | None = 2
    is_encoder_decoder: bool = True
    use_cache: bool = True

    def validate_architecture(self):
        """Part of `@strict` validation (the fields check their own ranges and choices): heads divide d_model."""
        for heads in (self.encoder_attention_heads, self.decoder_attention_heads):
            if self.d_model % heads:
                raise ValueError(f"`d_model` ({self.d_model}) must be a multiple of the attention heads ({heads}).")


__all__ = ["VaswaniTransformerConfig"]
