"""Safetensors-only loading (`hf_attn.utils.loading.SafetensorsLoadingMixin`): a folder that holds only pickle weights
is refused, and so is `use_safetensors=False`, for every head: loading never unpickles."""

from __future__ import annotations

import pytest
import torch

from tests.helpers import all_heads, tiny_config


@pytest.mark.parametrize(("architecture", "head"), all_heads())
def test_loading_refuses_pickle(architecture, head, tmp_path):
    torch.manual_seed(0)
    model = head.model_class(tiny_config(architecture)).eval()
    model.config.save_pretrained(tmp_path)
    torch.save(model.state_dict(), tmp_path / "pytorch_model.bin")
    with pytest.raises(OSError, match=r"model\.safetensors"):
        head.model_class.from_pretrained(tmp_path)
    with pytest.raises(ValueError, match="safetensors only"):
        head.model_class.from_pretrained(tmp_path, use_safetensors=False)
