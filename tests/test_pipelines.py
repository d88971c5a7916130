"""Batched pipelines equal unbatched ones for every head a pipeline serves: `pipeline(..., batch_size=8)` gives what
`batch_size=1` gives (scores within 1e-5), documents (3-D ids), concepts and characters, the LSTMN, the few-shot
and the translation pipelines included; per-layer attention tuples stay out of the outputs."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from transformers import pipeline

from tests.helpers import all_heads, corpus_tokenizer, tiny_config

CORPUS = (
    "the food was great and the service was fine",
    "a bad movie with a good ending",
    "the cat sat on the mat",
    "stocks fell as markets closed lower",
    "he plays football every sunday",
    "rain again today",
)
KNOWLEDGE = (("food", "meal", 1.0), ("football", "sport", 0.9), ("stocks", "finance", 0.8))
TEXTS = [
    "the food was great",
    "a bad movie",
    "the cat sat on the mat and the food was fine. rain again today. he plays",
    "stocks fell",
    "",
    "he plays football every sunday",
    "rain",
    "the mat. the cat.",
    "a good ending",
]
# The Auto class each pipeline task loads: a head is served by the task when it registers under that class.
TASK_AUTO_CLASSES = {
    "text-classification": "AutoModelForSequenceClassification",
    "token-classification": "AutoModelForTokenClassification",
    "text-generation": "AutoModelForCausalLM",
    "translation": "AutoModelForSeq2SeqLM",
}
NOT_SERVED_YET: dict[str, str] = {}


def served(head) -> bool:
    return head.inputs.name == "episodes" or TASK_AUTO_CLASSES.get(head.pipeline_tag) == head.auto_class


def _close(one, eight) -> None:
    """Pipeline results equal up to float noise: the same labels and texts, scores within 1e-5."""
    if isinstance(one, dict):
        assert one.keys() == eight.keys()
        for key in one:
            _close(one[key], eight[key])
    elif isinstance(one, list | tuple):
        assert len(one) == len(eight)
        for a, b in zip(one, eight, strict=True):
            _close(a, b)
    elif isinstance(one, float | np.floating):  # the token-classification pipeline's scores are numpy floats
        assert one == pytest.approx(eight, abs=1e-5)
    else:
        assert one == eight


@torch.no_grad()
@pytest.mark.parametrize(("architecture", "head"), all_heads())
def test_batched_pipeline_equals_one_at_a_time(architecture, head):
    if not served(head):
        pytest.skip(f"no pipeline task loads {head.model_class.__name__} (Auto class {head.auto_class})")
    if head.model_class.__name__ in NOT_SERVED_YET:
        pytest.skip(NOT_SERVED_YET[head.model_class.__name__])
    tokenizer = copy.deepcopy(corpus_tokenizer(architecture.tokenizer, CORPUS, KNOWLEDGE))
    torch.manual_seed(0)
    config = tiny_config(architecture)
    if getattr(config, "vocab_size", None) is not None:
        config = tiny_config(architecture, vocab_size=max(len(tokenizer), config.vocab_size))
    model = head.model_class(config).eval()
    texts, options = TEXTS, {}
    if head.inputs.name == "episodes":
        pipe = pipeline("hf-attn-few-shot", model=model, tokenizer=tokenizer)
        shots = getattr(config, "num_shots", 2)  # a feature attention may be tied to K
        support = {"f": ["the food", "good food", "the food was fine", "great food"][:shots],
                   "m": ["a bad movie", "a movie", "the movie was bad", "a good movie"][:shots]}  # fmt: skip
        options = {"support_texts": [text for texts in support.values() for text in texts],
                   "support_labels": [label for label, texts in support.items() for _ in texts]}  # fmt: skip
        if getattr(config, "use_entity_positions", False):  # a relation model reads each text's two entities
            texts = [{"text": text, "head": 0, "tail": 1} for text in TEXTS if len(text.split()) > 1]
            options["support_entities"] = [(0, 1)] * len(options["support_texts"])
    elif head.pipeline_tag == "translation":
        pipe, options = pipeline("hf-attn-translation", model=model, tokenizer=tokenizer), {"max_new_tokens": 5}
    elif head.pipeline_tag == "text-generation":
        tokenizer.padding_side = "left"  # transformers' rule for batched generation with a decoder-only model
        pipe = pipeline("text-generation", model=model, tokenizer=tokenizer)
        texts, options = [text for text in TEXTS if text], {"max_new_tokens": 4, "do_sample": False}
    else:
        pipe = pipeline(head.pipeline_tag, model=model, tokenizer=tokenizer)
        if head.inputs.pair:  # two texts per example (BI-Attention's two views of a document)
            texts = [{"text": text, "text_pair": " ".join(reversed(text.split()))} for text in TEXTS]
    one, eight = pipe(texts, batch_size=1, **options), pipe(texts, batch_size=8, **options)
    assert len(one) == len(texts)
    _close(one, eight)


def test_character_token_classification_names_the_words_of_the_text():
    """ELMo's ids are characters per token: the token-classification pipeline reads each word from its offsets,
    boundaries left out (`hf_attn.pipelines.CharacterAwareTokenClassificationPipeline`)."""
    from hf_attn.registry.table import get_architecture

    architecture = get_architecture("elmo")
    (head,) = [head for head in architecture.heads if head.pipeline_tag == "token-classification"]
    tokenizer = copy.deepcopy(corpus_tokenizer(architecture.tokenizer, CORPUS, KNOWLEDGE))
    pipe = pipeline("token-classification", model=head.model_class(tiny_config(architecture)).eval(),
                    tokenizer=tokenizer, ignore_labels=[])  # fmt: skip
    text = "the  food was\tfine"
    entities = pipe(text)
    assert [entity["word"] for entity in entities] == text.split()
    assert all(text[entity["start"] : entity["end"]] == entity["word"] for entity in entities)
    assert [entity["index"] for entity in entities] == [1, 2, 3, 4]  # 0 and 5 are <S> and </S>
