"""The Auto class each hf_attn model class is saved under, so that a saved folder carries its `auto_map`.

transformers writes `auto_map` into a saved `config.json` (and copies the model's code) for a class marked with
`register_for_auto_class`; users without hf_attn then load the folder with `trust_remote_code=True`. The mark is the
registry row's Auto class for the head. `import hf_attn` fills `AUTO_CLASSES` from the rows' source
(`hf_attn.registry.auto`, milliseconds, no model imported), and `save_pretrained` (`SafetensorsLoadingMixin`)
marks the model's class and its config's class before writing, however the model was built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from transformers import PreTrainedModel

# "module.Class" of a model class -> the Auto class it registers under (`AutoModel` for a base model).
AUTO_CLASSES: dict[str, str] = {}


def mark_for_auto_class(model: PreTrainedModel) -> None:
    """Marks `type(model)` with its Auto class and its config's class with `AutoConfig`, where not yet marked."""
    model_class, config_class = type(model), type(model.config)
    auto_class = AUTO_CLASSES.get(f"{model_class.__module__}.{model_class.__qualname__}")
    if auto_class is not None and model_class._auto_class is None:
        model_class.register_for_auto_class(auto_class)
    if auto_class is not None and config_class._auto_class is None:
        config_class.register_for_auto_class()
