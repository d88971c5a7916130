"""`hf-attn predict`: its texts from the command line, a file or standard input, one a line (an empty line kept,
for its result to stand in its place)."""

from __future__ import annotations

import argparse
import io


def test_predict_reads_one_text_a_line_from_a_file_or_standard_input(tmp_path, monkeypatch, capsys):
    from hf_attn.commands.predict import _texts

    texts = tmp_path / "texts.txt"
    texts.write_text("the food was great\n\nawful service\n", encoding="utf-8")
    parsed = argparse.Namespace(texts=[], file=str(texts))
    assert _texts(parsed) == ["the food was great", "", "awful service"]  # one result a line: the empty one too
    monkeypatch.setattr("sys.stdin", io.StringIO("one\ntwo\n"))
    assert _texts(argparse.Namespace(texts=[], file="-")) == ["one", "two"]
    assert _texts(argparse.Namespace(texts=["not a file name"], file=None)) == ["not a file name"]
