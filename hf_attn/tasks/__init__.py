"""Task shapes: what a kind of task does to its data, its model and its metrics, once for every architecture.

(The data side of a shape, `TaskData` and its layout, is in `hf_attn.data.task_data`.)

The training pipeline (`hf_attn.commands.train`) knows no task: it asks the shape for the heads that fit, the texts a
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

The package, one module a job: `base` (the `TaskShape` base and the encoding steps every shape shares), one module a
shared shape (`classification`, `multi_label`, `seq2seq`, `language_modeling`, `token_classification`, `few_shot`),
and `heads`: which shape and which head for a config, a saved folder or a model, with every shape by name
(`TASK_SHAPES`, the folders' own included), used by training, evaluation, prediction and pictures alike.
"""

from __future__ import annotations

from .base import (
    ConfigReads,
    TaskShape,
    encode_split,
    encoding_key,
    encoding_parts,
    stream_shard_trainer,
    vocabulary_fields,
)
from .classification import Classification, PairClassification
from .few_shot import EpisodeEpochCallback, FewShotClassification
from .language_modeling import LanguageModeling
from .multi_label import MultiLabel
from .seq2seq import SequenceToSequence
from .token_classification import TokenClassification

__all__ = [
    "Classification",
    "ConfigReads",
    "EpisodeEpochCallback",
    "FewShotClassification",
    "LanguageModeling",
    "MultiLabel",
    "PairClassification",
    "SequenceToSequence",
    "TaskShape",
    "TokenClassification",
    "encode_split",
    "encoding_key",
    "encoding_parts",
    "stream_shard_trainer",
    "vocabulary_fields",
]
