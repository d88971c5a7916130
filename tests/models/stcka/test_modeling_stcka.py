"""STCKA's equations on hand-checked cases, its masks, and knowledge retrieval (`ConceptSource`, the concept
tokenizer)."""

from __future__ import annotations

import json
import math

import pytest
import torch
from transformers import AutoTokenizer, pipeline

import hf_attn  # noqa: F401 (registers the architecture)
from hf_attn.models.stcka.configuration_stcka import StckaConfig
from hf_attn.models.stcka.kinds import train_concept_tokenizer
from hf_attn.models.stcka.modeling_stcka import StckaForSequenceClassification, StckaModel
from hf_attn.models.stcka.tokenization_stcka import ConceptSource, ConceptTokenizerFast

TINY = {"vocab_size": 20, "concept_vocab_size": 12, "embedding_size": 6, "char_feature_size": 0, "hidden_size": 4,
        "num_labels": 3}  # fmt: skip


def model_of(**overrides) -> StckaModel:
    torch.manual_seed(0)
    return StckaModel(StckaConfig(**{**TINY, **overrides})).eval()


@torch.no_grad()
def test_text_encoder_is_scaled_self_attention_then_max_pool():
    """A = softmax(H Hᵀ/√(2u)) H with Q = K = V = H (eq. 1), q = max_t A_t over the real tokens (eq. 2)."""
    model = model_of()
    ids, mask = torch.tensor([[3, 4, 5, 0]]), torch.tensor([[1, 1, 1, 0]])
    output = model(input_ids=ids, attention_mask=mask, concept_input_ids=torch.tensor([[2]]))
    hidden = output.last_hidden_state[:, :3]
    weights = torch.softmax(hidden @ hidden.transpose(1, 2) / math.sqrt(8), dim=-1)
    torch.testing.assert_close(output.self_attentions[:, :3, :3], weights)
    assert output.self_attentions[:, 3].sum() == 0 and output.self_attentions[:, :, 3].sum() == 0
    torch.testing.assert_close(output.text_representation, (weights @ hidden).max(dim=1).values)


@torch.no_grad()
@pytest.mark.parametrize("gamma", [None, 0.3])
def test_knowledge_encoder_equations(gamma):
    """α = softmax(w_1ᵀ tanh(W_1 [c; q] + b_1)), β = softmax(w_2ᵀ tanh(W_2 c + b_2)), a = softmax(γα + (1 − γ)β),
    p = Σ a_i c_i; γ per concept from the switch, or the fixed value."""
    model = model_of(gamma=gamma)
    concept_ids = torch.tensor([[2, 5, 7, 9]])
    output = model(input_ids=torch.tensor([[1, 2, 3]]), concept_input_ids=concept_ids)
    encoder, concepts = model.knowledge_encoder, model.concept_embeddings(concept_ids)
    q = output.text_representation[:, None].expand(-1, 4, -1)
    alpha = torch.softmax(encoder.cst_context(torch.tanh(encoder.cst_projection(torch.cat([concepts, q], -1)))), 1)
    beta = torch.softmax(encoder.ccs_context(torch.tanh(encoder.ccs_projection(concepts))), 1)
    alpha, beta = alpha.squeeze(-1), beta.squeeze(-1)
    if gamma is None:
        switch = encoder.switch
        expected_gamma = torch.sigmoid(switch.weight[0, 0] * alpha + switch.weight[0, 1] * beta + switch.bias)
    else:
        expected_gamma = torch.full_like(alpha, gamma)
    weights = torch.softmax(expected_gamma * alpha + (1 - expected_gamma) * beta, dim=-1)
    torch.testing.assert_close(output.cst_attentions, alpha)
    torch.testing.assert_close(output.ccs_attentions, beta)
    torch.testing.assert_close(output.gamma, expected_gamma)
    torch.testing.assert_close(output.concept_attentions, weights)
    torch.testing.assert_close(output.concept_representation, (weights[..., None] * concepts).sum(1))
    assert weights.max() / weights.min() <= math.e + 1e-6  # the double softmax keeps a near uniform
    if gamma is None:  # the switch starts at γ = 0.5 and learns
        assert torch.allclose(output.gamma, torch.tensor(0.5))
        assert "knowledge_encoder.switch.weight" in dict(model.named_parameters())


@torch.no_grad()
def test_an_empty_concept_set_gives_p_zero_and_finite_outputs():
    head = StckaForSequenceClassification(StckaConfig(**TINY)).eval()
    ids, concepts = torch.tensor([[3, 4], [5, 0]]), torch.tensor([[2, 3], [0, 0]])
    output = head(
        input_ids=ids, attention_mask=ids != 0, concept_input_ids=concepts, concept_attention_mask=concepts != 0
    )
    assert torch.isfinite(output.logits).all()
    assert output.concept_representation[1].abs().sum() == 0 and output.concept_attentions[1].sum() == 0
    ids, concepts = torch.tensor([[0, 0]]), torch.tensor([[0]])
    everything_empty = head(input_ids=ids, attention_mask=ids != 0, concept_input_ids=concepts,
                            concept_attention_mask=concepts != 0)  # fmt: skip
    assert torch.isfinite(everything_empty.logits).all()


@torch.no_grad()
def test_padding_changes_nothing_by_default_and_everything_in_the_codes_mode():
    texts, concepts = torch.tensor([[3, 4, 5]]), torch.tensor([[2, 3]])
    padded_texts, padded_concepts = torch.tensor([[3, 4, 5, 0, 0]]), torch.tensor([[2, 3, 0, 0]])
    for mask_padding, pad in ((True, 0), (False, 1)):
        model = model_of(mask_padding=mask_padding, pad_token_id=pad, concept_pad_token_id=pad)
        alone = model(input_ids=texts, concept_input_ids=concepts)
        batched = model(input_ids=padded_texts.masked_fill(padded_texts == 0, pad), attention_mask=padded_texts != 0,
                        concept_input_ids=padded_concepts.masked_fill(padded_concepts == 0, pad),
                        concept_attention_mask=padded_concepts != 0)  # fmt: skip
        same = torch.allclose(alone.concept_representation, batched.concept_representation, atol=1e-6) and (
            torch.allclose(alone.text_representation, batched.text_representation, atol=1e-6)
        )
        assert same == mask_padding


def test_frozen_embeddings_and_config_errors():
    model = model_of(freeze_embeddings=True)
    assert not model.embeddings.weight.requires_grad and not model.concept_embeddings.weight.requires_grad
    assert model.knowledge_encoder.cst_projection.weight.requires_grad
    with pytest.raises(Exception, match="gamma"):
        StckaConfig(gamma=1.5)
    with pytest.raises(ValueError, match="concept_input_ids"):
        model_of()(input_ids=torch.tensor([[1]]), concept_input_ids=torch.tensor([[99]]))
    with pytest.raises(ValueError, match="concept_input_ids"):
        model_of()(input_ids=torch.tensor([[1], [2]]), concept_input_ids=torch.tensor([[3]]))


# Knowledge retrieval --------------------------------------------------------------------------------------------

KNOWLEDGE = (
    "entity\tconcept\tscore\napple\tcompany\t0.9\napple\tfruit\t0.8\nnew york\tcity\t1.0\nnew\tadjective\t0.2\n"
)


def test_entity_linking_is_the_longest_match(tmp_path):
    path = tmp_path / "isa.tsv"
    path.write_text(KNOWLEDGE)
    source = ConceptSource.from_file(path)
    assert source.link(["the", "new", "york", "apple", "store"]) == [(1, 3, "new york"), (3, 4, "apple")]
    assert source.link(["a", "new", "apple"]) == [(1, 2, "new"), (2, 3, "apple")]
    assert source.concepts("Apple opens in New York") == ["city", "company", "fruit"]  # best score first
    assert ConceptSource.from_file(path, max_concepts=1).concepts("apple in new york") == ["city"]
    assert ConceptSource.from_file(path, min_score=0.85).concepts("apple in a new town") == ["company"]
    assert source.concepts("") == [] and source.concepts("nothing known") == []
    as_json = tmp_path / "isa.json"
    as_json.write_text(json.dumps({"apple": {"company": 0.9, "fruit": 0.8}, "new york": [["city", 1.0]]}))
    assert ConceptSource.from_file(as_json).concepts("apple in new york") == ["city", "company", "fruit"]
    bad = tmp_path / "bad.tsv"
    bad.write_text("apple\tcompany\tvery\n")
    with pytest.raises(ValueError, match=r"bad\.tsv:1"):
        ConceptSource.from_file(bad)


def test_the_tokenizer_returns_concepts_and_keeps_its_knowledge_base(tmp_path):
    path = tmp_path / "isa.tsv"
    path.write_text(KNOWLEDGE)
    tokenizer = train_concept_tokenizer(
        ["apple opens a store in new york", "i ate an apple"], concept_source=ConceptSource.from_file(path)
    )
    encoded = tokenizer(["Apple opens in New York", "nothing known", ""], padding=True, return_tensors="pt")
    vocabulary = tokenizer.concept_vocab
    assert [vocabulary[i] for i in encoded["concept_input_ids"][0].tolist()] == ["city", "company", "fruit"]
    assert encoded["concept_attention_mask"].tolist() == [[1, 1, 1], [0, 0, 0], [0, 0, 0]]
    given = tokenizer("anything", concepts=["fruit", "unheard-of"])
    assert given["concept_input_ids"] == [vocabulary.index("fruit"), vocabulary.index("[UNK]")]
    tokenizer.save_pretrained(tmp_path / "saved")
    StckaForSequenceClassification(StckaConfig(**{**TINY, "vocab_size": len(tokenizer),
                                                   "concept_vocab_size": len(vocabulary)})).save_pretrained(
        tmp_path / "saved"
    )  # fmt: skip
    reloaded = AutoTokenizer.from_pretrained(tmp_path / "saved")
    assert isinstance(reloaded, ConceptTokenizerFast)
    again = reloaded(["Apple opens in New York", "nothing known", ""], padding=True, return_tensors="pt")
    assert all(torch.equal(encoded[name], again[name]) for name in encoded)
    classifier = pipeline("text-classification", model=str(tmp_path / "saved"))  # the tokenizer links the concepts
    assert len(classifier(["apple in new york", ""])) == 2
    with pytest.raises(ValueError, match="one concept set per text"):
        tokenizer(["a", "b"], concepts=[["fruit"]])


@torch.no_grad()
def test_character_features_spell_unknown_words_and_ignore_padding():
    """§3.2's input embedding: [word embedding; max over characters of ReLU(conv(char embeddings))], d/2 each by
    default. Two unknown words differ by their spelling; padding characters and words change nothing."""
    config = StckaConfig(**{**TINY, "embedding_size": 8, "char_feature_size": None})
    assert config.char_feature_size == 4  # d/2, the paper's split
    tokenizer = train_concept_tokenizer(["apple is known"], concept_source=ConceptSource({"apple": [("fruit", 1)]}),
                                        max_word_length=6)  # fmt: skip
    model = StckaModel(StckaConfig(**{**config.to_dict(), "vocab_size": len(tokenizer),
                                      "concept_vocab_size": len(tokenizer.concept_vocab)})).eval()  # fmt: skip
    encoded = tokenizer(["zebra apple", "quokka apple"], padding=True, return_tensors="pt")
    assert encoded["input_ids"][0, 0] == encoded["input_ids"][1, 0] == tokenizer.unk_token_id
    embedded = model.embed(model.embeddings, encoded["input_ids"], encoded["char_input_ids"], None, "char_input_ids")
    assert not torch.allclose(embedded[0, 0], embedded[1, 0])  # same word id, other characters
    torch.testing.assert_close(embedded[0, 0, :4], embedded[1, 0, :4])  # the word embedding half is the same
    alone = model(**tokenizer(["zebra apple"], padding=True, return_tensors="pt"))
    batched = model(**tokenizer(["zebra apple", "a much longer text here"], padding=True, return_tensors="pt"))
    torch.testing.assert_close(batched.text_representation[:1], alone.text_representation)
    torch.testing.assert_close(batched.concept_representation[:1], alone.concept_representation)
    with pytest.raises(ValueError, match="char_input_ids"):
        model(input_ids=encoded["input_ids"], concept_input_ids=encoded["concept_input_ids"])
    with pytest.raises(Exception, match="char_feature_size"):
        StckaConfig(embedding_size=8, char_feature_size=8)
