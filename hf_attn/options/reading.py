"""The options of `hf-attn train`: hf_attn's own (`HfAttnArguments`) and transformers' (`HfAttnTrainingArguments`),
read once from the command line (`parse_arguments`) or from keywords (`resolve_options`, what `train()` uses).

Where a value comes from, first match wins: what the user typed; the schedule `--schedule` names, where the
architecture's row has it (`Architecture.schedules`: the Transformer's `noam`, its optimiser and peak learning rate,
which depend on d_model and the warm-up); the recipe's options
(`--recipe`, read once and kept on the options as `HfAttnArguments.loaded_recipe`); the architecture config's
training setting (`label_smoothing` → `label_smoothing_factor`: the Transformer's ε_ls, §5.4, which its loss does
not apply itself); the dataclasses' defaults. A
value the user typed is never replaced, even when it equals a default.

The dataclasses live where they load fastest: hf_attn's options in `hf_attn.options.arguments` (what `--help` reads),
transformers' with hf_attn's defaults in `hf_attn.options.training_arguments`.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from dataclasses import fields
from typing import Any

from ..recipes import Recipe, load_recipe
from ..registry.index import default_architecture
from ..registry.table import get_architecture
from .arguments import (
    ArchitectureArguments,
    HfAttnArguments,
    HfAttnTrainingDefaults,
    ReadOptions,
    architecture_arguments,
    one_line_parser,
    typed_arguments,
)
from .checks import check_options, check_schedule, check_values
from .training_arguments import HfAttnTrainingArguments

__all__ = [
    "DATACLASSES",
    "HfAttnArguments",
    "HfAttnTrainingArguments",
    "HfAttnTrainingDefaults",
    "parse_arguments",
    "parse_overrides",
    "read_options",
    "resolve_options",
]


def config_fields(config_class: type) -> set[str]:
    """The fields a config of `config_class` reads, from the class (no config is built): its dataclass fields and
    the two keywords transformers' configs take for a property (`num_labels`, the size of `id2label`;
    `output_attentions`)."""
    return set(_declared(config_class)) | {"num_labels", "output_attentions"}


def _declared(config_class: type) -> dict[str, Any]:
    """The config class's dataclass fields by name (`@strict` configs are dataclasses)."""
    import dataclasses

    return (
        {field.name: field for field in dataclasses.fields(config_class)}
        if dataclasses.is_dataclass(config_class)
        else {}
    )


def config_value(config_class: type, overrides: dict[str, Any], name: str) -> Any:
    """The value field `name` will have in a config of `config_class` built with `overrides` (the override, else
    the field's default; `None` for a field the class does not declare), read without building one."""
    import dataclasses

    if name in overrides:
        return overrides[name]
    field = _declared(config_class).get(name)
    if field is None:
        return None
    return field.default_factory() if field.default_factory is not dataclasses.MISSING else field.default


def check_config_overrides(config_class: type, overrides: dict[str, Any], option: str = "--config") -> None:
    """Refuses, before any work and without building a config, a field the config does not have (a typo would
    otherwise train with the default and be saved in config.json as a dead key), naming the nearest fields, and a
    value its field's own validators refuse (its type, its range: huggingface_hub's strict dataclasses run the same
    validators when the config is built, which checks the rules that tie fields together)."""
    import difflib

    from huggingface_hub.errors import StrictDataclassFieldValidationError

    known = config_fields(config_class)
    for name in overrides:
        if name not in known:
            nearest = difflib.get_close_matches(name, sorted(known), n=3, cutoff=0.6)
            hint = f"did you mean {' or '.join(nearest)}?" if nearest else f"its fields: {', '.join(sorted(known))}"
            raise ValueError(f"{option}: {config_class.__name__} has no field {name!r}; {hint}")
    # `__validators__`: what `@strict` runs on every assignment to a field, by field name.
    validators = getattr(config_class, "__validators__", {})
    for name, value in overrides.items():
        for validate in validators.get(name, ()):
            try:
                validate(value)
            except (TypeError, ValueError) as cause:
                error = StrictDataclassFieldValidationError(field=name, cause=cause)
                raise ValueError(f"{option}: {' '.join(str(error).split())}") from cause


def parse_overrides(pairs: Sequence[str] | dict[str, Any] | None) -> dict[str, Any]:
    """`["hidden_size=32", "penalty_type=frobenius"]` -> `{"hidden_size": 32, "penalty_type": "frobenius"}` (values are
    read as JSON when they parse, else as strings); a dict is returned as it is."""
    if isinstance(pairs, dict):
        return dict(pairs)
    overrides: dict[str, Any] = {}
    for pair in pairs or ():
        key, separator, value = pair.partition("=")
        if not separator or not key:
            raise ValueError(f"Config overrides are KEY=VALUE, got {pair!r}.")
        try:
            overrides[key] = json.loads(value)
        except json.JSONDecodeError:
            overrides[key] = value
    return overrides


# `hf-attn train`'s two dataclasses: hf_attn's options and transformers' with hf_attn's defaults (the architectures'
# own follow them: `train_dataclasses`).
DATACLASSES = (HfAttnArguments, HfAttnTrainingArguments)


def train_dataclasses() -> tuple[type, ...]:
    """Every dataclass of `hf-attn train`'s options: `DATACLASSES`, then each architecture's own
    (`Architecture.arguments`, e.g. STCKA's knowledge base)."""
    return (*DATACLASSES, *architecture_arguments().values())


def _aliases() -> dict[str, str]:
    """Keyword spellings `train()` accepts for a field: its CLI aliases without dashes (`epochs`, `batch_size`)."""
    names = {}
    for dataclass_type in train_dataclasses():
        for item in fields(dataclass_type):
            for alias in item.metadata.get("aliases", ()):
                names[alias.lstrip("-").replace("-", "_")] = item.name
    return names


def _known_options() -> set[str]:
    return {item.name for dataclass_type in train_dataclasses() for item in fields(dataclass_type) if item.init}


def _recipe_options(recipe: Recipe) -> dict[str, Any]:
    """The recipe's options, each a field of the two dataclasses (a ValueError names the others)."""
    wrong = sorted(set(recipe.arguments) - _known_options())
    if wrong:
        raise ValueError(f"Recipe {recipe.name!r}: unknown options {wrong} (see `hf-attn train --help`).")
    return dict(recipe.arguments)


def resolve_options(given: dict[str, Any]) -> tuple[HfAttnArguments, HfAttnTrainingArguments]:
    """The two dataclasses from the options given (field names; `config` and `task_args` may be dicts), in one
    direction: read (`read_options`: the values and where each came from), checked (`check_values`), built, and
    checked as built (`check_options`)."""
    read, recipe, overrides = read_options(given)
    check_values(read)
    merged = read.values
    own = {item.name for item in fields(HfAttnArguments) if item.init}
    options = HfAttnArguments(**{key: value for key, value in merged.items() if key in own})
    options.loaded_recipe = recipe
    options.config_overrides = overrides
    options.task_kwargs = parse_overrides(options.task_args)
    options.provenance = read.provenance
    own_options, architectures_own = _architecture_arguments(options.arch, merged)
    if own_options is not None:  # else the default, which reads nothing
        options.architecture_arguments = own_options
    args = HfAttnTrainingArguments(
        **{key: value for key, value in merged.items() if key not in own and key not in architectures_own}
    )
    check_options(options, args, read.provenance)
    return options, args


def read_options(given: dict[str, Any]) -> tuple[ReadOptions, Recipe | None, dict[str, Any]]:
    """What the run is asked: every value given, the schedule's, the recipe's (module docstring), with where each
    came from; the recipe, and the config fields the run sets (the recipe's, then `--config`'s, checked against the
    config class before any work; the config is built once, by the run, when the data has set its vocabulary and
    labels)."""
    unknown = sorted(set(given) - _known_options())
    if unknown:
        raise TypeError(f"Unknown options {unknown}; see `hf-attn train --help`.")
    recipe = load_recipe(given["recipe"]) if given.get("recipe") else None
    recipe_arch = recipe.arguments.get("arch") if recipe else None
    if recipe_arch and given.get("arch") not in (None, recipe_arch):
        raise ValueError(
            f"--arch {given['arch']} does not fit --recipe {recipe.name}, which trains {recipe_arch} (its sizes and "
            "settings are that architecture's): leave --arch out, or pick another recipe (`hf-attn recipes`)."
        )
    merged = {**(_recipe_options(recipe) if recipe else {}), **given}
    merged["arch"] = merged.get("arch") or default_architecture()
    architecture = get_architecture(merged["arch"])
    config_class = architecture.config_class
    overrides = {**(recipe.config if recipe else {}), **parse_overrides(merged.get("config"))}
    check_config_overrides(config_class, overrides)
    scheduled: dict[str, Any] = {}
    if merged.get("schedule", "linear") != "linear":  # the row's schedule, from the config the run will build
        schedule = check_schedule(merged["schedule"], architecture)
        scheduled = schedule(lambda name: config_value(config_class, overrides, name), merged.get("warmup_steps"))
        merged = {**merged, **scheduled, **given}  # the schedule over the recipe, what was typed over both
    label_smoothing = config_value(config_class, overrides, "label_smoothing")
    if "label_smoothing_factor" not in merged and label_smoothing:
        # The paper's training loss (the Transformer's ε_ls = 0.1, §5.4) is a training argument: the model's own
        # `outputs.loss` is plain cross-entropy against `labels`, as in transformers' models.
        merged["label_smoothing_factor"] = label_smoothing
    merged = _generation_beams(merged, given)
    merged = _recipe_word_vectors(merged, given, recipe)
    return ReadOptions.of(merged, set(given), recipe, set(scheduled)), recipe, overrides


def _generation_beams(merged: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """`--num_beams` (hf_attn's, which `hf-attn evaluate` takes too) is the beams of held-out generation, transformers'
    `Seq2SeqTrainingArguments.generation_num_beams`: it sets that field unless the field was typed itself. Both typed,
    with two numbers, is refused."""
    beams, typed = merged.get("num_beams"), given.get("generation_num_beams")
    if beams is not None and typed is not None and "num_beams" in given and beams != typed:
        raise ValueError(
            f"--num_beams {beams} and --generation_num_beams {typed} both set the beams of held-out generation: give "
            "one."
        )
    return merged if beams is None or typed is not None else {**merged, "generation_num_beams": beams}


# `--word_vectors none`: train without pretrained vectors, also where the recipe names the paper's.
NO_VECTORS = "none"


def _recipe_word_vectors(merged: dict[str, Any], given: dict[str, Any], recipe: Recipe | None) -> dict[str, Any]:
    """The word vectors of the run: `--word_vectors PATH` (a local copy of the paper's file), `--word_vectors none`
    (none, and a recipe's frozen embedding trains), else the recipe's, which names the paper's file: where it is not
    here, the run is refused before any work, naming both ways on."""
    vectors = merged.get("word_vectors")
    if isinstance(vectors, str) and vectors.lower() == NO_VECTORS:
        # Without the paper's vectors, the recipe's frozen embedding would stay random: it trains, unless typed.
        frozen = given.get("freeze_embeddings", False)
        return {**merged, "word_vectors": None, "freeze_embeddings": frozen}
    if recipe is not None and "word_vectors" not in given and vectors is not None and not os.path.exists(vectors):
        raise ValueError(
            f"--word_vectors {vectors} (from recipe {recipe.name!r}): the paper's word vectors are not here; give a "
            "local copy with --word_vectors PATH, or train without them with --word_vectors none."
        )
    return merged


def _architecture_arguments(arch: str, merged: dict[str, Any]) -> tuple[ArchitectureArguments | None, set[str]]:
    """The architecture's own options (`Architecture.arguments`) from `merged` (`None`: it has none), and the names of
    every architecture's own options. An option of another architecture is refused, naming it and whose it is (it
    would do nothing)."""
    owners: dict[str, list[str]] = {}
    classes = architecture_arguments()
    for name, dataclass_type in classes.items():
        for item in fields(dataclass_type):
            if item.init:
                owners.setdefault(item.name, []).append(name)
    for key in merged:
        if key in owners and arch not in owners[key]:
            whose = " or ".join(f"--arch {name}" for name in owners[key])
            raise ValueError(f"--{key} is an option of {whose}, not of --arch {arch}.")
    if arch not in classes:
        return None, set(owners)
    own = {item.name for item in fields(classes[arch]) if item.init}
    return classes[arch](**{key: value for key, value in merged.items() if key in own}), set(owners)


def print_full_help() -> None:
    """`hf-attn train --help-all`: hf_attn's options and every option of transformers' `Seq2SeqTrainingArguments`."""
    one_line_parser(train_dataclasses(), prog="hf-attn train").print_help()


def parse_arguments(argv: Sequence[str] | None = None) -> tuple[HfAttnArguments, HfAttnTrainingArguments]:
    """`hf-attn train`'s command line -> the two dataclasses: what argv types (`typed_arguments`), resolved
    (`resolve_options` fills the rest)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    return resolve_options(typed_arguments(argv, DATACLASSES))


def keyword_options(options: dict[str, Any]) -> dict[str, Any]:
    """`train()`'s keywords as field names: a CLI alias without dashes (`epochs`, `batch_size`) is its field."""
    aliases = _aliases()
    return {aliases.get(key, key): value for key, value in options.items()}
