"""Word-level tokenizers, as the classic attention papers used: one id per lower-cased word or punctuation mark.

They are `HfAttnTokenizerFast` objects (`hf_attn.tokenization.base`: any string in, an empty text one padding
position), saved as `tokenizer.json` + `tokenizer_config.json`. No special tokens are added around a
sentence: token t of the encoding is word t of the text, which keeps attention maps aligned with the words.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

from .base import HfAttnTokenizerFast
from .document import DocumentTokenizerFast

PAD_TOKEN = "[PAD]"
UNK_TOKEN = "[UNK]"


def _word_level_pipeline(model: models.WordLevel, lowercase: bool, pre_tokenized: bool = False) -> Tokenizer:
    tokenizer = Tokenizer(model)
    if pre_tokenized:  # texts tokenized beforehand (an original pipeline's files): whitespace splits, nothing else
        if lowercase:
            tokenizer.normalizer = normalizers.Lowercase()
        tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
        return tokenizer
    steps = [normalizers.NFKC()] + ([normalizers.Lowercase()] if lowercase else [])
    tokenizer.normalizer = normalizers.Sequence(steps)
    # Words are runs of letters/digits; every punctuation mark is a token of its own.
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation(behavior="isolated")]
    )
    return tokenizer


def wrap_tokenizer(
    tokenizer: Tokenizer,
    pad_token: str,
    unk_token: str | None,
    model_max_length: int,
    tokenizer_class: type[PreTrainedTokenizerFast] = HfAttnTokenizerFast,
    **kwargs: Any,
) -> HfAttnTokenizerFast:
    """A `tokenizers.Tokenizer` as `tokenizer_class` (right padding, word ids and mask as inputs), with further
    options (`kwargs`, kept in `init_kwargs`) of a subclass (STCKA's concept vocabulary, a document's sizes)."""
    return tokenizer_class(
        tokenizer_object=tokenizer,
        pad_token=pad_token,
        unk_token=unk_token,
        model_max_length=model_max_length,
        padding_side="right",
        model_input_names=["input_ids", "attention_mask"],
        **kwargs,
    )


def train_word_level_tokenizer(
    texts: Iterable[str],
    vocab_size: int = 30000,
    min_frequency: int = 1,
    lowercase: bool = True,
    model_max_length: int = 512,
    pad_token: str = PAD_TOKEN,
    unk_token: str = UNK_TOKEN,
) -> HfAttnTokenizerFast:
    """Trains a word-level vocabulary on ``texts``: ``pad_token`` gets id 0, ``unk_token`` id 1, then words by
    decreasing frequency (the `tokenizers` trainer breaks ties deterministically, so every process of a
    distributed run builds the same vocabulary).

    Args:
        texts: the training sentences.
        vocab_size: the largest vocabulary, special tokens included.
        min_frequency: words seen fewer times map to ``unk_token``.
        lowercase: lower-case before splitting.
        model_max_length: the length `truncation=True` cuts to.
        pad_token: the padding token (id 0).
        unk_token: the out-of-vocabulary token (id 1).
    """
    tokenizer = _word_level_pipeline(models.WordLevel(unk_token=unk_token), lowercase)
    trainer = trainers.WordLevelTrainer(  # progress: the caller's bar over the texts (counting is the reading)
        vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=[pad_token, unk_token], show_progress=False
    )
    tokenizer.train_from_iterator(texts, trainer=trainer)
    return wrap_tokenizer(tokenizer, pad_token, unk_token, model_max_length)


def build_word_level_tokenizer(
    vocabulary: Sequence[str],
    pad_token: str = PAD_TOKEN,
    unk_token: str | None = UNK_TOKEN,
    lowercase: bool = True,
    model_max_length: int = 512,
    pre_tokenized: bool = False,
) -> HfAttnTokenizerFast:
    """A word-level tokenizer over a fixed vocabulary, word ``i`` getting id ``i`` (e.g. an original checkpoint's
    dictionary). ``pad_token`` and ``unk_token`` (when not ``None``) must be in ``vocabulary``. ``pre_tokenized``:
    a text is split on whitespace only, with no normalisation (an original pipeline whose texts were tokenized
    before its vocabulary was built, e.g. AttentionXML's `vocab.npy`)."""
    vocab = {word: index for index, word in enumerate(vocabulary)}
    if len(vocab) != len(vocabulary):
        raise ValueError("The vocabulary holds duplicate words.")
    for role, token in (("pad_token", pad_token), ("unk_token", unk_token)):
        if token is not None and token not in vocab:
            raise ValueError(f"{role} {token!r} is not in the vocabulary.")
    tokenizer = _word_level_pipeline(models.WordLevel(vocab=vocab, unk_token=unk_token), lowercase, pre_tokenized)
    return wrap_tokenizer(tokenizer, pad_token, unk_token, model_max_length)


def train_document_tokenizer(
    documents: Iterable[str],
    max_sentences: int | None = None,
    max_words_per_sentence: int | None = None,
    vocab_size: int = 30000,
    min_frequency: int = 1,
    lowercase: bool = True,
) -> DocumentTokenizerFast:
    """A word-level vocabulary trained on ``documents`` (as `train_word_level_tokenizer`: `[PAD]` 0, `[UNK]` 1), in
    a `DocumentTokenizerFast` that returns `(documents, sentences, words)` ids, truncated to the given limits."""
    words = train_word_level_tokenizer(
        documents, vocab_size=vocab_size, min_frequency=min_frequency, lowercase=lowercase
    )
    return wrap_tokenizer(
        words.backend_tokenizer,
        PAD_TOKEN,
        UNK_TOKEN,
        words.model_max_length,
        tokenizer_class=DocumentTokenizerFast,
        max_sentences=max_sentences,
        max_words_per_sentence=max_words_per_sentence,
    )
