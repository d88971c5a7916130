"""What a head reads and what its labels are: each one object, registered by name, that the rest of hf_attn asks
instead of comparing names.

- An `InputKind` (`Head.inputs`) owns a head's inputs: the model inputs it builds from raw texts (`encode`: what
  `predict`, the pipelines and the attention pictures feed the model), its collator (`collator`: padding), which
  mask governs each input tensor (`mask_of`: how padding is trimmed off an example), whether it reads a second
  text (`pair`), whether the generic attention view can draw it (`viewable`), and random inputs of given lengths
  (`example_inputs`: what the common tests feed every head).
- A `LabelKind` (`Head.labels`) owns a head's labels: random labels for example inputs (`example_labels`) and the
  logits' shape (`logits_shape`), the labels being one class, a class or vocabulary id per token, indicators or a
  class per query.
- What the keys of an attention map are (`MaskSpec`, `Architecture.attention_fields`) is `hf_attn.data.masks`; the
  random inputs of given lengths the kinds build on, `hf_attn.data.example_inputs`.

A kind is an object, one per class (`SENTENCE`, `DOCUMENT`, `EPISODES`, ... `CLASS`, `LABEL_SEQUENCE`, ...): code
asks it (`head.inputs.pair`) or compares it to another kind (`head.labels is LABEL_SEQUENCE`), never its name to a
string. A name is looked up once, where a string gives it (`get_input_kind`). A new kind is a subclass registered
from its own module (`MY_KIND = register_input_kind(MyKind())`, imported by the model folder's `architecture.py`,
whose row names it); nothing else changes (tests/registry/test_table.py adds one from a temporary folder).

Shape legend: B examples, T tokens, S sentences, C characters per word, Q queries, N classes, K shots.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import torch
from transformers import PreTrainedConfig, PreTrainedTokenizerBase

from ..layers.few_shot import EPISODE_CONFIG_FIELDS
from .collators import PaddingCollator, Seq2SeqCollator
from .example_inputs import document_sentence_lengths, documents, output_vocab_size, token_ids

# ---------------------------------------------------------------------------------------------------------------
# Input kinds
# ---------------------------------------------------------------------------------------------------------------


class InputKind:
    """What a head reads (module docstring). Subclasses set `name` and override what differs from one text of
    token ids (`input_ids`, `attention_mask` `(B, T)`)."""

    name: ClassVar[str]
    pair: ClassVar[bool] = False  # reads a second text (`pair_input_ids`, `pair_attention_mask`)
    # The config fields the kind reads (its encoding, collator, example inputs): the registry refuses a row whose
    # head of this kind has a config without one, naming it.
    config_fields: ClassVar[tuple[str, ...]] = ()
    viewable: ClassVar[bool] = True  # the generic attention view draws its maps over the text's tokens

    def __repr__(self) -> str:
        return f"<input kind {self.name}>"

    def __str__(self) -> str:  # messages name the kind
        return self.name

    def mask_of(self, name: str) -> str | None:
        """The mask whose positions input `name` has (`None`: none, e.g. entity positions)."""
        return name.replace("input_ids", "attention_mask") if "input_ids" in name or "attention_mask" in name else None

    def encode(
        self, tokenizer: PreTrainedTokenizerBase, texts: Sequence[str], pairs: Sequence[str] | None = None
    ) -> dict[str, torch.Tensor]:
        """The padded model inputs for raw `texts` (and their second texts, `pair_input_ids` / `pair_attention_mask`,
        for a pair kind): what `predict`, the pipelines and the attention pictures feed the model."""
        if self.pair and pairs is None:
            raise ValueError(f"{self.name} inputs are two texts: give the second ones (`pairs`, `--pair`).")
        inputs = dict(tokenizer(list(texts), return_tensors="pt", padding=True))
        if pairs is not None:
            second = tokenizer(list(pairs), return_tensors="pt", padding=True)
            inputs["pair_input_ids"], inputs["pair_attention_mask"] = second["input_ids"], second["attention_mask"]
        return {name: tensor for name, tensor in inputs.items() if name.endswith(("input_ids", "mask"))}

    def collator(self, config: PreTrainedConfig) -> PaddingCollator:
        """Pads a batch of encoded rows (each `*input_ids` with the config's padding id, masks with 0)."""
        return PaddingCollator(config.pad_token_id or 0)

    def example_inputs(
        self,
        config: PreTrainedConfig,
        lengths: Sequence[int],
        generator: torch.Generator,
        pair_lengths: Sequence[int] | None = None,
    ) -> dict[str, torch.Tensor]:
        """Random inputs with the given per-example lengths (0: an all-padding row); `pair_lengths` sets a second
        sequence's lengths (a pair's second text, a seq2seq target)."""
        input_ids, attention_mask = token_ids(config, lengths, generator)
        return {"input_ids": input_ids, "attention_mask": attention_mask}

    def label_mask(self, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        """The mask that per-token labels follow."""
        return inputs["attention_mask"]

    def select_example(self, inputs: dict[str, torch.Tensor], index: int) -> dict[str, torch.Tensor]:
        """Example `index` of a batch, trimmed on every axis to the extent of its own mask (its longest sequence; for
        documents also its last sentence), as if it had been padded alone."""
        single = {}
        for name, tensor in inputs.items():
            mask_name = self.mask_of(name)
            if mask_name is None:
                continue
            mask = inputs[mask_name][index].bool()
            extents = []
            for axis in range(mask.dim()):
                others = tuple(other for other in range(mask.dim()) if other != axis)
                used = mask.any(dim=others) if mask.dim() > 1 else mask
                extents.append(int(used.nonzero().max()) + 1 if used.any() else 1)
            single[name] = tensor[index : index + 1][(slice(None), *(slice(0, extent) for extent in extents))]
        return single


class Sentence(InputKind):
    """One text of token ids, `(B, T)`."""

    name = "sentence"


class SentencePair(Sentence):
    """Two texts (premise and hypothesis): `input_ids` and `pair_input_ids`, each `(B, T)`, padded apart."""

    name = "sentence_pair"
    pair = True

    def example_inputs(self, config, lengths, generator, pair_lengths=None):
        inputs = super().example_inputs(config, lengths, generator)
        second = pair_lengths or [max(n, 1) for n in reversed(lengths)]
        inputs["pair_input_ids"], inputs["pair_attention_mask"] = token_ids(config, second, generator)
        return inputs


class Document(InputKind):
    """Sentences of words, `(B, S, T)` (the document tokenizer splits them)."""

    name = "document"

    def example_inputs(self, config, lengths, generator, pair_lengths=None):
        pad = config.pad_token_id if config.pad_token_id is not None else 0
        ids, mask = documents([document_sentence_lengths(n) for n in lengths], config.vocab_size, pad, generator)
        return {"input_ids": ids, "attention_mask": mask}


class DocumentPair(Document):
    """Two documents (a text and its translation: BI-Attention's two views), each `(B, S, T)`."""

    name = "document_pair"
    pair = True

    def example_inputs(self, config, lengths, generator, pair_lengths=None):
        inputs = super().example_inputs(config, lengths, generator)
        second = super().example_inputs(config, pair_lengths or [max(n, 1) for n in reversed(lengths)], generator)
        inputs["pair_input_ids"], inputs["pair_attention_mask"] = second["input_ids"], second["attention_mask"]
        return inputs


class SourceAndTarget(InputKind):
    """A source text and a target read by a decoder: `input_ids` `(B, T)` and `decoder_input_ids` `(B, T')` (the
    labels, shifted, in training)."""

    name = "seq2seq"
    viewable = False  # the maps are over an output the model generates: the architectures draw their own

    def example_inputs(self, config, lengths, generator, pair_lengths=None):
        inputs = super().example_inputs(config, lengths, generator)
        second = pair_lengths or [max(n, 1) for n in reversed(lengths)]
        decoder_ids, decoder_mask = token_ids(config, second, generator, output_vocab_size(config))
        return {**inputs, "decoder_input_ids": decoder_ids, "decoder_attention_mask": decoder_mask}

    def collator(self, config):
        return Seq2SeqCollator(config.pad_token_id or 0, config.decoder_start_token_id)

    def label_mask(self, inputs):
        return inputs["decoder_attention_mask"]


FEW_SHOT_PREDICTION = (
    "A few-shot model labels texts among the classes of a support set: use "
    "`model.predict(support_texts, support_labels, query_texts, tokenizer)` or "
    '`pipeline("hf-attn-few-shot", model=...)` with `support_texts=` and `support_labels=`.'
)


class Episodes(InputKind):
    """Few-shot episodes: queries `(B, Q, T)` and a support set `(B, N, K, T)` (`support_input_ids`), with each
    text's head and tail entity positions (`entity_positions`, `support_entity_positions`) for relations."""

    name = "episodes"
    viewable = False  # a query is drawn with a support set: the few-shot architectures' own view
    config_fields = EPISODE_CONFIG_FIELDS  # N, K, queries, text width, entities: `layers.few_shot.EpisodeConfig`

    def encode(self, tokenizer, texts, pairs=None):
        raise ValueError(FEW_SHOT_PREDICTION)

    def collator(self, config):
        # A model without padding masks (an original's switch, `mask_padding=False`) reads every text padded to
        # max_sentence_length.
        width = None if getattr(config, "mask_padding", True) else config.max_sentence_length
        return PaddingCollator(config.pad_token_id or 0, width=width)

    def example_inputs(self, config, lengths, generator, pair_lengths=None):
        """One episode per length n: N = `num_ways` classes of K = `num_shots` support instances and `num_queries`
        queries per class, of lengths n, n − 1, n − 2 (at least 1) in turn; n = 0 makes every query of the episode
        all padding (support instances always have a token). With `use_entity_positions`, each instance's head and
        tail entity lie among its tokens."""
        ways, shots, queries = config.num_ways, config.num_shots, config.num_queries * config.num_ways
        support_lengths = [max(n - (i % 3), 1) for n in lengths for i in range(ways * shots)]
        query_lengths = [max(n - (i % 3), 1) if n else 0 for n in lengths for i in range(queries)]
        support_ids, support_mask = token_ids(config, support_lengths, generator)
        query_ids, query_mask = token_ids(config, query_lengths, generator)
        batch = len(lengths)
        inputs = {
            "input_ids": query_ids.view(batch, queries, -1),
            "attention_mask": query_mask.view(batch, queries, -1),
            "support_input_ids": support_ids.view(batch, ways, shots, -1),
            "support_attention_mask": support_mask.view(batch, ways, shots, -1),
        }
        if config.use_entity_positions:
            for prefix, mask in (("", inputs["attention_mask"]), ("support_", inputs["support_attention_mask"])):
                tokens = mask.sum(-1, keepdim=True).clamp(min=1)
                inputs[prefix + "entity_positions"] = (
                    torch.rand(*mask.shape[:-1], 2, generator=generator) * tokens
                ).long()
        return inputs

    def select_example(self, inputs, index):
        single = super().select_example(inputs, index)
        for name in [name for name in inputs if name.endswith("entity_positions")]:  # cut like their texts
            texts = single[name.replace("entity_positions", "input_ids")]
            single[name] = inputs[name][index : index + 1][tuple(slice(0, size) for size in texts.shape[:-1])]
        return single


# ---------------------------------------------------------------------------------------------------------------
# Label kinds
# ---------------------------------------------------------------------------------------------------------------


class LabelKind:
    """What a head's `labels` are (module docstring). Subclasses set `name` and the example labels and logits."""

    name: ClassVar[str]
    per_token: ClassVar[bool] = False  # a label per token (-100 at padding): token losses, scored per token

    def __repr__(self) -> str:
        return f"<label kind {self.name}>"

    def __str__(self) -> str:  # messages name the kind
        return self.name

    def example_labels(
        self,
        config: PreTrainedConfig,
        inputs: dict[str, torch.Tensor],
        input_kind: InputKind,
        generator: torch.Generator,
    ) -> torch.Tensor:
        raise NotImplementedError

    def logits_shape(
        self, config: PreTrainedConfig, inputs: dict[str, torch.Tensor], input_kind: InputKind
    ) -> tuple[int, ...]:
        raise NotImplementedError

    def label_set_targets(self, label_sets: list[list[int]], config: PreTrainedConfig) -> list[list]:
        """The `labels` of examples whose label sets are `label_sets` (label ids, in the order the head learns
        them), for a head that learns label sets (`hf_attn.tasks.MultiLabel`)."""
        raise ValueError(f"a {self.name} head does not learn label sets.")


class ClassLabels(LabelKind):
    """One class id per example, `(B,)`; logits `(B, num_labels)`."""

    name = "class"

    def example_labels(self, config, inputs, input_kind, generator):
        return torch.randint(0, config.num_labels, (inputs["input_ids"].size(0),), generator=generator)

    def logits_shape(self, config, inputs, input_kind):
        return (inputs["input_ids"].size(0), config.num_labels)


class MultiHot(ClassLabels):
    """Indicators of a label set, `(B, num_labels)` floats."""

    name = "multi_hot"

    def example_labels(self, config, inputs, input_kind, generator):
        return torch.randint(0, 2, (inputs["input_ids"].size(0), config.num_labels), generator=generator).float()

    def label_set_targets(self, label_sets, config):
        return [[float(index in row) for index in range(config.num_labels)] for row in label_sets]


class TokenClass(LabelKind):
    """A class id per token, `(B, T)`, -100 at padding; logits `(B, T, num_labels)`."""

    name = "token_class"
    per_token = True

    def classes(self, config: PreTrainedConfig) -> tuple[int, int]:
        """The range `[low, high)` of label ids."""
        return 0, config.num_labels

    def example_labels(self, config, inputs, input_kind, generator):
        mask = input_kind.label_mask(inputs)
        low, high = self.classes(config)
        return torch.randint(low, high, mask.shape, generator=generator).masked_fill(mask == 0, -100)

    def logits_shape(self, config, inputs, input_kind):
        mask = input_kind.label_mask(inputs)
        return (mask.size(0), mask.size(1), self.classes(config)[1])


class TokenVocabulary(TokenClass):
    """A vocabulary id per token (language models, seq2seq targets), `(B, T)`; logits over the output vocabulary."""

    name = "token_vocab"

    def classes(self, config):
        return 1, output_vocab_size(config)


class LabelSequence(TokenVocabulary):
    """Labels generated as a sequence: a target id per step, from the config's `target_vocab_size` (its
    `num_special_tokens` first, then the labels), ending with its `eos_token_id`."""

    name = "label_sequence"

    def label_set_targets(self, label_sets, config):
        specials = config.num_special_tokens  # [l_1, …, l_k, EOS]: target id = specials + label index
        return [[specials + index for index in row] + [config.eos_token_id] for row in label_sets]


class EpisodeLabels(LabelKind):
    """The index of each query's class among its episode's N, `(B, Q)`, -100 for an all-padding query; logits
    `(B, Q, N)`."""

    name = "episode"

    def example_labels(self, config, inputs, input_kind, generator):
        ways = inputs["support_input_ids"].size(1)
        labels = torch.randint(0, ways, inputs["input_ids"].shape[:2], generator=generator)
        return labels.masked_fill(~inputs["attention_mask"].bool().any(-1), -100)

    def logits_shape(self, config, inputs, input_kind):
        return (*inputs["input_ids"].shape[:2], inputs["support_input_ids"].size(1))


# ---------------------------------------------------------------------------------------------------------------
# The registries
# ---------------------------------------------------------------------------------------------------------------

INPUT_KINDS: dict[str, InputKind] = {}
LABEL_KINDS: dict[str, LabelKind] = {}


def register_input_kind(kind: InputKind) -> InputKind:
    """Registers `kind` under its name (again: replaced); returns it."""
    INPUT_KINDS[kind.name] = kind
    return kind


def register_label_kind(kind: LabelKind) -> LabelKind:
    """Registers `kind` under its name (again: replaced); returns it."""
    LABEL_KINDS[kind.name] = kind
    return kind


def _get(registry: dict[str, Any], name: str, what: str) -> Any:
    if name not in registry:
        raise ValueError(f"Unknown {what} kind {name!r}; registered: {', '.join(sorted(registry))}.")
    return registry[name]


def get_input_kind(name: str) -> InputKind:
    """The registered input kind of that name (where a string gives one); a ValueError names the registered ones."""
    return _get(INPUT_KINDS, name, "input")


def get_label_kind(name: str) -> LabelKind:
    """The registered label kind of that name (where a string gives one); a ValueError names the registered ones."""
    return _get(LABEL_KINDS, name, "label")


SENTENCE = register_input_kind(Sentence())
SENTENCE_PAIR = register_input_kind(SentencePair())
DOCUMENT = register_input_kind(Document())
DOCUMENT_PAIR = register_input_kind(DocumentPair())
SEQ2SEQ = register_input_kind(SourceAndTarget())
EPISODES = register_input_kind(Episodes())

CLASS = register_label_kind(ClassLabels())
MULTI_HOT = register_label_kind(MultiHot())
TOKEN_CLASS = register_label_kind(TokenClass())
TOKEN_VOCAB = register_label_kind(TokenVocabulary())
LABEL_SEQUENCE = register_label_kind(LabelSequence())
EPISODE = register_label_kind(EpisodeLabels())
