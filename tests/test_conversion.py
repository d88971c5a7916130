"""The converters' shared steps (hf_attn.conversion): a conversion never replaces a saved model silently."""

from __future__ import annotations

import pytest


def test_a_conversion_into_a_folder_holding_a_model_is_refused(tmp_path):
    from conversion.convert_lin_self_attentive_original_to_hf import main

    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "model.safetensors").write_bytes(b"")
    with pytest.raises(FileExistsError, match=r"already holds a saved model.*--overwrite"):
        main(["--checkpoint", str(tmp_path / "missing.pt"), "--output", str(tmp_path)])
    with pytest.raises(FileNotFoundError):  # with --overwrite it goes on (and finds no checkpoint)
        main(["--checkpoint", str(tmp_path / "missing.pt"), "--output", str(tmp_path), "--overwrite"])
