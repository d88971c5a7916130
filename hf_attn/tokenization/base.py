"""The fast tokenizer every hf_attn tokenizer builds on: `PreTrainedTokenizerFast` with two defined results where
the plain one has none.

- **Lone surrogates** (`"\\ud800"`: text decoded with `surrogateescape`, or a JSON `\\ud800` escape) cannot cross into
  the Rust `tokenizers` library, which answers with an unrelated `TypeError`. They are replaced by U+FFFD, the
  replacement character a UTF-8 decoder puts for an invalid byte (properly paired surrogates become the character
  they encode), so one bad character does not stop a dataset: it is an unknown token.
- **An empty text** (or only whitespace) has no token. Returned as tensors, it would be an `(B, 0)` batch that no
  model can read; a batch is padded to at least one position instead, so an empty text is one all-padding row, the
  defined way hf_attn models take an empty input (they return a finite output for it).

It also holds **the tokenizer contract** (`TaskTokenizer`): what hf_attn's task shapes, pictures and printouts ask of
a tokenizer beyond transformers' `PreTrainedTokenizerBase`. Every hf_attn tokenizer keeps it by inheriting
`TokenizerContract` (the answers of one text of token ids) and overriding what differs; a tokenizer from elsewhere
(a `--tokenizer` folder's bare `tokenizer.json`) is seen through `task_tokenizer`, with those answers.

The file is self-contained (it imports only transformers), is registered with `AutoTokenizer` by `import hf_attn`,
and is copied next to a saved model for `trust_remote_code` users; `PreTrainedTokenizerFast.from_pretrained` also
reads a saved folder's `tokenizer.json` without any code. A tokenizer that lives in a model folder and imports
hf_attn's shared tokenizer modules (ELMo's, STCKA's) saves them beside itself (`SavesItsCode`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import torch
from transformers import BatchEncoding, PreTrainedTokenizerFast

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

_SURROGATE = re.compile("[\ud800-\udfff]")


def replace_lone_surrogates(text: Any) -> Any:
    """`text` (a string, or nested lists/tuples of strings) with every unpaired surrogate replaced by U+FFFD and
    every surrogate pair joined into its character; anything else is returned as it is."""
    if isinstance(text, str):
        if _SURROGATE.search(text) is None:
            return text
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(text, list | tuple):
        return type(text)(replace_lone_surrogates(item) for item in text)
    return text


class SavesItsCode:
    """A tokenizer whose `save_pretrained` writes the hf_attn modules its own module imports next to it, imports
    rewritten to the written files (`hf_attn.utils.remote_code`, as a model's save does): transformers copies a
    tokenizer's module and its relative imports only, and a model folder's tokenizer imports shared modules of hf_attn
    by their absolute names. Saved from the written copy itself (hf_attn absent), the flat files are already there."""

    def save_pretrained(self, save_directory: Any, *args: Any, **kwargs: Any) -> tuple[str, ...]:
        files = super().save_pretrained(save_directory, *args, **kwargs)  # type: ignore[misc]
        if getattr(self, "_auto_class", None) is not None:
            try:
                from hf_attn.utils.remote_code import write_remote_code
            except ImportError:  # running from a saved folder's copy: its files are flat already
                return files
            write_remote_code(save_directory, [type(self)])
        return files


class TaskTokenizer(Protocol):
    """The tokenizer contract: what hf_attn asks of a tokenizer besides `__call__`, `len` and the special ids."""

    # The input ids are characters of words (`(B, T, C)`); a language model's targets are then the words' ids.
    reads_characters: bool
    # Every text is framed by a start and an end marker (`<S>`, `</S>`): a word's per-token label sits one position
    # after its index, and the markers get none (-100).
    sentence_markers: bool

    def config_fields(self) -> dict[str, Any]:
        """The config fields the vocabulary sets (`vocab_size`, `pad_token_id`, a second vocabulary's)."""
        ...

    def tokens_of(self, input_name: str, ids: Sequence[int]) -> list[str] | None:
        """The tokens of input `input_name`'s ids where this tokenizer reads them its own way (a second vocabulary),
        else `None` (they read as any vocabulary's)."""
        ...

    def language_model_encoding(self, texts: list[str], **kwargs: Any) -> dict[str, list]:
        """The model inputs of `texts` and `labels`, the ids a language model predicts."""
        ...


class TokenizerContract:
    """The contract's answers for a tokenizer of one text of token ids (`TaskTokenizer`): a mixin of every hf_attn
    tokenizer, which overrides what differs."""

    reads_characters: ClassVar[bool] = False
    sentence_markers: ClassVar[bool] = False

    def config_fields(self) -> dict[str, Any]:
        fields = {"vocab_size": len(self)}  # type: ignore[arg-type]
        if self.pad_token_id is not None:  # type: ignore[attr-defined]
            fields["pad_token_id"] = self.pad_token_id  # type: ignore[attr-defined]
        return fields

    def tokens_of(self, input_name: str, ids: Sequence[int]) -> list[str] | None:
        return None

    def language_model_encoding(self, texts: list[str], **kwargs: Any) -> dict[str, list]:
        encoded = dict(self(texts, **kwargs))  # type: ignore[operator]
        encoded["labels"] = [list(ids) for ids in encoded["input_ids"]]  # the text's own ids (shifted by the model)
        return encoded


class PlainTokenizer(TokenizerContract):
    """A tokenizer from outside hf_attn seen through the contract, with the answers of one text of token ids."""

    def __init__(self, tokenizer: PreTrainedTokenizerBase) -> None:
        self.tokenizer = tokenizer

    def __call__(self, *args: Any, **kwargs: Any) -> BatchEncoding:
        return self.tokenizer(*args, **kwargs)

    def __len__(self) -> int:
        return len(self.tokenizer)

    @property
    def pad_token_id(self) -> int | None:
        return self.tokenizer.pad_token_id


def task_tokenizer(tokenizer: PreTrainedTokenizerBase) -> TaskTokenizer:
    """`tokenizer` as the contract sees it: itself when it keeps it (every hf_attn tokenizer), else a
    `PlainTokenizer` around it."""
    return tokenizer if isinstance(tokenizer, TokenizerContract) else PlainTokenizer(tokenizer)


def vocabulary_fields(tokenizer: PreTrainedTokenizerBase) -> dict[str, Any]:
    """The config fields a vocabulary sets (the tokenizer contract's `config_fields()`: its size and padding id, or
    what a tokenizer of its own says)."""
    return task_tokenizer(tokenizer).config_fields()


class HfAttnTokenizerFast(SavesItsCode, TokenizerContract, PreTrainedTokenizerFast):
    """`PreTrainedTokenizerFast` that takes any Python string (lone surrogates become U+FFFD) and pads tensors to at
    least one position (an empty text is one all-padding row)."""

    # Saved with its code and `auto_map` (users without hf_attn load it with trust_remote_code=True): what
    # `register_for_auto_class("AutoTokenizer")` would set, on the class itself, as every hf_attn tokenizer is one.
    _auto_class = "AutoTokenizer"

    def _encode_plus(self, text: Any, text_pair: Any = None, *args: Any, **kwargs: Any) -> BatchEncoding:
        encoding = super()._encode_plus(
            replace_lone_surrogates(text), replace_lone_surrogates(text_pair), *args, **kwargs
        )
        ids = encoding.get("input_ids")
        if isinstance(ids, torch.Tensor) and ids.dim() == 2 and ids.size(0) > 0 and ids.size(1) == 0:
            pad_id = self.pad_token_id if self.pad_token_id is not None else 0
            pads = {"input_ids": pad_id, "special_tokens_mask": 1, "labels": -100}
            for name, value in list(encoding.items()):
                if isinstance(value, torch.Tensor) and value.dim() == 2 and value.size(1) == 0:
                    encoding[name] = value.new_full((value.size(0), 1), pads.get(name, 0))
        return encoding
