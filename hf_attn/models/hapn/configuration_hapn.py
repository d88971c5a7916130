"""Configuration of HAPN, Sun et al., *Hierarchical Attention Prototypical Networks for Few-Shot Text
Classification* (EMNLP-IJCNLP 2019, ACL Anthology D19-1045)."""

from typing import ClassVar, Literal

from huggingface_hub.dataclasses import strict
from transformers import PreTrainedConfig
from transformers.utils.type_validators import interval, positive_int_field


@strict
class HapnConfig(PreTrainedConfig):
    r"""
    Configuration for [`HapnModel`] (the CNN encoder keeping its word states) and [`HapnForFewShotClassification`].
    The paper gives no code and leaves sizes open; the defaults follow its FewRel setting where it states one and
    Proto-HATT's (the same authors' benchmark, §4.2 of Gao et al. 2019) elsewhere. Every choice the paper leaves
    open is a field here.

    Args:
        vocab_size (`int`, *optional*, defaults to 400002):
            Word vocabulary (set from the tokenizer).
        word_embedding_size (`int`, *optional*, defaults to 50):
            The word embeddings w_t = W_E x_t (50-d GloVe on FewRel).
        position_embedding_size (`int`, *optional*, defaults to 5):
            Each of the two position embeddings p_t (relation data); 0 without them.
        use_entity_positions (`bool`, *optional*, defaults to `False`):
            Whether the inputs carry each instance's (head, tail) entity token indices (FewRel: `True`; text
            classification such as CSID: `False`).
        max_sentence_length (`int`, *optional*, defaults to 40):
            Texts are truncated to this many tokens; the position tables have twice as many rows.
        hidden_size (`int`, *optional*, defaults to 230):
            The CNN's filters, the size of the word states h_t (Proto-HATT's 230).
        kernel_size (`int`, *optional*, defaults to 3):
            m, the convolution window, odd.
        word_attention_size (`int`, *optional*):
            The size of u_t = tanh(W_w h_t + b_w) and of the context vector u_w (§3.2; open in the paper: `None`
            means `hidden_size`).
        use_word_attention (`bool`, *optional*, defaults to `True`):
            Word-level attention (§3.2); `False` max-pools the word states (the ablation "− word attention").
        use_feature_attention (`bool`, *optional*, defaults to `True`):
            Feature-level attention (§3.3); `False` weighs every feature 1.
        use_instance_attention (`bool`, *optional*, defaults to `True`):
            Instance-level multi cross attention (§3.4); `False` averages the shots (Snell et al.'s prototype).
        feature_attention_channels (`list[int]`, *optional*, defaults to `[32, 64]`):
            The hidden convolutions of the feature-level attention over a class's K max-pooled support instances
            (three layers in all with the output one, as Proto-HATT's 1 → 32 → 64 → 1; the paper gives no sizes).
        feature_attention_kernel (`int`, *optional*, defaults to 3):
            The convolutions' extent along the shot axis, odd, zero-padded to keep K rows, whose outputs are then
            averaged over the real shots: unlike Proto-HATT's kernels (K, 1), λ_i is defined for any K, K = 1
            included, and for classes with different numbers of shots.
        feature_attention_activation (`str`, *optional*, defaults to `"relu"`):
            The activation giving λ_i ≥ 0 from the last convolution (`relu` as Proto-HATT; `softplus` keeps
            every feature in the distance; `sigmoid` bounds the weights).
        feature_attention_dropout_prob (`float`, *optional*, defaults to 0.5):
            Dropout before the last convolution (as Proto-HATT).
        instance_attention_size (`int`, *optional*):
            The size of f_φ(s) and f_φ'(mca) in the multi cross attention (§3.4; `None` means `hidden_size`).
        num_ways / num_shots / num_queries (`int`, *optional*, default to 5):
            N, K and Q (queries per class) of the training and evaluation episodes (any N and K at prediction).
        initializer_range (`float`, *optional*, defaults to 0.02):
            Standard deviation of the context vector u_w's initialisation.
        pad_token_id (`int`, *optional*, defaults to 0):
            The padding id.
    """

    model_type = "hapn"
    keys_to_ignore_at_inference: ClassVar[list[str]] = [
        "word_attentions",
        "support_word_attentions",
        "instance_attentions",
        "feature_scores",
        "prototypes",
        "attentions",
        "hidden_states",
    ]

    vocab_size: int = positive_int_field(default=400002)
    word_embedding_size: int = positive_int_field(default=50)
    position_embedding_size: int = interval(min=0)(default=5)
    use_entity_positions: bool = False
    max_sentence_length: int = positive_int_field(default=40)
    hidden_size: int = positive_int_field(default=230)
    kernel_size: int = positive_int_field(default=3)
    word_attention_size: int | None = positive_int_field(default=None)
    use_word_attention: bool = True
    use_feature_attention: bool = True
    use_instance_attention: bool = True
    feature_attention_channels: list[int] | tuple[int, ...] = (32, 64)
    feature_attention_kernel: int = positive_int_field(default=3)
    feature_attention_activation: Literal["relu", "softplus", "sigmoid"] = "relu"
    feature_attention_dropout_prob: float | int = interval(min=0.0, max=1.0, exclude_max=True)(default=0.5)
    instance_attention_size: int | None = positive_int_field(default=None)
    num_ways: int = positive_int_field(default=5)
    num_shots: int = positive_int_field(default=5)
    num_queries: int = positive_int_field(default=5)
    initializer_range: float = 0.02
    pad_token_id: int | None = 0

    def __post_init__(self, **kwargs):
        self.feature_attention_channels = [int(size) for size in self.feature_attention_channels]
        if self.word_attention_size is None:
            self.word_attention_size = self.hidden_size
        if self.instance_attention_size is None:
            self.instance_attention_size = self.hidden_size
        super().__post_init__(**kwargs)

    def validate_architecture(self):
        """Positions need their embeddings; windows are odd."""
        if self.use_entity_positions and self.position_embedding_size == 0:
            raise ValueError("use_entity_positions needs position_embedding_size > 0 (the position embeddings).")
        for name in ("kernel_size", "feature_attention_kernel"):
            if getattr(self, name) % 2 == 0:
                raise ValueError(f"{name} must be odd (a window centred on each position), got {getattr(self, name)}.")
        if self.num_ways < 2:
            raise ValueError(f"num_ways must be at least 2 (an episode chooses between classes), got {self.num_ways}.")
        if any(size < 1 for size in self.feature_attention_channels):
            raise ValueError(f"feature_attention_channels must be positive, got {self.feature_attention_channels}.")


__all__ = ["HapnConfig"]
