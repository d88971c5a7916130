"""HAN learns the evidence-document task, its sentence attention finds the evidence sentence, and the trained
folder serves `pipeline("text-classification")`."""

from __future__ import annotations

import datasets
import pytest
import torch
import transformers
from transformers import AutoModelForSequenceClassification, AutoTokenizer, pipeline

from hf_attn.commands.train import train
from hf_attn.tokenization import DocumentTokenizerFast

CONFIG = {"embedding_size": 32, "word_hidden_size": 32, "sentence_hidden_size": 32, "word_attention_size": 32,
          "sentence_attention_size": 32}  # fmt: skip


def run(tmp_path, seed: int, save: bool = False) -> dict[str, float]:
    transformers.logging.set_verbosity_error()
    datasets.disable_progress_bars()
    result = train(
        tmp_path,
        arch="han",
        num_train=2000,
        num_eval=500,
        seed=seed,
        epochs=10,
        learning_rate=5e-3,
        config_overrides=CONFIG,
        disable_tqdm=True,
        save=save,
        logging_steps=10**9,
    )
    metrics = result.metrics
    print(
        f"\nseed {seed}: accuracy {metrics['accuracy']:.3f}, sentence hit rate {metrics['hit_rate']:.3f}, "
        f"evidence sentence mass {metrics['evidence_mass']:.3f}"
    )
    return metrics


def test_learns_the_evidence_task_and_attends_to_the_evidence_sentence(tmp_path):
    metrics = run(tmp_path, seed=1, save=True)
    assert metrics["accuracy"] >= 0.95
    assert metrics["hit_rate"] >= 0.90  # the argmax sentence is the evidence sentence

    tokenizer = AutoTokenizer.from_pretrained(tmp_path)
    assert isinstance(tokenizer, DocumentTokenizerFast)
    model = AutoModelForSequenceClassification.from_pretrained(tmp_path).eval()
    document = "we paid at the counter . the bus did not come . the food was wonderful . after that ."
    batch = tokenizer([document], return_tensors="pt")
    assert batch["input_ids"].shape[:2] == (1, 4)
    with torch.no_grad():
        output = model(**batch)
    assert output.sentence_attentions.shape == (1, 4) and output.word_attentions.shape == batch["input_ids"].shape
    classifier = pipeline("text-classification", model=model, tokenizer=tokenizer)
    assert classifier(document)[0]["label"] == "positive"
    assert classifier(document.replace("wonderful", "dreadful"))[0]["label"] == "negative"


@pytest.mark.slow
def test_learning_holds_across_seeds(tmp_path):
    """Accuracy holds on every seed. The sentence attention finds the evidence sentence on most seeds, not all: the
    sentence bi-GRU also carries the evidence into its neighbours' states, and on some seeds (4: hit rate 0.57)
    the attention settles on a neighbour while the prediction stays right."""
    runs = [run(tmp_path, seed=seed) for seed in (0, 2, 3, 4)]
    assert all(metrics["accuracy"] >= 0.95 for metrics in runs)
    assert sum(metrics["hit_rate"] >= 0.90 for metrics in runs) >= 3
