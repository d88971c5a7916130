"""Few-shot episodes: N-way K-shot sampling over a dataset of labelled instances, the synthetic few-shot task and
the FewRel file format.

An episode draws N classes, K support instances and Q queries of each; the model labels each query with the index
of its class among the N. Training and held-out classes are disjoint (the model meets new classes at test time),
so the labels of a few-shot dataset are names, never a fixed label set. Proto-HATT's noisy setting replaces each
support instance, with probability `noise_rate`, by an instance of a class outside the episode (Gao et al. 2019,
§4.1, as the original's `next_batch(noise_rate)`).
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import random
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

if TYPE_CHECKING:  # datasets loads in a second: imported where rows become a Dataset, not at `import hf_attn`
    from datasets import Dataset

from .request import DataRequest
from .synthetic import SyntheticTask, register_synthetic_task
from .task_data import TaskData, dataset_from_rows

# The columns of an encoded instance that an episode carries.
INSTANCE_FIELDS = ("input_ids", "attention_mask", "entity_positions")
CLASS_COLUMN = "episode_class"


def class_rows(instances: Dataset) -> dict[str, list[int]]:
    """Each class name's row indices, in the order the classes first occur."""
    classes: dict[str, list[int]] = {}
    for index, name in enumerate(instances.select_columns([CLASS_COLUMN]).to_dict()[CLASS_COLUMN]):
        classes.setdefault(name, []).append(index)
    return classes


def eligible_classes(classes: dict[str, list[int]], shots: int, queries: int) -> list[str]:
    """The classes an episode can draw: those with K support instances and Q queries to spare, sorted."""
    return sorted(name for name, rows in classes.items() if len(rows) >= shots + queries)


class EpisodeDataset(torch.utils.data.Dataset):
    """`num_episodes` N-way K-shot episodes over encoded instances (`input_ids`, `attention_mask`, optionally
    `entity_positions`, and the class name in `episode_class`), one episode per item, for `Trainer` to batch.

    Episode `i` depends only on (`seed`, epoch, `i`): a held-out set (`fixed=True`) is the same episodes at every
    evaluation, and a training set draws new episodes each epoch (`set_epoch`, called by `EpisodeEpochCallback`).
    An item holds `support_<field>` as `[N][K]` lists, the queries' `<field>` as `[N·Q]` lists (shuffled), and
    `labels`, the class index of each query.
    """

    def __init__(
        self,
        instances: Dataset,
        ways: int,
        shots: int,
        queries: int,
        num_episodes: int,
        seed: int = 0,
        noise_rate: float = 0.0,
        fixed: bool = False,
    ) -> None:
        if not 0.0 <= noise_rate < 1.0:
            raise ValueError(f"noise_rate must lie in [0, 1), got {noise_rate}.")
        self.fields = [name for name in INSTANCE_FIELDS if name in instances.column_names]
        columns = instances.select_columns(self.fields).to_dict()  # plain lists: an episode reads many rows
        self.rows = {name: columns[name] for name in self.fields}
        self.classes = class_rows(instances)
        self.eligible = eligible_classes(self.classes, shots, queries)
        if len(self.eligible) < ways:
            raise ValueError(
                f"{ways}-way {shots}-shot episodes with {queries} queries per class need {ways} classes of at least "
                f"{shots + queries} instances; this split has {len(self.eligible)} such classes "
                f"(of {len(self.classes)})."
            )
        self.ways, self.shots, self.queries = ways, shots, queries
        self.num_episodes, self.seed, self.noise_rate, self.fixed = num_episodes, seed, noise_rate, fixed
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        if not self.fixed:
            self.epoch = epoch

    def __len__(self) -> int:
        return self.num_episodes

    def sample(self, index: int) -> tuple[list[list[int]], list[int], list[int]]:
        """Row indices of episode `index`: support `[N][K]`, queries `[N·Q]` and their labels."""
        rng = random.Random(int(np.random.SeedSequence([self.seed, self.epoch, index]).generate_state(1)[0]))
        chosen = rng.sample(self.eligible, self.ways)
        outside = [name for name in self.classes if name not in set(chosen)]
        support, queries, labels = [], [], []
        for label, name in enumerate(chosen):
            rows = rng.sample(self.classes[name], self.shots + self.queries)
            shots = rows[: self.shots]
            if self.noise_rate and outside:
                shots = [
                    rng.choice(self.classes[rng.choice(outside)]) if rng.random() < self.noise_rate else row
                    for row in shots
                ]
            support.append(shots)
            queries += rows[self.shots :]
            labels += [label] * self.queries
        order = list(range(len(queries)))
        rng.shuffle(order)
        return support, [queries[i] for i in order], [labels[i] for i in order]

    def __getitem__(self, index: int) -> dict[str, Any]:
        support, queries, labels = self.sample(index)
        item: dict[str, Any] = {}
        for name in self.fields:
            values = self.rows[name]
            item[f"support_{name}"] = [[values[row] for row in shots] for shots in support]
            item[name] = [values[row] for row in queries]
        item["labels"] = labels
        return item


def episode_accuracy(predictions: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    """Accuracy per episode, averaged over the episodes, with the half-width of its 95% interval (1.96 standard
    errors, as the FewRel papers report): `predictions (E, Q, N)` logits, `labels (E, Q)` with -100 for padded
    queries."""
    predictions = np.asarray(predictions)
    labels = np.asarray(labels)
    scored = labels != -100
    correct = (predictions.argmax(-1) == labels) & scored
    per_episode = correct.sum(-1) / np.maximum(scored.sum(-1), 1)
    per_episode = per_episode[scored.any(-1)]
    interval = 1.96 * per_episode.std(ddof=1) / math.sqrt(len(per_episode)) if len(per_episode) > 1 else 0.0
    return {"accuracy": float(per_episode.mean()), "accuracy_ci95": float(interval), "episodes": len(per_episode)}


def compute_episode_metrics(eval_prediction) -> dict[str, float]:
    """`compute_metrics` of the few-shot shape (`Trainer`'s `EvalPrediction`)."""
    predictions = eval_prediction.predictions
    predictions = predictions[0] if isinstance(predictions, tuple) else predictions
    return episode_accuracy(predictions, eval_prediction.label_ids)


# The synthetic few-shot task --------------------------------------------------------------------------------------

FILLERS = [f"f{index}" for index in range(150)]
CUES = [f"c{index}" for index in range(40)]


@functools.cache
def _cue_combinations(cues_per_class: int) -> list[tuple[int, ...]]:
    combinations = list(itertools.combinations(range(len(CUES)), cues_per_class))
    random.Random(1234).shuffle(combinations)
    return combinations


def class_cues(index: int, cues_per_class: int = 3) -> list[str]:
    """Class `index`'s own words: a combination of cue words no other class has (the classes enumerate the
    combinations in a fixed shuffled order, so held-out classes are new combinations of words seen in training)."""
    combinations = _cue_combinations(cues_per_class)
    if index >= len(combinations):
        raise ValueError(f"at most {len(combinations)} classes of {cues_per_class} cue words each.")
    return [CUES[i] for i in combinations[index]]


def few_shot_classes(
    num_examples: int,
    seed: int = 0,
    split: str = "train",
    num_train_classes: int = 64,
    num_eval_classes: int = 16,
    cues: tuple[int, int] = (3, 2),
    length: tuple[int, int] = (8, 16),
    relations: bool = False,
) -> Dataset:
    """Few-shot classes: each text of class c holds some of the class's cue words (`cues`: (a class's, a text's)) among
    (fewest, most) `length` shared fillers (`fNN`); training and held-out classes are disjoint (`split="train"`:
    classes 0 .. T − 1, `"eval"`: the next `num_eval_classes`). Classes are new combinations of a shared pool of 40 cue
    words, so every word of a held-out text is seen in training, and classes may share a cue (one alone does not tell
    them apart). With `relations`, every text has a head and a tail entity (`e1`, `e2`: `head`, `tail` columns) with
    the cues between them, and a cue of another class outside them (position tells relation words from distractors).

    Columns: `text`, `label` (`class <c>`), `evidence` (the positions of the class's cues), and `head`, `tail`."""
    if split not in ("train", "eval"):
        raise ValueError(f"split must be 'train' or 'eval', got {split!r}.")
    cues_per_class, cues_per_text = cues
    first, count = (0, num_train_classes) if split == "train" else (num_train_classes, num_eval_classes)
    rng = random.Random(seed)
    rows: dict[str, list] = {"text": [], "label": [], "evidence": []}
    if relations:
        rows.update(head=[], tail=[])
    for example in range(num_examples):
        label = first + example % count
        own = class_cues(label, cues_per_class)
        words = [rng.choice(FILLERS) for _ in range(rng.randint(*length))]
        drawn = rng.sample(own, cues_per_text)
        if relations:  # e1 … cues … e2, and another class's cue outside the pair
            head = rng.randint(0, len(words) // 3)
            tail = rng.randint(head + len(drawn) + 1, len(words) - 1)
            slots = sorted(rng.sample(range(head + 1, tail), len(drawn)))
            words[head], words[tail] = "e1", "e2"
            outside = [i for i in range(len(words)) if i < head or i > tail]
            if outside:
                other = class_cues(rng.randrange(first, first + count), cues_per_class)
                words[rng.choice(outside)] = rng.choice([cue for cue in other if cue not in own] or other)
            rows["head"].append(head)
            rows["tail"].append(tail)
        else:
            slots = sorted(rng.sample(range(len(words)), len(drawn)))
        for slot, cue in zip(slots, drawn, strict=True):
            words[slot] = cue
        rows["text"].append(" ".join(words))
        rows["label"].append(f"class {label}")
        rows["evidence"].append(slots)
    return dataset_from_rows(rows)


def few_shot_relations(num_examples: int, seed: int = 0, **kwargs: Any) -> Dataset:
    """Few-shot relations: texts with a head and a tail entity, the relation's cue words between them (see
    `few_shot_classes`)."""
    return few_shot_classes(num_examples, seed=seed, **{"relations": True, **kwargs})


register_synthetic_task(
    "few_shot_topics",
    SyntheticTask(
        few_shot_classes, [], "few_shot", "text", evidence_column="evidence", held_out_kwargs={"split": "eval"}
    ),
)
register_synthetic_task(
    "few_shot_relations",
    SyntheticTask(
        few_shot_relations, [], "few_shot", "text", evidence_column="evidence", held_out_kwargs={"split": "eval"}
    ),
)


# The FewRel format ------------------------------------------------------------------------------------------------


def read_fewrel(path: str | Path) -> Dataset | None:
    """A FewRel file (Han et al. 2018; `train_wiki.json`, `val_wiki.json`: `{relation: [{"tokens": [...], "h":
    [name, id, [[positions], ...]], "t": ...}, ...]}`) as rows: `text` (the tokens joined by spaces), `label` (the
    relation), `head` and `tail` (the first token index of each entity, as the FewRel loaders read it). `None` when
    the file is not in that layout (another JSON file: the caller reads it as rows)."""
    path = Path(path)
    if path.suffix.lower() != ".json":
        return None
    with open(path, encoding="utf-8") as handle:
        if not handle.read(4096).lstrip().startswith("{"):
            return None
        handle.seek(0)
        try:
            data = json.load(handle)
        except json.JSONDecodeError:  # e.g. JSON lines
            return None
    if (
        not isinstance(data, dict)
        or not data
        or not all(
            isinstance(rows, list) and all(isinstance(row, dict) and "tokens" in row for row in rows)
            for rows in data.values()
        )
    ):
        return None
    rows: dict[str, list] = {"text": [], "label": [], "head": [], "tail": []}
    for relation, instances in data.items():
        for instance in instances:
            rows["text"].append(" ".join(instance["tokens"]))
            rows["label"].append(str(relation))
            rows["head"].append(int(instance["h"][2][0][0]))
            rows["tail"].append(int(instance["t"][2][0][0]))
    return dataset_from_rows(rows)


def class_disjoint_split(
    train: Dataset, held_out: Dataset | None, label_column: str, fraction: float, seed: int, minimum: int = 2
) -> tuple[Dataset, Dataset]:
    """Few-shot held-out classes never occur in training. Splits whose classes overlap (a held-out split cut from
    the training rows) are merged and split again by class, and so are the training rows alone (`held_out`
    `None`): `fraction` of the classes (at least `minimum`, seeded) are held out with all their rows."""
    if held_out is not None and not set(train[label_column]) & set(held_out[label_column]):
        return train, held_out
    from datasets import concatenate_datasets

    merged = train if held_out is None else concatenate_datasets([train, held_out])
    classes = sorted(set(merged[label_column]))
    count = max(minimum, round(fraction * len(classes)))
    if count >= len(classes):
        raise ValueError(f"{len(classes)} classes cannot give {count} held-out classes and training classes.")
    chosen = set(random.Random(seed).sample(classes, count))
    labels = merged[label_column]
    print(f"[hf-attn] few-shot: holding out {count} of {len(classes)} classes (held-out classes are never trained on)")
    return (
        merged.select([i for i, label in enumerate(labels) if label not in chosen]),
        merged.select([i for i, label in enumerate(labels) if label in chosen]),
    )


def canonical_few_shot_rows(
    split: Dataset, name: str, text_column: str, label_column: str
) -> tuple[Dataset, dict[str, int]]:
    """The rows of one split in the few-shot canonical form: `text` (a string; a token list is joined by spaces),
    `label` (the class name, as written), and `head` / `tail` (entity word indices) when the data has them; rows
    with an empty, blank or null text, no label or (relations) no entity position are dropped, and told
    (`tell_dropped`). Returns the rows and the dropped rows' count by reason. `name` names the split in messages."""
    for column, option in ((text_column, "--text-column"), (label_column, "--label-column")):
        if column not in split.column_names:
            raise ValueError(f"{option} {column!r} is not a column of the {name} split: {split.column_names}.")
    from .rows import NO_LABEL, is_empty, tell_dropped

    entities = [column for column in ("head", "tail") if column in split.column_names]
    positions = list(zip(*(split[column] for column in entities), strict=True)) if entities else [()] * len(split)
    keep, reasons = [], Counter()
    rows = zip(split[text_column], split[label_column], positions, strict=True)
    for index, (text, label, entity) in enumerate(rows):
        why = (
            "empty text"
            if is_empty(text)
            else "no label"
            if label in NO_LABEL or is_empty(label)
            else "no entity position"
            if any(value is None or str(value).strip() == "" for value in entity)
            else None
        )
        if why is None:
            keep.append(index)
        else:
            reasons[why] += 1
    if reasons:
        tell_dropped(f"{name} split", reasons, len(split))
        split = split.select(keep)

    def canonical(batch: dict[str, list]) -> dict[str, list]:
        rows = {
            "text": [" ".join(text) if isinstance(text, list) else str(text) for text in batch[text_column]],
            "label": [str(label) for label in batch[label_column]],
        }
        rows.update({column: [int(value) for value in batch[column]] for column in entities})
        return rows

    return split.map(canonical, batched=True, remove_columns=split.column_names), dict(reasons)


def prepare_few_shot_data(
    train: Dataset,
    held_out: Dataset | None,
    request: DataRequest,
    source: dict[str, str],
    notes: Sequence[str] = (),
    episode_settings: dict[str, Any] | None = None,
) -> TaskData:
    """A few-shot dataset in canonical form (`TaskData` of the `few_shot` shape): `text` (a string; a token list is
    joined by spaces), `label` (the class name), and `head` / `tail` (entity word indices) when the data has them.
    Rows without text or label are dropped and counted; the held-out classes are made disjoint from the training
    classes (`class_disjoint_split`, `request.held_out`'s fraction and seed). `notes` and `episode_settings`: the
    run's (`TaskData`)."""
    text_column, label_column = request.columns.text, request.columns.label or "label"
    eval_fraction, seed = request.held_out.fraction, request.held_out.seed
    splits, dropped = {}, {}
    for name, split in (("train", train), ("held-out", held_out)):
        if split is None:  # no held-out split: classes are held out of the training rows (`class_disjoint_split`)
            continue
        splits[name], lost = canonical_few_shot_rows(split, name, text_column, label_column)
        if lost:
            dropped[name] = lost
    train, held_out = class_disjoint_split(splits["train"], splits.get("held-out"), "label", eval_fraction, seed)
    return TaskData(
        train=train,
        eval=held_out,
        shape="few_shot",
        text_column="text",
        label_column="label",
        source={**source, "columns": f"{text_column}, {label_column}"},
        dropped=dropped,
        notes=notes,
        episode_settings=episode_settings or {},
    )
