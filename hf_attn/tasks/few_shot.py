"""N-way K-shot classification over episodes (the `few_shot` shape: Proto-HATT, HAPN)."""

from __future__ import annotations

import math
from typing import Any

from datasets import Dataset
from transformers import PreTrainedConfig, TrainerCallback

from ..data.episodes import CLASS_COLUMN, EpisodeDataset, class_rows, compute_episode_metrics, eligible_classes
from ..data.kinds import EPISODE, FEW_SHOT_PREDICTION, Episodes
from ..data.task_data import TASK_LAYOUTS, TaskData
from ..layers.few_shot import entity_token_positions
from .base import TaskShape
from .metrics import EVIDENCE_METRICS
from .scoring import word_attention_on_evidence


class FewShotClassification(TaskShape):
    """N-way K-shot classification (Proto-HATT, HAPN): instances are a text (with, for relations, the head and tail
    entity's word index in `head` / `tail` columns) and a class name; held-out classes never occur in training.
    The Trainer's items are episodes (`hf_attn.data.episodes.EpisodeDataset`): the model's `num_ways`,
    `num_shots`, `num_queries` per class, with the support noise of `TaskData.episode_settings`; an epoch is as many
    episodes as there are training instances, drawn anew each epoch; the held-out episodes are a fixed, seeded
    set. Reports the accuracy averaged over the held-out episodes with its 95% interval (`accuracy_ci95`), and for
    a model with word attention, the share of it on the words that carry the class (`hit_rate`, `evidence_mass`)
    where the task knows them."""

    layout = TASK_LAYOUTS["few_shot"]
    reported_metrics = ("accuracy", "accuracy_ci95", *EVIDENCE_METRICS)
    label_kinds = (EPISODE,)
    needs_ahead = "the instances of every class, to draw episodes from"
    episodic = True
    input_kinds = (Episodes,)

    def label_names(self, data):
        return None  # classes are names, new at test time: no label set in the config

    def encoder(self, data, tokenizer, config, head, max_length=None):
        longest = max_length or config.max_sentence_length
        positions = config.use_entity_positions
        if positions and not {"head", "tail"} <= set(data.train.column_names):
            raise ValueError(
                f"{type(config).__name__} reads entity positions (use_entity_positions): the data needs `head` and "
                "`tail` columns (the word index of each entity, as FewRel's `h` and `t`), or set "
                "--config use_entity_positions=false."
            )

        def encode(batch: dict[str, list]) -> dict[str, list]:
            encoded = tokenizer(batch[data.text_column], truncation=True, max_length=longest)
            rows = {
                "input_ids": encoded["input_ids"],
                "attention_mask": encoded["attention_mask"],
                CLASS_COLUMN: [str(label) for label in batch[data.label_column]],
            }
            if positions:
                rows["entity_positions"] = [
                    entity_token_positions(encoded, i, (head, tail), len(ids))
                    for i, (ids, head, tail) in enumerate(
                        zip(encoded["input_ids"], batch["head"], batch["tail"], strict=True)
                    )
                ]
            return rows

        return encode

    def metrics(self, head, config, tokenizer, data=None):
        return compute_episode_metrics

    def episodes(
        self,
        split: Dataset,
        config: PreTrainedConfig,
        data: TaskData,
        count: int,
        seed: int,
        fixed: bool,
        ways: int | None = None,
    ) -> Any:
        return EpisodeDataset(
            split,
            ways or config.num_ways,
            config.num_shots,
            config.num_queries,
            count,
            seed=seed,
            noise_rate=data.episode_settings.get("noise_rate", 0.0),
            fixed=fixed,
        )

    @staticmethod
    def training_ways(split: Dataset, config: PreTrainedConfig, data: TaskData) -> int:
        """N of the training episodes: `--train_ways` where given, else the model's `num_ways`. The FewRel
        framework trains prototypical models on 20-way episodes and scores 5-way ones (thunlp/FewRel and
        HATT-Proto `train.py`: `framework.train(model, model_name, 4, 20, N, K, 5)`, B = 4, N_for_train = 20): more
        classes an episode make a harder training task. A split with fewer classes trains on all of them, said once,
        so that one recipe serves FewRel's 64 training relations and a smaller set alike."""
        wanted = data.episode_settings.get("train_ways") or config.num_ways
        available = len(eligible_classes(class_rows(split), config.num_shots, config.num_queries))
        if wanted > available >= config.num_ways:
            print(
                f"[hf-attn] --train_ways {wanted}: the training split has {available} classes of at least "
                f"{config.num_shots + config.num_queries} instances (K + Q); training episodes are {available}-way.",
                flush=True,
            )
            return available
        return wanted

    def trainer(self, args, model, head, tokenizer, data, train_split, eval_split, callbacks):
        config = model.config
        callbacks = list(callbacks)
        train_episodes = None
        if train_split is not None:
            ways = self.training_ways(train_split, config, data)
            train_episodes = self.episodes(
                train_split, config, data, len(train_split), args.seed, fixed=False, ways=ways
            )
            callbacks.append(EpisodeEpochCallback(train_episodes))
        eval_episodes = self.episodes(
            eval_split, config, data, data.episode_settings.get("eval_episodes", 500), args.seed + 1, fixed=True
        )
        return super().trainer(args, model, head, tokenizer, data, train_episodes, eval_episodes, callbacks)

    def extra_metrics(self, model, head, encoded_eval, data):
        if data.evidence_column is None or head.evidence_field is None:  # e.g. Proto-HATT: maps over shots
            return {}
        count = min(data.episode_settings.get("eval_episodes", 500), 100)
        episodes = self.episodes(encoded_eval, model.config, data, count, seed=1, fixed=True)
        collator = head.inputs.collator(model.config)
        evidence = list(encoded_eval[data.evidence_column])  # read row by row below: a plain list
        return word_attention_on_evidence(model, episodes, evidence, collator, head.evidence_field)

    def headline(self, metrics):
        return (
            f"held-out accuracy {metrics['accuracy']:.4f} ± {metrics.get('accuracy_ci95', float('nan')):.4f} over "
            f"{metrics.get('episodes', 0):.0f} episodes"
        )

    def predict(self, model, tokenizer, head, texts, pairs=None, top_k=5):
        raise ValueError(FEW_SHOT_PREDICTION)


class EpisodeEpochCallback(TrainerCallback):
    """New training episodes each epoch: sets the episode dataset's epoch when `Trainer` begins one (accelerate
    tells only iterable datasets about epochs)."""

    def __init__(self, dataset: Any) -> None:
        self.dataset = dataset

    def on_epoch_begin(self, args, state, control, **kwargs):
        self.dataset.set_epoch(math.floor(state.epoch + 1e-6))
