"""Shared tokenizers, all `PreTrainedTokenizerFast` over the `tokenizers` library (AutoTokenizer-compatible). An
architecture's own tokenizer lives in its folder (ELMo's characters, STCKA's concepts)."""

from .base import HfAttnTokenizerFast, replace_lone_surrogates
from .bpe import train_bpe_tokenizer
from .document import DocumentTokenizerFast, pad_nested
from .word_level import build_word_level_tokenizer, train_document_tokenizer, train_word_level_tokenizer

__all__ = [
    "DocumentTokenizerFast",
    "HfAttnTokenizerFast",
    "build_word_level_tokenizer",
    "pad_nested",
    "replace_lone_surrogates",
    "train_bpe_tokenizer",
    "train_document_tokenizer",
    "train_word_level_tokenizer",
]
