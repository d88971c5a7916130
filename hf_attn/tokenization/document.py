"""A document tokenizer for hierarchical models (HAN, BI-Attention): text -> sentences -> words.

`DocumentTokenizerFast` is the word-level tokenizer (`hf_attn.tokenization.word_level`) with one more level: a
document is split into sentences (after `.`, `!` or `?` followed by whitespace, and at line breaks), every sentence
into word ids, and a batch comes out as `input_ids (B, S, T)` and `attention_mask (B, S, T)`:

    tokenizer = train_document_tokenizer(documents, max_sentences=15, max_words_per_sentence=30)
    batch = tokenizer(["The food was great. We left at nine.", "Awful."], return_tensors="pt")
    batch["input_ids"].shape  # (2, 2, 4): 2 documents, up to 2 sentences, up to 4 words

Documents may also come pre-split, as lists of sentences. Empty sentences are dropped; an empty document keeps
zero sentences (one all-padding row once padded). Without `return_tensors` and `padding`, the result is nested
lists (documents -> sentences -> ids) for `datasets.map`; `hf_attn.data.PaddingCollator` pads both levels per
batch. `max_sentences` / `max_words_per_sentence` (set at construction, overridable per call) truncate, and so does
`max_length` with truncation, as a text tokenizer's does: a document keeps its first `max_length` words, sentence
by sentence (`hf-attn train --max_length`).

The class is self-contained (it imports only transformers and `base.py`), is registered with `AutoTokenizer` by
`import hf_attn`, and is copied next to a saved model for `trust_remote_code` users.

Shape legend: B documents, S sentences per document, T words per sentence.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

import torch
from transformers import BatchEncoding

from .base import HfAttnTokenizerFast, replace_lone_surrogates

# A sentence ends at ., ! or ? followed by whitespace (the mark stays with its sentence), or at a line break.
SENTENCE_BOUNDARY = r"(?<=[.!?])\s+|\s*\n\s*"

Document = str | Sequence[str]


class DocumentTokenizerFast(HfAttnTokenizerFast):
    """Splits documents into sentences and sentences into word ids: `(B, S, T)` ids and mask.

    Args (besides `PreTrainedTokenizerFast`'s):
        max_sentences: keep at most this many sentences per document (the first ones); `None`: all.
        max_words_per_sentence: keep at most this many words per sentence; `None`: all.
        sentence_boundary: the regular expression sentences are split at.
    """

    model_input_names = ["input_ids", "attention_mask"]  # noqa: RUF012 (transformers declares it so)

    # No `__init__` of our own: transformers 5 loads `tokenizer.json` as-is only for classes without one (others
    # are rebuilt from their vocabulary, losing the word-level pipeline). The options live in `init_kwargs`, which
    # `save_pretrained` writes to `tokenizer_config.json`.

    @property
    def max_sentences(self) -> int | None:
        return self.init_kwargs.get("max_sentences")

    @property
    def max_words_per_sentence(self) -> int | None:
        return self.init_kwargs.get("max_words_per_sentence")

    @property
    def sentence_boundary(self) -> str:
        return self.init_kwargs.get("sentence_boundary") or SENTENCE_BOUNDARY

    def split_sentences(self, document: Document) -> list[str]:
        """The non-empty sentences of `document` (a text, or already a list of sentences)."""
        document = replace_lone_surrogates(document)
        sentences = re.split(self.sentence_boundary, document) if isinstance(document, str) else list(document)
        return [sentence.strip() for sentence in sentences if sentence and sentence.strip()]

    def __call__(
        self,
        documents: Document | Sequence[Document] | None = None,
        max_sentences: int | None = None,
        max_words_per_sentence: int | None = None,
        padding: bool | str = False,
        truncation: bool | str | None = None,
        return_tensors: str | None = None,
        text: Document | Sequence[Document] | None = None,
        text_pair: Document | Sequence[Document] | None = None,
        **kwargs: Any,
    ) -> BatchEncoding:
        """Tokenises one document (a string, or a list of sentence strings via `is_split_into_sentences=True`) or a
        batch of documents (a list of strings, or a list of lists of sentences).

        `padding` (or any `return_tensors`) pads to `(B, S, T)` with `pad_token_id` and mask 0; at least one
        sentence of one word, so an empty document is a single all-padding row. `truncation=False` turns the
        instance's limits off; limits passed to the call always apply.

        `max_length` with `truncation` (what `hf-attn train --max_length` passes to every tokenizer) is a budget of
        words for the whole document: its first `max_length` words are kept, sentence by sentence, the last kept
        sentence cut short. Without `truncation` it does nothing, as for transformers' tokenizers.

        `text` is another name for `documents` (transformers' pipelines call `tokenizer(text=..., text_pair=...)`);
        `text_pair` documents become `pair_input_ids` / `pair_attention_mask`, the second view a document-pair model
        (BI-Attention) reads.
        """
        if (documents is None) == (text is None):
            raise ValueError("Pass the documents once: as `documents` or as `text`.")
        documents = documents if documents is not None else text
        if text_pair is not None:
            options = {
                "max_sentences": max_sentences,
                "max_words_per_sentence": max_words_per_sentence,
                "padding": padding,
                "truncation": truncation,
                "return_tensors": return_tensors,
                **kwargs,
            }
            first, second = self(documents, **options), self(text_pair, **options)
            return BatchEncoding(
                {**first, "pair_input_ids": second["input_ids"], "pair_attention_mask": second["attention_mask"]}
            )
        is_split = kwargs.pop("is_split_into_sentences", False)
        single = isinstance(documents, str) or (is_split and documents and isinstance(documents[0], str))
        batch = [documents] if single else list(documents)
        max_length = kwargs.pop("max_length", None)
        if truncation is False:
            limits = (max_sentences, max_words_per_sentence)
        else:
            limits = (max_sentences or self.max_sentences, max_words_per_sentence or self.max_words_per_sentence)
        ids = self.encode_documents(batch, *limits)
        if truncation and max_length is not None:
            ids = [_first_words(document, max_length) for document in ids]
        masks = [[[1] * len(sentence) for sentence in document] for document in ids]
        if padding or return_tensors is not None:
            ids, masks = pad_nested(ids, self.pad_token_id, min_dims=3), pad_nested(masks, 0, min_dims=3)
            if return_tensors is None:
                ids, masks = ids.tolist(), masks.tolist()
            elif return_tensors != "pt":
                raise ValueError(f"DocumentTokenizerFast returns PyTorch tensors only, got {return_tensors!r}.")
        elif single:
            ids, masks = ids[0], masks[0]
        return BatchEncoding({"input_ids": ids, "attention_mask": masks})

    def encode_documents(
        self, documents: Iterable[Document], max_sentences: int | None = None, max_words: int | None = None
    ) -> list[list[list[int]]]:
        """Unpadded ids, documents -> sentences -> words; every sentence of the batch in one backend call."""
        split = [self.split_sentences(document)[:max_sentences] for document in documents]
        flat = [sentence for sentences in split for sentence in sentences]
        encodings = self.backend_tokenizer.encode_batch(flat, add_special_tokens=False) if flat else []
        words = iter([encoding.ids[:max_words] for encoding in encodings])
        return [[next(words) for _ in sentences] for sentences in split]

    def decode_document(self, input_ids: torch.Tensor | Sequence[Sequence[int]]) -> list[str]:
        """The sentences of one document's `(S, T)` ids as text (padding dropped)."""
        rows = input_ids.tolist() if isinstance(input_ids, torch.Tensor) else input_ids
        sentences = [self.decode([i for i in row if i != self.pad_token_id]) for row in rows]
        return [sentence for sentence in sentences if sentence]


def _first_words(document: list[list[int]], budget: int) -> list[list[int]]:
    """The sentences of `document` (word ids) that its first `budget` words fill, the last one cut to fit."""
    kept = []
    for sentence in document:
        if budget <= 0:
            break
        kept.append(sentence[:budget])
        budget -= len(sentence)
    return kept


def pad_nested(values: Sequence[Any], pad: int, min_dims: int = 2) -> torch.Tensor:
    """Right-pads nested lists of ints (any depth, ragged at every level) into one tensor: `[[1, 2], [3]]` ->
    `(2, 2)`, documents `[[[1, 2], [3]], [[4]]]` -> `(2, 2, 2)`. Every padded axis is at least 1 long, and the
    result has at least `min_dims` axes (a batch of empty documents still pads to `(B, 1, 1)` with `min_dims=3`)."""
    shape = [len(values)]
    level = list(values)
    while level and isinstance(level[0], list | tuple):
        shape.append(max([len(item) for item in level] + [1]))
        level = [element for item in level for element in item]
    shape += [1] * (min_dims - len(shape))
    padded = torch.full(shape, pad, dtype=torch.long)

    def fill(target: torch.Tensor, value: Sequence[Any]) -> None:
        if value and isinstance(value[0], list | tuple):
            for index, item in enumerate(value):
                fill(target[index], item)
        elif value:
            target[: len(value)] = torch.tensor(value, dtype=torch.long)

    for index, value in enumerate(values):
        fill(padded[index], value)
    return padded
