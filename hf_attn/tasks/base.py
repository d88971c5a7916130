"""The task-shape base: what every kind of task asks of its data, its model and its metrics (`TaskShape`), and the
encoding steps the shapes share (`encode_split`, `encoding_key`)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import torch
from datasets import Dataset, IterableDataset
from torch.utils.data import DataLoader
from transformers import (
    PreTrainedConfig,
    PreTrainedModel,
    PreTrainedTokenizerBase,
    Seq2SeqTrainer,
    Trainer,
    TrainerCallback,
)

from ..data.cache import encode_splits, encoding_step, step_fingerprint
from ..data.kinds import Document, InputKind, LabelKind, Sentence
from ..data.task_data import TaskData, TaskLayout
from ..registry.table import Architecture, Head
from ..tokenization.base import vocabulary_fields
from .metrics import EVIDENCE_METRICS, accuracy_metric

if TYPE_CHECKING:
    from transformers import TrainingArguments


def _label_fields(labels: list[str]) -> dict[str, Any]:
    """The config fields that name a classification task's labels."""
    return {
        "num_labels": len(labels),
        "id2label": dict(enumerate(labels)),
        "label2id": {label: index for index, label in enumerate(labels)},
    }


class TaskShape:
    """One kind of task. Subclasses set the class attributes and override the hooks that differ."""

    layout: ClassVar[TaskLayout]  # what its rows hold (`hf_attn.data.task_data`): name, needed columns, label sets
    label_kinds: ClassVar[tuple[LabelKind, ...]]  # the `Head.labels` it trains
    # The `Head.inputs` it feeds, by class: a kind of a model folder's own that subclasses one (ELMo's characters,
    # STCKA's text with its concepts: each a `Sentence`) is fed as that one. `pairs`: the kinds that read two texts.
    input_kinds: ClassVar[tuple[type[InputKind], ...]] = (Sentence, Document)
    pairs: ClassVar[bool] = False
    variants: ClassVar[tuple[str, ...]] = ()  # shapes that train other heads on the same data
    variant_of: ClassVar[str | None] = None  # a model folder's shape: the shared shape whose data it trains on
    # Few-shot: the data are episodes of classes named at test time (held-out episodes, not a label set).
    episodic: ClassVar[bool] = False
    # Trains on a stream (`--streaming`, `hf_attn.data.streaming`): nothing of it needs the whole training split
    # ahead. `needs_ahead` says what does, where it cannot.
    streams: ClassVar[bool] = False
    needs_ahead: ClassVar[str] = "its statistics"
    # The held-out metrics recorded with a trained model and shown on its card, in that order: what `metrics`,
    # `extra_metrics` and `finish_metrics` may return (the Trainer's bookkeeping, loss and speeds, is left out).
    reported_metrics: ClassVar[tuple[str, ...]] = ("accuracy", *EVIDENCE_METRICS)

    name: ClassVar[str]  # its layout's name, set with the layout (`__init_subclass__`): an attribute, read often

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "layout" in cls.__dict__:
            cls.name = cls.layout.name

    @property
    def needs(self) -> tuple[str, ...]:
        """The `TaskData` columns the shape cannot work without."""
        return self.layout.needs

    @property
    def label_sets(self) -> bool:
        """Each example has a set of labels (a list of names), not one class."""
        return self.layout.label_sets

    @property
    def has_labels(self) -> bool:
        """Whether the shape reads a label column (a language model or seq2seq task does not)."""
        return self.layout.has_labels

    def accepts(self, head: Head) -> bool:
        return (
            head.labels in self.label_kinds
            and isinstance(head.inputs, self.input_kinds)
            and (head.inputs.pair == self.pairs)
        )

    def generates(self, head: Head) -> bool:
        """Whether `head` is scored on `generate()`'s outputs (`Seq2SeqTrainer(predict_with_generate=True)`)."""
        return False

    def heads(self, architecture: Architecture) -> list[Head]:
        return [head for head in architecture.heads if self.accepts(head)]

    def label_names(self, data: TaskData) -> list[str] | None:
        """The classes the head learns: the training data's labels. One label cannot train a classifier (it
        would learn a constant and report perfect accuracy): refused, naming it."""
        if data.labels is not None and len(data.labels) == 1:
            raise ValueError(
                f"every training example has the label {data.labels[0]!r}: a classifier needs two or more labels "
                "(check --label_column and the file)."
            )
        return data.labels

    def config_fields(
        self, tokenizer: PreTrainedTokenizerBase, labels: list[str] | None, data: TaskData | None = None
    ) -> dict[str, Any]:
        """Config keywords set by the vocabulary and the labels (and what the metrics need of the training data)."""
        return {**vocabulary_fields(tokenizer), **(_label_fields(labels) if labels else {})}

    def build_config(
        self,
        config_class: type[PreTrainedConfig],
        tokenizer: PreTrainedTokenizerBase,
        data: TaskData,
        overrides: dict[str, Any],
    ) -> PreTrainedConfig:
        """The run's one config: `config_fields` (the vocabulary, the classes the head learns: `label_names`, which
        refuses a single label) and the recipe's and `--config`'s `overrides` (checked against the class when the
        options were read: `hf_attn.options.reading.check_config_overrides`); a value the config refuses is a
        `ValueError` naming `--config` and the field (the config's own message)."""
        from huggingface_hub.errors import StrictDataclassError

        labels = self.label_names(data)
        try:
            return config_class(**self.config_fields(tokenizer, labels, data), **overrides)
        except (StrictDataclassError, TypeError) as error:
            raise ValueError(f"--config: {' '.join(str(error).split())}") from error

    def encoder(
        self,
        data: TaskData,
        tokenizer: PreTrainedTokenizerBase,
        config: PreTrainedConfig,
        head: Head,
        max_length: int | None = None,
    ) -> Callable[[dict[str, list]], dict[str, list]]:
        """The function `datasets.map(batched=True)` encodes a batch of rows with: model inputs and `labels`."""
        kwargs = {"truncation": max_length is not None, "max_length": max_length}

        def encode(batch: dict[str, list]) -> dict[str, list]:
            # what the tokenizer reads beside the text (STCKA: each text's concepts, not linked by its knowledge base)
            given = {keyword: batch[column] for keyword, column in data.tokenizer_columns.items()}
            encoded = dict(tokenizer(batch[data.text_column], **kwargs, **given))
            if data.pair_column is not None:
                pair = tokenizer(batch[data.pair_column], **kwargs)
                encoded["pair_input_ids"] = pair["input_ids"]
                encoded["pair_attention_mask"] = pair["attention_mask"]
            encoded["labels"] = batch[data.label_column]
            return encoded

        return encode

    def encode_splits(
        self,
        data: TaskData,
        tokenizer: PreTrainedTokenizerBase,
        config: PreTrainedConfig,
        head: Head,
        max_length: int | None,
        workers: int | None = None,
        fresh: bool = False,
    ) -> tuple[Dataset, Dataset, bool]:
        """A run's two splits encoded by `encoder` (the held-out split keeps its evidence column), each under the
        fingerprint of what the encoding reads (`encoding_parts`: found again in the `datasets` cache on a second run;
        a stream is encoded as it is read), and whether the cache held both already."""
        encode = self.encoder(data, tokenizer, config, head, max_length)
        keep = [data.evidence_column] if data.evidence_column else []
        splits = [
            (
                split,
                kept,
                None if data.streamed else encoding_parts(split, self, data, tokenizer, config, head, max_length),
            )
            for split, kept in ((data.train, ()), (data.eval, keep))
        ]
        (train_split, eval_split), cached = encode_splits(splits, encode, tokenizer, workers, fresh)
        return train_split, eval_split, cached

    def collator(
        self, tokenizer: PreTrainedTokenizerBase, config: PreTrainedConfig, head: Head
    ) -> Callable[[list[dict[str, Any]]], dict[str, torch.Tensor]]:
        """The batch collator: the head's input kind pads its inputs (`InputKind.collator`)."""
        return head.inputs.collator(config)

    def metrics(
        self, head: Head, config: PreTrainedConfig, tokenizer: PreTrainedTokenizerBase, data: TaskData | None = None
    ) -> Callable | None:
        """`compute_metrics` for the held-out split; `data` (the training data, when known) for metrics that
        depend on it (PSP@k's label propensities)."""
        return accuracy_metric

    def prepare(self, model: PreTrainedModel, args: TrainingArguments, eval_split: Dataset) -> None:
        """Sets what evaluation needs on the model and the arguments: the generation settings, the beams
        `args.generation_num_beams` asks for (`--num_beams`; `None`: the shape's default)."""

    def ready(self, model: PreTrainedModel, head: Head, args: TrainingArguments, eval_split: Dataset) -> None:
        """Readies a run's model and arguments for the `Trainer`: scored on `generate()`'s outputs where the head
        generates (`generates`: `Seq2SeqTrainer(predict_with_generate=True)`), with what evaluation needs
        (`prepare`)."""
        args.predict_with_generate = self.generates(head)
        self.prepare(model, args, eval_split)

    def build_model(
        self, head: Head, config: PreTrainedConfig, data: TaskData, args: TrainingArguments
    ) -> PreTrainedModel:
        """A fresh model of `head` for the task."""
        return head.model_class(config)

    def fit(
        self,
        args: TrainingArguments,
        model: PreTrainedModel,
        head: Head,
        tokenizer: PreTrainedTokenizerBase,
        data: TaskData,
        splits: tuple[Dataset, Dataset],
        callbacks: Sequence[TrainerCallback],
        resume: str | bool | None,
    ) -> tuple[Trainer, dict[str, float]]:
        """Trains `model` with the Trainer the shape needs on the encoded `splits` (training, held-out), then
        evaluates it on the held-out split; returns the trainer (whose `model` is what gets saved) and its metrics
        without their `eval_` prefix."""
        train_split, eval_split = splits
        trainer = self.trainer(args, model, head, tokenizer, data, train_split, eval_split, callbacks)
        trainer.train(resume_from_checkpoint=resume)
        return trainer, self.evaluate(trainer)

    def fit_and_score(
        self,
        args: TrainingArguments,
        model: PreTrainedModel,
        head: Head,
        tokenizer: PreTrainedTokenizerBase,
        data: TaskData,
        splits: tuple[Dataset, Dataset],
        callbacks: Sequence[TrainerCallback],
        resume: str | bool | None,
    ) -> tuple[Trainer, dict[str, float], str]:
        """`model` readied for the shape's `Trainer` (`ready`), `fit`, then the held-out scores beyond
        `compute_metrics` (`extra_metrics`): the trainer, every held-out metric, and the line that says the result
        (`headline`)."""
        self.ready(model, head, args, splits[1])
        trainer, metrics = self.fit(args, model, head, tokenizer, data, splits, callbacks, resume)
        metrics = {**metrics, **self.extra_metrics(model, head, splits[1], data)}
        return trainer, metrics, self.headline(metrics)

    def trainer(
        self,
        args: TrainingArguments,
        model: PreTrainedModel,
        head: Head,
        tokenizer: PreTrainedTokenizerBase,
        data: TaskData,
        train_split: Dataset | None,
        eval_split: Dataset,
        callbacks: Sequence[TrainerCallback],
    ) -> Trainer:
        """The `Trainer` (a `Seq2SeqTrainer` when scoring generations) with the shape's collator and metrics."""
        trainer_class = Seq2SeqTrainer if getattr(args, "predict_with_generate", False) else Trainer
        if isinstance(train_split, IterableDataset):
            trainer_class = stream_shard_trainer(trainer_class)
        return trainer_class(
            model=model,
            args=args,
            train_dataset=train_split,
            eval_dataset=eval_split,
            data_collator=self.collator(tokenizer, model.config, head),
            processing_class=tokenizer,
            compute_metrics=self.metrics(head, model.config, tokenizer, data),
            callbacks=list(callbacks),
        )

    def evaluate(self, trainer: Trainer) -> dict[str, float]:
        """Held-out metrics of `trainer.evaluate()`, without their `eval_` prefix."""
        return self.finish_metrics({key.removeprefix("eval_"): value for key, value in trainer.evaluate().items()})

    def extra_metrics(
        self, model: PreTrainedModel, head: Head, encoded_eval: Dataset, data: TaskData
    ) -> dict[str, float]:
        """Held-out scores beyond `compute_metrics` (attention on the evidence)."""
        return {}

    def finish_metrics(self, metrics: dict[str, float]) -> dict[str, float]:
        return metrics

    def headline(self, metrics: dict[str, float]) -> str:
        return f"held-out accuracy {metrics.get('accuracy', float('nan')):.4f}"

    def predict(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        head: Head,
        texts: list[str],
        pairs: list[str] | None = None,
        top_k: int = 5,
    ) -> list[dict[str, Any]]:
        """Predictions for raw texts (`hf-attn predict`), one dict per text."""
        raise ValueError(f"{type(model).__name__} has nothing to predict from text; `hf-attn evaluate` scores it.")


class StreamShardTrainerMixin:
    """A `Trainer` whose training stream is already this process's part (`split_dataset_by_node`,
    `hf_attn.data.streaming`): in a distributed run its batches are loaded as they come. Through `accelerate`, the
    main process would read every batch and send each process its share (`dispatch_batches`), or the stream would be
    split again and lose rows."""

    def get_train_dataloader(self) -> DataLoader:
        if self.args.world_size == 1 or not isinstance(self.train_dataset, IterableDataset):
            return super().get_train_dataloader()
        return DataLoader(
            self.train_dataset,
            batch_size=self._train_batch_size,
            collate_fn=self._get_collator_with_removed_columns(self.data_collator, description="training"),
            num_workers=self.args.dataloader_num_workers,
            pin_memory=self.args.dataloader_pin_memory,
        )


@functools.cache
def stream_shard_trainer(trainer_class: type[Trainer]) -> type[Trainer]:
    """`trainer_class` with `StreamShardTrainerMixin` (one class per trainer class)."""
    return type(f"StreamShard{trainer_class.__name__}", (StreamShardTrainerMixin, trainer_class), {})


def encode_split(
    split: Dataset, encode: Callable[[dict[str, list]], dict[str, list]], keep: Sequence[str] = ()
) -> tuple[Dataset, bool]:
    """`split` encoded by a shape's `encoder` (batched `map`, fingerprinted by `datasets`), its other columns dropped
    except `keep`, and whether the `datasets` cache held it already (a training run's splits:
    `TaskShape.encode_splits`)."""
    encoded, cached = encode_splits([(split, keep, None)], encode)
    return encoded[0], cached


class ConfigReads:
    """A config that records the fields read from it: what an encoder's output depends on (`encoding_key`)."""

    def __init__(self, config: PreTrainedConfig) -> None:
        self.config = config
        self.read: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:  # only for names that are not this object's own (config, read)
        value = getattr(self.config, name)
        self.read[name] = value
        return value


def encoding_parts(
    split: Dataset,
    shape: TaskShape,
    data: TaskData,
    tokenizer: PreTrainedTokenizerBase,
    config: PreTrainedConfig,
    head: Head,
    max_length: int | None,
) -> tuple:
    """What `split` encoded by `shape.encoder` depends on beside the split and the tokenizer
    (`hf_attn.data.cache.encoding_step` adds the tokenizer, `step_fingerprint` the split): the shape, the head, the
    config fields the encoder reads (found by encoding two rows with a `ConfigReads`), the length limit, the columns
    and the encoder's code; a model of another size reuses the encoding, other labels do not."""
    reads = ConfigReads(config)
    probe = shape.encoder(data, tokenizer, reads, head, max_length)
    probe(split[: min(2, len(split))])
    columns = (data.text_column, data.pair_column, data.label_column, data.evidence_column, data.tokenizer_columns)
    return (shape.name, head.model_class.__name__, reads.read, max_length, columns, probe.__code__.co_code)


def encoding_key(
    split: Dataset,
    shape: TaskShape,
    data: TaskData,
    tokenizer: PreTrainedTokenizerBase,
    config: PreTrainedConfig,
    head: Head,
    max_length: int | None,
) -> str:
    """The fingerprint of `split` encoded by `shape.encoder`: the split's own, the tokenizer (vocabulary, pipeline and
    options) and `encoding_parts`."""
    parts = encoding_parts(split, shape, data, tokenizer, config, head, max_length)
    return step_fingerprint(split, encoding_step(tokenizer, parts))
