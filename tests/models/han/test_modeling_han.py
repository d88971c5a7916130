"""HAN: the batched model equals the paper's equations run document by document, masks at both levels, empty
sentences and documents, one packed word-GRU call, clear input errors."""

from __future__ import annotations

import pytest
import torch

from hf_attn import HanConfig, HanForDocumentClassification, HanModel
from tests.helpers import documents as make_documents
from tests.helpers import load_benchmark

CONFIG = {"vocab_size": 40, "embedding_size": 8, "word_hidden_size": 5, "sentence_hidden_size": 4,
          "word_attention_size": 6, "sentence_attention_size": 7, "num_labels": 3}  # fmt: skip


def model(**overrides) -> HanForDocumentClassification:
    torch.manual_seed(0)
    return HanForDocumentClassification(HanConfig(**{**CONFIG, **overrides})).eval()


def documents(sentence_lengths: list[list[int]], seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """`(B, S, T)` ids and mask for documents given as lists of sentence lengths (0 = an empty sentence)."""
    return make_documents(sentence_lengths, CONFIG["vocab_size"], generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("rnn_type", ["gru", "lstm"])
def test_batched_model_equals_the_equations_document_by_document(rnn_type):
    han = model(rnn_type=rnn_type)
    input_ids, mask = documents([[3, 5, 1], [4], [2, 6, 6, 2], [5, 0, 3]])
    output = han(input_ids, mask)
    logits, word_attentions, sentence_attentions = load_benchmark("han_throughput").per_document_logits(
        han, input_ids, mask
    )
    torch.testing.assert_close(output.logits, logits, rtol=0, atol=1e-6)
    torch.testing.assert_close(output.word_attentions, word_attentions, rtol=0, atol=1e-6)
    torch.testing.assert_close(output.sentence_attentions, sentence_attentions, rtol=0, atol=1e-6)


def test_a_document_alone_equals_the_same_document_padded_among_longer_ones():
    han = model()
    input_ids, mask = documents([[2, 4], [7, 3, 5, 6], [1, 1, 1]])
    batched = han(input_ids, mask)
    alone = han(input_ids[:1, :2, :4], mask[:1, :2, :4])
    torch.testing.assert_close(batched.logits[:1], alone.logits, rtol=0, atol=1e-5)
    torch.testing.assert_close(batched.sentence_attentions[:1, :2], alone.sentence_attentions, rtol=0, atol=1e-5)
    torch.testing.assert_close(batched.word_attentions[:1, :2, :4], alone.word_attentions, rtol=0, atol=1e-5)
    assert batched.sentence_attentions[0, 2:].abs().sum() == 0 and batched.word_attentions[0, :, 4:].abs().sum() == 0


def test_an_empty_sentence_between_real_ones_is_skipped():
    han = model()
    input_ids, mask = documents([[3, 0, 4]])
    with_hole = han(input_ids, mask)
    without = han(input_ids[:, [0, 2]], mask[:, [0, 2]])
    torch.testing.assert_close(with_hole.logits, without.logits, rtol=0, atol=1e-6)
    assert with_hole.sentence_attentions[0, 1] == 0 and with_hole.word_attentions[0, 1].abs().sum() == 0


def test_empty_documents_and_sentences_stay_finite_in_forward_and_backward():
    han = model().train()
    input_ids, mask = documents([[0, 0], [3, 0], [0]])
    output = han(input_ids, mask, labels=torch.tensor([0, 1, 2]))
    assert torch.isfinite(output.logits).all() and torch.isfinite(output.loss)
    assert output.sentence_attentions[0].abs().sum() == 0 and output.sentence_attentions[1, 0] == 1
    output.loss.backward()
    assert all(torch.isfinite(p.grad).all() for p in han.parameters() if p.grad is not None)
    only_empty = han(*documents([[0]]))
    assert torch.isfinite(only_empty.logits).all()


def test_every_sentence_of_the_batch_goes_through_one_word_gru_call():
    han = model()
    calls = []
    han.han.word_encoder.register_forward_hook(lambda module, args, output: calls.append(args[0]))
    han(*documents([[3, 5, 1], [4, 0], [2, 6, 6, 2]]))
    assert len(calls) == 1
    # 8 non-empty sentences of the 3 × 4 slots: the empty and padded ones never enter the GRU
    assert calls[0].size(0) == 8


def test_attention_lands_where_the_context_vector_points():
    """Eq. 5–6 by hand: with W_w = I, b_w = 0 and u_w pointing along one feature, the word whose state is largest
    along it gets the most weight."""
    han = model(word_attention_size=2 * CONFIG["word_hidden_size"])
    states = torch.randn(1, 4, 2 * CONFIG["word_hidden_size"])
    attention = han.han.word_attention
    with torch.no_grad():
        attention.projection.weight.copy_(torch.eye(states.size(-1)))
        attention.projection.bias.zero_()
        attention.context.zero_()
        attention.context[0, 3] = 5.0
    pooled, weights = attention(states, torch.ones(1, 4, dtype=torch.bool))
    expected = torch.softmax(5.0 * torch.tanh(states[0, :, 3]), dim=0)
    torch.testing.assert_close(weights[0, 0], expected)
    torch.testing.assert_close(pooled[0, 0], expected @ states[0])


def test_bad_inputs_are_clear_value_errors():
    han = HanModel(HanConfig(**CONFIG))
    input_ids, mask = documents([[2, 3]])
    with pytest.raises(ValueError, match=r"3 dimensions \(batch, sentences, words\)"):
        han(input_ids[0], mask[0])
    with pytest.raises(ValueError, match="same shape"):
        han(input_ids, mask[:, :1])
    with pytest.raises(ValueError, match="outside the vocabulary"):
        han(input_ids + CONFIG["vocab_size"], mask)
