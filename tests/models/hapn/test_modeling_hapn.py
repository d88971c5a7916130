"""HAPN's equations on tiny hand-checked cases: word-level attention (§3.2), feature-level attention (§3.3),
instance-level multi cross attention (§3.4), the weighted distance; any K, ragged shots, the ablation switches."""

from __future__ import annotations

import pytest
import torch

from hf_attn.models.hapn.modeling_hapn import HapnForFewShotClassification, HapnModel
from hf_attn.registry.table import get_architecture
from tests.helpers import make_inputs, tiny_config

ARCHITECTURE = get_architecture("hapn")


def build(**overrides):
    torch.manual_seed(0)
    config = tiny_config(ARCHITECTURE, **overrides)
    return HapnForFewShotClassification(config).eval(), config


def episode(config, lengths=(4, 6), seed=3):
    return make_inputs(ARCHITECTURE.heads[0], config, list(lengths), seed=seed)


def test_the_logits_are_the_papers_three_attentions():
    model, config = build()
    inputs = episode(config)
    output = model(**inputs, output_hidden_states=True)
    _, query_states, support, queries = output.hidden_states
    # §3.2: u_t = tanh(W_w h_t + b_w), α = softmax(u_tᵀ u_w) over real tokens, s = Σ α_t h_t
    pooling = model.hapn.word_attention
    scores = torch.tanh(pooling.projection(query_states)) @ pooling.context[0]
    mask = inputs["attention_mask"].bool()
    alpha = scores.masked_fill(~mask, float("-inf")).softmax(-1).nan_to_num(0.0) * mask
    torch.testing.assert_close(output.word_attentions, alpha)
    torch.testing.assert_close(queries, (alpha[..., None] * query_states).sum(-2))
    # §3.4: mca = [s_φ; q_φ; |s_φ − q_φ|; s_φ ⊙ q_φ], γ = sum(tanh(f_φ'(mca))), β = softmax over shots, c = Σ β s
    f, f2 = model.instance_attention.projection, model.instance_attention.matching
    s, q = torch.broadcast_tensors(f(support)[:, None], f(queries)[:, :, None, None])
    gamma = torch.tanh(f2(torch.cat([s, q, (s - q).abs(), s * q], -1))).sum(-1)
    beta = gamma.softmax(-1)
    prototypes = (beta[..., None] * support[:, None]).sum(3)
    torch.testing.assert_close(output.instance_attentions, beta)
    torch.testing.assert_close(output.prototypes, prototypes)
    # §3.3 and the distance: λ ≥ 0 per class and feature, logits = −Σ λ (c − q)²
    lam = output.feature_scores
    assert lam.shape == (2, config.num_ways, config.hidden_size) and (lam >= 0).all() and (lam > 0).any()
    torch.testing.assert_close(output.logits, -(lam[:, None] * (prototypes - queries[:, :, None]) ** 2).sum(-1))


def test_the_feature_attention_reads_the_max_pooled_support_states():
    model, config = build()
    inputs = episode(config)
    encoded = model.hapn(inputs["support_input_ids"], inputs["support_attention_mask"])
    states = encoded.last_hidden_state.masked_fill(~inputs["support_attention_mask"].bool()[..., None], float("-inf"))
    torch.testing.assert_close(encoded.max_pooled_output, states.max(-2).values)
    shots = torch.ones(inputs["support_input_ids"].shape[:3], dtype=torch.bool)
    torch.testing.assert_close(
        model(**inputs).feature_scores, model.feature_attention(encoded.max_pooled_output, shots)
    )


def test_an_empty_shot_changes_nothing_so_any_k_and_ragged_classes_work():
    """Adding an all-padding support instance to every class (K → K + 1) gives the same logits and maps: padded
    shots are left out of the feature attention's convolutions and mean, of β and of the prototype."""
    model, config = build()
    inputs = episode(config)
    padded = dict(inputs)
    for name in ("support_input_ids", "support_attention_mask"):
        extra = torch.zeros_like(inputs[name][:, :, :1])
        padded[name] = torch.cat([inputs[name], extra], dim=2)
    expected, actual = model(**inputs), model(**padded)
    torch.testing.assert_close(actual.logits, expected.logits, rtol=0, atol=1e-5)
    torch.testing.assert_close(actual.feature_scores, expected.feature_scores, rtol=0, atol=1e-5)
    torch.testing.assert_close(actual.instance_attentions[..., :-1], expected.instance_attentions, rtol=0, atol=1e-6)
    assert (actual.instance_attentions[..., -1] == 0).all()
    one_shot = {name: tensor[:, :, :1] if name.startswith("support_") else tensor for name, tensor in inputs.items()}
    labels = torch.zeros(inputs["input_ids"].shape[:2], dtype=torch.long)
    output = model(**one_shot, labels=labels)  # K = 1: β = 1, the prototype is the single shot
    assert torch.isfinite(output.loss) and (output.instance_attentions == 1).all()


def test_the_encoder_is_padding_invariant():
    torch.manual_seed(0)
    encoder = HapnModel(tiny_config(ARCHITECTURE)).eval()
    ids, mask = torch.tensor([[5, 6, 7, 0, 0]]), torch.tensor([[1, 1, 1, 0, 0]])
    padded, alone = encoder(ids, mask), encoder(ids[:, :3], mask[:, :3])
    torch.testing.assert_close(padded.pooler_output, alone.pooler_output, rtol=0, atol=1e-6)
    torch.testing.assert_close(padded.word_attentions[:, :3], alone.word_attentions, rtol=0, atol=1e-6)
    assert (padded.word_attentions[:, 3:] == 0).all()


@pytest.mark.parametrize("switch", ["use_word_attention", "use_feature_attention", "use_instance_attention"])
def test_each_attention_can_be_switched_off(switch):
    model, config = build(**{switch: False})
    inputs = episode(config)
    output = model(**inputs, labels=torch.zeros(inputs["input_ids"].shape[:2], dtype=torch.long))
    field = {"use_word_attention": "word_attentions", "use_feature_attention": "feature_scores",
             "use_instance_attention": "instance_attentions"}[switch]  # fmt: skip
    assert getattr(output, field) is None and torch.isfinite(output.loss)
    output.loss.backward()
