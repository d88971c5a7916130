"""ELMo's two stages through `Trainer`: the biLM learns the generated corpus (held-out perplexity falls), then a
tagger on the frozen biLM's scalar mix tags the words that only their context disambiguates."""

from __future__ import annotations

from collections import Counter, defaultdict

import datasets
import pytest
import transformers
from transformers import AutoModelForTokenClassification, AutoTokenizer, Trainer, TrainingArguments, set_seed

from hf_attn import ElmoConfig, ElmoForTokenClassification
from hf_attn.commands.train import token_accuracy_at, train
from hf_attn.data import (
    PaddingCollator,
)
from hf_attn.models.elmo.synthetic_elmo import TAGS, ambiguous_word_tagging
from hf_attn.models.elmo.tokenization_elmo import train_elmo_tokenizer

CONFIG = {"character_embedding_size": 8, "filters": [[1, 16], [2, 16], [3, 32]], "projection_dim": 32,
          "hidden_size": 64, "num_hidden_layers": 2, "dropout": 0.0, "elmo_dropout": 0.0}  # fmt: skip


def run(tmp_path, seed: int, save: bool = False) -> dict[str, float]:
    transformers.logging.set_verbosity_error()
    datasets.disable_progress_bars()
    result = train(
        tmp_path,
        arch="elmo",
        num_train=2000,
        num_eval=500,
        seed=seed,
        epochs=4,
        learning_rate=5e-3,
        config_overrides=CONFIG,
        disable_tqdm=True,
        save=save,
        logging_steps=10**9,
    )
    metrics = result.metrics
    print(
        f"\nseed {seed}: perplexity {metrics['perplexity_before_lm_training']:.2f} -> {metrics['perplexity']:.2f}, "
        f"accuracy {metrics['accuracy']:.4f}, ambiguous words {metrics['ambiguous_accuracy']:.4f}"
    )
    return metrics


def context_free_ceiling(seed: int) -> float:
    """The best accuracy on the ambiguous words of the held-out split for any tagger that sees the word alone:
    each word's majority tag in the training split."""
    data = ambiguous_word_tagging(2500, seed=seed)
    counts: dict[str, Counter] = defaultdict(Counter)
    for row in data.select(range(2000)):
        counts[row["text"].split()[row["ambiguous_index"]]][row["ambiguous_is_verb"]] += 1
    held_out = data.select(range(2000, 2500))
    hits = [
        counts[r["text"].split()[r["ambiguous_index"]]].most_common(1)[0][0] == r["ambiguous_is_verb"]
        for r in held_out
    ]
    return sum(hits) / len(hits)


def tagger_on_an_untrained_bilm(seed: int, tmp_path) -> float:
    """The control: the same tagger and training, on a frozen biLM that never saw the corpus."""
    data = ambiguous_word_tagging(2500, seed=seed)
    train_split, held_out = data.select(range(2000)), data.select(range(2000, 2500))
    tokenizer = train_elmo_tokenizer(train_split["text"])

    def encode(batch):
        encoded = dict(tokenizer(batch["text"]))
        encoded["labels"] = [[-100, *tags, -100] for tags in batch["tags"]]
        return encoded

    set_seed(seed)
    model = ElmoForTokenClassification(ElmoConfig(vocab_size=len(tokenizer), num_labels=len(TAGS), **CONFIG))
    args = TrainingArguments(str(tmp_path / "control"), num_train_epochs=4, per_device_train_batch_size=32,
                             learning_rate=5e-3, report_to="none", save_strategy="no", disable_tqdm=True,
                             use_cpu=True, logging_steps=10**9, seed=seed)  # fmt: skip
    columns = train_split.column_names
    train_split = train_split.map(encode, batched=True, remove_columns=columns)
    Trainer(model=model, args=args, train_dataset=train_split, data_collator=PaddingCollator(0)).train()
    return token_accuracy_at(model, held_out.map(encode, batched=True), "ambiguous_index", offset=1)


def test_bilm_learns_the_corpus_and_its_features_disambiguate_words_by_context(tmp_path):
    metrics = run(tmp_path, seed=0, save=True)
    assert metrics["perplexity"] * 3 <= metrics["perplexity_before_lm_training"]
    ceiling = context_free_ceiling(seed=0)
    assert ceiling < 0.6  # the task needs context
    assert metrics["ambiguous_accuracy"] >= 0.95 and metrics["accuracy"] >= 0.98
    # What the tagger reads comes from language modelling: on an untrained biLM it stays near chance.
    control = tagger_on_an_untrained_bilm(0, tmp_path)
    print(f"tagger on an untrained biLM: ambiguous words {control:.4f}")
    assert control <= 0.7
    # The saved tagger (biLM inside) reloads with the Auto classes and tags a new sentence in context.
    model = AutoModelForTokenClassification.from_pretrained(tmp_path).eval()
    tokenizer = AutoTokenizer.from_pretrained(tmp_path)
    tags = model(**tokenizer(["they watch the old watch"], return_tensors="pt")).logits[0, 1:-1].argmax(-1)
    assert [model.config.id2label[int(t)] for t in tags] == ["PRON", "VERB", "DET", "ADJ", "NOUN"]
    assert list(model.config.id2label.values()) == TAGS


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_other_seeds(tmp_path, seed):
    metrics = run(tmp_path, seed=seed)
    assert metrics["perplexity"] * 3 <= metrics["perplexity_before_lm_training"]
    assert metrics["ambiguous_accuracy"] >= 0.95


def test_ambiguous_tagging_needs_context_and_tags_every_word():
    from hf_attn.models.elmo.synthetic_elmo import AMBIGUOUS_WORDS, TAGS, ambiguous_word_tagging

    data = ambiguous_word_tagging(400, seed=3)
    assert data["text"] == ambiguous_word_tagging(400, seed=3)["text"]
    assert data["text"] != ambiguous_word_tagging(400, seed=4)["text"]
    for row in data:
        words, tags = row["text"].split(), [TAGS[t] for t in row["tags"]]
        assert len(words) == len(tags)
        position = row["ambiguous_index"]
        assert words[position] in AMBIGUOUS_WORDS
        assert sum(word in AMBIGUOUS_WORDS for word in words) == 1  # exactly one ambiguous word
        assert tags[position] == ("VERB" if row["ambiguous_is_verb"] else "NOUN")
        # Its left neighbour decides: a subject before a verb, a determiner or an adjective before a noun.
        assert tags[position - 1] in (("NOUN", "PRON") if row["ambiguous_is_verb"] else ("DET", "ADJ"))
    verbs = sum(data["ambiguous_is_verb"])
    assert 0.4 < verbs / len(data) < 0.6
