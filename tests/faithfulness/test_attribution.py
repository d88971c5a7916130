"""Integrated Gradients (Captum) and gradient × input at a head's embedding layers
(`hf_attn.faithfulness.attribution`): completeness through every measured head, and the layers that read the text
found by what they read."""

from __future__ import annotations

import pytest
import torch

from hf_attn.data.importance import ids_of, importance_mask
from hf_attn.data.kinds import EpisodeLabels
from hf_attn.faithfulness.attribution import gradient_times_input, integrated_gradients, text_embedding_layers
from hf_attn.faithfulness.measure import check_measurable, one_query_per_episode, probabilities_of
from hf_attn.registry.table import ARCHITECTURES
from tests.helpers import all_heads, make_inputs, tiny_config

pytest.importorskip("captum", reason='the faithfulness extra: pip install "hf_attn[faithfulness]"')


def measurable(architecture, head) -> bool:
    try:
        check_measurable(head)
    except (ValueError, NotImplementedError):
        return False
    return True


MEASURABLE = [param for param in all_heads() if measurable(*param.values)]


def measured_inputs(head, inputs: dict) -> dict:
    """`inputs` as the measures read them: a few-shot head's episodes one query each (`one_query_per_episode`)."""
    return one_query_per_episode(inputs) if isinstance(head.labels, EpisodeLabels) else inputs


# Heads whose output is not continuous in the embeddings, so that a path from x' to x can cross a jump: Captum's
# delta then reports the gap, which more steps do not close.
JUMPS = {
    "AttentionXmlForLabelTree": "level d scores only the children of level d − 1's top candidates (a top-k: the set "
    "changes along the path)",
}


@pytest.mark.parametrize(("architecture", "head"), MEASURABLE)
def test_integrated_gradients_are_complete_through_the_embedding_layer(architecture, head):
    """Σ_t a_t = p(ŷ|x) − p(ŷ|x') (Sundararajan et al. 2017, completeness) for a tiny model of every head that is
    measured: the attributions' sum against the two probabilities computed here, within Captum's own delta, which
    is small at 64 steps (except where the output jumps along the path, `JUMPS`)."""
    torch.manual_seed(0)
    config = tiny_config(architecture)
    model = head.model_class(config).eval()
    inputs = measured_inputs(head, make_inputs(head, config, [7, 4], seed=1))  # STCKA: 4 and 3 concepts
    probability = probabilities_of(head)
    with torch.no_grad():
        scores = probability(model(**inputs))
    predicted = scores.argmax(-1)
    pad = config.pad_token_id or 0
    explained = lambda batch: probability(model(**batch))  # noqa: E731
    attributions, delta = integrated_gradients(
        explained, model, inputs, predicted, 64, mask_name=importance_mask(head)
    )
    over = importance_mask(head)
    ids = inputs[ids_of(over)]
    baseline = {**inputs, ids_of(over): torch.full_like(ids, pad)}  # x': the padding token's vectors, same mask
    with torch.no_grad():
        empty = probability(model(**baseline)).gather(1, predicted[:, None]).squeeze(1)
    full = scores.gather(1, predicted[:, None]).squeeze(1)
    total = attributions.reshape(len(ids), -1).sum(1)
    assert torch.allclose(total - (full - empty), delta, atol=1e-5), (total, full - empty, delta)
    if head.model_class.__name__ in JUMPS:  # the delta reports the jump; no number of steps removes it
        return
    assert delta.abs().max() < 0.05 * float((full - empty).abs().max()) + 5e-4, delta  # the Riemann sum converged


def test_the_label_tree_is_read_at_every_levels_embedding_and_the_gradient_is_exact():
    """AttentionXML's label tree reads the words with one table per level: all three are found and attributed.
    Gradient × input is Σ_d e_td ∂p/∂e_td exactly: against the gradient torch computes of the same function."""
    architecture = ARCHITECTURES["attention_xml"]
    head = next(head for head in architecture.heads if head.model_class.__name__ == "AttentionXmlForLabelTree")
    torch.manual_seed(0)
    config = tiny_config(architecture)
    model = head.model_class(config).eval()
    inputs = make_inputs(head, config, [5, 3], seed=1)
    layers = text_embedding_layers(model, inputs)
    assert len(layers) == len(model.levels) == 3
    probability = probabilities_of(head)
    predicted = probability(model(**inputs)).argmax(-1)
    ours = gradient_times_input(lambda batch: probability(model(**batch)), model, inputs, predicted, layers)
    vectors = [layer(inputs["input_ids"]).detach().requires_grad_(True) for layer in layers]
    handles = [layer.register_forward_hook(lambda module, args, output, v=v: v)
               for layer, v in zip(layers, vectors, strict=True)]  # fmt: skip
    try:
        chosen = probability(model(**inputs)).gather(1, predicted[:, None]).sum()
        gradients = torch.autograd.grad(chosen, vectors)
    finally:
        for handle in handles:
            handle.remove()
    expected = sum((g * v).sum(-1) for g, v in zip(gradients, vectors, strict=True)) * inputs["attention_mask"]
    assert torch.allclose(ours, expected, atol=1e-6)
