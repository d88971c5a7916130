"""Tokens taken out of a text (`hf_attn.faithfulness.erasure`): a removed token is as if the text never had it, for
every measured head's inputs; rankings put padding last and break ties at random; k% is at least one token."""

from __future__ import annotations

import pytest
import torch

from hf_attn.faithfulness import remove_tokens
from hf_attn.faithfulness.erasure import ranking, text_inputs, token_counts, top_tokens
from hf_attn.visualization.importance import ids_of, importance_mask
from tests.faithfulness.test_attribution import MEASURABLE, measured_inputs
from tests.helpers import make_inputs, tiny_config


@pytest.mark.parametrize(("architecture", "head"), MEASURABLE)
def test_a_removed_token_is_as_if_the_text_never_had_it(architecture, head):
    """`remove_tokens`: the model's output on a text with its second token removed equals its output on the text
    written without it (the tokens closed up, the row padded), for every measured head's inputs."""
    torch.manual_seed(0)
    config = tiny_config(architecture)
    model = head.model_class(config).eval()
    inputs = measured_inputs(head, make_inputs(head, config, [7], seed=2))  # STCKA: 4 concepts
    over = importance_mask(head)
    mask = inputs[over].bool()
    keep = mask.clone()
    keep.reshape(1, -1)[0, mask.reshape(1, -1)[0].nonzero()[1]] = False
    removed = remove_tokens(head.inputs, inputs, keep, config.pad_token_id or 0, over)
    flat_ids = inputs[ids_of(over)].reshape(1, -1)[keep.reshape(1, -1)]
    assert removed[over].sum() == mask.sum() - 1
    assert torch.equal(removed[ids_of(over)].reshape(1, -1)[removed[over].reshape(1, -1).bool()], flat_ids)
    if mask.dim() == 2:  # one text: the same as the shorter text (and its tokens' characters) given alone
        kept = keep[0].nonzero().flatten()
        shorter = {name: tensor[:, kept] if name in text_inputs(head.inputs, inputs, over) else tensor
                   for name, tensor in inputs.items()}  # fmt: skip
        with torch.no_grad():
            assert torch.allclose(model(**removed).logits, model(**shorter).logits, atol=1e-5)


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
