"""Configuration of the Hierarchical Attention Network (Yang et al., NAACL 2016, doi:10.18653/v1/N16-1174)."""

from typing import ClassVar, Literal

from huggingface_hub.dataclasses import strict
from transformers import PreTrainedConfig
from transformers.utils.type_validators import interval, positive_int_field


@strict
class HanConfig(PreTrainedConfig):
    r"""
    Configuration for [`HanModel`] and [`HanForDocumentClassification`]. Defaults are the paper's (§3.3).

    Args:
        vocab_size (`int`, *optional*, defaults to 30000):
            Number of word types (paper: words appearing more than 5 times).
        embedding_size (`int`, *optional*, defaults to 200):
            Word-embedding size (§3.3, paper: 200, initialised with word2vec).
        word_hidden_size (`int`, *optional*, defaults to 50):
            GRU units per direction of the word encoder (§2.2, eq. 2–4; paper: 50, so h_it has 100 features).
        sentence_hidden_size (`int`, *optional*, defaults to 50):
            GRU units per direction of the sentence encoder (eq. 8–10; paper: 50).
        word_attention_size (`int`, *optional*, defaults to 100):
            Size of u_it and of the word context vector u_w (eq. 5–6; paper: 100).
        sentence_attention_size (`int`, *optional*, defaults to 100):
            Size of u_i and of the sentence context vector u_s (eq. 8–9; paper: 100).
        rnn_type (`str`, *optional*, defaults to `"gru"`):
            The recurrent cell of both encoders: `"gru"` (paper) or `"lstm"`.
        hidden_dropout_prob (`float`, *optional*, defaults to 0.0):
            Dropout on the word embeddings, the sentence vectors and the document vector (the paper uses none).
        initializer_range (`float`, *optional*, defaults to 0.1):
            Embeddings, projections and context vectors are drawn from U(−range, range); GRUs keep PyTorch's
            U(−1/√H, 1/√H).
        pad_token_id (`int`, *optional*, defaults to 0):
            Id of the padding token.
    """

    model_type = "han"
    # Trainer's predictions keep only the logits; the attention maps stay available on the model outputs.
    keys_to_ignore_at_inference: ClassVar[list[str]] = [
        "document_embedding",
        "word_attentions",
        "sentence_attentions",
        "attentions",
        "hidden_states",
    ]

    vocab_size: int = positive_int_field(default=30000)
    embedding_size: int = positive_int_field(default=200)
    word_hidden_size: int = positive_int_field(default=50)
    sentence_hidden_size: int = positive_int_field(default=50)
    word_attention_size: int = positive_int_field(default=100)
    sentence_attention_size: int = positive_int_field(default=100)
    rnn_type: Literal["gru", "lstm"] = "gru"
    hidden_dropout_prob: float | int = interval(min=0.0, max=1.0, exclude_max=True)(default=0.0)
    initializer_range: float = 0.1
    pad_token_id: int | None = 0


__all__ = ["HanConfig"]
