"""Train any registered architecture on a synthetic task with `transformers.Trainer`.

The same entry point runs on one process or many, unchanged:

    hf-attn train --output-dir runs/lin --config hidden_size=32 attention_hops=4
    python -m hf_attn.training --output-dir runs/lin
    accelerate launch --multi_gpu --num_processes 2 -m hf_attn.training --output-dir runs/lin

Every process generates the same data and trains the same tokenizer from the seed, so no process waits on
another to build them; the Trainer shards the batches and averages the gradients.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from datasets import Dataset
from transformers import (
    AutoTokenizer,
    PreTrainedModel,
    PreTrainedTokenizerBase,
    Seq2SeqTrainer,
    Seq2SeqTrainingArguments,
    Trainer,
    TrainerCallback,
    TrainingArguments,
    set_seed,
)
from transformers.trainer_utils import get_last_checkpoint

from .cards import TRAINING_FILE, write_model_card
from .data import PaddingCollator, SyntheticTask, get_synthetic_task, labels_by_frequency, tokenize_dataset
from .evaluation import (
    accuracy_metric,
    evidence_attention_scores,
    label_sequence_metrics,
    multi_hot_metrics,
    translation_metrics,
)
from .hub import push_model_dir
from .registry import get_architecture
from .tokenization import (
    train_bpe_tokenizer,
    train_document_tokenizer,
    train_elmo_tokenizer,
    train_word_level_tokenizer,
)

# Held-out metrics recorded with a trained model (and shown on its card).
REPORTED_METRICS = (
    "accuracy",
    "hit_rate",
    "evidence_mass",
    "best_hop_evidence_mass",
    "bleu",
    "exact_match",
    "ambiguous_accuracy",
    "perplexity",
    "hamming_loss",
    "micro_f1",
    "macro_f1",
    "subset_accuracy",
)


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


@dataclass
class TrainingResult:
    """What `train` returns: the trained model and tokenizer, held-out metrics, and the Trainer."""

    model: PreTrainedModel
    tokenizer: PreTrainedTokenizerBase
    metrics: dict[str, float]
    trainer: Trainer


def parse_overrides(pairs: list[str]) -> dict[str, Any]:
    """`["hidden_size=32", "penalty_type=frobenius"]` -> `{"hidden_size": 32, "penalty_type": "frobenius"}` (values are
    read as JSON when they parse, else as strings)."""
    overrides: dict[str, Any] = {}
    for pair in pairs:
        key, separator, value = pair.partition("=")
        if not separator or not key:
            raise ValueError(f"Config overrides are KEY=VALUE, got {pair!r}.")
        try:
            overrides[key] = json.loads(value)
        except json.JSONDecodeError:
            overrides[key] = value
    return overrides


@torch.no_grad()
def score_evidence_attention(
    model: PreTrainedModel, dataset: Dataset, task: SyntheticTask, attention_field: str, batch_size: int = 64
) -> dict[str, float]:
    """Runs `model` over `dataset` and scores `attention_field` (the top layer's, for per-layer maps) against the
    task's evidence column; `{}` when the task has no evidence or the model does not return that field."""
    if task.evidence_column is None:
        return {}
    collator = PaddingCollator(model.config.pad_token_id or 0)
    input_names = [name for name in dataset.column_names if name.endswith(("input_ids", "attention_mask"))]
    was_training = model.training
    model.eval()
    attentions, evidence = [], []
    for start in range(0, len(dataset), batch_size):
        rows = dataset.select(range(start, min(start + batch_size, len(dataset))))
        batch = collator([{name: row[name] for name in [*input_names, task.evidence_column]} for row in rows])
        output = model(**{name: batch[name].to(model.device) for name in input_names})
        attention = getattr(output, attention_field)
        if attention is None:  # e.g. a pair model built without the attention this field holds
            return {}
        if isinstance(attention, tuple):  # one map per layer: the top layer's
            attention = attention[-1]
        attention = attention.float().cpu()  # (B, R, T), or (B, S) over sentences
        if attention.dim() == 2:
            attention = attention[:, None, :]
        # Batches pad to different lengths: right-pad every batch's attention to the longest of the dataset.
        attentions.append(attention)
        evidence.append(batch[task.evidence_column])
    model.train(was_training)
    longest = max(attention.size(-1) for attention in attentions)
    attentions = [torch.nn.functional.pad(attention, (0, longest - attention.size(-1))) for attention in attentions]
    return evidence_attention_scores(torch.cat(attentions), torch.cat(evidence))


@dataclass
class TrainingPlan:
    """What `train` was asked to do, passed whole to the steps below."""

    output_dir: Path
    task: str
    num_train: int
    num_eval: int
    seed: int
    epochs: float
    max_steps: int
    batch_size: int
    learning_rate: float
    config_overrides: dict[str, Any]
    task_kwargs: dict[str, Any]
    disable_tqdm: bool
    save: bool
    logging_steps: int
    push_to_hub: str | None
    hub_private: bool
    schedule: str
    warmup_steps: int
    num_beams: int
    save_steps: int = 0
    resume_from_checkpoint: str | bool | None = None
    callbacks: tuple[TrainerCallback, ...] = ()
    tokenizer: str | PreTrainedTokenizerBase | None = None


def train(
    output_dir: str | Path,
    arch: str = "lin_self_attentive",
    task: str | None = None,
    num_train: int = 2000,
    num_eval: int = 500,
    seed: int = 0,
    epochs: float = 3.0,
    max_steps: int = -1,
    batch_size: int = 32,
    learning_rate: float = 1e-3,
    config_overrides: dict[str, Any] | None = None,
    task_kwargs: dict[str, Any] | None = None,
    disable_tqdm: bool = False,
    save: bool = True,
    logging_steps: int = 50,
    push_to_hub: str | None = None,
    hub_private: bool = False,
    schedule: str = "linear",
    warmup_steps: int = 0,
    head: str | None = None,
    num_beams: int | None = None,
    save_steps: int = 0,
    resume_from_checkpoint: str | bool | None = None,
    callbacks: list[TrainerCallback] | None = None,
    tokenizer: str | PreTrainedTokenizerBase | None = None,
) -> TrainingResult:
    """Trains `arch` on a synthetic task with `Trainer` and evaluates it on a held-out split.

    The data come from the task's generator (`task_kwargs` passed on); the config is the architecture's defaults
    updated by `config_overrides`; the head is the one for the task's input shape. Classifiers get a word-level
    tokenizer and report accuracy (and, where the task knows its evidence, the attention hit rate); seq2seq models
    get a shared BPE vocabulary, `Seq2SeqTrainer` with beam-4 `predict_with_generate`, BLEU and exact match.
    Multi-label tasks train a label-sequence model (SGM) with `Seq2SeqTrainer` and greedy `predict_with_generate`
    (or `num_beams`), or a multi-hot classifier, and report hamming loss, micro/macro-F1 and subset accuracy.
    `head` picks a head by class name when an architecture has several for the task's inputs.
    `schedule="noam"` uses the Transformer paper's optimiser. Saves model + tokenizer + card to `output_dir`;
    `push_to_hub="user/repo"` then uploads the folder.

    `save_steps=N` writes a resumable checkpoint (`output_dir/checkpoint-N`: weights, optimizer, scheduler, RNG
    states) every N steps; `resume_from_checkpoint=True` (the last one) or a checkpoint's path continues a run that
    was stopped, with the same arguments: the data and the initial weights come from the seed and the tokenizer from
    the checkpoint, so the resumed run ends where an uninterrupted one would. `callbacks` are passed to the Trainer.
    `tokenizer` (a tokenizer, or a folder or Hub id `AutoTokenizer` loads) is used instead of one trained on the
    task's texts.
    """
    architecture = get_architecture(arch)
    synthetic = get_synthetic_task(task or architecture.synthetic_task)
    plan = TrainingPlan(
        output_dir=Path(output_dir),
        task=task or architecture.synthetic_task,
        num_train=num_train,
        num_eval=num_eval,
        seed=seed,
        epochs=epochs,
        max_steps=max_steps,
        batch_size=batch_size,
        learning_rate=learning_rate,
        config_overrides=config_overrides or {},
        task_kwargs=task_kwargs or {},
        disable_tqdm=disable_tqdm,
        save=save,
        logging_steps=logging_steps,
        push_to_hub=push_to_hub,
        hub_private=hub_private,
        schedule=schedule,
        warmup_steps=warmup_steps,
        num_beams=num_beams or (1 if synthetic.inputs == "multi_label" else 4),
        save_steps=save_steps,
        resume_from_checkpoint=resume_from_checkpoint,
        callbacks=tuple(callbacks or ()),
        tokenizer=tokenizer,
    )
    if synthetic.inputs == "multi_label":
        heads = [h for h in architecture.heads if h.labels in ("label_sequence", "multi_hot")]
    else:
        heads = [h for h in architecture.heads if h.inputs == synthetic.inputs]
    if head is not None:
        heads = [h for h in heads if h.model_class.__name__ == head]
    if not heads:
        wanted = f"{head} " if head else ""
        raise ValueError(f"{arch} has no head {wanted}for {synthetic.inputs!r} inputs.")
    steps = {"seq2seq": _train_seq2seq, "characters": _train_elmo, "multi_label": _train_multi_label}
    trainer, tokenizer, metrics = steps.get(synthetic.inputs, _train_classifier)(
        plan, architecture, heads[0], synthetic
    )
    _finish(plan, synthetic, trainer, tokenizer, metrics)
    return TrainingResult(model=trainer.model, tokenizer=tokenizer, metrics=metrics, trainer=trainer)


def _splits(plan: TrainingPlan, synthetic: SyntheticTask) -> tuple[Dataset, Dataset]:
    """The training and held-out splits: one generator call cut in two, or, for a task whose held-out split is
    drawn differently (`held_out_kwargs`), a second call with those options and another seed."""
    if synthetic.held_out_kwargs is not None:
        train_split = synthetic.generator(plan.num_train, seed=plan.seed, **plan.task_kwargs)
        held_out = {**plan.task_kwargs, **synthetic.held_out_kwargs}
        return train_split, synthetic.generator(plan.num_eval, seed=plan.seed + 1_000_003, **held_out)
    data = synthetic.generator(plan.num_train + plan.num_eval, seed=plan.seed, **plan.task_kwargs)
    return data.select(range(plan.num_train)), data.select(range(plan.num_train, plan.num_train + plan.num_eval))


def _arguments(plan: TrainingPlan, architecture) -> dict[str, Any]:
    """`TrainingArguments` keywords shared by every architecture."""
    if plan.schedule == "noam":
        d_model = architecture.config_class(**plan.config_overrides).d_model
        optimisation = noam_arguments(d_model, plan.warmup_steps or 4000)
    else:
        optimisation = {"learning_rate": plan.learning_rate, "lr_scheduler_type": "linear"}
        optimisation["warmup_steps"] = plan.warmup_steps
    return {
        "output_dir": str(plan.output_dir),
        "num_train_epochs": plan.epochs,
        "max_steps": plan.max_steps,
        "per_device_train_batch_size": plan.batch_size,
        "per_device_eval_batch_size": max(plan.batch_size, 64),
        "seed": plan.seed,
        "data_seed": plan.seed,
        "logging_steps": plan.logging_steps,
        "save_strategy": "steps" if plan.save_steps else "no",
        "save_steps": plan.save_steps or 500,
        "eval_strategy": "no",
        "report_to": "none",
        "disable_tqdm": plan.disable_tqdm,
        "dataloader_num_workers": 0,
        # Without an accelerator, use_cpu is what makes a multi-process launch (accelerate/torchrun) join one gloo
        # group; left False, every process would train alone.
        "use_cpu": not torch.accelerator.is_available(),
        "ddp_find_unused_parameters": False,  # every head uses all its parameters
        **optimisation,
    }


def _label_fields(labels: list[str]) -> dict[str, Any]:
    """The config fields that name a classification task's labels."""
    return {
        "num_labels": len(labels),
        "id2label": dict(enumerate(labels)),
        "label2id": {label: index for index, label in enumerate(labels)},
    }


def _shared_tokenizer(args: TrainingArguments, plan: TrainingPlan, build: Callable[[], PreTrainedTokenizerBase]):
    """The plan's tokenizer; when resuming, the checkpoint's (a vocabulary trained again could differ: the BPE
    trainer orders tied merges by hash-map order); else one `build` trains. Every process must use the same
    vocabulary, so in a distributed run the main process builds the tokenizer and the others load its copy."""
    source = plan.tokenizer
    checkpoint = _resume_point(plan, str(plan.output_dir), started=False)
    if source is None and isinstance(checkpoint, str) and (Path(checkpoint) / "tokenizer_config.json").is_file():
        source = checkpoint
    if isinstance(source, PreTrainedTokenizerBase):
        return source
    if source is not None:
        return AutoTokenizer.from_pretrained(source)
    if args.world_size == 1:
        return build()
    folder = plan.output_dir / "tokenizer"
    with args.main_process_first(local=False, desc="building the tokenizer"):
        if args.process_index == 0:
            tokenizer = build()
            tokenizer.save_pretrained(folder)
        else:
            tokenizer = AutoTokenizer.from_pretrained(folder)
    return tokenizer


def _resume_point(plan: TrainingPlan, folder: str, started: bool = True) -> str | bool | None:
    """What `Trainer.train(resume_from_checkpoint=...)` gets: the plan's value (`True`: the Trainer finds the last
    checkpoint of `folder`, or says there is none). With `started=False` (a later stage of a multi-stage run, which
    may not have begun when the run stopped) `True` is the last checkpoint of `folder`, or nothing."""
    if plan.resume_from_checkpoint is True and not started:
        return get_last_checkpoint(folder) if Path(folder).is_dir() else None
    return plan.resume_from_checkpoint or None


def _fit(
    plan: TrainingPlan,
    trainer_class: type[Trainer],
    model: PreTrainedModel,
    args: TrainingArguments,
    tokenizer: PreTrainedTokenizerBase,
    train_split: Dataset,
    eval_split: Dataset,
    compute_metrics: Callable | None,
    pad_token_id: int | None = None,
    first_stage: bool = True,
) -> tuple[Trainer, dict]:
    """Trains `model` with `trainer_class` (right-padding batches; resuming where `plan` says, `first_stage=False`
    for a stage that may not have begun), then evaluates it on the held-out split; returns the trainer and its
    metrics without their `eval_` prefix."""
    trainer = trainer_class(
        model=model,
        args=args,
        train_dataset=train_split,
        eval_dataset=eval_split,
        data_collator=PaddingCollator(tokenizer.pad_token_id if pad_token_id is None else pad_token_id),
        processing_class=tokenizer,
        compute_metrics=compute_metrics,
        callbacks=list(plan.callbacks),
    )
    trainer.train(resume_from_checkpoint=_resume_point(plan, args.output_dir, started=first_stage))
    return trainer, {key.removeprefix("eval_"): value for key, value in trainer.evaluate().items()}


def _train_classifier(plan: TrainingPlan, architecture, head, synthetic: SyntheticTask):
    args = TrainingArguments(**_arguments(plan, architecture))
    train_split, eval_split = _splits(plan, synthetic)
    texts = list(train_split[synthetic.text_column])
    if synthetic.pair_column is not None:
        texts += list(train_split[synthetic.pair_column])
    build = train_document_tokenizer if architecture.tokenizer == "document" else train_word_level_tokenizer
    tokenizer = _shared_tokenizer(args, plan, lambda: build(texts))
    train_split = tokenize_dataset(train_split, tokenizer, synthetic.text_column, synthetic.pair_column)
    eval_split = tokenize_dataset(eval_split, tokenizer, synthetic.text_column, synthetic.pair_column)

    set_seed(plan.seed)
    config = architecture.config_class(
        vocab_size=len(tokenizer),
        pad_token_id=tokenizer.pad_token_id,
        **_label_fields(synthetic.labels),
        **plan.config_overrides,
    )
    model = head.model_class(config)
    trainer, metrics = _fit(plan, Trainer, model, args, tokenizer, train_split, eval_split, accuracy_metric)
    if head.evidence_field is not None:
        metrics.update(score_evidence_attention(model, eval_split, synthetic, head.evidence_field))
    _report(trainer, tokenizer, f"held-out accuracy {metrics['accuracy']:.4f}")
    return trainer, tokenizer, metrics


def _train_multi_label(plan: TrainingPlan, architecture, head, synthetic: SyntheticTask):
    """A word-level tokenizer and the training split's labels sorted by frequency (`id2label`, the order SGM emits
    them in). A label-sequence head (SGM) learns `labels` = [l_1, …, l_k, EOS] (target id = specials + label index)
    with `Seq2SeqTrainer` and is scored on `generate()`'s label sets (`plan.num_beams`); a multi-hot head (the
    binary-relevance baseline) learns indicator vectors with `Trainer`. Both report hamming loss, micro/macro-F1 and
    subset accuracy on the held-out split."""
    train_split, eval_split = _splits(plan, synthetic)
    sequence_model = head.labels == "label_sequence"
    arguments = _arguments(plan, architecture)
    if sequence_model:
        args = Seq2SeqTrainingArguments(**arguments, predict_with_generate=True, generation_num_beams=plan.num_beams)
    else:
        args = TrainingArguments(**arguments)
    tokenizer = _shared_tokenizer(
        args, plan, lambda: train_word_level_tokenizer(list(train_split[synthetic.text_column]))
    )
    labels = labels_by_frequency(train_split[synthetic.label_column])
    set_seed(plan.seed)
    config = architecture.config_class(vocab_size=len(tokenizer), **_label_fields(labels), **plan.config_overrides)

    def encode(batch: dict[str, list]) -> dict[str, list]:
        encoded = dict(tokenizer(batch[synthetic.text_column]))
        indices = [
            sorted(config.label2id[name] for name in names if name in config.label2id)
            for names in batch[synthetic.label_column]
        ]
        if sequence_model:
            encoded["labels"] = [
                [config.num_special_tokens + index for index in row] + [config.eos_token_id] for row in indices
            ]
        else:
            encoded["labels"] = [[float(index in row) for index in range(len(labels))] for row in indices]
        return encoded

    columns = train_split.column_names
    train_split = train_split.map(encode, batched=True, remove_columns=columns)
    eval_split = eval_split.map(encode, batched=True, remove_columns=columns)
    model = head.model_class(config)
    if sequence_model:
        args.generation_max_length = len(labels) + 2  # start token, every label once, EOS
        model.generation_config.update(num_beams=plan.num_beams, max_length=args.generation_max_length)
        trainer_class, compute_metrics = Seq2SeqTrainer, label_sequence_metrics(config)
    else:
        trainer_class, compute_metrics = Trainer, multi_hot_metrics
    trainer, metrics = _fit(plan, trainer_class, model, args, tokenizer, train_split, eval_split, compute_metrics)
    _report(
        trainer, tokenizer, f"held-out micro-F1 {metrics['micro_f1']:.4f}, hamming loss {metrics['hamming_loss']:.4f}"
    )
    return trainer, tokenizer, metrics


def _train_seq2seq(plan: TrainingPlan, architecture, head, synthetic: SyntheticTask):
    """A shared BPE vocabulary over source and target, `Seq2SeqTrainer` with `predict_with_generate` (beam
    search), held-out BLEU and exact match."""
    train_split, eval_split = _splits(plan, synthetic)
    args = Seq2SeqTrainingArguments(
        **_arguments(plan, architecture), predict_with_generate=True, generation_num_beams=plan.num_beams
    )
    texts = list(train_split[synthetic.text_column]) + list(train_split[synthetic.pair_column])
    tokenizer = _shared_tokenizer(args, plan, lambda: train_bpe_tokenizer(texts, vocab_size=8000))

    def encode(batch: dict[str, list]) -> dict[str, list]:
        encoded = dict(tokenizer(batch[synthetic.text_column]))
        encoded["labels"] = tokenizer(batch[synthetic.pair_column])["input_ids"]
        return encoded

    columns = train_split.column_names
    train_split = train_split.map(encode, batched=True, remove_columns=columns)
    eval_split = eval_split.map(encode, batched=True, remove_columns=columns)
    args.generation_max_length = max(len(labels) for labels in eval_split["labels"]) + 10

    set_seed(plan.seed)
    config = architecture.config_class(
        vocab_size=len(tokenizer),
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        decoder_start_token_id=tokenizer.bos_token_id,
        **plan.config_overrides,
    )
    model = head.model_class(config)
    model.generation_config.update(num_beams=plan.num_beams, max_length=args.generation_max_length)
    if plan.num_beams > 1:  # the paper's α = 0.6 (§6.1); transformers refuses to save it for greedy search
        model.generation_config.length_penalty = 0.6
    metrics_function = translation_metrics(tokenizer)
    trainer, metrics = _fit(plan, Seq2SeqTrainer, model, args, tokenizer, train_split, eval_split, metrics_function)
    _report(trainer, tokenizer, f"held-out exact match {metrics['exact_match']:.4f}, BLEU {metrics['bleu']:.2f}")
    return trainer, tokenizer, metrics


def _train_elmo(plan: TrainingPlan, architecture, head, synthetic: SyntheticTask):
    """ELMo's two stages (§3 of the paper): (1) the biLM learns the task's texts as a bidirectional language model
    (`ElmoForBidirectionalLanguageModeling`; held-out perplexity before and after); (2) the tagger `head` reads the
    frozen biLM through a learned scalar mix. Reports token accuracy and the accuracy on the words whose tag only
    their context decides (`synthetic.evidence_column`). Each stage checkpoints into its own folder and, on
    `resume_from_checkpoint=True`, continues from its own last checkpoint."""
    from .models.elmo import ElmoForBidirectionalLanguageModeling

    if isinstance(plan.resume_from_checkpoint, str):
        raise ValueError(
            "ELMo trains in two stages, each with its own checkpoints (output_dir/bilm, then output_dir): resume with "
            "`resume_from_checkpoint=True` (`--resume-from-checkpoint` without a path), not a checkpoint path."
        )
    arguments = _arguments(plan, architecture)
    args = TrainingArguments(**arguments)
    # The biLM's checkpoints go to their own folder, so that each stage resumes from its own.
    lm_folder = str(plan.output_dir / "bilm")
    lm_args = TrainingArguments(**{**arguments, "output_dir": lm_folder}, prediction_loss_only=True)
    train_split, eval_split = _splits(plan, synthetic)
    texts = list(train_split[synthetic.text_column])
    tokenizer = _shared_tokenizer(args, plan, lambda: train_elmo_tokenizer(texts))
    columns = train_split.column_names

    def encode_words(batch: dict[str, list]) -> dict[str, list]:
        encoded = dict(tokenizer(batch[synthetic.text_column], return_token_ids=True))
        encoded["labels"] = encoded.pop("token_ids")  # the words themselves: the biLM's targets
        return encoded

    def encode_tags(batch: dict[str, list]) -> dict[str, list]:
        encoded = dict(tokenizer(batch[synthetic.text_column]))
        encoded["labels"] = [[-100, *tags, -100] for tags in batch[synthetic.label_column]]  # no tag for <S>, </S>
        return encoded

    set_seed(plan.seed)
    config = architecture.config_class(
        vocab_size=len(tokenizer), **_label_fields(synthetic.labels), **plan.config_overrides
    )
    language_model = ElmoForBidirectionalLanguageModeling(config)
    lm_trainer = Trainer(
        model=language_model,
        args=lm_args,
        train_dataset=train_split.map(encode_words, batched=True, remove_columns=columns),
        eval_dataset=eval_split.map(encode_words, batched=True, remove_columns=columns),
        data_collator=PaddingCollator(0),
        callbacks=list(plan.callbacks),
    )
    perplexity_before = math.exp(lm_trainer.evaluate()["eval_loss"])
    lm_trainer.train(resume_from_checkpoint=_resume_point(plan, lm_folder))
    perplexity = math.exp(lm_trainer.evaluate()["eval_loss"])
    _report(lm_trainer, tokenizer, f"biLM held-out perplexity {perplexity_before:.2f} -> {perplexity:.2f}")

    set_seed(plan.seed)
    model = head.model_class(config)
    model.elmo.load_state_dict(language_model.elmo.state_dict())
    tag_eval = eval_split.map(encode_tags, batched=True)
    tag_train = train_split.map(encode_tags, batched=True, remove_columns=columns)
    tag_eval_inputs = tag_eval.remove_columns(columns)
    trainer, metrics = _fit(
        plan, Trainer, model, args, tokenizer, tag_train, tag_eval_inputs, accuracy_metric,
        pad_token_id=0, first_stage=False,
    )  # fmt: skip
    metrics.update(perplexity_before_lm_training=perplexity_before, perplexity=perplexity)
    if synthetic.evidence_column is not None:
        metrics["ambiguous_accuracy"] = token_accuracy_at(model, tag_eval, synthetic.evidence_column, offset=1)
    _report(trainer, tokenizer, f"held-out accuracy {metrics['accuracy']:.4f}")
    return trainer, tokenizer, metrics


@torch.no_grad()
def token_accuracy_at(model: PreTrainedModel, dataset: Dataset, position_column: str, offset: int = 0) -> float:
    """Token-classification accuracy at one position per example (`position_column` + `offset`)."""
    model.eval()
    collator = PaddingCollator(0)
    correct = []
    for start in range(0, len(dataset), 64):
        rows = dataset.select(range(start, min(start + 64, len(dataset))))
        batch = collator([{"input_ids": r["input_ids"], "attention_mask": r["attention_mask"]} for r in rows])
        logits = model(**{name: tensor.to(model.device) for name, tensor in batch.items()}).logits
        positions = torch.tensor(rows[position_column], device=logits.device) + offset
        predicted = logits[torch.arange(len(rows), device=logits.device), positions].argmax(dim=-1)
        labels = torch.tensor([r["labels"][p] for r, p in zip(rows, positions.tolist(), strict=True)])
        correct.append(predicted.cpu() == labels)
    return torch.cat(correct).float().mean().item()


def _report(trainer: Trainer, tokenizer: PreTrainedTokenizerBase, result: str) -> None:
    """One line per process: its rank, steps, held-out result and a fingerprint of its vocabulary."""
    args = trainer.args
    vocabulary = hashlib.sha256(json.dumps(sorted(tokenizer.get_vocab().items())).encode()).hexdigest()[:12]
    print(
        f"[hf-attn] rank {args.process_index}/{args.world_size}: {trainer.state.global_step} steps, {result}, "
        f"vocabulary {vocabulary}",
        flush=True,
    )


def _finish(plan: TrainingPlan, synthetic: SyntheticTask, trainer: Trainer, tokenizer, metrics: dict) -> None:
    """Saves model, tokenizer, training record and card (main process), then pushes if asked."""
    if plan.save or plan.push_to_hub:
        summary = {
            "dataset": {
                "type": f"hf_attn/{plan.task}",
                "name": f"{plan.task} (synthetic, hf_attn.data)",
                "description": (synthetic.generator.__doc__ or "").strip().splitlines()[0],
            },
            "settings": {
                "training examples": plan.num_train,
                "held-out examples": plan.num_eval,
                "seed": plan.seed,
                "steps": trainer.state.global_step,
                "batch size per process": plan.batch_size,
                "processes": trainer.args.world_size,
                "learning rate": trainer.args.learning_rate,
                "schedule": plan.schedule,
                "optimizer": str(trainer.args.optim),
                "task options": plan.task_kwargs,
                "config overrides": plan.config_overrides,
            },
            "metrics": {key: metrics[key] for key in REPORTED_METRICS if key in metrics},
        }
        save_trained(trainer, tokenizer, plan.output_dir, summary, repo_id=plan.push_to_hub)
    if plan.push_to_hub and trainer.is_world_process_zero():
        commit = push_model_dir(plan.output_dir, plan.push_to_hub, private=plan.hub_private)
        print(f"[hf-attn] pushed {plan.output_dir} to {plan.push_to_hub} at {commit.oid}", flush=True)


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
        trainer.accelerator.unwrap_model(trainer.model).save_pretrained(output_dir)
        tokenizer.save_pretrained(output_dir)
        (output_dir / "training_args.json").write_text(trainer.args.to_json_string())
        (output_dir / TRAINING_FILE).write_text(json.dumps(summary, indent=2))
        write_model_card(output_dir, repo_id=repo_id)
    trainer.accelerator.wait_for_everyone()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--output-dir", required=True, help="where the trained model and tokenizer are saved")
    parser.add_argument("--arch", default="lin_self_attentive", help="a registered architecture (hf-attn list)")
    parser.add_argument("--task", help="synthetic task (default: the architecture's)")
    parser.add_argument("--num-train", type=int, default=2000)
    parser.add_argument("--num-eval", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--epochs", type=float, default=3.0)
    parser.add_argument("--max-steps", type=int, default=-1, help="overrides --epochs when > 0")
    parser.add_argument("--batch-size", type=int, default=32, help="per process")
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--config", nargs="*", default=[], metavar="KEY=VALUE", help="config overrides")
    parser.add_argument("--task-args", nargs="*", default=[], metavar="KEY=VALUE", help="synthetic task options")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    parser.add_argument("--schedule", choices=["linear", "noam"], default="linear", help="learning-rate schedule")
    parser.add_argument("--warmup-steps", type=int, default=0, help="warmup (noam: defaults to the paper's 4000)")
    parser.add_argument("--push-to-hub", metavar="REPO_ID", help="upload the trained model to this Hub repo")
    parser.add_argument("--private", action="store_true", help="with --push-to-hub: create the repo private")
    parser.add_argument("--head", help="the head's class name, when the architecture has several for the task")
    parser.add_argument("--num-beams", type=int, help="beam size of held-out generation (default: 4; 1 multi-label)")
    parser.add_argument("--tokenizer", help="a saved tokenizer (folder or Hub id) instead of one trained on the task")
    parser.add_argument("--save-steps", type=int, default=0, help="write a resumable checkpoint every N steps")
    parser.add_argument(
        "--resume-from-checkpoint",
        nargs="?",
        const=True,
        metavar="PATH",
        help="continue a stopped run (same arguments): from its last checkpoint, or from PATH",
    )


def run_from_args(args: argparse.Namespace) -> TrainingResult:
    result = train(
        output_dir=args.output_dir,
        arch=args.arch,
        task=args.task,
        num_train=args.num_train,
        num_eval=args.num_eval,
        seed=args.seed,
        epochs=args.epochs,
        max_steps=args.max_steps,
        batch_size=args.batch_size,
        learning_rate=args.learning_rate,
        config_overrides=parse_overrides(args.config),
        task_kwargs=parse_overrides(args.task_args),
        disable_tqdm=args.no_progress,
        push_to_hub=args.push_to_hub,
        hub_private=args.private,
        schedule=args.schedule,
        warmup_steps=args.warmup_steps,
        head=args.head,
        num_beams=args.num_beams,
        save_steps=args.save_steps,
        resume_from_checkpoint=args.resume_from_checkpoint,
        tokenizer=args.tokenizer,
    )
    if result.trainer.is_world_process_zero():
        shown = {key: round(value, 4) for key, value in result.metrics.items() if not math.isnan(value)}
        print(json.dumps(shown, indent=2))
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Train an hf_attn model on a synthetic task with Trainer.")
    add_arguments(parser)
    run_from_args(parser.parse_args(argv))


if __name__ == "__main__":
    main()
