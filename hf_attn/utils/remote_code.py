"""The code a saved model carries: its folder's files and the hf_attn modules they import, written from their one
source at save time.

transformers ships a model for `trust_remote_code=True` as the files of its folder: the module of its class and
what that module imports relatively (`from .x import y`), all copied flat into one directory. hf_attn's model files
import their shared primitives from the package itself (`from hf_attn.layers.masking import masked_softmax`), so
`save_pretrained` (`SafetensorsLoadingMixin`) calls `write_remote_code`, which follows those imports and writes:

- each module of the model's own folder under its own name (`modeling_han.py`, `configuration_han.py`, ...);
- each other hf_attn module it needs, flat, named after its dotted path below `hf_attn`
  (`hf_attn.layers.masking` -> `layers_masking.py`);
- in every one of them, each import of an hf_attn module rewritten to the relative import of its written file.

An import that sits in a `try:` whose handler catches `ImportError` is optional (the loading mixin reaches
hf_attn's integrity checks when hf_attn is installed) and is left as written. Nothing else is touched, so the
written code is the source line for line, and two saves write identical bytes. A saved folder imports only torch,
transformers and its own files; `tests/test_remote_code.py` loads every head's folder where hf_attn is blocked.

The model's code must import hf_attn names from the module that defines them (not from a package's
`__init__`): a package re-export would drag the whole package into the folder, and is refused with its name.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

PACKAGE = "hf_attn"
_OPTIONAL = {"ImportError", "ModuleNotFoundError"}


def _module_path(module: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise ImportError(f"No module named {module!r} (needed by a saved model's code)")
    return Path(spec.origin)


def _absolute(node: ast.ImportFrom, module: str) -> str:
    """The absolute module an `ImportFrom` in `module` (a module, not a package) names."""
    if not node.level:
        return node.module or ""
    base = module.split(".")[: -node.level]
    return ".".join([*base, node.module] if node.module else base)


def _optional_imports(tree: ast.Module) -> set[int]:
    """The ids of import nodes inside a `try:` whose handlers catch `ImportError`: left as written."""
    optional: set[int] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Try):
            continue
        caught = set()
        for handler in node.handlers:
            types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
            caught |= {t.id for t in types if isinstance(t, ast.Name)}
        if caught & _OPTIONAL:
            optional |= {id(n) for stmt in node.body for n in ast.walk(stmt) if isinstance(n, ast.ImportFrom)}
    return optional


def _hf_attn_imports(module: str, tree: ast.Module) -> list[tuple[ast.ImportFrom, str]]:
    """Every non-optional `from ... import` of an hf_attn module in `tree`, with the module it names."""
    optional = _optional_imports(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(alias.name.split(".")[0] == PACKAGE for alias in node.names):
            raise ValueError(f"{module}: write `from hf_attn.x import y`, not `import hf_attn.x` (saved code).")
        if isinstance(node, ast.ImportFrom) and id(node) not in optional:
            target = _absolute(node, module)
            if target.split(".")[0] == PACKAGE:
                if _module_path(target).name == "__init__.py":
                    raise ValueError(
                        f"{module} imports {', '.join(a.name for a in node.names)} from the package {target}: a "
                        "saved model's code imports from the module that defines it (e.g. hf_attn.layers.masking)."
                    )
                found.append((node, target))
    return found


def file_name(module: str, home: str) -> str:
    """The file `module` is written as in a folder whose model lives in the package `home`."""
    package, _, leaf = module.rpartition(".")
    if package == home:
        return f"{leaf}.py"
    return module.removeprefix(f"{PACKAGE}.").replace(".", "_") + ".py"


def remote_code(modules: list[str]) -> dict[str, str]:
    """File name -> text of the code that makes `modules` (a model's and its config's module) importable from one
    flat folder without hf_attn. Deterministic: the same sources give the same texts, in name order."""
    home = modules[0].rpartition(".")[0]
    files: dict[str, str] = {}
    pending = list(modules)
    seen: set[str] = set()
    while pending:
        module = pending.pop()
        if module in seen:
            continue
        seen.add(module)
        text = _module_path(module).read_text(encoding="utf-8")
        lines = text.splitlines(keepends=True)
        imports = _hf_attn_imports(module, ast.parse(text))
        # Bottom-up, so that replacing one statement does not move the lines of those above it.
        for node, target in sorted(imports, key=lambda item: item[0].lineno, reverse=True):
            names = ", ".join(alias.name + (f" as {alias.asname}" if alias.asname else "") for alias in node.names)
            indent = lines[node.lineno - 1][: node.col_offset]
            relative = f"{indent}from .{file_name(target, home).removesuffix('.py')} import {names}\n"
            lines[node.lineno - 1 : node.end_lineno] = [relative]
            pending.append(target)
        files[file_name(module, home)] = "".join(lines)
    return dict(sorted(files.items()))


def write_remote_code(save_directory: str | Path, classes: list[type]) -> list[str]:
    """Writes the code of `classes` (a model class and its config class) into `save_directory`, replacing the
    copies transformers made of their modules; returns the file names written."""
    files = remote_code([cls.__module__ for cls in classes])
    for name, text in files.items():
        path = Path(save_directory) / name
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
    return list(files)
