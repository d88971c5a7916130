"""`hf-attn convert ARCH ...` runs the converter of the architecture's folder: from a checkout, and from a wheel
installed in a fresh virtual environment (where `conversion/` does not exist)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hf_attn.cli import main
from hf_attn.registry.index import read_index
from hf_attn.registry.table import ARCHITECTURES
from tests.helpers import REPO_ROOT, fixture_dir


def _lin_arguments(output: Path) -> list[str]:
    fixture = fixture_dir("lin_self_attentive")
    return [
        "--checkpoint", str(fixture / "original_checkpoint.pt"), "--config", str(fixture / "original_config.json"),
        "--output", str(output), "--fixture", str(fixture),
    ]  # fmt: skip


def test_every_converter_is_a_module_of_its_folder_and_a_thin_script():
    """Each row's converter is a module of its folder with `main(argv, prog)`; `conversion/` holds only scripts
    that call it; the index `hf-attn convert` reads names the same converters."""
    converters = {name: row.converter for name, row in ARCHITECTURES.items() if row.converter}
    assert len(converters) == len(list((REPO_ROOT / "conversion").glob("convert_*.py"))) == 8
    assert {row.name: row.converter for row in read_index() if row.converter} == converters
    for name, module in converters.items():
        assert (REPO_ROOT / "hf_attn" / "models" / name / f"{module}.py").is_file()
        script = (REPO_ROOT / "conversion" / f"{module}.py").read_text()
        assert f"from hf_attn.models.{name}.{module} import main" in script and len(script.splitlines()) < 15


def test_convert_runs_the_folder_converter(tmp_path, capsys):
    main(["convert", "lin_self_attentive", *_lin_arguments(tmp_path / "out")])
    record = json.loads((tmp_path / "out" / "hf_attn_conversion.json").read_text())
    assert record["script"] == "hf_attn/models/lin_self_attentive/convert_lin_self_attentive_original_to_hf.py"
    assert max(record["max_abs_diff"].values()) <= 1e-5
    assert (tmp_path / "out" / "model.safetensors").is_file() and (tmp_path / "out" / "README.md").is_file()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["convert", "han"], r"^hf-attn convert: no converter for 'han' .*lin_self_attentive"),
        (["convert", "sgm", "--output", "x"], r"^hf-attn convert sgm: .*required: --checkpoint"),
    ],
)
def test_convert_mistakes_are_one_line(argv, message):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert "\n" not in str(exit_info.value.code)
    assert re.search(message, str(exit_info.value.code)), exit_info.value.code


def test_a_wheel_converts_a_fixture_in_a_fresh_environment(tmp_path):
    """The wheel built from the repository, installed alone in a new virtual environment (its dependencies seen
    from the test's environment, hf_attn not), converts the Lin et al. fixture with `hf-attn convert`, checking
    parity, from a folder outside the checkout."""
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(REPO_ROOT / name, source / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for folder in ("hf_attn", "model_cards"):
        shutil.copytree(REPO_ROOT / folder, source / folder, symlinks=True, ignore=ignore)
    wheels = tmp_path / "wheels"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", wheels, source], check=True, timeout=600)
    [wheel] = wheels.glob("hf_attn-*.whl")
    environment = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", environment], check=True, timeout=300)
    python = environment / "bin" / "python"
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    dependencies = str(Path(__import__("torch").__file__).parents[1])  # this environment's site-packages
    # The test environment's packages, after the new one's own; its .pth files (hf_attn's editable finder) unread.
    (Path(site) / "dependencies.pth").write_text(dependencies + "\n")
    subprocess.run([*pip, "--python", python, "install", "--no-deps", "--no-index", wheel], check=True, timeout=600)
    work = tmp_path / "work"
    work.mkdir()
    where = subprocess.run([python, "-c", "import hf_attn; print(hf_attn.__file__)"], cwd=work, capture_output=True,
                           text=True, check=True).stdout  # fmt: skip
    assert where.startswith(str(environment)), where
    result = subprocess.run(
        [environment / "bin" / "hf-attn", "convert", "lin_self_attentive", *_lin_arguments(work / "converted")],
        cwd=work, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-4000:]
    record = json.loads((work / "converted" / "hf_attn_conversion.json").read_text())
    assert max(record["max_abs_diff"].values()) <= 1e-5
    assert (work / "converted" / "README.md").is_file()  # the card template shipped in the wheel
