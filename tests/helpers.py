"""Shared test helpers: fixture paths, tiny models from the registry, and random inputs per input shape."""

from __future__ import annotations

import functools
import itertools
import json
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
import torch

from hf_attn.data.example_inputs import documents, output_vocab_size
from hf_attn.data.kinds import get_input_kind
from hf_attn.registry.table import ARCHITECTURES, Architecture, Head, get_architecture
from hf_attn.visualization import AttentionFigure, HeatmapPanel, TextPanel
from hf_attn.visualization.figure import TABLE_CELLS

__all__ = ["documents", "output_vocab_size"]  # re-exported for the tests that build inputs by hand

REPO_ROOT = Path(__file__).resolve().parents[1]

# Prepended to scripts that run in a fresh interpreter where hf_attn must NOT be importable (remote-code tests):
# the finder makes `import hf_attn` fail even though the package is installed.
BLOCK_HF_ATTN = """
import importlib.abc, sys

class BlockHfAttn(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "hf_attn" or name.startswith("hf_attn."):
            raise ModuleNotFoundError(f"No module named {name!r} (blocked by the test)")
        return None

sys.meta_path.insert(0, BlockHfAttn())
"""
SHARED_FIXTURES = REPO_ROOT.parent / "shared" / "fixtures"


def load_benchmark(name: str):
    """Loads `benchmarks/<name>.py` as running it does: with its folder (and `timing.py`) importable."""
    import importlib.util

    folder = REPO_ROOT / "benchmarks"
    spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(folder))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(folder))
    return module


def fixture_dir(arch: str) -> Path:
    """`../shared/fixtures/<arch>`; fails (not skips) when absent, since CI always has it."""
    path = SHARED_FIXTURES / arch
    if not path.is_dir():
        pytest.fail(f"parity fixture missing: {path} (shared/ must lie beside the checkout)")
    return path


def tiny_config(architecture: Architecture, **overrides):
    return architecture.config_class(**{**architecture.tiny_config, **overrides})


def all_heads() -> list[tuple[Architecture, Head]]:
    """Every (architecture, head) pair of the registry, as pytest parameters with readable ids."""
    return [
        pytest.param(architecture, head, id=f"{name}-{head.model_class.__name__}")
        for name, architecture in ARCHITECTURES.items()
        for head in architecture.heads
    ]


def make_inputs(head: Head, config, lengths: list[int], seed: int = 0, pair_lengths: list[int] | None = None):
    """Model inputs of the head's input kind with the given per-example lengths (`InputKind.example_inputs`: a 0
    length is an all-padding row; for documents a length sets the sentences); `pair_lengths` sets the second
    sequence's lengths (the hypothesis of a pair, the target of a seq2seq, the second view of a document pair)."""
    generator = torch.Generator().manual_seed(seed)
    return head.inputs.example_inputs(config, lengths, generator, pair_lengths)


def make_labels(head: Head, config, inputs: dict[str, torch.Tensor], seed: int = 0) -> torch.Tensor:
    """Labels of the head's label kind for `inputs` (`LabelKind.example_labels`: class ids `(B,)`, indicators,
    a class or vocabulary id per token with -100 at padding, a class per query)."""
    return head.labels.example_labels(config, inputs, head.inputs, torch.Generator().manual_seed(seed + 1))


def trainer_rows(head: Head, config) -> list[dict]:
    """Six examples of the head's kinds as `Trainer` rows (lists; seq2seq heads make their decoder inputs from the
    labels). One example spans three blocks of the tiny BiBloSA (r = 3): with two, a block's only key gets weight 1
    and its scores no gradient."""
    rows = []
    for index, length in enumerate([3, 5, 2, 4, 9, 1]):
        example = make_inputs(head, config, [length], seed=index)
        labels = make_labels(head, config, example, seed=index)[0]
        row = {name: tensor[0].tolist() for name, tensor in example.items() if not name.startswith("decoder_")}
        row["labels"] = labels.tolist()
        rows.append(row)
    return rows


def logits_shape(head: Head, config, inputs: dict[str, torch.Tensor]) -> tuple[int, ...]:
    return head.labels.logits_shape(config, inputs, head.inputs)


def attention_maps(architecture, output, inputs) -> list[tuple[str, torch.Tensor, torch.Tensor]]:
    """Every attention distribution a head returned, as (field, weights `(B, …, Q|R, K)`, key mask `(B, …, K)`) from
    the row's parsed masks (`MaskSpec.key_mask`); per-layer tuples are flattened. A level whose keys need the size of
    another map of the same input (`MaskLevel.sized_by`) takes it from the head's maps (`level_sizes`)."""
    from hf_attn.data.masks import level_sizes

    masks = architecture.attention_masks
    returned = {field: getattr(output, field, None) for field in masks}
    returned = {field: value for field, value in returned.items() if value is not None}
    sizes = level_sizes(
        {field: masks[field] for field in returned},
        {field: value[-1] if isinstance(value, tuple) else value for field, value in returned.items()},
    )
    maps = []
    for field, value in returned.items():
        spec = masks[field]
        for index, weights in enumerate(value if isinstance(value, tuple) else (value,)):
            mask = spec.key_mask(inputs, tuple(weights.shape), sizes[field])
            maps.append((f"{field}[{index}]", weights, mask))
    return maps


def trim_like(batched: torch.Tensor, index: int, alone: torch.Tensor) -> torch.Tensor:
    """Example `index` of a batched output, cut to the shape of the same example run alone."""
    return batched[index : index + 1][tuple(slice(0, size) for size in alone.shape)]


def select_example(inputs: dict[str, torch.Tensor], index: int, head: Head | None = None) -> dict[str, torch.Tensor]:
    """Example `index` of a batch, trimmed to its own extent as if padded alone (`InputKind.select_example` of the
    head's input kind; one text's without a head)."""
    return (head.inputs if head is not None else get_input_kind("sentence")).select_example(inputs, index)


@functools.cache
def corpus_tokenizer(kind, corpus: tuple[str, ...], concepts: tuple[tuple[str, str, float], ...] = ()):
    """A tokenizer of `kind` (a tokenizer kind or its name) trained on `corpus`, a concept tokenizer linking the
    `(entity, concept, score)` triples; the vocabularies of a tiny corpus fit the tiny configs. A kind without a
    setting here (a new folder's) trains with its own defaults on the corpus."""
    from hf_attn.tokenization.kinds import get_tokenizer_kind

    kind = get_tokenizer_kind(str(kind))
    if kind.name == "concepts":
        from hf_attn.models.stcka.kinds import train_concept_tokenizer
        from hf_attn.models.stcka.tokenization_stcka import ConceptSource

        knowledge: dict[str, list[tuple[str, float]]] = {}
        for entity, concept, score in concepts:
            knowledge.setdefault(entity, []).append((concept, score))
        return train_concept_tokenizer(list(corpus), concept_source=ConceptSource(knowledge), max_word_length=8)
    if kind.name == "characters":
        from hf_attn.models.elmo.tokenization_elmo import build_elmo_tokenizer

        return build_elmo_tokenizer()
    settings = {"bpe": {"vocab_size": 40}}.get(kind.name, {})
    return kind.train(list(corpus), min_frequency=1, **settings)


def console_script() -> list[str]:
    """The installed `hf-attn` console script (as a user runs it), or the module where it is not on PATH."""

    script = Path(sys.executable).parent / "hf-attn"
    return [str(script)] if script.exists() else [sys.executable, "-m", "hf_attn.cli"]


def one_line_faults(result, message: str) -> list[str]:
    """What is wrong with a command that should have failed in one line matching `message` (a regex): its exit
    status (1), its standard error (exactly one line, `hf-attn ...`), its standard output (nothing)."""

    lines = result.stderr.strip().splitlines()
    faults = []
    if result.returncode != 1:
        faults.append(f"exit {result.returncode}")
    if len(lines) != 1 or not re.search(message, lines[0]) or not lines[0].startswith("hf-attn"):
        faults.append(f"stderr {lines[-3:]}")
    if result.stdout.strip():
        faults.append(f"stdout {result.stdout.strip()[:200]!r}")
    return faults


def write_fewrel(path: Path, relations: list[int], per_relation: int, seed: int) -> None:
    """A FewRel JSON file (relation -> instances with `tokens`, `h`, `t`) of the synthetic relation task: `relations`
    name the relations (P<n>), `per_relation` instances each."""
    from hf_attn.data.episodes import few_shot_classes

    rows = few_shot_classes(len(relations) * per_relation, seed=seed, relations=True, num_train_classes=64)
    data: dict[str, list] = {}
    for text, label, head, tail in zip(rows["text"], rows["label"], rows["head"], rows["tail"], strict=True):
        relation = f"P{relations[int(label.split()[1]) % len(relations)]}"
        tokens = text.split()
        data.setdefault(relation, []).append(
            {"tokens": tokens, "h": [tokens[head], "Q1", [[head]]], "t": [tokens[tail], "Q2", [[tail]]]}
        )
    path.write_text(json.dumps(data))


def head_of(arch: str, class_name: str) -> tuple[torch.nn.Module, object, Head]:
    """A tiny model of `arch`'s head `class_name` (seeded, in eval mode), its config and its registry head."""
    architecture = get_architecture(arch)
    (head,) = [head for head in architecture.heads if head.model_class.__name__ == class_name]
    torch.manual_seed(0)
    config = tiny_config(architecture)
    return head.model_class(config).eval(), config, head


def temporary_files(folder) -> list[str]:
    """Names in `folder` that are not part of a saved model: staging folders, `.tmp` files."""
    return sorted(path.name for path in folder.iterdir() if path.name.startswith(".") or path.suffix == ".tmp")


def sentence_words(text: str) -> list[list[str]]:
    """Word lists, each ending at a "." word (as the document tokenizer splits them)."""
    sentences, current = [], []
    for word in text.split():
        current.append(word)
        if word == ".":
            sentences.append(current)
            current = []
    return sentences


def chromium() -> str:
    """Headless Chromium's path, or the test skipped saying why (the attention pictures' and the manual's browser
    tests)."""
    import shutil

    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.skip("Chromium is not installed: `make test` installs Debian's chromium where it can (root, apt-get)")
    return path


# Runs `hf-attn` commands one after another in one fresh interpreter, each as the console script runs it
# (`hf_attn.cli.main` with its argv; its file descriptors 1 and 2 its own; a `SystemExit` message printed to standard
# error with status 1, as Python does): a refused command costs its own work, not an interpreter's start.
_CONSOLE_RUNNER = r"""
import json, os, sys, tempfile
from hf_attn.cli import main
results = []
for argv in json.loads(sys.stdin.read()):
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        sys.stdout.flush(); sys.stderr.flush()
        saved = os.dup(1), os.dup(2)
        os.dup2(out.fileno(), 1); os.dup2(err.fileno(), 2)
        code = 0
        try:
            sys.argv = ["hf-attn", *argv]
            main(argv)
        except SystemExit as exit:
            if isinstance(exit.code, str):
                print(exit.code, file=sys.stderr)
                code = 1
            else:
                code = exit.code or 0
        except BaseException as error:  # what would have been a traceback
            print(f"Traceback: {type(error).__name__}: {error}", file=sys.stderr)
            code = 1
        finally:
            sys.stdout.flush(); sys.stderr.flush()
            os.dup2(saved[0], 1); os.dup2(saved[1], 2)
            os.close(saved[0]); os.close(saved[1])
        out.seek(0); err.seek(0)
        results.append([code, out.read(), err.read()])
sys.stdout.write(json.dumps(results))
"""


def run_console_commands(jobs: list[list[str]], fresh_every: int = 6, timeout: float = 900) -> list:
    """Each argv of `jobs` as `hf-attn` runs it, as `subprocess.CompletedProcess`es in order: every `fresh_every`-th
    (the first included) through the installed console script in a process of its own, the start a user's command
    pays; the others one after another in one interpreter (`_CONSOLE_RUNNER`), each with its own standard output
    and error and exit status. The contract checked (one line, exit 1, nothing on stdout) is the command's own;
    what a fresh start adds is checked on the sample."""
    import concurrent.futures
    import subprocess

    fresh = [index for index in range(len(jobs)) if index % fresh_every == 0]
    shared = [index for index in range(len(jobs)) if index % fresh_every != 0]

    def alone(index: int) -> subprocess.CompletedProcess:
        return subprocess.run([*console_script(), *jobs[index]], capture_output=True, text=True, timeout=300)

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        started = pool.submit(
            subprocess.run, [sys.executable, "-c", _CONSOLE_RUNNER], input=json.dumps([jobs[i] for i in shared]),
            capture_output=True, text=True, timeout=timeout,
        )  # fmt: skip
        results = dict(zip(fresh, pool.map(alone, fresh), strict=True))
        runner = started.result()
    assert runner.returncode == 0, runner.stderr[-3000:]
    for index, (code, out, err) in zip(shared, json.loads(runner.stdout), strict=True):
        results[index] = subprocess.CompletedProcess(jobs[index], code, out, err)
    return [results[index] for index in range(len(jobs))]


class PageTokens(HTMLParser):
    """The token elements of a page (weight, opacity, text) and its legends' scales."""

    def __init__(self) -> None:
        super().__init__()
        self.tokens, self.legends, self.images, self._open = [], [], [], False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "span" and attrs.get("class") == "token":
            alpha = float(re.search(r"rgba\([^)]*,\s*([\d.]+)\)", attrs["style"])[1])
            self.tokens.append([float(attrs["data-weight"]), alpha, ""])
            self._open = True
        elif "legend" in (attrs.get("class") or ""):
            self.legends.append(float(attrs["data-max"]))
        elif tag == "img":
            self.images.append((int(attrs["data-rows"]), int(attrs["data-columns"])))

    def handle_data(self, data):
        if self._open:
            self.tokens[-1][2] += data

    def handle_endtag(self, tag):
        self._open = False


def check_in_browser(page, figure: AttentionFigure, tmp_path) -> None:
    """Headless Chromium opens the page: one element per real token, opacity growing with the weight, no padding,
    the legends' scales, large heatmaps as images of their shape; its screenshot is not blank."""
    browser = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
    dom = subprocess.run([*browser, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120).stdout
    parsed = PageTokens()
    parsed.feed(dom)
    text_panels = [panel for panel in figure.panels if isinstance(panel, TextPanel)]
    assert [token for _, _, token in parsed.tokens] == [token for panel in text_panels for token in panel.tokens]
    start = 0
    for panel in text_panels:  # within a panel (one scale), a larger weight is never lighter
        ordered = sorted(parsed.tokens[start : start + len(panel.tokens)])
        start += len(panel.tokens)
        assert all(lighter[1] <= darker[1] + 1e-9 for lighter, darker in itertools.pairwise(ordered))
    assert "[PAD]" not in dom
    assert parsed.legends == pytest.approx([panel.scale for panel in figure.panels], rel=1e-5)
    shapes = [(len(panel.row_labels), len(panel.column_labels)) for panel in figure.panels
              if isinstance(panel, HeatmapPanel)]  # fmt: skip
    large = [(rows, columns) for rows, columns in shapes if rows * columns > TABLE_CELLS]
    assert parsed.images == large
    screenshot = tmp_path / "screenshot.png"
    subprocess.run([*browser, f"--screenshot={screenshot}", "--window-size=1000,800", page.as_uri()],
                   capture_output=True, timeout=120)  # fmt: skip
    import matplotlib.image

    assert matplotlib.image.imread(screenshot).std() > 0.01  # the page drew something


# Texts a tiny model reads (its tokenizer trained on them, so that their words are real tokens).
TEXTS = ["the food was great and the service was awful", "a fine meal . we left at nine ."]


def tiny_model_and_tokenizer(architecture: Architecture, head: Head) -> tuple[torch.nn.Module, object]:
    """A tiny untrained head and a tokenizer trained on the texts it draws (its words are real tokens)."""
    tokenizer = corpus_tokenizer(
        architecture.tokenizer.name, (*TEXTS, "la comida era buena"), (("food", "meal", 1.0),)
    )
    torch.manual_seed(0)
    config = tiny_config(architecture)
    if architecture.tokenizer.name != "characters":
        config = tiny_config(architecture, vocab_size=max(len(tokenizer), config.vocab_size))
    return head.model_class(config).eval(), tokenizer


def shape_heads(name: str) -> list:
    """pytest parameters `(architecture, head)`: every registry head the task shape `name` trains."""
    from hf_attn.tasks.heads import TASK_SHAPES

    shape = TASK_SHAPES[name]
    return [
        pytest.param(architecture, head, id=f"{architecture.name}-{head.model_class.__name__}")
        for architecture in ARCHITECTURES.values()
        for head in shape.heads(architecture)
    ]


def shape_predictions(name: str, architecture: Architecture, head: Head, top_k: int = 2) -> tuple[object, list]:
    """A tiny untrained `head` and its task shape's `predict` for `TEXTS` (each a pair of itself, for a pair head)."""
    from hf_attn.tasks.heads import TASK_SHAPES

    model, tokenizer = tiny_model_and_tokenizer(architecture, head)
    pairs = list(reversed(TEXTS)) if head.inputs.pair else None
    return model, TASK_SHAPES[name].predict(model, tokenizer, head, list(TEXTS), pairs, top_k)
