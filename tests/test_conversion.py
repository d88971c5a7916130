"""The converters' shared steps (hf_attn.conversion): a conversion never replaces a saved model silently."""

from __future__ import annotations

import pytest
import torch


def test_a_conversion_into_a_folder_holding_a_model_is_refused(tmp_path):
    from conversion.convert_lin_self_attentive_original_to_hf import main

    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "model.safetensors").write_bytes(b"")
    with pytest.raises(FileExistsError, match=r"already holds a saved model.*--overwrite"):
        main(["--checkpoint", str(tmp_path / "missing.pt"), "--output", str(tmp_path)])
    with pytest.raises(FileNotFoundError):  # with --overwrite it goes on (and finds no checkpoint)
        main(["--checkpoint", str(tmp_path / "missing.pt"), "--output", str(tmp_path), "--overwrite"])


def test_parity_is_absolute_and_where_asked_relative_to_the_size_of_the_values():
    """`max_abs_diffs`: within `atol` passes; a value of size 14 off by 1.5e-5 (float32 rounding of a sum over
    features, some ten ulps) passes with `rtol` 1e-5 and not without; beyond both, the tensor is named."""
    from hf_attn.conversion import max_abs_diffs

    expected = {"logits": torch.tensor([-14.0, -0.5]), "small": torch.tensor([0.25])}
    near = {"logits": torch.tensor([-14.0 + 1.5e-5, -0.5 + 5e-6]), "small": torch.tensor([0.25 + 5e-6])}
    with pytest.raises(AssertionError, match=r"parity beyond atol=1e-05, rtol=0.0: \{'logits'"):
        max_abs_diffs(near, expected, atol=1e-5)
    diffs = max_abs_diffs(near, expected, atol=1e-5, rtol=1e-5)
    assert diffs["logits"] == pytest.approx(1.5e-5, rel=0.1) and diffs["small"] == pytest.approx(5e-6, rel=0.1)
    far = {**near, "small": torch.tensor([0.25 + 1e-4])}
    with pytest.raises(AssertionError, match=r"\{'small'"):
        max_abs_diffs(far, expected, atol=1e-5, rtol=1e-5)
