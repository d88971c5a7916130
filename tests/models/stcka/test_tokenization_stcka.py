"""STCKA's knowledge base (hf_attn.models.stcka.tokenization_stcka.ConceptSource): a fault names the file and the
line, a field of any size is read, a score that is not finite is refused."""

from __future__ import annotations

import pytest

from hf_attn.models.stcka.tokenization_stcka import ConceptSource


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("latin1.tsv", b"apple\tfruit\t0.5\ncaf\xe9\tplace\t1\n", r"latin1\.tsv:2: not UTF-8"),
        ("broken.json", b'{"apple": [["fruit", 0.5]],\n "pear": [["fruit", 1]', r"broken\.json:2: invalid JSON"),
        ("words.json", b'{"apple": [["fruit", 0.5]],\n "pear": [["fruit", "high"]]}', r"words\.json:2: entity 'pear'"),
        ("nan.tsv", b"apple\tfruit\t0.5\npear\tfruit\tnan\n", r"nan\.tsv:2: the score 'nan' is not finite"),
        ("inf.tsv", b"apple\tfruit\tinf\n", r"inf\.tsv:1: the score 'inf' is not finite"),
        ("nan.json", b'{"apple": {"fruit": NaN}}', r"nan\.json:1: entity 'apple': the score nan is not finite"),
        ("list.json", b"[1, 2]", r"list\.json: expected a JSON object"),
    ],
)
def test_knowledge_base_faults_name_the_file_and_line(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(ValueError, match=message):
        ConceptSource.from_file(path)


def test_knowledge_base_fields_of_any_size_are_read(tmp_path):
    """A 10 MB line is read (csv's field limit is 131,072 characters)."""
    path = tmp_path / "big.tsv"
    entity = "x" * 10_000_000
    path.write_text(f"entity\tconcept\tscore\napple\tfruit\t0.5\n{entity}\tthing\t1\n", encoding="utf-8")
    source = ConceptSource.from_file(path)
    assert source.entities["apple"] == [("fruit", 0.5)] and source.entities[entity] == [("thing", 1.0)]


def test_a_concept_source_built_in_code_refuses_non_finite_scores():
    with pytest.raises(ValueError, match=r"entity 'apple': the score nan is not finite"):
        ConceptSource({"apple": [("fruit", float("nan"))]})
