"""The `# Copied from hf_attn.layers...` blocks in model files stay identical to their source."""

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
