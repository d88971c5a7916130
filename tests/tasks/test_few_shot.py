"""The few-shot task shape (hf_attn.tasks.few_shot) end to end: FewRel files through `hf-attn train` and `hf-attn
evaluate`, and the training episodes' N (`--train_ways`). Each architecture's learning on held-out classes is in its
own folder (tests/models/hapn, tests/models/proto_hatt)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hf_attn.commands.train import train
from tests.helpers import write_fewrel

SMALL = ["hidden_size=32", "word_embedding_size=16", "max_sentence_length=20"]


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
