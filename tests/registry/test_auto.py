"""`import hf_attn` is instant and still registers everything: configs, tokenizers, models and pipelines are known to
transformers' Auto classes however the imports are ordered, a model's module loads only when an Auto class looks it
up, and the package's public names are the registry's."""

from __future__ import annotations

import importlib
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import hf_attn
from hf_attn.registry.auto import _ClassesOnDemand
from hf_attn.registry.table import ARCHITECTURES


def _run(code: str) -> str:
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-4000:]
    return result.stdout


def test_import_hf_attn_loads_neither_torch_nor_transformers():
    out = _run(
        """
        import sys
        import hf_attn
        print(sorted({"torch", "transformers", "datasets", "hf_attn.registry.table"} & set(sys.modules)))
        """
    )
    assert out.strip() == "[]"


SCRIPT = """
import sys
{first}
{second}
from transformers import AutoConfig, AutoModel, AutoModelForSequenceClassification, AutoTokenizer, pipeline
from transformers.pipelines import PIPELINE_REGISTRY

config = AutoConfig.for_model("han", vocab_size=30)
assert type(config).__name__ == "HanConfig", type(config)
loaded = sorted(name for name in sys.modules if name.startswith("hf_attn.models.") and ".modeling_" in name)
assert loaded == [], loaded  # no model imported before one is looked up
model = AutoModelForSequenceClassification.from_config(config)
assert type(model).__name__ == "HanForDocumentClassification", type(model)
assert type(AutoModel.from_config(config)).__name__ == "HanModel"
loaded = sorted(name for name in sys.modules if name.startswith("hf_attn.models.") and ".modeling_" in name)
assert loaded == ["hf_attn.models.han.modeling_han"], loaded  # only the model looked up
model.save_pretrained("saved")
from transformers.models.auto.tokenization_auto import TOKENIZER_MAPPING
tokenizer = TOKENIZER_MAPPING[type(config)]  # the class, or (slow, fast) in older transformers
assert "DocumentTokenizerFast" in str(tokenizer), tokenizer
assert {{"hf-attn-translation", "hf-attn-few-shot"}} <= set(PIPELINE_REGISTRY.get_supported_tasks())
reloaded = AutoModelForSequenceClassification.from_pretrained("saved")
assert type(reloaded).__name__ == "HanForDocumentClassification"
import json
auto_map = json.load(open("saved/config.json"))["auto_map"]
assert auto_map["AutoModelForSequenceClassification"].endswith("HanForDocumentClassification"), auto_map
print("OK")
"""


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("import hf_attn", "import transformers"),
        # transformers' Auto modules and pipelines loaded before hf_attn: registered at `import hf_attn`
        ("from transformers import AutoConfig, AutoModel, AutoTokenizer, pipeline", "import hf_attn"),
        ("from transformers import AutoTokenizer", "import hf_attn"),
    ],
    ids=["hf_attn-first", "transformers-first", "tokenizers-first"],
)
def test_auto_classes_know_every_architecture_in_any_import_order(first, second, tmp_path):
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(first=first, second=second)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0 and "OK" in out.stdout, out.stderr[-4000:]


def test_the_auto_mappings_give_classes_however_they_are_read():
    """Every way of reading a mapping of registered classes gives classes, never a pending entry: lookups, `get`,
    `values`, `items` and a `dict(...)` copy (what transformers pickles)."""
    from transformers import AutoModel

    mapping = AutoModel._model_mapping
    assert isinstance(mapping._extra_content, _ClassesOnDemand)
    for row in ARCHITECTURES.values():
        assert row.config_class in mapping and mapping[row.config_class] is row.base_model_class
        assert mapping.get(row.config_class, None) is row.base_model_class
    for copy in (dict(mapping._extra_content), dict(mapping._extra_content.items())):
        assert all(isinstance(value, type) for value in copy.values())
    assert {row.base_model_class for row in ARCHITECTURES.values()} <= set(mapping._extra_content.values())


def test_the_public_names_are_each_folders_own():
    """`hf_attn.PUBLIC`: hf_attn's own names and each model folder's `__all__` (read without importing), every one
    resolving to the object its module defines; every row's config, base model and heads among them; `__all__`,
    `dir()` and `from hf_attn import *` agree."""
    public = hf_attn.PUBLIC
    for row in ARCHITECTURES.values():
        for obj in row.public_objects:
            assert getattr(hf_attn, obj.__name__) is obj and public[obj.__name__] == obj.__module__, obj.__name__
    for name, module in public.items():
        assert getattr(hf_attn, name) is getattr(importlib.import_module(module), name), name
    models = Path(hf_attn.__file__).parent / "models"
    folders = {path.name for path in models.iterdir() if (path / "__init__.py").is_file()}
    assert {module.split(".")[2] for module in public.values() if module.startswith("hf_attn.models.")} == folders
    assert set(hf_attn.__all__) == set(public) and set(public) <= set(dir(hf_attn))
    namespace: dict = {}
    exec("from hf_attn import *", namespace)
    assert set(public) <= set(namespace)
    with pytest.raises(AttributeError, match="no attribute 'NoSuchModel'"):
        hf_attn.NoSuchModel  # noqa: B018


@pytest.mark.parametrize(
    ("files", "message"),
    [({"__init__.py": '"""A paper."""\n'}, r"x/__init__\.py declares no `__all__`"),
     ({"__init__.py": '__all__ = ["XModel"]\n', "modeling_x.py": "__all__ = []\n"},
      r"'XModel' is public, but no module of the folder lists it"),
     ({"__init__.py": '__all__ = ["XModel"]\n', "a.py": '__all__ = ["XModel"]\n', "b.py": '__all__ = ["XModel"]\n'},
      r"a, b all list it"),
     ({"__init__.py": "__all__ = NAMES\n"}, r"must be a literal list")],
)  # fmt: skip
def test_a_folder_whose_public_names_do_not_resolve_is_named(tmp_path, files, message):
    from hf_attn.registry.index import public_names

    (tmp_path / "x").mkdir()
    for name, text in files.items():
        (tmp_path / "x" / name).write_text(text)
    with pytest.raises(ValueError, match=message):
        public_names(tmp_path, "pkg.models")
    (tmp_path / "x" / "__init__.py").write_text('__all__ = ["XModel"]\n')
    (tmp_path / "x" / "modeling_x.py").write_text('__all__ = ["XModel"]\n')
    for name in set(files) - {"__init__.py", "modeling_x.py"}:
        (tmp_path / "x" / name).unlink()
    assert public_names(tmp_path, "pkg.models") == {"XModel": "pkg.models.x.modeling_x"}


def test_register_all_is_idempotent_and_eager():
    from transformers import AutoConfig

    hf_attn.register_all()
    hf_attn.register_all()
    for name, row in ARCHITECTURES.items():
        assert type(AutoConfig.for_model(name)) is row.config_class
