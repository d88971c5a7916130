"""Configuration of the Structured Self-Attentive Sentence Embedding (Lin et al., ICLR 2017, arXiv:1703.03130)."""

from typing import ClassVar, Literal

from huggingface_hub.dataclasses import strict
from transformers import PreTrainedConfig
from transformers.utils.type_validators import interval, positive_int_field


@strict
class LinSelfAttentiveConfig(PreTrainedConfig):
    r"""
    Configuration for [`LinSelfAttentiveModel`] and its heads. Defaults are the paper's Yelp setting (§4.2,
    appendix); the original-code switches at the bottom default to the correct behaviour and are set by
    `convert_lin_self_attentive_original_to_hf.py` to reproduce the ExplorerFreda PyTorch port.

    Args:
        vocab_size (`int`, *optional*, defaults to 30000):
            Number of word types (rows of the embedding table).
        embedding_size (`int`, *optional*, defaults to 100):
            Word-embedding size (paper: 100-d word2vec for Yelp and Age).
        hidden_size (`int`, *optional*, defaults to 300):
            LSTM units per direction (u in §2, paper: 300); token states h_t have size 2u.
        num_hidden_layers (`int`, *optional*, defaults to 1):
            Stacked bidirectional LSTM layers (paper: 1; the ExplorerFreda port defaults to 2).
        attention_hidden_size (`int`, *optional*, defaults to 350):
            Hidden units of the attention MLP (d_a in eq. 5, paper: 350).
        attention_hops (`int`, *optional*, defaults to 30):
            Rows of the annotation matrix A (r in eq. 6, paper: 30).
        classifier_hidden_size (`int`, *optional*, defaults to 3000):
            Hidden units of the classification MLP (§4.2, paper: 3000 for Yelp, 2000 for Age).
        pair_interaction_size (`int`, *optional*):
            Output size of each per-hop factor in the gated multiplicative pair interaction (W_fh, W_fp in appendix
            B); defaults to 2u.
        penalty_coefficient (`float`, *optional*, defaults to 1.0):
            Weight of the penalisation term P in the loss (§2.2, paper: 1.0 for Yelp and Age, 0.3 for SNLI).
        penalty_type (`str`, *optional*, defaults to `"squared_frobenius"`):
            `"squared_frobenius"`: P = ‖AAᵀ − I‖²_F as in eq. 8. `"frobenius"`: the original code's
            sqrt(‖AAᵀ − I‖²_F + 1e-10).
        hidden_dropout_prob (`float`, *optional*, defaults to 0.5):
            Dropout on the embeddings, between LSTM layers, on the attention MLP's input and in the classifier
            (paper: 0.5).
        initializer_range (`float`, *optional*, defaults to 0.1):
            Embeddings and linear weights are drawn from U(−range, range), as the original code does.
        pad_token_id (`int`, *optional*, defaults to 0):
            Id of the padding token.
        pack_sequences (`bool`, *optional*, defaults to `True`):
            Pack the LSTM input by length so that padding never changes an example's states. `False` runs the
            LSTM over the pads too (original code).
        attention_mask_value (`float`, *optional*):
            `None` excludes padded tokens from the attention exactly. A float adds that value to padded scores
            instead (original code: -10000.0).
        flatten_order (`str`, *optional*, defaults to `"hop_major"`):
            How M (r × 2u) is flattened for the classifier: `"hop_major"` (row by row: hop 0's 2u features, then
            hop 1's, ..., as the original's `M.view(B, -1)`) or `"feature_major"` (column by column).
    """

    model_type = "lin_self_attentive"
    # Trainer's predictions keep only the logits; the attention maps stay available on the model outputs.
    keys_to_ignore_at_inference: ClassVar[list[str]] = [
        "sentence_embedding",
        "hop_attentions",
        "penalty",
        "pair_sentence_embedding",
        "pair_hop_attentions",
        "pair_penalty",
        "attentions",
        "hidden_states",
    ]

    vocab_size: int = positive_int_field(default=30000)
    embedding_size: int = positive_int_field(default=100)
    hidden_size: int = positive_int_field(default=300)
    num_hidden_layers: int = positive_int_field(default=1)
    attention_hidden_size: int = positive_int_field(default=350)
    attention_hops: int = positive_int_field(default=30)
    classifier_hidden_size: int = positive_int_field(default=3000)
    pair_interaction_size: int | None = positive_int_field(default=None)
    penalty_coefficient: float | int = interval(min=0)(default=1.0)
    penalty_type: Literal["squared_frobenius", "frobenius"] = "squared_frobenius"
    hidden_dropout_prob: float | int = interval(min=0.0, max=1.0, exclude_max=True)(default=0.5)
    initializer_range: float = 0.1
    pad_token_id: int | None = 0
    pack_sequences: bool = True
    attention_mask_value: float | int | None = None
    flatten_order: Literal["hop_major", "feature_major"] = "hop_major"

    def __post_init__(self, **kwargs):
        if self.pair_interaction_size is None:
            self.pair_interaction_size = 2 * self.hidden_size
        super().__post_init__(**kwargs)


__all__ = ["LinSelfAttentiveConfig"]
