"""`hf_attn.tasks.prediction`: a head's padded inputs for raw texts (`model_inputs`), and the tokens its first
attention map weighs most (`top_attended`), never padding, heaviest first."""

from __future__ import annotations

import pytest
import torch

from hf_attn.registry.table import ARCHITECTURES
from hf_attn.tasks.heads import shape_of
from hf_attn.tasks.prediction import model_inputs, top_attended
from tests.helpers import tiny_model_and_tokenizer


def read_alone(head) -> bool:
    """A head of one text that predicts in one forward pass (a pair's and an episode's inputs have their parts, a
    generating head's attention is its search's)."""
    return not head.inputs.pair and head.inputs.name != "episodes" and not shape_of(head).generates(head)


HEADS = [
    pytest.param(architecture, head, id=f"{name}-{head.model_class.__name__}")
    for name, architecture in ARCHITECTURES.items()
    for head in architecture.heads
    if head.attention_fields and read_alone(head)
]
LONG, SHORT = "the food was great and the service was awful", "a fine meal"


@pytest.mark.parametrize(("architecture", "head"), HEADS)
def test_the_heaviest_real_tokens_of_each_text_come_first(architecture, head):
    model, tokenizer = tiny_model_and_tokenizer(architecture, head)
    inputs = model_inputs(head, tokenizer, [LONG, SHORT], None, model.device)
    with torch.no_grad():
        output = model(**inputs, **head.attention_kwargs)
    spec = architecture.attention_masks[head.attention_fields[0]]
    real = inputs[spec.keys].reshape(2, -1).bool().sum(dim=1).tolist()
    assert real[0] > real[1]  # the short text is padded in the batch
    few, every = top_attended(model, head, inputs, output, tokenizer, 3), top_attended(model, head, inputs, output,
                                                                                        tokenizer, 1000)  # fmt: skip
    assert [len(tokens) for tokens in few] == [min(3, count) for count in real]
    assert [len(tokens) for tokens in every] == real  # every real token once, and no padding
    for tokens in every:
        weights = [weight for _, weight in tokens]
        assert weights == sorted(weights, reverse=True) and all(weight >= 0 for weight in weights)
        assert tokenizer.pad_token not in [token for token, _ in tokens]
    assert few == [tokens[:3] for tokens in every]


def test_a_head_without_attention_lists_no_tokens():
    architecture, head = next(
        (architecture, head) for architecture in ARCHITECTURES.values() for head in architecture.heads
        if not head.attention_fields and read_alone(head)
    )  # fmt: skip
    model, tokenizer = tiny_model_and_tokenizer(architecture, head)
    inputs = model_inputs(head, tokenizer, [LONG, SHORT], None, model.device)
    assert set(inputs) >= {"input_ids"} and inputs["input_ids"].shape[0] == 2
    assert top_attended(model, head, inputs, None, tokenizer, 3) == [[], []]
