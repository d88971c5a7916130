"""HAPN learns classes it never saw (the synthetic few-shot task's held-out classes), its word attention finds the
words that carry a class, and the user's side works on the trained model: `model.predict` with label names of the
user's choosing, and the `hf-attn-few-shot` pipeline."""

from __future__ import annotations

import numpy as np
import pytest
from transformers import AutoTokenizer, pipeline

from hf_attn.commands.train import train
from hf_attn.data.episodes import few_shot_classes

SMALL = ["hidden_size=32", "word_embedding_size=16", "max_sentence_length=20"]


@pytest.fixture(scope="session")
def hapn_run(tmp_path_factory):
    output = tmp_path_factory.mktemp("hapn")
    result = train(
        arch="hapn", output_dir=str(output), num_train=1280, num_eval=480, num_train_epochs=1,
        per_device_train_batch_size=4, learning_rate=3e-3, config=SMALL, eval_episodes=100, disable_tqdm=True,
        report_to="none", logging_steps=1000,
    )  # fmt: skip
    return result, output


@pytest.mark.xdist_group("hapn_run")
def test_hapn_learns_classes_it_never_saw_and_its_word_attention_finds_their_words(hapn_run):
    result, _ = hapn_run
    metrics = result.metrics
    assert metrics["accuracy"] >= 0.75, metrics  # chance: 0.2
    assert metrics["accuracy_ci95"] < 0.05
    assert metrics["evidence_mass"] > 1.3 * metrics["evidence_mass_uniform"], metrics
    assert metrics["hit_rate"] > metrics["evidence_mass_uniform"], metrics


@pytest.mark.xdist_group("hapn_run")
def test_predict_and_the_pipeline_name_the_held_out_labels(hapn_run):
    _, output = hapn_run
    from hf_attn.models.hapn.modeling_hapn import HapnForFewShotClassification

    model = HapnForFewShotClassification.from_pretrained(output).eval()
    tokenizer = AutoTokenizer.from_pretrained(output)
    rows = few_shot_classes(16 * 12, seed=7, split="eval")
    names = {f"class {64 + i}": f"topic {chr(ord('A') + i)}" for i in range(16)}  # label names the user chooses
    chosen = [f"class {64 + i}" for i in (0, 3, 5, 9, 12)]
    support_texts, support_labels, queries, truth = [], [], [], []
    counts: dict[str, int] = {}
    for text, label in zip(rows["text"], rows["label"], strict=True):
        if label not in chosen:
            continue
        counts[label] = counts.get(label, 0) + 1
        if counts[label] <= 4:  # K = 4: not the training K
            support_texts.append(text)
            support_labels.append(names[label])
        else:
            queries.append(text)
            truth.append(names[label])
    predicted = model.predict(support_texts, support_labels, queries, tokenizer)
    accuracy = np.mean([p == t for p, t in zip(predicted, truth, strict=True)])
    assert accuracy >= 0.75, accuracy
    detailed = model.predict(support_texts, support_labels, queries[:2], tokenizer, output_attentions=True)
    assert set(detailed[0]["scores"]) == set(support_labels)
    assert len(detailed[0]["instance_attention"][support_labels[0]]) == 4
    assert [token for token, _ in detailed[0]["word_attention"]] == queries[0].split()

    classifier = pipeline("hf-attn-few-shot", model=str(output))
    answer = classifier(queries[0], support_texts=support_texts, support_labels=support_labels)
    assert answer["label"] == predicted[0] and answer["score"] == pytest.approx(max(answer["scores"].values()))
    many = classifier(queries[:3], support_texts=support_texts, support_labels=support_labels)
    assert [item["label"] for item in many] == predicted[:3]
    with pytest.raises(ValueError, match="at least 2 distinct labels"):
        model.predict(support_texts[:2], ["same", "same"], queries[:1], tokenizer)
    with pytest.raises(ValueError, match="one label per support text"):
        model.predict(support_texts, support_labels[:-1], queries[:1], tokenizer)
    with pytest.raises(ValueError, match="needs `support_texts=` and `support_labels=`"):
        classifier(queries[0])
