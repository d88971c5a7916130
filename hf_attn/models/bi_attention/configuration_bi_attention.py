"""Configuration of BI-Attention, the attention-based bilingual LSTM network (Zhou, Wan & Xiao, EMNLP 2016,
doi:10.18653/v1/D16-1024)."""

from typing import ClassVar

from huggingface_hub.dataclasses import strict
from transformers import PreTrainedConfig
from transformers.utils.type_validators import interval, positive_int_field


@strict
class BiAttentionConfig(PreTrainedConfig):
    r"""
    Configuration for [`BiAttentionModel`] and [`BiAttentionForDocumentClassification`]: two hierarchical
    bi-LSTM encoders with word- and sentence-level attention, one per view (language) of a document.

    The sizes below are hf_attn's defaults at the scale of HAN (the paper's own values are not restated here);
    the loss weight α is the paper's L = L1 + α·L2.

    Args:
        vocab_size (`int`, *optional*, defaults to 30000):
            Word types of the first view (`input_ids`).
        pair_vocab_size (`int`, *optional*):
            Word types of the second view (`pair_input_ids`); defaults to `vocab_size` (one shared tokenizer).
        embedding_size (`int`, *optional*, defaults to 100):
            Word-embedding size of each view (w_ij).
        word_hidden_size (`int`, *optional*, defaults to 50):
            LSTM units per direction of each word encoder (→h_ij, ←h_ij); a word is e_ij = [w_ij; →h_ij; ←h_ij].
        sentence_hidden_size (`int`, *optional*, defaults to 50):
            LSTM units per direction of each sentence encoder, which reads the sentence vectors.
        attention_size (`int`, *optional*, defaults to 100):
            Hidden units of the two-layer feed-forward nets that score words and sentences.
        bilingual_loss_weight (`float`, *optional*, defaults to 1.0):
            α in L = L1 + α·L2, with L2 = ‖r_view1 − r_view2‖² averaged over all pairs of the batch, labelled or
            not (the semi-supervised term). 0 trains on the labelled pairs only.
        hidden_dropout_prob (`float`, *optional*, defaults to 0.0):
            Dropout on the word embeddings and on the classifier input.
        initializer_range (`float`, *optional*, defaults to 0.1):
            Embeddings, projections and context vectors are drawn from U(−range, range).
        pad_token_id (`int`, *optional*, defaults to 0):
            Id of the padding token (both views).
    """

    model_type = "bi_attention"
    # Trainer's predictions keep only the logits; representations and attention maps stay on the model outputs.
    keys_to_ignore_at_inference: ClassVar[list[str]] = [
        "document_embedding",
        "pair_document_embedding",
        "bilingual_distance",
        "word_attentions",
        "sentence_attentions",
        "pair_word_attentions",
        "pair_sentence_attentions",
        "attentions",
        "hidden_states",
    ]

    vocab_size: int = positive_int_field(default=30000)
    pair_vocab_size: int | None = positive_int_field(default=None)
    embedding_size: int = positive_int_field(default=100)
    word_hidden_size: int = positive_int_field(default=50)
    sentence_hidden_size: int = positive_int_field(default=50)
    attention_size: int = positive_int_field(default=100)
    bilingual_loss_weight: float | int = interval(min=0)(default=1.0)
    hidden_dropout_prob: float | int = interval(min=0.0, max=1.0, exclude_max=True)(default=0.0)
    initializer_range: float = 0.1
    pad_token_id: int | None = 0

    def __post_init__(self, **kwargs):
        if self.pair_vocab_size is None:
            self.pair_vocab_size = self.vocab_size
        super().__post_init__(**kwargs)


__all__ = ["BiAttentionConfig"]
