"""A training run's first step (`prepare_run`), the data half of it: what it trains on, built once, up to the encoded
splits and the config that reads them.

- The data (`task_data`): a synthetic task or the user's files (`--dataset`), in the task shape of the head that
  trains on it, its held-out split cut to what is scored (`hf_attn.data.rows.rows_to_score`), with the episodes'
  settings and the status lines, in one complete, frozen `TaskData`.
- The shape and the head (`choose_head`), whether it trains in two stages, and the options such a run refuses.
- Where the run goes on from (`--resume_from_checkpoint`), found once, before any work.
- The vocabulary: the architecture's tokenizer kind trained on the training texts (or the same vocabulary found again
  beside the split's cache files), a tokenizer given (`--tokenizer`), or a checkpoint's when resuming; in a
  distributed run the main process builds it and the others load its copy.
- The config (the shape's fields: vocabulary, labels; the recipe's and `--config`'s overrides), and the data's status
  lines said once it has taken the labels.
- The two splits encoded (found again in the `datasets` cache on a second run), each data step timed
  (`DataStages`) for the status line the fitting step says.

`hf_attn.training.fitting` takes the `Preparation` from there (model, `Trainer`, metrics, record).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from datasets import Dataset, IterableDataset
from transformers import AutoTokenizer, PreTrainedConfig, PreTrainedTokenizerBase

from ..data import get_synthetic_task
from ..data.cache import cache_folder, column_values, vocabulary
from ..data.episodes import prepare_few_shot_data
from ..data.files import load_splits
from ..data.kinds import EPISODES
from ..data.request import DataRequest
from ..data.rows import canonical_rows, rows_to_score
from ..data.streaming import stream_rows
from ..data.task_data import TaskData
from ..options.arguments import HfAttnArguments
from ..options.checks import check_staged_run
from ..options.training_arguments import HfAttnTrainingArguments
from ..registry.table import Architecture, Head, get_architecture
from ..tasks.base import TaskShape
from ..tasks.heads import TASK_SHAPES, choose_head, pick_head
from ..utils.inputs import TOKENIZER, read_input
from ..utils.saving import report_on_main, resume_point

__all__ = [
    "DataStages",
    "Preparation",
    "prepare_run",
    "task_data",
    "task_summary",
]


class DataStages:
    """Times the data steps of a run (reading, vocabulary, encoding) and says in one status line how long each took
    and which came from the `datasets` cache."""

    @dataclass
    class Step:
        name: str
        seconds: float = 0.0
        cached: bool = False

    def __init__(self) -> None:
        self.steps: list[DataStages.Step] = []

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[DataStages.Step]:
        step = DataStages.Step(name)
        started = time.perf_counter()
        yield step
        step.seconds = time.perf_counter() - started
        self.steps.append(step)

    def summary(self, data: TaskData) -> str:
        """`[hf-attn] data: 900000 training rows, 2000 held-out; reading and preparing 3.1 s, vocabulary 16.0 s,
        encoding 35.2 s` (`(cached)` after a step the `datasets` cache answered)."""
        steps = ", ".join(f"{s.name} {s.seconds:.1f} s{' (cached)' if s.cached else ''}" for s in self.steps)
        rows = "streamed" if data.streamed else f"{len(data.train)} training rows, {len(data.eval)} held-out"
        line = f"[hf-attn] data: {rows}; {steps}"
        if all(step.cached for step in self.steps) and (folder := cache_folder(data.train)) is not None:
            line += f"; reused from the datasets cache ({folder})"
        return line


@dataclass(frozen=True)
class Preparation:
    """What `prepare_run` hands the fitting step: the architecture's row, the data request (`DataRequest`: the
    columns evaluation reads again), the complete task data, its shape and head, whether the head trains in two
    stages (`trains_in_stages`), the checkpoint the run goes on from, the tokenizer, the config, the two splits
    encoded (training, held-out), and the status line of the data steps (`DataStages.summary`), said once every
    input has been read."""

    architecture: Architecture
    request: DataRequest
    data: TaskData
    shape: TaskShape
    head: Head
    staged: bool
    resume: str | bool | None
    tokenizer: PreTrainedTokenizerBase
    config: PreTrainedConfig
    encoded: tuple[Dataset | IterableDataset, Dataset | IterableDataset]
    data_line: str


def prepare_run(options: HfAttnArguments, args: HfAttnTrainingArguments) -> Preparation:
    """Data request -> data (`task_data`) and head -> checkpoint to go on from -> vocabulary -> config -> encoded
    splits, each found once; the data's status lines said once the config has taken its labels."""
    architecture = get_architecture(options.arch)
    request = DataRequest.of(options, options.architecture_arguments.columns(), args)
    stages = DataStages()
    with stages.stage("reading and preparing") as step:
        data, shape, head = task_data(options, architecture, args, request)
        step.cached = "prepared rows" in data.from_cache
    staged = check_staged_run(architecture, head, data.streamed, args.resume_from_checkpoint)
    # Where the run goes on from, where asked: found once, before any work (each checkpoint that does not load is
    # named here).
    resume = None
    if args.resume_from_checkpoint:
        resume = resume_point(args.resume_from_checkpoint, args.output_dir, not staged, report_on_main(args))
    with stages.stage("vocabulary") as step:
        build = lambda: _vocabulary(options, architecture, data, step)  # noqa: E731 (trained only where none is given)
        own_class = architecture.tokenizer.tokenizer_class
        tokenizer = _shared_tokenizer(args, resume, options.tokenizer, build, own_class)
    config = shape.build_config(architecture.config_class, tokenizer, data, options.config_overrides)
    if args.process_index == 0:
        for note in data.notes:  # said now that the data has passed its checks: a refused run prints one line
            print(note, flush=True)
    with stages.stage("encoding") as step, args.main_process_first(local=False, desc="encoding the data"):
        # The main process encodes first; the others find its work in the datasets cache (a split held in memory is
        # encoded by each).
        workers, fresh = options.preprocessing_num_workers, options.overwrite_cache
        train_split, eval_split, step.cached = shape.encode_splits(
            data, tokenizer, config, head, options.max_length, workers, fresh
        )
    encoded = (train_split, eval_split)
    summary = stages.summary(data)
    return Preparation(architecture, request, data, shape, head, staged, resume, tokenizer, config, encoded, summary)


def _shared_tokenizer(
    args: HfAttnTrainingArguments,
    checkpoint: str | bool | None,
    source: str | PreTrainedTokenizerBase | None,
    build: Callable[[], PreTrainedTokenizerBase],
    own_class: type,
) -> PreTrainedTokenizerBase:
    """The given tokenizer; when resuming (from `checkpoint`), the checkpoint's (a vocabulary trained again could
    differ: the BPE trainer orders tied merges by hash-map order); else one `build` trains. Every process must use
    the same vocabulary, so in a distributed run the main process builds the tokenizer and the others load its
    copy."""
    saved = Path(checkpoint) / "tokenizer_config.json" if isinstance(checkpoint, str) else None
    if source is None and saved is not None and saved.is_file():
        # The run's own kind (`own_class`) loads as itself: AutoTokenizer would read the checkpoint's config first.
        if json.loads(saved.read_text(encoding="utf-8")).get("tokenizer_class") == own_class.__name__:
            return own_class.from_pretrained(checkpoint)
        source = checkpoint
    if isinstance(source, PreTrainedTokenizerBase):
        return source
    if source is not None:
        return read_input("--tokenizer", source, TOKENIZER, lambda: AutoTokenizer.from_pretrained(source))
    if args.world_size == 1:
        return build()
    folder = Path(args.output_dir) / "tokenizer"
    with args.main_process_first(local=False, desc="building the tokenizer"):
        if args.process_index == 0:
            tokenizer = build()
            tokenizer.save_pretrained(folder)
        else:
            tokenizer = AutoTokenizer.from_pretrained(folder)
    return tokenizer


def _vocabulary(
    options: HfAttnArguments, architecture: Architecture, data: TaskData, step: DataStages.Step
) -> PreTrainedTokenizerBase:
    """The architecture's tokenizer kind trained on the training texts, with a progress bar over them (where datasets
    shows bars), or the same vocabulary found again beside the split's cache files (`hf_attn.data.cache.vocabulary`,
    keyed by the split and every option of the trainer); `step.cached` says which."""
    # What the tokenizer kind's trainer reads beyond the texts, from the architecture's own options (STCKA: concepts),
    # asked only where the kind reads any (`TokenizerKind.reads_knowledge`: any other kind is given none).
    kind = architecture.tokenizer
    knowledge = options.architecture_arguments.tokenizer_knowledge(architecture, data) if kind.reads_knowledge else {}
    settings = (options.max_vocab_size, options.min_frequency, options.lowercase)
    columns = (data.text_column, data.pair_column)
    fresh = options.overwrite_cache
    tokenizer, step.cached = vocabulary(data.vocabulary_source, columns, kind, settings, knowledge, fresh)
    return tokenizer


def task_summary(docstring: str | None) -> str:
    """A task generator's one-line summary for its model card: its docstring's first line, without the pointers a
    docstring makes to its module's (" (module docstring)", " (see the module docstring)"), which mean nothing on a
    card."""
    first = (docstring or "").strip().splitlines()[0] if (docstring or "").strip() else ""
    return re.sub(r"\s*\((see )?(the )?module docstring\)", "", first)


def task_data(
    options: HfAttnArguments, architecture: Architecture, args: HfAttnTrainingArguments, request: DataRequest
) -> tuple[TaskData, TaskShape, Head]:
    """The run's data, complete and built once: read as `request` asks (`--dataset`) or generated, in the task shape
    of the head that trains on it, its held-out split cut to what is scored (`hf_attn.data.rows.rows_to_score`; a
    few-shot split is the instances its episodes are drawn from, kept whole), with the episodes' settings and every
    status line to print; with the shape and the head (`choose_head`)."""
    if options.dataset:
        try:
            return _read_dataset(options, architecture, args, request)
        except ValueError as error:
            raise _whose(error, options) from error
    name = options.task or architecture.synthetic_task
    synthetic = get_synthetic_task(name)
    sizes = (options.num_train, options.num_eval)
    train_split, held_out = synthetic.splits(*sizes, seed=args.seed, **options.task_kwargs)
    _, shape, head = choose_head(architecture, [options.shape or synthetic.shape], options.head)
    head = head or pick_head(architecture, shape, options.head)  # names the head missing
    scored, note = (held_out, None) if shape.episodic else rows_to_score(train_split, held_out, request)
    data = TaskData(
        train=train_split,
        eval=scored,
        shape=shape.name,
        text_column=synthetic.text_column,
        pair_column=synthetic.pair_column,
        label_column=synthetic.label_column if TASK_SHAPES[synthetic.shape].layout.has_labels else None,
        labels=list(synthetic.labels) or None,
        evidence_column=synthetic.evidence_column,
        resources=dict(synthetic.resources),
        source={
            "type": f"hf_attn/{name}",
            "name": f"{name} (synthetic, hf_attn.data)",
            "description": task_summary(synthetic.generator.__doc__),
        },
        episode_settings=options.episode_settings(),
        notes=[note] if note else [],
    )
    return data, shape, head


def wanted_shapes(
    options: HfAttnArguments, architecture: Architecture, train_split: Dataset, label: str | None
) -> list[str]:
    """The task shapes the columns given ask for, the likeliest first (`choose_head` takes the first the architecture
    has a head for)."""
    if architecture.heads and all(head.inputs is EPISODES for head in architecture.heads):
        wanted = ["few_shot"]
    elif options.target_column:
        wanted = ["seq2seq"]
    elif options.text_pair_column:
        wanted = ["pair_classification"]
    elif label is None:
        wanted = ["language_modeling"]
    elif label not in train_split.column_names:  # `canonical_rows` names the missing column
        wanted = ["classification"]
    else:
        values = (value for value in column_values(train_split, label) if value is not None)  # read until one
        listed = options.label_separator is not None or isinstance(next(values, None), list | tuple)
        wanted = ["token_classification", "multi_label"] if listed else ["classification"]
    return wanted


def _whose(error: ValueError, options: HfAttnArguments) -> ValueError:
    """`error` with a word on the options it names that the recipe set, not the user: `--eval-split 'test' is not a
    split` of the user's own data is the recipe's choice, to override, not a typo of theirs."""
    message = str(error)
    recipes = sorted(options.provenance.from_recipe)
    named = [key for key in recipes if f"--{key.replace('_', '-')} " in message or f"--{key} " in message]
    if not named:
        return error
    recipe = options.loaded_recipe.name if options.loaded_recipe else options.recipe
    given = ", ".join(f"--{key}" for key in named)
    return ValueError(f"{message.rstrip('.')} ({given} from recipe {recipe!r}: give your own to override it).")


def _read_dataset(
    options: HfAttnArguments, architecture: Architecture, args: HfAttnTrainingArguments, request: DataRequest
) -> tuple[TaskData, TaskShape, Head]:
    """The user's dataset in canonical form: read whole (`canonical_rows`), or with `--streaming` as training asks for
    it (`stream_rows`), for a task shape that needs no whole split ahead; a few-shot dataset's classes held out
    (`prepare_few_shot_data`)."""
    notes: list[str] = []
    train_split, held_out, source = load_splits(request, notes)
    streaming = request.streaming
    # A stream's first rows stand for it where its columns and labels decide the task.
    seen = Dataset.from_list(list(train_split.take(100)), features=train_split.features) if streaming else train_split
    label = options.label_column
    if label is None and not options.target_column:
        label = next((name for name in ("label", "labels") if name in seen.column_names), None)
    request = dataclasses.replace(request, columns=dataclasses.replace(request.columns, label=label))
    wanted = [options.shape] if options.shape else wanted_shapes(options, architecture, seen, label)
    data_shape, shape, head = choose_head(architecture, wanted, options.head, streaming)
    if shape.episodic:  # its held-out classes are said as they are chosen
        settings = options.episode_settings()
        data = prepare_few_shot_data(train_split, held_out, request, source, notes, settings)
        return data, shape, head or pick_head(architecture, shape, options.head)
    for option, _, name in request.columns.tokenizer:  # what the tokenizer reads beside the text (STCKA: concepts)
        for split_name, split in (("train", seen), ("held-out", held_out)):
            if split is not None and split.column_names is not None and name not in split.column_names:
                raise ValueError(
                    f"--{option} {name!r} is not a column of the {split_name} split ({', '.join(split.column_names)})."
                )
    if streaming:
        process = (args.process_index, args.world_size)
        data = stream_rows(train_split, held_out, data_shape.layout, request, source, process, shape.name, notes)
    else:
        data = canonical_rows(train_split, held_out, data_shape.layout, request, source, shape.name, notes)
    head = head or pick_head(architecture, shape, options.head)  # names the head missing, once the rows are checked
    return data, shape, head
