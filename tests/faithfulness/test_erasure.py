"""Tokens taken out of a text (`hf_attn.faithfulness.erasure`): a removed token is as if the text never had it, for
every measured head's inputs, and a relation's entity positions follow their tokens; a removed support instance is
an absent shot; rankings put padding last and break ties at random; k% is at least one token."""

from __future__ import annotations

import pytest
import torch

from hf_attn.data.importance import ids_of, importance_mask, unit_mask
from hf_attn.data.kinds import EPISODES
from hf_attn.data.masks import MaskSpec
from hf_attn.faithfulness import remove_tokens
from hf_attn.faithfulness.erasure import ranking, remove_units, text_inputs, token_counts, top_tokens
from tests.faithfulness.test_attribution import MEASURABLE, measured_inputs
from tests.helpers import make_inputs, tiny_config


@pytest.mark.parametrize(("architecture", "head"), MEASURABLE)
def test_a_removed_unit_is_as_if_the_input_never_had_it(architecture, head):
    """`remove_units`: the model's output on a text with its second token removed equals its output on the text
    written without it (the tokens closed up, the row padded), for every measured head's inputs; an episode's
    support instance removed is an absent shot, weighed 0 by the instance attention."""
    torch.manual_seed(0)
    config = tiny_config(architecture)
    model = head.model_class(config).eval()
    inputs = measured_inputs(head, make_inputs(head, config, [7], seed=2))  # STCKA: 4 concepts
    over = importance_mask(head)
    mask = unit_mask(over, inputs)
    keep = mask.clone()
    second = mask.reshape(len(mask), -1)[0].nonzero()[1]
    keep.reshape(len(mask), -1)[0, second] = False
    removed = remove_units(head.inputs, inputs, keep, config.pad_token_id or 0, over)
    assert unit_mask(over, removed).sum() == mask.sum() - 1
    if MaskSpec.parse(over).level is not None:  # support instances: the second one of the first episode blanked
        ids = removed[ids_of(over)].reshape(len(mask), mask[0].numel(), -1)
        assert (ids[0, second] == (config.pad_token_id or 0)).all()
        with torch.no_grad():
            output = model(**removed, **head.attention_kwargs)
        weights = output.instance_attentions.reshape(len(mask), -1)
        assert weights[0, second] == 0 and torch.isfinite(output.logits).all()
        return
    flat_ids = inputs[ids_of(over)].reshape(1, -1)[keep.reshape(1, -1)]
    assert torch.equal(removed[ids_of(over)].reshape(1, -1)[removed[over].reshape(1, -1).bool()], flat_ids)
    if mask.dim() == 2:  # one text: the same as the shorter text (and its tokens' characters) given alone
        kept = keep[0].nonzero().flatten()
        shorter = {name: tensor[:, kept] if name in text_inputs(head.inputs, inputs, over) else tensor
                   for name, tensor in inputs.items()}  # fmt: skip
        with torch.no_grad():
            assert torch.allclose(model(**removed).logits, model(**shorter).logits, atol=1e-5)


def test_a_relations_entity_positions_follow_their_tokens():
    """A relation episode's head and tail entity positions move back by the tokens removed before them, so the
    shorter text names the same entities (a removed entity: its next kept token, or the text's new last one)."""
    mask = torch.tensor([[1, 1, 1, 1, 1, 1, 0]])
    ids = torch.tensor([[11, 12, 13, 14, 15, 16, 0]])
    inputs = {"input_ids": ids, "attention_mask": mask, "entity_positions": torch.tensor([[1, 4]])}
    keep = torch.tensor([[True, False, True, False, True, True, True]])
    removed = remove_tokens(EPISODES, inputs, keep, 0)
    assert removed["input_ids"].tolist() == [[11, 13, 15, 16, 0, 0, 0]]
    assert removed["entity_positions"].tolist() == [[1, 2]]  # head 12 removed -> 13 now at 1; tail 15 at 2
    last = remove_tokens(EPISODES, {**inputs, "entity_positions": torch.tensor([[0, 5]])},
                         torch.tensor([[True, True, True, True, True, False, False]]), 0)  # fmt: skip
    assert last["entity_positions"].tolist() == [[0, 4]]  # the removed last token's entity: the new last token


def test_a_removed_support_instance_is_all_padding_with_its_entities_at_0():
    ids = torch.arange(1, 1 + 2 * 2 * 3).reshape(1, 2, 2, 3)
    inputs = {
        "input_ids": torch.ones(1, 1, 3, dtype=torch.long), "attention_mask": torch.ones(1, 1, 3, dtype=torch.long),
        "support_input_ids": ids, "support_attention_mask": torch.ones_like(ids),
        "support_entity_positions": torch.tensor([[[[0, 2], [1, 2]], [[2, 0], [1, 1]]]]),
    }  # fmt: skip
    keep = torch.tensor([[[True, False], [True, True]]])
    removed = remove_units(EPISODES, inputs, keep, 0, "support_attention_mask/instances")
    assert removed["support_input_ids"][0, 0, 1].tolist() == [0, 0, 0]
    assert removed["support_attention_mask"].sum() == 9 and removed["support_entity_positions"][0, 0, 1].tolist() == [
        0,
        0,
    ]
    assert torch.equal(removed["support_input_ids"][0, 1], ids[0, 1]) and torch.equal(
        removed["input_ids"], inputs["input_ids"]
    )


def test_a_ranking_puts_padding_last_and_breaks_ties_at_random():
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0]])
    importance = torch.tensor([[0.1, 0.7, 0.2, 9.0], [0.5, 0.5, 9.0, 9.0]])
    order = ranking(importance, mask, torch.Generator().manual_seed(0))
    assert order[0].tolist()[:3] == [1, 2, 0] and order[0, 3] == 3  # padding last, whatever its score
    assert set(order[1, :2].tolist()) == {0, 1}
    firsts = {int(ranking(importance, mask, torch.Generator().manual_seed(seed))[1, 0]) for seed in range(20)}
    assert firsts == {0, 1}  # a tie goes either way
    counts = token_counts(mask, 50)
    assert counts.tolist() == [2, 1] and token_counts(mask, 1).tolist() == [1, 1]
    assert token_counts(torch.zeros(1, 3), 50).tolist() == [0]  # an empty text: none
    assert top_tokens(order, counts, mask.shape)[0].tolist() == [False, True, True, False]
