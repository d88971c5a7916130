"""hf_attn's architectures in transformers' Auto classes and pipelines, registered as transformers loads them.

`import hf_attn` imports neither torch nor transformers (a command line that only lists or asks for help should not
wait seconds for them). It installs an import hook instead: as each of transformers' modules below finishes
loading, what it maps is registered, before any caller can look anything up in it.

| transformers module (once loaded)            | registered                                                       |
|----------------------------------------------|------------------------------------------------------------------|
| `transformers.models.auto.configuration_auto`| each config under its `model_type` (`AutoConfig`), and the check  |
|                                              | of an unknown `model_type` (`hf_attn.utils.model_type`)           |
| `transformers.models.auto.tokenization_auto` | each config's tokenizer class (`AutoTokenizer`)                   |
| `transformers.models.auto.modeling_auto`     | each model class under its Auto class, imported on first lookup   |
| `transformers.pipelines` (and ours)          | hf_attn's pipelines (`hf_attn.pipelines`)                         |

A module loaded before `import hf_attn` registers at once. Which class goes where is read from the registry index
(the folders' `architecture.py` as source, `hf_attn.registry.index`), so registering imports configs and tokenizers
only. A model's module is imported when an Auto class first looks up its config, as transformers does for its own
models: the Auto mappings keep registered classes in a dict (`_LazyAutoMapping._extra_content`, transformers'
private field, the one `register` fills), which here resolves a class on first lookup (`_ClassesOnDemand`). Should a
transformers version change that field, every class is imported and registered at once instead (correct, slower).

The trade-off, kept on purpose: the public API (`AutoModelForX.register(config_class, model_class)`) takes the model
class itself, so registering through it alone would import every architecture's modeling code (torch, seconds) at
the first Auto lookup of any model, ours or transformers'. Filling the private dict with classes resolved on demand
costs a dependency on a field transformers does not promise; the fallback above keeps it correct when the field
changes, and `make test-oldest` and `make test` run the registration on the oldest and the newest supported
transformers.
"""

from __future__ import annotations

import functools
import importlib
import importlib.abc
import importlib.machinery
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from .index import ClassRef, IndexRow, read_index

CONFIGURATION_AUTO = "transformers.models.auto.configuration_auto"
TOKENIZATION_AUTO = "transformers.models.auto.tokenization_auto"
MODELING_AUTO = "transformers.models.auto.modeling_auto"
PIPELINES = "transformers.pipelines"
OUR_PIPELINES = "hf_attn.pipelines"  # subclasses transformers' pipelines: either module may load the other
_EXECUTING: set[str] = set()  # the hooked modules whose code is running now


def _load(ref: ClassRef) -> type:
    return getattr(importlib.import_module(ref.module), ref.name)


@functools.cache
def _rows() -> list[IndexRow]:
    return read_index()


def register_configs(configuration_auto: ModuleType) -> None:
    """`AutoConfig` knows every hf_attn `model_type`; a folder naming an unknown one is reported as such."""
    from ..utils.model_type import install_model_type_check

    known = {}
    for row in _rows():
        config_class = _load(row.config_class)
        configuration_auto.AutoConfig.register(row.name, config_class, exist_ok=True)
        config_class.register_for_auto_class()  # saved configs carry `auto_map` (trust_remote_code users)
        known[row.name] = config_class.__name__
    install_model_type_check(known)


def register_tokenizers(tokenization_auto: ModuleType) -> None:
    """`AutoTokenizer` gives each architecture's tokenizer class for its config."""
    configuration_auto = importlib.import_module(CONFIGURATION_AUTO)
    for row in _rows():
        config_class = configuration_auto.CONFIG_MAPPING[row.name]
        kind = _load(row.tokenizer)  # the row's TokenizerKind object, by its module and name
        tokenizer = kind.tokenizer_class  # marked for AutoTokenizer by its class (`_auto_class`)
        tokenization_auto.AutoTokenizer.register(config_class, tokenizer_class=tokenizer, exist_ok=True)


@dataclass(frozen=True)
class _OnDemand:
    """A model class registered under `auto_class`, imported when first looked up."""

    ref: ClassRef
    auto_class: str

    def load(self) -> type:
        model_class = _load(self.ref)
        model_class.register_for_auto_class(self.auto_class)
        return model_class


class _ClassesOnDemand(dict):
    """An Auto mapping's registered classes (config class -> model class) whose `_OnDemand` entries are imported on
    first lookup; every way of reading the dict (`[]`, `get`, `values`, `items`, `dict(...)`) sees classes."""

    def __getitem__(self, key: Any) -> Any:
        value = super().__getitem__(key)
        if isinstance(value, _OnDemand):
            value = value.load()
            super().__setitem__(key, value)
        return value

    def get(self, key: Any, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def values(self) -> list[Any]:  # type: ignore[override]
        return [self[key] for key in self]

    def items(self) -> list[tuple[Any, Any]]:  # type: ignore[override]
        return [(key, self[key]) for key in self]

    def __iter__(self):  # a Python-level __iter__: `dict(self)` then copies through __getitem__, not raw entries
        return super().__iter__()


def register_models(modeling_auto: ModuleType) -> None:
    """Every base model (`AutoModel`) and head (its row's Auto class), imported on first lookup."""
    configuration_auto = importlib.import_module(CONFIGURATION_AUTO)
    for row in _rows():
        config_class = configuration_auto.CONFIG_MAPPING[row.name]
        entries = [(row.base_model_class, "AutoModel")]
        entries += [(head.model_class, head.auto_class) for head in row.heads if head.auto_class is not None]
        for ref, auto_class in entries:
            mapping = getattr(modeling_auto, auto_class)._model_mapping
            extra = getattr(mapping, "_extra_content", None)
            if type(extra) is dict:
                mapping._extra_content = extra = _ClassesOnDemand(extra)
            if isinstance(extra, _ClassesOnDemand):
                if config_class not in extra:
                    dict.__setitem__(extra, config_class, _OnDemand(ref, auto_class))
            else:  # transformers changed its mapping: register the class itself (module docstring)
                getattr(modeling_auto, auto_class).register(config_class, _OnDemand(ref, auto_class).load(), True)


def few_shot_heads() -> list[type]:
    """The heads whose inputs are few-shot episodes (what `pipeline("hf-attn-few-shot", model=...)` loads; called
    when it loads one, so the rows load then)."""
    from ..data.kinds import EPISODES
    from .table import ARCHITECTURES

    return [head.model_class for row in ARCHITECTURES.values() for head in row.heads if head.inputs is EPISODES]


def register_pipelines(_: ModuleType) -> None:
    """hf_attn's pipelines (`hf-attn-translation`, `hf-attn-few-shot`) and its extensions of transformers' own, once
    both `transformers.pipelines` and `hf_attn.pipelines` have loaded (this runs as each finishes: `import
    hf_attn.pipelines` loads transformers' first, and then registers as it finishes itself)."""
    if PIPELINES not in sys.modules or PIPELINES in _EXECUTING:
        return
    if OUR_PIPELINES in _EXECUTING:
        return  # it is loading transformers' pipelines: it registers as it finishes
    importlib.import_module(OUR_PIPELINES).register_pipelines(few_shot_heads)


HOOKS: dict[str, Callable[[ModuleType], None]] = {
    CONFIGURATION_AUTO: register_configs,
    TOKENIZATION_AUTO: register_tokenizers,
    MODELING_AUTO: register_models,
    PIPELINES: register_pipelines,
    OUR_PIPELINES: register_pipelines,
}


class _Registering(importlib.abc.Loader):
    """The loader of one of `HOOKS`' modules: transformers' own loader, then the module's registration."""

    def __init__(self, loader: importlib.abc.Loader, hook: Callable[[ModuleType], None]) -> None:
        self.loader, self.hook = loader, hook

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        _EXECUTING.add(module.__name__)
        try:
            self.loader.exec_module(module)
        finally:
            _EXECUTING.discard(module.__name__)
        module.__loader__ = module.__spec__.loader = self.loader  # the module as if loaded plainly, from now on
        self.hook(module)

    def __getattr__(self, name: str) -> Any:  # get_source, get_resource_reader, ...: transformers' loader
        return getattr(self.loader, name)


class _AfterImport(importlib.abc.MetaPathFinder):
    """Finds `HOOKS`' modules with the other finders and wraps their loader (`_Registering`)."""

    def __init__(self) -> None:
        self._finding = threading.local()

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in HOOKS or getattr(self._finding, "active", False):
            return None
        self._finding.active = True  # asking the other finders must not come back here
        try:
            spec = None
            for finder in sys.meta_path:
                if finder is not self and hasattr(finder, "find_spec"):
                    spec = finder.find_spec(fullname, path, target)
                    if spec is not None:
                        break
        finally:
            self._finding.active = False
        if spec is None or spec.loader is None:
            return None
        spec.loader = _Registering(spec.loader, HOOKS[fullname])
        return spec


_FINDER = _AfterImport()


def install() -> None:
    """Registers with each of `HOOKS`' modules already loaded, and with the others as they load, and records each
    model class's Auto class for `save_pretrained` (`hf_attn.utils.auto_classes`). Idempotent (each registration
    is)."""
    from ..utils.auto_classes import AUTO_CLASSES

    for row in _rows():
        AUTO_CLASSES[f"{row.base_model_class.module}.{row.base_model_class.name}"] = "AutoModel"
        for head in row.heads:
            if head.auto_class is not None:
                AUTO_CLASSES[f"{head.model_class.module}.{head.model_class.name}"] = head.auto_class
    if not any(isinstance(finder, _AfterImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _FINDER)
    for name, hook in HOOKS.items():
        if name in sys.modules:
            hook(sys.modules[name])


def register_all() -> None:
    """Loads `HOOKS`' modules now (each registers as it loads; one already loaded registers again, unchanged)."""
    install()
    for name, hook in HOOKS.items():
        loaded = name in sys.modules
        module = importlib.import_module(name)
        if loaded:
            hook(module)
