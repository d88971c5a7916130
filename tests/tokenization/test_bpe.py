"""The BPE tokenizer (hf_attn.tokenization.bpe): pictures show words, not BPE markers."""

from __future__ import annotations


def test_pictures_show_words_not_bpe_markers():
    """BPE pieces carry `</w>` at a word's end; what a picture shows has none: the marker goes, and a piece that a
    further piece continues ends in a hyphen (`readable_tokens`, used by every attention view)."""
    from hf_attn.tokenization.bpe import ids_to_tokens, readable_tokens, train_bpe_tokenizer

    tokenizer = train_bpe_tokenizer(["transformers transform the transformed text"] * 20, vocab_size=40)
    ids = tokenizer("transformers transform")["input_ids"]
    raw = tokenizer.convert_ids_to_tokens(ids)
    assert any(token.endswith("</w>") for token in raw)
    shown = ids_to_tokens(tokenizer, "input_ids", ids)
    assert not any("</w>" in token for token in shown)
    words = "".join(token if token.endswith("-") or token in tokenizer.all_special_tokens else token + " "
                    for token in shown).replace("-", "")  # fmt: skip
    assert "transformers transform" in words
    assert readable_tokens(["hello", "world"]) == ["hello", "world"]  # no markers: as they are
