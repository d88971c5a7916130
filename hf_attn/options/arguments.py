"""The options of `hf-attn train` that load quickly: hf_attn's own (`HfAttnArguments`) and the training options
whose defaults hf_attn changes (`HfAttnTrainingDefaults`), as plain dataclasses, with the command line's parser.

`hf-attn train --help` and `hf-attn evaluate --help` answer from this module alone, without torch or transformers'
training code (`Seq2SeqTrainingArguments` takes seconds to import); `hf_attn.options.reading` reads the command line
with the full classes (`hf_attn.options.training_arguments`).
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from transformers import HfArgumentParser  # light: `import transformers` loads its parts when they are used

from ..recipes import Recipe
from ..registry.row import ArchitectureArguments, option_help
from ..utils.errors import OneLineUsageErrors

__all__ = [
    "EPISODE_OPTIONS",
    "HELP_ALL",
    "HELP_FLAGS",
    "ArchitectureArguments",
    "HfAttnArguments",
    "HfAttnTrainingDefaults",
    "Provenance",
    "ReadOptions",
    "architecture_arguments",
    "evaluation_parser",
    "help_request",
    "one_line_parser",
    "option_help",
    "print_train_help",
    "typed_arguments",
]


@dataclass(frozen=True)
class Provenance:
    """Where each option of a run came from: typed (on the command line, or as `train()`'s keywords), set by the
    schedule `--schedule` names, the recipe's, else the dataclasses' default. Messages about a value say whose it is
    (`where`): a recipe's value is the user's to override, not a typo of theirs."""

    typed: frozenset[str] = frozenset()
    recipe: str | None = None
    from_recipe: frozenset[str] = frozenset()
    scheduled: frozenset[str] = frozenset()

    def where(self, name: str) -> str:
        """`"on the command line"`, `"from recipe 'NAME'"`, `"from --schedule"` or `"by default"`."""
        if name in self.typed:
            return "on the command line"
        if name in self.scheduled:
            return "from --schedule"
        if name in self.from_recipe:
            return f"from recipe {self.recipe!r}"
        return "by default"


@dataclass(frozen=True)
class ReadOptions:
    """The options as read, before any check: every value set (`values`: field name -> value, the typed over the
    schedule's over the recipe's; the rest are the dataclasses' defaults), and where each came from."""

    values: dict[str, Any]
    provenance: Provenance

    @classmethod
    def of(cls, values: dict[str, Any], typed: set[str], recipe: Recipe | None, scheduled: set[str]) -> ReadOptions:
        """The values read and where each came from: `typed` (the names given), the `recipe` read, and the names
        the schedule set (`scheduled`); a typed name is the user's, whatever else also set it."""
        from_recipe = frozenset(set(recipe.arguments) - typed) if recipe else frozenset()
        provenance = Provenance(
            frozenset(typed), recipe.name if recipe else None, from_recipe, frozenset(scheduled - typed)
        )
        return cls(values, provenance)


@dataclass
class HfAttnArguments:
    """hf_attn's options of `hf-attn train` (transformers' own are `HfAttnTrainingArguments`)."""

    arch: str | None = field(
        default=None, metadata=option_help("a registered architecture (hf-attn list; it marks the default)")
    )
    head: str | None = field(default=None, metadata=option_help("the head's class name, when several fit the task"))
    recipe: str | None = field(
        default=None, metadata=option_help("a paper's setting (hf-attn recipes): its data, sizes and optimiser")
    )
    # The data: a synthetic task (the default) ...
    task: str | None = field(default=None, metadata=option_help("synthetic task (default: the architecture's)"))
    task_args: list[str] = field(
        default_factory=list,
        metadata=option_help("synthetic task options KEY=VALUE", "--task-kwargs", "--task_kwargs"),
    )
    num_train: int = field(default=2000, metadata=option_help("synthetic training examples"))
    num_eval: int = field(default=500, metadata=option_help("synthetic held-out examples"))
    # ... or yours.
    dataset: str | None = field(
        default=None,
        metadata=option_help("a Hub dataset id, a folder or a file (.csv .tsv .json .jsonl .parquet .txt)"),
    )
    dataset_config: str | None = field(default=None, metadata=option_help("the Hub dataset's configuration"))
    dataset_format: str | None = field(
        default=None, metadata=option_help("csv, json, parquet or text, for a file whose extension does not say")
    )
    column_names: list[str] | None = field(
        default=None, metadata=option_help("column names of a .csv/.tsv without a header row")
    )
    train_split: str = field(default="train", metadata=option_help("the training split"))
    eval_split: str | None = field(
        default=None, metadata=option_help("the held-out split (default: validation, dev, valid or test)")
    )
    eval_dataset: str | None = field(default=None, metadata=option_help("a file holding the held-out rows"))
    eval_fraction: float = field(
        default=0.1, metadata=option_help("held out from training when the dataset has no held-out split")
    )
    shape: str | None = field(  # one of `hf_attn.tasks.heads.TASK_SHAPES`, checked by `resolve_options`
        default=None, metadata=option_help("the task shape (default: from the columns given and the architecture)")
    )
    text_column: str = field(default="text", metadata=option_help("the text (the source text, for seq2seq)"))
    text_pair_column: str | None = field(default=None, metadata=option_help("the second text of a pair"))
    label_column: str | None = field(default=None, metadata=option_help("the labels (default: label or labels)"))
    target_column: str | None = field(default=None, metadata=option_help("the target text, for seq2seq"))
    label_separator: str | None = field(default=None, metadata=option_help("splits a string column into a label set"))
    max_length: int | None = field(default=None, metadata=option_help("truncate texts to this many tokens"))
    max_eval_samples: int | None = field(
        default=None,
        metadata=option_help(
            "score at most this many held-out rows, a seeded sample (default: as many as the run trains on, at least "
            "2000)"
        ),
    )
    preprocessing_num_workers: int | None = field(
        default=None,
        metadata=option_help("processes that prepare and encode the data (default: every core from 50000 rows on)"),
    )
    overwrite_cache: bool = field(
        default=False,
        metadata=option_help(
            "read the data, prepare, train the vocabulary and encode again, writing the datasets cache afresh"
        ),
    )
    streaming: bool = field(
        default=False,
        metadata=option_help("read --dataset as a stream, for data larger than memory or disk (needs --max_steps)"),
    )
    tokenizer_sample_rows: int = field(
        default=100_000,
        metadata=option_help("with --streaming and no --tokenizer: the first rows the vocabulary is trained on"),
    )
    eval_episodes: int = field(default=500, metadata=option_help("few-shot: the fixed, seeded held-out episodes"))
    train_ways: int | None = field(
        default=None,
        metadata=option_help(
            "few-shot: N of the training episodes, at most the training split's classes (default: the model's "
            "num_ways, which the held-out episodes keep)"
        ),
    )
    support_noise: float = field(
        default=0.0,
        metadata=option_help("few-shot: the share of support instances replaced by other classes' (noisy FewRel)"),
    )
    # The vocabulary.
    tokenizer: str | None = field(
        default=None, metadata=option_help("a saved tokenizer (folder or Hub id) instead of one trained on the data")
    )
    min_frequency: int | None = field(
        default=None, metadata=option_help("rarer words are unknown (default: 1; BPE 2)")
    )
    max_vocab_size: int | None = field(
        default=None, metadata=option_help("the largest vocabulary (default: 30000; BPE 8000)")
    )
    lowercase: bool | None = field(
        default=None, metadata=option_help("lower-case before building the vocabulary (default: words yes, BPE no)")
    )
    # The model.
    config: list[str] = field(
        default_factory=list,
        metadata=option_help("config overrides KEY=VALUE", "--config-overrides", "--config_overrides"),
    )
    word_vectors: str | None = field(
        default=None,
        metadata=option_help(
            "GloVe / word2vec (text or .bin) / fastText .vec vectors for the embedding (none: without, also where "
            "the recipe names the paper's)"
        ),
    )
    freeze_embeddings: bool = field(default=False, metadata=option_help("keep the word embedding fixed"))
    schedule: Literal["linear", "noam"] = field(
        default="linear", metadata=option_help("noam: the Transformer paper's optimiser and warm-up schedule")
    )
    num_beams: int | None = field(
        default=None,
        metadata=option_help(
            "beam size of held-out generation, transformers' --generation_num_beams (default: 4; multi-label 1)"
        ),
    )
    save: bool = field(default=True, metadata=option_help("save the model, tokenizer and card to output_dir"))
    # The recipe named by `recipe`, read once by `resolve_options` (not an option: no flag).
    loaded_recipe: Recipe | None = field(default=None, init=False, repr=False, compare=False)
    # The config fields the run sets (the recipe's `config`, then `--config`'s) and the synthetic task's options
    # (`task_args`), merged and parsed once, by `resolve_options` (not options: no flag).
    config_overrides: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)
    task_kwargs: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)
    # Where each option came from (`Provenance`, by `resolve_options`): messages about a value say whose it is.
    provenance: Provenance = field(default_factory=Provenance, init=False, repr=False, compare=False)
    # The architecture's own options (`Architecture.arguments`), read by `resolve_options` (not an option: no flag).
    architecture_arguments: ArchitectureArguments = field(
        default_factory=ArchitectureArguments, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        if self.arch is None:  # the row that says `default=True`, read from the rows' source (no torch import)
            from ..registry.index import default_architecture

            self.arch = default_architecture()

    def episode_settings(self) -> dict[str, Any]:
        """A few-shot task's episodes beyond the model's N, K and Q (`TaskData.episode_settings`): the held-out
        episodes, the support noise and the training episodes' N, as training and evaluation both read them."""
        return {"eval_episodes": self.eval_episodes, "noise_rate": self.support_noise, "train_ways": self.train_ways}


@dataclass
class HfAttnTrainingDefaults:
    """The `TrainingArguments` fields whose defaults or help hf_attn changes (`HfAttnTrainingArguments` inherits them
    first): the learning rate and batch sizes of small recurrent models, seed 0, every head's parameters used
    (`ddp_find_unused_parameters=False`) and, without an accelerator, `use_cpu`. A plain dataclass, so that
    `hf-attn train --help` lists them without loading transformers' training code."""

    learning_rate: float = field(default=1e-3, metadata=option_help("the initial learning rate", "--lr"))
    seed: int = field(
        default=0, metadata=option_help("seeds the data (synthetic tasks, held-out split), weights and order")
    )
    num_train_epochs: float = field(default=3.0, metadata=option_help("training epochs", "--epochs"))
    per_device_train_batch_size: int = field(
        default=32, metadata=option_help("batch size per process", "--batch-size")
    )
    per_device_eval_batch_size: int = field(default=64, metadata=option_help("evaluation batch size per process"))
    logging_steps: float = field(default=50, metadata=option_help("log every N steps"))
    disable_tqdm: bool | None = field(default=False, metadata=option_help("hide the progress bar", "--no-progress"))
    ddp_find_unused_parameters: bool | None = field(default=False, metadata=option_help("see TrainingArguments"))
    use_cpu: bool | None = field(
        default=None, metadata=option_help("train on CPUs (default: when no accelerator is found)")
    )
    overwrite_output_dir: bool = field(
        default=False,
        metadata=option_help("replace the trained model already in output_dir (otherwise a run into it is refused)"),
    )


class OptionHelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """transformers' help format (each option's default after its help), except for a help line that already says
    its default in words (`the labels (default: label or labels)`): argparse would add a second, `(default: None)`."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if "(default:" in (action.help or ""):
            return action.help
        return super()._get_help_string(action)


class OneLineArgumentParser(OneLineUsageErrors, HfArgumentParser):
    """`HfArgumentParser` whose usage errors are one line, `PROG: message (see PROG --help)` (the CLI's style), and
    whose help says each default once. A switch that is on by default (`save`) gets its `--no_save` complement from
    `HfArgumentParser` with the switch's own help, which reads inverted there: it says what it turns off instead."""

    def __init__(self, dataclass_types: Any, **kwargs: Any) -> None:
        super().__init__(dataclass_types, formatter_class=OptionHelpFormatter, **kwargs)
        switches = {action.dest: action for action in self._actions if action.option_strings and action.const is True}
        for action in self._actions:
            if isinstance(action, argparse._StoreFalseAction) and action.dest in switches:
                switch = switches[action.dest].option_strings[0]
                action.help = f"turn {switch} off (default: {switch} is on)"


def one_line_parser(dataclass_types: Any, prog: str) -> OneLineArgumentParser:
    """An `OneLineArgumentParser` over `dataclass_types`, named `prog` in its messages."""
    return OneLineArgumentParser(dataclass_types, prog=prog)


# `hf-attn evaluate`'s episode sizes of a few-shot model, by option: the config field each sets for the held-out
# episodes (a prototypical network is not tied to the N, K and Q it was trained with: a class is a prototype).
EPISODE_OPTIONS = {"n_way": "num_ways", "k_shot": "num_shots", "n_query": "num_queries"}

HELP_ALL = "--help-all"
HELP_FLAGS = {"-h", "--help", HELP_ALL}


def typed_arguments(argv: Sequence[str], dataclass_types: tuple[type, ...]) -> dict[str, Any]:
    """What `hf-attn train`'s command line `argv` types, by field name: parsed once over `dataclass_types` and each
    architecture's own options (`architecture_arguments`), with every default suppressed, so that what the user typed
    is known exactly (`hf_attn.options.reading.resolve_options` fills the rest). A help flag (`help_request`) prints
    its help (`--help-all`: every option of `dataclass_types` too) and exits."""
    parser = one_line_parser((*dataclass_types, *architecture_arguments().values()), prog="hf-attn train")
    request = help_request(argv)
    if request is not None:
        parser.print_help() if request == HELP_ALL else print_train_help()
        raise SystemExit(0)
    for action in parser._actions:
        if action.dest != "help":
            action.default = argparse.SUPPRESS
    return vars(parser.parse_args(argv))


def help_request(argv: Sequence[str]) -> str | None:
    """Which help `hf-attn train`'s argv asks for: `HELP_ALL` (every option of transformers' too), `"--help"`
    (hf_attn's options, answered without loading the training code), or `None`. Each request asks once, where it
    enters: `hf-attn train` (`hf_attn.cli`) or `python -m hf_attn.commands.train`
    (`hf_attn.options.reading.parse_arguments`)."""
    if not HELP_FLAGS & set(argv):
        return None
    return HELP_ALL if HELP_ALL in argv else "--help"


@functools.cache
def architecture_arguments() -> dict[str, type[ArchitectureArguments]]:
    """Each architecture's own options class (`Architecture.arguments`), by architecture name, found through the
    registry's index (`hf_attn.registry.index.option_classes`: the rows as source, read once per process) and
    imported alone: what `--help` lists."""
    from ..registry.index import option_classes

    return option_classes("arguments")


def print_train_help() -> None:
    """`hf-attn train --help`: hf_attn's options, the training options whose defaults it changes and each
    architecture's own, at once (no training code loaded). `--help-all` lists transformers' options as well
    (`hf_attn.options.reading.print_full_help`)."""
    own = tuple(architecture_arguments().values())
    parser = one_line_parser((HfAttnArguments, HfAttnTrainingDefaults, *own), prog="hf-attn train")
    parser.epilog = (
        "Every other option of transformers' Seq2SeqTrainingArguments is accepted too, with transformers' defaults "
        "(--output_dir, --gradient_accumulation_steps, --eval_strategy, --bf16, --push_to_hub, --report_to, ...): "
        f"`hf-attn train {HELP_ALL}` lists them all."
    )
    parser.print_help()


def evaluation_parser(prog: str) -> Any:
    """`hf-attn train`'s data options (`HfAttnArguments`), each architecture's own (`Architecture.arguments`: the
    columns its tokenizer reads, STCKA's `--concept_column`) and a positional MODEL."""
    parser = one_line_parser((HfAttnArguments, *architecture_arguments().values()), prog=prog)
    parser.add_argument("model", help="a trained model folder or Hub id")
    return parser
