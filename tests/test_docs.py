"""The manual (`docs/`, `make docs`): it builds with every warning an error, holds a page per architecture and an API
reference page per shared module, its architecture table is the README's, and headless Chromium opens its pages."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

from hf_attn.registry.table import ARCHITECTURES
from tests.helpers import REPO_ROOT, chromium


def _pages_module():
    spec = importlib.util.spec_from_file_location("architecture_pages", REPO_ROOT / "docs" / "architecture_pages.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The manual built as `make docs` builds it (`--strict`), into a folder of the test's."""
    site = tmp_path_factory.mktemp("site")
    mkdocs = [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(REPO_ROOT / "docs" / "mkdocs.yml")]
    result = subprocess.run([*mkdocs, "--site-dir", str(site)], capture_output=True, text=True, timeout=600,
                            env={**os.environ, "DISABLE_MKDOCS_2_WARNING": "true"})  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert "WARNING" not in result.stderr, result.stderr[-3000:]
    return site


@pytest.mark.xdist_group("docs")
def test_the_manual_has_a_page_per_architecture_and_the_api_reference(site):
    for name, architecture in ARCHITECTURES.items():
        page = (site / "architectures" / f"{name}.html").read_text()
        assert architecture.display_name in page and architecture.paper.title in page, name
        assert architecture.config_class.__name__ in page  # its config fields, from the config's docstring
        for head in architecture.heads:
            assert head.model_class.__name__ in page, (name, head)
    table = (site / "architectures" / "index.html").read_text()
    assert all(f"{name}.html" in table for name in ARCHITECTURES)
    for module in ("hf_attn.tasks.heads", "hf_attn.commands.train", "hf_attn.data.files", "hf_attn.layers.masking"):
        assert (site / "reference" / f"{module}.html").is_file(), module
    for page in ("index", "own-data", "hub", "pictures", "contract"):
        assert (site / f"{page}.html").is_file(), page


def test_every_architecture_has_its_picture_and_its_usage():
    """None of the manual's architecture pages lacks its picture (`docs/attention/<name>.png`) or how to use it
    (`docs/usage/<name>.md`), and no picture or usage page names an architecture that is not there."""
    pages = _pages_module()
    for folder, suffix in ((pages.PICTURES, ".png"), (pages.USAGE, ".md")):
        assert sorted(path.stem for path in folder.glob(f"*{suffix}")) == sorted(ARCHITECTURES), folder


def test_the_readme_table_is_the_registrys():
    """The README's architecture table is `docs/architecture_pages.py`'s (`--readme` writes it)."""
    pages = _pages_module()
    readme = (REPO_ROOT / "README.md").read_text()
    assert pages.readme_with_table(readme) == readme, "run `python docs/architecture_pages.py --readme`"
    assert all(f"| `{name}` |" in readme for name in ARCHITECTURES)
    with pytest.raises(ValueError, match="no <!-- architecture table"):
        pages.readme_with_table("# a README without the markers\n")


@pytest.mark.xdist_group("docs")
def test_headless_chromium_opens_the_manual(site):
    browser = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--dump-dom"]
    page = site / "architectures" / "han.html"
    dom = subprocess.run([*browser, page.as_uri()], capture_output=True, text=True, timeout=120).stdout
    assert ARCHITECTURES["han"].paper.title in dom and "HanForDocumentClassification" in dom
    assert 'href="../reference/index.html"' in dom  # the navigation reaches the API reference
