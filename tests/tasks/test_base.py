"""The task-shape base (`hf_attn.tasks.base`): the labels a classifier learns (one label refused by name), a split
encoded by a shape's encoder with its other columns dropped, and the encoding's fingerprint, which changes with what
the encoder reads and with nothing else."""

from __future__ import annotations

import pytest

from hf_attn.data.task_data import TaskData, dataset_from_rows
from hf_attn.registry.table import ARCHITECTURES
from hf_attn.tasks import encode_split, encoding_key
from hf_attn.tasks.heads import TASK_SHAPES
from tests.helpers import tiny_config, tiny_model_and_tokenizer

SHAPE = TASK_SHAPES["classification"]
ARCHITECTURE, HEAD = next((row, head) for row in ARCHITECTURES.values() for head in SHAPE.heads(row)
                          if head.inputs.name == "sentence")  # fmt: skip


def reviews(labels=("neg", "pos")) -> TaskData:
    rows = dataset_from_rows({"text": ["the food was great", "the service was awful", "a fine meal"],
                              "label": [1, 0, 1], "note": ["a", "b", "c"]})  # fmt: skip
    return TaskData(train=rows, eval=rows, shape="classification", text_column="text", label_column="label",
                    labels=list(labels))  # fmt: skip


def test_one_label_cannot_train_a_classifier():
    assert SHAPE.label_names(reviews()) == ["neg", "pos"]
    with pytest.raises(ValueError, match="every training example has the label 'pos': a classifier needs two or more"):
        SHAPE.label_names(reviews(labels=("pos",)))


def test_a_split_is_encoded_and_its_fingerprint_follows_what_the_encoder_reads():
    _, tokenizer = tiny_model_and_tokenizer(ARCHITECTURE, HEAD)
    data = reviews()
    config = tiny_config(ARCHITECTURE, num_labels=2, vocab_size=max(len(tokenizer), 64))
    encode = SHAPE.encoder(data, tokenizer, config, HEAD)
    encoded, cached = encode_split(data.train, encode, keep=["note"])
    assert not cached and {"input_ids", "attention_mask", "labels", "note"} <= set(encoded.column_names)
    assert "text" not in encoded.column_names and encoded["labels"] == [1, 0, 1]
    key = encoding_key(data.train, SHAPE, data, tokenizer, config, HEAD, None)
    assert key == encoding_key(data.train, SHAPE, data, tokenizer, config, HEAD, None)
    bigger = tiny_config(ARCHITECTURE, num_labels=2, vocab_size=max(len(tokenizer), 64) + 7)  # a read-free change
    assert encoding_key(data.train, SHAPE, data, tokenizer, bigger, HEAD, None) == key
    assert encoding_key(data.train, SHAPE, data, tokenizer, config, HEAD, 2) != key  # truncation read
