"""transformers' own test files, for the installed transformers version, importable as a package.

transformers publishes its common test mixins (`ModelTesterMixin` in `tests/test_modeling_common.py`) only in its
source distribution. `load_transformers_tests()` downloads that distribution from the package index the first time
(`pip download`, about 10 MB), keeps its `tests/` folder in a cache outside the repository and imports the folder as
the package `transformers_common_tests`. Nothing of it is committed.

The distribution's test files import a few modules it does not ship (`tests/exporters/test_export.py`,
`tests/generation/test_utils.py`, `tests/utils/test_configuration_utils.py`). Where the cached folder lacks one, our
stand-in from `tests/transformers_stand_ins.py` answers the import instead. A checkout of transformers' repository,
named by `HF_ATTN_TRANSFORMERS_TESTS=/path/to/transformers/tests`, has them all and is used as it is.

Cache: `$HF_ATTN_TEST_CACHE` (default `~/.cache/hf_attn/tests`), one folder per transformers version.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import tarfile
import tempfile
import types
from pathlib import Path

import transformers
from filelock import FileLock

PACKAGE = "transformers_common_tests"
CACHE = Path(os.environ.get("HF_ATTN_TEST_CACHE", Path.home() / ".cache" / "hf_attn" / "tests"))

# Modules the source distribution's tests import but do not ship -> the stand-in module that answers in their place.
STAND_INS = {
    "exporters.test_export": "tests.transformers_stand_ins",
    "generation.test_utils": "tests.transformers_stand_ins",
    "utils.test_configuration_utils": "tests.transformers_stand_ins",
}


def transformers_tests_folder(version: str = transformers.__version__) -> Path:
    """The `tests/` folder of transformers `version`'s source distribution, downloaded once into the cache."""
    if override := os.environ.get("HF_ATTN_TRANSFORMERS_TESTS"):
        return Path(override)
    target = CACHE / f"transformers-{version}" / "tests"
    if (target / "test_modeling_common.py").exists():
        return target
    CACHE.mkdir(parents=True, exist_ok=True)
    with FileLock(str(CACHE / f"transformers-{version}.lock")):  # the other pytest-xdist worker downloads it too
        if (target / "test_modeling_common.py").exists():
            return target
        with tempfile.TemporaryDirectory(dir=CACHE) as scratch:
            pip = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "--quiet"]
            download = subprocess.run(
                [*pip, "--dest", scratch, f"transformers=={version}"],
                capture_output=True,
                text=True,
            )
            if download.returncode != 0:
                raise RuntimeError(
                    f"could not download transformers {version}'s source distribution from the package index "
                    f"(needed for its common tests): {download.stderr.strip()[-2000:]}\nSet "
                    "HF_ATTN_TRANSFORMERS_TESTS to the tests/ folder of a transformers checkout of that version."
                )
            (archive,) = Path(scratch).glob("transformers-*.tar.gz")
            unpacked = Path(scratch) / "unpacked"
            with tarfile.open(archive) as tar:
                members = [m for m in tar.getmembers() if m.name.split("/")[1:2] == ["tests"]]
                tar.extractall(unpacked, members=members, filter="data")
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(unpacked / f"transformers-{version}" / "tests", target)  # atomic: no half-written folder
    return target


def load_transformers_tests(module: str = "test_modeling_common") -> types.ModuleType:
    """Import `module` of transformers' test folder (e.g. `test_modeling_common`), stand-ins in place of the
    modules the folder lacks."""
    folder = transformers_tests_folder()
    if PACKAGE not in sys.modules:
        package = types.ModuleType(PACKAGE)
        package.__path__ = [str(folder)]
        sys.modules[PACKAGE] = package
        for name, stand_in in STAND_INS.items():
            if not (folder / (name.replace(".", "/") + ".py")).exists():
                parent = f"{PACKAGE}.{name.rsplit('.', 1)[0]}"
                sys.modules.setdefault(parent, types.ModuleType(parent)).__path__ = []
                sys.modules[f"{PACKAGE}.{name}"] = importlib.import_module(stand_in)
    return importlib.import_module(f"{PACKAGE}.{module}")
