"""The papers' settings as recipes: `hf-attn train --recipe NAME` trains the paper's model on the paper's data.

A recipe is a YAML file (`hf_attn/models/<arch>/recipes/<name>.yaml`, its architecture's folder, or any path):

    description: one line
    paper: {metric: accuracy, value: 0.71, split: test, source: "Table 2", note: "..."}  # the number to compare
                                                  # (value: null where it is not transcribed: source names it)
    options: {...}   # fields of HfAttnArguments and TrainingArguments: the data, its columns, the optimiser
    config: {...}    # the model's hyper-parameters (config fields)

Every option is a default: a command-line flag overrides it (`--dataset reviews.parquet --max_steps 10`), and
`--config KEY=VALUE` overrides one config field (`hf_attn.options.reading` applies them, and refuses an option that is
not a field of its dataclasses). The card of a model trained from a recipe shows the paper's
number beside the measured one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable  # Python 3.11+; annotations only


@dataclass(frozen=True)
class Recipe:
    """A paper's setting: what to run, and the result the paper reports for it."""

    name: str
    description: str
    paper: dict[str, Any]
    arguments: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)


def paper_number(paper: dict[str, Any]) -> str:
    """The paper's number as tables show it: `value`, or a dash where the recipe has not transcribed it (`value:
    null`: the recipe names the table to read it from, in `source`)."""
    value = paper.get("value")
    return "— (not transcribed: see the source)" if value is None else str(value)


def _shipped() -> dict[str, Traversable]:
    """The recipes shipped with hf_attn, by name: each architecture's folder brings its own (`recipes/*.yaml`)."""
    shipped: dict[str, Traversable] = {}
    for folder in (resources.files("hf_attn") / "models").iterdir():
        recipes = folder / "recipes"
        for item in recipes.iterdir() if recipes.is_dir() else ():
            if item.name.endswith(".yaml"):
                name = item.name.removesuffix(".yaml")
                if name in shipped:
                    raise ValueError(f"Two architectures ship a recipe named {name!r}: rename one.")
                shipped[name] = item
    return shipped


def list_recipes() -> list[str]:
    """The recipes shipped with hf_attn."""
    return sorted(_shipped())


def load_recipe(name: str) -> Recipe:
    """A shipped recipe by name (`hf-attn recipes` lists them) or a YAML file by path."""
    shipped = _shipped().get(name)
    if shipped is not None:
        text = shipped.read_text()
    elif Path(name).is_file():
        text = Path(name).read_text()
    else:
        raise ValueError(f"Unknown recipe {name!r}: not a file, and hf_attn ships {', '.join(list_recipes())}.")
    content = yaml.safe_load(text) or {}
    unknown = sorted(set(content) - {"description", "paper", "options", "config"})
    if unknown or "paper" not in content:
        raise ValueError(f"Recipe {name!r}: needs `paper` and may hold description, options, config; got {unknown}.")
    arguments = dict(content.get("options") or {})
    if "config" in arguments:
        raise ValueError(f"Recipe {name!r}: the model's hyper-parameters go under `config`, not `options`.")
    return Recipe(
        name=Path(name).stem,
        description=content.get("description", ""),
        paper=dict(content["paper"]),
        arguments=arguments,
        config=dict(content.get("config") or {}),
    )
