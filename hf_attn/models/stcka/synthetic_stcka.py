"""A short-text task only knowledge can solve (STCKA, Chen et al., AAAI 2019), with the isA knowledge base it ships.

Each text names one entity among neutral words ("i read about zorvex on monday"); the label (business, sport, health,
tech) is the topic of the entity's isA concept (zorvex isA company -> business). The entities of the held-out split
never occur in training, so their words say nothing: only the knowledge base, which knows every entity, links them to
a concept seen in training. Entities also have label-neutral concepts ("name", "brand"), and the texts name a second,
label-neutral entity ("monday" isA day), so the concept set holds distractors and the attention has to find the
deciding concept (the `evidence_concept` column gives its index in the set, as `ConceptSource` orders it).

The base is a TSV file in the format of Probase / CN-Probase dumps (`entity<TAB>concept<TAB>score`), shipped with the
package (`CONCEPT_TOPICS_KNOWLEDGE_BASE`) and rebuilt, identically, by `write_concept_topics_knowledge_base`.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # datasets loads in a second: imported where rows become a Dataset, not at `import hf_attn`
    from datasets import Dataset

from hf_attn.data.synthetic import SyntheticTask, register_synthetic_task
from hf_attn.data.task_data import dataset_from_rows

from .tokenization_stcka import ConceptSource

CONCEPT_TOPICS_LABELS = ["business", "sport", "health", "tech"]
# Two deciding concepts per topic; the label-neutral concepts any entity may also have.
TOPIC_CONCEPTS = {
    "business": ["company", "bank"],
    "sport": ["athlete", "club"],
    "health": ["disease", "medicine"],
    "tech": ["gadget", "software"],
}
NEUTRAL_CONCEPTS = ["name", "brand", "word", "topic", "title"]
# Label-neutral entities (times, places) with their own concepts.
NEUTRAL_ENTITIES = {
    "monday": [("day", 0.9), ("time", 0.6)], "friday": [("day", 0.9), ("time", 0.6)],
    "london": [("city", 0.95), ("place", 0.7)], "paris": [("city", 0.95), ("place", 0.7)],
    "the morning": [("time", 0.8)], "the weekend": [("time", 0.8), ("period", 0.5)],
}  # fmt: skip
TEMPLATES = [
    "i read about {entity} on {neutral}", "{entity} was in the news in {neutral}", "news on {entity} from {neutral}",
    "what do you think of {entity}", "{neutral} everyone talked about {entity}", "a long story about {entity}",
    "{entity} again in {neutral}", "have you heard of {entity} yet", "my friend mentioned {entity} in {neutral}",
]  # fmt: skip
ENTITIES_PER_TOPIC = 400
HELD_OUT_PER_TOPIC = 100  # the last ones of each topic: never in the training split
CONCEPT_TOPICS_KNOWLEDGE_BASE = Path(__file__).resolve().parent / "resources" / "concept_topics_isa.tsv"
_SYLLABLES = ["ka", "zo", "ri", "vex", "lu", "mor", "ta", "qui", "ben", "sol", "dra", "nix", "pel", "gor", "fi", "wen"]


def _entity_names(rng: random.Random, count: int) -> list[str]:
    names: set[str] = set()
    while len(names) < count:
        names.add("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 3))))
    return sorted(names)


def concept_topics_entities() -> dict[str, list[tuple[str, list[tuple[str, float]]]]]:
    """Per topic, its entities with their isA concepts and scores (seeded: always the same)."""
    rng = random.Random(2019)
    names = _entity_names(rng, ENTITIES_PER_TOPIC * len(CONCEPT_TOPICS_LABELS))
    rng.shuffle(names)
    entities = {}
    for index, topic in enumerate(CONCEPT_TOPICS_LABELS):
        rows = []
        for name in names[index * ENTITIES_PER_TOPIC : (index + 1) * ENTITIES_PER_TOPIC]:
            deciding = (rng.choice(TOPIC_CONCEPTS[topic]), round(rng.uniform(0.5, 1.0), 3))
            neutral = [(concept, round(rng.uniform(0.3, 0.95), 3)) for concept in rng.sample(NEUTRAL_CONCEPTS, 2)]
            rows.append((name, [deciding, *neutral]))
        entities[topic] = rows
    return entities


def write_concept_topics_knowledge_base(path: str | Path = CONCEPT_TOPICS_KNOWLEDGE_BASE) -> Path:
    """Writes the task's knowledge base as `entity<TAB>concept<TAB>score` lines (the shipped file)."""
    lines = ["entity\tconcept\tscore"]
    for rows in concept_topics_entities().values():
        lines += [f"{name}\t{concept}\t{score}" for name, concepts in rows for concept, score in concepts]
    lines += [
        f"{name}\t{concept}\t{score}" for name, concepts in NEUTRAL_ENTITIES.items() for concept, score in concepts
    ]
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def concept_topics(num_examples: int, seed: int = 0, held_out: bool = False) -> Dataset:
    """Short texts whose topic only the knowledge base tells (module docstring).

    Columns: `text`, `label` (0 business, 1 sport, 2 health, 3 tech), `entity`, `deciding_concept`, and
    `evidence_concept`, the deciding concept's index in the text's concept set (the shipped base's `ConceptSource`,
    every concept kept). `held_out=True` draws only the entities training never sees.
    """
    rng = random.Random(seed)
    source = ConceptSource.from_file(CONCEPT_TOPICS_KNOWLEDGE_BASE)
    entities = concept_topics_entities()
    split = slice(ENTITIES_PER_TOPIC - HELD_OUT_PER_TOPIC, None) if held_out else slice(0, -HELD_OUT_PER_TOPIC)
    rows: dict[str, list] = {"text": [], "label": [], "entity": [], "deciding_concept": [], "evidence_concept": []}
    for _ in range(num_examples):
        label = rng.randrange(len(CONCEPT_TOPICS_LABELS))
        name, concepts = rng.choice(entities[CONCEPT_TOPICS_LABELS[label]][split])
        text = rng.choice(TEMPLATES).format(entity=name, neutral=rng.choice(list(NEUTRAL_ENTITIES)))
        concept_set = source.concepts(text)
        rows["text"].append(text)
        rows["label"].append(label)
        rows["entity"].append(name)
        rows["deciding_concept"].append(concepts[0][0])
        rows["evidence_concept"].append(concept_set.index(concepts[0][0]))
    return dataset_from_rows(rows)


register_synthetic_task(
    "concept_topics",
    SyntheticTask(
        concept_topics, CONCEPT_TOPICS_LABELS, "classification", "text", None, "evidence_concept",
        held_out_kwargs={"held_out": True}, resources={"knowledge_base": str(CONCEPT_TOPICS_KNOWLEDGE_BASE)},
    ),
)  # fmt: skip


def example_files(folder: Path, num_rows: int, seed: int) -> None:
    """STCKA's example data (the row's `example_files`): `folder/snippets/` (`write_snippets`)."""
    write_snippets(folder / "snippets", num_rows, seed)


def write_snippets(folder: Path, num_rows: int, seed: int) -> None:
    """The `snippets/` example files of `hf_attn.tasks.examples.write_example_files`: `train.tsv` and `test.tsv`, no
    header, `text<TAB>concepts<TAB>label` (the unofficial STCKA code's layout: concepts space-separated, `none` when
    no entity is known), from `concept_topics` (the test texts name entities the training texts never do)."""
    folder.mkdir(parents=True, exist_ok=True)
    source = ConceptSource.from_file(CONCEPT_TOPICS_KNOWLEDGE_BASE)
    for split, rows in (("train", concept_topics(2 * num_rows, seed=seed)),
                        ("test", concept_topics(num_rows // 2, seed=seed + 1, held_out=True))):  # fmt: skip
        lines = [f"{row['text']}\t{' '.join(source.concepts(row['text'])) or 'none'}\t"
                 f"{CONCEPT_TOPICS_LABELS[row['label']]}" for row in rows]  # fmt: skip
        (folder / f"{split}.tsv").write_text("\n".join(lines) + "\n")
