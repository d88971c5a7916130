"""ELMo's character input: every whitespace token becomes 50 character ids, exactly as bilm-tf maps it.

ELMo (Peters et al., NAACL 2018) reads characters, so it has no input vocabulary: `input_ids` are `(B, T, C)` byte
ids (C = `max_characters_per_token`, 50 in every released model) and the mask is per token, `(B, T)`:

    tokenizer = build_elmo_tokenizer()
    batch = tokenizer(["The cat sat .", "Hi"], return_tensors="pt")
    batch["input_ids"].shape       # (2, 6, 50): <S> The cat sat . </S>
    batch["attention_mask"].shape  # (2, 6)

The mapping is bilm-tf's (`UnicodeCharsVocabulary` + `Batcher`), which every ELMo checkpoint was trained with:
a token is begin-of-word 258, its UTF-8 bytes (at most C − 2), end-of-word 259, then padding 260; the sentence
gets a `<S>` token (258, 256, 259) in front and a `</S>` token (258, 257, 259) at the end (`add_special_tokens`);
finally every id is shifted by +1 so that 0 means "no token" (a padded position). The literal tokens `<S>` and
`</S>` map to the boundary ids wherever they appear, as in bilm-tf.

Text is split on whitespace only (bilm-tf's `sentence.split()`): tokenise punctuation beforehand, or pass lists of
tokens with `is_split_into_words=True`. Case is kept: the characters are the model's input.

A word vocabulary is optional. ELMo itself never needs one, but its language-modelling head predicts words: a
tokenizer built with a vocabulary (bilm-tf's `vocab.txt`: one token a line, with `<S>`, `</S>`, `<UNK>`) returns
`token_ids` `(B, T)` too when called with `return_token_ids=True` — the targets of
`ElmoForBidirectionalLanguageModeling` (padded with -100, so they are usable as `labels` directly).

The file imports only torch, tokenizers, transformers and one padding helper of hf_attn's; it is registered with
`AutoTokenizer` through the folder's row (its tokenizer kind, `kinds.py`), and written next to a saved model for
`trust_remote_code` users (`hf_attn.utils.remote_code`). What hf_attn's task shapes ask of a tokenizer (the contract,
`hf_attn.tokenization.base.TaskTokenizer`) it answers itself: `reads_characters`, `sentence_markers`,
`config_fields()` and `language_model_encoding()`.

Shape legend: B sentences, T tokens (boundary tokens included), C characters per token.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import BatchEncoding, PreTrainedTokenizerFast

from hf_attn.tokenization.base import SavesItsCode, TokenizerContract
from hf_attn.tokenization.document import pad_nested

# bilm-tf's reserved character ids (before the +1 shift).
BOS_CHARACTER = 256  # the character of <S>
EOS_CHARACTER = 257  # the character of </S>
BOW_CHARACTER = 258  # begin of word
EOW_CHARACTER = 259  # end of word
PAD_CHARACTER = 260  # fills a token's remaining slots
# bilm-tf's reserved tokens.
BOS_TOKEN = "<S>"
EOS_TOKEN = "</S>"
UNK_TOKEN = "<UNK>"


def token_to_character_ids(token: str, max_characters: int = 50) -> list[int]:
    """The `max_characters` ids of one token, +1 shifted (bilm-tf's `_convert_word_to_char_ids`, then `Batcher`).

    `<S>` / `</S>` are the sentence-boundary tokens; any other token is BOW, its UTF-8 bytes cut to
    `max_characters − 2`, EOW, padding.
    """
    if token == BOS_TOKEN:
        characters = [BOS_CHARACTER]
    elif token == EOS_TOKEN:
        characters = [EOS_CHARACTER]
    else:
        characters = list(token.encode("utf-8", "ignore")[: max_characters - 2])
    ids = [BOW_CHARACTER, *characters, EOW_CHARACTER]
    ids += [PAD_CHARACTER] * (max_characters - len(ids))
    return [i + 1 for i in ids]


def character_ids_to_token(character_ids: Sequence[int]) -> str:
    """The token a row of character ids encodes (inverse of `token_to_character_ids`; "" for a padded row)."""
    ids = [i - 1 for i in character_ids if i > 0]
    if ids[1:2] == [BOS_CHARACTER]:
        return BOS_TOKEN
    if ids[1:2] == [EOS_CHARACTER]:
        return EOS_TOKEN
    return bytes(i for i in ids if i < 256).decode("utf-8", "replace")


class ElmoCharacterTokenizerFast(SavesItsCode, TokenizerContract, PreTrainedTokenizerFast):
    """Whitespace tokens -> ELMo character ids `(B, T, C)` and a token mask `(B, T)` (optionally word ids).

    Options (kept in `init_kwargs`, saved to `tokenizer_config.json`):
        max_characters_per_token: C (50 for every released ELMo).
        max_tokens: keep at most this many tokens per sentence, boundaries included; `None`: all.

    The backend `tokenizers.Tokenizer` is a whitespace-split word-level model over the optional word vocabulary:
    it supplies `token_ids`, `convert_tokens_to_ids`, `len(tokenizer)` and the save format.
    """

    # Saved with its code and `auto_map` (users without hf_attn load it with trust_remote_code=True): what
    # `register_for_auto_class("AutoTokenizer")` would set, on the class itself, as every hf_attn tokenizer is one.
    _auto_class = "AutoTokenizer"

    model_input_names = ["input_ids", "attention_mask"]  # noqa: RUF012 (transformers declares it so)

    # No `__init__` of our own: transformers 5 loads `tokenizer.json` as-is only for classes without one.

    # The tokenizer contract (`hf_attn.tokenization.base.TaskTokenizer`): the input ids are characters, and the
    # words' vocabulary ids (`return_token_ids=True`) are a language model's targets; every sentence is framed by <S>
    # and </S>, so a word's tag sits one position after its index.
    reads_characters = True
    sentence_markers = True

    def config_fields(self) -> dict[str, Any]:
        """The config fields the vocabulary sets: its size only (the word vocabulary's padding id is not the padding
        of the character ids the model reads)."""
        return {"vocab_size": len(self)}

    def language_model_encoding(self, texts: list[str], **kwargs: Any) -> dict[str, list]:
        """The characters of `texts` and, as `labels`, their words' ids (the biLM's targets)."""
        encoded = dict(self(texts, return_token_ids=True, **kwargs))
        encoded["labels"] = encoded.pop("token_ids")
        return encoded

    @property
    def max_characters_per_token(self) -> int:
        return self.init_kwargs.get("max_characters_per_token") or 50

    @property
    def max_tokens(self) -> int | None:
        return self.init_kwargs.get("max_tokens")

    @property
    def pad_token_id(self) -> int | None:
        """The padding id of the ids this tokenizer returns, character ids: 0 (what `padding=True` pads with).
        transformers' batched pipelines pad with it."""
        own = self.__getattr__("pad_token_id")  # a pad token of the word vocabulary, when it has one
        return 0 if own is None else own

    def split_words(self, text: str) -> list[str]:
        """bilm-tf's tokenisation: `text.split()`."""
        return text.split()

    def __call__(
        self,
        text: str | Sequence[str] | Sequence[Sequence[str]],
        add_special_tokens: bool = True,
        padding: bool | str = False,
        truncation: bool | str | None = None,
        max_length: int | None = None,
        return_tensors: str | None = None,
        return_token_ids: bool = False,
        is_split_into_words: bool = False,
        return_special_tokens_mask: bool = False,
        return_offsets_mapping: bool = False,
        **kwargs: Any,
    ) -> BatchEncoding:
        """Tokenises one sentence (a string, or a list of tokens with `is_split_into_words=True`) or a batch.

        `padding` (or any `return_tensors`) pads to `(B, T, C)` with character id 0 and mask 0 (at least one token,
        so an empty sentence without boundaries is one all-padding row). `max_length` (or the instance's
        `max_tokens` unless `truncation=False`) keeps the first tokens, boundaries included.
        `return_special_tokens_mask`: 1 at `<S>` and `</S>`; `return_offsets_mapping`: each token's `(start, end)`
        characters in its string (`(0, 0)` for the boundaries; within the word for pre-split words), what
        transformers' token-classification pipeline reads.
        """
        single = isinstance(text, str) or (is_split_into_words and (not text or isinstance(text[0], str)))
        batch = [text] if single else list(text)
        limit = max_length if max_length is not None else (None if truncation is False else self.max_tokens)
        tokens = [self.sentence_tokens(sentence, add_special_tokens, limit) for sentence in batch]
        encoded: dict[str, Any] = {
            "input_ids": [[token_to_character_ids(t, self.max_characters_per_token) for t in s] for s in tokens],
            "attention_mask": [[1] * len(sentence) for sentence in tokens],
        }
        if return_special_tokens_mask or return_offsets_mapping:
            marks = [self._boundaries(sentence, add_special_tokens) for sentence in tokens]
            if return_special_tokens_mask:
                encoded["special_tokens_mask"] = marks
            if return_offsets_mapping:
                encoded["offset_mapping"] = [
                    self._spans(sentence, special) for sentence, special in zip(batch, marks, strict=True)
                ]
        if return_token_ids:
            if self.unk_token_id is None:
                raise ValueError("`return_token_ids=True` needs a tokenizer built with a word vocabulary.")
            encoded["token_ids"] = [self.convert_tokens_to_ids(sentence) for sentence in tokens]
        if padding or return_tensors is not None:
            if return_tensors not in (None, "pt"):
                raise ValueError(f"ElmoCharacterTokenizerFast returns PyTorch tensors only, got {return_tensors!r}.")
            pads = {
                "input_ids": 0,
                "attention_mask": 0,
                "token_ids": -100,
                "special_tokens_mask": 1,
                "offset_mapping": 0,
            }
            dims = {"input_ids": 3, "attention_mask": 2, "token_ids": 2, "special_tokens_mask": 2, "offset_mapping": 3}
            encoded = {name: pad_nested(value, pads[name], dims[name]) for name, value in encoded.items()}
            # A batch of empty sentences has no character to pad to: the character axis is always C long.
            missing = self.max_characters_per_token - encoded["input_ids"].size(-1)
            encoded["input_ids"] = torch.nn.functional.pad(encoded["input_ids"], (0, missing))
            if return_tensors is None:
                encoded = {name: value.tolist() for name, value in encoded.items()}
        elif single:
            encoded = {name: value[0] for name, value in encoded.items()}
        return BatchEncoding(encoded)

    @staticmethod
    def _boundaries(tokens: list[str], add_special_tokens: bool) -> list[int]:
        """1 at the `<S>` and `</S>` this tokenizer added around a sentence's tokens, 0 at its words."""
        last = len(tokens) - 1
        return [
            int(
                add_special_tokens
                and ((index == 0 and token == BOS_TOKEN) or (0 < index == last and token == EOS_TOKEN))
            )
            for index, token in enumerate(tokens)
        ]

    def _spans(self, sentence: str | Sequence[str], special: list[int]) -> list[tuple[int, int]]:
        """Each token's `(start, end)` characters in `sentence` (within the word for pre-split words; `(0, 0)` for a
        boundary)."""
        if isinstance(sentence, str):
            words = [(match.start(), match.end()) for match in re.finditer(r"\S+", sentence)]
        else:
            words = [(0, len(word)) for word in sentence]
        spans, next_word = [], iter(words)
        for is_boundary in special:
            spans.append((0, 0) if is_boundary else next(next_word))
        return spans

    def sentence_tokens(
        self, sentence: str | Sequence[str], add_special_tokens: bool = True, limit: int | None = None
    ) -> list[str]:
        """The tokens of one sentence as the model sees them (boundaries added, truncated to `limit`)."""
        words = self.split_words(sentence) if isinstance(sentence, str) else list(sentence)
        tokens = [BOS_TOKEN, *words, EOS_TOKEN] if add_special_tokens and words else words
        if limit is not None and len(tokens) > limit:
            tokens = [*tokens[: limit - 1], EOS_TOKEN] if add_special_tokens and limit > 1 else tokens[:limit]
        return tokens

    def decode_characters(self, input_ids: torch.Tensor | Sequence[Sequence[int]]) -> list[str]:
        """The tokens of one sentence's `(T, C)` character ids (padded positions dropped)."""
        rows = input_ids.tolist() if isinstance(input_ids, torch.Tensor) else input_ids
        return [character_ids_to_token(row) for row in rows if any(i > 0 for i in row)]


def build_elmo_tokenizer(
    vocabulary: Sequence[str] | None = None,
    max_characters_per_token: int = 50,
    max_tokens: int | None = None,
) -> ElmoCharacterTokenizerFast:
    """An ELMo tokenizer; `vocabulary` (ids = positions) enables `token_ids` for language modelling. The reserved
    tokens `<S>`, `</S>`, `<UNK>` are appended when the vocabulary lacks them (existing ids are kept)."""
    words = list(dict.fromkeys(vocabulary or []))
    words += [token for token in (BOS_TOKEN, EOS_TOKEN, UNK_TOKEN) if token not in words]
    backend = Tokenizer(models.WordLevel({word: i for i, word in enumerate(words)}, unk_token=UNK_TOKEN))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return ElmoCharacterTokenizerFast(
        tokenizer_object=backend,
        bos_token=BOS_TOKEN,
        eos_token=EOS_TOKEN,
        unk_token=UNK_TOKEN,
        padding_side="right",
        model_input_names=["input_ids", "attention_mask"],
        max_characters_per_token=max_characters_per_token,
        max_tokens=max_tokens,
    )


def read_bilm_tf_vocabulary(path: str | Path) -> list[str]:
    """bilm-tf's `vocab.txt`: one token a line (its id = its line), `!!!MAXTERMID` lines skipped as bilm-tf does."""
    lines = Path(path).read_text(encoding="utf-8").split("\n")
    return [line.strip() for line in lines if line.strip() and line.strip() != "!!!MAXTERMID"]


def train_elmo_tokenizer(
    texts: Iterable[str], vocab_size: int | None = None, min_frequency: int = 1, **kwargs: Any
) -> ElmoCharacterTokenizerFast:
    """An ELMo tokenizer whose word vocabulary is bilm-tf's: `<S>`, `</S>`, `<UNK>`, then whitespace tokens by
    decreasing frequency (ties by first occurrence, so every process builds the same one)."""
    counts = Counter(word for text in texts for word in text.split())
    ranked = [word for word, count in counts.most_common() if count >= min_frequency]
    words = [BOS_TOKEN, EOS_TOKEN, UNK_TOKEN] + [word for word in ranked if word not in (BOS_TOKEN, EOS_TOKEN)]
    return build_elmo_tokenizer(words[:vocab_size] if vocab_size else words, **kwargs)


__all__ = [
    "ElmoCharacterTokenizerFast",
    "build_elmo_tokenizer",
    "character_ids_to_token",
    "read_bilm_tf_vocabulary",
    "token_to_character_ids",
    "train_elmo_tokenizer",
]
