"""Flat AttentionXML learns multi-label topic sets (`label_topics`) through `Trainer`, and each label's own attention
row lands on that label's words."""

from __future__ import annotations

import pytest
import torch

from hf_attn.commands.train import train
from hf_attn.data import label_topics, topic_labels

NUM_TRAIN = 1500
CONFIG = {"embedding_size": 32, "hidden_size": 32, "linear_sizes": [32], "hidden_dropout_prob": 0.1,
          "embedding_dropout_prob": 0.1}  # fmt: skip


def test_learns_label_sets_and_each_label_attends_to_its_own_words(tmp_path):
    result = train(
        tmp_path, arch="attention_xml", num_train=NUM_TRAIN, num_eval=300, epochs=8, learning_rate=1e-2,
        config_overrides=CONFIG, disable_tqdm=True, save=False, logging_steps=10**9,
    )  # fmt: skip
    assert result.metrics["micro_f1"] >= 0.95, result.metrics  # measured 0.996
    model, tokenizer = result.model.eval(), result.tokenizer
    held_out = label_topics(NUM_TRAIN + 300, seed=0).select(range(NUM_TRAIN, NUM_TRAIN + 300))  # as `train` splits
    names = topic_labels()  # the generator's order, which `evidence` indexes
    hits = total = 0
    for row in held_out:
        with torch.no_grad():
            attentions = model(**tokenizer(row["text"], return_tensors="pt")).label_attentions[0]  # (N, T)
        for label in row["labels"]:
            own = {position for position, index in enumerate(row["evidence"]) if index == names.index(label)}
            if own:  # an implied parent may have no word of its own
                total += 1
                hits += int(attentions[model.config.label2id[label]].argmax().item() in own)
    # Chance: a text has 1-6 evidence words among 7-22 tokens. Measured 0.86.
    assert hits / total >= 0.7, (hits, total)


def test_trains_from_the_command_line_on_a_folder_in_the_xmc_text_layout(tmp_path, capsys):
    """`train_texts.txt` / `train_labels.txt` and `test_*` (AttentionXML's data layout): `--dataset FOLDER
    --label_column labels`; the held-out split is the test files; P@k and nDCG@k are reported and carded."""
    import json

    from hf_attn.cli import main

    folder = tmp_path / "topics"
    folder.mkdir()
    rows = label_topics(1100, seed=1)
    for split, part in (("train", rows.select(range(1000))), ("test", rows.select(range(1000, 1100)))):
        (folder / f"{split}_texts.txt").write_text("\n".join(part["text"]) + "\n")
        (folder / f"{split}_labels.txt").write_text("\n".join(" ".join(labels) for labels in part["labels"]) + "\n")
    main(["train", "--arch", "attention_xml", "--dataset", str(folder), "--label_column", "labels", "--output_dir",
          str(tmp_path / "model"), "--num_train_epochs", "8", "--learning_rate", "1e-2", "--no-progress",
          "--save_strategy", "no", "--report_to", "none", "--config", "embedding_size=32", "hidden_size=32",
          "linear_sizes=[32]"])  # fmt: skip
    capsys.readouterr()
    record = json.loads((tmp_path / "model" / "hf_attn_training.json").read_text())
    assert record["settings"]["held-out examples"] == 100 and record["dataset"]["name"] == "topics"
    # Measured P@1 0.99, nDCG@3 0.99 (P@3 is bounded by the 1-6 labels a text has).
    assert record["metrics"]["precision_at_1"] >= 0.9 and record["metrics"]["ndcg_at_3"] >= 0.9, record["metrics"]
    card = (tmp_path / "model" / "README.md").read_text()
    assert "precision_at_3" in card and "ndcg_at_5" in card
    (folder / "test_labels.txt").write_text("sports\n")
    with pytest.raises(SystemExit, match=r"hf-attn train: .*test_texts.txt has 100 lines but test_labels.txt has 1"):
        main(["train", "--arch", "attention_xml", "--dataset", str(folder), "--label_column", "labels",
              "--output_dir", str(tmp_path / "again")])  # fmt: skip
