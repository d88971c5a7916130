"""The registry is built from the model folders: a folder declares its own row, a folder missing a piece fails with
a message naming it, and a new architecture needs nothing outside its folder, its card template and its tests."""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hf_attn.registry.table import ARCHITECTURES, discover_architectures
from tests.helpers import REPO_ROOT

MEAN_POOL_ROW = '''
"""A throwaway architecture: embeddings, a weighted mean over the tokens, a linear classifier."""

from hf_attn.data.kinds import CLASS
from hf_attn.registry.row import Architecture, Head, Paper

from . import synthetic_mean_pool  # noqa: F401 (registers the weighted_cues task)
from .kinds import MEAN_POOL_TOKENIZER, WEIGHTED_SENTENCE
from .configuration_mean_pool import MeanPoolConfig
from .modeling_mean_pool import MeanPoolForSequenceClassification, MeanPoolModel

ARCHITECTURE = Architecture(
    name="mean_pool",
    display_name="Mean pooling",
    config_class=MeanPoolConfig,
    base_model_class=MeanPoolModel,
    heads=(
        Head(
            MeanPoolForSequenceClassification,
            "AutoModelForSequenceClassification",
            WEIGHTED_SENTENCE,
            "text-classification",
            labels=CLASS,
        ),
    ),
    paper=Paper(title="Mean pooling", authors="Nobody", year=2026, venue="Tests", arxiv=None, bibtex="@misc{mean}",
                link="https://example.org"),
    original_code=None,
    tokenizer=MEAN_POOL_TOKENIZER,
    synthetic_task="weighted_cues",
    attention_fields={},
    tiny_config={"vocab_size": 50, "hidden_size": 8, "num_labels": 3},
    converter="convert_mean_pool_original_to_hf",
    tasks="tasks_mean_pool",
)
'''

MEAN_POOL_CONFIG = """
from huggingface_hub.dataclasses import strict
from transformers import PreTrainedConfig
from transformers.utils.type_validators import positive_int_field


@strict
class MeanPoolConfig(PreTrainedConfig):
    model_type = "mean_pool"

    vocab_size: int = positive_int_field(default=100)
    hidden_size: int = positive_int_field(default=16)
    pad_token_id: int | None = 0


__all__ = ["MeanPoolConfig"]
"""

MEAN_POOL_MODELING = """
import torch
from torch import nn
from transformers import PreTrainedModel
from transformers.modeling_outputs import BaseModelOutput, SequenceClassifierOutput

from hf_attn.layers.losses import classification_loss
from hf_attn.layers.outputs import output_flags
from hf_attn.layers.validation import check_token_inputs
from hf_attn.utils.loading import SafetensorsLoadingMixin
from .configuration_mean_pool import MeanPoolConfig


class MeanPoolPreTrainedModel(SafetensorsLoadingMixin, PreTrainedModel):
    config_class = MeanPoolConfig
    base_model_prefix = "mean_pool"
    _input_embed_layer = "embeddings"


class MeanPoolModel(MeanPoolPreTrainedModel):
    def __init__(self, config):
        super().__init__(config)
        self.embeddings = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        self.post_init()

    def forward(self, input_ids, attention_mask=None, token_weights=None, output_attentions=None,
                output_hidden_states=None, return_dict=None):
        _, output_hidden_states, return_dict = output_flags(
            self.config, output_attentions, output_hidden_states, return_dict
        )
        mask = check_token_inputs(input_ids, attention_mask, self.config.vocab_size)
        weights = mask if token_weights is None else token_weights * mask
        embeddings = self.embeddings(input_ids) * weights[..., None]
        pooled = embeddings.sum(1) / weights.sum(1, keepdim=True).clamp(min=1e-6)
        states = (embeddings,) if output_hidden_states else None
        output = BaseModelOutput(last_hidden_state=pooled, hidden_states=states)
        return output if return_dict else output.to_tuple()


class MeanPoolForSequenceClassification(MeanPoolPreTrainedModel):
    def __init__(self, config):
        super().__init__(config)
        self.mean_pool = MeanPoolModel(config)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)
        self.post_init()

    def forward(self, input_ids, attention_mask=None, token_weights=None, labels=None, output_attentions=None,
                output_hidden_states=None, return_dict=None):
        output_attentions, output_hidden_states, return_dict = output_flags(
            self.config, output_attentions, output_hidden_states, return_dict
        )
        encoded = self.mean_pool(
            input_ids, attention_mask, token_weights, None, output_hidden_states, return_dict=True
        )
        logits = self.classifier(encoded.last_hidden_state)
        loss = classification_loss(self.config, logits, labels) if labels is not None else None
        output = SequenceClassifierOutput(loss=loss, logits=logits, hidden_states=encoded.hidden_states)
        return output if return_dict else output.to_tuple()


__all__ = ["MeanPoolForSequenceClassification", "MeanPoolModel"]
"""

MEAN_POOL_KINDS = """
\"\"\"The throwaway architecture's own kinds: a text whose tokens carry weights, `token_weights` (B, T), and its own
vocabulary (`MeanPoolTokenizerFast`).\"\"\"

import torch

from hf_attn.data.collators import PaddingCollator
from hf_attn.data.kinds import InputKind, register_input_kind
from hf_attn.tokenization.kinds import TokenizerKind, register_tokenizer_kind
from hf_attn.tokenization.word_level import PAD_TOKEN, UNK_TOKEN, train_word_level_tokenizer, wrap_tokenizer

from .tokenization_mean_pool import MeanPoolTokenizerFast


class WeightedSentence(InputKind):
    name = "weighted_sentence"

    def mask_of(self, name):
        return "attention_mask" if name == "token_weights" else super().mask_of(name)

    def encode(self, tokenizer, texts, pairs=None):
        inputs = super().encode(tokenizer, texts, pairs)
        inputs["token_weights"] = inputs["attention_mask"].float()  # raw texts weigh every token alike
        return inputs

    def collator(self, config):
        pad = PaddingCollator(config.pad_token_id or 0)

        def collate(features):
            batch = pad([{key: value for key, value in row.items() if key != "token_weights"} for row in features])
            width = batch["input_ids"].size(1)
            batch["token_weights"] = torch.tensor(
                [list(row["token_weights"]) + [0.0] * (width - len(row["token_weights"])) for row in features]
            )
            return batch

        return collate

    def example_inputs(self, config, lengths, generator, pair_lengths=None):
        inputs = super().example_inputs(config, lengths, generator)
        weights = torch.rand(inputs["input_ids"].shape, generator=generator) + 0.5
        inputs["token_weights"] = weights * inputs["attention_mask"]
        return inputs


def train(texts, vocab_size, min_frequency, lowercase):
    words = train_word_level_tokenizer(texts, vocab_size=vocab_size, min_frequency=min_frequency, lowercase=lowercase)
    return wrap_tokenizer(words.backend_tokenizer, PAD_TOKEN, UNK_TOKEN, words.model_max_length,
                          tokenizer_class=MeanPoolTokenizerFast)


WEIGHTED_SENTENCE = register_input_kind(WeightedSentence())
MEAN_POOL_TOKENIZER = register_tokenizer_kind(TokenizerKind("mean_pool_words", MeanPoolTokenizerFast, train, 1000, 1,
                                                            True))
"""

MEAN_POOL_TOKENIZATION = """
\"\"\"The throwaway architecture's tokenizer: words, with every token's weight 1 (`token_weights`).\"\"\"

from hf_attn.tokenization.base import HfAttnTokenizerFast


class MeanPoolTokenizerFast(HfAttnTokenizerFast):
    def config_fields(self):
        return {"vocab_size": len(self), "pad_token_id": self.pad_token_id}
"""

MEAN_POOL_SYNTHETIC = """
\"\"\"The throwaway architecture's synthetic task: the cue-word sentiment texts, trained on its own task shape.\"\"\"

from hf_attn.data.synthetic import CUE_SENTIMENT_LABELS, SyntheticTask, cue_word_sentiment, register_synthetic_task

register_synthetic_task("weighted_cues", SyntheticTask(cue_word_sentiment, CUE_SENTIMENT_LABELS,
                                                       "weighted_classification", "text", None, "cue_index"))
"""

MEAN_POOL_TASKS = """
\"\"\"The throwaway architecture's task shape: classification of texts whose tokens weigh 1 each.\"\"\"

from hf_attn.data.task_data import TaskLayout
from hf_attn.tasks import Classification

from .kinds import WeightedSentence


class WeightedClassification(Classification):
    layout = TaskLayout("weighted_classification")
    input_kinds = (WeightedSentence,)
    reported_metrics = (*Classification.reported_metrics, "tokens_per_text")  # a metric name of its own

    def extra_metrics(self, model, head, encoded_eval, data):
        lengths = [len(ids) for ids in encoded_eval["input_ids"]]
        scores = super().extra_metrics(model, head, encoded_eval, data)
        return {**scores, "tokens_per_text": sum(lengths) / len(lengths)}

    def encoder(self, data, tokenizer, config, head, max_length=None):
        encode_texts = super().encoder(data, tokenizer, config, head, max_length)

        def encode(batch):
            encoded = encode_texts(batch)
            encoded["token_weights"] = [[1.0] * len(ids) for ids in encoded["input_ids"]]
            return encoded

        return encode


TASK_SHAPES = (WeightedClassification(),)
"""

MEAN_POOL_CONVERTER = """
\"\"\"Converts the throwaway architecture's "original" checkpoint (a `.pt` dict: `embed` (V, H), `out.weight`,
`out.bias`).\"\"\"

import torch

from hf_attn.conversion import add_output_arguments, check_output, converter_parser

from .configuration_mean_pool import MeanPoolConfig
from .modeling_mean_pool import MeanPoolForSequenceClassification


def main(argv=None, prog=None):
    parser = converter_parser(__doc__, prog)
    parser.add_argument("--checkpoint", required=True)
    add_output_arguments(parser)
    args = parser.parse_args(argv)
    check_output(args)
    original = torch.load(args.checkpoint, map_location="cpu", weights_only=True)
    vocab_size, hidden_size = original["embed"].shape
    config = MeanPoolConfig(vocab_size=vocab_size, hidden_size=hidden_size, num_labels=original["out.bias"].numel())
    model = MeanPoolForSequenceClassification(config)
    weights = {"mean_pool.embeddings.weight": original["embed"], "classifier.weight": original["out.weight"],
               "classifier.bias": original["out.bias"]}
    model.load_state_dict(weights)
    model.save_pretrained(args.output)
    print(f"converted {args.checkpoint} -> {args.output}")
"""

MEAN_POOL_TEST = """
import torch

import hf_attn
from tests.helpers import make_inputs, tiny_config


def test_the_text_vector_is_the_weighted_mean_of_its_embeddings():
    architecture = hf_attn.ARCHITECTURES["mean_pool"]
    model = hf_attn.MeanPoolModel(tiny_config(architecture)).eval()
    inputs = make_inputs(architecture.heads[0], model.config, [3, 1])
    weights = inputs["token_weights"]
    expected = (model.embeddings(inputs["input_ids"]) * weights[..., None]).sum(1) / weights.sum(1, keepdim=True)
    torch.testing.assert_close(model(**inputs).last_hidden_state, expected)
"""

MEAN_POOL_LEARNING_TEST = """
import json

from transformers import AutoTokenizer

from hf_attn.commands.train import train


def test_it_learns_the_cues_on_its_own_task_shape_and_tokenizer(tmp_path):
    result = train(tmp_path, arch="mean_pool", num_train=400, num_eval=100, epochs=5, learning_rate=5e-2,
                   disable_tqdm=True, logging_steps=10**9)
    assert result.metrics["accuracy"] >= 0.9, result.metrics
    assert type(AutoTokenizer.from_pretrained(tmp_path)).__name__ == "MeanPoolTokenizerFast"
    recorded = json.loads((tmp_path / "hf_attn_training.json").read_text())["metrics"]  # its card's metrics
    assert recorded["tokens_per_text"] == result.metrics["tokens_per_text"] > 1 and "accuracy" in recorded
"""

MEAN_POOL_CONVERSION_TEST = """
import torch
from transformers import AutoModelForSequenceClassification

from hf_attn.cli import main


def test_hf_attn_convert_runs_its_converter(tmp_path):
    original = {"embed": torch.randn(30, 4), "out.weight": torch.randn(2, 4), "out.bias": torch.randn(2)}
    torch.save(original, tmp_path / "original.pt")
    main(["convert", "mean_pool", "--checkpoint", str(tmp_path / "original.pt"), "--output", str(tmp_path / "out")])
    model = AutoModelForSequenceClassification.from_pretrained(tmp_path / "out")
    torch.testing.assert_close(model.mean_pool.embeddings.weight, original["embed"])
    torch.testing.assert_close(model.classifier.bias, original["out.bias"])
"""

MEAN_POOL_INIT = """
\"\"\"Mean pooling.\"\"\"

__all__ = ["MeanPoolConfig", "MeanPoolForSequenceClassification", "MeanPoolModel"]
"""

MEAN_POOL_FILES = {
    "__init__.py": MEAN_POOL_INIT,
    "architecture.py": MEAN_POOL_ROW,
    "configuration_mean_pool.py": MEAN_POOL_CONFIG,
    "modeling_mean_pool.py": MEAN_POOL_MODELING,
    "kinds.py": MEAN_POOL_KINDS,
    "tokenization_mean_pool.py": MEAN_POOL_TOKENIZATION,
    "synthetic_mean_pool.py": MEAN_POOL_SYNTHETIC,
    "tasks_mean_pool.py": MEAN_POOL_TASKS,
    "convert_mean_pool_original_to_hf.py": MEAN_POOL_CONVERTER,
}
MEAN_POOL_TESTS = {
    "__init__.py": "",
    "test_modeling_mean_pool.py": MEAN_POOL_TEST,
    "test_learning_mean_pool.py": MEAN_POOL_LEARNING_TEST,
    "test_conversion_mean_pool.py": MEAN_POOL_CONVERSION_TEST,
}
# What it brings beyond the files every architecture adds: the CONTRIBUTING.md lines it answers.
MEAN_POOL_BRINGS = {"a new input, label or tokenizer kind", "a new tokenizer", "a synthetic task of its own",
                    "a new task shape", "an original checkpoint format"}  # fmt: skip

MEAN_POOL_CARD = """---
{{ card_data }}
---

# {{ model_name }}

A mean-pooling classifier ({{ paper_title }}).
"""

CARD_CHECK = """
import hf_attn, torch
from hf_attn.cards import render_model_card
config = hf_attn.MeanPoolConfig(**hf_attn.ARCHITECTURES["mean_pool"].tiny_config)
hf_attn.MeanPoolForSequenceClassification(config).save_pretrained("saved")
card = render_model_card("saved")
assert "mean-pooling classifier" in card.text and "mean_pool" in card.data.tags, card.content
print("card OK")
"""


def test_every_folder_declares_its_own_row():
    models = REPO_ROOT / "hf_attn" / "models"
    folders = sorted(path.name for path in models.iterdir() if (path / "architecture.py").is_file())
    assert sorted(ARCHITECTURES) == folders
    registry_text = (REPO_ROOT / "hf_attn" / "registry" / "table.py").read_text()
    assert not any(f"models.{name}" in registry_text for name in folders)  # no row, no import in the registry


def _package(tmp_path: Path, name: str, files: dict[str, str]) -> tuple[str, Path]:
    package = tmp_path / f"pkg_{name}"
    (package / "models" / name).mkdir(parents=True)
    for folder in (package, package / "models"):
        (folder / "__init__.py").write_text("")
    for file_name, text in files.items():
        (package / "models" / name / file_name).write_text(textwrap.dedent(text))
    return package.name, package


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"__init__.py": "", "configuration_x.py": "", "modeling_x.py": ""}, "architecture.py"),
        ({"architecture.py": "", "configuration_x.py": "", "modeling_x.py": ""}, "ARCHITECTURE"),
        ({"architecture.py": "ARCHITECTURE = None\n", "modeling_x.py": ""}, "configuration_x.py"),
        ({"architecture.py": "ARCHITECTURE = None\n", "configuration_x.py": ""}, "modeling_x.py"),
        ({"architecture.py": "ARCHITECTURE = 1\n", "configuration_x.py": "", "modeling_x.py": ""}, "Architecture"),
    ],
)
def test_a_folder_missing_a_piece_fails_naming_it(tmp_path, monkeypatch, files, message):
    package_name, package = _package(tmp_path, "x", files)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ValueError, match=message):
        discover_architectures(f"{package_name}.models", package / "models", tmp_path / "cards")


def test_a_row_without_its_card_template_fails_naming_it(tmp_path, monkeypatch):
    package_name, package = _package(tmp_path, "mean_pool", MEAN_POOL_FILES)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ValueError, match=r"model_cards/mean_pool\.md"):
        discover_architectures(f"{package_name}.models", package / "models", tmp_path / "cards")
    (tmp_path / "cards").mkdir()
    (tmp_path / "cards" / "mean_pool.md").write_text(MEAN_POOL_CARD)
    rows = discover_architectures(f"{package_name}.models", package / "models", tmp_path / "cards")
    assert list(rows) == ["mean_pool"] and rows["mean_pool"].heads[0].evidence_field is None


@pytest.mark.parametrize(
    ("original", "changed", "message"),
    [
        ('tasks="tasks_mean_pool",', 'tasks="tasks_elsewhere",', "its task shapes 'tasks_elsewhere' are not a module"),
        ('tasks="tasks_mean_pool",', 'tasks="tasks_mean_pool", arguments=dict,', "arguments must be a dataclass"),
        (
            'tasks="tasks_mean_pool",',
            'tasks="tasks_mean_pool", view_arguments=dict,',
            "its view_arguments must be a dataclass subclassing hf_attn.registry.row.ViewArguments",
        ),
        (
            'tasks="tasks_mean_pool",',
            'tasks="tasks_mean_pool", view_arguments=__import__("hf_attn.registry.row").registry.row.ViewArguments,',
            "view_arguments are the options of its own attention_view, and it has none",
        ),
        ('tasks="tasks_mean_pool",', 'tasks="tasks_mean_pool", default=True,', "says what `hf-attn demo` trains"),
        (
            "            WEIGHTED_SENTENCE,\n",
            "            __import__('hf_attn.data.kinds').data.kinds.EPISODES,\n",
            "reads episodes inputs, whose kind reads the config fields num_ways, num_shots, num_queries, "
            "max_sentence_length, use_entity_positions, which MeanPoolConfig lacks",
        ),
    ],
    ids=[
        "missing-tasks-module",
        "arguments-not-options",
        "view-arguments-not-options",
        "view-arguments-no-view",
        "default-without-demo",
        "episodes-without-their-fields",
    ],
)
def test_a_row_naming_what_its_folder_lacks_fails_naming_it(tmp_path, monkeypatch, original, changed, message):
    package = tmp_path / f"pkg_row_{len(message)}"  # a package of its own: rows are imported once per process
    folder = package / "models" / "mean_pool"
    folder.mkdir(parents=True)
    for parent in (package, package / "models"):
        (parent / "__init__.py").write_text("")
    for file_name, text in {**MEAN_POOL_FILES, "architecture.py": MEAN_POOL_ROW.replace(original, changed)}.items():
        (folder / file_name).write_text(textwrap.dedent(text))
    (tmp_path / "cards").mkdir()
    (tmp_path / "cards" / "mean_pool.md").write_text(MEAN_POOL_CARD)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ValueError, match=message):
        discover_architectures(f"{package.name}.models", package / "models", tmp_path / "cards")


def _files(root: Path) -> dict[str, bytes]:
    """Every file under the project folders of `root` (by relative path), caches left out."""
    skipped = {"__pycache__", ".pytest_cache", ".hypothesis"}
    return {
        str(path.relative_to(root)): path.read_bytes()
        for folder in ("hf_attn", "model_cards", "tests", "conversion", "benchmarks")
        for path in sorted((root / folder).rglob("*"))
        if path.is_file()
        and not path.is_symlink()
        and not skipped & set(path.relative_to(root).parts)
        and path.suffix != ".pyc"
    }


def contributing_lines() -> list[tuple[str, str]]:
    """CONTRIBUTING.md's list of the files an architecture adds: `(path pattern, when)`, `when` being `always` or
    what the file brings (a new tokenizer, a task shape, ...)."""
    text = (REPO_ROOT / "CONTRIBUTING.md").read_text()
    block = text.split("<!-- new-architecture-files -->")[1].split("<!-- /new-architecture-files -->")[0]
    return re.findall(r"^- `([^`]+)` \(([^)]+)\)", block, flags=re.MULTILINE)


def contributing_file_list(name: str, brings: set[str]) -> set[str]:
    """The files CONTRIBUTING.md says an architecture `name` adds when it brings `brings` (besides the files every
    one adds)."""
    return {path.replace("<name>", name) for path, when in contributing_lines() if when == "always" or when in brings}


def test_the_contributing_list_names_every_file_of_every_architecture():
    """Exact for every kind of architecture: each file in a model folder, and in its tests' folder, matches a line
    of the list (`<name>` the folder's name; `<part>`, `<topic>`: any name), and each file every architecture adds is
    there."""
    patterns = [path for path, _ in contributing_lines()]
    always = [path for path, when in contributing_lines() if when == "always"]
    for name in ARCHITECTURES:
        card = REPO_ROOT / "model_cards" / f"{name}.md"
        files = [path.relative_to(REPO_ROOT).as_posix() for root in ("hf_attn/models", "tests/models")
                 for path in (REPO_ROOT / root / name).rglob("*") if path.is_file() and "__pycache__" not in path.parts
                 and path.suffix != ".pyc"]  # fmt: skip
        files += [card.relative_to(REPO_ROOT).as_posix()] if card.is_file() else []
        for pattern in always:
            assert pattern.replace("<name>", name) in files, (name, pattern)
        for file in files:
            matches = [pattern for pattern in patterns if fnmatch.fnmatchcase(file, _glob(pattern, name))]
            assert matches, f"{file}: no line of CONTRIBUTING.md's file list names it"


def _glob(pattern: str, name: str) -> str:
    return re.sub(r"<(part|topic)>", "*", pattern.replace("<name>", name))


@pytest.mark.long  # a copy of the whole project, installed and tested: `make test-long`
def test_a_new_architecture_touches_only_its_folder_card_and_tests(tmp_path):
    """A copy of the project gains a mean-pooling architecture that brings its own input kind (token weights),
    tokenizer (and tokenizer kind), task shape, synthetic task and converter: its model folder, its card template and
    its tests, nothing else, the files CONTRIBUTING.md lists for what it brings. It registers from its folder alone:
    the common tests pass for it (forward, contract, padding, save/load, Trainer with its kind's collator, remote
    code without hf_attn), its own tests pass (it learns through `train()` on its task shape with its tokenizer, and
    `hf-attn convert mean_pool` runs its converter), the import graph stays one-way, and its card renders."""
    copy = tmp_path / "project"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", ".hypothesis")
    for folder in ("hf_attn", "model_cards", "tests", "conversion", "benchmarks"):
        shutil.copytree(REPO_ROOT / folder, copy / folder, symlinks=True, ignore=ignore)  # hf_attn/model_cards: a link
    for name in ("pyproject.toml", "LICENSE"):
        shutil.copy(REPO_ROOT / name, copy / name)
    original = _files(copy)
    for folder, files in ((copy / "hf_attn" / "models" / "mean_pool", MEAN_POOL_FILES),
                          (copy / "tests" / "models" / "mean_pool", MEAN_POOL_TESTS)):  # fmt: skip
        folder.mkdir()
        for name, text in files.items():
            (folder / name).write_text(textwrap.dedent(text).lstrip())
    (copy / "model_cards" / "mean_pool.md").write_text(MEAN_POOL_CARD)
    env = {**os.environ, "PYTHONPATH": str(copy)}

    def run(*command: str) -> str:
        result = subprocess.run(command, cwd=copy, env=env, capture_output=True, text=True, timeout=600, check=False)
        assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
        return result.stdout

    where = run(sys.executable, "-c", "import hf_attn; print(hf_attn.MeanPoolModel.__module__, hf_attn.__file__)")
    assert where.split()[0] == "hf_attn.models.mean_pool.modeling_mean_pool" and str(copy) in where
    tests = ["tests/test_common.py", "tests/utils/test_remote_code.py", "tests/models/mean_pool"]
    out = run(sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", *tests, "-k",
              "mean_pool")  # fmt: skip
    assert "failed" not in out and "skipped" not in out, out
    assert int(re.search(r"(\d+) passed", out)[1]) >= 15, out  # every common test of its head, remote code, its own
    out = run(sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
              "tests/test_imports.py", "tests/test_conventions.py")  # fmt: skip
    assert " passed" in out and "failed" not in out, out
    # The public namespace and Auto registration, with its folder's names among them: no shared file lists it (the
    # generated type-checking block, which an IDE reads, is rewritten by one command when the folder lands).
    out = run(sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
              "tests/registry/test_auto.py", "-k", "not type_checking_block")  # fmt: skip
    assert " passed" in out and "failed" not in out, out
    names = run(sys.executable, "-c", "import hf_attn; print(sorted(n for n in hf_attn.__all__ if 'MeanPool' in n))")
    assert names.strip() == "['MeanPoolConfig', 'MeanPoolForSequenceClassification', 'MeanPoolModel']", names
    changed = {path for path, content in _files(copy).items() if original.get(path) != content}
    expected = contributing_file_list("mean_pool", MEAN_POOL_BRINGS)
    assert changed == expected, changed ^ expected
    (tmp_path / "card").mkdir()
    result = subprocess.run([sys.executable, "-c", CARD_CHECK], cwd=tmp_path / "card", env=env, capture_output=True,
                            text=True, timeout=300, check=False)  # fmt: skip
    assert result.returncode == 0 and "card OK" in result.stdout, result.stderr[-4000:]
