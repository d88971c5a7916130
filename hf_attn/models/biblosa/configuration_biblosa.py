"""Configuration of Bi-BloSAN, bi-directional block self-attention (Shen et al., ICLR 2018, arXiv:1804.00857)."""

from typing import ClassVar, Literal

from huggingface_hub.dataclasses import strict
from transformers import PreTrainedConfig
from transformers.utils.type_validators import interval, positive_int_field


@strict
class BiBlosaConfig(PreTrainedConfig):
    r"""
    Configuration for [`BiBlosaModel`] and its heads. Defaults are the paper's SNLI setting (§4.1: 300-d GloVe,
    300 hidden units, elu, keep probability 0.75); the switches at the bottom default to padding-invariant behaviour
    and are set by `convert_biblosa_original_to_hf.py` to reproduce the original TensorFlow code.

    Args:
        vocab_size (`int`, *optional*, defaults to 30000):
            Number of word types (rows of the embedding table; id 0 is padding).
        embedding_size (`int`, *optional*, defaults to 300):
            Word-embedding size d (paper: 300-d GloVe).
        hidden_size (`int`, *optional*, defaults to 300):
            Width H of every block layer of one direction; the token output is [u_fw; u_bw], 2H wide (the original's
            `hn`, paper: 300). The original's sentence-classification models have no `hn` and use H = d.
        block_length (`int` or `"auto"`, *optional*, defaults to 6):
            Block length r (§3.2). An int fixes it. `"auto"` is the original's in-graph rule
            r = ceil(float32(2n) ** float32(1/3)) on the padded width n of each input tensor (eq. 19's memory
            optimum), float32 overshoot at perfect cubes included; it makes an example's output depend on how far its
            batch is padded. 6 is what the original training scripts' rule (`block_length_for_lengths`) gives on
            SNLI and the sentence-classification sets.
        hidden_act (`str`, *optional*, defaults to `"elu"`):
            Activation of every dense map, of the fusion gate's new context, of the sentence-level source2token and
            of the heads' hidden layers: `"elu"` (the original's SNLI model), `"relu"` (its SST/TREC/CR/SUBJ/MPQA
            models) or `"linear"`.
        score_scale (`float`, *optional*, defaults to 5.0):
            c in the scaled-tanh score f(x_i, x_j) = c·tanh([W_1 x_i + W_2 x_j + b]/c) (§3.1, paper: 5).
        classifier_hidden_size (`int`, *optional*, defaults to 300):
            Width of the heads' hidden layers (the original's `hidden_units_num` in the output layers).
        hidden_dropout_prob (`float`, *optional*, defaults to 0.25):
            Dropout on the input of every dense layer, as the original (1 − keep probability; paper: keep 0.75 for
            SNLI).
        l2_regularization (`float`, *optional*, defaults to 0.0):
            The original's `wd`: the loss adds wd · Σ‖W‖²/2 over every weight matrix except the embeddings and the
            inter-block key/query projections (its `reg_vars`). 0 leaves weight decay to the optimiser
            (`TrainingArguments.weight_decay`).
        initializer_range (`float`, *optional*, defaults to 0.1):
            Embeddings are drawn from N(0, range²); dense weights are Glorot-uniform as TensorFlow's default.
        pad_token_id (`int`, *optional*, defaults to 0):
            Id of the padding token (the original's `@@@empty`).
        mask_padding (`bool`, *optional*, defaults to `True`):
            `True`: blocks made only of padding are excluded from the inter-block attention, padded positions of the
            token output are zero and an all-padding sentence pools to zeros, so an example's outputs never depend on
            its batch's padding. `False`: the original, whose inter-block attention lets padding blocks in (a
            sentence vector moves by up to 0.4 with the batch's padding).
        recompute_block_attention (`bool`, *optional*, defaults to `True`):
            Store only the O(n·H) inputs of the multi-dimensional attentions and recompute their O(n·r·H) scores in the
            backward pass, block chunk by block chunk (`False`: plain autograd, which keeps several score tensors).
    """

    model_type = "biblosa"
    keys_to_ignore_at_inference: ClassVar[list[str]] = [
        "last_hidden_state",
        "sentence_embedding",
        "sentence_attentions",
        "sentence_feature_attentions",
        "block_attentions",
        "inter_block_attentions",
        "pair_sentence_embedding",
        "pair_sentence_attentions",
        "pair_sentence_feature_attentions",
        "pair_block_attentions",
        "pair_inter_block_attentions",
        "attentions",
        "hidden_states",
    ]

    vocab_size: int = positive_int_field(default=30000)
    embedding_size: int = positive_int_field(default=300)
    hidden_size: int = positive_int_field(default=300)
    block_length: int | Literal["auto"] = 6
    hidden_act: Literal["elu", "relu", "linear"] = "elu"
    score_scale: float | int = interval(min=0.0, exclude_min=True)(default=5.0)
    classifier_hidden_size: int = positive_int_field(default=300)
    hidden_dropout_prob: float | int = interval(min=0.0, max=1.0, exclude_max=True)(default=0.25)
    l2_regularization: float | int = interval(min=0.0)(default=0.0)
    initializer_range: float = 0.1
    pad_token_id: int | None = 0
    mask_padding: bool = True
    recompute_block_attention: bool = True

    def __post_init__(self, **kwargs):
        # `mask_padding_blocks` is this switch's old name (every architecture now calls it `mask_padding`): configs
        # saved with it still load, and are saved with the new name.
        if "mask_padding_blocks" in kwargs:
            self.mask_padding = bool(kwargs.pop("mask_padding_blocks"))
        super().__post_init__(**kwargs)

    def validate_architecture(self):
        if isinstance(self.block_length, bool) or (isinstance(self.block_length, int) and self.block_length < 1):
            raise ValueError(f"`block_length` must be a positive int or 'auto', got {self.block_length!r}.")


__all__ = ["BiBlosaConfig"]
