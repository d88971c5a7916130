"""The Auto class a saved folder names (`hf_attn.utils.auto_classes`): every head with an Auto class in its row is
marked with it once saved, so its `config.json` carries the `auto_map` users without hf_attn load it by."""

from __future__ import annotations

import json

import pytest
import torch

from hf_attn.utils.auto_classes import AUTO_CLASSES, mark_for_auto_class
from tests.helpers import all_heads, tiny_config


@pytest.mark.parametrize(("architecture", "head"), all_heads())
def test_a_saved_heads_auto_map_names_its_rows_auto_class(architecture, head, tmp_path):
    key = f"{head.model_class.__module__}.{head.model_class.__qualname__}"
    assert AUTO_CLASSES.get(key) == head.auto_class
    torch.manual_seed(0)
    model = head.model_class(tiny_config(architecture))
    mark_for_auto_class(model)
    model.save_pretrained(tmp_path)
    auto_map = json.loads((tmp_path / "config.json").read_text()).get("auto_map", {})
    if head.auto_class is None:
        return
    assert auto_map[head.auto_class].endswith(f".{head.model_class.__name__}")
    assert auto_map["AutoConfig"].endswith(f".{architecture.config_class.__name__}")
