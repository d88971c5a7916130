"""The options of `hf-attn train`: hf_attn's own (`HfAttnArguments`) and transformers' (`HfAttnTrainingArguments`),
read once from the command line (`parse_arguments`) or from keywords (`resolve_options`, what `train()` uses).

Where a value comes from, first match wins: what the user typed; the Transformer paper's schedule (`--schedule
noam`: its optimiser and peak learning rate, which depend on d_model and the warm-up); the recipe's options
(`--recipe`, read once and kept on the options as `HfAttnArguments.loaded_recipe`); the architecture config's
training setting (`label_smoothing` → `label_smoothing_factor`: the Transformer's ε_ls, §5.4, which its loss does
not apply itself); the dataclasses' defaults. A
value the user typed is never replaced, even when it equals a default.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Literal

import torch
from transformers import HfArgumentParser, Seq2SeqTrainingArguments

from .recipes import Recipe, load_recipe
from .registry import get_architecture
from .tasks import TASK_SHAPES
from .utils.errors import OneLineUsageErrors

__all__ = [
    "DATACLASSES",
    "HfAttnArguments",
    "HfAttnTrainingArguments",
    "noam_arguments",
    "noam_learning_rate",
    "parse_arguments",
    "parse_overrides",
    "resolve_options",
]


def noam_learning_rate(d_model: int, warmup_steps: int, factor: float = 1.0) -> float:
    """The peak of Vaswani et al.'s schedule (eq. 3), lrate = d_model^-0.5 · min(step^-0.5, step · warmup^-1.5),
    reached at step = warmup_steps."""
    return factor * d_model**-0.5 * warmup_steps**-0.5


def noam_arguments(d_model: int, warmup_steps: int = 4000, factor: float = 1.0) -> dict[str, Any]:
    """`TrainingArguments` keywords for the paper's optimiser (§5.3): Adam(β1 0.9, β2 0.98, ε 1e-9) and eq. 3.

    Eq. 3 rises linearly to its peak over `warmup_steps` and then decays as step^-0.5: exactly transformers'
    `inverse_sqrt` schedule with timescale = warmup_steps, started from the peak learning rate."""
    return {
        "learning_rate": noam_learning_rate(d_model, warmup_steps, factor),
        "lr_scheduler_type": "inverse_sqrt",
        "lr_scheduler_kwargs": {"timescale": warmup_steps},
        "warmup_steps": warmup_steps,
        "adam_beta1": 0.9,
        "adam_beta2": 0.98,
        "adam_epsilon": 1e-9,
        "weight_decay": 0.0,
        "optim": "adamw_torch",
    }


def config_fields(config_class: type) -> set[str]:
    """The fields a config of `config_class` reads: its dataclass fields, what a default instance holds, and
    `num_labels` (transformers' alias of `id2label`'s size)."""
    import dataclasses

    fields = (
        {field.name for field in dataclasses.fields(config_class)} if dataclasses.is_dataclass(config_class) else set()
    )
    return fields | set(config_class().to_dict()) | {"num_labels"}


def check_config_overrides(config_class: type, overrides: dict[str, Any], option: str = "--config") -> None:
    """Refuses a field the config does not have (a typo would otherwise train with the default and be saved in
    config.json as a dead key), naming the nearest fields."""
    import difflib

    known = config_fields(config_class)
    for name in overrides:
        if name not in known:
            nearest = difflib.get_close_matches(name, sorted(known), n=3, cutoff=0.6)
            hint = f"did you mean {' or '.join(nearest)}?" if nearest else f"its fields: {', '.join(sorted(known))}"
            raise ValueError(f"{option}: {config_class.__name__} has no field {name!r}; {hint}")


def build_config(config_class: type, overrides: dict[str, Any], **fields: Any) -> Any:
    """`config_class(**fields, **overrides)`, the overrides checked first (`check_config_overrides`); a value of the
    wrong type or out of range is a `ValueError` naming `--config` and the field (the config's own message)."""
    from huggingface_hub.errors import StrictDataclassError

    check_config_overrides(config_class, overrides)
    try:
        return config_class(**fields, **overrides)
    except (StrictDataclassError, TypeError) as error:
        raise ValueError(f"--config: {' '.join(str(error).split())}") from error


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


def _help(text: str, *aliases: str, **metadata: Any) -> dict[str, Any]:
    return {"help": text, **({"aliases": list(aliases)} if aliases else {}), **metadata}


@dataclass
class HfAttnArguments:
    """hf_attn's options of `hf-attn train` (transformers' own are `HfAttnTrainingArguments`)."""

    arch: str = field(default="lin_self_attentive", metadata=_help("a registered architecture (hf-attn list)"))
    head: str | None = field(default=None, metadata=_help("the head's class name, when several fit the task"))
    recipe: str | None = field(
        default=None, metadata=_help("a paper's setting (hf-attn recipes): its data, sizes and optimiser")
    )
    # The data: a synthetic task (the default) ...
    task: str | None = field(default=None, metadata=_help("synthetic task (default: the architecture's)"))
    task_args: list[str] = field(
        default_factory=list, metadata=_help("synthetic task options KEY=VALUE", "--task-kwargs", "--task_kwargs")
    )
    num_train: int = field(default=2000, metadata=_help("synthetic training examples"))
    num_eval: int = field(default=500, metadata=_help("synthetic held-out examples"))
    # ... or yours.
    dataset: str | None = field(
        default=None, metadata=_help("a Hub dataset id, a folder or a file (.csv .tsv .json .jsonl .parquet .txt)")
    )
    dataset_config: str | None = field(default=None, metadata=_help("the Hub dataset's configuration"))
    dataset_format: str | None = field(
        default=None, metadata=_help("csv, json, parquet or text, for a file whose extension does not say")
    )
    column_names: list[str] | None = field(
        default=None, metadata=_help("column names of a .csv/.tsv without a header row")
    )
    train_split: str = field(default="train", metadata=_help("the training split"))
    eval_split: str | None = field(
        default=None, metadata=_help("the held-out split (default: validation, dev, valid or test)")
    )
    eval_dataset: str | None = field(default=None, metadata=_help("a file holding the held-out rows"))
    eval_fraction: float = field(
        default=0.1, metadata=_help("held out from training when the dataset has no held-out split")
    )
    shape: Literal[tuple(TASK_SHAPES)] | None = field(  # type: ignore[valid-type]
        default=None, metadata=_help("the task shape (default: from the columns given and the architecture)")
    )
    text_column: str = field(default="text", metadata=_help("the text (the source text, for seq2seq)"))
    text_pair_column: str | None = field(default=None, metadata=_help("the second text of a pair"))
    label_column: str | None = field(default=None, metadata=_help("the labels (default: label or labels)"))
    target_column: str | None = field(default=None, metadata=_help("the target text, for seq2seq"))
    label_separator: str | None = field(default=None, metadata=_help("splits a string column into a label set"))
    max_length: int | None = field(default=None, metadata=_help("truncate texts to this many tokens"))
    eval_episodes: int = field(default=500, metadata=_help("few-shot: the fixed, seeded held-out episodes"))
    support_noise: float = field(
        default=0.0,
        metadata=_help("few-shot: the share of support instances replaced by other classes' (noisy FewRel)"),
    )
    # Knowledge (STCKA): each text's concept set.
    concepts: str | None = field(
        default=None,
        metadata=_help("an isA knowledge base (entity<TAB>concept<TAB>score lines, or JSON) to link concepts"),
    )
    concept_column: str | None = field(
        default=None, metadata=_help("the column holding each text's concepts (a list, or space-separated)")
    )
    no_concepts: bool = field(
        default=False,
        metadata=_help("STCKA without concepts (the paper's ablation): every text's concept set is empty"),
    )
    max_concepts: int | None = field(default=None, metadata=_help("keep a text's best-scored concepts only"))
    min_concept_score: float = field(default=0.0, metadata=_help("drop concepts scored below this"))
    # The vocabulary.
    tokenizer: str | None = field(
        default=None, metadata=_help("a saved tokenizer (folder or Hub id) instead of one trained on the data")
    )
    min_frequency: int | None = field(default=None, metadata=_help("rarer words are unknown (default: 1; BPE 2)"))
    max_vocab_size: int | None = field(
        default=None, metadata=_help("the largest vocabulary (default: 30000; BPE 8000)")
    )
    lowercase: bool | None = field(
        default=None, metadata=_help("lower-case before building the vocabulary (default: words yes, BPE no)")
    )
    # The model.
    config: list[str] = field(
        default_factory=list, metadata=_help("config overrides KEY=VALUE", "--config-overrides", "--config_overrides")
    )
    word_vectors: str | None = field(
        default=None, metadata=_help("GloVe / word2vec (text or .bin) / fastText .vec vectors for the embedding")
    )
    freeze_embeddings: bool = field(default=False, metadata=_help("keep the word embedding fixed"))
    schedule: Literal["linear", "noam"] = field(
        default="linear", metadata=_help("noam: the Transformer paper's optimiser and warm-up schedule")
    )
    num_beams: int | None = field(
        default=None, metadata=_help("beam size of held-out generation (default: 4; multi-label 1)")
    )
    save: bool = field(default=True, metadata=_help("save the model, tokenizer and card to output_dir"))
    # The recipe named by `recipe`, read once by `resolve_options` (not an option: no flag).
    loaded_recipe: Recipe | None = field(default=None, init=False, repr=False, compare=False)
    # The options the recipe set and the user did not type (messages about them say whose they are).
    from_recipe: tuple[str, ...] = field(default=(), init=False, repr=False, compare=False)


@dataclass
class HfAttnTrainingArguments(Seq2SeqTrainingArguments):
    """transformers' `Seq2SeqTrainingArguments` (every `TrainingArguments` flag) with hf_attn's defaults: the
    learning rate and batch sizes of small recurrent models, seed 0, `data_seed` = `seed` (a resumed run sees the
    same data order), every head's parameters used (`ddp_find_unused_parameters=False`) and, without an
    accelerator, `use_cpu`, which is what makes a multi-process launch on CPUs join one gloo group.
    `--push_to_hub` uploads the finished folder once (weights, tokenizer, card; never a pickle), not every
    checkpoint."""

    learning_rate: float = field(default=1e-3, metadata=_help("the initial learning rate", "--lr"))
    seed: int = field(default=0, metadata=_help("seeds the data (synthetic tasks, held-out split), weights and order"))
    num_train_epochs: float = field(default=3.0, metadata=_help("training epochs", "--epochs"))
    per_device_train_batch_size: int = field(default=32, metadata=_help("batch size per process", "--batch-size"))
    per_device_eval_batch_size: int = field(default=64, metadata=_help("evaluation batch size per process"))
    logging_steps: float = field(default=50, metadata=_help("log every N steps"))
    disable_tqdm: bool | None = field(default=False, metadata=_help("hide the progress bar", "--no-progress"))
    ddp_find_unused_parameters: bool | None = field(default=False, metadata=_help("see TrainingArguments"))
    use_cpu: bool | None = field(default=None, metadata=_help("train on CPUs (default: when no accelerator is found)"))
    overwrite_output_dir: bool = field(
        default=False,
        metadata=_help("replace the trained model already in output_dir (otherwise a run into it is refused)"),
    )

    def __post_init__(self) -> None:
        if self.use_cpu is None:
            self.use_cpu = not torch.accelerator.is_available()
        if self.data_seed is None:
            self.data_seed = self.seed
        if isinstance(self.resume_from_checkpoint, str) and self.resume_from_checkpoint.lower() in ("true", "last"):
            self.resume_from_checkpoint = True  # the last checkpoint of output_dir
        super().__post_init__()


DATACLASSES = (HfAttnArguments, HfAttnTrainingArguments)


def _aliases() -> dict[str, str]:
    """Keyword spellings `train()` accepts for a field: its CLI aliases without dashes (`epochs`, `batch_size`)."""
    names = {}
    for dataclass_type in DATACLASSES:
        for item in fields(dataclass_type):
            for alias in item.metadata.get("aliases", ()):
                names[alias.lstrip("-").replace("-", "_")] = item.name
    return names


def _known_options() -> set[str]:
    return {item.name for dataclass_type in DATACLASSES for item in fields(dataclass_type) if item.init}


def _recipe_options(recipe: Recipe) -> dict[str, Any]:
    """The recipe's options, each a field of the two dataclasses (a ValueError names the others)."""
    wrong = sorted(set(recipe.arguments) - _known_options())
    if wrong:
        raise ValueError(f"Recipe {recipe.name!r}: unknown options {wrong} (see `hf-attn train --help`).")
    return dict(recipe.arguments)


# Numbers that would train nothing, or fail deep inside transformers (a division by zero, a negative seed),
# checked before any work: option -> (the smallest value that makes sense, what it must be).
RANGES: dict[str, tuple[float, str]] = {
    "per_device_train_batch_size": (1, "a positive number of examples"),
    "per_device_eval_batch_size": (1, "a positive number of examples"),
    "gradient_accumulation_steps": (1, "a positive number of steps"),
    "max_length": (1, "a positive number of tokens"),
    "learning_rate": (0, "a rate of 0 or more"),
    "weight_decay": (0, "0 or more"),
    "warmup_steps": (0, "0 or more steps"),
    "seed": (0, "an integer of 0 or more"),
    "eval_episodes": (1, "a positive number of episodes"),
    "num_beams": (1, "a positive number of beams"),
    "max_vocab_size": (1, "a positive number of words"),
    "min_frequency": (0, "a count of 0 or more"),
}


def check_ranges(merged: dict[str, Any], given: dict[str, Any], recipe: str | None) -> None:
    """Refuses, naming the option, the value and where it came from (the command line or the recipe), a number
    `RANGES` rules out, and epochs that would train nothing (`--num_train_epochs` ≤ 0 without `--max_steps`)."""

    def where(name: str) -> str:
        return "on the command line" if name in given or recipe is None else f"from recipe {recipe!r}"

    def typed(value: float) -> str:  # 0 as the user wrote it, not the parsed 0.0
        return format(value, "g") if isinstance(value, float) else str(value)

    for name, (smallest, what) in RANGES.items():
        value = merged.get(name)
        if isinstance(value, int | float) and not isinstance(value, bool) and value < smallest:
            raise ValueError(f"--{name} {typed(value)} ({where(name)}): give {what}.")
    fraction = merged.get("eval_fraction")
    if isinstance(fraction, int | float) and not 0 < fraction < 1:
        raise ValueError(
            f"--eval_fraction {typed(fraction)} ({where('eval_fraction')}): give the share of the training rows to "
            "hold out, between 0 and 1."
        )
    epochs, steps = merged.get("num_train_epochs"), merged.get("max_steps")
    if isinstance(epochs, int | float) and epochs <= 0 and not (isinstance(steps, int) and steps > 0):
        raise ValueError(
            f"--num_train_epochs {typed(epochs)} ({where('num_train_epochs')}) would train nothing: give a positive "
            "number of epochs, or --max_steps."
        )


def check_reporters(report_to: list[str] | str | None) -> None:
    """Refuses a `--report_to` integration whose package is not installed, before any work (transformers would
    raise it as a traceback once the `Trainer` starts)."""
    from transformers.integrations import get_available_reporting_integrations

    requested = [report_to] if isinstance(report_to, str) else list(report_to or [])
    available = get_available_reporting_integrations()
    missing = [name for name in requested if name not in ("none", "all") and name not in available]
    if missing:
        raise ValueError(
            f"--report_to {' '.join(missing)}: not installed here (pip install {' '.join(missing)}); installed: "
            f"{', '.join(available) or 'none'}."
        )


def resolve_options(given: dict[str, Any]) -> tuple[HfAttnArguments, HfAttnTrainingArguments]:
    """The two dataclasses from the options given (field names; `config` and `task_args` may be dicts): the typed
    values, then the noam schedule's, then the recipe's, then the defaults (module docstring)."""
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
    overrides = {**(recipe.config if recipe else {}), **parse_overrides(merged.get("config"))}
    config = build_config(get_architecture(merged.get("arch", HfAttnArguments.arch)).config_class, overrides)
    if merged.get("schedule") == "noam":
        noam = noam_arguments(config.d_model, int(merged.get("warmup_steps") or 4000))
        merged = {**merged, **noam, **given}  # the schedule over the recipe, what was typed over both
    if "label_smoothing_factor" not in merged and getattr(config, "label_smoothing", 0.0):
        # The paper's training loss (the Transformer's ε_ls = 0.1, §5.4) is a training argument: the model's own
        # `outputs.loss` is plain cross-entropy against `labels`, as in transformers' models.
        merged["label_smoothing_factor"] = config.label_smoothing
    check_ranges(merged, given, recipe.name if recipe else None)
    own = {item.name for item in fields(HfAttnArguments) if item.init}
    options = HfAttnArguments(**{key: value for key, value in merged.items() if key in own})
    options.loaded_recipe = recipe
    options.from_recipe = tuple(sorted(set(recipe.arguments) - set(given))) if recipe else ()
    args = HfAttnTrainingArguments(**{key: value for key, value in merged.items() if key not in own})
    check_reporters(args.report_to)
    if args.max_steps == 0:  # transformers reads max_steps ≤ 0 as "use the epochs": 0 would silently train them
        raise ValueError(
            "--max_steps 0 would train nothing (transformers would train the epochs instead): give a positive number "
            "of steps, or leave it out to train for --num_train_epochs."
        )
    return options, args


class OneLineArgumentParser(OneLineUsageErrors, HfArgumentParser):
    """`HfArgumentParser` whose usage errors are one line, `PROG: message (see PROG --help)` (the CLI's style)."""


def one_line_parser(dataclass_types: Any, prog: str) -> OneLineArgumentParser:
    """An `OneLineArgumentParser` over `dataclass_types`, named `prog` in its messages."""
    return OneLineArgumentParser(dataclass_types, prog=prog)


def parse_arguments(argv: Sequence[str] | None = None) -> tuple[HfAttnArguments, HfAttnTrainingArguments]:
    """`hf-attn train`'s command line -> the two dataclasses. argv is parsed once, with every default suppressed,
    so that what the user typed is known exactly (`resolve_options` fills the rest)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = one_line_parser(DATACLASSES, prog="hf-attn train")
    for action in parser._actions:
        if action.dest != "help":
            action.default = argparse.SUPPRESS
    return resolve_options(vars(parser.parse_args(argv)))


def keyword_options(options: dict[str, Any]) -> dict[str, Any]:
    """`train()`'s keywords as field names: a CLI alias without dashes (`epochs`, `batch_size`) is its field."""
    aliases = _aliases()
    return {aliases.get(key, key): value for key, value in options.items()}
