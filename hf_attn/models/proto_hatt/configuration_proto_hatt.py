"""Configuration of Proto-HATT, Gao et al., *Hybrid Attention-Based Prototypical Networks for Noisy Few-Shot
Relation Classification* (AAAI 2019)."""

from typing import ClassVar

from huggingface_hub.dataclasses import strict
from transformers import PreTrainedConfig
from transformers.utils.type_validators import interval, positive_int_field


@strict
class ProtoHattConfig(PreTrainedConfig):
    r"""
    Configuration for [`ProtoHattModel`] (the CNN instance encoder), [`ProtoHattForFewShotClassification`] (the
    hybrid attention network) and [`ProtoHattProtoNetForFewShotClassification`] (the plain prototypical network on
    the same encoder). Defaults are the paper's (§4.2) and the original code's (thunlp/HATT-Proto) on FewRel.

    Args:
        vocab_size (`int`, *optional*, defaults to 400002):
            Word vocabulary (set from the tokenizer; the original: the 400,000 GloVe words, UNK and BLANK).
        word_embedding_size (`int`, *optional*, defaults to 50):
            d_w, the word embeddings (§4.2: 50-d GloVe).
        position_embedding_size (`int`, *optional*, defaults to 5):
            d_p, each of the two position embeddings (§4.2: 5); 0 turns them off (plain text classification).
        use_entity_positions (`bool`, *optional*, defaults to `True`):
            Whether the inputs carry each instance's (head, tail) entity token indices (relation classification).
        max_sentence_length (`int`, *optional*, defaults to 40):
            L, the longest instance (the original's `max_length`: texts are truncated to it, and the position
            tables have 2L rows: distances beyond ±(L − 1) are clamped).
        hidden_size (`int`, *optional*, defaults to 230):
            d_h, the CNN's filters and so the instance encoding's size (§4.2: 230).
        kernel_size (`int`, *optional*, defaults to 3):
            m, the convolution window (§4.2: 3), odd.
        num_ways (`int`, *optional*, defaults to 5):
            N, the classes of a training and evaluation episode (FewRel: 5 or 10).
        num_shots (`int`, *optional*, defaults to 5):
            K, the support instances per class. The feature-level attention's convolutions span the K shots
            (kernel (K, 1)), so a model works with this K only (the original's `shots`).
        num_queries (`int`, *optional*, defaults to 5):
            Q, the queries per class of a training and evaluation episode (the original trains with 5).
        feature_attention_channels (`list[int]`, *optional*, defaults to `[32, 64]`):
            The channels of the feature-level attention's hidden convolutions (§3.3; the original hard-codes
            1 → 32 → 64 → 1). Each has kernel (K, 1) and padding K // 2, so for an even K the shot axis grows by
            one per layer and the last convolution (kernel K, stride K) reads its first K rows (the original's
            asymmetry); an even K needs fewer layers than K ([`ProtoHattForFewShotClassification`] refuses K = 2
            with two layers, where the original crashes).
        feature_attention_dropout_prob (`float`, *optional*, defaults to 0.5):
            Dropout before the last convolution of the feature-level attention (the original's `nn.Dropout()`).
        mask_padding (`bool`, *optional*, defaults to `True`):
            Padding never changes an instance's encoding, and an empty support instance takes no part in the
            instance attention. `False` is the original code's behaviour (converted checkpoints): padded positions
            carry position embeddings and states, max-pooling runs over all `max_sentence_length` positions, so
            inputs must be padded to `max_sentence_length` as the original did (`predict` does).
        initializer_range (`float`, *optional*, defaults to 0.02):
            Kept for transformers' utilities; the weights start as the original's (PyTorch's defaults).
        pad_token_id (`int`, *optional*, defaults to 0):
            The padding id (the original's BLANK = V + 1).
    """

    model_type = "proto_hatt"
    keys_to_ignore_at_inference: ClassVar[list[str]] = [
        "instance_attentions",
        "feature_scores",
        "prototypes",
        "attentions",
        "hidden_states",
    ]

    vocab_size: int = positive_int_field(default=400002)
    word_embedding_size: int = positive_int_field(default=50)
    position_embedding_size: int = interval(min=0)(default=5)
    use_entity_positions: bool = True
    max_sentence_length: int = positive_int_field(default=40)
    hidden_size: int = positive_int_field(default=230)
    kernel_size: int = positive_int_field(default=3)
    num_ways: int = positive_int_field(default=5)
    num_shots: int = positive_int_field(default=5)
    num_queries: int = positive_int_field(default=5)
    feature_attention_channels: list[int] | tuple[int, ...] = (32, 64)
    feature_attention_dropout_prob: float | int = interval(min=0.0, max=1.0, exclude_max=True)(default=0.5)
    mask_padding: bool = True
    initializer_range: float = 0.02
    pad_token_id: int | None = 0

    def __post_init__(self, **kwargs):
        self.feature_attention_channels = [int(size) for size in self.feature_attention_channels]
        super().__post_init__(**kwargs)

    def validate_architecture(self):
        """Positions need their embeddings; the window is odd. (Whether the feature attention can read K shots is
        checked by the head that has it: the plain prototypical network takes any K.)"""
        if self.use_entity_positions and self.position_embedding_size == 0:
            raise ValueError("use_entity_positions needs position_embedding_size > 0 (the position embeddings).")
        if self.kernel_size % 2 == 0:
            raise ValueError(f"kernel_size must be odd (a window centred on each token), got {self.kernel_size}.")
        if self.num_ways < 2:
            raise ValueError(f"num_ways must be at least 2 (an episode chooses between classes), got {self.num_ways}.")
        if any(size < 1 for size in self.feature_attention_channels):
            raise ValueError(f"feature_attention_channels must be positive, got {self.feature_attention_channels}.")


__all__ = ["ProtoHattConfig"]
