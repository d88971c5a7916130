"""The registry read from its rows' source without importing a model (`hf_attn.registry.index`): a row that breaks a
reading rule is refused naming the rule, and the type-checking imports are generated from the public names."""

from __future__ import annotations

import re

import pytest

from tests.helpers import REPO_ROOT
from tests.registry.test_table import MEAN_POOL_ROW


@pytest.mark.parametrize(
    ("change", "rule"),
    [
        (("paper=Paper(", "paper=make_paper("), "`paper=` is an inline `Paper(...)` call"),
        (('display_name="Mean pooling"', 'display_name="Mean " + "pooling"'), "`display_name=` is a literal"),
        (("tokenizer=MEAN_POOL_TOKENIZER", 'tokenizer="mean_pool"'), "`tokenizer=` is a bare name"),
        (("config_class=MeanPoolConfig", "config_class=configs.MeanPoolConfig"), "`config_class=` is a bare name"),
        (("    heads=(\n", "    heads=tuple(\n"), "`heads=` is a literal tuple of inline `Head(...)` calls"),
        (("ARCHITECTURE = Architecture(", "ARCHITECTURE = Architecture('mean_pool',"), "the row is one `ARCHITECTURE"),
    ],
    ids=["paper-call", "literal", "tokenizer-string", "attribute", "heads-call", "positional"],
)
def test_a_row_the_index_cannot_read_is_refused_naming_its_folder_and_the_rule(tmp_path, change, rule):
    """The rules `registry_index` reads a row by (`ROW_RULES`, written in CONTRIBUTING) are checked: a row that breaks
    one is refused with a line naming its folder and the rule, not misread."""
    from hf_attn.registry.index import ROW_RULES, RowRuleError, read_row

    original, changed = change
    assert original in MEAN_POOL_ROW
    folder = tmp_path / "mean_pool"
    folder.mkdir()
    (folder / "architecture.py").write_text(MEAN_POOL_ROW.replace(original, changed, 1))
    with pytest.raises(RowRuleError, match=re.escape("hf_attn/models/mean_pool/architecture.py: ") + re.escape(rule)):
        read_row(folder / "architecture.py", "pkg.models.mean_pool")
    contributing = (REPO_ROOT / "CONTRIBUTING.md").read_text()
    for text in ROW_RULES.values():  # each rule is written down, as the refusal words it
        assert text.format(field="<field>") in " ".join(contributing.split()), text


def test_the_type_checking_block_is_current():
    """The imports an IDE follows (`if TYPE_CHECKING:` in hf_attn/__init__.py, and the architectures' in
    hf_attn/models/__init__.py) are generated from the public names: a folder's new name is there once
    `python -m hf_attn.registry.index` has run."""
    from hf_attn.registry.index import type_checking_blocks

    blocks = type_checking_blocks()
    assert len(blocks) == 2
    for init, current, generated in blocks:
        assert current == generated, f"{init}'s generated block is stale: run python -m hf_attn.registry.index"
    assert "HanModel" in blocks[1][2] and "HanModel" not in blocks[0][2]
