"""The word-level tokenizer (hf_attn.tokenization.word_level): training, splitting, saving and reloading with
AutoTokenizer; it and the document tokenizer load without hf_attn through remote code."""

import os
import subprocess
import sys
import textwrap

import pytest
from transformers import AutoTokenizer

from hf_attn.tokenization import build_word_level_tokenizer, train_document_tokenizer, train_word_level_tokenizer
from tests.helpers import BLOCK_HF_ATTN
from tests.tokenization.test_document import DOCUMENTS

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


@pytest.mark.parametrize(
    ("build", "module", "texts"),
    [
        (lambda: train_document_tokenizer(DOCUMENTS), "document.py", DOCUMENTS),
        (lambda: train_word_level_tokenizer(TEXTS), "base.py", [*TEXTS, "", "bad \ud800 movie"]),
    ],
    ids=["document", "word_level"],
)
def test_tokenizers_load_without_hf_attn_through_remote_code(build, module, texts, tmp_path):
    import hf_attn  # noqa: F401  (marks the class for register_for_auto_class)

    tokenizer = build()
    tokenizer.save_pretrained(tmp_path / "tokenizer")
    assert (tmp_path / "tokenizer" / module).is_file()
    script = BLOCK_HF_ATTN + textwrap.dedent(
        f"""
        from transformers import AutoTokenizer
        tokenizer = AutoTokenizer.from_pretrained({str(tmp_path / "tokenizer")!r}, trust_remote_code=True)
        assert type(tokenizer).__name__ == {type(tokenizer).__name__!r}, type(tokenizer)
        print(tokenizer({texts!r}, padding=True, return_tensors="pt")["input_ids"].tolist())
        """
    )
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf_home"), "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(tokenizer(texts, padding=True, return_tensors="pt")["input_ids"].tolist())


# ELMo's character tokenizer ----------------------------------------------------------------------------------------
