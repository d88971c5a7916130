"""Deterministic synthetic tasks, built so that the evidence for each label is known.

`cue_word_sentiment`: sentences from a small grammar of neutral phrases with ONE sentiment cue word at a random
position ("... the service was wonderful and the ..."); the cue decides the label, "not" right before it flips the
label. `cue_index` is the cue's word position, so an attention map can be scored against it.

`cue_word_pairs`: an entailment-like sentence-pair task. The premise lists a few coloured objects ("the red cat and
the blue box ..."), the hypothesis claims one colour ("the cat is red"): entailment when the premise agrees,
contradiction when it gives the object another colour, neutral when the object is absent.

All generators take a seed and return the same `datasets.Dataset` for the same arguments, on any machine.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from datasets import Dataset

CUE_SENTIMENT_LABELS = ["negative", "positive"]
PAIR_LABELS = ["entailment", "neutral", "contradiction"]

POSITIVE_CUES = ["good", "great", "excellent", "wonderful", "delightful", "superb", "pleasant", "lovely"]
NEGATIVE_CUES = ["bad", "awful", "terrible", "horrible", "dreadful", "poor", "boring", "disappointing"]
NEGATION = "not"

_SUBJECTS = ["the film", "the food", "the service", "our waiter", "the plot", "the room", "the cast", "this place"]
_VERBS = ["was", "seemed", "looked", "felt", "is"]
_FILLER_PHRASES = [
    "we went there on a sunday",
    "and then we left",
    "the table was by the window",
    "my friend ordered the soup",
    "it took an hour",
    "there were many people",
    "the music played all evening",
    "we paid at the counter",
    "the story is set in a town",
    "the actors wore hats",
    "i watched it with my sister",
    "the menu had ten pages",
]

_COLOURS = ["red", "blue", "green", "yellow", "black", "white"]
_OBJECTS = ["cat", "dog", "box", "car", "ball", "cup", "hat", "lamp", "book", "chair"]


def _words(phrase: str) -> list[str]:
    return phrase.split()


def cue_word_sentiment(
    num_examples: int,
    seed: int = 0,
    min_phrases: int = 1,
    max_phrases: int = 3,
    negation_probability: float = 0.25,
) -> Dataset:
    """Binary sentiment carried by one cue word.

    Each sentence is `filler* SUBJECT VERB [not] CUE filler*` with 1–3 filler phrases spread before and after, so
    the cue lands at varied positions. Labels: 1 = positive, 0 = negative (a negated positive cue is negative).

    Columns: `text` (str), `label` (int), `cue_index` (word position of the cue), `negated` (bool).
    """
    rng = random.Random(seed)
    rows: dict[str, list] = {"text": [], "label": [], "cue_index": [], "negated": []}
    for _ in range(num_examples):
        positive = rng.random() < 0.5
        negated = rng.random() < negation_probability
        cue = rng.choice(POSITIVE_CUES if positive else NEGATIVE_CUES)
        clause = [*_words(rng.choice(_SUBJECTS)), rng.choice(_VERBS)] + ([NEGATION] if negated else [])
        fillers = [_words(rng.choice(_FILLER_PHRASES)) for _ in range(rng.randint(min_phrases, max_phrases))]
        split = rng.randint(0, len(fillers))
        before = [word for phrase in fillers[:split] for word in phrase]
        after = [word for phrase in fillers[split:] for word in phrase]
        words = [*before, *clause, cue, *after]
        rows["text"].append(" ".join(words))
        rows["label"].append(int(positive != negated))
        rows["cue_index"].append(len(before) + len(clause))
        rows["negated"].append(negated)
    return Dataset.from_dict(rows)


def cue_word_pairs(num_examples: int, seed: int = 0, min_objects: int = 2, max_objects: int = 4) -> Dataset:
    """Three-way entailment between a premise listing coloured objects and a one-colour hypothesis.

    Columns: `premise`, `hypothesis` (str), `label` (0 entailment, 1 neutral, 2 contradiction), `evidence_index`
    (word position of the hypothesis's object in the premise; -1 when it is absent).
    """
    rng = random.Random(seed)
    rows: dict[str, list] = {"premise": [], "hypothesis": [], "label": [], "evidence_index": []}
    for _ in range(num_examples):
        objects = rng.sample(_OBJECTS, rng.randint(min_objects, max_objects))
        colours = [rng.choice(_COLOURS) for _ in objects]
        label = rng.randrange(3)
        if label == 1:
            claimed = rng.choice([name for name in _OBJECTS if name not in objects])
            colour = rng.choice(_COLOURS)
        else:
            position = rng.randrange(len(objects))
            claimed = objects[position]
            colour = colours[position] if label == 0 else rng.choice([c for c in _COLOURS if c != colours[position]])
        premise = " and ".join(f"the {c} {o}" for c, o in zip(colours, objects, strict=True)).split()
        rows["premise"].append(" ".join(premise))
        rows["hypothesis"].append(f"the {claimed} is {colour}")
        rows["label"].append(label)
        rows["evidence_index"].append(premise.index(claimed) if claimed in objects else -1)
    return Dataset.from_dict(rows)


SYNTHETIC_TASKS: dict[str, tuple[Callable[..., Dataset], list[str]]] = {
    "cue_sentiment": (cue_word_sentiment, CUE_SENTIMENT_LABELS),
    "cue_pairs": (cue_word_pairs, PAIR_LABELS),
}


def load_synthetic_task(name: str, num_examples: int, seed: int = 0) -> tuple[Dataset, list[str]]:
    """The task's dataset and its label names, by task name (`cue_sentiment`, `cue_pairs`)."""
    if name not in SYNTHETIC_TASKS:
        raise ValueError(f"Unknown synthetic task {name!r}; known: {', '.join(sorted(SYNTHETIC_TASKS))}.")
    generator, labels = SYNTHETIC_TASKS[name]
    return generator(num_examples, seed=seed), labels
