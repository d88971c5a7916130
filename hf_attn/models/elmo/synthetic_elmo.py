"""ELMo's synthetic task (Peters et al., NAACL 2018): `ambiguous_word_tagging`, part-of-speech tags whose one
ambiguous word ("watch", "duck") only its context tags, the case contextual representations are for. Registered as
`ambiguous_tagging` when the row loads.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from hf_attn.data.synthetic import SyntheticTask, register_synthetic_task
from hf_attn.data.task_data import dataset_from_rows

if TYPE_CHECKING:  # datasets loads in a second: imported where rows become a Dataset, not at `import hf_attn`
    from datasets import Dataset

__all__ = ["AMBIGUOUS_WORDS", "TAGS", "ambiguous_word_tagging"]

TAGS = ["DET", "ADJ", "NOUN", "VERB", "PRON", "ADP"]
_TAG_WORDS = {
    "DET": ["the", "a", "every", "this", "that"],
    "ADJ": ["old", "small", "red", "quiet", "happy", "tall"],
    "NOUN": ["dog", "cat", "man", "girl", "teacher", "city", "river", "horse", "friend"],
    "VERB": ["sees", "likes", "finds", "follows", "meets", "helps", "calls"],
    "PRON": ["they", "we", "you", "people"],
    "ADP": ["near", "with", "behind", "under"],
}
# Each of these is a noun after a determiner or an adjective ("the old watch") and a verb after a subject ("they
# watch the dog"): only the context tells which.
AMBIGUOUS_WORDS = ["watch", "duck", "fish", "park", "train", "book", "light", "play", "ring", "drink"]


def _tagged_noun_phrase(rng: random.Random, noun: str | None = None) -> list[tuple[str, str]]:
    words = [(rng.choice(_TAG_WORDS["DET"]), "DET")]
    if rng.random() < 0.4:
        words.append((rng.choice(_TAG_WORDS["ADJ"]), "ADJ"))
    return [*words, (noun or rng.choice(_TAG_WORDS["NOUN"]), "NOUN")]


def ambiguous_word_tagging(num_examples: int, seed: int = 0, pp_probability: float = 0.4) -> Dataset:
    """Part-of-speech tagging where one word of every sentence needs its context (for ELMo, and biLM pretraining).

    Sentences follow `SUBJECT VERB OBJECT (ADP OBJECT)?` with SUBJECT a pronoun or `DET ADJ? NOUN`. Exactly one word
    per sentence is ambiguous ("watch", "duck", ...): with probability ½ it is the verb ("they watch the dog"),
    otherwise the noun of a random noun phrase ("the old watch sees a cat"). Every ambiguous word is a noun or a
    verb equally often, so a tagger that looks at the word alone gets about half of them right; its left
    neighbour decides (a determiner or an adjective: noun; a subject: verb).

    Columns: `text` (str, words separated by single spaces), `tags` (list of tag ids into `TAGS`, one per word),
    `ambiguous_index` (the ambiguous word's position), `ambiguous_is_verb` (bool).
    """
    rng = random.Random(seed)
    rows: dict[str, list] = {"text": [], "tags": [], "ambiguous_index": [], "ambiguous_is_verb": []}
    for _ in range(num_examples):
        word, as_verb = rng.choice(AMBIGUOUS_WORDS), rng.random() < 0.5
        with_pp = rng.random() < pp_probability
        noun_slots = 2 + int(with_pp)  # subject (unless a pronoun), object, the prepositional object
        pronoun_subject = rng.random() < 0.3
        ambiguous_slot = None if as_verb else rng.randrange(int(pronoun_subject), noun_slots)
        subject = (
            [(rng.choice(_TAG_WORDS["PRON"]), "PRON")]
            if pronoun_subject
            else _tagged_noun_phrase(rng, word if ambiguous_slot == 0 else None)
        )
        verb = [(word if as_verb else rng.choice(_TAG_WORDS["VERB"]), "VERB")]
        sentence = subject + verb + _tagged_noun_phrase(rng, word if ambiguous_slot == 1 else None)
        if with_pp:
            sentence += [(rng.choice(_TAG_WORDS["ADP"]), "ADP")]
            sentence += _tagged_noun_phrase(rng, word if ambiguous_slot == 2 else None)
        position = (
            len(subject)
            if as_verb
            else [i for i, (_, tag) in enumerate(sentence) if tag == "NOUN"][ambiguous_slot - int(pronoun_subject)]
        )
        rows["text"].append(" ".join(w for w, _ in sentence))
        rows["tags"].append([TAGS.index(tag) for _, tag in sentence])
        rows["ambiguous_index"].append(position)
        rows["ambiguous_is_verb"].append(as_verb)
    return dataset_from_rows(rows)


register_synthetic_task(
    "ambiguous_tagging",
    SyntheticTask(
        ambiguous_word_tagging, TAGS, "token_classification", "text", None, "ambiguous_index", label_column="tags"
    ),
)
