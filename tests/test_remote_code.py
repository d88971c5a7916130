"""A saved model carries its code: it loads with trust_remote_code=True in a process where hf_attn cannot be
imported, and gives the same outputs."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
import torch
from safetensors.torch import load_file, save_file

from tests.helpers import BLOCK_HF_ATTN, all_heads, make_inputs, tiny_config

# Runs in a fresh interpreter where hf_attn is blocked (tests/helpers.py).
CHILD = BLOCK_HF_ATTN + textwrap.dedent(
    """
    import sys

    try:
        import hf_attn  # noqa: F401
    except ModuleNotFoundError:
        pass
    else:
        raise SystemExit("hf_attn is importable in the child")

    import transformers
    from safetensors.torch import load_file, save_file

    auto_class = getattr(transformers, sys.argv[2])
    try:
        auto_class.from_pretrained(sys.argv[1])
    except ValueError as error:
        assert "trust_remote_code" in str(error), error
    else:
        raise SystemExit("loaded custom code without trust_remote_code=True")
    model = auto_class.from_pretrained(sys.argv[1], trust_remote_code=True).eval()
    assert type(model).__module__.startswith("transformers_modules"), type(model).__module__
    assert not any(name.startswith("hf_attn") for name in sys.modules)
    inputs = load_file(sys.argv[3])
    output = model(**inputs)
    save_file({"logits": output.logits.contiguous()}, sys.argv[4])
    print("remote code OK:", type(model).__name__)
    """
)

REMOTE_HEADS = [param for param in all_heads() if param.values[1].auto_class is not None]


@pytest.mark.parametrize(("architecture", "head"), REMOTE_HEADS)
def test_trust_remote_code_without_hf_attn(architecture, head, tmp_path):
    torch.manual_seed(0)
    config = tiny_config(architecture)
    model = head.model_class(config).eval()
    model.save_pretrained(tmp_path / "model")
    assert head.auto_class in model.config.auto_map
    inputs = make_inputs(head, config, [4, 2, 6])
    save_file(inputs, tmp_path / "inputs.safetensors")
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf_home"), "HF_HUB_OFFLINE": "1", "PYTHONPATH": ""}
    result = subprocess.run(
        [
            sys.executable,
            str(script),
            str(tmp_path / "model"),
            head.auto_class,
            str(tmp_path / "inputs.safetensors"),
            str(tmp_path / "outputs.safetensors"),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "remote code OK" in result.stdout
    expected = model(**inputs).logits
    torch.testing.assert_close(load_file(tmp_path / "outputs.safetensors")["logits"], expected, rtol=0, atol=1e-6)
