"""Model cards, parametrised over the registry: every architecture's card renders, parses and validates."""

from __future__ import annotations

import json

import pytest
import torch
from huggingface_hub import ModelCard
from huggingface_hub.repocard_data import model_index_to_eval_results

from hf_attn.cards import CONVERSION_FILE, render_model_card
from hf_attn.registry.table import ARCHITECTURES
from hf_attn.tasks.record import TRAINING_FILE
from tests.helpers import all_heads, tiny_config
from tests.hub_server import validate_card_metadata

TRAINING = {
    "dataset": {"type": "hf_attn/cue_sentiment", "name": "cue_sentiment (synthetic)", "description": "a task"},
    "settings": {"training examples": 100, "learning rate": 0.01},
    "metrics": {"accuracy": 0.97, "hit_rate": 0.91, "precision_at_1": 0.5},
}
CONVERSION = {
    "original_code": "https://example.org/original",
    "script": "conversion/convert_x.py",
    "checkpoint": "original.pt",
    "sha256": "ab" * 32,
    "max_abs_diff": {"logits": 1.2e-7},
}


@pytest.mark.parametrize(("architecture", "head"), all_heads())
def test_card_renders_parses_and_validates(architecture, head, tmp_path):
    torch.manual_seed(0)
    config = tiny_config(architecture)
    head.model_class(config).save_pretrained(tmp_path)
    (tmp_path / TRAINING_FILE).write_text(json.dumps(TRAINING))
    (tmp_path / CONVERSION_FILE).write_text(json.dumps(CONVERSION))
    render_model_card(tmp_path, repo_id="alice/model").save(tmp_path / "README.md")

    card = ModelCard.load(tmp_path / "README.md")
    assert validate_card_metadata(str(card)) == []
    assert card.data.library_name == "transformers" and card.data.license == architecture.license
    assert {"hf_attn", architecture.name} <= set(card.data.tags)
    if head.pipeline_tag:
        assert card.data.pipeline_tag == head.pipeline_tag
    # every metric reaches the model-index, including those transformers' own card writer drops
    _, results = model_index_to_eval_results(card.data.to_dict()["model-index"])
    assert {(r.metric_type, r.metric_value) for r in results} == set(TRAINING["metrics"].items())
    text = card.text
    assert "{{" not in text and "}}" not in text
    assert "\n# alice/model\n" in f"\n{text}"  # the heading keeps the name when the model-index takes it
    assert architecture.paper.bibtex in text and architecture.paper.url in text
    assert head.model_class.__name__ in text
    # Remote code loads a head through its Auto class; a head without one says it needs hf_attn.
    assert ("trust_remote_code=True" in text) if head.auto_class else ("needs hf_attn" in text)
    assert "sha256" in text and "1.20e-07" in text and "hit_rate" in text
    for value in architecture.tiny_config.values():
        assert str(value) in text  # the config's hyper-parameters are in the architecture table


@pytest.mark.parametrize("architecture", list(ARCHITECTURES.values()), ids=list(ARCHITECTURES))
def test_card_without_records_says_so(architecture, tmp_path):
    architecture.heads[0].model_class(tiny_config(architecture)).save_pretrained(tmp_path)
    card = render_model_card(tmp_path)
    assert "No training record" in card.text and "Not converted" in card.text
    assert "model-index" not in card.data.to_dict()


@pytest.mark.parametrize(("architecture", "head"), all_heads())
def test_every_heads_card_shows_a_loading_line_that_names_a_real_class(architecture, head, tmp_path):
    """The card's code loads the head with its Auto class, or (a head without one: pairs, the label tree) with its
    own hf_attn class; it never prints `import None` or an empty import."""
    config = tiny_config(architecture)
    config.architectures = [head.model_class.__name__]
    config.save_pretrained(tmp_path)
    text = str(render_model_card(tmp_path, repo_id="alice/model"))
    loader = head.auto_class or head.model_class.__name__
    assert f'model = {loader}.from_pretrained("alice/model")' in text
    assert "import None" not in text and "import ," not in text and "None.from_pretrained" not in text
    if head.auto_class is None:
        assert f"from hf_attn import {head.model_class.__name__}" in text


def test_every_synthetic_tasks_card_description_is_plain_text():
    """A card's training section describes its data with the task generator's first docstring line: a pointer to a
    module docstring ("(module docstring)") means nothing on a card and is dropped."""
    from hf_attn.data.synthetic import SYNTHETIC_TASKS
    from hf_attn.registry.table import ARCHITECTURES
    from hf_attn.training.preparation import task_summary

    assert {architecture.synthetic_task for architecture in ARCHITECTURES.values()} <= set(SYNTHETIC_TASKS)

    assert task_summary("Short texts (module docstring).\n\nMore.") == "Short texts."
    for name, task in SYNTHETIC_TASKS.items():
        summary = task_summary(task.generator.__doc__)
        assert summary and "docstring" not in summary and ".)" not in summary, (name, summary)
