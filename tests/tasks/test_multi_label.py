"""Multi-label classification (`hf_attn.tasks.multi_label`): `predict` gives each text a set of label names the
model knows (a label sequence's head decodes its set), and the headline is micro-F1 and hamming loss."""

from __future__ import annotations

import pytest

from hf_attn.tasks.heads import TASK_SHAPES
from tests.helpers import shape_heads, shape_predictions


@pytest.mark.parametrize(("architecture", "head"), shape_heads("multi_label"))
def test_predict_gives_each_text_a_set_of_known_labels(architecture, head):
    model, results = shape_predictions("multi_label", architecture, head)
    assert len(results) == 2
    for result in results:
        labels = result["labels"]
        assert set(labels) <= set(model.config.id2label.values()) and len(set(labels)) == len(labels)


def test_the_headline_is_micro_f1_and_hamming_loss():
    line = TASK_SHAPES["multi_label"].headline({"micro_f1": 0.5, "hamming_loss": 0.125})
    assert line == "held-out micro-F1 0.5000, hamming loss 0.1250"
