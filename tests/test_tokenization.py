"""The word-level and document tokenizers: training, splitting, saving and reloading with AutoTokenizer."""

import os
import subprocess
import sys
import textwrap

import pytest
import torch
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


def test_pictures_show_words_not_bpe_markers():
    """BPE pieces carry `</w>` at a word's end; what a picture shows has none: the marker goes, and a piece that a
    further piece continues ends in a hyphen (`readable_tokens`, used by every attention view)."""
    from hf_attn.tokenization.bpe import ids_to_tokens, readable_tokens, train_bpe_tokenizer

    tokenizer = train_bpe_tokenizer(["transformers transform the transformed text"] * 20, vocab_size=40)
    ids = tokenizer("transformers transform")["input_ids"]
    raw = tokenizer.convert_ids_to_tokens(ids)
    assert any(token.endswith("</w>") for token in raw)
    shown = ids_to_tokens(tokenizer, "input_ids", ids)
    assert not any("</w>" in token for token in shown)
    words = "".join(token if token.endswith("-") or token in tokenizer.all_special_tokens else token + " "
                    for token in shown).replace("-", "")  # fmt: skip
    assert "transformers transform" in words
    assert readable_tokens(["hello", "world"]) == ["hello", "world"]  # no markers: as they are


def test_every_tokenizer_kind_keeps_the_contract_and_a_foreign_tokenizer_gets_its_defaults():
    """The tokenizer contract (`TaskTokenizer`) is kept by every registered kind's tokenizer (registration refuses
    one that does not); a tokenizer from elsewhere is seen through `task_tokenizer` with the answers of one text of
    token ids; and no shared module probes a tokenizer with `getattr`."""
    import re
    from dataclasses import replace

    from transformers import PreTrainedTokenizerFast

    from hf_attn.registry import ARCHITECTURES
    from hf_attn.tokenization.base import PlainTokenizer, TokenizerContract, task_tokenizer
    from hf_attn.tokenization.kinds import TOKENIZER_KINDS, WORD_LEVEL_TOKENIZER, register_tokenizer_kind
    from tests.helpers import REPO_ROOT

    assert {architecture.tokenizer.name for architecture in ARCHITECTURES.values()} <= set(TOKENIZER_KINDS)
    for kind in TOKENIZER_KINDS.values():
        assert issubclass(kind.tokenizer_class, TokenizerContract), kind
    with pytest.raises(ValueError, match=r"'foreign': \w+ does not keep the tokenizer contract"):
        register_tokenizer_kind(replace(WORD_LEVEL_TOKENIZER, name="foreign", tokenizer_class=PreTrainedTokenizerFast))
    assert "foreign" not in TOKENIZER_KINDS

    ours = train_word_level_tokenizer(TEXTS)
    assert task_tokenizer(ours) is ours
    foreign = PreTrainedTokenizerFast(tokenizer_object=ours.backend_tokenizer, pad_token="[PAD]", unk_token="[UNK]")
    seen = task_tokenizer(foreign)
    assert isinstance(seen, PlainTokenizer) and not seen.reads_characters and not seen.sentence_markers
    assert seen.config_fields() == {"vocab_size": len(foreign), "pad_token_id": 0} == ours.config_fields()
    assert seen.tokens_of("input_ids", [2, 3]) is None
    encoded = seen.language_model_encoding(["good movie"])
    assert encoded["labels"] == encoded["input_ids"] == [foreign("good movie")["input_ids"]]

    probes = [f"{path.relative_to(REPO_ROOT)}: {line.strip()}" for path in (REPO_ROOT / "hf_attn").rglob("*.py")
              for line in path.read_text().splitlines()
              if re.search(r"getattr\((self\.)?tokenizer, \"(?!backend_tokenizer)", line)]  # fmt: skip
    assert not probes, probes
