"""Pretrained word vectors (GloVe, word2vec, fastText) as the initial rows of a model's word embedding.

Every paper of this package started from pretrained vectors (Lin: word2vec/GloVe; HAN: word2vec; LSTMN and
AttentionXML: GloVe). Formats read:
- text, one word per line followed by its floats (GloVe, which has no header; word2vec's text format and fastText's
  `.vec`, whose first line is `count dimension`);
- word2vec's binary format (`.bin`): the header line, then per word its bytes, a space and `dimension` float32s.

Only the vocabulary's words are kept, so a 5 GB file costs one pass and a matrix of the vocabulary's size. A word
matches exactly, or, for a lower-casing tokenizer, by its lower-cased form (the first such line wins: files list
frequent words first). Rows of words the file does not cover are drawn from U[−a, a] with a chosen so that their
variance is that of the covered rows, as Kim (2014, §3.1: "words not present in the set of pre-trained words are
initialized randomly", variance matched) and the CNN/LSTM baselines after it do: left at the model's initialisation
(std 0.02), they would be two orders of magnitude smaller than the GloVe rows (std about 0.4) and barely move the
encoder. The padding row stays as the model set it.

Frozen (`--freeze_embeddings`), the whole table stays fixed and the uncovered rows keep the model's initialisation
(std 0.02, about nothing: an unknown word), as before the variance matching: frozen at the vectors' scale, each would
be fixed noise as loud as a real word. Measured on a 5-class review task with 8 distractor words a text, whose
vectors file covers 206 of 323 words (Lin, 12 epochs, held-out accuracy, seeds 0-3): frozen with the uncovered rows
at the model's scale 0.93-0.95; frozen at the vectors' scale 0.87-0.95; the covered rows frozen and the others
learning 0.82-0.87 from the vectors' scale, 0.80-0.90 from the model's (they overfit the training texts). So freezing
freezes every row. `tests/training/test_fitting.py` checks it on a harder copy (16 distractors, 176 words covered).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from ..utils.inputs import WORD_VECTORS, check_input


@dataclass
class Coverage:
    """How much of a vocabulary a vectors file covered."""

    path: str
    dimension: int
    covered: int
    vocabulary: int
    frozen: bool

    @property
    def fraction(self) -> float:
        return self.covered / self.vocabulary if self.vocabulary else 0.0

    def summary(self) -> str:
        frozen = ", frozen" if self.frozen else ""
        return (
            f"{Path(self.path).name}: {self.covered} of {self.vocabulary} vocabulary words covered "
            f"({self.fraction:.1%}), {self.dimension}-d{frozen}"
        )


def _text_vectors(path: Path, wanted: dict[str, list[int]], lowercase: bool) -> tuple[dict[int, np.ndarray], int]:
    found: dict[int, np.ndarray] = {}
    dimension = 0
    first = None
    with path.open(encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, start=1):
            first = line.strip()[:40] if first is None else first
            parts = line.rstrip("\n").rstrip().split(" ")
            if number == 1 and len(parts) == 2 and all(part.isdigit() for part in parts):
                dimension = int(parts[1])  # word2vec text / fastText .vec header: count dimension
                continue
            if len(parts) < 2:
                continue
            word, values = parts[0], parts[1:]
            if not dimension and not _numbers(values):  # the first vector line decides: a CSV's is no vector
                raise ValueError(
                    f"--word_vectors {path} holds no word vectors: a vectors file has one `word v1 v2 …` line a word, "
                    f"separated by spaces (GloVe, word2vec or fastText text, or a word2vec .bin); line {number} reads "
                    f"{line.strip()[:40]!r}."
                )
            if not dimension:
                dimension = len(values)
            if len(values) != dimension:
                raise ValueError(
                    f"--word_vectors {path}: line {number} has {len(values)} values where the file has {dimension}."
                )
            try:
                _keep(word, values, wanted, lowercase, found)
            except ValueError:
                raise ValueError(
                    f"--word_vectors {path}: line {number} is not a word and its numbers (`word v1 v2 …`, separated "
                    "by spaces)."
                ) from None
    if not dimension:  # not one `word v1 v2 …` line: a CSV, a text, an empty file
        raise ValueError(
            f"--word_vectors {path} holds no word vectors: a vectors file has one `word v1 v2 …` line a word, "
            f"separated by spaces (GloVe, word2vec or fastText text, or a word2vec .bin); its first line reads "
            f"{first!r}."
        )
    return found, dimension


def _binary_vectors(path: Path, wanted: dict[str, list[int]], lowercase: bool) -> tuple[dict[int, np.ndarray], int]:
    found: dict[int, np.ndarray] = {}
    with path.open("rb") as handle:
        header = handle.readline().split()
        if len(header) != 2:
            raise ValueError(
                f"--word_vectors {path}: not a word2vec binary file (the first line must be 'count dimension')."
            )
        count, dimension = int(header[0]), int(header[1])
        width = 4 * dimension
        for number in range(count):
            word = bytearray()
            while (byte := handle.read(1)) != b" ":
                if not byte:
                    raise ValueError(f"--word_vectors {path}: ends inside word {number + 1} of {count}.")
                if byte != b"\n":  # some writers end each vector with a newline
                    word += byte
            raw = handle.read(width)
            if len(raw) != width:
                raise ValueError(f"--word_vectors {path}: ends inside the vector of word {number + 1} of {count}.")
            _keep(word.decode("utf-8", errors="replace"), np.frombuffer(raw, dtype="<f4"), wanted, lowercase, found)
    return found, dimension


def _numbers(values: list[str]) -> bool:
    try:
        np.asarray(values, dtype=np.float32)
    except ValueError:
        return False
    return True


def _keep(word: str, values, wanted: dict[str, list[int]], lowercase: bool, found: dict[int, np.ndarray]) -> None:
    key = word.lower() if lowercase else word
    for token_id in wanted.get(key, ()):
        if token_id not in found or word == key:  # an exact-case line beats an earlier other-case one
            found[token_id] = np.asarray(values, dtype=np.float32)


def read_word_vectors(
    path: str | Path, vocabulary: dict[str, int], lowercase: bool = False
) -> tuple[dict[int, np.ndarray], int]:
    """The vectors of `vocabulary`'s words found in `path` (token id -> vector), and the file's dimension."""
    path = Path(path)
    check_input("--word_vectors", path, WORD_VECTORS)
    wanted: dict[str, list[int]] = {}
    for word, token_id in vocabulary.items():
        wanted.setdefault(word.lower() if lowercase else word, []).append(token_id)
    with path.open("rb") as handle:
        head = handle.read(4096)
    binary = path.suffix == ".bin" or b"\x00" in head
    return (_binary_vectors if binary else _text_vectors)(path, wanted, lowercase)


def _lowercases(tokenizer: PreTrainedTokenizerBase) -> bool:
    normalizer = getattr(getattr(tokenizer, "backend_tokenizer", None), "normalizer", None)
    return normalizer is not None and "Lowercase" in repr(normalizer)


def initialise_embeddings(
    model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, path: str | Path, freeze: bool = False
) -> Coverage:
    """Copies the vectors of `path` into `model.get_input_embeddings()` for the words of `tokenizer` they cover;
    `freeze=True` keeps the whole embedding fixed during training, the uncovered rows at the model's initialisation
    (module docstring). Returns the coverage."""
    try:
        embedding = model.get_input_embeddings()
    except NotImplementedError:
        embedding = None
    if not isinstance(embedding, torch.nn.Embedding):
        raise ValueError(
            f"--word-vectors: {type(model).__name__} has no word embedding to initialise (it reads characters)."
        )
    specials = set(tokenizer.all_special_tokens)
    vocabulary = {word: index for word, index in tokenizer.get_vocab().items() if word not in specials}
    found, dimension = read_word_vectors(path, vocabulary, lowercase=_lowercases(tokenizer))
    if dimension != embedding.embedding_dim:
        raise ValueError(
            f"--word-vectors {path} holds {dimension}-d vectors but the model's word embedding is "
            f"{embedding.embedding_dim}-d: set the embedding size to {dimension} with --config."
        )
    with torch.no_grad():
        covered = [token_id for token_id in found if token_id < embedding.num_embeddings]
        if covered:
            rows = torch.from_numpy(np.stack([found[token_id] for token_id in covered]))
            weight = embedding.weight
            if not freeze:  # frozen, the uncovered rows keep the model's scale (module docstring)
                # Kim (2014): the words the file does not cover at the covered vectors' variance, U[−a, a], a = √3·σ.
                bound = math.sqrt(3.0) * rows.std().item()
                uncovered = sorted(set(vocabulary.values()) - set(covered))
                uncovered = [token_id for token_id in uncovered if token_id < embedding.num_embeddings]
                draw = torch.empty(len(uncovered), weight.shape[1]).uniform_(-bound, bound)
                weight[uncovered] = draw.to(weight.dtype)
            weight[covered] = rows.to(weight.dtype)
    if freeze:
        embedding.weight.requires_grad_(False)
    return Coverage(str(path), dimension, len(found), len(vocabulary), freeze)
