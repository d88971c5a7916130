"""A shared source/target byte-pair-encoding tokenizer (Sennrich et al. 2016), as the Transformer paper used
(§5.1: a shared vocabulary of about 37000 tokens for English-German).

An `HfAttnTokenizerFast` (`hf_attn.tokenization.base`; `tokenizer.json` + `tokenizer_config.json`, reloads with
`AutoTokenizer`).
Special tokens: `[PAD]` 0, `[UNK]` 1, `[BOS]` 2 (the decoder's start token), `[EOS]` 3, appended to every encoding.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

from .base import HfAttnTokenizerFast, task_tokenizer

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[BOS]", "[EOS]"]
END_OF_WORD = "</w>"


def readable_tokens(tokens: Sequence[str], special: Iterable[str] = ()) -> list[str]:
    """Tokens as a picture or a printout shows them: a BPE piece that ends a word loses its `</w>` marker, and one
    that a further piece continues ends in a hyphen (`["trans", "form</w>"]` -> `["trans-", "form"]`). Tokens of a
    vocabulary without the marker, and the `special` tokens, are returned as they are."""
    if not any(token.endswith(END_OF_WORD) for token in tokens if token):
        return list(tokens)
    special = set(special)
    readable = []
    for token in tokens:
        if not token or token in special:
            readable.append(token)
        elif token.endswith(END_OF_WORD):
            readable.append(token[: -len(END_OF_WORD)])
        else:
            readable.append(f"{token}-")
    return readable


def ids_to_tokens(tokenizer: PreTrainedTokenizerBase, input_name: str, ids: Sequence[int]) -> list[str]:
    """The tokens of an input's ids as a picture or a printout shows them: the tokenizer's own `tokens_of(input_name,
    ids)` where it has one and it answers (STCKA's concept vocabulary for `concept_input_ids`), else its words (BPE
    pieces without their `</w>` markers: `readable_tokens`)."""
    tokens = task_tokenizer(tokenizer).tokens_of(input_name, ids)
    if tokens is not None:
        return tokens
    return readable_tokens(tokenizer.convert_ids_to_tokens(list(ids)), tokenizer.all_special_tokens)


def train_bpe_tokenizer(
    texts: Iterable[str],
    vocab_size: int = 8000,
    min_frequency: int = 2,
    lowercase: bool = False,
    model_max_length: int = 1024,
) -> HfAttnTokenizerFast:
    """Learns BPE merges on `texts` (source and target sentences together, for a shared vocabulary).

    Args:
        texts: training sentences of both languages.
        vocab_size: the largest vocabulary, special tokens included.
        min_frequency: a pair must occur this often to be merged.
        lowercase: lower-case before splitting.
        model_max_length: the length `truncation=True` cuts to.
    """
    tokenizer = Tokenizer(models.BPE(unk_token="[UNK]", end_of_word_suffix=END_OF_WORD))
    steps = [normalizers.NFKC()] + ([normalizers.Lowercase()] if lowercase else [])
    tokenizer.normalizer = normalizers.Sequence(steps)
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation(behavior="isolated")]
    )
    tokenizer.decoder = decoders.BPEDecoder(suffix=END_OF_WORD)  # words end where "</w>" was
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=SPECIAL_TOKENS,
        end_of_word_suffix=END_OF_WORD,
        show_progress=False,  # progress: the caller's bar over the texts
    )
    tokenizer.train_from_iterator(texts, trainer=trainer)
    tokenizer.model = _canonical_model(tokenizer)
    eos_id = tokenizer.token_to_id("[EOS]")
    tokenizer.post_processor = processors.TemplateProcessing(
        single="$A [EOS]", pair="$A [EOS] $B [EOS]", special_tokens=[("[EOS]", eos_id)]
    )
    return HfAttnTokenizerFast(
        tokenizer_object=tokenizer,
        pad_token="[PAD]",
        unk_token="[UNK]",
        bos_token="[BOS]",
        eos_token="[EOS]",
        model_max_length=model_max_length,
        padding_side="right",
        model_input_names=["input_ids", "attention_mask"],
    )


def _canonical_model(tokenizer: Tokenizer) -> models.BPE:
    """The trained BPE model with ids renumbered canonically: special tokens, the base alphabet in sorted order,
    then merged tokens in merge order.

    The `tokenizers` trainer numbers tokens in hash-map order, which differs between calls. It also breaks ties
    between equally frequent pairs by those numbers, so two trainings may order tied merges differently: a
    distributed run trains the vocabulary once and shares it, and a resumed run reads it from its checkpoint
    (`hf_attn.commands.train`).
    """
    model = json.loads(tokenizer.to_str())["model"]
    merges = [tuple(merge) if isinstance(merge, list) else tuple(merge.split(" ")) for merge in model["merges"]]
    merged = [left + right for left, right in merges]
    alphabet = sorted(set(model["vocab"]) - set(SPECIAL_TOKENS) - set(merged))
    order = [*SPECIAL_TOKENS, *alphabet, *dict.fromkeys(merged)]
    vocab = {token: index for index, token in enumerate(order)}
    return models.BPE(vocab=vocab, merges=merges, unk_token="[UNK]", end_of_word_suffix=END_OF_WORD)
