"""The conventions every architecture keeps, checked over the registry beside `registry._check_row` (which refuses a
folder missing a piece at `import hf_attn`): one name for one switch, the embedding found through
`_input_embed_layer`, conversion tests in one place, no copied code, no issue numbers in the package's docstrings and
comments; and in the shared code, no function of more than eight parameters, few `# fmt: skip` lines, and no
parameter typed `Any` where its type exists."""

from __future__ import annotations

import ast
import dataclasses
import io
import re
import tokenize

import pytest

from hf_attn.registry.table import ARCHITECTURES
from tests.helpers import REPO_ROOT

MODELS = REPO_ROOT / "hf_attn" / "models"

# Hand-written embedding accessors allowed, with the reason (CONTRIBUTING: name the layer in `_input_embed_layer`).
EMBEDDING_ACCESSORS_ALLOWED = {
    ("vaswani_transformer", "set_input_embeddings"): "a shared embedding is re-pointed in the encoder and decoder",
}


@pytest.mark.parametrize("name", sorted(ARCHITECTURES))
def test_the_original_padding_switch_has_one_name(name):
    """The switch that reproduces an original's padding behaviour is `mask_padding` in every config."""
    config_class = ARCHITECTURES[name].config_class
    fields = [field.name for field in dataclasses.fields(config_class)]
    others = [field for field in fields if re.fullmatch(r"mask_\w*padding\w*", field) and field != "mask_padding"]
    assert not others, f"{config_class.__name__} names the padding switch {others}: call it mask_padding"


@pytest.mark.parametrize("name", sorted(ARCHITECTURES))
def test_embeddings_are_found_through_input_embed_layer(name):
    """No model file writes `get_input_embeddings` / `set_input_embeddings` (transformers and the hf_attn base follow
    `_input_embed_layer`, a dotted path allowed), except where `EMBEDDING_ACCESSORS_ALLOWED` says why."""
    written = []
    for path in sorted((MODELS / name).glob("modeling_*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            accessor = isinstance(node, ast.FunctionDef) and node.name.endswith("_input_embeddings")
            if accessor and (name, node.name) not in EMBEDDING_ACCESSORS_ALLOWED:
                written.append(f"{path.name}:{node.lineno} {node.name}")
    assert not written, written


def test_conversion_tests_live_beside_their_architecture():
    """Every conversion script has its tests in `tests/models/<name>/test_conversion_<name>.py`, and an architecture's
    conversion tests live nowhere else (`tests/test_conversion.py` tests the converters' shared steps)."""
    scripts = sorted((REPO_ROOT / "conversion").glob("convert_*.py"))
    assert scripts
    for script in scripts:
        name = re.fullmatch(r"convert_(\w+?)(?:_original)?_to_hf\.py", script.name)[1]
        assert name in ARCHITECTURES, f"{script.name} converts no registered architecture"
        assert (REPO_ROOT / "tests" / "models" / name / f"test_conversion_{name}.py").is_file(), name
    elsewhere = [
        str(path.relative_to(REPO_ROOT))
        for path in (REPO_ROOT / "tests").rglob("test_conversion_*.py")
        if path.parent.parent.name != "models"
    ]
    assert not elsewhere, elsewhere


def test_no_function_body_is_written_twice_across_model_folders():
    """Model folders share code by importing it (hf_attn.layers), not by copying: no function or method of more than
    five lines appears twice, to the letter, across the model files."""
    seen: dict[str, str] = {}
    twins = []
    for path in sorted(MODELS.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno - node.lineno > 5:
                body = ast.dump(ast.Module(body=node.body, type_ignores=[]))
                where = f"{path.relative_to(REPO_ROOT)}:{node.lineno} {node.name}"
                if body in seen:
                    twins.append(f"{where} = {seen[body]}")
                seen.setdefault(body, where)
    assert not twins, twins


@pytest.mark.xdist_group("grouping_check")
def test_xdist_groups_reach_the_scheduler(request):
    """Under `--dist loadgroup` (the README's test command) a group's tests share one worker, and with it the
    session fixtures they build (trained models): pytest-xdist marks the node id with the group. pytest 9.2 ignores
    the mark (pyproject.toml pins pytest below it); this test fails if the grouping is lost again."""
    if not getattr(request.config.option, "loadgroup", False):
        pytest.skip("not run under pytest-xdist's --dist loadgroup")
    assert request.node.nodeid.endswith("@grouping_check"), request.node.nodeid


def test_the_wheel_ships_the_license(tmp_path):
    """pyproject says Apache-2.0: the LICENSE file is in the repository and in the wheel's metadata."""
    import subprocess
    import sys
    import zipfile

    assert "Apache License" in (REPO_ROOT / "LICENSE").read_text()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(REPO_ROOT),
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("hf_attn-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    licenses = [name for name in names if name.endswith(".dist-info/licenses/LICENSE")]
    assert licenses, names
    assert "Apache License" in zipfile.ZipFile(wheel).read(licenses[0]).decode()


def architecture_names(architectures=None) -> dict[str, str]:
    """Each architecture's names as code spells them -> a regular expression: its folder name and `model_type` as
    words (`han`, `han-yelp`), its class-name prefix followed by the rest of a class name (`HanConfig`). A paper's
    name in prose (HAN, ELMo) or an author's (Han et al.) is neither."""
    names: dict[str, str] = {}
    for folder, architecture in (architectures or ARCHITECTURES).items():
        config_class = architecture.config_class
        for word in {folder, config_class.model_type}:
            names[word] = rf"(?<![\w]){re.escape(word)}(?![\w])"
        prefix = config_class.__name__.removesuffix("Config")
        names[prefix] = rf"(?<![\w]){re.escape(prefix)}(?=[A-Z_])"
    return names


def named_architectures(root, names: dict[str, str], skip=("models", "model_cards")) -> list[str]:
    """`path:line: name` for every architecture name in a text file under `root`, outside its `skip` folders."""
    found = []
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if relative.parts[0] in skip or "__pycache__" in relative.parts or not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:  # a binary resource
            continue
        for number, line in enumerate(text.splitlines(), 1):
            found += [f"{relative}:{number}: {name}" for name, pattern in names.items() if re.search(pattern, line)]
    return found


def test_shared_code_names_no_architecture():
    """Outside `hf_attn/models/` (and the cards, each its architecture's), no file of the package names an
    architecture by its folder, `model_type` or class-name prefix: what one architecture needs reaches shared code
    through its row, its kinds, its tokenizer or its outputs (CONTRIBUTING's extension points)."""
    found = named_architectures(REPO_ROOT / "hf_attn", architecture_names())
    assert not found, "\n".join(found)


def test_the_architecture_name_check_finds_names(tmp_path):
    """The check above can fail: a model type in code, a recipe's name and a class name are found; prose is not."""
    names = architecture_names({"han": ARCHITECTURES["han"]})
    (tmp_path / "shared.py").write_text('if config.model_type == "han":\n    pass\n# HAN (Han et al.) and "than"\n')
    (tmp_path / "notes.yaml").write_text("recipe: han-yelp\nhead: HanForDocumentClassification\n")
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "x.py").write_text("HanModel\n")  # an architecture's own folder may name it
    found = named_architectures(tmp_path, names)
    assert found == ["notes.yaml:1: han", "notes.yaml:2: Han", "shared.py:1: han"], found


# The shared modules whose tests still live elsewhere than at their mirrored path (CONTRIBUTING: "The tests"). The
# list only shrinks: a module that gains its test file leaves it (the test below says so), a new module comes with one.
# Words that name a review round or an issue, not what a file tests.
OCCASION_WORDS = re.compile(r"round|issue|one_request|reliability|findings|review")


def mirrored_test(module: str) -> str:
    """`tests/<package>/test_<module>.py` for `hf_attn/<package>/<module>.py` (a path below `hf_attn/`, no suffix)."""
    package, _, name = module.rpartition("/")
    return f"tests/{package + '/' if package else ''}test_{name}.py"


def unmirrored(root) -> list[str]:
    """The mirrored test paths missing for the shared modules under `root/hf_attn` (outside `models/`)."""
    package = root / "hf_attn"
    modules = sorted(
        str(path.relative_to(package).with_suffix(""))
        for path in package.rglob("*.py")
        if path.name != "__init__.py" and path.relative_to(package).parts[0] != "models"
    )
    return [mirrored_test(module) for module in modules if not (root / mirrored_test(module)).is_file()]


def test_every_shared_module_has_its_test_file_at_the_mirrored_path():
    """`hf_attn/<package>/<module>.py` is tested in `tests/<package>/test_<module>.py`, so a reader finds a module's
    tests where the module is."""
    missing = unmirrored(REPO_ROOT)
    assert not missing, f"shared modules without their test file: {missing}"


def test_no_test_file_is_named_after_an_occasion():
    named = sorted(
        str(path.relative_to(REPO_ROOT)) for path in (REPO_ROOT / "tests").rglob("test_*.py")
        if OCCASION_WORDS.search(path.stem)
    )  # fmt: skip
    assert not named, f"name these after what they test: {named}"


def test_the_mirror_check_finds_a_module_without_tests(tmp_path):
    for path in ("hf_attn/data/files.py", "hf_attn/cli.py", "hf_attn/models/han/modeling_han.py",
                 "tests/data/test_files.py"):  # fmt: skip
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("")
    assert unmirrored(tmp_path) == ["tests/test_cli.py"]  # a model folder's modules are tested in tests/models
    (tmp_path / "tests" / "test_cli.py").write_text("")
    assert unmirrored(tmp_path) == []
    assert OCCASION_WORDS.search("test_faults_round_three") and not OCCASION_WORDS.search("test_saving")


# An issue number, as a docstring or comment would cite it ("issue 45", "Issue #71").
CITED_ISSUE = re.compile(r"\bissues? #?\d+", re.IGNORECASE)


def issue_citations(root) -> list[str]:
    """`path:line` of each docstring or comment in the Python files under `root` that cites an issue by number: the
    code says what it does and why, which a reader can check; the occasion that asked for it is the log's."""
    found = []
    for path in sorted(root.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        lines = {
            token.start[0]
            for token in tokenize.generate_tokens(io.StringIO(source).readline)
            if token.type == tokenize.COMMENT and CITED_ISSUE.search(token.string)
        }
        for node in ast.walk(ast.parse(source)):
            if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            docstring = ast.get_docstring(node, clean=False)
            cited = CITED_ISSUE.search(docstring or "")
            if cited:
                lines.add(node.body[0].lineno + docstring[: cited.start()].count("\n"))
        found += [f"{path.relative_to(root)}:{line}" for line in sorted(lines)]
    return found


def test_no_docstring_or_comment_of_the_package_cites_an_issue():
    found = issue_citations(REPO_ROOT / "hf_attn")
    assert not found, f"say what the code does and why, not which issue asked for it: {found}"


def test_the_issue_citation_check_finds_docstrings_and_comments(tmp_path):
    """The check above can fail: a module's and a function's docstring and a comment are found, on their lines; a
    string that is no docstring, and a word like "issues" without a number, are not."""
    (tmp_path / "cited.py").write_text(
        '"""A module.\n\nAs issue 45 measured."""\n\n\n'
        "def f():\n"
        '    """Reads it (Issue #7)."""\n'
        '    x = "issue 9"  # fixes issue 71\n'
        "    return x  # known issues: none\n"
    )
    assert issue_citations(tmp_path) == ["cited.py:3", "cited.py:7", "cited.py:8"]


# Shared code: the package outside the model folders (which follow their papers' and transformers' signatures).
MOST_PARAMETERS = 8
MOST_FORMAT_SKIPS = 20


def shared_modules(root) -> list:
    package = root / "hf_attn"
    return sorted(path for path in package.rglob("*.py") if path.relative_to(package).parts[0] != "models")


def long_signatures(root, most: int = MOST_PARAMETERS) -> list[str]:
    """`path:line name (n)` of each shared function or method that takes more than `most` named parameters (`self`,
    `cls`, `*args` and `**kwargs` aside): a long call is a group of values that belong together, which a dataclass
    names once (`DataRequest`, `Measurement`)."""
    found = []
    for path in shared_modules(root):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                named = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
                count = len([item for item in named if item.arg not in ("self", "cls")])
                if count > most:
                    found.append(f"{path.relative_to(root)}:{node.lineno} {node.name} ({count})")
    return found


def format_skips(root) -> list[str]:
    """`path:line` of each `# fmt: skip` in the shared code: a line the formatter may not touch, kept for a table
    whose columns line up, not for a long call squeezed onto one line."""
    found = []
    for path in shared_modules(root):
        lines = path.read_text(encoding="utf-8").splitlines()
        found += [
            f"{path.relative_to(root)}:{number}" for number, line in enumerate(lines, 1) if "# fmt: skip" in line
        ]
    return found


def test_no_shared_function_takes_more_than_eight_parameters():
    found = long_signatures(REPO_ROOT)
    assert not found, f"group the values that travel together in a dataclass: {found}"


def test_the_shared_code_keeps_few_format_skips():
    found = format_skips(REPO_ROOT)
    assert len(found) <= MOST_FORMAT_SKIPS, f"{len(found)} `# fmt: skip` lines (at most {MOST_FORMAT_SKIPS}): {found}"


def test_the_signature_and_format_checks_find_them(tmp_path):
    """The two checks above can fail: a function and a method of nine named parameters are found, one of eight (with
    `self`, `*args` and `**kwargs` besides) is not, nor is a model folder's; each `# fmt: skip` line is counted."""
    (tmp_path / "hf_attn" / "models" / "han").mkdir(parents=True)
    nine = ", ".join(f"a{i}" for i in range(9))
    (tmp_path / "hf_attn" / "shared.py").write_text(
        f"def long({nine}):\n    pass\n\n\n"
        "class C:\n"
        f"    def method(self, {nine}):\n        pass\n\n"
        "    def fine(self, a0, a1, a2, a3, a4, a5, a6, a7, *args, **kwargs):\n        pass\n\n\n"
        "x = [1,  2]  # fmt: skip\n"
    )
    (tmp_path / "hf_attn" / "models" / "han" / "modeling_han.py").write_text(f"def paper({nine}):\n    pass\n")
    assert long_signatures(tmp_path) == ["hf_attn/shared.py:1 long (9)", "hf_attn/shared.py:6 method (9)"]
    assert format_skips(tmp_path) == ["hf_attn/shared.py:13"]


# A parameter of one of these names is a value of this type (and the module that defines it: `None`, transformers),
# which `Any` would hide from a reader and a type checker.
NAMED_TYPES = {
    "head": ("Head", "hf_attn.registry.row"),
    "architecture": ("Architecture", "hf_attn.registry.row"),
    "options": ("HfAttnArguments", "hf_attn.options.arguments"),
    "shape": ("TaskShape", "hf_attn.tasks.base"),
    "data": ("TaskData", "hf_attn.data.task_data"),
    "tokenizer": ("PreTrainedTokenizerBase", None),
    "model": ("PreTrainedModel", None),
    "config": ("PreTrainedConfig", None),
    "args": ("TrainingArguments", None),
}


def hidden_types(root) -> list[str]:
    """`path:line function(parameter)` of each shared parameter typed `Any` (or `Any | None`) where a type exists: its
    name is one of `NAMED_TYPES` and the module can import that type without an upward import (its layer is the
    module's or below; `tests/test_imports.py`)."""
    from tests.test_imports import layer_of

    found = []
    for path in shared_modules(root):
        parts = list(path.relative_to(root).with_suffix("").parts)
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for item in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]:
                typed = ast.unparse(item.annotation) if item.annotation is not None else None
                if typed not in ("Any", "Any | None") or item.arg not in NAMED_TYPES:
                    continue
                _, defined_in = NAMED_TYPES[item.arg]
                if defined_in is None or layer_of(defined_in) <= layer_of(module):
                    found.append(f"{path.relative_to(root)}:{node.lineno} {node.name}({item.arg})")
    return found


def test_no_shared_parameter_is_typed_any_where_a_type_exists():
    found = hidden_types(REPO_ROOT)
    assert not found, f"name the type (under `if TYPE_CHECKING:` where it is only a type): {found}"


def test_the_any_check_finds_a_hidden_type(tmp_path):
    """The check above can fail: a head typed `Any` in a task shape's module and a tokenizer typed `Any | None` in a
    primitive are found; a head typed `Any` in the data layer (which cannot import the registry's `Head`), a
    `value: Any` and a typed head are not."""
    (tmp_path / "hf_attn" / "tasks").mkdir(parents=True)
    (tmp_path / "hf_attn" / "data").mkdir()
    (tmp_path / "hf_attn" / "layers").mkdir()
    (tmp_path / "hf_attn" / "tasks" / "shape.py").write_text(
        "def fit(head: Any, value: Any) -> None:\n    pass\n\n\ndef typed(head: Head) -> None:\n    pass\n"
    )
    (tmp_path / "hf_attn" / "data" / "rows.py").write_text("def rows(head: Any) -> None:\n    pass\n")
    (tmp_path / "hf_attn" / "layers" / "cells.py").write_text("def cell(tokenizer: Any | None = None):\n    pass\n")
    assert hidden_types(tmp_path) == [
        "hf_attn/layers/cells.py:1 cell(tokenizer)",
        "hf_attn/tasks/shape.py:1 fit(head)",
    ]
