"""A saved model carries its code: it loads with trust_remote_code=True in a process where hf_attn cannot be
imported, and gives the same outputs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from tests.helpers import BLOCK_HF_ATTN, REPO_ROOT, all_heads, make_inputs, tiny_config

# Runs in a fresh interpreter where hf_attn (tests/helpers.py) and triton are blocked, over every saved model at once
# (an interpreter importing torch and transformers takes ~8 s): each job's outputs, or the error it met.
CHILD = BLOCK_HF_ATTN + textwrap.dedent(
    """
    class BlockTriton(importlib.abc.MetaPathFinder):  # a user's machine without triton: CPU-only, macOS
        def find_spec(self, name, path=None, target=None):
            if name == "triton" or name.startswith("triton."):
                raise ModuleNotFoundError(f"No module named {name!r} (blocked by the test)")
            return None

    sys.meta_path.insert(0, BlockTriton())

    import json
    import sys
    import traceback

    try:
        import hf_attn  # noqa: F401
    except ModuleNotFoundError:
        pass
    else:
        raise SystemExit("hf_attn is importable in the child")

    import transformers
    from safetensors.torch import load_file, save_file

    errors = {}
    for job in json.loads(sys.argv[1]):
        try:
            if job["auto_class"] is None:  # no Auto class fits (pairs, few-shot): the class from the folder's code
                from transformers.dynamic_module_utils import get_class_from_dynamic_module

                head_class = get_class_from_dynamic_module(job["class_reference"], job["model"])
                model = head_class.from_pretrained(job["model"]).eval()
            else:
                auto_class = getattr(transformers, job["auto_class"])
                try:
                    auto_class.from_pretrained(job["model"])
                except ValueError as error:
                    assert "trust_remote_code" in str(error), error
                else:
                    raise AssertionError("loaded custom code without trust_remote_code=True")
                model = auto_class.from_pretrained(job["model"], trust_remote_code=True).eval()
            assert type(model).__module__.startswith("transformers_modules"), type(model).__module__
            assert not any(name.startswith("hf_attn") for name in sys.modules)
            output = model(**load_file(job["inputs"]))
            save_file({"logits": output.logits.contiguous()}, job["outputs"])
            errors[job["id"]] = None
        except Exception:
            errors[job["id"]] = traceback.format_exc()
    print("REMOTE " + json.dumps(errors))
    """
)

REMOTE_HEADS = all_heads()  # every head: by its Auto class, or by its class in the folder's code


@pytest.fixture(scope="session")
def remote_loads(request, tmp_path_factory) -> dict:
    """Every selected head of `REMOTE_HEADS` saved with its code, loaded by one child process: by parameter id,
    the expected logits, the child's logits file and its error (`None`)."""
    selected = {
        item.callspec.id
        for item in request.session.items
        if item.originalname == "test_trust_remote_code_without_hf_attn"
    }
    folder = tmp_path_factory.mktemp("remote_code")
    jobs, expected = [], {}
    for param in (param for param in REMOTE_HEADS if param.id in selected):
        architecture, head = param.values
        torch.manual_seed(0)
        config = tiny_config(architecture)
        model = head.model_class(config).eval()
        model.save_pretrained(folder / param.id / "model")
        assert head.auto_class is None or head.auto_class in model.config.auto_map
        inputs = make_inputs(head, config, [4, 2, 6])
        save_file(inputs, folder / param.id / "inputs.safetensors")
        with torch.no_grad():
            expected[param.id] = model(**inputs).logits
        reference = f"{head.model_class.__module__.rpartition('.')[2]}.{head.model_class.__name__}"
        jobs.append({"id": param.id, "auto_class": head.auto_class, "class_reference": reference,
                     "model": str(folder / param.id / "model"),
                     "inputs": str(folder / param.id / "inputs.safetensors"),
                     "outputs": str(folder / param.id / "outputs.safetensors")})  # fmt: skip
    (folder / "child.py").write_text(CHILD)
    env = {**os.environ, "HF_HOME": str(folder / "hf_home"), "HF_HUB_OFFLINE": "1", "PYTHONPATH": ""}
    result = subprocess.run([sys.executable, str(folder / "child.py"), json.dumps(jobs)], cwd=folder, env=env,
                            capture_output=True, text=True, timeout=600, check=False)  # fmt: skip
    assert result.returncode == 0 and "REMOTE " in result.stdout, result.stdout[-3000:] + result.stderr[-6000:]
    errors = json.loads(result.stdout[result.stdout.rindex("REMOTE ") :].splitlines()[0].removeprefix("REMOTE "))
    return {job["id"]: (expected[job["id"]], job["outputs"], errors[job["id"]]) for job in jobs}


@pytest.mark.xdist_group("remote_code")  # one worker runs the child for all of them
@pytest.mark.parametrize(("architecture", "head"), REMOTE_HEADS)
def test_trust_remote_code_without_hf_attn(remote_loads, request, architecture, head):
    expected, outputs, error = remote_loads[request.node.callspec.id]
    assert error is None, error
    torch.testing.assert_close(load_file(outputs)["logits"], expected, rtol=0, atol=1e-6)


@pytest.mark.parametrize(("architecture", "head"), REMOTE_HEADS)
def test_saved_code_is_written_from_the_single_sources_and_deterministic(tmp_path, architecture, head):
    """The folder's code is the model's own files plus the hf_attn modules they import, flat, with those imports
    made relative; it imports no hf_attn module (outside an optional `try`), and two saves write the same bytes."""
    from transformers.dynamic_module_utils import get_imports, get_relative_import_files

    torch.manual_seed(0)
    model = head.model_class(tiny_config(architecture))
    first, second = tmp_path / "first", tmp_path / "second"
    model.save_pretrained(first)
    model.save_pretrained(second)
    code = sorted(path.name for path in first.glob("*.py"))
    assert code == sorted(path.name for path in second.glob("*.py"))
    for name in code:
        assert (first / name).read_bytes() == (second / name).read_bytes(), name
        assert not [module for module in get_imports(first / name) if module.startswith("hf_attn")], name
    module = type(model).__module__.rsplit(".", 1)[-1]
    reachable = {Path(path).name for path in get_relative_import_files(first / f"{module}.py")}
    assert set(code) == {f"{module}.py"} | reachable  # nothing written that the model does not import
    assert not [name for name in code if name == "common.py"]


def test_no_committed_copies():
    """Each piece of code is held once: no copy marker (transformers' "Copied from" comment) and no `common.py` of
    copies in the repository."""
    marked = [
        str(path.relative_to(REPO_ROOT))
        for folder in ("hf_attn", "conversion", "benchmarks", "tests")
        for path in (REPO_ROOT / folder).rglob("*.py")
        if "# Copied " + "from" in path.read_text(encoding="utf-8") or path.name == "common.py"
    ]
    assert not marked, marked
