"""Train any registered architecture with `transformers.Trainer`: on your data or on a synthetic task.

One pipeline for every task. What differs between a classifier, a multi-label generator, a translator, a language
model and a tagger lives in its task shape (`hf_attn.tasks`); an architecture with a stage of its own before
the task (ELMo's biLM) says so in its registry row (`Architecture.pretraining_head`). The options are one dataclass
of hf_attn's (`HfAttnArguments`: architecture, data, vocabulary, word vectors, recipe) plus transformers'
`TrainingArguments` (here `HfAttnTrainingArguments`, with hf_attn's defaults), read once by `hf_attn.options.reading`,
so every Trainer flag works as in transformers' own examples (ARCH: a name `hf-attn list` prints; RECIPE: one of
`hf-attn recipes`):

    hf-attn train --output_dir runs/lin --config hidden_size=32 attention_hops=4
    hf-attn train --arch ARCH --dataset reviews.csv --label_column stars --word_vectors glove.6B.100d.txt --bf16
    hf-attn train --recipe RECIPE --output_dir runs/RECIPE
    accelerate launch --multi_gpu --num_processes 2 -m hf_attn.commands.train --output_dir runs/lin

Options are spelled with `_` or `-` (`--output-dir` too). Every process loads the same data and (for a vocabulary
trained here) the main process builds the tokenizer the others load; the Trainer shards the batches.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from datasets import Dataset
from transformers import (
    AutoTokenizer,
    PreTrainedConfig,
    PreTrainedModel,
    PreTrainedTokenizerBase,
    Trainer,
    TrainerCallback,
    set_seed,
)

from ..cards import EVALUATION_OPTIONS, TRAINING_FILE, write_model_card
from ..data.cache import (
    APART_FROM_TEXTS,
    cache_folder,
    cached_tokenizer,
    fingerprint,
    train_apart,
    train_vocabulary,
)
from ..data.episodes import CLASS_COLUMN
from ..data.task_data import TaskData
from ..data.word_vectors import initialise_embeddings
from ..evaluation import score_evidence_attention, token_accuracy_at
from ..hub import push_model_dir
from ..options.checks import check_output_folder, check_staged_run, trains_in_stages
from ..options.reading import (
    DATACLASSES,
    HfAttnArguments,
    build_config,
    keyword_options,
    parse_arguments,
    parse_overrides,
    resolve_options,
)
from ..options.training_arguments import HfAttnTrainingArguments
from ..registry import Architecture, get_architecture
from ..tasks import encode_split, encoding_key
from ..tasks.heads import TASK_SHAPES, pick_head
from ..utils.inputs import TOKENIZER, read_input
from ..utils.locks import FolderInUseError, folder_lock
from ..utils.progress import hidden_progress_bars
from ..utils.saving import (
    last_complete_checkpoint,
    remove_if_worthless,
    report_on_main,
    resume_point,
    staged_save,
)
from .train_data import DataStages, task_data

__all__ = [
    "DATACLASSES",
    "HfAttnArguments",
    "HfAttnTrainingArguments",
    "TrainingResult",
    "parse_arguments",
    "parse_overrides",
    "run",
    "score_evidence_attention",
    "token_accuracy_at",
    "train",
]

# The shape of an architecture's first stage (`Architecture.pretraining_head`): a language model on the task's texts.
PRETRAINING_SHAPE = "language_modeling"


@dataclass
class TrainingResult:
    """What `train` returns: the trained model and tokenizer, held-out metrics, and the Trainer."""

    model: PreTrainedModel
    tokenizer: PreTrainedTokenizerBase
    metrics: dict[str, float]
    trainer: Trainer


def train(output_dir: str | Path | None = None, callbacks: Sequence[TrainerCallback] = (), **options: Any):
    """`hf-attn train` from Python: any field of `HfAttnArguments` or `HfAttnTrainingArguments` as a keyword
    (or a CLI alias: `epochs`, `batch_size`, `config_overrides`, ...); `config` and `task_args` may be dicts.

        train("runs/default", epochs=10, config={"hidden_size": 32})  # the default architecture (`hf-attn list`)
        train("runs/reviews", arch=ARCH, dataset="reviews.csv", label_column="stars", bf16=True)
    """
    given = keyword_options(options)
    if output_dir is not None:
        given["output_dir"] = str(output_dir)
    hf_attn_options, args = resolve_options(given)
    return run(hf_attn_options, args, callbacks)


def _shared_tokenizer(
    args: HfAttnTrainingArguments, checkpoint: str | bool | None, source: str | None, build, own_class: type
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
    shows bars), or the same vocabulary found again beside the split's cache files (`cached_tokenizer`, keyed by the
    split and every option of the trainer); `step.cached` says which."""
    # What the tokenizer kind's trainer reads beyond the texts, from the architecture's own options (STCKA: concepts).
    knowledge = options.architecture_arguments.tokenizer_knowledge(architecture, data)
    settings = (options.max_vocab_size, options.min_frequency, options.lowercase)

    kind = architecture.tokenizer
    rows, columns = data.vocabulary_source, (data.text_column, data.pair_column)
    # A million texts: trained in a process of its own, so that their mapped pages do not stay with this one.
    large = cache_folder(rows) is not None and data.count_texts() >= APART_FROM_TEXTS
    apart = large and kind.reads_once and not knowledge

    def build() -> PreTrainedTokenizerBase:
        if apart:
            return train_apart(kind, rows, columns, settings, AutoTokenizer.from_pretrained)
        return train_vocabulary(kind, rows, columns, settings, **knowledge)

    key = fingerprint(
        "vocabulary", rows._fingerprint, data.text_column, data.pair_column, str(architecture.tokenizer), settings,
        knowledge,
    )  # fmt: skip
    tokenizer, step.cached = cached_tokenizer(rows, key, build, AutoTokenizer.from_pretrained)
    return tokenizer


def _pretrain(
    architecture: Architecture,
    data: TaskData,
    tokenizer: PreTrainedTokenizerBase,
    config: PreTrainedConfig,
    args: HfAttnTrainingArguments,
    callbacks: Sequence[TrainerCallback],
    max_length: int | None,
) -> tuple[dict[str, torch.Tensor], dict[str, float]]:
    """The architecture's first stage (`Architecture.pretraining_head`, e.g. ELMo's biLM, §3 of its paper): a
    language model on the task's texts, with its own checkpoints in `output_dir/pretraining`. Returns its base
    model's weights, which the task head starts from, and held-out perplexity before and after."""
    import copy

    head = next(head for head in architecture.heads if head.model_class.__name__ == architecture.pretraining_head)
    shape = TASK_SHAPES[PRETRAINING_SHAPE]
    texts = TaskData(train=data.train, eval=data.eval, shape=shape.name, text_column=data.text_column)
    encode = shape.encoder(texts, tokenizer, config, head, max_length)
    stage_args = copy.copy(args)
    stage_args.output_dir = str(Path(args.output_dir) / "pretraining")
    stage_args.prediction_loss_only, stage_args.predict_with_generate = True, False
    model = head.model_class(config)
    trainer = Trainer(
        model=model,
        args=stage_args,
        train_dataset=encode_split(data.train, encode)[0],
        eval_dataset=encode_split(data.eval, encode)[0],
        data_collator=shape.collator(tokenizer, config, head),
        processing_class=tokenizer,
        callbacks=list(callbacks),
    )
    before = math.exp(trainer.evaluate()["eval_loss"])
    resume = resume_point(args.resume_from_checkpoint, stage_args.output_dir, report=report_on_main(args))
    trainer.train(resume_from_checkpoint=resume)
    after = math.exp(trainer.evaluate()["eval_loss"])
    _report(trainer, tokenizer, f"{head.model_class.__name__} held-out perplexity {before:.2f} -> {after:.2f}")
    base = getattr(model, model.base_model_prefix)
    return base.state_dict(), {"perplexity_before_lm_training": before, "perplexity": after}


def run(
    options: HfAttnArguments, args: HfAttnTrainingArguments, callbacks: Sequence[TrainerCallback] = ()
) -> TrainingResult:
    """The pipeline: data -> shape and head -> tokenizer -> config and model (pretraining stage, word vectors) ->
    `Trainer` -> held-out metrics -> saved folder with its card (and a Hub push)."""
    folder = Path(args.output_dir)
    existed = folder.exists()
    # One run per output folder: the main process holds its lock from the overwrite check to the last save, and a
    # second run into it is refused at once (the other processes of a distributed run write nothing there).
    lock = folder_lock(folder, writer="this run") if args.process_index == 0 else contextlib.nullcontext()
    with hidden_progress_bars(args.disable_tqdm):  # every library's bars, not only the Trainer's
        try:
            with lock:
                return _run(options, args, callbacks)
        except BaseException as error:
            if isinstance(error, FolderInUseError):
                raise  # the folder is another run's: nothing of it is this run's to clean up
            if not existed and args.process_index == 0:
                remove_if_worthless(folder)
            interrupted = isinstance(error, KeyboardInterrupt) and folder.is_dir()
            checkpoint = last_complete_checkpoint(str(folder)) if interrupted else None
            if checkpoint is None:
                raise
            # Ctrl-C: the one line the CLI prints says where the run can go on from.
            raise KeyboardInterrupt(
                f"the last complete checkpoint is {checkpoint}; continue with --resume_from_checkpoint true"
            ) from None


def _run(options: HfAttnArguments, args: HfAttnTrainingArguments, callbacks: Sequence[TrainerCallback]):
    check_output_folder(options, args)
    architecture = get_architecture(options.arch)
    recipe, overrides = options.loaded_recipe, options.config_overrides  # merged once, by `resolve_options`
    stages = DataStages()
    with stages.stage("reading and preparing") as step:
        data = task_data(options, architecture, args)
        step.cached = "prepared rows" in data.from_cache
    shape = TASK_SHAPES[data.shape]
    head = pick_head(architecture, shape, options.head)
    staged = trains_in_stages(architecture, head)
    check_staged_run(architecture, head, data.streamed, args.resume_from_checkpoint)
    push_repo = (args.hub_model_id or None) if args.push_to_hub else None
    args.push_to_hub = False  # hf_attn pushes the finished folder itself: no pickled arguments, no checkpoints
    args.predict_with_generate = shape.generates(head)

    # Where the run goes on from, found once, before any work (each checkpoint that does not load is named here).
    resume = resume_point(args.resume_from_checkpoint, args.output_dir, not staged, report_on_main(args))
    with stages.stage("vocabulary") as step:
        build = lambda: _vocabulary(options, architecture, data, step)  # noqa: E731 (trained only where none is given)
        own_class = architecture.tokenizer.tokenizer_class
        tokenizer = _shared_tokenizer(args, resume, options.tokenizer, build, own_class)
    labels = shape.label_names(data)
    if args.process_index == 0:
        for note in data.notes:  # said now that the data has passed its checks: a refused run prints one line
            print(note, flush=True)
    config = build_config(architecture.config_class, overrides, **shape.config_fields(tokenizer, labels, data))
    encode = shape.encoder(data, tokenizer, config, head, options.max_length)
    keep = [data.evidence_column] if data.evidence_column else []
    with stages.stage("encoding") as step, args.main_process_first(local=False, desc="encoding the data"):
        # The main process encodes first; the others find its work in the datasets cache (a split held in memory is
        # encoded by each).
        encoded = []
        for split, kept in ((data.train, ()), (data.eval, keep)):
            key = (
                None
                if data.streamed
                else encoding_key(split, shape, data, tokenizer, config, head, options.max_length)
            )
            encoded.append(encode_split(split, encode, kept, key, options.preprocessing_num_workers))
        (train_split, train_cached), (eval_split, eval_cached) = encoded
        step.cached = train_cached and eval_cached

    metrics: dict[str, float] = {}
    base_state = None
    if staged:
        set_seed(args.seed)
        base_state, metrics = _pretrain(architecture, data, tokenizer, config, args, callbacks, options.max_length)
    set_seed(args.seed)  # the initial weights depend on the seed alone
    model = shape.build_model(head, config, data, args)
    if base_state is not None:
        getattr(model, model.base_model_prefix).load_state_dict(base_state)
    coverage = None
    if options.word_vectors:
        coverage = initialise_embeddings(model, tokenizer, options.word_vectors, freeze=options.freeze_embeddings)
        if args.process_index == 0:
            print(f"[hf-attn] word vectors {coverage.summary()}", flush=True)
    if args.process_index == 0:  # once every input has been read (the word vectors too): a refused run prints one line
        print(stages.summary(data), flush=True)
    shape.prepare(model, args, eval_split, options.num_beams)
    trainer, task_metrics = shape.fit(args, model, head, tokenizer, data, train_split, eval_split, callbacks, resume)
    metrics.update(task_metrics)
    metrics.update(shape.extra_metrics(model, head, eval_split, data))
    _report(trainer, tokenizer, shape.headline(metrics))
    # The metrics the card shows: the task shape's, then its first stage's (a pretrained language model's perplexity).
    reported = (*shape.reported_metrics, *(TASK_SHAPES[PRETRAINING_SHAPE].reported_metrics if staged else ()))
    shown = {key: metrics[key] for key in dict.fromkeys(reported) if not math.isnan(metrics.get(key, math.nan))}
    summary = _summary(options, args, architecture, data, trainer, shown, overrides, coverage, recipe, tokenizer)
    _finish(options, args, trainer, tokenizer, summary, push_repo)
    return TrainingResult(model=trainer.model, tokenizer=tokenizer, metrics=metrics, trainer=trainer)


def _report(trainer: Trainer, tokenizer: PreTrainedTokenizerBase, result: str) -> None:
    """One line per process: its rank, steps, held-out result and a fingerprint of its vocabulary."""
    args = trainer.args
    vocabulary = hashlib.sha256(json.dumps(sorted(tokenizer.get_vocab().items())).encode()).hexdigest()[:12]
    print(
        f"[hf-attn] rank {args.process_index}/{args.world_size}: {trainer.state.global_step} steps, {result}, "
        f"vocabulary {vocabulary}",
        flush=True,
    )


def _summary(options, args, architecture, data, trainer, metrics, overrides, coverage, recipe, tokenizer) -> dict:
    """The training record (`hf_attn_training.json`) the card is written from; `metrics`: the ones it shows."""
    if options.tokenizer:
        vocabulary = f"{options.tokenizer} ({len(tokenizer)} tokens)"
    else:
        rows = f"the first {len(data.vocabulary_rows)} training rows" if data.streamed else "the training split"
        vocabulary = f"{architecture.tokenizer}, trained on {rows} ({len(tokenizer)} tokens)"
    settings = {
        "training examples": "streamed" if data.streamed else len(data.train),
        "held-out examples": "streamed" if data.streamed else len(data.eval),
        "dropped rows": data.dropped or None,
        "seed": args.seed,
        "steps": trainer.state.global_step,
        "batch size per process": args.per_device_train_batch_size,
        "gradient accumulation steps": args.gradient_accumulation_steps,
        "processes": args.world_size,
        "learning rate": args.learning_rate,
        "schedule": options.schedule if options.schedule != "linear" else str(args.lr_scheduler_type.value),
        "optimizer": str(args.optim.value if hasattr(args.optim, "value") else args.optim),
        "precision": "bf16" if args.bf16 else "fp16" if args.fp16 else "fp32",
        "vocabulary": vocabulary,
        "word vectors": coverage.summary() if coverage else None,
        "task options": options.task_kwargs if not options.dataset else None,
        "config overrides": overrides,
        "max length": options.max_length,
        "recipe": options.recipe,
    }
    source = dict(data.source)
    description = source.pop("description", None) or (
        f"columns {source.get('columns')}; held-out: {source.get('held_out')}"
    )
    summary = {
        "dataset": {"type": source["type"], "name": source["name"], "description": description},
        "settings": {key: value for key, value in settings.items() if value not in (None, {}, [])},
        "metrics": metrics,
    }
    reused = evaluation_options(options)
    if reused:
        summary[EVALUATION_OPTIONS] = reused
    if recipe is not None:
        summary["paper"] = recipe.paper
    example = _card_example(data, trainer.model.config)
    if example is not None:
        summary["example"] = example
    return summary


def evaluation_options(options: HfAttnArguments) -> dict[str, Any]:
    """The run's options that evaluation reuses (`EVALUATION_OPTIONS`), by option name."""
    reused: dict[str, Any] = {"max_length": options.max_length}
    reused.update({column.option: column.column for column in options.architecture_arguments.columns()})
    return {name: value for name, value in reused.items() if value is not None}


def _card_example(data: TaskData, config) -> dict[str, Any] | None:
    """A held-out example whose attention the card draws (`hf_attn.cards`): the first held-out text (and its pair
    or target); a few-shot model's is a query with a support set of the next held-out texts, `num_ways` classes
    (the query's first) of `num_shots` texts each (with their entities, for a relation model)."""
    rows = Dataset.from_list(list(data.eval.take(1))) if data.streamed else data.eval
    if not len(rows) or data.text_column not in rows.column_names or not isinstance(rows[0][data.text_column], str):
        return None
    if not TASK_SHAPES[data.shape].episodic:
        example = {"text": rows[0][data.text_column]}
        if data.pair_column and isinstance(rows[0].get(data.pair_column), str):
            example["pair"] = rows[0][data.pair_column]
        return example
    column = CLASS_COLUMN if CLASS_COLUMN in rows.column_names else data.label_column
    entities = {"head", "tail"} <= set(rows.column_names)
    ways, shots = config.num_ways, config.num_shots  # an episode head's config (`layers.few_shot.EpisodeConfig`)
    chosen: dict[Any, list] = {rows[0][column]: []}
    for row in rows.select(range(1, len(rows))):
        label = row[column]
        if label not in chosen and len(chosen) < ways:
            chosen[label] = []
        if label in chosen and len(chosen[label]) < shots:
            chosen[label].append(
                [str(label), row[data.text_column], *((row["head"], row["tail"]) if entities else ())]
            )
        if len(chosen) == ways and all(len(texts) == shots for texts in chosen.values()):
            break  # the support set is complete: the rest of the held-out split is not read
    if len(chosen) < 2 or any(len(texts) < shots for texts in chosen.values()):
        return None
    example = {"text": rows[0][data.text_column], "support": [item for texts in chosen.values() for item in texts]}
    if entities:
        example["entities"] = [rows[0]["head"], rows[0]["tail"]]
    return example


def _finish(options, args, trainer: Trainer, tokenizer, summary: dict, push_repo: str | None) -> None:
    """Saves model, tokenizer, training record and card (main process), then pushes if asked."""
    output_dir = Path(args.output_dir)
    if options.save or push_repo:
        save_trained(trainer, tokenizer, output_dir, summary, repo_id=push_repo)
        if trainer.is_world_process_zero():
            print(f"[hf-attn] saved the model to {output_dir}", flush=True)
    if push_repo and trainer.is_world_process_zero():
        commit = push_model_dir(output_dir, push_repo, private=bool(args.hub_private_repo))
        print(f"[hf-attn] pushed {output_dir} to {push_repo} at {commit.oid}", flush=True)


def save_trained(
    trainer: Trainer,
    tokenizer: PreTrainedTokenizerBase,
    output_dir: Path,
    summary: dict[str, Any],
    repo_id: str | None = None,
) -> None:
    """From the main process: model (safetensors + code), tokenizer, the training arguments as JSON, the training
    record (`hf_attn_training.json`) and the model card. Not `Trainer.save_model`, which also pickles the
    arguments into `training_args.bin`: nothing we ship is a pickle."""
    trainer.accelerator.wait_for_everyone()
    if trainer.is_world_process_zero():
        model = trainer.accelerator.unwrap_model(trainer.model)
        with staged_save(output_dir) as staging:  # all written aside, then moved in, the weights last
            model.save_pretrained(staging)
            tokenizer.save_pretrained(staging)
            (staging / "training_args.json").write_text(trainer.args.to_json_string())
            (staging / TRAINING_FILE).write_text(json.dumps(summary, indent=2, default=str))
            # The card from the model and tokenizer in memory, naming the folder it is moved to.
            write_model_card(staging, repo_id=repo_id, model=model, tokenizer=tokenizer, destination=output_dir)
    trainer.accelerator.wait_for_everyone()


def main(argv: Sequence[str] | None = None) -> TrainingResult:
    """`hf-attn train` / `python -m hf_attn.commands.train`: parse, train, print the held-out metrics."""
    options, args = parse_arguments(argv)
    result = run(options, args)
    if result.trainer.is_world_process_zero():
        shown = {key: round(value, 4) for key, value in result.metrics.items() if not math.isnan(value)}
        print(json.dumps(shown, indent=2))
    return result


if __name__ == "__main__":  # `accelerate launch -m hf_attn.commands.train ...`: one-line errors, as `hf-attn train`
    import sys

    from ..utils.errors import run_command

    run_command(lambda argv: main(argv[1:]), ["train", *sys.argv[1:]])
