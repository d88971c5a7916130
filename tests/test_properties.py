"""Property-based tests over the registry (hypothesis): random batch sizes, lengths (0 = an all-padding row) and
seeds for every head. Invariants: finite outputs, losses and gradients; each example's outputs as if it were padded
alone; attention rows sum to 1 over real keys and to 0 where there is none; padding on the left is refused naming
`attention_mask` or changes nothing; any string (surrogates, control characters, empty) goes through every
tokenizer kind and reaches every head as a finite output.

The default profile is deterministic (derandomized, no example database) and small, so CI is reproducible; the
`slow` run draws many more examples (`make test-slow`, or `HYPOTHESIS_PROFILE=long`)."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hf_attn.models.elmo.tokenization_elmo import PAD_CHARACTER  # the largest character id, before the +1 shift
from hf_attn.tokenization.kinds import TOKENIZER_KINDS
from tests import helpers
from tests.helpers import (
    all_heads,
    attention_maps,
    make_inputs,
    make_labels,
    select_example,
    tiny_config,
    trim_like,
)

settings.register_profile(
    "ci", max_examples=8, derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck)
)
settings.register_profile("long", max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

BATCHES = st.lists(st.integers(min_value=0, max_value=7), min_size=1, max_size=4)
SEEDS = st.integers(min_value=0, max_value=2**16)


def check_head(architecture, head, lengths: list[int], seed: int) -> None:
    torch.manual_seed(seed)
    config = tiny_config(architecture)
    model = head.model_class(config).eval()
    inputs = make_inputs(head, config, lengths, seed=seed)
    labels = make_labels(head, config, inputs, seed=seed)
    model.train()
    torch.manual_seed(seed)
    trained = model(**inputs, labels=labels)
    assert torch.isfinite(trained.loss), (lengths, seed)
    trained.loss.backward()
    for name, parameter in model.named_parameters():
        assert parameter.grad is None or torch.isfinite(parameter.grad).all(), (name, lengths, seed)
    model.eval()
    batched = model(**inputs, **head.attention_kwargs)
    assert torch.isfinite(batched.logits).all(), (lengths, seed)
    maps = attention_maps(architecture, batched, inputs)
    for field, attention, mask in maps:
        key_mask = mask.reshape(mask.shape[0], *[1] * (attention.dim() - mask.dim()), *mask.shape[1:])
        key_mask = key_mask.expand_as(attention)
        has_key = key_mask.any(-1)
        torch.testing.assert_close(attention.sum(-1)[has_key], torch.ones_like(attention.sum(-1)[has_key]))
        assert torch.all(attention.masked_select(~key_mask & has_key[..., None]) == 0), field
        # A row without any real key: 0 everywhere, or (the Transformer) all its weight on the first key, so its
        # output does not depend on the padding width.
        empty = attention[~has_key]
        assert torch.all((empty.sum(-1) == 0) | ((empty[..., 0] == 1) & (empty.sum(-1) == 1))), field
    for index in range(len(lengths)):
        single = select_example(inputs, index, head)
        alone = model(**single, **head.attention_kwargs)
        torch.testing.assert_close(trim_like(batched.logits, index, alone.logits), alone.logits, rtol=0, atol=1e-5)
        for (field, attention, _), (_, full, _) in zip(attention_maps(architecture, alone, single), maps, strict=True):
            torch.testing.assert_close(trim_like(full, index, attention), attention, rtol=0, atol=1e-5, msg=field)


@pytest.mark.parametrize(("architecture", "head"), all_heads())
@given(lengths=BATCHES, seed=SEEDS)
def test_random_batches_keep_every_invariant(architecture, head, lengths, seed):
    check_head(architecture, head, lengths, seed)


@pytest.mark.slow
@pytest.mark.parametrize(("architecture", "head"), all_heads())
@settings(max_examples=150)
@given(lengths=BATCHES, seed=SEEDS)
def test_random_batches_keep_every_invariant_long(architecture, head, lengths, seed):
    check_head(architecture, head, lengths, seed)


# Tokenizers: any Python string in (lone surrogates, control characters, empty and whitespace-only texts), a batch
# every model of the architecture reads out ------------------------------------------------------------------------

CORPUS = ["The movie was good .", "not bad , really !", "Ein Haus ist groß .\nZwei Häuser ."]
ANY_CHARACTER = st.one_of(st.characters(), st.integers(0xD800, 0xDFFF).map(chr))  # surrogates, paired or not
TEXTS = st.lists(st.one_of(st.text(ANY_CHARACTER, max_size=40), st.sampled_from(["", " \t\n", "\ud800"])), min_size=1)


KNOWLEDGE = (("movie", "film", 1.0), ("movie", "work", 0.5), ("haus", "building", 1.0))


def corpus_tokenizer(kind: str):
    """A tokenizer of each kind the registry names, trained on the tiny corpus above."""
    return helpers.corpus_tokenizer(kind, tuple(CORPUS), KNOWLEDGE)


def encode(architecture, head, tokenizer, texts: list[str]) -> dict[str, torch.Tensor]:
    """The head's inputs for `texts`, as a user builds them with the architecture's tokenizer."""
    inputs = dict(tokenizer(texts, padding=True, return_tensors="pt"))
    if head.inputs.name in ("sentence_pair", "document_pair"):
        pair = tokenizer(texts[::-1], padding=True, return_tensors="pt")
        inputs.update(pair_input_ids=pair["input_ids"], pair_attention_mask=pair["attention_mask"])
    elif head.inputs.name == "seq2seq":
        inputs["decoder_input_ids"] = torch.full((len(texts), 1), tiny_config(architecture).decoder_start_token_id)
    return inputs


@pytest.mark.parametrize("kind", sorted(TOKENIZER_KINDS))
@given(texts=TEXTS)
def test_tokenizers_take_any_string(kind, texts):
    tokenizer = corpus_tokenizer(kind)
    encoded = tokenizer(texts, padding=True, return_tensors="pt")
    ids, mask = encoded["input_ids"], encoded["attention_mask"]
    assert ids.shape[0] == len(texts) and min(ids.shape) >= 1, ids.shape  # an empty text: one padding position
    assert ids.min() >= 0 and ids.max() < (PAD_CHARACTER + 2 if kind == "characters" else len(tokenizer))
    assert set(mask.unique().tolist()) <= {0, 1}
    for text in texts:  # one at a time too, as a pipeline calls it
        assert tokenizer(text, return_tensors="pt")["input_ids"].shape[0] == 1


@pytest.mark.parametrize(("architecture", "head"), all_heads())
@given(texts=TEXTS)
def test_any_string_reaches_the_model_through_its_tokenizer(architecture, head, texts):
    model = head.model_class(tiny_config(architecture)).eval()
    tokenizer = corpus_tokenizer(architecture.tokenizer.name)
    if head.inputs.name == "episodes":  # a support set of the same strings, through the user's `predict`
        config = model.config
        shots = [texts[i % len(texts)] for i in range(config.num_ways * config.num_shots)]
        labels = [f"class {i // config.num_shots}" for i in range(len(shots))]
        entities = dict.fromkeys(("support_entities", "query_entities")) if not config.use_entity_positions else {
            "support_entities": [(0, 0)] * len(shots), "query_entities": [(0, 0)] * len(texts)
        }  # fmt: skip
        results = model.predict(shots, labels, texts, tokenizer, output_attentions=True, **entities)
        assert len(results) == len(texts)
        assert all(np.isfinite(list(result["scores"].values())).all() for result in results)
        return
    with torch.no_grad():
        logits = model(**encode(architecture, head, corpus_tokenizer(architecture.tokenizer.name), texts)).logits
    assert logits.shape[0] == len(texts) and torch.isfinite(logits).all()


@pytest.mark.parametrize("kind", sorted(TOKENIZER_KINDS))
def test_a_100k_character_text_is_tokenized(kind):
    tokenizer = corpus_tokenizer(kind)
    for text in ("x" * 100_000, "groß " * 20_000, "\ud800" * 100_000):
        ids = tokenizer([text], return_tensors="pt")["input_ids"]
        assert ids.shape[0] == 1 and ids.numel() >= 1


# Padding on the left: a head either refuses it naming `attention_mask`, or gives every example the outputs it has
# when right-padded ------------------------------------------------------------------------------------------------


def pad_on_the_left(inputs: dict[str, torch.Tensor]) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """Every `*input_ids`/`*attention_mask` pair moved so its padding comes first (along the mask's last axis: the
    words of a sentence, the tokens of a character sequence); also returns each mask's per-row shift."""
    moved, shifts = dict(inputs), {}
    for name in [name for name in inputs if name.endswith("attention_mask") and not name.startswith("decoder")]:
        mask = inputs[name]
        width = mask.size(-1)
        shift = width - mask.sum(-1, keepdim=True)  # (B[, S], 1)
        source = (torch.arange(width) - shift) % width  # left position p reads right position p - shift
        ids_name = name.replace("attention_mask", "input_ids")
        ids = inputs[ids_name]
        ids_source = source.reshape(*source.shape, *[1] * (ids.dim() - mask.dim())).expand_as(ids)
        moved[name] = mask.gather(-1, source)
        moved[ids_name] = ids.gather(mask.dim() - 1, ids_source)
        shifts[name] = shift
    return moved, shifts


@pytest.mark.parametrize(("architecture", "head"), all_heads())
@given(lengths=BATCHES.filter(lambda lengths: len(set(lengths)) > 1), seed=SEEDS)
def test_left_padding_is_refused_or_changes_nothing(architecture, head, lengths, seed):
    torch.manual_seed(seed)
    config = tiny_config(architecture)
    model = head.model_class(config).eval()
    inputs = make_inputs(head, config, lengths, seed=seed)
    left, shifts = pad_on_the_left(inputs)
    try:
        moved = model(**left).logits
    except ValueError as error:
        assert "attention_mask" in str(error), error
        return
    expected = model(**inputs).logits
    mask = inputs["attention_mask"].bool()
    if expected.dim() == 3 and head.inputs.name not in ("seq2seq", "episodes"):  # a prediction per token: move back
        source = (torch.arange(mask.size(-1)) + shifts["attention_mask"]) % mask.size(-1)
        moved = moved.gather(1, source[..., None].expand_as(moved))
        expected, moved = expected[mask], moved[mask]
    torch.testing.assert_close(moved, expected, rtol=0, atol=1e-5)
