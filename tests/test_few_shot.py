"""Few-shot training end to end: the synthetic task, N-way K-shot episodes (fixed held-out episodes, new training
episodes each epoch, support noise), the FewRel file format through `hf-attn train` and `hf-attn evaluate`. Each
architecture's learning on held-out classes is in its own folder (tests/models/hapn, tests/models/proto_hatt)."""

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
from hf_attn.training import train

SMALL = ["hidden_size=32", "word_embedding_size=16", "max_sentence_length=20"]


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


def write_fewrel(path, relations: list[int], per_relation: int, seed: int) -> None:
    rows = few_shot_classes(len(relations) * per_relation, seed=seed, relations=True, num_train_classes=64)
    data: dict[str, list] = {}
    for text, label, head, tail in zip(rows["text"], rows["label"], rows["head"], rows["tail"], strict=True):
        relation = f"P{relations[int(label.split()[1]) % len(relations)]}"
        tokens = text.split()
        data.setdefault(relation, []).append(
            {"tokens": tokens, "h": [tokens[head], "Q1", [[head]]], "t": [tokens[tail], "Q2", [[tail]]]}
        )
    path.write_text(json.dumps(data))


def test_fewrel_files_load_with_their_entities(tmp_path):
    write_fewrel(tmp_path / "train_wiki.json", list(range(6)), 5, seed=0)
    rows = read_fewrel(tmp_path / "train_wiki.json")
    assert len(rows) == 30 and len(set(rows["label"])) == 6
    words = rows["text"][0].split()
    assert words[rows["head"][0]] == "e1" and words[rows["tail"][0]] == "e2"
    (tmp_path / "rows.json").write_text(json.dumps([{"text": "a b", "label": "x"}]))
    (tmp_path / "lines.json").write_text('{"text": "a b", "label": "x"}\n{"text": "c", "label": "y"}\n')
    assert read_fewrel(tmp_path / "rows.json") is None and read_fewrel(tmp_path / "lines.json") is None


def test_proto_hatt_trains_on_fewrel_files_and_a_single_file_is_split_by_class(tmp_path):
    write_fewrel(tmp_path / "train_wiki.json", list(range(12)), 12, seed=0)
    write_fewrel(tmp_path / "val_wiki.json", list(range(12, 18)), 12, seed=1)
    common = {"arch": "proto_hatt", "num_train_epochs": 1, "per_device_train_batch_size": 4, "eval_episodes": 20,
              "config": [*SMALL, "num_ways=3", "num_shots=3", "num_queries=2"], "disable_tqdm": True,
              "report_to": "none", "save": False}  # fmt: skip
    result = train(output_dir=str(tmp_path / "run"), dataset=str(tmp_path / "train_wiki.json"),
                   eval_dataset=str(tmp_path / "val_wiki.json"), **common)  # fmt: skip
    assert result.metrics["episodes"] == 20
    assert result.model.config.use_entity_positions
    single = train(output_dir=str(tmp_path / "single"), dataset=str(tmp_path / "train_wiki.json"), eval_fraction=0.25,
                   **common)  # fmt: skip
    train_classes = set(single.trainer.train_dataset.classes)
    held_out_classes = set(single.trainer.eval_dataset.classes)
    assert len(held_out_classes) == 3 and train_classes.isdisjoint(held_out_classes)


def test_hf_attn_evaluate_scores_a_few_shot_model_on_the_episodes_training_scored(tmp_path, capsys):
    """`hf-attn evaluate` on the held-out file draws the same fixed, seeded episodes as training's evaluation (the
    task shape's own Trainer) and gives the metrics training reported."""
    from hf_attn.cli import main

    write_fewrel(tmp_path / "train_wiki.json", list(range(12)), 12, seed=0)
    write_fewrel(tmp_path / "val_wiki.json", list(range(12, 18)), 12, seed=1)
    main(["train", "--arch", "proto_hatt", "--dataset", str(tmp_path / "train_wiki.json"), "--eval_dataset",
          str(tmp_path / "val_wiki.json"), "--output_dir", str(tmp_path / "run"), "--num_train_epochs", "1",
          "--per_device_train_batch_size", "4", "--eval_episodes", "30", "--seed", "3", "--save_strategy", "no",
          "--report_to", "none", "--no-progress", "--config", *SMALL, "num_ways=3", "num_shots=3",
          "num_queries=2"])  # fmt: skip
    reported = json.loads((tmp_path / "run" / "hf_attn_training.json").read_text())["metrics"]
    main(["evaluate", str(tmp_path / "run"), "--dataset", str(tmp_path / "val_wiki.json"), "--eval_episodes", "30",
          "--output_file", str(tmp_path / "metrics.json")])  # fmt: skip
    capsys.readouterr()
    evaluated = json.loads((tmp_path / "metrics.json").read_text())
    assert evaluated["episodes"] == 30
    for name in ("accuracy", "accuracy_ci95"):
        assert abs(evaluated[name] - reported[name]) < 1e-6, (name, evaluated[name], reported[name])


@pytest.mark.parametrize("arch", ["proto_hatt", "hapn"])
def test_train_ways_draws_wider_training_episodes_capped_at_the_training_classes(arch, tmp_path, capsys):
    """`--train_ways` (the FewRel framework's N_for_train): training episodes are that wide, the held-out ones keep
    the model's N; more than the training split's classes trains on all of them and says so once."""
    write_fewrel(tmp_path / "train_wiki.json", list(range(8)), 8, seed=0)
    write_fewrel(tmp_path / "val_wiki.json", list(range(8, 12)), 8, seed=1)
    common = {"arch": arch, "max_steps": 2, "per_device_train_batch_size": 2, "eval_episodes": 4,
              "config": [*SMALL, "num_ways=3", "num_shots=3", "num_queries=2"], "disable_tqdm": True,
              "report_to": "none", "save": False, "dataset": str(tmp_path / "train_wiki.json"),
              "eval_dataset": str(tmp_path / "val_wiki.json")}  # fmt: skip
    wide = train(output_dir=str(tmp_path / "wide"), train_ways=6, **common)
    assert wide.trainer.train_dataset.ways == 6 and wide.trainer.eval_dataset.ways == 3
    assert np.isfinite(wide.metrics["accuracy"]) and "training episodes are" not in capsys.readouterr().out
    capped = train(output_dir=str(tmp_path / "capped"), train_ways=20, **common)
    assert capped.trainer.train_dataset.ways == 8 and capped.trainer.eval_dataset.ways == 3
    said = capsys.readouterr().out
    assert said.count("--train_ways 20: the training split has 8 classes") == 1 and "8-way" in said
    with pytest.raises(ValueError, match=r"--train_ways.*1.*at least 2"):
        train(output_dir=str(tmp_path / "one"), train_ways=1, **common)
