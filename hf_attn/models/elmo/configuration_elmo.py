"""Configuration of ELMo (Peters et al., NAACL 2018, arXiv:1802.05365), mirroring bilm-tf's `options.json`."""

import json
from dataclasses import field
from pathlib import Path
from typing import Any, ClassVar, Literal

from huggingface_hub.dataclasses import strict
from huggingface_hub.errors import StrictDataclassError
from transformers import PreTrainedConfig
from transformers.utils.type_validators import interval, positive_int_field

# The char CNN of the released ELMo models (§3.2 and bilm-tf's README): (width, number of filters).
ORIGINAL_FILTERS = [[1, 32], [2, 32], [3, 64], [4, 128], [5, 256], [6, 512], [7, 1024]]


@strict
class ElmoConfig(PreTrainedConfig):
    r"""
    Configuration for [`ElmoModel`] and its heads. Defaults are the original ELMo (the 93.6M-parameter biLM of the
    paper): char CNN with 2048 filters, 2 highway layers, projection 512, 2 × 4096 LSTM cells projected to 512.

    Args:
        n_characters (`int`, *optional*, defaults to 262):
            Rows of the character embedding: 261 bilm-tf characters + the padding id 0 (`options.json`:
            `char_cnn.n_characters`, which bilm-tf sets to 262 for inference).
        max_characters_per_token (`int`, *optional*, defaults to 50):
            C, characters per token (`char_cnn.max_characters_per_token`).
        character_embedding_size (`int`, *optional*, defaults to 16):
            `char_cnn.embedding.dim`.
        filters (`list[list[int]]`, *optional*):
            `[width, number]` of each convolution (`char_cnn.filters`; default: the paper's 2048 filters).
        num_highway_layers (`int`, *optional*, defaults to 2):
            `char_cnn.n_highway`.
        activation (`str`, *optional*, defaults to `"relu"`):
            Of the convolutions (`char_cnn.activation`: `"relu"` or `"tanh"`); the highway layers always use relu.
        projection_dim (`int`, *optional*, defaults to 512):
            P, the token embedding size and the LSTM projection (`lstm.projection_dim`). When it equals the number of
            filters, the token embedding has no projection (bilm-tf's `use_proj`).
        hidden_size (`int`, *optional*, defaults to 4096):
            LSTM memory cells per layer and direction (`lstm.dim`).
        num_hidden_layers (`int`, *optional*, defaults to 2):
            L, LSTM layers per direction (`lstm.n_layers`).
        cell_clip (`float`, *optional*, defaults to 3.0):
            Memory cells are clipped to [−cell_clip, cell_clip] after each step (`lstm.cell_clip`; `None`: no clip).
        proj_clip (`float`, *optional*, defaults to 3.0):
            Projected outputs are clipped likewise (`lstm.proj_clip`; `None`: no clip).
        use_skip_connections (`bool`, *optional*, defaults to `True`):
            Residual connection around every LSTM layer but the first (`lstm.use_skip_connections`).
        dropout (`float`, *optional*, defaults to 0.1):
            Dropout on each LSTM layer's input and on the top layer before the softmax while training (bilm-tf's
            `dropout`).
        stateful (`bool`, *optional*, defaults to `False`):
            Carry the LSTM states from one call to the next, row by row, as the original does (see
            `ElmoModel.reset_states`). Off by default: outputs then depend on the sentence alone.
        vocab_size (`int`, *optional*, defaults to 0):
            Words of the language-modelling softmax (`ElmoForBidirectionalLanguageModeling`; the encoder itself reads
            characters and has no vocabulary). The released checkpoints do not include their softmax.
        freeze_elmo (`bool`, *optional*, defaults to `True`):
            Task heads keep the biLM's weights fixed and learn only the scalar mix and their own layers (§3.2: "we
            freeze the weights of the biLM"). `False` fine-tunes everything.
        task_hidden_size (`int`, *optional*, defaults to 0):
            Units per direction of a BiLSTM that the task heads run over the ELMo representation (the paper adds ELMo
            to a task RNN); 0: the heads read the ELMo vectors directly.
        elmo_dropout (`float`, *optional*, defaults to 0.5):
            Dropout on the mixed ELMo representation in the task heads (§3.2: "add a moderate amount of dropout to
            ELMo"; AllenNLP's default 0.5).
        initializer_range (`float`, *optional*, defaults to 0.05):
            Convolutions ~ U(−range, range) as bilm-tf's relu CNN; other layers follow bilm-tf (see
            `ElmoPreTrainedModel._init_weights`).
        pad_token_id (`int`, *optional*):
            Unused: ELMo has no padding token; a padded position is a row of character id 0 (bilm-tf's +1 shift
            reserves 0 for it).
    """

    model_type = "elmo"
    keys_to_ignore_at_inference: ClassVar[list[str]] = [
        "hidden_states",
        "backward_logits",
        "attention_mask",
        "token_embeddings",
        "elmo_representations",
        "attentions",
    ]

    n_characters: int = positive_int_field(default=262)
    max_characters_per_token: int = positive_int_field(default=50)
    character_embedding_size: int = positive_int_field(default=16)
    filters: list[list[int]] = field(default_factory=lambda: [list(f) for f in ORIGINAL_FILTERS])
    num_highway_layers: int = interval(min=0)(default=2)
    activation: Literal["relu", "tanh"] = "relu"
    projection_dim: int = positive_int_field(default=512)
    hidden_size: int = positive_int_field(default=4096)
    num_hidden_layers: int = positive_int_field(default=2)
    cell_clip: float | int | None = 3.0
    proj_clip: float | int | None = 3.0
    use_skip_connections: bool = True
    dropout: float | int = interval(min=0.0, max=1.0, exclude_max=True)(default=0.1)
    stateful: bool = False
    vocab_size: int = interval(min=0)(default=0)
    freeze_elmo: bool = True
    task_hidden_size: int = interval(min=0)(default=0)
    elmo_dropout: float | int = interval(min=0.0, max=1.0, exclude_max=True)(default=0.5)
    initializer_range: float = 0.05
    pad_token_id: int | None = None

    @property
    def num_filters(self) -> int:
        """The char CNN's output size, Σ filters."""
        return sum(number for _, number in self.filters)

    def validate_architecture(self):
        """Part of `@strict` validation (the fields check their own ranges): filters are `[width, number]` pairs
        that fit a token, the clips positive or None."""
        if not self.filters or any(
            not isinstance(f, list | tuple) or len(f) != 2 or min(f) < 1 or f[0] > self.max_characters_per_token
            for f in self.filters
        ):
            raise ValueError(
                "`filters` must be a non-empty list of [width, number] pairs with 1 ≤ width ≤ "
                f"max_characters_per_token, got {self.filters!r}."
            )
        for name in ("cell_clip", "proj_clip"):
            if getattr(self, name) is not None and getattr(self, name) <= 0:
                raise ValueError(f"`{name}` must be positive or None, got {getattr(self, name)}.")

    @classmethod
    def from_bilm_tf_options(cls, options: str | Path | dict[str, Any], **kwargs: Any) -> "ElmoConfig":
        """The config of a bilm-tf model from its `options.json` (a path or the parsed dict); `kwargs` override.

        Raises `ValueError` naming the missing or malformed key.
        """
        if not isinstance(options, dict):
            try:
                options = json.loads(Path(options).read_text())
            except json.JSONDecodeError as error:
                raise ValueError(f"{options} is not valid JSON: {error}") from error

        def get(*keys: str, default: Any = ...) -> Any:
            value: Any = options
            for depth, key in enumerate(keys):
                if not isinstance(value, dict) or key not in value:
                    if default is not ...:
                        return default
                    raise ValueError(f"options.json has no `{'.'.join(keys[: depth + 1])}`.")
                value = value[key]
            return value

        lstm_dim, projection_dim = get("lstm", "dim"), get("lstm", "projection_dim")
        values = {
            "n_characters": get("char_cnn", "n_characters"),
            "max_characters_per_token": get("char_cnn", "max_characters_per_token"),
            "character_embedding_size": get("char_cnn", "embedding", "dim"),
            "filters": [list(f) for f in get("char_cnn", "filters")],
            "num_highway_layers": get("char_cnn", "n_highway", default=0),
            "activation": get("char_cnn", "activation", default="relu"),
            "projection_dim": projection_dim,
            "hidden_size": lstm_dim,
            "num_hidden_layers": get("lstm", "n_layers"),
            "cell_clip": get("lstm", "cell_clip", default=None),
            "proj_clip": get("lstm", "proj_clip", default=None),
            "use_skip_connections": get("lstm", "use_skip_connections", default=False),
            "dropout": get("dropout", default=0.1),
        }
        for key in ("n_characters", "max_characters_per_token", "character_embedding_size", "num_highway_layers",
                    "projection_dim", "hidden_size", "num_hidden_layers"):  # fmt: skip
            if not isinstance(values[key], int) or isinstance(values[key], bool):
                raise ValueError(f"options.json: `{key}` must be an integer, got {values[key]!r}.")
        if values["n_characters"] == 261:
            # bilm-tf trains with 261 characters and adds the padding row for inference (its README).
            values["n_characters"] = 262
        if values["n_characters"] != 262:
            raise ValueError(
                f"options.json: `char_cnn.n_characters` must be 262 (or 261), got {values['n_characters']}."
            )
        if projection_dim > lstm_dim:
            raise ValueError(
                f"options.json: `lstm.projection_dim` ({projection_dim}) exceeds `lstm.dim` ({lstm_dim})."
            )
        try:
            return cls(**{**values, **kwargs})
        except (TypeError, ValueError, StrictDataclassError) as error:
            raise ValueError(f"options.json does not describe a valid ELMo: {error}") from error


__all__ = ["ElmoConfig"]
