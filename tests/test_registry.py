"""The registry is built from the model folders: a folder declares its own row, a folder missing a piece fails with
a message naming it, and a new architecture needs nothing outside its folder, its card template and its tests."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hf_attn.registry import ARCHITECTURES, discover_architectures
from tests.helpers import REPO_ROOT

MEAN_POOL_ROW = '''
"""A throwaway architecture: embeddings, a weighted mean over the tokens, a linear classifier."""

from hf_attn.registry_row import Architecture, Head, Paper
from hf_attn.tokenization.kinds import WORD_LEVEL_TOKENIZER

from .kinds import WEIGHTED_SENTENCE
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
        ),
    ),
    paper=Paper(title="Mean pooling", authors="Nobody", year=2026, venue="Tests", arxiv=None, bibtex="@misc{mean}",
                link="https://example.org"),
    original_code=None,
    tokenizer=WORD_LEVEL_TOKENIZER,
    synthetic_task="cue_sentiment",
    attention_fields={},
    tiny_config={"vocab_size": 50, "hidden_size": 8, "num_labels": 3},
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
"""

MEAN_POOL_KINDS = """
\"\"\"The throwaway architecture's own input kind: a text whose tokens carry weights, `token_weights` (B, T).\"\"\"

import torch

from hf_attn.data.collators import PaddingCollator
from hf_attn.data.kinds import InputKind, register_input_kind


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


WEIGHTED_SENTENCE = register_input_kind(WeightedSentence())
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
    registry_text = (REPO_ROOT / "hf_attn" / "registry.py").read_text()
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
    files = {"__init__.py": '"""Mean pooling."""\n', "architecture.py": MEAN_POOL_ROW,
             "configuration_mean_pool.py": MEAN_POOL_CONFIG, "modeling_mean_pool.py": MEAN_POOL_MODELING,
             "kinds.py": MEAN_POOL_KINDS}  # fmt: skip
    package_name, package = _package(tmp_path, "mean_pool", files)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ValueError, match=r"model_cards/mean_pool\.md"):
        discover_architectures(f"{package_name}.models", package / "models", tmp_path / "cards")
    (tmp_path / "cards").mkdir()
    (tmp_path / "cards" / "mean_pool.md").write_text(MEAN_POOL_CARD)
    rows = discover_architectures(f"{package_name}.models", package / "models", tmp_path / "cards")
    assert list(rows) == ["mean_pool"] and rows["mean_pool"].heads[0].evidence_field is None


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


def contributing_file_list(name: str) -> set[str]:
    """The files CONTRIBUTING.md says a new architecture (with a new input kind) adds, for `name`."""
    text = (REPO_ROOT / "CONTRIBUTING.md").read_text()
    block = text.split("<!-- new-architecture-files -->")[1].split("<!-- /new-architecture-files -->")[0]
    return {
        line.split()[1].strip("`").replace("<name>", name) for line in block.splitlines() if line.startswith("- `")
    }


def test_a_new_architecture_touches_only_its_folder_card_and_tests(tmp_path):
    """A copy of the project gains a mean-pooling architecture with an input kind of its own (token weights): its
    model folder (with `kinds.py`), its card template and its tests, nothing else, the files CONTRIBUTING.md lists.
    It registers, the common tests pass for it (forward, contract, padding, save/load, Trainer with its kind's
    collator, remote code without hf_attn), its own test passes, the import graph stays one-way, and its card
    renders."""
    copy = tmp_path / "project"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", ".hypothesis")
    for folder in ("hf_attn", "model_cards", "tests", "conversion", "benchmarks"):
        shutil.copytree(REPO_ROOT / folder, copy / folder, symlinks=True, ignore=ignore)  # hf_attn/model_cards: a link
    for name in ("pyproject.toml", "LICENSE"):
        shutil.copy(REPO_ROOT / name, copy / name)
    original = _files(copy)
    folder = copy / "hf_attn" / "models" / "mean_pool"
    folder.mkdir()
    files = {"__init__.py": '"""Mean pooling."""\n', "architecture.py": MEAN_POOL_ROW,
             "configuration_mean_pool.py": MEAN_POOL_CONFIG, "modeling_mean_pool.py": MEAN_POOL_MODELING,
             "kinds.py": MEAN_POOL_KINDS}  # fmt: skip
    for name, text in files.items():
        (folder / name).write_text(textwrap.dedent(text).lstrip())
    (copy / "model_cards" / "mean_pool.md").write_text(MEAN_POOL_CARD)
    (copy / "tests" / "models" / "mean_pool").mkdir()
    (copy / "tests" / "models" / "mean_pool" / "__init__.py").write_text("")
    (copy / "tests" / "models" / "mean_pool" / "test_modeling_mean_pool.py").write_text(MEAN_POOL_TEST.lstrip())
    env = {**os.environ, "PYTHONPATH": str(copy)}

    def run(*command: str) -> str:
        result = subprocess.run(command, cwd=copy, env=env, capture_output=True, text=True, timeout=600, check=False)
        assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
        return result.stdout

    where = run(sys.executable, "-c", "import hf_attn; print(hf_attn.MeanPoolModel.__module__, hf_attn.__file__)")
    assert where.split()[0] == "hf_attn.models.mean_pool.modeling_mean_pool" and str(copy) in where
    tests = ["tests/test_common.py", "tests/test_remote_code.py", "tests/models/mean_pool"]
    out = run(sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", *tests, "-k",
              "mean_pool")  # fmt: skip
    assert "failed" not in out and "skipped" not in out, out
    assert int(re.search(r"(\d+) passed", out)[1]) >= 15, out  # every common test of its head, remote code, its own
    out = run(sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
              "tests/test_imports.py", "tests/test_conventions.py")  # fmt: skip
    assert " passed" in out and "failed" not in out, out
    changed = {path for path, content in _files(copy).items() if original.get(path) != content}
    assert changed == contributing_file_list("mean_pool"), changed ^ contributing_file_list("mean_pool")
    (tmp_path / "card").mkdir()
    result = subprocess.run([sys.executable, "-c", CARD_CHECK], cwd=tmp_path / "card", env=env, capture_output=True,
                            text=True, timeout=300, check=False)  # fmt: skip
    assert result.returncode == 0 and "card OK" in result.stdout, result.stderr[-4000:]
