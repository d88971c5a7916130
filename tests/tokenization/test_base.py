"""The tokenizer contract (hf_attn.tokenization.base): every tokenizer kind keeps it, and a foreign tokenizer gets its
defaults."""

from __future__ import annotations

import pytest

from hf_attn.tokenization import train_word_level_tokenizer
from tests.tokenization.test_word_level import TEXTS


def test_every_tokenizer_kind_keeps_the_contract_and_a_foreign_tokenizer_gets_its_defaults():
    """The tokenizer contract (`TaskTokenizer`) is kept by every registered kind's tokenizer (registration refuses
    one that does not); a tokenizer from elsewhere is seen through `task_tokenizer` with the answers of one text of
    token ids; and no shared module probes a tokenizer with `getattr`."""
    import re
    from dataclasses import replace

    from transformers import PreTrainedTokenizerFast

    from hf_attn.registry.table import ARCHITECTURES
    from hf_attn.tokenization.base import PlainTokenizer, TokenizerContract, task_tokenizer
    from hf_attn.tokenization.kinds import TOKENIZER_KINDS, WORD_LEVEL_TOKENIZER, register_tokenizer_kind
    from tests.helpers import REPO_ROOT

    assert {architecture.tokenizer.name for architecture in ARCHITECTURES.values()} <= set(TOKENIZER_KINDS)
    for kind in TOKENIZER_KINDS.values():
        assert issubclass(kind.tokenizer_class, TokenizerContract), kind
    with pytest.raises(ValueError, match=r"'foreign': \w+ does not keep the tokenizer contract"):
        register_tokenizer_kind(replace(WORD_LEVEL_TOKENIZER, name="foreign", tokenizer_class=PreTrainedTokenizerFast))
    assert "foreign" not in TOKENIZER_KINDS

    ours = train_word_level_tokenizer(TEXTS)
    assert task_tokenizer(ours) is ours
    foreign = PreTrainedTokenizerFast(tokenizer_object=ours.backend_tokenizer, pad_token="[PAD]", unk_token="[UNK]")
    seen = task_tokenizer(foreign)
    assert isinstance(seen, PlainTokenizer) and not seen.reads_characters and not seen.sentence_markers
    assert seen.config_fields() == {"vocab_size": len(foreign), "pad_token_id": 0} == ours.config_fields()
    assert seen.tokens_of("input_ids", [2, 3]) is None
    encoded = seen.language_model_encoding(["good movie"])
    assert encoded["labels"] == encoded["input_ids"] == [foreign("good movie")["input_ids"]]

    probes = [f"{path.relative_to(REPO_ROOT)}: {line.strip()}" for path in (REPO_ROOT / "hf_attn").rglob("*.py")
              for line in path.read_text().splitlines()
              if re.search(r"getattr\((self\.)?tokenizer, \"(?!backend_tokenizer)", line)]  # fmt: skip
    assert not probes, probes
