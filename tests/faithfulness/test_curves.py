"""The erasure curves of a faithfulness report as a PNG (`hf_attn.faithfulness.curves`)."""

from __future__ import annotations

import matplotlib.image
import pytest

from hf_attn.faithfulness import measure_faithfulness
from hf_attn.faithfulness.curves import erasure_curves_png
from hf_attn.registry.table import ARCHITECTURES
from tests.helpers import make_inputs, tiny_config

pytest.importorskip("captum", reason='the faithfulness extra: pip install "hf_attn[faithfulness]"')

LIN = ARCHITECTURES["lin_self_attentive"]


def test_the_erasure_curves_are_drawn_with_their_intervals(tmp_path):
    head = LIN.heads[0]
    config = tiny_config(LIN)
    model = head.model_class(config).eval()
    report = measure_faithfulness(model, head, [make_inputs(head, config, [6, 4, 5], seed=3)], ig_steps=2)
    path = erasure_curves_png(report, tmp_path / "curves.png", title="tiny Lin")
    picture = matplotlib.image.imread(path)
    assert picture.shape[1] > 800 and picture.std() > 0.05  # two panels of lines, not a blank page
