"""Configuration of the LSTMN, the Long Short-Term Memory-Network (Cheng, Dong & Lapata, EMNLP 2016,
arXiv:1601.06733)."""

from typing import ClassVar, Literal

from huggingface_hub.dataclasses import strict
from transformers import PreTrainedConfig
from transformers.utils.type_validators import interval, positive_int_field


@strict
class LstmnConfig(PreTrainedConfig):
    r"""
    Configuration for [`LstmnModel`] and its heads. Defaults are the paper's and the original code's (Lua Torch,
    cheng6076/SNLI-attention): 300-d embeddings, 450 hidden units, dropout 0.5, parameters drawn from U(−0.05, 0.05).

    Args:
        vocab_size (`int`, *optional*, defaults to 30000):
            Number of word types (rows of the embedding table; also the language model's output size).
        embedding_size (`int`, *optional*, defaults to 300):
            Word-embedding size, x_t (paper: 300-d GloVe vectors).
        hidden_size (`int`, *optional*, defaults to 450):
            Size of the hidden states h_t and memory cells c_t (paper: 450 for NLI).
        num_hidden_layers (`int`, *optional*, defaults to 1):
            Stacked LSTMN layers; layer k reads h_t of layer k − 1 (§3, "stacking").
        attention_size (`int`, *optional*):
            Rows of W_h, W_x, W_h̃ and size of v in the intra-attention score (eq. 4), and of W_γ, W_γ̃, u in the
            inter-attention (eq. 10); defaults to `hidden_size`, as in the original code.
        fusion (`str`, *optional*, defaults to `"deep"`):
            How the pair model's hypothesis decoder uses the premise encoder (§4): `"deep"` gates the
            inter-attention summary of the premise's memory into the decoder's memory (eq. 10–15; the original
            code's model), `"shallow"` reads the premise with the same inter-attention without touching the
            memory and hands the read-out to the classifier, `"none"` reads two independent LSTMNs.
        hidden_dropout_prob (`float`, *optional*, defaults to 0.5):
            Dropout on the word embeddings, between layers and in the classifier (paper: 0.5).
        classifier_hidden_size (`int`, *optional*):
            Units of the two ReLU layers of the classifier MLP; defaults to `hidden_size` (the original code).
        pooling (`str`, *optional*, defaults to `"mean"`):
            How [`LstmnForSequenceClassification`] pools the top layer's states: `"mean"` over the real tokens (as
            the original classifier averages), or `"last"`, the state after the last real token.
        recurrence_implementation (`str`, *optional*, defaults to `"fast"`):
            `"fast"`: preallocated tapes, cached key projections, a hand-written backward pass (memory grows as
            B·T·H). `"reference"`: the straightforward step loop, growing the tapes with `torch.cat` and
            recomputing every key projection at every step, differentiated by autograd (slow; use it to check
            the fast one, or to take gradients through the attention weights themselves).
        compile_recurrence (`bool`, *optional*, defaults to `False`):
            Compile the fast recurrence's step functions with `torch.compile` (when torch can compile here).
        initializer_range (`float`, *optional*, defaults to 0.05):
            Embeddings and weights are drawn from U(−range, range) (original code: `-param_init 0.05`).
        pad_token_id (`int`, *optional*, defaults to 0):
            Id of the padding token.
        use_cache (`bool`, *optional*, defaults to `True`):
            Whether the language model returns its memory tapes as `past_key_values` in inference, so that
            `generate()` feeds one new token per step.
    """

    model_type = "lstmn"
    # Trainer's predictions keep only the logits; attention maps and memory tapes stay on the model outputs.
    keys_to_ignore_at_inference: ClassVar[list[str]] = [
        "past_key_values",
        "cache",  # transformers ≥ 5.24's name of past_key_values
        "hidden_states",
        "intra_attentions",
        "pair_intra_attentions",
        "inter_attentions",
        "attentions",
    ]

    vocab_size: int = positive_int_field(default=30000)
    embedding_size: int = positive_int_field(default=300)
    hidden_size: int = positive_int_field(default=450)
    num_hidden_layers: int = positive_int_field(default=1)
    attention_size: int | None = positive_int_field(default=None)
    fusion: Literal["none", "shallow", "deep"] = "deep"
    hidden_dropout_prob: float | int = interval(min=0.0, max=1.0, exclude_max=True)(default=0.5)
    classifier_hidden_size: int | None = positive_int_field(default=None)
    pooling: Literal["mean", "last"] = "mean"
    recurrence_implementation: Literal["fast", "reference"] = "fast"
    compile_recurrence: bool = False
    initializer_range: float = 0.05
    pad_token_id: int | None = 0
    bos_token_id: int | None = None
    eos_token_id: int | list[int] | None = None
    use_cache: bool = True
    tie_word_embeddings: bool = False

    def __post_init__(self, **kwargs):
        if self.attention_size is None:
            self.attention_size = self.hidden_size
        if self.classifier_hidden_size is None:
            self.classifier_hidden_size = self.hidden_size
        super().__post_init__(**kwargs)


__all__ = ["LstmnConfig"]
