"""Lin et al. (2017): the paper's equations on small cases, the heads' specifics, and pickle-free loading."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from hf_attn import (
    ARCHITECTURES,
    LinSelfAttentiveConfig,
    LinSelfAttentiveForPairClassification,
    LinSelfAttentiveForSequenceClassification,
    LinSelfAttentiveModel,
)
from hf_attn.models.lin_self_attentive.modeling_lin_self_attentive import annotation_penalty
from tests.helpers import tiny_config

ARCH = ARCHITECTURES["lin_self_attentive"]


def randomised(model: nn.Module) -> nn.Module:
    """Random attention context vectors: they start at zero (uniform hops), which would make the checks trivial."""
    torch.manual_seed(1)
    for module in model.modules():
        if hasattr(module, "context") and isinstance(module.context, nn.Parameter):
            nn.init.normal_(module.context)
    return model.eval()


def test_config_defaults_are_the_papers():
    config = LinSelfAttentiveConfig()
    assert (config.hidden_size, config.attention_hidden_size, config.attention_hops) == (300, 350, 30)
    assert (config.classifier_hidden_size, config.penalty_coefficient, config.hidden_dropout_prob) == (3000, 1.0, 0.5)
    assert config.penalty_type == "squared_frobenius" and config.pack_sequences and config.attention_mask_value is None
    assert config.pair_interaction_size == 600


@pytest.mark.parametrize(
    ("field", "value"),
    [("penalty_type", "l2"), ("flatten_order", "random"), ("attention_hops", 0), ("hidden_dropout_prob", 1.0)],
)
def test_config_rejects_bad_values(field, value):
    with pytest.raises(Exception, match=field):
        LinSelfAttentiveConfig(**{field: value})


def test_penalty_is_the_squared_frobenius_norm_of_aat_minus_identity():
    # Two hops on two different tokens: AAᵀ = I, P = 0. Two hops on the same token: AAᵀ = all ones, P = 2.
    distinct = torch.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
    same = torch.tensor([[[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]]])
    uniform = torch.full((1, 2, 2), 0.5)  # AAᵀ = 0.5 everywhere: P = 2·0.25 + 2·0.25 = 1
    mask = torch.ones(1, 3, dtype=torch.bool)
    assert annotation_penalty(distinct, mask).item() == 0.0
    assert annotation_penalty(same, mask).item() == 2.0
    assert annotation_penalty(uniform, mask[:, :2]).item() == pytest.approx(1.0)
    assert annotation_penalty(same, mask, "frobenius").item() == pytest.approx(2.0**0.5)
    assert annotation_penalty(same, torch.zeros(1, 3, dtype=torch.bool)).item() == 0.0  # no tokens, no penalty


def test_sentence_embedding_is_attention_times_hidden_states():
    model = randomised(LinSelfAttentiveModel(tiny_config(ARCH)))
    input_ids = torch.tensor([[5, 6, 7, 8], [9, 10, 0, 0]])
    output = model(input_ids, attention_mask=(input_ids != 0).long())
    torch.testing.assert_close(output.sentence_embedding, output.hop_attentions @ output.last_hidden_state)
    assert torch.equal(output.last_hidden_state[1, 2:], torch.zeros(2, 2 * model.config.hidden_size))
    # eq. 6 by hand for example 0: A = softmax(W_s2 tanh(W_s1 Hᵀ)) (no biases)
    hidden = output.last_hidden_state[0]
    scores = model.attention.context @ torch.tanh(model.attention.projection.weight @ hidden.T)
    torch.testing.assert_close(output.hop_attentions[0], torch.softmax(scores, dim=-1))
    assert model.attention.projection.bias is None
    torch.testing.assert_close(output.penalty, annotation_penalty(output.hop_attentions, input_ids != 0))


def test_no_mask_means_every_position_is_real():
    """transformers' contract: `attention_mask=None` masks nothing, and a pad id inside a text is a token."""
    model = randomised(LinSelfAttentiveModel(tiny_config(ARCH)))
    input_ids = torch.tensor([[5, 6, 7, 8], [9, 0, 10, 0]])
    unmasked = model(input_ids).hop_attentions
    torch.testing.assert_close(unmasked, model(input_ids, torch.ones_like(input_ids)).hop_attentions)
    assert (unmasked[1, :, 1] > 0).all() and (unmasked[1, :, 3] > 0).all()  # the pad ids are read


@pytest.mark.parametrize("flatten_order", ["hop_major", "feature_major"])
def test_classifier_reads_m_flattened_in_the_configured_order(flatten_order):
    model = randomised(LinSelfAttentiveForSequenceClassification(tiny_config(ARCH, flatten_order=flatten_order)))
    input_ids = torch.tensor([[5, 6, 7, 8, 9]])
    output = model(input_ids)
    matrix = output.sentence_embedding[0]  # (R, 2U)
    flat = matrix.reshape(-1) if flatten_order == "hop_major" else matrix.T.reshape(-1)
    head = model.classifier
    torch.testing.assert_close(output.logits[0], head.out_proj(torch.tanh(head.dense(flat))))


def test_loss_adds_the_penalty_with_its_coefficient():
    config = tiny_config(ARCH, penalty_coefficient=0.7, hidden_dropout_prob=0.0)
    model = randomised(LinSelfAttentiveForSequenceClassification(config))
    input_ids, labels = torch.tensor([[5, 6, 7], [8, 9, 0]]), torch.tensor([0, 2])
    output = model(input_ids, labels=labels)
    expected = nn.functional.cross_entropy(output.logits, labels) + 0.7 * output.penalty.mean()
    torch.testing.assert_close(output.loss, expected)


@pytest.mark.parametrize(
    ("problem_type", "labels"),
    [
        ("regression", torch.tensor([0.5, -1.0])),
        ("multi_label_classification", torch.tensor([[1.0, 0, 1], [0, 1, 0]])),
    ],
)
def test_problem_types(problem_type, labels):
    num_labels = 1 if problem_type == "regression" else 3
    config = tiny_config(ARCH, num_labels=num_labels, problem_type=problem_type, penalty_coefficient=0.0)
    model = randomised(LinSelfAttentiveForSequenceClassification(config))
    output = model(torch.tensor([[5, 6, 7], [8, 9, 0]]), labels=labels)
    if problem_type == "regression":
        expected = nn.functional.mse_loss(output.logits.squeeze(-1), labels)
    else:
        expected = nn.functional.binary_cross_entropy_with_logits(output.logits, labels)
    torch.testing.assert_close(output.loss, expected)


def test_pair_head_is_the_gated_multiplicative_interaction():
    model = randomised(LinSelfAttentiveForPairClassification(tiny_config(ARCH, pair_interaction_size=5)))
    premise, hypothesis = torch.tensor([[5, 6, 7, 8]]), torch.tensor([[9, 10, 0]])
    output = model(premise, hypothesis, pair_attention_mask=torch.tensor([[1, 1, 0]]))
    m_p, m_h = output.sentence_embedding[0], output.pair_sentence_embedding[0]  # (R, 2U)
    interaction = model.interaction
    f_r = torch.stack(
        [
            (m_p[r] @ interaction.premise_factor[r]) * (m_h[r] @ interaction.hypothesis_factor[r])
            for r in range(m_p.size(0))
        ]
    )  # batched_dot over hops, then F_h ⊙ F_p
    head = model.classifier
    torch.testing.assert_close(output.logits[0], head.out_proj(torch.tanh(head.dense(f_r.reshape(-1)))))
    assert output.pair_hop_attentions.shape == (1, 3, 3) and output.pair_hop_attentions[0, :, 2].abs().sum() == 0


def test_pair_head_errors_name_the_pair_inputs():
    model = LinSelfAttentiveForPairClassification(tiny_config(ARCH))
    with pytest.raises(ValueError, match="`pair_input_ids` must have 2 dimensions"):
        model(torch.tensor([[5, 6]]), torch.tensor([5, 6]))
    with pytest.raises(ValueError, match="batch size"):
        model(torch.tensor([[5, 6]]), torch.tensor([[5, 6], [7, 8]]))
    with pytest.raises(ValueError, match="`pair_attention_mask` must have the same shape"):
        model(torch.tensor([[5, 6]]), torch.tensor([[5, 6]]), pair_attention_mask=torch.ones(1, 3))


@pytest.mark.parametrize(
    "head_class", [LinSelfAttentiveForSequenceClassification, LinSelfAttentiveForPairClassification]
)
def test_bad_inputs_are_clear_value_errors(head_class):
    model = head_class(tiny_config(ARCH))
    good = torch.tensor([[5, 6, 7]])
    pair = {"pair_input_ids": good} if head_class is LinSelfAttentiveForPairClassification else {}
    with pytest.raises(ValueError, match="`input_ids` must have 2 dimensions"):
        model(torch.tensor([5, 6, 7]), **pair)
    with pytest.raises(ValueError, match="`attention_mask` must have the same shape"):
        model(good, attention_mask=torch.ones(3, 1), **pair)
    with pytest.raises(ValueError, match=r"outside the vocabulary \[0, 50\)"):
        model(torch.tensor([[5, 50]]), **pair)
