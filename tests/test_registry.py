"""The registry is built from the model folders: a folder declares its own row, a folder missing a piece fails with
a message naming it, and a new architecture needs nothing outside its folder, its card template and its tests."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hf_attn.registry import ARCHITECTURES, discover_architectures
from tests.helpers import REPO_ROOT

MEAN_POOL_INIT = '''
"""A throwaway architecture: embeddings, a masked mean over the tokens, a linear classifier."""

from hf_attn.registry import Architecture, Head, Paper

from .configuration_mean_pool import MeanPoolConfig
from .modeling_mean_pool import MeanPoolForSequenceClassification, MeanPoolModel

ARCHITECTURE = Architecture(
    name="mean_pool",
    display_name="Mean pooling",
    config_class=MeanPoolConfig,
    base_model_class=MeanPoolModel,
    heads=(
        Head(
            MeanPoolForSequenceClassification, "AutoModelForSequenceClassification", "sentence", "text-classification"
        ),
    ),
    paper=Paper(title="Mean pooling", authors="Nobody", year=2026, venue="Tests", arxiv=None, bibtex="@misc{mean}",
                link="https://example.org"),
    original_code=None,
    tokenizer="word_level",
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

    def forward(self, input_ids, attention_mask=None, output_attentions=None, output_hidden_states=None,
                return_dict=None):
        _, output_hidden_states, return_dict = output_flags(
            self.config, output_attentions, output_hidden_states, return_dict
        )
        mask = check_token_inputs(input_ids, attention_mask, self.config.vocab_size, self.config.pad_token_id)
        embeddings = self.embeddings(input_ids) * mask[..., None]
        pooled = embeddings.sum(1) / mask.sum(1, keepdim=True).clamp(min=1)
        states = (embeddings,) if output_hidden_states else None
        output = BaseModelOutput(last_hidden_state=pooled, hidden_states=states)
        return output if return_dict else output.to_tuple()


class MeanPoolForSequenceClassification(MeanPoolPreTrainedModel):
    def __init__(self, config):
        super().__init__(config)
        self.mean_pool = MeanPoolModel(config)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)
        self.post_init()

    def forward(self, input_ids, attention_mask=None, labels=None, output_attentions=None,
                output_hidden_states=None, return_dict=None):
        output_attentions, output_hidden_states, return_dict = output_flags(
            self.config, output_attentions, output_hidden_states, return_dict
        )
        encoded = self.mean_pool(input_ids, attention_mask, None, output_hidden_states, return_dict=True)
        logits = self.classifier(encoded.last_hidden_state)
        loss = classification_loss(self.config, logits, labels) if labels is not None else None
        output = SequenceClassifierOutput(loss=loss, logits=logits, hidden_states=encoded.hidden_states)
        return output if return_dict else output.to_tuple()
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
    folders = sorted(path.name for path in models.iterdir() if (path / "__init__.py").is_file())
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
        ({"__init__.py": "", "configuration_x.py": "", "modeling_x.py": ""}, "ARCHITECTURE"),
        ({"__init__.py": "ARCHITECTURE = None\n", "modeling_x.py": ""}, "configuration_x.py"),
        ({"__init__.py": "ARCHITECTURE = None\n", "configuration_x.py": ""}, "modeling_x.py"),
        ({"__init__.py": "ARCHITECTURE = 1\n", "configuration_x.py": "", "modeling_x.py": ""}, "Architecture"),
    ],
)
def test_a_folder_missing_a_piece_fails_naming_it(tmp_path, monkeypatch, files, message):
    package_name, package = _package(tmp_path, "x", files)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ValueError, match=message):
        discover_architectures(f"{package_name}.models", package / "models", tmp_path / "cards")


def test_a_row_without_its_card_template_fails_naming_it(tmp_path, monkeypatch):
    files = {"__init__.py": MEAN_POOL_INIT, "configuration_mean_pool.py": MEAN_POOL_CONFIG,
             "modeling_mean_pool.py": MEAN_POOL_MODELING}  # fmt: skip
    package_name, package = _package(tmp_path, "mean_pool", files)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ValueError, match=r"model_cards/mean_pool\.md"):
        discover_architectures(f"{package_name}.models", package / "models", tmp_path / "cards")
    (tmp_path / "cards").mkdir()
    (tmp_path / "cards" / "mean_pool.md").write_text(MEAN_POOL_CARD)
    rows = discover_architectures(f"{package_name}.models", package / "models", tmp_path / "cards")
    assert list(rows) == ["mean_pool"] and rows["mean_pool"].heads[0].evidence_field is None


def test_a_new_architecture_touches_only_its_folder_card_and_tests(tmp_path):
    """A copy of the project gains `hf_attn/models/mean_pool/` and `model_cards/mean_pool.md`, nothing else: it
    registers, the common tests pass for it (forward, contract, save/load,
    Trainer, remote code without hf_attn), and its card renders."""
    copy = tmp_path / "project"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(REPO_ROOT / "hf_attn", copy / "hf_attn", symlinks=False, ignore=ignore)
    shutil.copytree(REPO_ROOT / "tests", copy / "tests", ignore=ignore)
    shutil.copy(REPO_ROOT / "pyproject.toml", copy / "pyproject.toml")
    folder = copy / "hf_attn" / "models" / "mean_pool"
    folder.mkdir()
    files = {"__init__.py": MEAN_POOL_INIT, "configuration_mean_pool.py": MEAN_POOL_CONFIG,
             "modeling_mean_pool.py": MEAN_POOL_MODELING}  # fmt: skip
    for name, text in files.items():
        (folder / name).write_text(textwrap.dedent(text).lstrip())
    (copy / "hf_attn" / "model_cards" / "mean_pool.md").write_text(MEAN_POOL_CARD)
    env = {**os.environ, "PYTHONPATH": str(copy)}

    def run(*command: str) -> str:
        result = subprocess.run(command, cwd=copy, env=env, capture_output=True, text=True, timeout=600, check=False)
        assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
        return result.stdout

    where = run(sys.executable, "-c", "import hf_attn; print(hf_attn.MeanPoolModel.__module__, hf_attn.__file__)")
    assert where.split()[0] == "hf_attn.models.mean_pool.modeling_mean_pool" and str(copy) in where
    out = run(sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
              "tests/test_common.py", "tests/test_remote_code.py", "-k", "mean_pool")  # fmt: skip
    assert " passed" in out and "failed" not in out, out
    (tmp_path / "card").mkdir()
    result = subprocess.run([sys.executable, "-c", CARD_CHECK], cwd=tmp_path / "card", env=env, capture_output=True,
                            text=True, timeout=300, check=False)  # fmt: skip
    assert result.returncode == 0 and "card OK" in result.stdout, result.stderr[-4000:]
