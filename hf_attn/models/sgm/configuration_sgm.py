"""Configuration of SGM, the Sequence Generation Model of Yang et al., *SGM: Sequence Generation Model for Multi-Label
Classification* (COLING 2018, arXiv:1806.04822)."""

from typing import ClassVar, Literal

from huggingface_hub.dataclasses import strict
from transformers import PreTrainedConfig
from transformers.utils.type_validators import interval, positive_int_field


@strict
class SgmConfig(PreTrainedConfig):
    r"""
    Configuration for [`SgmModel`], [`SgmForMultiLabelGeneration`] and the binary-relevance baseline
    [`SgmForMultiLabelClassification`]. Defaults are the paper's (§2, §3.3); the switches marked *original* reproduce
    the released code (lancopku/SGM), which differs from the paper in the places listed in the model file.

    Labels: `id2label` names the `num_labels` real labels, **sorted by training-set frequency** (most frequent first,
    §2.1: the order in which the decoder emits them). The decoder's vocabulary is `num_special_tokens` special ids
    (PAD 0, UNK 1, BOS 2, EOS 3, as the original's `dict_helper`) followed by the labels: label `i` is target id
    `num_special_tokens + i`, and `target_vocab_size = num_special_tokens + num_labels`.

    Args:
        vocab_size (`int`, *optional*, defaults to 50000):
            Source (word) vocabulary (§3.3: 50,000 words on RCV1-V2, 30,000 on AAPD).
        embedding_size (`int`, *optional*, defaults to 512):
            Word and label embeddings (§3.3: 512).
        encoder_hidden_size (`int`, *optional*, defaults to 256):
            Encoder LSTM units per direction (§3.3: 256).
        decoder_hidden_size (`int`, *optional*, defaults to 512):
            Decoder LSTM units s_t (§3.3: 512).
        encoder_layers / decoder_layers (`int`, *optional*, defaults to 2):
            Stacked LSTM layers (§3.3: 2).
        hidden_dropout_prob (`float`, *optional*, defaults to 0.5):
            Dropout on embeddings, between LSTM layers and on the decoder's read-out (original config: 0.5).
        attention_size (`int`, *optional*, defaults to 512):
            Size of the additive attention's hidden layer (v, W_a, U_a in eq. 3, paper: not stated; = decoder size).
        initializer_range (`float`, *optional*, defaults to 0.1):
            Uniform U(−r, r) initialisation of every weight (original `param_init`: 0.1).
        merge_directions (`str`, *optional*, defaults to `"concat"`):
            h_i = [→h_i; ←h_i] (`"concat"`, paper eq. 2) or →h_i + ←h_i (`"sum"`, original).
        reverse_source (`bool`, *optional*, defaults to `False`):
            Read each source backwards (original: its collate function reverses every source). Inputs stay in
            natural order and attention maps index them; the reversal happens inside the encoder.
        decoder_initial_state (`str`, *optional*, defaults to `"final"`):
            s_0 per layer: the encoder's final states of both directions concatenated (`"final"`), of the forward
            direction only (`"forward_final"`, original) or zeros (`"zeros"`). The first two need as many decoder as
            encoder layers and a matching size.
        attention_type (`str`, *optional*, defaults to `"additive"`):
            `"additive"`: e_ti = vᵀ tanh(W_a s_t + U_a h_i) (eq. 3) and o_t = W_o tanh(W_d s_t + V_d c_t) (eq. 6);
            `"luong_gate"` (original): γ = SELU(W SELU(W' s_t)), e_ti = h_iᵀ γ, read-out SELU(W SELU(W' [s_t; c_t]))
            then W_o. Luong-gate needs `encoder output size == decoder_hidden_size`.
        mask_padding (`bool`, *optional*, defaults to `True`):
            Attend to real source tokens only. The original attends over the padding too (its encoder outputs there
            are 0), so its results depend on the batch's padded width.
        input_feeding (`bool`, *optional*, defaults to `True`):
            Feed c_{t−1} to the decoder LSTM with the label embedding (eq. 5; the original feeds the embedding only).
        global_embedding (`bool`, *optional*, defaults to `False`):
            SGM+GE (§2.3): the decoder reads g(y_{t−1}), a gated mix of the argmax label's embedding and the average
            embedding ē = Σ_i y_{t−1}^(i) e_i, instead of the argmax label's embedding alone.
        global_embedding_gate (`str`, *optional*, defaults to `"paper"`):
            `"paper"`: g = (1 − H) ⊙ e + H ⊙ ē with H = σ(W_1 e + W_2 ē) (eq. 8–9) is the LSTM's label input;
            `"original"`: g' = H ⊙ e + (1 − H) ⊙ ē and the LSTM reads [e; g'].
        global_embedding_tau (`float`, *optional*, defaults to 1.0):
            Temperature τ of y_{t−1} = softmax(o_{t−1} / τ) in ē (paper: none, i.e. 1; original: 0.1).
        global_embedding_source (`str`, *optional*, defaults to `"masked"`):
            Which distribution ē averages: `"masked"`, y_{t−1} with the labels emitted before step t−1 masked (the
            paper's y_t = softmax(o_t + I_t), eq. 7, and the original's greedy decoding); `"unmasked"`, softmax of
            the raw scores (the original's teacher-forced training); `"uniform"`, the plain average of every label
            embedding at every step (what the original's beam search feeds).
        mask_repeated_labels (`bool`, *optional*, defaults to `True`):
            I_t of eq. 7 at generation: a label already emitted cannot be emitted again (`generate()` adds the
            logits processor; pass `mask_repeated_labels=False` to `generate` to turn it off once).
        num_special_tokens (`int`, *optional*, defaults to 4):
            Target ids below this are special (PAD, UNK, BOS, EOS); labels follow them.
    """

    model_type = "sgm"
    keys_to_ignore_at_inference: ClassVar[list[str]] = [
        "past_key_values",
        "cache",  # transformers ≥ 5.24's name of past_key_values
        "cross_attentions",
        "decoder_hidden_states",
        "encoder_last_hidden_state",
        "hidden_states",
        "attentions",
    ]
    attribute_map: ClassVar[dict[str, str]] = {"hidden_size": "decoder_hidden_size"}

    vocab_size: int = positive_int_field(default=50000)
    embedding_size: int = positive_int_field(default=512)
    encoder_hidden_size: int = positive_int_field(default=256)
    decoder_hidden_size: int = positive_int_field(default=512)
    encoder_layers: int = positive_int_field(default=2)
    decoder_layers: int = positive_int_field(default=2)
    hidden_dropout_prob: float | int = interval(min=0.0, max=1.0, exclude_max=True)(default=0.5)
    attention_size: int = positive_int_field(default=512)
    initializer_range: float = 0.1
    merge_directions: Literal["concat", "sum"] = "concat"
    reverse_source: bool = False
    decoder_initial_state: Literal["final", "forward_final", "zeros"] = "final"
    attention_type: Literal["additive", "luong_gate"] = "additive"
    mask_padding: bool = True
    input_feeding: bool = True
    global_embedding: bool = False
    global_embedding_gate: Literal["paper", "original"] = "paper"
    global_embedding_tau: float | int = interval(min=0.0, exclude_min=True)(default=1.0)
    global_embedding_source: Literal["masked", "unmasked", "uniform"] = "masked"
    mask_repeated_labels: bool = True
    num_special_tokens: int = 4
    pad_token_id: int | None = 0
    unk_token_id: int | None = 1
    bos_token_id: int | None = 2
    eos_token_id: int | list[int] | None = 3
    decoder_start_token_id: int | None = 2
    is_encoder_decoder: bool = True
    use_cache: bool = True

    # The released code's behaviour (lancopku/SGM) where it differs from the paper, set at once by `original_code`.
    ORIGINAL_CODE_SWITCHES: ClassVar[dict[str, object]] = {
        "merge_directions": "sum",  # the BiLSTM's directions summed, not concatenated
        "reverse_source": True,  # the source is read reversed
        "decoder_initial_state": "forward_final",  # s_0 = the forward direction's final state
        "attention_type": "luong_gate",  # Luong attention with a SELU gate, not additive (eq. 3–4)
        "mask_padding": False,  # padded source positions take part in the attention
        "input_feeding": False,  # c_{t−1} is not fed to the decoder LSTM
        "global_embedding_gate": "original",  # e concatenated to the mix, not the paper's (1 − H)e + Hē
    }

    @classmethod
    def original_code(cls, hidden_size: int = 256, **kwargs) -> "SgmConfig":
        """A config with every switch of the original code (`ORIGINAL_CODE_SWITCHES`) set and, as there, one
        `hidden_size` for the encoder (per direction), the decoder and the attention; the rest from `kwargs` (which
        may override a switch or a size too). The conversion script builds its configs with it."""
        sizes = {"encoder_hidden_size": hidden_size, "decoder_hidden_size": hidden_size, "attention_size": hidden_size}
        return cls(**{**cls.ORIGINAL_CODE_SWITCHES, **sizes, **kwargs})

    @property
    def encoder_output_size(self) -> int:
        """Features of h_i: 2 × encoder units when the directions are concatenated, else the units."""
        return self.encoder_hidden_size * (2 if self.merge_directions == "concat" else 1)

    @property
    def target_vocab_size(self) -> int:
        """The decoder's vocabulary: the special ids, then one id per label."""
        return self.num_special_tokens + self.num_labels

    def __post_init__(self, **kwargs):
        # `mask_source_padding` is this switch's old name (every architecture now calls it `mask_padding`): configs
        # saved with it still load, and are saved with the new name.
        if "mask_source_padding" in kwargs:
            self.mask_padding = bool(kwargs.pop("mask_source_padding"))
        super().__post_init__(**kwargs)

    def validate_architecture(self):
        """Part of `@strict` validation (the fields check their own ranges and choices): the parts that must fit
        together (initial decoder state, luong-gate attention, special ids) do."""
        if self.decoder_initial_state != "zeros":
            state_size = self.encoder_hidden_size * (2 if self.decoder_initial_state == "final" else 1)
            if self.encoder_layers != self.decoder_layers or state_size != self.decoder_hidden_size:
                raise ValueError(
                    f"`decoder_initial_state={self.decoder_initial_state!r}` hands each encoder layer's final state "
                    f"({state_size} units) to the matching decoder layer: it needs encoder_layers == decoder_layers "
                    f"(got {self.encoder_layers} and {self.decoder_layers}) and decoder_hidden_size == {state_size} "
                    f"(got {self.decoder_hidden_size}); or use 'zeros'."
                )
        if self.attention_type == "luong_gate" and self.encoder_output_size != self.decoder_hidden_size:
            raise ValueError(
                f"`attention_type='luong_gate'` scores h_iᵀγ, γ of the decoder's size: the encoder output "
                f"size ({self.encoder_output_size}) to equal `decoder_hidden_size` ({self.decoder_hidden_size})."
            )
        specials = {"pad_token_id": self.pad_token_id, "bos_token_id": self.bos_token_id}
        specials.update(eos_token_id=self.eos_token_id, decoder_start_token_id=self.decoder_start_token_id)
        for name, value in specials.items():
            if not isinstance(value, int) or not 0 <= value < self.num_special_tokens:
                raise ValueError(
                    f"`{name}` must be a special target id in [0, num_special_tokens={self.num_special_tokens}), "
                    f"got {value!r}."
                )


__all__ = ["SgmConfig"]
