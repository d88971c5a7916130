"""`hf-attn recipes`: every recipe `hf-attn train --recipe` takes, a line each with its description and the
paper's number beside its source."""

from __future__ import annotations

from hf_attn.cli import main
from hf_attn.recipes import list_recipes, load_recipe, paper_number


def test_every_recipe_is_listed_with_its_papers_number(capsys):
    main(["recipes"])
    printed = capsys.readouterr().out.splitlines()
    names = list_recipes()
    assert len(printed) == 2 * len(names) and names
    for name, (first, second) in zip(names, zip(printed[::2], printed[1::2], strict=True), strict=True):
        recipe = load_recipe(name)
        assert first.split()[0] == name and recipe.description in first
        assert f"{recipe.paper['metric']} {paper_number(recipe.paper)} ({recipe.paper['source']})" in second
