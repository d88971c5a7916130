"""Task shapes: what a kind of task does to its data, its model and its metrics, once for every architecture.

(The data side of a shape, `TaskData` and its layout, is in `hf_attn.data.task_data`.)

The training pipeline (`hf_attn.training`) knows no task: it asks the shape for the heads that fit, the texts a
vocabulary is trained on, the config fields the labels set, the encoding of a batch, the collator, the metrics
and the extra held-out scores (how much attention lands on known evidence). A shape works on `TaskData`, whose
columns the loaders (`hf_attn.data.files`, the synthetic tasks) have already put in canonical form:

    shape                 text columns          labels                               heads (Head.labels)
    classification        text                  class id (int, -100: unlabelled)     class
    pair_classification   text, pair            class id (int, -100: unlabelled)     class
    multi_label           text                  list of label names                  label_sequence, multi_hot
    label_tree            text                  list of label names                  label_tree
    seq2seq               text, pair (target)   - (the target text)                  token_vocab (seq2seq inputs)
    language_modeling     text                  - (the words themselves)             token_vocab
    token_classification  text (words)          list of tag ids, one per word        token_class
    few_shot              text (+ head, tail)   class name (held-out classes new)    episode

A shape also builds the model (`build_model`: a label tree is made from the training data) and trains it (`fit`:
one `Trainer`, or one per level of a label tree).

A head reads sentences, documents or characters (`Head.inputs`); the architecture's tokenizer kind turns the same
text into what the head reads, so a review CSV trains Lin (words) and HAN (sentences of words) alike.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np
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

from .data.cache import cached_map, column_values, fingerprint, tokenizer_fingerprint
from .data.collators import labels_by_frequency
from .data.episodes import CLASS_COLUMN, EpisodeDataset, class_rows, compute_episode_metrics, eligible_classes
from .data.kinds import (
    CLASS,
    EPISODE,
    FEW_SHOT_PREDICTION,
    LABEL_SEQUENCE,
    MULTI_HOT,
    TOKEN_CLASS,
    TOKEN_VOCAB,
    Document,
    Episodes,
    InputKind,
    LabelKind,
    Sentence,
    SourceAndTarget,
)
from .data.task_data import TASK_LAYOUTS, TaskData, TaskLayout
from .evaluation import (
    EVIDENCE_METRICS,
    RANKING_METRICS,
    accuracy_metric,
    jain_propensities,
    label_propensities,
    label_sequence_metrics,
    multi_hot_metrics,
    score_evidence_attention,
    token_accuracy_at,
    translation_metrics,
    word_attention_on_evidence,
)
from .layers.few_shot import entity_token_positions
from .prediction import model_inputs, top_attended
from .registry import Architecture, Head
from .tokenization.base import task_tokenizer


def vocabulary_fields(tokenizer: PreTrainedTokenizerBase) -> dict[str, Any]:
    """The config fields a vocabulary sets (the tokenizer contract's `config_fields()`: its size and padding id, or
    what a tokenizer of its own says)."""
    return task_tokenizer(tokenizer).config_fields()


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

    @property
    def name(self) -> str:
        return self.layout.name

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

    def encoder(
        self, data: TaskData, tokenizer: PreTrainedTokenizerBase, config: PreTrainedConfig, head: Head,
        max_length: int | None = None,
    ) -> Callable[[dict[str, list]], dict[str, list]]:  # fmt: skip
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

    def prepare(self, model: PreTrainedModel, args: Any, eval_split: Dataset, num_beams: int | None) -> None:
        """Sets what evaluation needs on the model and the arguments (generation settings)."""

    def build_model(self, head: Head, config: PreTrainedConfig, data: TaskData, args: Any) -> PreTrainedModel:
        """A fresh model of `head` for the task."""
        return head.model_class(config)

    def fit(
        self, args: Any, model: PreTrainedModel, head: Head, tokenizer: PreTrainedTokenizerBase, data: TaskData,
        train_split: Dataset, eval_split: Dataset, callbacks: Sequence[TrainerCallback], resume: str | bool | None,
    ) -> tuple[Trainer, dict[str, float]]:  # fmt: skip
        """Trains `model` with the Trainer the shape needs, then evaluates it on the held-out split; returns the
        trainer (whose `model` is what gets saved) and its metrics without their `eval_` prefix."""
        trainer = self.trainer(args, model, head, tokenizer, data, train_split, eval_split, callbacks)
        trainer.train(resume_from_checkpoint=resume)
        return trainer, self.evaluate(trainer)

    def trainer(
        self, args: Any, model: PreTrainedModel, head: Head, tokenizer: PreTrainedTokenizerBase, data: TaskData,
        train_split: Dataset | None, eval_split: Dataset, callbacks: Sequence[TrainerCallback],
    ) -> Trainer:  # fmt: skip
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
        self, model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, head: Head, texts: list[str],
        pairs: list[str] | None = None, top_k: int = 5,
    ) -> list[dict[str, Any]]:  # fmt: skip
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


class Classification(TaskShape):
    """A text (sentence or document) and one class: accuracy, and attention on the evidence where it is known."""

    layout = TASK_LAYOUTS["classification"]
    label_kinds = (CLASS,)
    streams = True

    @torch.no_grad()
    def predict(self, model, tokenizer, head, texts, pairs=None, top_k=5):
        inputs = model_inputs(head, tokenizer, texts, pairs, model.device)
        output = model(**inputs, **head.attention_kwargs)  # the maps `top_attended` reads
        probabilities = output.logits.float().softmax(dim=-1)
        attended = top_attended(model, head, inputs, output, tokenizer, top_k)
        results = []
        for row, scores in enumerate(probabilities):
            best = int(scores.argmax())
            label = model.config.id2label.get(best, str(best))
            results.append({"label": label, "score": float(scores[best]), "attended": attended[row]})
        return results

    def extra_metrics(self, model, head, encoded_eval, data):
        if head.evidence_field is None or data.evidence_column is None:
            return {}
        return score_evidence_attention(
            model, encoded_eval, data.evidence_column, head.evidence_field, attention_kwargs=head.attention_kwargs
        )


class PairClassification(Classification):
    """Two texts (premise and hypothesis; a document and its translation) and one class."""

    layout = TASK_LAYOUTS["pair_classification"]
    pairs = True


class MultiLabel(TaskShape):
    """A text and a set of labels. Labels are sorted by training frequency (`id2label`, the order a label-sequence
    head emits them in). Each head learns its label kind's targets (`LabelKind.label_set_targets`): a label sequence
    `[l_1, …, l_k, EOS]`, scored on `generate()`'s label sets (greedy unless `num_beams`), or indicator vectors.
    Both report hamming loss, micro/macro-F1 and subset accuracy."""

    layout = TASK_LAYOUTS["multi_label"]
    label_kinds = (LABEL_SEQUENCE, MULTI_HOT)
    reported_metrics = ("hamming_loss", "micro_f1", "macro_f1", "subset_accuracy", *RANKING_METRICS)
    needs_ahead = "the labels sorted by their frequency"
    input_kinds = (Sentence, Document, SourceAndTarget)  # a label-sequence head reads a text and decodes labels

    def generates(self, head):
        return head.labels is LABEL_SEQUENCE

    def label_names(self, data):
        return labels_by_frequency(column_values(data.train, data.label_column))

    def encoder(self, data, tokenizer, config, head, max_length=None):
        kwargs = {"truncation": max_length is not None, "max_length": max_length}

        def encode(batch: dict[str, list]) -> dict[str, list]:
            encoded = dict(tokenizer(batch[data.text_column], **kwargs))
            # A held-out label training never saw (a synthetic split too small to show every label) is left out,
            # as `prepare_task_data` leaves it out of a file's held-out label sets: no model can predict it.
            known = config.label2id
            indices = [sorted(known[name] for name in names if name in known) for names in batch[data.label_column]]
            encoded["labels"] = head.labels.label_set_targets(indices, config)  # indicators, or a label sequence
            return encoded

        return encode

    def metrics(self, head, config, tokenizer, data=None):
        if head.labels is LABEL_SEQUENCE:
            return label_sequence_metrics(config)
        return multi_hot_metrics(self.propensities(config, data))

    def config_fields(self, tokenizer, labels, data=None):
        fields = super().config_fields(tokenizer, labels, data)
        if data is not None and labels:  # PSP@k's propensities, scored again by `hf-attn evaluate`
            counts = np.zeros(len(labels), dtype=np.int64)
            index = {label: i for i, label in enumerate(labels)}
            for names in column_values(data.train, data.label_column):
                counts[sorted({index[name] for name in names if name in index})] += 1
            fields["label_frequencies"] = {"examples": len(data.train), "counts": counts.tolist()}
        return fields

    @staticmethod
    def propensities(config: PreTrainedConfig, data: TaskData | None) -> Any:
        """Jain et al.'s propensity of each label from its training frequency (for PSP@k): the frequencies the
        config records (`label_frequencies`, written at training), else those of `data`'s training split; `None`
        without either."""
        recorded = getattr(config, "label_frequencies", None)
        if recorded is not None:
            return jain_propensities(np.asarray(recorded["counts"], dtype=float), max(recorded["examples"], 2))
        if data is None or data.label_column is None:
            return None
        label_sets = [[config.label2id[name] for name in names if name in config.label2id]
                      for names in column_values(data.train, data.label_column)]  # fmt: skip
        return label_propensities(label_sets, config.num_labels)

    def prepare(self, model, args, eval_split, num_beams):
        if getattr(args, "predict_with_generate", False):
            args.generation_max_length = model.config.num_labels + 2  # start token, every label once, EOS
            args.generation_num_beams = num_beams or 1
            model.generation_config.update(num_beams=num_beams or 1, max_length=args.generation_max_length)

    @torch.no_grad()
    def predict(self, model, tokenizer, head, texts, pairs=None, top_k=5):
        inputs = model_inputs(head, tokenizer, texts, None, model.device)
        if head.labels is LABEL_SEQUENCE:
            return [{"labels": labels} for labels in model.predict_label_sets(**inputs)]
        output = model(**inputs, **head.attention_kwargs)
        attended = top_attended(model, head, inputs, output, tokenizer, top_k)
        return [
            {"labels": [model.config.id2label[int(i)] for i in (row > 0).nonzero().flatten()], "attended": attended[n]}
            for n, row in enumerate(output.logits)
        ]

    def headline(self, metrics):
        return f"held-out micro-F1 {metrics['micro_f1']:.4f}, hamming loss {metrics['hamming_loss']:.4f}"


class SequenceToSequence(TaskShape):
    """A source text and a target text (one shared vocabulary): `Seq2SeqTrainer` with beam search (4, α = 0.6, the
    Transformer paper's §6.1), BLEU and exact match."""

    layout = TASK_LAYOUTS["seq2seq"]
    label_kinds = (TOKEN_VOCAB,)
    reported_metrics = ("bleu", "exact_match")
    needs_ahead = "the longest held-out target, for the generation length"
    input_kinds = (SourceAndTarget,)

    def generates(self, head):
        return True

    def config_fields(self, tokenizer, labels, data=None):
        return {
            **super().config_fields(tokenizer, None),
            "bos_token_id": tokenizer.bos_token_id,
            "eos_token_id": tokenizer.eos_token_id,
            "decoder_start_token_id": tokenizer.bos_token_id,
        }

    def encoder(self, data, tokenizer, config, head, max_length=None):
        kwargs = {"truncation": max_length is not None, "max_length": max_length}

        def encode(batch: dict[str, list]) -> dict[str, list]:
            encoded = dict(tokenizer(batch[data.text_column], **kwargs))
            encoded["labels"] = tokenizer(batch[data.pair_column], **kwargs)["input_ids"]
            return encoded

        return encode

    def metrics(self, head, config, tokenizer, data=None):
        return translation_metrics(tokenizer)

    def prepare(self, model, args, eval_split, num_beams):
        num_beams = num_beams or 4
        longest = max((len(labels) for labels in eval_split["labels"]), default=0)
        args.generation_max_length = longest + 10
        args.generation_num_beams = num_beams
        model.generation_config.update(num_beams=num_beams, max_length=args.generation_max_length)
        if num_beams > 1:  # the paper's α = 0.6; transformers refuses to save a length penalty for greedy search
            model.generation_config.length_penalty = 0.6

    @torch.no_grad()
    def predict(self, model, tokenizer, head, texts, pairs=None, top_k=5):
        inputs = model_inputs(head, tokenizer, texts, None, model.device)
        generated = model.generate(**inputs)
        return [{"translation": text} for text in tokenizer.batch_decode(generated, skip_special_tokens=True)]

    def headline(self, metrics):
        return f"held-out exact match {metrics['exact_match']:.4f}, BLEU {metrics['bleu']:.2f}"


class LanguageModeling(TaskShape):
    """Plain text: the model predicts the text's own words (a causal LM shifts them; ELMo's biLM predicts the next
    word forwards and the previous one backwards). Reports held-out perplexity, exp(mean token cross-entropy)."""

    layout = TASK_LAYOUTS["language_modeling"]
    label_kinds = (TOKEN_VOCAB,)
    reported_metrics = ("perplexity",)
    streams = True
    input_kinds = (Sentence,)  # one position per word (ELMo's characters too): a document is no language

    def encoder(self, data, tokenizer, config, head, max_length=None):
        kwargs = {"truncation": max_length is not None, "max_length": max_length}
        contract = task_tokenizer(tokenizer)

        def encode(batch: dict[str, list]) -> dict[str, list]:
            # The targets: the text's own ids, or what its tokenizer says a language model predicts (word ids, when
            # the inputs are characters).
            return contract.language_model_encoding(batch[data.text_column], **kwargs)

        return encode

    def metrics(self, head, config, tokenizer, data=None):
        return None  # the loss is the metric

    def finish_metrics(self, metrics):
        return {**metrics, "perplexity": math.exp(min(metrics["loss"], 700.0))}

    def headline(self, metrics):
        return f"held-out perplexity {metrics['perplexity']:.2f}"

    @torch.no_grad()
    def predict(self, model, tokenizer, head, texts, pairs=None, top_k=5):
        if not model.can_generate():
            return super().predict(model, tokenizer, head, texts, pairs, top_k)
        results = []
        for text in texts:  # one at a time: generation continues each text from its own last token
            inputs = model_inputs(head, tokenizer, [text], None, model.device)
            generated = model.generate(**inputs, max_new_tokens=20, do_sample=False)
            continuation = generated[0, inputs["input_ids"].shape[1] :]
            results.append({"continuation": tokenizer.decode(continuation, skip_special_tokens=True)})
        return results


class TokenClassification(TaskShape):
    """Words (whitespace-separated) with one tag each: token accuracy, and the accuracy at the evidence position
    where it is known (the ambiguous word of the synthetic tagging task). A tokenizer that adds sentence markers
    (ELMo's `<S>`, `</S>`) gets no tag there (-100)."""

    layout = TASK_LAYOUTS["token_classification"]
    label_kinds = (TOKEN_CLASS,)
    reported_metrics = ("accuracy", "ambiguous_accuracy")
    streams = True

    def encoder(self, data, tokenizer, config, head, max_length=None):
        kwargs = {"truncation": max_length is not None, "max_length": max_length}
        markers = task_tokenizer(tokenizer).sentence_markers

        def encode(batch: dict[str, list]) -> dict[str, list]:
            encoded = dict(tokenizer(batch[data.text_column], **kwargs))
            tags = batch[data.label_column]
            encoded["labels"] = [[-100, *row, -100] for row in tags] if markers else [list(row) for row in tags]
            return encoded

        return encode

    @torch.no_grad()
    def predict(self, model, tokenizer, head, texts, pairs=None, top_k=5):
        inputs = model_inputs(head, tokenizer, texts, None, model.device)
        predicted = model(**inputs).logits.argmax(dim=-1)
        offset = 1 if task_tokenizer(tokenizer).sentence_markers else 0  # after the start marker
        results = []
        for row, text in enumerate(texts):
            words = text.split()
            tags = [model.config.id2label[int(i)] for i in predicted[row, offset : offset + len(words)]]
            results.append({"tags": list(zip(words, tags, strict=False))})
        return results

    def extra_metrics(self, model, head, encoded_eval, data):
        if data.evidence_column is None or data.evidence_column not in encoded_eval.column_names:
            return {}
        offset = 1 if encoded_eval[0]["labels"][0] == -100 else 0
        return {"ambiguous_accuracy": token_accuracy_at(model, encoded_eval, data.evidence_column, offset=offset)}


class FewShotClassification(TaskShape):
    """N-way K-shot classification (Proto-HATT, HAPN): instances are a text (with, for relations, the head and tail
    entity's word index in `head` / `tail` columns) and a class name; held-out classes never occur in training.
    The Trainer's items are episodes (`hf_attn.data.episodes.EpisodeDataset`): the model's `num_ways`,
    `num_shots`, `num_queries` per class, with the support noise of `TaskData.episode_settings`; an epoch is as many
    episodes as there are training instances, drawn anew each epoch; the held-out episodes are a fixed, seeded
    set. Reports the accuracy averaged over the held-out episodes with its 95% interval (`accuracy_ci95`), and for
    a model with word attention, the share of it on the words that carry the class (`hit_rate`, `evidence_mass`)
    where the task knows them."""

    layout = TASK_LAYOUTS["few_shot"]
    reported_metrics = ("accuracy", "accuracy_ci95", *EVIDENCE_METRICS)
    label_kinds = (EPISODE,)
    needs_ahead = "the instances of every class, to draw episodes from"
    episodic = True
    input_kinds = (Episodes,)

    def label_names(self, data):
        return None  # classes are names, new at test time: no label set in the config

    def encoder(self, data, tokenizer, config, head, max_length=None):
        longest = max_length or config.max_sentence_length
        positions = config.use_entity_positions
        if positions and not {"head", "tail"} <= set(data.train.column_names):
            raise ValueError(
                f"{type(config).__name__} reads entity positions (use_entity_positions): the data needs `head` and "
                "`tail` columns (the word index of each entity, as FewRel's `h` and `t`), or set "
                "--config use_entity_positions=false."
            )

        def encode(batch: dict[str, list]) -> dict[str, list]:
            encoded = tokenizer(batch[data.text_column], truncation=True, max_length=longest)
            rows = {
                "input_ids": encoded["input_ids"],
                "attention_mask": encoded["attention_mask"],
                CLASS_COLUMN: [str(label) for label in batch[data.label_column]],
            }
            if positions:
                rows["entity_positions"] = [
                    entity_token_positions(encoded, i, (head, tail), len(ids))
                    for i, (ids, head, tail) in enumerate(zip(encoded["input_ids"], batch["head"], batch["tail"],
                                                              strict=True))
                ]  # fmt: skip
            return rows

        return encode

    def metrics(self, head, config, tokenizer, data=None):
        return compute_episode_metrics

    def episodes(self, split: Dataset, config: PreTrainedConfig, data: TaskData, count: int, seed: int,
                 fixed: bool, ways: int | None = None) -> Any:  # fmt: skip
        return EpisodeDataset(
            split, ways or config.num_ways, config.num_shots, config.num_queries, count, seed=seed,
            noise_rate=data.episode_settings.get("noise_rate", 0.0), fixed=fixed,
        )  # fmt: skip

    @staticmethod
    def training_ways(split: Dataset, config: PreTrainedConfig, data: TaskData) -> int:
        """N of the training episodes: `--train_ways` where given, else the model's `num_ways`. The FewRel
        framework trains prototypical models on 20-way episodes and scores 5-way ones (thunlp/FewRel and
        HATT-Proto `train.py`: `framework.train(model, model_name, 4, 20, N, K, 5)`, B = 4, N_for_train = 20): more
        classes an episode make a harder training task. A split with fewer classes trains on all of them, said once,
        so that one recipe serves FewRel's 64 training relations and a smaller set alike."""
        wanted = data.episode_settings.get("train_ways") or config.num_ways
        available = len(eligible_classes(class_rows(split), config.num_shots, config.num_queries))
        if wanted > available >= config.num_ways:
            print(
                f"[hf-attn] --train_ways {wanted}: the training split has {available} classes of at least "
                f"{config.num_shots + config.num_queries} instances (K + Q); training episodes are {available}-way.",
                flush=True,
            )
            return available
        return wanted

    def trainer(self, args, model, head, tokenizer, data, train_split, eval_split, callbacks):
        config = model.config
        callbacks = list(callbacks)
        train_episodes = None
        if train_split is not None:
            ways = self.training_ways(train_split, config, data)
            train_episodes = self.episodes(train_split, config, data, len(train_split), args.seed, fixed=False,
                                           ways=ways)  # fmt: skip
            callbacks.append(EpisodeEpochCallback(train_episodes))
        eval_episodes = self.episodes(eval_split, config, data, data.episode_settings.get("eval_episodes", 500),
                                      args.seed + 1, fixed=True)  # fmt: skip
        return super().trainer(args, model, head, tokenizer, data, train_episodes, eval_episodes, callbacks)

    def extra_metrics(self, model, head, encoded_eval, data):
        if data.evidence_column is None or head.evidence_field is None:  # e.g. Proto-HATT: maps over shots
            return {}
        count = min(data.episode_settings.get("eval_episodes", 500), 100)
        episodes = self.episodes(encoded_eval, model.config, data, count, seed=1, fixed=True)
        collator = head.inputs.collator(model.config)
        evidence = list(encoded_eval[data.evidence_column])  # read row by row below: a plain list
        return word_attention_on_evidence(model, episodes, evidence, collator, head.evidence_field)

    def headline(self, metrics):
        return (
            f"held-out accuracy {metrics['accuracy']:.4f} ± {metrics.get('accuracy_ci95', float('nan')):.4f} over "
            f"{metrics.get('episodes', 0):.0f} episodes"
        )

    def predict(self, model, tokenizer, head, texts, pairs=None, top_k=5):
        raise ValueError(FEW_SHOT_PREDICTION)


class EpisodeEpochCallback(TrainerCallback):
    """New training episodes each epoch: sets the episode dataset's epoch when `Trainer` begins one (accelerate
    tells only iterable datasets about epochs)."""

    def __init__(self, dataset: Any) -> None:
        self.dataset = dataset

    def on_epoch_begin(self, args, state, control, **kwargs):
        self.dataset.set_epoch(math.floor(state.epoch + 1e-6))


def encode_split(
    split: Dataset,
    encode: Callable[[dict[str, list]], dict[str, list]],
    keep: Sequence[str] = (),
    key: str | None = None,
    workers: int | None = None,
) -> tuple[Dataset, bool]:
    """`split` encoded by a shape's `encoder` (batched `map`, on `workers` processes:
    `hf_attn.data.cache.map_workers`), its other columns dropped except `keep`, and whether the `datasets` cache held
    it already. `key`: the encoding's fingerprint (`encoding_key`), without which `datasets` fingerprints the function
    itself."""
    names = split.column_names if split.column_names is not None else list(next(iter(split.take(1)), {}))  # a stream
    remove = [name for name in names if name not in keep]
    if key is None:
        return split.map(encode, batched=True, remove_columns=remove), False
    return cached_map(split, encode, key, "Encoding", workers, remove_columns=remove)


class ConfigReads:
    """A config that records the fields read from it: what an encoder's output depends on (`encoding_key`)."""

    def __init__(self, config: PreTrainedConfig) -> None:
        self.config = config
        self.read: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:  # only for names that are not this object's own (config, read)
        value = getattr(self.config, name)
        self.read[name] = value
        return value


def encoding_key(
    split: Dataset, shape: TaskShape, data: TaskData, tokenizer: PreTrainedTokenizerBase, config: PreTrainedConfig,
    head: Head, max_length: int | None,
) -> str:  # fmt: skip
    """The fingerprint of `split` encoded by `shape.encoder`: the split's own, the tokenizer (vocabulary, pipeline and
    options), the head, the columns, the length limit, the encoder's code and the config fields it reads (found by
    encoding two rows with a `ConfigReads`): a model of another size reuses the encoding, other labels do not."""
    reads = ConfigReads(config)
    probe = shape.encoder(data, tokenizer, reads, head, max_length)
    probe(split[: min(2, len(split))])
    columns = (data.text_column, data.pair_column, data.label_column, data.evidence_column, data.tokenizer_columns)
    return fingerprint(
        "encoding", split._fingerprint, shape.name, head.model_class.__name__, tokenizer_fingerprint(tokenizer),
        reads.read, max_length,
        columns, probe.__code__.co_code,
    )  # fmt: skip
