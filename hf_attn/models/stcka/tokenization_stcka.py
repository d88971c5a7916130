"""Knowledge retrieval for STCKA (Chen et al., AAAI 2019, §3.1): a short text's concept set, and a tokenizer that
returns it beside the words.

`ConceptSource` is an isA knowledge base, entity -> [(concept, score), ...], as Probase / CN-Probase dumps give it:

    source = ConceptSource.from_file("isa.tsv")  # `entity<TAB>concept<TAB>score` lines (or a JSON object)
    source.concepts("apple unveils a new iphone")  # ['company', 'fruit', 'device', 'product']

Entity linking is a longest match of known entity strings over the text's words, left to right (a multi-word entity
such as "new york" wins over "new"); conceptualisation takes each linked entity's concepts with a score of at least
`min_score`, the best first, and the set keeps the `max_concepts` best-scored concepts (each concept once, at its best
score). Matching is case-insensitive unless `lowercase=False`.

`ConceptTokenizerFast` is the word-level tokenizer with a concept vocabulary and a concept source: a call returns
`input_ids`/`attention_mask` for the words and `concept_input_ids`/`concept_attention_mask` for each text's concept
set (right-padded; an empty set is one padding position). Concept sets may also come with the call
(`concepts=[["company", "fruit"], ...]`, or space-separated strings: a dataset's concept column), as the unofficial
code's TSV files give them. Built with `max_word_length`, it also returns each word's and each concept's characters
(UTF-8 bytes + 1, 0 pads, at most `max_word_length`) as `char_input_ids`/`char_attention_mask` `(B, T, W)` and
`concept_char_input_ids`/`concept_char_attention_mask` `(B, M, W)`, for the model's character features: an unknown
word keeps its spelling. Both vocabularies, the source and the option are saved in `tokenizer_config.json`, so
`AutoTokenizer.from_pretrained` restores them.

The file imports only torch, transformers and two tokenizer modules of hf_attn's; it is registered with
`AutoTokenizer` through the folder's row (its tokenizer kind, `kinds.py`, which also trains and builds it), and
written next to a saved model for `trust_remote_code` users (`hf_attn.utils.remote_code`). What hf_attn's task
shapes and pictures ask of a tokenizer (the contract, `hf_attn.tokenization.base.TaskTokenizer`) it answers itself:
`config_fields()` and `tokens_of()`.

Shape legend: B texts, T words, M concepts, W characters per word.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import torch
from transformers import BatchEncoding

from hf_attn.tokenization.base import HfAttnTokenizerFast, replace_lone_surrogates
from hf_attn.tokenization.document import pad_nested

CONCEPT_PAD = "[PAD]"
CONCEPT_UNK = "[UNK]"


@dataclass
class ConceptSource:
    """An isA knowledge base with entity linking (longest match) and conceptualisation (module docstring).

    Attributes:
        entities: entity string (its words joined by single spaces) -> [(concept, score), ...].
        max_concepts: keep at most this many concepts per text (the best-scored); `None`: all.
        min_score: drop concepts scored below it.
        lowercase: match entities and concepts case-insensitively.
    """

    entities: dict[str, list[tuple[str, float]]]
    max_concepts: int | None = None
    min_score: float = 0.0
    lowercase: bool = True
    _longest: int = field(init=False, repr=False, default=1)

    def __post_init__(self) -> None:
        if self.max_concepts is not None and self.max_concepts < 0:
            raise ValueError(f"max_concepts must be None or at least 0, got {self.max_concepts}.")
        normalised: dict[str, list[tuple[str, float]]] = {}
        for entity, concepts in self.entities.items():
            key = self._normalise(entity)
            if not key:
                continue
            merged = normalised.setdefault(key, [])
            merged.extend(
                (self._normalise(concept), _score(score, f"entity {entity!r}")) for concept, score in concepts
            )
        for key, concepts in normalised.items():  # the best first; a concept named twice keeps its best score
            best: dict[str, float] = {}
            for concept, score in concepts:
                if concept and score > best.get(concept, float("-inf")):
                    best[concept] = score
            normalised[key] = sorted(best.items(), key=lambda item: -item[1])
        self.entities = normalised
        self._longest = max((len(key.split(" ")) for key in normalised), default=1)

    def _normalise(self, text: str) -> str:
        text = " ".join(str(text).split())
        return text.lower() if self.lowercase else text

    @classmethod
    def from_file(
        cls, path: str | Path, max_concepts: int | None = None, min_score: float = 0.0, lowercase: bool = True
    ) -> ConceptSource:
        """Reads a TSV of `entity<TAB>concept<TAB>score` lines (the score optional, default 1; a header line
        `entity concept score` is skipped; a field may be of any length) or a JSON object
        `{entity: [[concept, score], ...] | {concept: score}}`, in UTF-8.

        Raises `ValueError` naming the file and the line of the first fault: bytes that are not UTF-8, invalid JSON,
        a missing column, a score that is not a number or not finite (a `nan` would drop its concept and an `inf`
        outrank every other, both silently)."""
        path = Path(path)
        entities: dict[str, list[tuple[str, float]]] = {}
        if path.suffix == ".json":
            data = path.read_bytes()
            try:
                text = data.decode("utf-8-sig")
            except UnicodeDecodeError as error:
                _not_utf8(path, data.count(b"\n", 0, error.start) + 1, error, data)
            try:
                parsed = json.loads(text)
            except json.JSONDecodeError as error:
                raise ValueError(f"{path}:{error.lineno}: invalid JSON ({error.msg}, column {error.colno}).") from None
            if not isinstance(parsed, dict):
                raise ValueError(f"{path}: expected a JSON object {{entity: [[concept, score], ...]}}, got a "
                                 f"{type(parsed).__name__}.")  # fmt: skip
            for entity, concepts in parsed.items():
                where = f"{path}:{_json_line(text, entity)}: entity {entity!r}"
                pairs = concepts.items() if isinstance(concepts, dict) else concepts
                entities[entity] = []
                for pair in pairs if isinstance(pairs, Iterable) and not isinstance(pairs, str) else [pairs]:
                    if isinstance(pair, str) or not isinstance(pair, list | tuple) or len(pair) != 2:
                        raise ValueError(f"{where}: expected [concept, score] pairs or {{concept: score}}, got "
                                         f"{pair!r}.")  # fmt: skip
                    entities[entity].append((pair[0], _score(pair[1], where)))
        else:  # line by line (a Probase dump is gigabytes): split on b"\n" only, decoded one line at a time
            with open(path, "rb") as handle:
                for number, raw in enumerate(handle, 1):
                    try:
                        line = raw.decode("utf-8-sig" if number == 1 else "utf-8").rstrip("\r\n")
                    except UnicodeDecodeError as error:
                        _not_utf8(path, number, error, raw)
                    row = line.split("\t")
                    if not row[0].strip() or (number == 1 and row[:2] == ["entity", "concept"]):
                        continue
                    if len(row) < 2:
                        raise ValueError(
                            f"{path}:{number}: expected entity<TAB>concept[<TAB>score], got {line[:200]!r}."
                        )
                    score = _score(row[2], f"{path}:{number}") if len(row) > 2 and row[2].strip() else 1.0
                    entities.setdefault(row[0], []).append((row[1], score))
        return cls(entities, max_concepts=max_concepts, min_score=min_score, lowercase=lowercase)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able form (`from_dict` reads it back): what `ConceptTokenizerFast` saves."""
        return {
            "entities": {entity: [list(pair) for pair in concepts] for entity, concepts in self.entities.items()},
            "max_concepts": self.max_concepts,
            "min_score": self.min_score,
            "lowercase": self.lowercase,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ConceptSource:
        entities = {entity: [(concept, float(score)) for concept, score in concepts]
                    for entity, concepts in data.get("entities", {}).items()}  # fmt: skip
        return cls(entities, data.get("max_concepts"), data.get("min_score", 0.0), data.get("lowercase", True))

    def link(self, words: Sequence[str]) -> list[tuple[int, int, str]]:
        """Entity linking: `(start, end, entity)` word spans, the longest known entity at each position, left to
        right, without overlaps."""
        words = [self._normalise(word) for word in words]
        spans, start = [], 0
        while start < len(words):
            for end in range(min(len(words), start + self._longest), start, -1):
                candidate = " ".join(words[start:end])
                if candidate in self.entities:
                    spans.append((start, end, candidate))
                    start = end
                    break
            else:
                start += 1
        return spans

    def scored_concepts(self, words: Sequence[str]) -> list[tuple[str, float]]:
        """Conceptualisation: the concepts of every linked entity scored at least `min_score`, each once at its
        best score, the best first (ties: first linked first), at most `max_concepts`."""
        best: dict[str, float] = {}
        for _, _, entity in self.link(words):
            for concept, score in self.entities[entity]:
                if score >= self.min_score and score > best.get(concept, float("-inf")):
                    best[concept] = score
        ranked = sorted(best.items(), key=lambda item: -item[1])  # stable: ties keep the linking order
        return ranked[: self.max_concepts] if self.max_concepts is not None else ranked

    def concepts(self, text: str | Sequence[str]) -> list[str]:
        """The concept set of a text (split on whitespace) or of its words."""
        words = text.split() if isinstance(text, str) else text
        return [concept for concept, _ in self.scored_concepts(words)]


def _score(value: Any, where: str) -> float:
    """A concept's score as a finite float; a `ValueError` naming `where` otherwise."""
    try:
        score = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: the score {value!r} is not a number.") from None
    if not math.isfinite(score):
        raise ValueError(
            f"{where}: the score {value!r} is not finite; scores rank concepts and must be finite numbers."
        )
    return score


def _not_utf8(path: Path, line: int, error: UnicodeDecodeError, data: bytes) -> NoReturn:
    """Raises the `ValueError` of a knowledge base that is not UTF-8, naming the file, the line and the bytes."""
    raise ValueError(
        f"{path}:{line}: not UTF-8 ({error.reason}: {data[error.start : error.end]!r}). Save the knowledge base "
        "as UTF-8 (e.g. `iconv -f latin1 -t utf-8`)."
    ) from None


def _json_line(text: str, key: str) -> int | str:
    """The line of a JSON document where the object key `key` first appears (best effort: `?` when not found)."""
    index = text.find(json.dumps(key, ensure_ascii=False) + ":")
    if index < 0:
        index = text.find(json.dumps(key) + ":")
    return text.count("\n", 0, index) + 1 if index >= 0 else "?"


class ConceptTokenizerFast(HfAttnTokenizerFast):
    """Word ids and concept-set ids: `input_ids`/`attention_mask` `(B, T)` and `concept_input_ids`/
    `concept_attention_mask` `(B, M)` (module docstring).

    Options (in `init_kwargs`, saved to `tokenizer_config.json`): `concept_vocab` (the concept of each id, with
    `concept_pad` and `concept_unk` among them, `[PAD]` and `[UNK]` unless given; not `*_token` keys, which
    transformers takes for its own special tokens) and `knowledge_base`
    (`ConceptSource.to_dict()`, which the `concept_source` property reads; `None`: concept sets come with the call).
    """

    model_input_names = ["input_ids", "attention_mask", "concept_input_ids", "concept_attention_mask"]  # noqa: RUF012

    # No `__init__` of our own (see `DocumentTokenizerFast`): the options live in `init_kwargs`.

    @property
    def concept_vocab(self) -> list[str]:
        return list(self.init_kwargs.get("concept_vocab") or [self.concept_pad_token, self.concept_unk_token])

    @property
    def max_word_length(self) -> int | None:
        """Characters kept per word or concept (`None`: no character ids)."""
        return self.init_kwargs.get("max_word_length")

    @property
    def concept_pad_token(self) -> str:
        return self.init_kwargs.get("concept_pad") or CONCEPT_PAD

    @property
    def concept_unk_token(self) -> str:
        return self.init_kwargs.get("concept_unk") or CONCEPT_UNK

    @property
    def concept_to_id(self) -> dict[str, int]:
        cached = getattr(self, "_concept_to_id", None)
        if cached is None or len(cached) != len(self.concept_vocab):
            cached = {concept: index for index, concept in enumerate(self.concept_vocab)}
            self._concept_to_id = cached
        return cached

    @property
    def concept_source(self) -> ConceptSource | None:
        data = self.init_kwargs.get("knowledge_base")
        if data is None:
            return None
        cached = getattr(self, "_concept_source", None)
        if cached is None:
            cached = self._concept_source = ConceptSource.from_dict(data)
        return cached

    @property
    def concept_pad_token_id(self) -> int:
        return self.concept_to_id[self.concept_pad_token]

    def config_fields(self) -> dict[str, Any]:
        """The config fields the vocabularies set (`hf_attn.tasks.vocabulary_fields`): the words' size and padding id,
        and the concept vocabulary's."""
        return {
            "vocab_size": len(self),
            "pad_token_id": self.pad_token_id,
            "concept_vocab_size": len(self.concept_vocab),
            "concept_pad_token_id": self.concept_pad_token_id,
        }

    def tokens_of(self, input_name: str, ids: Sequence[int]) -> list[str] | None:
        """The concepts of `concept_input_ids`' ids (`hf_attn.tokenization.bpe.ids_to_tokens`); `None` for the words,
        which read as any vocabulary's."""
        if input_name != "concept_input_ids":
            return None
        vocabulary = self.concept_vocab
        return [vocabulary[index] for index in ids]

    def words(self, text: str) -> list[str]:
        """The words of `text` as this tokenizer splits them (its normaliser and pre-tokeniser)."""
        backend = self.backend_tokenizer
        normalised = backend.normalizer.normalize_str(text) if backend.normalizer else text
        if backend.pre_tokenizer is None:
            return normalised.split()
        return [word for word, _ in backend.pre_tokenizer.pre_tokenize_str(normalised)]

    def concept_ids(self, concepts: Sequence[str]) -> list[int]:
        """Ids of concept strings (unknown ones: `[UNK]`)."""
        source = self.concept_source
        lowercase = source.lowercase if source is not None else True
        unknown = self.concept_to_id[self.concept_unk_token]
        return [self.concept_to_id.get(concept.lower() if lowercase else concept, unknown) for concept in concepts]

    def concept_sets(
        self, texts: Sequence[str], concepts: Sequence[str | Sequence[str]] | None = None
    ) -> list[list[str]]:
        """Each text's concept set: given (a list of concepts, or a space-separated string), or linked by the
        concept source."""
        if concepts is not None:
            if len(concepts) != len(texts):
                raise ValueError(f"`concepts` must hold one concept set per text: {len(concepts)} for {len(texts)}.")
            return [item.split() if isinstance(item, str) else list(item) for item in concepts]
        source = self.concept_source
        if source is None:
            raise ValueError(
                "This tokenizer has no concept source: pass each text's concepts (`concepts=`; hf-attn train and "
                "evaluate: --concept_column COLUMN), or build it with a knowledge base (`train_concept_tokenizer(..., "
                "concept_source=ConceptSource.from_file(...))`; hf-attn train: --concepts FILE)."
            )
        return [source.concepts(self.words(text)) for text in texts]

    def __call__(
        self,
        text: str | Sequence[str] | None = None,
        text_pair: Any = None,
        concepts: Sequence[str | Sequence[str]] | None = None,
        padding: bool | str = False,
        return_tensors: str | None = None,
        **kwargs: Any,
    ) -> BatchEncoding:
        """Tokenises a text or a batch: the word-level encoding plus `concept_input_ids`/`concept_attention_mask`.

        `concepts` gives each text's concept set (for one text: a list of concepts or a string); otherwise the
        concept source links them. Padding (or `return_tensors="pt"`) right-pads the concept sets with `[PAD]` to
        the batch's largest, at least one position.
        """
        if text_pair is not None:
            raise ValueError("ConceptTokenizerFast encodes single short texts; `text_pair` is not supported.")
        if return_tensors not in (None, "pt"):
            raise ValueError(f"ConceptTokenizerFast returns PyTorch tensors only, got {return_tensors!r}.")
        single = isinstance(text, str)
        texts = [replace_lone_surrogates(item) for item in ([text] if single else list(text))]
        if single and concepts is not None and (isinstance(concepts, str) or
                                                all(isinstance(item, str) for item in concepts)):  # fmt: skip
            concepts = [concepts]
        characters = self.max_word_length is not None
        wants_offsets = kwargs.pop("return_offsets_mapping", False)
        encoding = super().__call__(
            text, padding=padding, return_tensors=return_tensors, return_offsets_mapping=characters or wants_offsets,
            **kwargs,
        )  # fmt: skip
        sets = self.concept_sets(texts, concepts)
        extra = {"concept_input_ids": [self.concept_ids(concept_set) for concept_set in sets]}
        if characters:  # each token's own characters (its span of the text: an unknown word keeps its spelling)
            offsets = encoding["offset_mapping"]
            offsets = offsets.tolist() if isinstance(offsets, torch.Tensor) else offsets
            if single and (not offsets or not isinstance(offsets[0], list | tuple) or
                           not isinstance(offsets[0][0], list | tuple)):  # fmt: skip
                offsets = [offsets]  # one text's (T, 2) spans
            extra["char_input_ids"] = [[self.spell(_span(item, span)) for span in spans]
                                       for item, spans in zip(texts, offsets, strict=True)]  # fmt: skip
            extra["concept_char_input_ids"] = [
                [self.spell(concept) for concept in concept_set] for concept_set in sets
            ]
            if not wants_offsets:
                del encoding["offset_mapping"]
        for name, rows in extra.items():
            masks = _ones_like(rows)
            if padding or return_tensors is not None:  # a text's characters cover its padded word positions too
                pad = self.concept_pad_token_id if name == "concept_input_ids" else 0
                depth = 2 if name == "concept_input_ids" else 3
                rows, masks = pad_nested(rows, pad, min_dims=depth), pad_nested(masks, 0, min_dims=depth)
                if return_tensors is None:
                    rows, masks = rows.tolist(), masks.tolist()
            if single and return_tensors is None:
                rows, masks = rows[0], masks[0]
            encoding[name] = rows
            encoding[name.replace("input_ids", "attention_mask")] = masks
        return encoding

    def spell(self, word: str) -> list[int]:
        """A word's characters as ids: its UTF-8 bytes + 1, at most `max_word_length` (a padding position: none)."""
        return [byte + 1 for byte in word.encode("utf-8", "replace")[: self.max_word_length]]


def _span(text: str, span: Any) -> str:
    """The text of a token's `(start, end)` offsets; a padding position (no span) has none."""
    return text[span[0] : span[1]] if isinstance(span, list | tuple) and len(span) == 2 else ""


def _ones_like(rows: list) -> list:
    """A 1 for every leaf of nested lists."""
    return [_ones_like(row) if isinstance(row, list) else 1 for row in rows]


def concept_vocabulary(
    concept_sets: Iterable[Sequence[str]], min_frequency: int = 1, lowercase: bool = True
) -> list[str]:
    """`[PAD]`, `[UNK]`, then the concepts of `concept_sets` by decreasing frequency (ties alphabetical)."""
    counts = Counter(
        concept.lower() if lowercase else concept for concept_set in concept_sets for concept in concept_set
    )
    ranked = sorted((concept for concept, count in counts.items() if count >= min_frequency),
                    key=lambda concept: (-counts[concept], concept))  # fmt: skip
    return [CONCEPT_PAD, CONCEPT_UNK] + [concept for concept in ranked if concept not in (CONCEPT_PAD, CONCEPT_UNK)]
