"""ELMo's character tokenizer (hf_attn.models.elmo.tokenization_elmo): bilm-tf's character ids, padding, word ids,
the AutoTokenizer round trip, and loading through remote code without hf_attn."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
import torch
from transformers import AutoTokenizer

from tests.helpers import BLOCK_HF_ATTN


def test_elmo_characters_follow_bilm_tf():
    """BOW 258, UTF-8 bytes, EOW 259, padding 260, all +1; <S> = (258, 256, 259), </S> = (258, 257, 259)."""
    from hf_attn.models.elmo.tokenization_elmo import build_elmo_tokenizer, token_to_character_ids

    tokenizer = build_elmo_tokenizer()
    encoded = tokenizer("Déjà vu", return_tensors="pt")
    ids = encoded["input_ids"][0]
    assert ids.shape == (4, 50) and encoded["attention_mask"].tolist() == [[1, 1, 1, 1]]
    assert ids[0, :4].tolist() == [259, 257, 260, 261] and (ids[0, 3:] == 261).all()
    assert ids[3, :3].tolist() == [259, 258, 260]
    word = list("Déjà".encode())  # 6 bytes: é and à take two each
    assert ids[1, : len(word) + 2].tolist() == [259, *[b + 1 for b in word], 260]
    assert (ids[1, len(word) + 2 :] == 261).all()
    # Long tokens keep their first 48 bytes; the literal boundary tokens map to the boundary characters anywhere.
    long = token_to_character_ids("x" * 60)
    assert len(long) == 50 and long[0] == 259 and long[1:49] == [ord("x") + 1] * 48 and long[49] == 260
    assert token_to_character_ids("<S>", 10) == [259, 257, 260] + [261] * 7
    assert tokenizer.decode_characters(ids) == ["<S>", "Déjà", "vu", "</S>"]


def test_elmo_tokenizer_pads_batches_splits_on_whitespace_and_truncates():
    from hf_attn.models.elmo.tokenization_elmo import build_elmo_tokenizer

    tokenizer = build_elmo_tokenizer(max_tokens=5)
    batch = tokenizer(["a  b\tc d e f", "g", ""], return_tensors="pt")
    assert batch["input_ids"].shape == (3, 5, 50)
    assert batch["attention_mask"].tolist() == [[1] * 5, [1, 1, 1, 0, 0], [0] * 5]
    assert (batch["input_ids"][1, 3:] == 0).all() and (batch["input_ids"][2] == 0).all()
    assert tokenizer.decode_characters(batch["input_ids"][0]) == ["<S>", "a", "b", "c", "</S>"]
    assert tokenizer(["a b c d e f"], truncation=False, return_tensors="pt")["input_ids"].shape[1] == 8
    assert tokenizer("a b", add_special_tokens=False)["attention_mask"] == [1, 1]
    pre_split = tokenizer([["a b", "c"]], is_split_into_words=True, return_tensors="pt")
    assert tokenizer.decode_characters(pre_split["input_ids"][0]) == ["<S>", "a b", "c", "</S>"]
    with pytest.raises(ValueError, match="PyTorch tensors only"):
        tokenizer("a", return_tensors="np")


def test_elmo_tokenizer_word_ids_and_auto_tokenizer_round_trip(tmp_path):
    import hf_attn  # noqa: F401  (registers the tokenizer class)
    from hf_attn.models.elmo.tokenization_elmo import (
        ElmoCharacterTokenizerFast,
        build_elmo_tokenizer,
        train_elmo_tokenizer,
    )

    tokenizer = train_elmo_tokenizer(["the cat sat", "the dog sat down"], max_tokens=12)
    assert tokenizer.convert_ids_to_tokens([0, 1, 2, 3, 4]) == ["<S>", "</S>", "<UNK>", "the", "sat"]
    ids = tokenizer(["the cow sat", "the"], return_token_ids=True, return_tensors="pt")["token_ids"]
    assert ids.tolist() == [[0, 3, 2, 4, 1], [0, 3, 1, -100, -100]]
    tokenizer.save_pretrained(tmp_path)
    reloaded = AutoTokenizer.from_pretrained(tmp_path)
    assert type(reloaded) is ElmoCharacterTokenizerFast and reloaded.max_tokens == 12
    for name, value in tokenizer(["the cow sat"], return_token_ids=True, return_tensors="pt").items():
        assert torch.equal(reloaded(["the cow sat"], return_token_ids=True, return_tensors="pt")[name], value)
    with pytest.raises(ValueError, match="word vocabulary"):
        ElmoCharacterTokenizerFast(tokenizer_object=build_elmo_tokenizer().backend_tokenizer)(
            "a", return_token_ids=True
        )


def test_elmo_tokenizer_loads_without_hf_attn_through_remote_code(tmp_path):
    import hf_attn  # noqa: F401  (marks the class for register_for_auto_class)
    from hf_attn.models.elmo.tokenization_elmo import build_elmo_tokenizer

    tokenizer = build_elmo_tokenizer(["the", "cat"])
    tokenizer.save_pretrained(tmp_path / "tokenizer")
    assert (tmp_path / "tokenizer" / "tokenization_elmo.py").is_file()
    script = BLOCK_HF_ATTN + textwrap.dedent(
        f"""
        from transformers import AutoTokenizer
        tokenizer = AutoTokenizer.from_pretrained({str(tmp_path / "tokenizer")!r}, trust_remote_code=True)
        assert type(tokenizer).__name__ == "ElmoCharacterTokenizerFast", type(tokenizer)
        print(tokenizer(["the cat", "a"], return_token_ids=True, return_tensors="pt")["input_ids"].tolist())
        """
    )
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf_home"), "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stderr
    expected = tokenizer(["the cat", "a"], return_tensors="pt")["input_ids"].tolist()
    assert result.stdout.strip() == str(expected)
