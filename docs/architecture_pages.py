"""The manual's pages that the registry writes: the architecture table (the README's and the site's) and one page per
architecture (its paper, what is faithful and what deviates, its heads, its config fields, its conversion, its
recipes, its picture), so that none of them is kept by hand. `docs/gen_pages.py` writes them into the site when
`make docs` builds it; the README's table is this module's too:

    python docs/architecture_pages.py --readme   # writes the table into README.md (a test checks that it is current)
"""

from __future__ import annotations

import argparse
import inspect
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
USAGE = ROOT / "docs" / "usage"  # each architecture's hand-written usage: docs/usage/<name>.md
PICTURES = ROOT / "docs" / "attention"  # each architecture's picture: docs/attention/<name>.png
README_TABLE = ("<!-- architecture table: python docs/architecture_pages.py --readme -->", "<!-- end of the table -->")


def _registry():
    if str(ROOT) not in sys.path:  # this checkout's hf_attn, when run as a script from anywhere
        sys.path.insert(0, str(ROOT))
    from hf_attn.registry.table import ARCHITECTURES

    return ARCHITECTURES


def _recipes() -> dict[str, list]:
    """The shipped recipes, by the architecture they train."""
    from hf_attn.recipes import list_recipes, load_recipe

    recipes: dict[str, list] = {}
    for name in list_recipes():
        recipe = load_recipe(name)
        recipes.setdefault(recipe.arguments.get("arch"), []).append(recipe)
    return recipes


def _paper(architecture) -> str:
    paper = architecture.paper
    first = paper.authors.split(",")[0].split()[-1]
    others = " et al." if "," in paper.authors or " and " in paper.authors else ""
    shown = f"arXiv:{paper.arxiv}" if paper.arxiv else paper.url.rstrip("/").rsplit("/", 1)[-1]
    return f"{first}{others} {paper.year}, *{paper.title}* ([{shown}]({paper.url}))"


def architecture_table(page_links: bool = False) -> str:
    """The table of every architecture: its name (a link to its page with `page_links`), paper, heads, the original
    its converter reads and its recipes."""
    recipes = _recipes()
    lines = ["| architecture | paper | heads | converts | recipes |", "|---|---|---|---|---|"]
    for name, architecture in _registry().items():
        shown = f"[`{name}`](architectures/{name}.md)" if page_links else f"`{name}`"
        heads = ", ".join(f"`{head.model_class.__name__}`" for head in architecture.heads)
        converts = f"[the original]({architecture.original_code})" if architecture.converter else "—"
        names = ", ".join(f"`{recipe.name}`" for recipe in recipes.get(name, [])) or "—"
        lines.append(f"| {shown} | {_paper(architecture)} | {heads} | {converts} | {names} |")
    return "\n".join(lines) + "\n"


def _docstring(obj) -> str:
    return inspect.cleandoc(inspect.getdoc(obj) or "")


def architecture_page(name: str) -> str:
    """The page of architecture `name`, from its registry row, its modules' docstrings, its recipes and its
    picture, with its hand-written usage (`docs/usage/<name>.md`) where there is one."""
    import importlib

    architecture = _registry()[name]
    paper = architecture.paper
    modeling = importlib.import_module(architecture.base_model_class.__module__)
    parts = [
        f"# {architecture.display_name}",
        "",
        f"{paper.authors}. *{paper.title}*. {paper.venue} {paper.year}. [{paper.reference}]({paper.url})"
        + (f"; the original code: <{architecture.original_code}>" if architecture.original_code else ""),
        "",
        f"`--arch {name}` · `model_type` `{architecture.config_class.model_type}` · synthetic task "
        f"`{architecture.synthetic_task}` · tokenizer `{architecture.tokenizer.name}`",
        "",
    ]
    if (PICTURES / f"{name}.png").is_file():
        parts += [f"![{architecture.display_name}'s attention](../attention/{name}.png)", ""]
    usage = USAGE / f"{name}.md"
    if usage.is_file():
        parts += ["## Use it", "", usage.read_text().strip(), ""]
    parts += ["## The paper, and where this differs", "", "```text", _docstring(modeling), "```", ""]
    parts += ["## Heads", "", "| class | Auto class | reads | labels | pipeline | attention |", "|---" * 6 + "|"]
    for head in architecture.heads:
        attention = ", ".join(f"`{field}`" for field in head.attention_fields) or "—"
        parts.append(
            f"| `{head.model_class.__name__}` | {head.auto_class or '—'} | {head.inputs.name} | {head.labels.name} | "
            f"{head.pipeline_tag or '—'} | {attention} |"
        )
    parts += ["", "## Config", "", f"::: {architecture.config_class.__module__}.{architecture.config_class.__name__}",
              "    options:", "      members: false", ""]  # fmt: skip
    if architecture.converter:
        converter = importlib.import_module(f"{architecture.config_class.__module__.rpartition('.')[0]}."
                                            f"{architecture.converter}")  # fmt: skip
        parts += ["## Conversion", "", f"`hf-attn convert {name} --help` lists its options.", "", "```text",
                  _docstring(converter), "```", ""]  # fmt: skip
    recipes = _recipes().get(name, [])
    if recipes:
        from hf_attn.recipes import paper_number

        parts += ["## Recipes", "", "| recipe | what | the paper's number |", "|---|---|---|"]
        for recipe in recipes:
            number = f"{recipe.paper['metric']} {paper_number(recipe.paper)} ({recipe.paper['source']})"
            parts.append(f"| `{recipe.name}` | {recipe.description} | {number} |")
        parts.append("")
    parts += ["## Cite", "", "```bibtex", paper.bibtex.strip(), "```", ""]
    return "\n".join(parts)


def readme_with_table(readme: str) -> str:
    """`readme` with the table between its `README_TABLE` markers written anew."""
    start, end = README_TABLE
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.S)
    if not pattern.search(readme):
        raise ValueError(f"README.md has no {start} ... {end} block for the architecture table.")
    return pattern.sub(lambda _: f"{start}\n{architecture_table()}{end}", readme)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--readme", action="store_true", help="write the architecture table into README.md")
    args = parser.parse_args()
    if args.readme:
        readme = ROOT / "README.md"
        readme.write_text(readme_with_table(readme.read_text()))
    else:
        print(architecture_table())


if __name__ == "__main__":
    main()
