"""`hf-attn recipes`: the papers' settings that `hf-attn train --recipe NAME` runs, each with its paper's number."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """`recipes` takes no options."""


def run(_: argparse.Namespace) -> None:
    from ..recipes import list_recipes, load_recipe, paper_number

    for name in list_recipes():
        recipe = load_recipe(name)
        paper = recipe.paper
        print(
            f"{name:24s} {recipe.description}\n{'':24s} paper: {paper['metric']} {paper_number(paper)} "
            f"({paper['source']})"
        )
