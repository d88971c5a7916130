"""BI-Attention: the document representation r = Σ_i A_i Σ_j a_ij e_ij, the loss L = L1 + α·L2 with unlabelled
pairs, masks, and clear input errors."""

from __future__ import annotations

import pytest
import torch

from hf_attn import BiAttentionConfig, BiAttentionForDocumentClassification
from tests.models.han.test_modeling_han import documents

CONFIG = {"vocab_size": 40, "embedding_size": 6, "word_hidden_size": 5, "sentence_hidden_size": 4,
          "attention_size": 7, "num_labels": 3, "bilingual_loss_weight": 0.5}  # fmt: skip


def model(**overrides) -> BiAttentionForDocumentClassification:
    torch.manual_seed(0)
    return BiAttentionForDocumentClassification(BiAttentionConfig(**{**CONFIG, **overrides})).eval()


def views(seed: int = 0) -> dict[str, torch.Tensor]:
    input_ids, attention_mask = documents([[3, 5, 1], [4], [2, 6, 0, 2]], seed=seed)
    pair_ids, pair_mask = documents([[2, 2], [5, 3], [4]], seed=seed + 1)
    return {"input_ids": input_ids, "attention_mask": attention_mask, "pair_input_ids": pair_ids,
            "pair_attention_mask": pair_mask}  # fmt: skip


def test_document_representation_follows_the_double_sum():
    """r = Σ_i A_i Σ_j a_ij e_ij with e_ij = [w_ij; →h_ij; ←h_ij], recomputed by hand for one document."""
    bi = model()
    inputs = views()
    output = bi(**inputs)
    encoder = bi.bi_attention.encoder
    ids, mask = inputs["input_ids"][0], inputs["attention_mask"][0]
    sentence_vectors = []
    for s in range(int(mask.any(-1).sum())):  # its 3 sentences (the batch pads to 4)
        n = int(mask[s].sum())
        words = encoder.embeddings(ids[s, :n])[None]
        e = torch.cat([words, encoder.word_encoder.rnn(words)[0]], dim=-1)[0]  # (n, E + 2Hw)
        a = output.word_attentions[0, s, :n]
        torch.testing.assert_close(a, torch.softmax(torch.tanh(encoder.word_attention.projection(e)) @
                                                    encoder.word_attention.context[0], 0))  # fmt: skip
        sentence_vectors.append(a @ e)
    s_i = torch.stack(sentence_vectors)
    g = encoder.sentence_encoder.rnn(s_i[None])[0][0]
    scores = (
        torch.tanh(encoder.sentence_attention.projection(torch.cat([s_i, g], -1)))
        @ encoder.sentence_attention.context[0]
    )
    torch.testing.assert_close(output.sentence_attentions[0, :3], torch.softmax(scores, 0))
    torch.testing.assert_close(output.document_embedding[0], torch.softmax(scores, 0) @ s_i)
    logits = bi.classifier(torch.cat([output.document_embedding, output.pair_document_embedding], -1))
    torch.testing.assert_close(output.logits, logits)


def test_loss_is_cross_entropy_on_labelled_pairs_plus_alpha_times_the_bilingual_distance():
    bi = model()
    inputs = views()
    labels = torch.tensor([2, -100, 0])
    output = bi(**inputs, labels=labels)
    distance = (output.document_embedding - output.pair_document_embedding).pow(2).sum(-1)
    torch.testing.assert_close(output.bilingual_distance, distance)
    supervised = torch.nn.functional.cross_entropy(output.logits[[0, 2]], labels[[0, 2]])
    torch.testing.assert_close(output.loss, supervised + 0.5 * distance.mean())


def test_unlabelled_only_batch_trains_the_encoders_through_the_bilingual_term():
    bi = model().train()
    output = bi(**views(), labels=torch.full((3,), -100))
    torch.testing.assert_close(output.loss, 0.5 * output.bilingual_distance.mean())
    output.loss.backward()
    assert bi.bi_attention.pair_encoder.embeddings.weight.grad.abs().sum() > 0
    assert bi.classifier.weight.grad.abs().sum() == 0  # no label, no classifier update
    assert model(bilingual_loss_weight=0)(**views(), labels=torch.full((3,), -100)).loss == 0


def test_empty_documents_are_finite_and_padding_in_one_view_does_not_touch_the_other():
    bi = model()
    inputs = views()
    inputs["input_ids"][1] = 0
    inputs["attention_mask"][1] = 0
    output = bi(**inputs, labels=torch.tensor([0, 1, 2]))
    assert torch.isfinite(output.loss) and torch.isfinite(output.logits).all()
    assert output.document_embedding[1].abs().sum() == 0 and output.sentence_attentions[1].abs().sum() == 0
    wider = {**inputs}
    wider["pair_input_ids"] = torch.nn.functional.pad(inputs["pair_input_ids"], (0, 3, 0, 2))
    wider["pair_attention_mask"] = torch.nn.functional.pad(inputs["pair_attention_mask"], (0, 3, 0, 2))
    torch.testing.assert_close(bi(**wider).logits, output.logits, rtol=0, atol=1e-6)


def test_bad_inputs_are_clear_value_errors():
    bi = model()
    inputs = views()
    with pytest.raises(ValueError, match=r"pair_input_ids.*3 dimensions"):
        bi(**{**inputs, "pair_input_ids": inputs["pair_input_ids"][:, 0], "pair_attention_mask": None})
    with pytest.raises(ValueError, match="batch size"):
        bi(**{**inputs, "pair_input_ids": inputs["pair_input_ids"][:2], "pair_attention_mask": None})
    with pytest.raises(ValueError, match=r"pair_attention_mask.*same shape"):
        bi(**{**inputs, "pair_attention_mask": inputs["pair_attention_mask"][:, :1]})
