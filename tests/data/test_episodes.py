"""Few-shot episodes (hf_attn.data.episodes): the synthetic few-shot task, N-way K-shot sampling (fixed held-out
episodes, new training episodes each epoch, support noise), the episodes' accuracy and the FewRel file format."""

from __future__ import annotations

import json

import numpy as np
import pytest
from datasets import Dataset

from hf_attn.data.episodes import (
    CLASS_COLUMN,
    EpisodeDataset,
    class_cues,
    episode_accuracy,
    few_shot_classes,
    read_fewrel,
)
from tests.helpers import write_fewrel


def instances(classes: int, per_class: int) -> Dataset:
    names = [f"class {i % classes}" for i in range(classes * per_class)]
    return Dataset.from_dict(
        {"input_ids": [[i + 1] for i in range(len(names))], "attention_mask": [[1]] * len(names), CLASS_COLUMN: names}
    )


def test_the_synthetic_classes_are_disjoint_and_every_held_out_word_occurs_in_training():
    train_split = few_shot_classes(640, seed=0)
    held_out = few_shot_classes(160, seed=1, split="eval")
    assert set(train_split["label"]).isdisjoint(held_out["label"])
    assert len(set(train_split["label"])) == 64 and len(set(held_out["label"])) == 16
    words = {word for text in train_split["text"] for word in text.split()}
    assert {word for text in held_out["text"] for word in text.split()} <= words
    for text, label, evidence in zip(held_out["text"], held_out["label"], held_out["evidence"], strict=True):
        cues = set(class_cues(int(label.split()[1])))
        assert [text.split()[i] for i in evidence] and {text.split()[i] for i in evidence} <= cues
    assert few_shot_classes(50, seed=3)["text"] == few_shot_classes(50, seed=3)["text"]  # deterministic by seed


def test_relation_texts_put_the_class_words_between_the_entities():
    rows = few_shot_classes(200, seed=0, relations=True)
    for text, head, tail, evidence in zip(rows["text"], rows["head"], rows["tail"], rows["evidence"], strict=True):
        words = text.split()
        assert words[head] == "e1" and words[tail] == "e2" and all(head < i < tail for i in evidence)


def test_episodes_are_n_way_k_shot_with_consistent_labels_fixed_or_new_per_epoch():
    data = instances(classes=8, per_class=6)
    names = data[CLASS_COLUMN]
    episodes = EpisodeDataset(data, ways=3, shots=2, queries=2, num_episodes=20, seed=0)
    for index in range(len(episodes)):
        support, queries, labels = episodes.sample(index)
        classes = [{names[row] for row in shots} for shots in support]
        assert all(len(c) == 1 for c in classes) and len(set.union(*classes)) == 3  # N distinct classes, K shots
        assert all(len(shots) == 2 for shots in support) and len(queries) == 6
        assert all(names[row] in classes[label] for row, label in zip(queries, labels, strict=True))
        used = [row for shots in support for row in shots]
        assert len(set(used + queries)) == len(used) + len(queries)  # no instance twice in an episode
    item = episodes[0]
    assert np.array(item["support_input_ids"]).shape == (3, 2, 1) and len(item["input_ids"]) == 6
    before = [episodes.sample(i) for i in range(5)]
    episodes.set_epoch(1)
    assert [episodes.sample(i) for i in range(5)] != before  # training: new episodes each epoch
    fixed = EpisodeDataset(data, ways=3, shots=2, queries=2, num_episodes=5, seed=0, fixed=True)
    first = [fixed.sample(i) for i in range(5)]
    fixed.set_epoch(3)
    assert [fixed.sample(i) for i in range(5)] == first  # held-out: the same episodes at every evaluation
    with pytest.raises(ValueError, match="need 9 classes of at least 6 instances; this split has 8"):
        EpisodeDataset(data, ways=9, shots=3, queries=3, num_episodes=1)


def test_support_noise_replaces_shots_by_instances_of_classes_outside_the_episode():
    data = instances(classes=10, per_class=10)
    names = data[CLASS_COLUMN]
    episodes = EpisodeDataset(data, ways=5, shots=4, queries=1, num_episodes=200, seed=0, noise_rate=0.5)
    noisy = total = 0
    for index in range(len(episodes)):
        support, queries, labels = episodes.sample(index)
        episode_classes = {names[queries[labels.index(n)]] for n in range(5)}
        for n, shots in enumerate(support):
            own = names[queries[labels.index(n)]]
            for row in shots:
                total += 1
                if names[row] != own:
                    noisy += 1
                    assert names[row] not in episode_classes  # noise comes from outside the episode
    assert 0.45 < noisy / total < 0.55


def test_episode_accuracy_averages_episodes_and_gives_the_95_percent_interval():
    logits = np.zeros((3, 2, 2))
    logits[0, :, 0] = 1  # episode 0: both queries say class 0
    logits[1, :, 1] = 1
    logits[2, 0, 0] = 1
    logits[2, 1, 1] = 1
    labels = np.array([[0, 0], [0, 1], [0, -100]])  # accuracies 1, 0.5, 1 (the padded query is not scored)
    result = episode_accuracy(logits, labels)
    per_episode = np.array([1.0, 0.5, 1.0])
    assert result["accuracy"] == pytest.approx(per_episode.mean())
    assert result["accuracy_ci95"] == pytest.approx(1.96 * per_episode.std(ddof=1) / np.sqrt(3))


# FewRel's format: {relation: [{"tokens", "h": [name, id, [[positions]]], "t": ...}]} -------------------------------


def test_fewrel_files_load_with_their_entities(tmp_path):
    write_fewrel(tmp_path / "train_wiki.json", list(range(6)), 5, seed=0)
    rows = read_fewrel(tmp_path / "train_wiki.json")
    assert len(rows) == 30 and len(set(rows["label"])) == 6
    words = rows["text"][0].split()
    assert words[rows["head"][0]] == "e1" and words[rows["tail"][0]] == "e2"
    (tmp_path / "rows.json").write_text(json.dumps([{"text": "a b", "label": "x"}]))
    (tmp_path / "lines.json").write_text('{"text": "a b", "label": "x"}\n{"text": "c", "label": "y"}\n')
    assert read_fewrel(tmp_path / "rows.json") is None and read_fewrel(tmp_path / "lines.json") is None
