"""The tokenizer kinds of the registry (`Architecture.tokenizer`): each one object that says which class
`AutoTokenizer` gives for an architecture's folders and how a vocabulary is trained on a corpus.

name        object                  trained by                     vocabulary           min. frequency  lower-cased
word_level  `WORD_LEVEL_TOKENIZER`  `train_word_level_tokenizer`   30,000               1               yes (papers)
document    `DOCUMENT_TOKENIZER`    `train_document_tokenizer`     30,000               1               yes
bpe         `BPE_TOKENIZER`         `train_bpe_tokenizer`          8,000                2               no (BPE)

A model folder brings its own in its `kinds.py` (ELMo's `characters`, `CHARACTER_TOKENIZER`: bilm-tf's character
mapping; STCKA's `concepts`, `CONCEPT_TOKENIZER`: words and a concept vocabulary from a knowledge base). A row names
its kind by object; a name is looked up once, where a string gives it (`get_tokenizer_kind`). A new kind is a
`TokenizerKind` registered from its own module (`register_tokenizer_kind`), imported by the folder's
`architecture.py`. What a task shape asks of a tokenizer beyond its ids is the tokenizer contract
(`hf_attn.tokenization.base.TaskTokenizer`), which the tokenizer answers itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from transformers import PreTrainedTokenizerBase

from .base import HfAttnTokenizerFast, TokenizerContract
from .bpe import train_bpe_tokenizer
from .document import DocumentTokenizerFast
from .word_level import train_document_tokenizer, train_word_level_tokenizer


@dataclass(frozen=True, eq=False)
class TokenizerKind:
    """A kind of vocabulary: `tokenizer_class` (what `AutoTokenizer` gives for the architecture's config) and
    `trainer(texts, vocab_size, min_frequency, lowercase, **knowledge)` with its defaults. A kind that
    `reads_knowledge` takes what it reads beside the texts (a `concept_source` or the texts' `concept_sets`) as the
    trainer's keywords; the run asks for it only of such a kind (`hf_attn.training.preparation`), and another
    kind's trainer refuses it."""

    name: str
    tokenizer_class: type[PreTrainedTokenizerBase]
    trainer: Callable[..., PreTrainedTokenizerBase]
    vocab_size: int | None
    min_frequency: int
    lowercase: bool
    reads_knowledge: bool = False
    # The trainer reads its texts once, as they come, strings or batches (the `tokenizers` trainers): a million texts
    # are never held as a list. A trainer that reads them twice (STCKA's words, then their concepts) gets a list.
    reads_once: bool = False

    def __str__(self) -> str:  # messages and cards name the kind
        return self.name

    def train(
        self,
        texts: Iterable[str],
        vocab_size: int | None = None,
        min_frequency: int | None = None,
        lowercase: bool | None = None,
        **knowledge: Any,
    ) -> PreTrainedTokenizerBase:
        """A tokenizer of this kind trained on `texts` (strings, or lists of strings: batches as a dataset is read);
        `None` options take the kind's defaults (table above)."""
        if not self.reads_once:
            texts = [text for item in texts for text in ([item] if isinstance(item, str) else item)]
        return self.trainer(
            texts,
            vocab_size or self.vocab_size,
            self.min_frequency if min_frequency is None else min_frequency,
            self.lowercase if lowercase is None else lowercase,
            **knowledge,
        )


def _words(train: Callable[..., PreTrainedTokenizerBase]) -> Callable[..., PreTrainedTokenizerBase]:
    """A word vocabulary's trainer in `TokenizerKind.trainer`'s form."""

    def trainer(texts: Iterable[str], vocab_size: int, min_frequency: int, lowercase: bool) -> PreTrainedTokenizerBase:
        return train(texts, vocab_size=vocab_size, min_frequency=min_frequency, lowercase=lowercase)

    return trainer


TOKENIZER_KINDS: dict[str, TokenizerKind] = {}


def register_tokenizer_kind(kind: TokenizerKind) -> TokenizerKind:
    """Registers `kind` under its name (again: replaced); returns it. Its tokenizer keeps the tokenizer contract
    (`TaskTokenizer`, by inheriting `TokenizerContract`), or it is refused, naming the kind."""
    if not issubclass(kind.tokenizer_class, TokenizerContract):
        raise ValueError(
            f"tokenizer kind {kind.name!r}: {kind.tokenizer_class.__name__} does not keep the tokenizer contract: "
            "derive it from hf_attn.tokenization.base.HfAttnTokenizerFast (or TokenizerContract)."
        )
    TOKENIZER_KINDS[kind.name] = kind
    return kind


def get_tokenizer_kind(name: str) -> TokenizerKind:
    """The registered tokenizer kind of that name (where a string gives one); a ValueError names the known ones."""
    if name not in TOKENIZER_KINDS:
        raise ValueError(f"Unknown tokenizer kind {name!r}; known: {', '.join(TOKENIZER_KINDS)}.")
    return TOKENIZER_KINDS[name]


WORD_LEVEL_TOKENIZER = register_tokenizer_kind(
    TokenizerKind(
        "word_level", HfAttnTokenizerFast, _words(train_word_level_tokenizer), 30000, 1, True, reads_once=True
    )
)
DOCUMENT_TOKENIZER = register_tokenizer_kind(
    TokenizerKind("document", DocumentTokenizerFast, _words(train_document_tokenizer), 30000, 1, True, reads_once=True)
)
BPE_TOKENIZER = register_tokenizer_kind(
    TokenizerKind("bpe", HfAttnTokenizerFast, _words(train_bpe_tokenizer), 8000, 2, False, reads_once=True)
)


def train_tokenizer(
    kind: TokenizerKind,
    texts: Iterable[str],
    vocab_size: int | None = None,
    min_frequency: int | None = None,
    lowercase: bool | None = None,
    **knowledge: Any,
) -> PreTrainedTokenizerBase:
    """A tokenizer of `kind` trained on `texts` (`TokenizerKind.train`), with what a kind that `reads_knowledge`
    needs beyond them (STCKA's `concepts`: a knowledge base, `concept_source`, or the texts' `concept_sets`)."""
    return kind.train(texts, vocab_size, min_frequency, lowercase, **knowledge)
