"""Proto-HATT learns relations on held-out classes (the synthetic relation task: the class word between the two
entities, a distractor outside them)."""

from __future__ import annotations

import torch

from hf_attn.commands.train import train

SMALL = ["hidden_size=32", "word_embedding_size=16", "max_sentence_length=20"]


def test_proto_hatt_learns_relations_on_held_out_classes(tmp_path):
    torch.manual_seed(0)
    result = train(
        arch="proto_hatt", output_dir=str(tmp_path), num_train=1280, num_eval=480, num_train_epochs=1,
        per_device_train_batch_size=4, learning_rate=3e-3, config=[*SMALL, "feature_attention_channels=[8,16]"],
        eval_episodes=100, disable_tqdm=True, report_to="none", logging_steps=1000, save=False,
    )  # fmt: skip
    # Relations put a distractor (another class's word) outside the entity pair: chance is 0.2.
    assert result.metrics["accuracy"] >= 0.6, result.metrics
