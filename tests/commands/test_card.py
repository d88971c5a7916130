"""`hf-attn card`: a saved folder's README.md written from its records, with the attention picture of an example."""

from __future__ import annotations

import pytest
from huggingface_hub import ModelCard

from hf_attn.cli import main
from hf_attn.registry.table import ARCHITECTURES
from tests.helpers import tiny_config


def test_cli_card_writes_readme(tmp_path, capsys):
    architecture = ARCHITECTURES["lin_self_attentive"]
    architecture.heads[0].model_class(tiny_config(architecture)).save_pretrained(tmp_path)
    main(["card", str(tmp_path), "--repo-id", "alice/x", "--base-model", "alice/base"])
    assert "wrote" in capsys.readouterr().out
    card = ModelCard.load(tmp_path / "README.md")
    assert card.data.base_model == "alice/base" and 'from_pretrained("alice/x")' in card.text


def test_cli_card_draws_the_attention_of_an_example(tmp_path, capsys):
    from hf_attn.tokenization import train_word_level_tokenizer

    architecture = ARCHITECTURES["lin_self_attentive"]
    tokenizer = train_word_level_tokenizer(["the food was great", "the service was awful"])
    architecture.heads[0].model_class(tiny_config(architecture, vocab_size=len(tokenizer))).save_pretrained(tmp_path)
    main(["card", str(tmp_path)])  # no tokenizer, no example: no picture
    assert "## Attention" not in (tmp_path / "README.md").read_text()
    capsys.readouterr()
    main(["card", str(tmp_path), "--example", "the food was awful"])  # an example, but no tokenizer: said why
    assert "has no tokenizer" in capsys.readouterr().err
    assert "## Attention" not in (tmp_path / "README.md").read_text()
    tokenizer.save_pretrained(tmp_path)
    main(["card", str(tmp_path), "--example", "the food was awful"])
    card = (tmp_path / "README.md").read_text()
    assert '"the food was awful"' in card and "![attention](attention.png)" in card
    assert (tmp_path / "attention.png").stat().st_size > 1000
    hapn = ARCHITECTURES["hapn"]  # a few-shot model's example carries its support set
    folder = tmp_path / "hapn"
    hapn.heads[0].model_class(tiny_config(hapn, vocab_size=len(tokenizer))).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    with pytest.raises(SystemExit, match="belong to an --example"):
        main(["card", str(folder), "--support", "good=the food was great"])
    main(["card", str(folder), "--example", "the food was awful", "--support", "good=the food was great",
          "bad=the service was awful"])  # fmt: skip
    assert "![attention](attention.png)" in (folder / "README.md").read_text()
