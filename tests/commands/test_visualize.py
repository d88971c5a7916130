"""`hf-attn visualize`: HTML and PNG written from the command line, a mistake named in one line, and a view's own
options reaching it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from hf_attn.cli import main
from hf_attn.registry.table import ARCHITECTURES
from tests.helpers import TEXTS, tiny_config, tiny_model_and_tokenizer


def test_cli_writes_html_and_png_and_names_what_is_wrong(tmp_path, capsys):
    architecture = ARCHITECTURES["biblosa"]
    model, tokenizer = tiny_model_and_tokenizer(architecture, architecture.heads[0])
    model.save_pretrained(tmp_path / "model")
    for suffix in ("html", "png"):  # no tokenizer yet
        with pytest.raises(SystemExit, match="has no tokenizer"):
            main(["visualize", str(tmp_path / "model"), "the food", "--out", str(tmp_path / f"out.{suffix}")])
    tokenizer.save_pretrained(tmp_path / "model")
    for suffix in ("html", "png"):
        main(["visualize", str(tmp_path / "model"), "the food was great", "--out", str(tmp_path / f"out.{suffix}")])
        assert (tmp_path / f"out.{suffix}").stat().st_size > 500
    assert "loading" not in capsys.readouterr().err  # progress lines on a terminal only: a log gets the result alone
    errors = {
        r"--out must end in \.html or \.png": ["x", "--out", str(tmp_path / "out.svg")],
        "too long to draw": [" ".join(["food"] * 600), "--out", str(tmp_path / "out.html")],
        "takes no option": ["x", "--top_k", "3", "--out", str(tmp_path / "out.html")],
        "is not LABEL=TEXT": ["x", "--support", "no-label", "--out", str(tmp_path / "out.html")],
    }
    for message, arguments in errors.items():
        with pytest.raises(SystemExit, match=message):
            main(["visualize", str(tmp_path / "model"), *arguments])
    config = json.loads((tmp_path / "model" / "config.json").read_text())
    (tmp_path / "model" / "config.json").write_text(json.dumps({**config, "model_type": "biblosax"}))
    with pytest.raises(SystemExit, match="biblosax"):
        main(["visualize", str(tmp_path / "model"), "x", "--out", str(tmp_path / "out.html")])


def test_a_views_own_options_reach_it_through_the_cli_and_another_architectures_are_refused(tmp_path, capsys):
    """`hf-attn visualize` lists every architecture's view options (`Architecture.view_arguments`) and hands the
    model's own to its view, read as the view reads them (`--heads 0,1`: head indices); the options of another
    architecture's view are refused naming what the view takes."""
    drawn = {}
    for name in ("vaswani_transformer", "attention_xml"):
        architecture = ARCHITECTURES[name]
        model, tokenizer = tiny_model_and_tokenizer(architecture, architecture.heads[0])
        model.save_pretrained(tmp_path / name)
        tokenizer.save_pretrained(tmp_path / name)
        drawn[name] = str(tmp_path / name)
    out = str(tmp_path / "out.html")

    def panels(*arguments: str) -> int:
        capsys.readouterr()
        main(["visualize", *arguments, "--out", out])
        return int(re.search(r"\((\d+) panels?;", capsys.readouterr().out)[1])

    config = tiny_config(ARCHITECTURES["vaswani_transformer"])
    assert config.encoder_layers == config.decoder_layers  # cross, encoder and decoder maps: 3 a layer
    assert panels(drawn["vaswani_transformer"], TEXTS[0]) == 3 * config.encoder_layers  # the mean over the heads
    assert panels(drawn["vaswani_transformer"], TEXTS[0], "--layers", "0") == 3
    assert panels(drawn["vaswani_transformer"], TEXTS[0], "--layers", "0", "--heads", "0,1") == 6
    assert "head 2" in Path(out).read_text()
    assert panels(drawn["attention_xml"], TEXTS[0], "--top-k", "2") == 1
    with pytest.raises(SystemExit, match=r"takes no option.*heads"):
        main(["visualize", drawn["attention_xml"], TEXTS[0], "--heads", "all", "--out", out])
