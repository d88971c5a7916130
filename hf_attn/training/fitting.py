"""A training run's second step (`fit_run`): from the `Preparation` (`hf_attn.training.preparation`: the data, the
vocabulary, the config and the encoded splits) to a trained model, its held-out metrics and the record its card is
written from.

The architecture's first stage where it has one (ELMo's biLM, `Architecture.pretraining_head`), the model (word
vectors copied in), the shape's `Trainer` (the model readied for it), the held-out metrics, and the training record
(`hf_attn_training.json`) with the example its card draws.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from datasets import Dataset
from transformers import PreTrainedTokenizerBase, Trainer, TrainerCallback, set_seed

from ..data.episodes import CLASS_COLUMN
from ..data.request import DataRequest
from ..data.task_data import TaskData
from ..data.word_vectors import Coverage, initialise_embeddings
from ..options.arguments import HfAttnArguments
from ..options.training_arguments import HfAttnTrainingArguments
from ..tasks.base import encode_split
from ..tasks.heads import TASK_SHAPES
from ..tasks.record import RunSettings, TrainingRecord
from ..utils.saving import report_on_main, resume_point
from .preparation import Preparation

__all__ = ["PRETRAINING_SHAPE", "Fitted", "evaluation_options", "fit_run", "training_record"]

# The shape of an architecture's first stage (`Architecture.pretraining_head`): a language model on the task's texts.
PRETRAINING_SHAPE = "language_modeling"


@dataclass(frozen=True)
class Fitted:
    """What `fit_run` returns: the Trainer (whose `model` is what gets saved), every held-out metric, and the training
    record (`training_record`) the card is written from."""

    trainer: Trainer
    metrics: dict[str, float]
    record: TrainingRecord


def fit_run(
    run: Preparation,
    options: HfAttnArguments,
    args: HfAttnTrainingArguments,
    callbacks: Sequence[TrainerCallback] = (),
) -> Fitted:
    """First stage (where the head has one) -> model (and word vectors) -> the shape's `Trainer` -> held-out metrics
    -> the training record."""
    data, shape, head, tokenizer, config = run.data, run.shape, run.head, run.tokenizer, run.config
    metrics: dict[str, float] = {}
    base_state = None
    if run.staged:
        set_seed(args.seed)
        base_state, metrics = _pretrain(run, args, callbacks, options.max_length)
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
        print(run.data_line, flush=True)
    trainer, task_metrics, headline = shape.fit_and_score(
        args, model, head, tokenizer, data, run.encoded, callbacks, run.resume
    )
    metrics.update(task_metrics)
    report(trainer, tokenizer, headline)
    # The metrics the card shows: the task shape's, then its first stage's (a pretrained language model's perplexity).
    reported = (*shape.reported_metrics, *(TASK_SHAPES[PRETRAINING_SHAPE].reported_metrics if run.staged else ()))
    shown = {key: metrics[key] for key in dict.fromkeys(reported) if not math.isnan(metrics.get(key, math.nan))}
    return Fitted(trainer, metrics, training_record(run, options, args, trainer, shown, coverage))


def _pretrain(
    run: Preparation,
    args: HfAttnTrainingArguments,
    callbacks: Sequence[TrainerCallback],
    max_length: int | None,
) -> tuple[dict[str, torch.Tensor], dict[str, float]]:
    """The architecture's first stage (`Architecture.pretraining_head`, e.g. ELMo's biLM, §3 of its paper): a
    language model on the task's texts, with its own checkpoints in `output_dir/pretraining`. Returns its base
    model's weights, which the task head starts from, and held-out perplexity before and after."""
    architecture, data, tokenizer, config = run.architecture, run.data, run.tokenizer, run.config
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
    report(trainer, tokenizer, f"{head.model_class.__name__} held-out perplexity {before:.2f} -> {after:.2f}")
    base = getattr(model, model.base_model_prefix)
    return base.state_dict(), {"perplexity_before_lm_training": before, "perplexity": after}


def report(trainer: Trainer, tokenizer: PreTrainedTokenizerBase, result: str) -> None:
    """One line per process: its rank, steps, held-out result and a fingerprint of its vocabulary."""
    args = trainer.args
    vocabulary = hashlib.sha256(json.dumps(sorted(tokenizer.get_vocab().items())).encode()).hexdigest()[:12]
    print(
        f"[hf-attn] rank {args.process_index}/{args.world_size}: {trainer.state.global_step} steps, {result}, "
        f"vocabulary {vocabulary}",
        flush=True,
    )


def training_record(
    run: Preparation,
    options: HfAttnArguments,
    args: HfAttnTrainingArguments,
    trainer: Trainer,
    metrics: dict[str, float],
    coverage: Coverage | None,
) -> TrainingRecord:
    """The training record (`hf_attn_training.json`) the card is written from; `metrics`: the ones it shows."""
    data, tokenizer, recipe = run.data, run.tokenizer, options.loaded_recipe
    if options.tokenizer:
        vocabulary = f"{options.tokenizer} ({len(tokenizer)} tokens)"
    else:
        rows = f"the first {len(data.vocabulary_rows)} training rows" if data.streamed else "the training split"
        vocabulary = f"{run.architecture.tokenizer.name}, trained on {rows} ({len(tokenizer)} tokens)"
    settings = RunSettings(
        training_examples="streamed" if data.streamed else len(data.train),
        held_out_examples="streamed" if data.streamed else len(data.eval),
        dropped_rows=data.dropped or None,
        seed=args.seed,
        steps=trainer.state.global_step,
        batch_size_per_process=args.per_device_train_batch_size,
        gradient_accumulation_steps=args.gradient_accumulation_steps,
        processes=args.world_size,
        learning_rate=args.learning_rate,
        schedule=options.schedule if options.schedule != "linear" else str(args.lr_scheduler_type.value),
        optimizer=str(args.optim.value if hasattr(args.optim, "value") else args.optim),
        precision="bf16" if args.bf16 else "fp16" if args.fp16 else "fp32",
        vocabulary=vocabulary,
        word_vectors=coverage.summary() if coverage else None,
        task_options=options.task_kwargs if not options.dataset else None,
        config_overrides=options.config_overrides,
        max_length=options.max_length,
        recipe=options.recipe,
    )
    return TrainingRecord.of_run(
        source=data.source,
        settings=settings,
        metrics=metrics,
        evaluation_options=evaluation_options(run.request, options.max_length),
        paper=recipe.paper if recipe is not None else None,
        example=_card_example(data, trainer.model.config),
    )


def evaluation_options(request: DataRequest, max_length: int | None) -> dict[str, Any]:
    """The run's options that evaluation reuses (`TrainingRecord.evaluation_options`), by option name: the length
    limit and the columns the tokenizer reads beside each text (as `request` named them)."""
    reused: dict[str, Any] = {"max_length": max_length}
    reused.update({option: column for option, _, column in request.columns.tokenizer})
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
