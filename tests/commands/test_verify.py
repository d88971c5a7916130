"""`hf-attn verify`: a saved folder checked against its integrity records, and recorded anew on purpose."""

from __future__ import annotations

import pytest
import torch

from hf_attn.cli import main


def test_verify_update_records_a_loading_file_and_refuses_a_cut_one(tmp_path):
    """`verify --update` records the weights as they are, but never a file that does not load: a cut file stays
    unrecorded, so `verify` keeps failing on it."""
    from safetensors.torch import save_file

    from hf_attn.utils.integrity import verify_file

    weights = tmp_path / "model.safetensors"
    save_file({"weight": torch.ones(8, 8)}, str(weights))
    main(["verify", str(tmp_path), "--update"])
    assert verify_file(weights)
    weights.write_bytes(weights.read_bytes()[:-16])
    with pytest.raises(SystemExit, match="does not load"):
        main(["verify", str(tmp_path), "--update"])
    with pytest.raises(SystemExit):
        main(["verify", str(tmp_path)])
