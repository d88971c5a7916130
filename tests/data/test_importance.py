"""One importance per token from a head's maps (`hf_attn.data.importance`), as each registry row's maps
declare: the mean over Lin's hops, HAN's word weights times their sentence's, the attention an LSTMN token receives,
STCKA's concepts; a head without a map over its tokens is refused, naming it."""

from __future__ import annotations

import pytest
import torch

from hf_attn.data.importance import has_token_importance, importance_mask, token_importance
from hf_attn.registry.table import ARCHITECTURES
from tests.helpers import make_inputs, tiny_config


def outputs_of(name: str, head_index: int = 0, lengths=(7, 4)):
    architecture = ARCHITECTURES[name]
    head = architecture.heads[head_index]
    torch.manual_seed(0)
    config = tiny_config(architecture)
    model = head.model_class(config).eval()
    inputs = make_inputs(head, config, list(lengths), seed=1)
    with torch.no_grad():
        output = model(**inputs, **head.attention_kwargs)
    return head, inputs, output


def test_lins_importance_is_the_mean_of_its_hops():
    head, inputs, output = outputs_of("lin_self_attentive")
    importance = token_importance(head, inputs, output)
    assert torch.allclose(importance, output.hop_attentions.mean(1) * inputs["attention_mask"])
    assert torch.allclose(importance.sum(-1), torch.ones(2), atol=1e-6)  # a mean of distributions is one


def test_hans_importance_is_a_words_weight_times_its_sentences():
    head, inputs, output = outputs_of("han")
    importance = token_importance(head, inputs, output)
    expected = output.word_attentions * output.sentence_attentions[..., None] * inputs["attention_mask"]
    assert importance.shape == inputs["attention_mask"].shape and torch.allclose(importance, expected)
    assert torch.allclose(importance.sum((1, 2)), torch.ones(2), atol=1e-5)  # α_it · α_i sums to one


def test_a_tapes_importance_is_the_attention_each_token_receives():
    head, inputs, output = outputs_of("lstmn")
    importance = token_importance(head, inputs, output)
    maps, mask = output.intra_attentions[-1], inputs["attention_mask"]
    rows = mask.sum(-1, keepdim=True)
    assert torch.allclose(importance, maps.sum(1) / rows * mask, atol=1e-6)


def test_stckas_importance_is_over_its_concepts():
    head, inputs, output = outputs_of("stcka")
    assert importance_mask(head) == "concept_attention_mask"
    importance = token_importance(head, inputs, output)
    assert torch.allclose(importance, output.concept_attentions * inputs["concept_attention_mask"])


def test_a_head_without_attention_over_its_tokens_is_refused_naming_it():
    elmo = ARCHITECTURES["elmo"]
    head = next(head for head in elmo.heads if head.model_class.__name__ == "ElmoForSequenceClassification")
    assert not has_token_importance(head)
    with pytest.raises(NotImplementedError, match="ElmoForSequenceClassification's attention has no map over"):
        token_importance(head, {"attention_mask": torch.ones(1, 3)}, None)
