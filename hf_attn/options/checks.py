"""Every check of `hf-attn train`'s options, each refusing a value or a combination in one line that names the
option, before any work (the ones that need the data read or the folder, `check_staged_run` and
`check_output_folder`, as soon as the run knows its head and before it writes; a stream for a task shape that cannot
stream is refused as the shape is chosen, `hf_attn.tasks.heads.choose_head`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..registry.table import get_architecture
from .arguments import HfAttnArguments, Provenance, ReadOptions

if TYPE_CHECKING:
    from transformers import TrainingArguments

    from ..registry.row import Architecture, Head

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
    "train_ways": (2, "at least 2 classes an episode"),
    "num_beams": (1, "a positive number of beams"),
    "max_vocab_size": (1, "a positive number of words"),
    "min_frequency": (0, "a count of 0 or more"),
    "max_eval_samples": (1, "a positive number of rows"),
    "preprocessing_num_workers": (1, "a positive number of processes"),
    "tokenizer_sample_rows": (1, "a positive number of rows"),
}


def check_values(read: ReadOptions) -> None:
    """The values as read, checked before the dataclasses are built from them (transformers refuses some values
    itself, in words that name no option): the numbers (`check_ranges`) and the task shape."""
    check_ranges(read)
    shape = read.values.get("shape")
    if shape is not None:
        from ..tasks.heads import TASK_SHAPES

        if shape not in TASK_SHAPES:
            where = read.provenance.where("shape")
            raise ValueError(f"--shape {shape} ({where}): not a task shape; the shapes are {', '.join(TASK_SHAPES)}.")


def check_options(options: HfAttnArguments, args: TrainingArguments, provenance: Provenance) -> None:
    """The built options, each check once, before any work: the reporters, the columns, the options only some
    architectures read, the input paths and the combinations."""
    check_reporters(args.report_to)
    check_columns(options)
    check_model_options(options, provenance)
    check_input_paths(options)
    check_combinations(options, args)


def check_ranges(read: ReadOptions) -> None:
    """Refuses, naming the option, the value and where it came from (`Provenance.where`), a number `RANGES` rules
    out, and epochs that would train nothing (`--num_train_epochs` ≤ 0 without `--max_steps`)."""
    merged, where = read.values, read.provenance.where

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


def check_columns(options: HfAttnArguments) -> None:
    """The text, pair and label options name different columns: one column read as two would train on the answer
    (a text read as its own label) or end, far later, in a message about the labels that names no option."""
    named = [
        ("--text_column", options.text_column),
        ("--text_pair_column", options.text_pair_column),
        ("--label_column", options.label_column),
    ]
    for index, (option, column) in enumerate(named):
        for other, other_column in named[index + 1 :]:
            if column is not None and column == other_column:
                raise ValueError(
                    f"{option} and {other} both name the column {column!r}: each must name a column of its own "
                    "(the text, the second text of a pair, the labels)."
                )


def _architectures_with(test) -> str:
    """The registered architectures `test(architecture)` holds for, as a line lists them."""
    from ..registry.table import ARCHITECTURES

    return ", ".join(name for name, architecture in ARCHITECTURES.items() if test(architecture))


def check_schedule(name: str, architecture: Architecture) -> Callable[..., dict[str, Any]]:
    """The training arguments' function of schedule `name` (`--schedule`) of `architecture`'s row
    (`Architecture.schedules`); refused, in one line, for an architecture whose row has none of that name."""
    if name not in architecture.schedules:
        with_it = _architectures_with(lambda other: name in other.schedules)
        raise ValueError(
            f"--schedule {name}: a schedule of {with_it}, which --arch {architecture.name} has not; set "
            "--learning_rate and --lr_scheduler_type yourself."
        )
    return architecture.schedules[name]


def check_model_options(options: HfAttnArguments, provenance: Provenance) -> None:
    """An option only some architectures' heads read is refused, before any work, for an architecture with no such
    head, naming those that have one: a second text (`--text_pair_column`), a target (`--target_column`), beams
    (`--num_beams` above 1: a head that generates), few-shot episodes (`--eval_episodes`, `--support_noise`,
    `--train_ways`)."""
    from ..tasks.heads import TASK_SHAPES

    def shapes(architecture):
        return [(shape, head) for shape in TASK_SHAPES.values() for head in shape.heads(architecture)]

    def reads_pairs(architecture):
        return any(head.inputs.pair for head in architecture.heads)

    def reads_targets(architecture):
        return any(shape.layout.pair_option == "--target-column" for shape, _ in shapes(architecture))

    def generates(architecture):
        return any(shape.generates(head) for shape, head in shapes(architecture))

    def episodic(architecture):
        return any(shape.episodic for shape, _ in shapes(architecture))

    few_shot = [name for name in ("eval_episodes", "support_noise", "train_ways") if name in provenance.typed]
    beams = options.num_beams if (options.num_beams or 1) > 1 else None
    needs = [
        (f"--text_pair_column {options.text_pair_column}", options.text_pair_column, reads_pairs, "reads no pair"),
        (f"--target_column {options.target_column}", options.target_column, reads_targets, "writes no target text"),
        # One beam is greedy search, which every head does: only a search of more is refused.
        (f"--num_beams {options.num_beams}", beams, generates, "generates nothing to search with beams"),
        (" ".join(f"--{name}" for name in few_shot), few_shot or None, episodic, "trains on no few-shot episodes"),
    ]
    asked = [(option, test, fault) for option, value, test, fault in needs if value is not None]
    architecture = get_architecture(options.arch) if asked else None  # the row is read only when one is asked
    for option, test, fault in asked:
        if not test(architecture):
            heads = ", ".join(head.model_class.__name__ for head in architecture.heads)
            raise ValueError(
                f"{option}: --arch {options.arch} {fault} (its heads: {heads}); architectures that do: "
                f"{_architectures_with(test)}."
            )


def check_input_paths(options: HfAttnArguments) -> None:
    """Every local path an option names is there and of the kind the option takes, before any work: the data
    (`--dataset`, a folder that holds data; `--eval_dataset`, a file), `--tokenizer` and `--word_vectors` (each
    read later, through the same stages: `hf_attn.utils.inputs`)."""
    from ..utils.inputs import TOKENIZER, WORD_VECTORS, check_input
    from ..utils.paths import check_local_path

    if options.dataset is not None:
        check_local_path(options.dataset, "--dataset")
        if os.path.isdir(options.dataset) and options.dataset_format is None:
            from ..data.files import DATA

            check_input("--dataset", options.dataset, DATA)
    if options.eval_dataset is not None:
        check_local_path(options.eval_dataset, "--eval-dataset")
    if isinstance(options.tokenizer, str):
        check_input("--tokenizer", options.tokenizer, TOKENIZER)
    if options.word_vectors is not None:
        check_input("--word_vectors", options.word_vectors, WORD_VECTORS)


def trains_in_stages(architecture: Architecture, head: Head) -> bool:
    """Whether a run of `head` first trains the architecture's language model (ELMo's biLM, then the task)."""
    pretraining = architecture.pretraining_head
    return pretraining is not None and head.model_class.__name__ != pretraining


def check_staged_run(
    architecture: Architecture, head: Head, streamed: bool, resume_from_checkpoint: bool | str | None
) -> bool:
    """Whether the run trains in two stages (`trains_in_stages`), and the options such a run cannot take, refused
    once the data has chosen the head: a stream (each stage reads the whole training split) and a checkpoint path
    (each stage has its own)."""
    if not trains_in_stages(architecture, head):
        return False
    if streamed:
        raise ValueError(
            f"--streaming: {architecture.display_name} trains in two stages (a language model, then the task), each "
            "over the whole training split; train without --streaming."
        )
    if isinstance(resume_from_checkpoint, str):
        raise ValueError(
            f"{architecture.display_name} trains in two stages, each with its own checkpoints "
            "(output_dir/pretraining, then output_dir): resume with `--resume_from_checkpoint true` "
            "(`resume_from_checkpoint=True`), not a checkpoint path."
        )
    return True


def check_combinations(options: HfAttnArguments, args: TrainingArguments) -> None:
    """Options that cannot go together, or that one needs another for, refused before any work: a file as the
    output folder, a stream without `--dataset` or `--max_steps`, a push without a repo, frozen embeddings without
    vectors, and `--max_steps 0`."""
    if args.output_dir and os.path.exists(args.output_dir) and not os.path.isdir(args.output_dir):
        raise ValueError(f"--output_dir {args.output_dir} is a file, not a folder: name a folder for the run.")
    if options.streaming and not options.dataset:
        raise ValueError("--streaming reads --dataset as a stream: give --dataset (a Hub id, a folder or a file).")
    if options.streaming and args.max_steps <= 0:
        raise ValueError(
            "--streaming reads the data as training asks for it, with no length to count epochs by: give --max_steps."
        )
    if args.push_to_hub and not args.hub_model_id:
        raise ValueError("--push_to_hub needs --hub_model_id USER/REPO.")
    if options.freeze_embeddings and not options.word_vectors:
        raise ValueError("--freeze_embeddings needs --word_vectors (a random embedding would stay random).")
    if args.max_steps == 0:  # transformers reads max_steps ≤ 0 as "use the epochs": 0 would silently train them
        raise ValueError(
            "--max_steps 0 would train nothing (transformers would train the epochs instead): give a positive number "
            "of steps, or leave it out to train for --num_train_epochs."
        )


def check_output_folder(options: HfAttnArguments, args: TrainingArguments) -> None:
    """A run that saves (or pushes) refuses a folder that holds another run's results unless told to replace it
    (`--overwrite_output_dir`) or to continue it (`--resume_from_checkpoint`)."""
    from ..utils.saving import refuse_overwrite

    if (options.save or args.push_to_hub) and not (args.resume_from_checkpoint or args.overwrite_output_dir):
        refuse_overwrite(
            args.output_dir,
            "pass --overwrite_output_dir to replace it (`overwrite_output_dir=True`), or --resume_from_checkpoint "
            "true to continue the run that saved it",
            what="this run",
        )
