"""The document tokenizer (hf_attn.tokenization.document): sentences, then words; truncation, pre-split sentences,
a word budget per document, and reloading with AutoTokenizer."""

from __future__ import annotations

import pytest
from transformers import AutoTokenizer

from hf_attn.tokenization import DocumentTokenizerFast, train_document_tokenizer

DOCUMENTS = ["The food was GREAT. We left at nine!", "Awful.\nReally bad service", ""]


def test_document_tokenizer_splits_sentences_then_words():
    tokenizer = train_document_tokenizer(DOCUMENTS)
    one = tokenizer(DOCUMENTS[0])
    words = [tokenizer.convert_ids_to_tokens(sentence) for sentence in one["input_ids"]]
    assert words == [["the", "food", "was", "great", "."], ["we", "left", "at", "nine", "!"]]
    assert one["attention_mask"] == [[1] * 5, [1] * 5]
    batch = tokenizer(DOCUMENTS, return_tensors="pt")
    assert batch["input_ids"].shape == (3, 2, 5) and batch["attention_mask"].shape == (3, 2, 5)
    assert batch["attention_mask"].sum(dim=(1, 2)).tolist() == [10, 5, 0]  # the empty document is all padding
    assert batch["attention_mask"][1].sum(-1).tolist() == [2, 3]  # a line break ends a sentence too
    assert (batch["input_ids"][batch["attention_mask"] == 0] == tokenizer.pad_token_id).all()
    assert tokenizer(DOCUMENTS)["input_ids"][2] == []  # unpadded: nested lists for datasets.map
    assert tokenizer.decode_document(batch["input_ids"][0]) == ["the food was great .", "we left at nine !"]


def test_document_tokenizer_truncates_and_takes_pre_split_sentences():
    tokenizer = train_document_tokenizer(DOCUMENTS, max_sentences=1, max_words_per_sentence=3)
    assert tokenizer(DOCUMENTS[0], return_tensors="pt")["input_ids"].shape == (1, 1, 3)
    assert tokenizer(DOCUMENTS[0], truncation=False, return_tensors="pt")["input_ids"].shape == (1, 2, 5)
    assert tokenizer(DOCUMENTS[0], max_sentences=2, return_tensors="pt")["input_ids"].shape == (1, 2, 3)
    split = tokenizer(["the food", "was great . really"], is_split_into_sentences=True, truncation=False)
    assert [len(sentence) for sentence in split["input_ids"]] == [2, 4]  # pre-split sentences are kept whole
    assert len(tokenizer([["a b", "c"], ["d"]], truncation=False)["input_ids"]) == 2
    with pytest.raises(ValueError, match="PyTorch tensors only"):
        tokenizer(DOCUMENTS, return_tensors="np")


def test_document_max_length_is_a_budget_of_words_for_the_whole_document():
    """`max_length` with truncation (what `hf-attn train --max_length` passes every tokenizer) keeps a document's
    first words, sentence by sentence, the last kept sentence cut short; without truncation it does nothing."""
    tokenizer = train_document_tokenizer(DOCUMENTS)
    words = [len(sentence) for sentence in tokenizer(DOCUMENTS[0], truncation=True, max_length=7)["input_ids"]]
    assert words == [5, 2]
    assert [len(s) for s in tokenizer(DOCUMENTS[0], truncation=True, max_length=5)["input_ids"]] == [5]
    assert [len(s) for s in tokenizer(DOCUMENTS[0], max_length=3)["input_ids"]] == [5, 5]
    batch = tokenizer(DOCUMENTS, truncation=True, max_length=4, return_tensors="pt")
    assert batch["attention_mask"].sum(dim=(1, 2)).tolist() == [4, 4, 0]


def test_document_tokenizer_reloads_with_auto_tokenizer(tmp_path):
    import hf_attn  # noqa: F401  (registers the class with AutoTokenizer)

    tokenizer = train_document_tokenizer(DOCUMENTS, max_sentences=4, max_words_per_sentence=7)
    tokenizer.save_pretrained(tmp_path)
    reloaded = AutoTokenizer.from_pretrained(tmp_path)
    assert type(reloaded) is DocumentTokenizerFast
    assert (reloaded.max_sentences, reloaded.max_words_per_sentence) == (4, 7)
    for name in ("input_ids", "attention_mask"):
        assert reloaded(DOCUMENTS, padding=True)[name] == tokenizer(DOCUMENTS, padding=True)[name]
