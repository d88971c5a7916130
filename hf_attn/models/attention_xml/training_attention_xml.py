"""Training AttentionXML's probabilistic label tree level by level with `Trainer` (You et al., NeurIPS 2019, §2.3).

1. The tree: `label_tree.py` (TF-IDF label representations, balanced 2-means, compression to K-ary
   levels), unless one is given.
2. Level 0 (the root's children): an `AttentionXmlForSequenceClassification` scoring every node; a node's target is 1
   when one of the example's labels lies below it.
3. Level d > 0: its candidates are the children of C nodes of level d − 1, the example's positive nodes first, then
   the beam's best (the levels trained so far, run as the cascade predicts); targets 1 for the candidates on a path
   to a label, 0 for the others, −100 for padded slots. The level starts from level d − 1's weights except the
   attention (its label table is new), as the paper prescribes.
4. The levels are assembled into an `AttentionXmlForLabelTree`, whose forward is the prediction beam.

`hf-attn train --head AttentionXmlForLabelTree` runs the same steps through the folder's `label_tree` task shape
(`tasks_attention_xml.py`); `train_label_tree` is the same from Python on texts and label ids.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from datasets import Dataset
from transformers import PreTrainedTokenizerBase, Trainer, TrainerCallback, TrainingArguments

from hf_attn.data.collators import PaddingCollator
from hf_attn.tasks.metrics import RankingMetrics
from hf_attn.utils.saving import last_complete_checkpoint, report_on_main

from .configuration_attention_xml import AttentionXmlConfig
from .label_tree import LabelTree, build_label_tree, label_representations
from .modeling_attention_xml import AttentionXmlForLabelTree


def build_tree_for(texts: Sequence[str], label_sets: Sequence[Sequence[int]], config: AttentionXmlConfig,
                   seed: int = 0) -> LabelTree:  # fmt: skip
    """The tree of §2.2 for `config.num_labels` labels from the training texts and their label ids."""
    representations = label_representations(texts, label_sets, config.num_labels)
    return build_label_tree(
        representations, config.tree_cluster_size, config.tree_children, config.tree_height, seed=seed
    )


def tree_model(config: AttentionXmlConfig, tree: LabelTree) -> AttentionXmlForLabelTree:
    """An untrained cascade for `tree`: the config gets the level sizes and children widths."""
    config = copy.deepcopy(config)
    config.tree_level_sizes = tree.level_sizes
    config.tree_max_children = [max(len(c) for c in tree.children(level)) for level in range(len(tree.parents))]
    model = AttentionXmlForLabelTree(config)
    model.set_tree([parent.tolist() for parent in tree.parents])
    return model


def tree_of(model: AttentionXmlForLabelTree) -> LabelTree:
    """The `LabelTree` a cascade holds (its `children_<d>` tables), e.g. to train a loaded model further."""
    sizes = model.config.tree_level_sizes
    parents = []
    for level in range(len(sizes) - 1):
        table = getattr(model, f"children_{level}")[: sizes[level]].cpu().numpy()
        parent = np.full(sizes[level + 1], -1, dtype=np.int64)
        nodes, slots = np.nonzero(table != sizes[level + 1])
        parent[table[nodes, slots]] = nodes
        if (parent < 0).any():
            raise ValueError(f"level {level + 1} has nodes without a parent: the model's tree is incomplete.")
        parents.append(parent)
    return LabelTree(parents, sizes[0])


@torch.no_grad()
def _beam_nodes(model: AttentionXmlForLabelTree, encoded: Dataset, levels: int, batch_size: int) -> list[list[int]]:
    """Level `levels − 1`'s nodes for every example, best first (as the cascade of the first `levels` levels
    ranks them; padded slots left out)."""
    model.eval()
    collate = PaddingCollator(model.config.pad_token_id)
    padding = model.config.tree_level_sizes[levels - 1]
    ranked: list[list[int]] = []
    for start in range(0, len(encoded), batch_size):
        batch = collate([encoded[i] for i in range(start, min(start + batch_size, len(encoded)))])
        batch = {key: value.to(model.device) for key, value in batch.items()}
        nodes, scores, _, _ = model.beam(batch["input_ids"], batch["attention_mask"], levels=levels)
        if nodes is None:
            nodes = torch.arange(scores.size(1), device=scores.device).expand_as(scores)
        order = scores.argsort(dim=1, descending=True, stable=True)
        for row in nodes.gather(1, order).tolist():
            ranked.append([node for node in row if node != padding])
    return ranked


def _level_examples(tree: LabelTree, label_sets, level: int, ranked, top: int, width: int) -> tuple[list, list]:
    """Candidates and targets of `level` (> 0): the children of `top` nodes of level − 1, positives first."""
    children = tree.children(level - 1)
    padding = tree.level_sizes[level]
    candidates, targets = [], []
    for labels, beam in zip(label_sets, ranked, strict=True):
        chosen = sorted(tree.ancestors(labels, level - 1))[:top]
        taken = set(chosen)
        chosen += [node for node in beam if node not in taken][: top - len(chosen)]
        row = [int(child) for node in chosen for child in children[node]]
        positives = tree.ancestors(labels, level)
        row = (row + [padding] * width)[:width]
        candidates.append(row)
        targets.append([(-100.0 if node == padding else float(node in positives)) for node in row])
    return candidates, targets


def train_levels(
    model: AttentionXmlForLabelTree,
    encoded: Dataset,
    label_sets: Sequence[Sequence[int]],
    args: TrainingArguments,
    callbacks: Sequence[TrainerCallback] = (),
    resume: bool = False,
) -> int:
    """Trains the cascade's levels top-down (module docstring) on `encoded` texts (`input_ids`, `attention_mask`)
    with their label id sets; level d's checkpoints go to `args.output_dir/level_<d>`, and `resume=True` continues
    each level from its last checkpoint there (a finished level is not trained again). Returns the steps taken."""
    tree = tree_of(model)
    label_sets = [sorted(set(labels)) for labels in label_sets]
    base = encoded.select_columns(["input_ids", "attention_mask"])
    sizes, config = tree.level_sizes, model.config
    steps = 0
    for level, network in enumerate(model.levels):
        if level == 0:
            targets = []
            for labels in label_sets:
                row = np.zeros(sizes[0], dtype=np.float32)
                row[list(tree.ancestors(labels, 0))] = 1.0
                targets.append(row.tolist())
            data = base.add_column("labels", targets)
        else:
            # Start from level d - 1, all but the attention's label table (a different set of nodes); a frozen
            # embedding (--freeze_embeddings) stays frozen.
            above = model.levels[level - 1]
            previous = {k: v for k, v in above.state_dict().items() if not k.startswith("attention.")}
            network.load_state_dict(previous, strict=False)
            for name, parameter in network.named_parameters():
                if not name.startswith("attention."):
                    parameter.requires_grad_(above.get_parameter(name).requires_grad)
            top = min(config.tree_top_candidates, sizes[level - 1])
            width = top * config.tree_max_children[level - 1]
            ranked = _beam_nodes(model, base, level, args.per_device_eval_batch_size)
            candidates, targets = _level_examples(tree, label_sets, level, ranked, top, width)
            data = base.add_column("candidates", candidates).add_column("labels", targets)
        level_args = copy.copy(args)
        level_args.output_dir = str(Path(args.output_dir) / f"level_{level}")
        checkpoint = None
        if resume and Path(level_args.output_dir).is_dir():
            checkpoint = last_complete_checkpoint(level_args.output_dir, report_on_main(args, f"level {level}: "))
        network.train()
        trainer = Trainer(
            model=network,
            args=level_args,
            train_dataset=data,
            data_collator=PaddingCollator(config.pad_token_id),
            callbacks=list(callbacks),
        )
        trainer.train(resume_from_checkpoint=checkpoint)
        steps += trainer.state.global_step
    model.eval()
    return steps


def train_label_tree(
    texts: Sequence[str],
    label_sets: Sequence[Sequence[int]],
    tokenizer: PreTrainedTokenizerBase,
    config: AttentionXmlConfig,
    args: TrainingArguments,
    tree: LabelTree | None = None,
) -> AttentionXmlForLabelTree:
    """Builds the tree (unless given) and trains its levels top-down with `Trainer` (module docstring); each
    level's checkpoints go to `args.output_dir/level_<d>`. Returns the assembled cascade."""
    label_sets = [sorted(set(labels)) for labels in label_sets]
    tree = tree or build_tree_for(texts, label_sets, config, seed=args.seed)
    model = tree_model(config, tree)
    encoded = tokenizer(list(texts), truncation=True, max_length=config.max_text_length)
    data = Dataset.from_dict({"input_ids": encoded["input_ids"], "attention_mask": encoded["attention_mask"]})
    train_levels(model, data, label_sets, args)
    return model


def evaluate_label_tree(
    model: AttentionXmlForLabelTree,
    tokenizer: PreTrainedTokenizerBase,
    texts: Sequence[str],
    label_sets: Sequence[Sequence[int]],
    ks: tuple[int, ...] = (1, 3, 5),
    batch_size: int = 64,
    propensities: np.ndarray | None = None,
) -> dict[str, float]:
    """P@k and nDCG@k (and PSP@k with `propensities`) of the cascade's beam on `texts` (labels it did not reach
    score 0), batch by batch."""
    model.eval()
    metrics = RankingMetrics(ks, propensities)
    with torch.no_grad():
        for start in range(0, len(texts), batch_size):
            batch = tokenizer(list(texts[start : start + batch_size]), truncation=True, padding=True,
                              max_length=model.config.max_text_length, return_tensors="pt")  # fmt: skip
            output = model(batch["input_ids"].to(model.device), batch["attention_mask"].to(model.device))
            gold = np.zeros((output.logits.size(0), model.config.num_labels), dtype=bool)
            for row, labels in enumerate(label_sets[start : start + batch_size]):
                gold[row, list(labels)] = True
            metrics.update(output.logits, gold)
    return metrics.compute()
