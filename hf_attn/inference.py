"""`hf-attn evaluate` and `hf-attn predict`: a trained model folder (or Hub id) on a dataset, or on a few texts.

Both find the model's head from its config (`architectures`), and the task shape from the head, so they take the
data options of `hf-attn train` (`--dataset`, the columns, `--eval_split`) and score exactly what training scored.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from datasets import Dataset
from transformers import AutoConfig, AutoTokenizer, PreTrainedModel, Seq2SeqTrainer, Trainer

from .data.files import load_splits, prepare_task_data
from .data.shapes import TASK_SHAPES, TaskShape
from .registry import Head, get_architecture


def load_trained(model_path: str) -> tuple[PreTrainedModel, Any, Head, TaskShape]:
    """The model saved at `model_path` (its head's class), its tokenizer, the head's registry entry and its shape."""
    config = AutoConfig.from_pretrained(model_path)
    architecture = get_architecture(config.model_type)
    class_name = (config.architectures or [None])[0]
    head = next((head for head in architecture.heads if head.model_class.__name__ == class_name), None)
    if head is None:
        raise ValueError(f"{model_path}: {class_name or 'the base model'} is not a task head of {architecture.name}.")
    try:
        tokenizer = AutoTokenizer.from_pretrained(model_path)
    except (OSError, ValueError) as error:
        raise ValueError(f"{model_path} has no tokenizer (save one with the model): {error}") from error
    shape = next(shape for shape in TASK_SHAPES.values() if shape.accepts(head))
    model = head.model_class.from_pretrained(model_path).eval()
    return model, tokenizer, head, shape


def _evaluation_split(options) -> Dataset:
    """The rows to score: a file whole, or a split of a folder / Hub dataset (`--eval_split`, else the first of
    validation, dev, valid, test)."""
    if Path(options.dataset).is_file():
        split, _, _ = load_splits(
            options.dataset, data_format=options.dataset_format, column_names=options.column_names,
            eval_dataset=options.dataset,
        )  # fmt: skip
        return split
    _, split, _ = load_splits(
        options.dataset, options.dataset_config, train_split=options.train_split, eval_split=options.eval_split,
        data_format=options.dataset_format, column_names=options.column_names,
    )  # fmt: skip
    return split


def evaluate(model_path: str, options, batch_size: int = 64, output_file: str | None = None) -> dict[str, float]:
    """Scores the model on `options.dataset` with its shape's metrics; writes them as JSON to `output_file`."""
    model, tokenizer, head, shape = load_trained(model_path)
    if options.dataset is None:
        raise ValueError("hf-attn evaluate needs --dataset (a file, a folder or a Hub id).")
    rows = _evaluation_split(options)
    label = options.label_column
    if label is None and shape.has_labels:
        label = next((name for name in ("label", "labels") if name in rows.column_names), "label")
    known = list(model.config.id2label.values()) if shape.has_labels else None
    data = prepare_task_data(
        rows, rows, shape.name, text_column=options.text_column,
        pair_column=options.target_column or options.text_pair_column,
        label_column=label if known else None, label_separator=options.label_separator, labels=known,
    )  # fmt: skip
    from .training import HfAttnTrainingArguments, _encode

    encode = shape.encoder(data, tokenizer, model.config, head, options.max_length)
    encoded = _encode(data.eval, encode)
    with tempfile.TemporaryDirectory() as scratch:
        args = HfAttnTrainingArguments(
            output_dir=scratch, per_device_eval_batch_size=batch_size, report_to="none",
            predict_with_generate=shape.generates(head), disable_tqdm=True,
        )  # fmt: skip
        beams = options.num_beams or model.generation_config.num_beams if shape.generates(head) else None
        shape.prepare(model, args, encoded, beams)
        trainer = (Seq2SeqTrainer if shape.generates(head) else Trainer)(
            model=model, args=args, eval_dataset=encoded, data_collator=shape.collator(tokenizer, model.config),
            compute_metrics=shape.metrics(head, model.config, tokenizer),
        )  # fmt: skip
        metrics = {key.removeprefix("eval_"): value for key, value in trainer.evaluate().items()}
    metrics = shape.finish_metrics(metrics)
    metrics["examples"] = len(encoded)
    if output_file:
        Path(output_file).write_text(json.dumps(metrics, indent=2))
    return metrics


def predict(model_path: str, texts: list[str], pairs: list[str] | None = None, top_k: int = 5) -> list[dict[str, Any]]:
    """The model's prediction for each text (a label and the top-attended tokens, a label set, a translation,
    tags or a continuation, by its shape)."""
    model, tokenizer, head, shape = load_trained(model_path)
    if pairs is not None and len(pairs) != len(texts):
        raise ValueError(f"--pair: {len(pairs)} second texts for {len(texts)} texts.")
    if head.inputs in ("sentence_pair", "document_pair") and pairs is None:
        raise ValueError(f"{type(model).__name__} reads pairs: give the second text with --pair.")
    return shape.predict(model, tokenizer, head, texts, pairs, top_k)
