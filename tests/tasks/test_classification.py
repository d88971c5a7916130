"""Classification of a text or a pair (`hf_attn.tasks.classification`): `predict` gives each text its most
probable class by name, that probability, and at most `top_k` attended tokens; the headline is the accuracy."""

from __future__ import annotations

import pytest

from hf_attn.tasks.heads import TASK_SHAPES
from tests.helpers import shape_heads, shape_predictions


@pytest.mark.parametrize(("architecture", "head"), shape_heads("classification") + shape_heads("pair_classification"))
def test_predict_names_the_most_probable_class_with_its_probability(architecture, head):
    name = "pair_classification" if head.inputs.pair else "classification"
    model, results = shape_predictions(name, architecture, head, top_k=2)
    assert len(results) == 2
    for result in results:
        assert result["label"] in model.config.id2label.values()
        assert 1 / model.config.num_labels - 1e-6 <= result["score"] <= 1  # the largest of the probabilities
        assert len(result["attended"]) <= 2 and all(weight >= 0 for _, weight in result["attended"])


def test_the_headline_is_the_accuracy():
    assert TASK_SHAPES["classification"].headline({"accuracy": 0.91234}) == "held-out accuracy 0.9123"
    assert TASK_SHAPES["pair_classification"].pairs and not TASK_SHAPES["classification"].pairs
