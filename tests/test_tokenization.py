"""The word-level and document tokenizers: training, splitting, saving and reloading with AutoTokenizer."""

import os
import subprocess
import sys
import textwrap

import pytest
from transformers import AutoTokenizer

from hf_attn.tokenization import (
    DocumentTokenizerFast,
    build_word_level_tokenizer,
    train_document_tokenizer,
    train_word_level_tokenizer,
)
from tests.helpers import BLOCK_HF_ATTN

TEXTS = ["The movie was GOOD!", "not bad, really", "good good movie", "a b c d"]


def test_training_lowercases_splits_punctuation_and_reserves_specials():
    tokenizer = train_word_level_tokenizer(TEXTS)
    assert tokenizer.convert_ids_to_tokens([0, 1]) == ["[PAD]", "[UNK]"]
    assert tokenizer.pad_token_id == 0 and tokenizer.unk_token_id == 1
    tokens = tokenizer.convert_ids_to_tokens(tokenizer("The movie was GOOD!!")["input_ids"])
    assert tokens == ["the", "movie", "was", "good", "!", "!"]
    assert tokenizer("zebra movie")["input_ids"][0] == 1
    assert "token_type_ids" not in tokenizer("good")


def test_training_is_deterministic():
    assert train_word_level_tokenizer(TEXTS).get_vocab() == train_word_level_tokenizer(TEXTS).get_vocab()


def test_vocab_size_min_frequency_and_truncation():
    tokenizer = train_word_level_tokenizer(TEXTS, vocab_size=4, model_max_length=3)
    assert len(tokenizer) == 4 and tokenizer.convert_ids_to_tokens(2) == "good"  # the most frequent word
    assert len(tokenizer("good good good good good", truncation=True)["input_ids"]) == 3
    assert "bad" not in train_word_level_tokenizer(TEXTS, min_frequency=2).get_vocab()


def test_save_and_reload_with_auto_tokenizer(tmp_path):
    tokenizer = train_word_level_tokenizer(TEXTS)
    tokenizer.save_pretrained(tmp_path)
    reloaded = AutoTokenizer.from_pretrained(tmp_path)
    batch = ["the movie was good", "really bad"]
    assert reloaded(batch, padding=True)["input_ids"] == tokenizer(batch, padding=True)["input_ids"]
    assert reloaded(batch, padding=True)["attention_mask"][1] == [1, 1, 0, 0]
    assert reloaded.padding_side == "right"


def test_fixed_vocabulary_keeps_ids():
    tokenizer = build_word_level_tokenizer(
        ["<pad>", "w1", "W2", "<unk>"], pad_token="<pad>", unk_token="<unk>", lowercase=False
    )
    assert tokenizer("w1 W2 w3")["input_ids"] == [1, 2, 3]
    with pytest.raises(ValueError, match="not in the vocabulary"):
        build_word_level_tokenizer(["a", "b"], pad_token="<pad>")


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


def test_document_tokenizer_reloads_with_auto_tokenizer(tmp_path):
    import hf_attn  # noqa: F401  (registers the class with AutoTokenizer)

    tokenizer = train_document_tokenizer(DOCUMENTS, max_sentences=4, max_words_per_sentence=7)
    tokenizer.save_pretrained(tmp_path)
    reloaded = AutoTokenizer.from_pretrained(tmp_path)
    assert type(reloaded) is DocumentTokenizerFast
    assert (reloaded.max_sentences, reloaded.max_words_per_sentence) == (4, 7)
    for name in ("input_ids", "attention_mask"):
        assert reloaded(DOCUMENTS, padding=True)[name] == tokenizer(DOCUMENTS, padding=True)[name]


def test_document_tokenizer_loads_without_hf_attn_through_remote_code(tmp_path):
    import hf_attn  # noqa: F401  (marks the class for register_for_auto_class)

    tokenizer = train_document_tokenizer(DOCUMENTS)
    tokenizer.save_pretrained(tmp_path / "tokenizer")
    assert (tmp_path / "tokenizer" / "document.py").is_file()
    script = BLOCK_HF_ATTN + textwrap.dedent(
        f"""
        from transformers import AutoTokenizer
        tokenizer = AutoTokenizer.from_pretrained({str(tmp_path / "tokenizer")!r}, trust_remote_code=True)
        assert type(tokenizer).__name__ == "DocumentTokenizerFast", type(tokenizer)
        print(tokenizer({DOCUMENTS!r}, padding=True)["input_ids"])
        """
    )
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf_home"), "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(tokenizer(DOCUMENTS, padding=True)["input_ids"])
