"""The papers' settings as recipes: `hf-attn train --recipe han-yelp` trains the paper's model on the paper's data.

A recipe is a YAML file (`hf_attn/recipes/<name>.yaml`, or any path):

    description: one line
    paper: {metric: accuracy, value: 0.71, split: test, source: "Table 2", note: "..."}  # the number to compare
    options: {...}   # fields of HfAttnArguments and TrainingArguments: the data, its columns, the optimiser
    config: {...}    # the model's hyper-parameters (config fields)

Every option is a default: a command-line flag overrides it (`--dataset reviews.parquet --max_steps 10`), and
`--config KEY=VALUE` overrides one config field (`hf_attn.options` applies them, and refuses an option that is not
a field of its dataclasses). The card of a model trained from a recipe shows the paper's
number beside the measured one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml


@dataclass(frozen=True)
class Recipe:
    """A paper's setting: what to run, and the result the paper reports for it."""

    name: str
    description: str
    paper: dict[str, Any]
    arguments: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)


def list_recipes() -> list[str]:
    """The recipes shipped with hf_attn."""
    folder = resources.files("hf_attn") / "recipes"
    return sorted(item.name.removesuffix(".yaml") for item in folder.iterdir() if item.name.endswith(".yaml"))


def load_recipe(name: str) -> Recipe:
    """A shipped recipe by name (`han-yelp`) or a YAML file by path."""
    shipped = resources.files("hf_attn") / "recipes" / f"{name}.yaml"
    if shipped.is_file():
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
