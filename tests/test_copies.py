"""The `# Copied from hf_attn...` blocks of the package stay identical to their source."""

from hf_attn.utils.copies import check_copies, check_file


def test_every_copy_matches_its_source():
    assert check_copies() == []


def test_a_drifted_copy_is_found_and_fixed(tmp_path):
    drifted = tmp_path / "modeling_x.py"
    drifted.write_text(
        "import torch\n\n\n# Copied from hf_attn.layers.masking.masked_softmax\n"
        "def masked_softmax(scores, mask, dim=-1):\n    return scores\n\n\nVALUE = 1\n"
    )
    assert [m.source for m in check_file(drifted)] == ["hf_attn.layers.masking.masked_softmax"]
    check_file(drifted, fix=True)
    assert check_file(drifted) == []
    text = drifted.read_text()
    assert "torch.finfo(scores.dtype).min" in text and text.endswith("VALUE = 1\n")


def test_methods_and_renamed_copies_are_checked(tmp_path):
    twin = tmp_path / "modeling_y.py"
    marker = "    # Copied from hf_attn.models.han.modeling_han.HanPreTrainedModel._init_weights with Han->Twin\n"
    twin.write_text(f"class Twin:\n{marker}    def _init_weights(self, module):\n        pass\n")
    assert [m.source for m in check_file(twin)] == ["hf_attn.models.han.modeling_han.HanPreTrainedModel._init_weights"]
    check_file(twin, fix=True)
    assert check_file(twin) == []
    assert "        bound = self.config.initializer_range" in twin.read_text()  # re-indented as a method


def test_model_files_hold_no_hub_or_hashing_code():
    from hf_attn.utils.copies import PACKAGE_ROOT

    for path in (PACKAGE_ROOT / "models").rglob("*.py"):
        text = path.read_text()
        for word in ("hashlib", "try_to_load_from_cache", "evict_corrupt_downloads", "import os"):
            assert word not in text, f"{path} holds {word}"
