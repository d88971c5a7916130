"""Flat AttentionXML learns multi-label topic sets (`label_topics`) through `Trainer`, and each label's own attention
row lands on that label's words."""

from __future__ import annotations

import torch

from hf_attn.data import label_topics, topic_labels
from hf_attn.training import train

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
