"""Proto-HATT's equations on tiny hand-checked cases: the instance-level attention (eq. 6–8), the feature-level
attention (eq. 9–10), the distance, the plain prototypical network, and the masks the original code lacks."""

from __future__ import annotations

import pytest
import torch

from hf_attn.models.proto_hatt.configuration_proto_hatt import ProtoHattConfig
from hf_attn.models.proto_hatt.modeling_proto_hatt import (
    ProtoHattForFewShotClassification,
    ProtoHattModel,
    ProtoHattProtoNetForFewShotClassification,
)
from hf_attn.registry.table import get_architecture
from tests.helpers import head_of, make_inputs, tiny_config

ARCHITECTURE = get_architecture("proto_hatt")


def episode(config, lengths=(4, 6)):
    return make_inputs(ARCHITECTURE.heads[0], config, list(lengths), seed=3)


def test_the_logits_are_the_papers_hybrid_attention():
    torch.manual_seed(0)
    config = tiny_config(ARCHITECTURE)
    model = ProtoHattForFewShotClassification(config).eval()
    inputs = episode(config)
    output = model(**inputs, output_hidden_states=True)
    _, _, support, queries = output.hidden_states  # (B, N, K, D), (B, Q, D)
    g = model.instance_attention.projection
    # eq. 7: e_j = sum(tanh(g(x_j) ⊙ g(q))), eq. 8: softmax over the shots, eq. 6: c = Σ α_j x_j
    scores = torch.tanh(g(support)[:, None] * g(queries)[:, :, None, None]).sum(-1)
    alpha = scores.softmax(-1)
    prototypes = (alpha[..., None] * support[:, None]).sum(3)
    torch.testing.assert_close(output.instance_attentions, alpha)
    torch.testing.assert_close(output.prototypes, prototypes)
    # eq. 9–10: z ≥ 0 per class and feature; logits = −Σ z (c − q)²
    z = output.feature_scores
    assert z.shape == (2, config.num_ways, config.hidden_size) and (z >= 0).all() and (z > 0).any()
    expected = -(z[:, None] * (prototypes - queries[:, :, None]) ** 2).sum(-1)
    torch.testing.assert_close(output.logits, expected)


def test_the_plain_prototypical_network_uses_the_mean_and_the_unweighted_distance():
    torch.manual_seed(0)
    config = tiny_config(ARCHITECTURE)
    model = ProtoHattProtoNetForFewShotClassification(config).eval()
    inputs = episode(config)
    output = model(**inputs, output_hidden_states=True)
    _, _, support, queries = output.hidden_states
    expected = -((support.mean(2)[:, None] - queries[:, :, None]) ** 2).sum(-1)
    torch.testing.assert_close(output.logits, expected)
    assert output.instance_attentions is None and output.feature_scores is None


def test_the_encoder_max_pools_relu_states_over_real_tokens_only():
    torch.manual_seed(0)
    config = tiny_config(ARCHITECTURE)
    encoder = ProtoHattModel(config).eval()
    ids = torch.tensor([[5, 6, 7, 0, 0, 0]])
    mask = torch.tensor([[1, 1, 1, 0, 0, 0]])
    entities = torch.tensor([[0, 2]])
    padded = encoder(ids, mask, entities)
    alone = encoder(ids[:, :3], mask[:, :3], entities)
    torch.testing.assert_close(padded.pooler_output, alone.pooler_output, rtol=0, atol=1e-6)
    assert (padded.last_hidden_state[:, 3:] == 0).all() and (padded.pooler_output >= 0).all()
    # The original's behaviour (mask_padding=False): padding carries position embeddings and changes the encoding.
    unmasked = ProtoHattModel(tiny_config(ARCHITECTURE, mask_padding=False)).eval()
    unmasked.load_state_dict(encoder.state_dict())
    assert not torch.allclose(
        unmasked(ids, mask, entities).pooler_output, unmasked(ids[:, :3], mask[:, :3], entities).pooler_output
    )


def test_an_empty_support_instance_takes_no_part_in_the_instance_attention():
    torch.manual_seed(0)
    config = tiny_config(ARCHITECTURE)
    model = ProtoHattForFewShotClassification(config).eval()
    inputs = episode(config)
    inputs["support_attention_mask"][0, 1, 2] = 0
    inputs["support_input_ids"][0, 1, 2] = config.pad_token_id
    output = model(**inputs)
    assert (output.instance_attentions[0, :, 1, 2] == 0).all()
    torch.testing.assert_close(output.instance_attentions.sum(-1), torch.ones_like(output.instance_attentions.sum(-1)))


def test_k_and_n_are_checked_with_errors_naming_the_argument():
    torch.manual_seed(0)
    config = tiny_config(ARCHITECTURE)
    model = ProtoHattForFewShotClassification(config).eval()
    inputs = episode(config)
    with pytest.raises(ValueError, match=r"`support_input_ids` has K = 2 shots.*tied to K = 3"):
        model(**{**inputs, "support_input_ids": inputs["support_input_ids"][:, :, :2],
                 "support_attention_mask": inputs["support_attention_mask"][:, :, :2],
                 "support_entity_positions": inputs["support_entity_positions"][:, :, :2]})  # fmt: skip
    one_way = {name: tensor[:, :1] if name.startswith("support_") else tensor for name, tensor in inputs.items()}
    with pytest.raises(ValueError, match=r"`support_input_ids` holds 1 class"):
        model(**one_way)
    with pytest.raises(ValueError, match=r"`entity_positions` is required"):
        model(**{**inputs, "entity_positions": None})
    # N = 2 and K = 1 are episodes like any other (K = 1: a 1×1 feature-attention kernel).
    two_way = {name: tensor[:, :2] if name.startswith("support_") else tensor for name, tensor in inputs.items()}
    labels = torch.zeros(inputs["input_ids"].shape[:2], dtype=torch.long)
    assert model(**two_way, labels=labels).logits.shape[-1] == 2
    one_shot = ProtoHattForFewShotClassification(tiny_config(ARCHITECTURE, num_shots=1)).eval()
    single = {name: tensor[:, :, :1] if name.startswith("support_") else tensor for name, tensor in inputs.items()}
    assert torch.isfinite(one_shot(**single, labels=labels).loss)


def test_an_even_k_reads_the_first_k_rows_of_the_grown_shot_axis_as_the_original():
    """K = 4: two convolutions of kernel (4, 1) and padding 2 grow the shot axis to 6 rows; the last one (kernel 4,
    stride 4) reads rows 0–3 only. Changing what reaches rows 4–5 changes nothing."""
    torch.manual_seed(0)
    config = ProtoHattConfig(vocab_size=20, hidden_size=4, num_shots=4, feature_attention_channels=[3, 5])
    attention = ProtoHattForFewShotClassification(config).feature_attention.eval()
    support = torch.rand(1, 2, 4, 4)
    features = support.reshape(2, 1, 4, 4)
    for convolution in attention.convolutions:
        features = torch.relu(convolution(features))
    assert features.shape[2] == 6
    torch.testing.assert_close(attention.output(features), attention.output(features[:, :, :4]))
    with pytest.raises(ValueError, match="num_shots = 4 with 4 feature-attention convolutions"):
        ProtoHattForFewShotClassification(ProtoHattConfig(num_shots=4, feature_attention_channels=[2, 2, 2, 2]))


@pytest.mark.parametrize(
    "class_name", ["ProtoHattForFewShotClassification", "ProtoHattProtoNetForFewShotClassification"]
)
def test_proto_hatt_entity_positions_must_lie_within_the_text(class_name):
    model, config, head = head_of("proto_hatt", class_name)
    inputs = make_inputs(head, config, [6, 4])
    model(**inputs)
    for name in ("entity_positions", "support_entity_positions"):
        for position in (10**6, inputs[name.replace("entity_positions", "input_ids")].size(-1)):
            bad = inputs[name].clone()
            bad.view(-1, 2)[0, 1] = position
            with pytest.raises(ValueError, match=rf"`{name}` holds token index {position} .* outside its text"):
                model(**{**inputs, name: bad})
        # Inside the padded width but past the text's own tokens: still outside the text.
        lengths = inputs[name.replace("entity_positions", "attention_mask")].sum(-1)
        bad = inputs[name].clone()
        bad[..., 0] = lengths
        with pytest.raises(ValueError, match=rf"`{name}` holds token index"):
            model(**{**inputs, name: bad})


def test_proto_hatt_sentence_encoder_checks_entity_positions_too():
    architecture = get_architecture("proto_hatt")
    config = tiny_config(architecture)
    model = architecture.base_model_class(config).eval()
    ids, mask = torch.tensor([[5, 6, 7, 0]]), torch.tensor([[1, 1, 1, 0]])
    model(input_ids=ids, attention_mask=mask, entity_positions=torch.tensor([[0, 2]]))
    with pytest.raises(ValueError, match=r"`entity_positions` holds token index 3 .* \(tail\), outside its text of 3"):
        model(input_ids=ids, attention_mask=mask, entity_positions=torch.tensor([[0, 3]]))
