"""Configuration of STCKA, short-text classification with knowledge-powered attention (Chen et al., AAAI 2019,
arXiv:1902.08050)."""

from typing import ClassVar

from huggingface_hub.dataclasses import strict
from transformers import PreTrainedConfig
from transformers.utils.type_validators import positive_int_field


@strict
class StckaConfig(PreTrainedConfig):
    r"""
    Configuration for [`StckaModel`] and its head. Defaults are the paper's model (§3; sizes of the most used code,
    AIRobotZhang/STCKA: 300-d embeddings, 64 LSTM units); the switches at the bottom reproduce that unofficial code,
    which `convert_stcka_original_to_hf.py` sets.

    Args:
        vocab_size (`int`, *optional*, defaults to 30000):
            Words of the text vocabulary.
        concept_vocab_size (`int`, *optional*, defaults to 30000):
            Concepts of the concept vocabulary (a separate table, §3.2).
        embedding_size (`int`, *optional*, defaults to 300):
            d, the width of a word's or a concept's input embedding (§3.2, paper: 300): its pre-trained word embedding
            and its character features, concatenated.
        char_feature_size (`int`, *optional*):
            The character-level CNN features' share of d (§3.2, paper: d/2, the default); the word embedding is the
            rest. 0: words and concepts are their word embeddings alone (the code). The tokenizer gives the
            characters (`max_word_length`).
        char_embedding_size (`int`, *optional*, defaults to 16):
            The width of a character's embedding (characters are UTF-8 bytes; the paper does not say).
        char_kernel_size (`int`, *optional*, defaults to 3):
            The CNN's window over a word's characters (the paper does not say).
        hidden_size (`int`, *optional*, defaults to 64):
            u, LSTM units per direction (§3.3); the text states H are 2u wide.
        num_hidden_layers (`int`, *optional*, defaults to 1):
            Stacked BiLSTM layers.
        cst_attention_size (`int`, *optional*):
            d_a, the hidden units of the C-ST attention (W_1 ∈ R^{d_a × (2u + d)}, §3.4); defaults to u (the code's).
        ccs_attention_size (`int`, *optional*):
            d_b, the hidden units of the C-CS attention (W_2 ∈ R^{d_b × d}); defaults to ⌊u/2⌋ (the code's).
        gamma (`float`, *optional*):
            `None` (the paper): a learned soft switch γ_i = σ(w_α α_i + w_β β_i + b) per concept mixes the two
            attentions. A float fixes γ (the code's `gama`, 0.5).
        mask_padding (`bool`, *optional*, defaults to `True`):
            Pack the BiLSTM and mask padded tokens and concepts everywhere (self-attention keys, the max-pool, every
            concept softmax): an example's outputs do not depend on its batch's padding, and an empty concept set
            gives p = 0. `False`: the code, which has no masks at all (padding ids are ordinary embeddings).
        freeze_embeddings (`bool`, *optional*, defaults to `False`):
            Keep both embedding tables fixed in training (the code's `finetuning=False`).
        initializer_range (`float`, *optional*, defaults to 0.1):
            Std of the embeddings' normal initialisation (pre-trained vectors usually replace it).
        pad_token_id (`int`, *optional*, defaults to 0):
            Padding id of texts (the code's `<pad>` is 1).
        concept_pad_token_id (`int`, *optional*, defaults to 0):
            Padding id of concept sets (the code's `<pad>` is 1).
    """

    model_type = "stcka"
    num_characters: ClassVar[int] = 257  # UTF-8 bytes + 1; 0 pads
    keys_to_ignore_at_inference: ClassVar[list[str]] = [
        "last_hidden_state",
        "text_representation",
        "concept_representation",
        "concept_attentions",
        "cst_attentions",
        "ccs_attentions",
        "gamma",
        "self_attentions",
        "attentions",
        "hidden_states",
    ]

    vocab_size: int = positive_int_field(default=30000)
    concept_vocab_size: int = positive_int_field(default=30000)
    embedding_size: int = positive_int_field(default=300)
    char_feature_size: int | None = None
    char_embedding_size: int = positive_int_field(default=16)
    char_kernel_size: int = positive_int_field(default=3)
    hidden_size: int = positive_int_field(default=64)
    num_hidden_layers: int = positive_int_field(default=1)
    cst_attention_size: int | None = positive_int_field(default=None)
    ccs_attention_size: int | None = positive_int_field(default=None)
    gamma: float | int | None = None
    mask_padding: bool = True
    freeze_embeddings: bool = False
    initializer_range: float = 0.1
    pad_token_id: int | None = 0
    concept_pad_token_id: int = 0

    def __post_init__(self, **kwargs):
        if self.cst_attention_size is None:
            self.cst_attention_size = self.hidden_size
        if self.ccs_attention_size is None:
            self.ccs_attention_size = max(1, self.hidden_size // 2)
        if self.char_feature_size is None:
            self.char_feature_size = self.embedding_size // 2
        super().__post_init__(**kwargs)

    def validate_architecture(self):
        if not 0 <= self.char_feature_size < self.embedding_size:
            raise ValueError(
                f"`char_feature_size` must lie in [0, embedding_size = {self.embedding_size}) (the word embedding "
                f"keeps the rest), got {self.char_feature_size}."
            )
        if self.gamma is not None and not 0.0 <= self.gamma <= 1.0:
            raise ValueError(f"`gamma` must lie in [0, 1] (or be None: learned), got {self.gamma}.")


__all__ = ["StckaConfig"]
