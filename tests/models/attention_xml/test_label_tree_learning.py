"""AttentionXML with its label tree learns the extreme multi-label task (`xmc_documents`: power-law label
frequencies, a latent topic hierarchy): the tree built from the training data, levels trained top-down with
`Trainer`, predicted by the candidate beam, from the command line (`--head AttentionXmlForLabelTree`) and from
Python (`train_label_tree`)."""

from __future__ import annotations

import json

import numpy as np
import torch
from transformers import TrainingArguments

from hf_attn import AttentionXmlConfig, AttentionXmlForLabelTree
from hf_attn.models.attention_xml.synthetic_attention_xml import xmc_documents
from hf_attn.models.attention_xml.training_attention_xml import evaluate_label_tree, train_label_tree, tree_of
from hf_attn.tokenization import train_word_level_tokenizer

NUM_LABELS, NUM_TRAIN, NUM_EVAL = 64, 1200, 200
TREE = ["tree_cluster_size=4", "tree_children=4", "tree_height=2", "tree_top_candidates=4"]
SIZES = ["embedding_size=32", "hidden_size=32", "linear_sizes=[32]", "hidden_dropout_prob=0.1",
         "embedding_dropout_prob=0.1"]  # fmt: skip


def write_xmc_folder(folder, data) -> None:
    """`train_*` / `test_*` texts and space-separated labels: the extreme classification text layout."""
    folder.mkdir()
    for split, rows in (("train", range(NUM_TRAIN)), ("test", range(NUM_TRAIN, NUM_TRAIN + NUM_EVAL))):
        part = data.select(rows)
        (folder / f"{split}_texts.txt").write_text("\n".join(part["text"]) + "\n")
        (folder / f"{split}_labels.txt").write_text("\n".join(" ".join(labels) for labels in part["labels"]) + "\n")


def test_the_label_tree_learns_from_the_command_line_and_predicts_after_reloading(tmp_path, capsys):
    from hf_attn.cli import main

    data = xmc_documents(NUM_TRAIN + NUM_EVAL, num_labels=NUM_LABELS, seed=0)
    write_xmc_folder(tmp_path / "xmc", data)
    main(["train", "--arch", "attention_xml", "--head", "AttentionXmlForLabelTree", "--dataset", str(tmp_path / "xmc"),
          "--output_dir", str(tmp_path / "model"), "--num_train_epochs", "8", "--learning_rate", "1e-2",
          "--no-progress", "--save_strategy", "no", "--report_to", "none", "--config", *SIZES, *TREE])  # fmt: skip
    out = capsys.readouterr().out
    assert "held-out P@1" in out
    record = json.loads((tmp_path / "model" / "hf_attn_training.json").read_text())
    metrics = record["metrics"]
    # Measured P@1 0.90, where always answering the most frequent label gives 0.295; PSP@k from the training
    # frequencies.
    assert metrics["precision_at_1"] >= max(0.8, chance_at_1(data) + 0.4), metrics
    assert 0 < metrics["psp_at_5"] <= 1 and metrics["ndcg_at_3"] > 0.6, metrics
    assert record["settings"]["steps"] > 0  # the levels' steps together

    model = AttentionXmlForLabelTree.from_pretrained(tmp_path / "model").eval()
    # 64 labels in clusters of at most 4 (M), compressed 4-ary (K) in 2 levels (H) above the labels; the tree
    # is one built from the data (not the id-contiguous placeholder of an untrained cascade).
    assert model.config.tree_level_sizes == [4, 16, 64]
    clusters = tree_of(model).parents[-1]
    assert not np.array_equal(clusters, np.arange(NUM_LABELS) // 4)
    card = (tmp_path / "model" / "README.md").read_text()
    assert "precision_at_1" in card and "ndcg_at_5" in card

    main(["predict", str(tmp_path / "model"), data["text"][NUM_TRAIN], "--json", "--top-k", "3"])
    predicted = json.loads(capsys.readouterr().out)[0]["labels"]
    assert len(predicted) == 3 and predicted[0]["label"] in model.config.label2id
    assert predicted[0]["score"] >= predicted[1]["score"] >= predicted[2]["score"] > 0
    main(["evaluate", str(tmp_path / "model"), "--dataset", str(tmp_path / "xmc"), "--eval_split", "test",
          "--output_file", str(tmp_path / "metrics.json")])  # fmt: skip
    evaluated = json.loads((tmp_path / "metrics.json").read_text())
    assert evaluated["examples"] == NUM_EVAL
    # The same beam, the same scores: every metric training reported, PSP@k too (its propensities are the training
    # label frequencies the config records, not the evaluated rows').
    assert {name for name in metrics if name.startswith("psp_at_")} == {"psp_at_1", "psp_at_3", "psp_at_5"}
    for name, value in metrics.items():
        assert abs(evaluated[name] - value) < 1e-6, (name, evaluated[name], value)


def test_train_label_tree_from_python_matches_a_given_tree(tmp_path):
    """`train_label_tree` with a given tree keeps it, trains every level and reloads with it."""
    data = xmc_documents(300, num_labels=16, seed=1)
    texts = data["text"]
    label_sets = [[int(name[1:]) for name in names] for names in data["labels"]]
    tokenizer = train_word_level_tokenizer(texts)
    config = AttentionXmlConfig(vocab_size=len(tokenizer), embedding_size=8, hidden_size=8, linear_sizes=[8],
                                num_labels=16, tree_cluster_size=2, tree_children=2, tree_height=2,
                                tree_top_candidates=2)  # fmt: skip
    from hf_attn.models.attention_xml.training_attention_xml import build_tree_for

    tree = build_tree_for(texts, label_sets, config)
    args = TrainingArguments(output_dir=str(tmp_path / "run"), num_train_epochs=1, per_device_train_batch_size=32,
                             report_to="none", save_strategy="no", disable_tqdm=True, use_cpu=True)  # fmt: skip
    model = train_label_tree(texts, label_sets, tokenizer, config, args, tree=tree)
    assert isinstance(model, AttentionXmlForLabelTree) and not model.training
    assert all(np.array_equal(a, b) for a, b in zip(tree_of(model).parents, tree.parents, strict=True))
    metrics = evaluate_label_tree(model, tokenizer, texts[:50], label_sets[:50])
    assert set(metrics) >= {"precision_at_1", "ndcg_at_5"}
    model.save_pretrained(tmp_path / "saved")
    reloaded = AttentionXmlForLabelTree.from_pretrained(tmp_path / "saved").eval()
    inputs = tokenizer(texts[:4], padding=True, return_tensors="pt")
    with torch.no_grad():
        assert torch.equal(reloaded(**inputs).top_labels, model(**inputs).top_labels)


def chance_at_1(data) -> float:
    """P@1 of always predicting the most frequent training label."""
    counts: dict[str, int] = {}
    for labels in data["labels"][:NUM_TRAIN]:
        for label in labels:
            counts[label] = counts.get(label, 0) + 1
    frequent = max(counts, key=counts.get)
    return float(np.mean([frequent in labels for labels in data["labels"][NUM_TRAIN:]]))
