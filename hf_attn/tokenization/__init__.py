"""Shared tokenizers, all `PreTrainedTokenizerFast` over the `tokenizers` library (AutoTokenizer-compatible)."""

from .base import HfAttnTokenizerFast, replace_lone_surrogates
from .bpe import train_bpe_tokenizer
from .concepts import ConceptSource, ConceptTokenizerFast
from .document import DocumentTokenizerFast, pad_nested
from .elmo import ElmoCharacterTokenizerFast, build_elmo_tokenizer, read_bilm_tf_vocabulary, train_elmo_tokenizer
from .word_level import (
    build_concept_tokenizer,
    build_word_level_tokenizer,
    train_concept_tokenizer,
    train_document_tokenizer,
    train_word_level_tokenizer,
)

__all__ = [
    "ConceptSource",
    "ConceptTokenizerFast",
    "DocumentTokenizerFast",
    "ElmoCharacterTokenizerFast",
    "HfAttnTokenizerFast",
    "build_concept_tokenizer",
    "build_elmo_tokenizer",
    "build_word_level_tokenizer",
    "pad_nested",
    "read_bilm_tf_vocabulary",
    "replace_lone_surrogates",
    "train_bpe_tokenizer",
    "train_concept_tokenizer",
    "train_document_tokenizer",
    "train_elmo_tokenizer",
    "train_word_level_tokenizer",
]
