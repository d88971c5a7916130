"""Shared tokenizers, all `PreTrainedTokenizerFast` over the `tokenizers` library (AutoTokenizer-compatible)."""

from .bpe import train_bpe_tokenizer
from .document import DocumentTokenizerFast, pad_nested
from .word_level import build_word_level_tokenizer, train_document_tokenizer, train_word_level_tokenizer

__all__ = [
    "DocumentTokenizerFast",
    "build_word_level_tokenizer",
    "pad_nested",
    "train_bpe_tokenizer",
    "train_document_tokenizer",
    "train_word_level_tokenizer",
]
