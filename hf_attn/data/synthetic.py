"""Deterministic synthetic tasks, built so that the evidence for each label is known.

`cue_word_sentiment`: sentences from a small grammar of neutral phrases with ONE sentiment cue word at a random
position ("it took an hour a wonderful meal after that"); the cue decides the label, "not" right before it flips
the label. `cue_index` is the cue's word position, so an attention map can be scored against it.

`evidence_documents`: documents of filler sentences with ONE evidence sentence (a cue clause) at a random position,
for hierarchical models.

`cue_word_pairs`: an entailment-like sentence-pair task. The premise lists a few coloured objects ("the red cat and
the blue box ..."), the hypothesis claims one colour ("the cat is red"): entailment when the premise agrees,
contradiction when it gives the object another colour, neutral when the object is absent.

`toy_translation`: a deterministic rule-based "language pair" that needs attention and reordering: words are
substituted from a lexicon, adjectives move behind their noun, and determiners and adjectives agree with the
noun's gender ("the small red cat sees a big house" -> "le gato rojo pequeño ve una casa grande").

A task that only one architecture learns lives in that architecture's folder
(`hf_attn/models/<name>/synthetic_<name>.py`), registered by `register_synthetic_task` when its row loads; the
generators here serve two or more.

All generators take a seed and return the same `datasets.Dataset` for the same arguments, on any machine.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .task_data import dataset_from_rows

if TYPE_CHECKING:  # datasets loads in a second: imported where rows become a Dataset, not at `import hf_attn`
    from datasets import Dataset

CUE_SENTIMENT_LABELS = ["negative", "positive"]
PAIR_LABELS = ["entailment", "neutral", "contradiction"]

POSITIVE_CUES = ["good", "great", "excellent", "wonderful", "delightful", "superb", "pleasant", "lovely"]
NEGATIVE_CUES = ["bad", "awful", "terrible", "horrible", "dreadful", "poor", "boring", "disappointing"]
NEGATION = "not"

_SUBJECTS = ["the film", "the food", "the service", "our waiter", "the plot", "the room", "the cast", "this place"]
_NOUNS = ["film", "meal", "hotel", "show", "book", "trip", "dinner", "story", "evening", "song"]
_VERBS = ["was", "seemed", "looked", "felt", "is"]
# The clause that carries the cue, in several shapes, so that no word sits at a fixed offset from the cue: the cue
# itself is the only consistent place to look. `{neg}` is "not " or "", `{cue}` the cue word.
_CUE_CLAUSES = [
    "{subject} {verb} {neg}{cue}",
    "a {neg}{cue} {noun}",
    "{neg}{cue} , said my friend",
    "what a {neg}{cue} {noun} it {verb}",
    "i found {subject} {neg}{cue}",
    "{neg}{cue}",
]
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
    "after that",
    "honestly",
    "in the end",
    "on the second floor",
    # "not" also appears where it scopes no cue, so that only "not" right before the cue matters.
    "we could not park",
    "the bus did not come",
    "it was not far from home",
]

_COLOURS = ["red", "blue", "green", "yellow", "black", "white"]
_OBJECTS = ["cat", "dog", "box", "car", "ball", "cup", "hat", "lamp", "book", "chair"]


def _words(phrase: str) -> list[str]:
    return phrase.split()


def _cue_clause(rng: random.Random, negated: bool) -> tuple[list[str], int]:
    """A random cue clause as words, with a placeholder where the cue goes, and the placeholder's position."""
    clause = rng.choice(_CUE_CLAUSES).format(
        subject=rng.choice(_SUBJECTS),
        verb=rng.choice(_VERBS),
        noun=rng.choice(_NOUNS),
        neg=f"{NEGATION} " if negated else "",
        cue="\0",  # a placeholder word that the split finds
    )
    words = _words(clause)
    return words, words.index("\0")


def cue_word_sentiment(
    num_examples: int,
    seed: int = 0,
    min_phrases: int = 1,
    max_phrases: int = 4,
    negation_probability: float = 0.1,
) -> Dataset:
    """Binary sentiment carried by one cue word.

    Each sentence is `filler* CLAUSE filler*`: 1–4 neutral filler phrases spread before and after one clause that
    holds the cue ("the food was great", "a not great meal", ...), so the cue lands at varied positions and in
    varied surroundings. Labels: 1 = positive, 0 = negative (a negated positive cue is negative and vice versa).

    Columns: `text` (str), `label` (int), `cue_index` (word position of the cue), `negated` (bool). Words are
    separated by single spaces, so word positions are token positions for the word-level tokenizer.

    Negation is kept rare by default (10%): in a negated sentence the cue's own state predicts the opposite label,
    so a BiLSTM attention model learns to read such sentences from "not" (whose backward state holds the cue) and
    the hit rate on the cue word no longer measures where the evidence is. Raise it for a harder task.
    """
    rng = random.Random(seed)
    rows: dict[str, list] = {"text": [], "label": [], "cue_index": [], "negated": []}
    for _ in range(num_examples):
        positive = rng.random() < 0.5
        negated = rng.random() < negation_probability
        cue = rng.choice(POSITIVE_CUES if positive else NEGATIVE_CUES)
        clause_words, clause_cue_index = _cue_clause(rng, negated)
        fillers = [_words(rng.choice(_FILLER_PHRASES)) for _ in range(rng.randint(min_phrases, max_phrases))]
        split = rng.randint(0, len(fillers))
        before = [word for phrase in fillers[:split] for word in phrase]
        after = [word for phrase in fillers[split:] for word in phrase]
        cue_index = len(before) + clause_cue_index
        words = [*before, *clause_words, *after]
        words[cue_index] = cue
        rows["text"].append(" ".join(words))
        rows["label"].append(int(positive != negated))
        rows["cue_index"].append(cue_index)
        rows["negated"].append(negated)
    return dataset_from_rows(rows)


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
    return dataset_from_rows(rows)


# Source word -> (target word, gender) for nouns; adjectives and determiners inflect for the noun's gender.
_NOUNS_TRANSLATION = {
    "cat": ("gato", "m"),
    "house": ("casa", "f"),
    "dog": ("perro", "m"),
    "table": ("mesa", "f"),
    "book": ("libro", "m"),
    "window": ("ventana", "f"),
    "bird": ("pajaro", "m"),
    "car": ("coche", "m"),
    "door": ("puerta", "f"),
    "river": ("rio", "m"),
    "city": ("ciudad", "f"),
    "tree": ("arbol", "m"),
}
_ADJECTIVES_TRANSLATION = {
    "red": ("rojo", "roja"),
    "small": ("pequeno", "pequena"),
    "big": ("grande", "grande"),
    "old": ("viejo", "vieja"),
    "new": ("nuevo", "nueva"),
    "white": ("blanco", "blanca"),
    "black": ("negro", "negra"),
    "tall": ("alto", "alta"),
}
_DETERMINERS_TRANSLATION = {"the": ("el", "la"), "a": ("un", "una"), "this": ("este", "esta")}
_VERBS_TRANSLATION = {
    "sees": "ve",
    "likes": "quiere",
    "finds": "encuentra",
    "follows": "sigue",
    "paints": "pinta",
    "buys": "compra",
}


def _noun_phrase(rng: random.Random) -> tuple[list[str], list[str]]:
    """`DET ADJ* NOUN` -> `DET' NOUN' ADJ'*`: adjectives follow the noun in reverse order, all agree in gender."""
    determiner, noun = rng.choice(sorted(_DETERMINERS_TRANSLATION)), rng.choice(sorted(_NOUNS_TRANSLATION))
    adjectives = rng.sample(sorted(_ADJECTIVES_TRANSLATION), rng.randint(0, 2))
    target_noun, gender = _NOUNS_TRANSLATION[noun]
    form = 0 if gender == "m" else 1
    source = [determiner, *adjectives, noun]
    target = [_DETERMINERS_TRANSLATION[determiner][form], target_noun]
    target += [_ADJECTIVES_TRANSLATION[adjective][form] for adjective in reversed(adjectives)]
    return source, target


def toy_translation(num_examples: int, seed: int = 0, max_clauses: int = 2) -> Dataset:
    """Sentence pairs of a rule-based language pair: `NP VERB NP` clauses joined by "and", translated by lexical
    substitution, adjective-noun reordering and gender agreement.

    Columns: `source`, `target` (str).
    """
    rng = random.Random(seed)
    rows: dict[str, list] = {"source": [], "target": []}
    for _ in range(num_examples):
        source, target = [], []
        for clause in range(rng.randint(1, max_clauses)):
            if clause:
                source.append("and")
                target.append("y")
            subject, object_ = _noun_phrase(rng), _noun_phrase(rng)
            verb = rng.choice(sorted(_VERBS_TRANSLATION))
            source += [*subject[0], verb, *object_[0]]
            target += [*subject[1], _VERBS_TRANSLATION[verb], *object_[1]]
        rows["source"].append(" ".join(source))
        rows["target"].append(" ".join(target))
    return dataset_from_rows(rows)


def evidence_document(
    rng: random.Random, min_sentences: int, max_sentences: int, negation_probability: float
) -> tuple[list[list[str]], int, int, int, bool]:
    """Filler sentences around one evidence sentence: (sentences as word lists, label, evidence sentence index,
    cue word index inside it, whether the cue is negated)."""
    positive = rng.random() < 0.5
    negated = rng.random() < negation_probability
    evidence, cue_index = _cue_clause(rng, negated)
    evidence[cue_index] = rng.choice(POSITIVE_CUES if positive else NEGATIVE_CUES)
    sentences = [
        [word for _ in range(rng.randint(1, 2)) for word in _words(rng.choice(_FILLER_PHRASES))]
        for _ in range(rng.randint(min_sentences, max_sentences) - 1)
    ]
    evidence_sentence = rng.randint(0, len(sentences))
    sentences.insert(evidence_sentence, evidence)
    sentences = [[*sentence, "."] for sentence in sentences]
    return sentences, int(positive != negated), evidence_sentence, cue_index, negated


def evidence_documents(
    num_examples: int,
    seed: int = 0,
    min_sentences: int = 3,
    max_sentences: int = 8,
    negation_probability: float = 0.1,
) -> Dataset:
    """Documents whose sentiment is decided by ONE evidence sentence among neutral filler sentences (HAN).

    The evidence sentence is a cue clause of `cue_word_sentiment` ("the food was not great ."); the fillers are one
    or two neutral phrases each ("we paid at the counter and then we left ."). The evidence sentence's position is
    random. Every sentence ends with " .", so the document tokenizer splits sentences exactly where they were built.

    Columns: `text` (str), `label` (int, 1 = positive), `evidence_sentence` (its index among the sentences),
    `cue_index` (the cue's word position inside that sentence), `negated` (bool).
    """
    rng = random.Random(seed)
    rows: dict[str, list] = {"text": [], "label": [], "evidence_sentence": [], "cue_index": [], "negated": []}
    for _ in range(num_examples):
        sentences, label, evidence_sentence, cue_index, negated = evidence_document(
            rng, min_sentences, max_sentences, negation_probability
        )
        rows["text"].append(" ".join(word for sentence in sentences for word in sentence))
        rows["label"].append(label)
        rows["evidence_sentence"].append(evidence_sentence)
        rows["cue_index"].append(cue_index)
        rows["negated"].append(negated)
    return dataset_from_rows(rows)


TOPIC_PARENTS = ("science", "sports", "politics", "arts", "business", "health")
TOPIC_FILLERS = (
    "the",
    "a",
    "of",
    "and",
    "today",
    "report",
    "people",
    "new",
    "said",
    "week",
    "city",
    "year",
    "some",
    "many",
    "story",
    "group",
    "local",
    "after",
    "before",
    "during",
    "about",
    "more",
    "first",
    "last",
    "day",
    "night",
)


def topic_labels(num_parents: int = 4, children_per_parent: int = 2) -> list[str]:
    """The labels of `label_topics`: each parent topic, then its children (`sports`, `sports1`, `sports2`, ...)."""
    if not 1 <= num_parents <= len(TOPIC_PARENTS):
        raise ValueError(f"num_parents must be in [1, {len(TOPIC_PARENTS)}], got {num_parents}.")
    return [
        label
        for parent in TOPIC_PARENTS[:num_parents]
        for label in [parent] + [f"{parent}{child}" for child in range(1, children_per_parent + 1)]
    ]


def label_topics(
    num_examples: int,
    seed: int = 0,
    num_parents: int = 4,
    children_per_parent: int = 2,
    labels_per_text: tuple[int, int] = (1, 3),
    words_per_label: int = 3,
    implied_evidence: float = 0.3,
    fillers: tuple[int, int] = (6, 16),
) -> Dataset:
    """Multi-label topic texts with label co-occurrence: a subtopic implies its parent topic.

    Each text draws (fewest, most) `labels_per_text` topics (parents or subtopics, uniformly); every subtopic brings
    its parent into the label set. A drawn topic writes 1–2 of its own `words_per_label` words (`sports1w0`, ...); a
    parent that is only implied writes one of its words with probability `implied_evidence`, so it is mostly known
    from its subtopic's words. (fewest, most) `fillers` words fill the rest; the order is shuffled.

    Columns: `text` (str), `labels` (label names, in `topic_labels` order), `evidence` (per word: the index in
    `topic_labels` of the label it evidences, -1 for a filler).
    """
    rng = random.Random(seed)
    names = topic_labels(num_parents, children_per_parent)
    index = {name: position for position, name in enumerate(names)}
    parent_of = {name: name.rstrip("0123456789") for name in names}
    rows: dict[str, list] = {"text": [], "labels": [], "evidence": []}
    for _ in range(num_examples):
        drawn = rng.sample(names, rng.randint(labels_per_text[0], min(labels_per_text[1], len(names))))
        labels = set(drawn) | {parent_of[name] for name in drawn}
        words: list[tuple[str, int]] = []
        for name in sorted(labels, key=index.__getitem__):
            count = rng.randint(1, 2) if name in drawn else int(rng.random() < implied_evidence)
            words += [(f"{name}w{rng.randrange(words_per_label)}", index[name]) for _ in range(count)]
        words += [(rng.choice(TOPIC_FILLERS), -1) for _ in range(rng.randint(*fillers))]
        rng.shuffle(words)
        rows["text"].append(" ".join(word for word, _ in words))
        rows["labels"].append(sorted(labels, key=index.__getitem__))
        rows["evidence"].append([label for _, label in words])
    return dataset_from_rows(rows)


@dataclass(frozen=True)
class SyntheticTask:
    """A generator with what a trainer needs to know about its columns.

    Attributes:
        generator: `(num_examples, seed=...) -> Dataset`.
        labels: label names, index = label id.
        shape: the task shape (`hf_attn.tasks`: `classification`, `pair_classification`, `multi_label` (the
            label column holds label names), `seq2seq`, `token_classification`, ...); the shape picks the head.
        text_column / pair_column: the text fields (for `seq2seq`: the source and the target).
        evidence_column: position of the label's evidence in `text_column` (-1: none), for attention scoring: a
            word position for sentences, a sentence index for documents.
        held_out_kwargs: generator options of the held-out split, when it is drawn differently from the training
            split (a separate generator call with another seed); `None`: one call, split in two.
        label_column: the labels (a class id per example, or per word for tagging tasks).
        resources: files the task ships for a model's tokenizer, by the name its architecture's options read them
            under (STCKA's `concept_topics`: `knowledge_base`, the isA knowledge base its texts' concepts link from).
    """

    generator: Callable[..., Dataset]
    labels: list[str]
    shape: str
    text_column: str
    pair_column: str | None = None
    evidence_column: str | None = None
    held_out_kwargs: dict | None = None
    label_column: str = "label"
    resources: dict[str, str] = field(default_factory=dict)

    def splits(self, num_train: int, num_eval: int, seed: int = 0, **kwargs) -> tuple[Dataset, Dataset]:
        """The training and held-out splits: one generator call cut in two, or, for a task whose held-out split is
        drawn differently (`held_out_kwargs`), a second call with those options and another seed."""
        if self.held_out_kwargs is not None:
            train = self.generator(num_train, seed=seed, **kwargs)
            return train, self.generator(num_eval, seed=seed + 1_000_003, **{**kwargs, **self.held_out_kwargs})
        data = self.generator(num_train + num_eval, seed=seed, **kwargs)
        return data.select(range(num_train)), data.select(range(num_train, num_train + num_eval))


SYNTHETIC_TASKS: dict[str, SyntheticTask] = {
    "label_topics": SyntheticTask(label_topics, topic_labels(), "multi_label", "text", label_column="labels"),
    "cue_sentiment": SyntheticTask(
        cue_word_sentiment, CUE_SENTIMENT_LABELS, "classification", "text", None, "cue_index"
    ),
    "cue_pairs": SyntheticTask(
        cue_word_pairs, PAIR_LABELS, "pair_classification", "premise", "hypothesis", "evidence_index"
    ),
    "translation": SyntheticTask(toy_translation, [], "seq2seq", "source", "target"),
    "evidence_documents": SyntheticTask(
        evidence_documents, CUE_SENTIMENT_LABELS, "classification", "text", None, "evidence_sentence"
    ),
}


def register_synthetic_task(name: str, task: SyntheticTask) -> None:
    """Adds a task under `name` (an architecture registers its own task from its own module; idempotent for the same
    task, an error for a different one under a taken name)."""
    if SYNTHETIC_TASKS.get(name, task) != task:
        raise ValueError(f"A different synthetic task is already registered as {name!r}.")
    SYNTHETIC_TASKS[name] = task


def get_synthetic_task(name: str) -> SyntheticTask:
    """The task descriptor by name (a key of `SYNTHETIC_TASKS`), with a clear error for unknown names."""
    if name not in SYNTHETIC_TASKS:
        raise ValueError(f"Unknown synthetic task {name!r}; known: {', '.join(sorted(SYNTHETIC_TASKS))}.")
    return SYNTHETIC_TASKS[name]
