"""Shared tokenizers, all `PreTrainedTokenizerFast` over the `tokenizers` library (AutoTokenizer-compatible)."""

from .bpe import train_bpe_tokenizer
from .word_level import build_word_level_tokenizer, train_word_level_tokenizer

__all__ = ["build_word_level_tokenizer", "train_bpe_tokenizer", "train_word_level_tokenizer"]
