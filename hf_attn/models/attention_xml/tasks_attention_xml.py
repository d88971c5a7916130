"""AttentionXML's own task shape (`Architecture.tasks`): extreme multi-label classification on a probabilistic label
tree, trained level by level (You et al., NeurIPS 2019, §2.2–2.3). The training pipeline finds it through the
folder's row: `hf_attn.tasks.heads` imports this module and reads `TASK_SHAPES`.

Shape legend: B texts, T words, L labels.
"""

from __future__ import annotations

import torch

from hf_attn.data.cache import column_values
from hf_attn.data.collators import LabelSetCollator
from hf_attn.data.kinds import Sentence
from hf_attn.data.task_data import LabelFormat, TaskLayout
from hf_attn.tasks import MultiLabel
from hf_attn.tasks.metrics import RankingMetrics
from hf_attn.tasks.prediction import model_inputs

from .kinds import LABEL_TREE

__all__ = ["TASK_SHAPES", "LabelTreeClassification"]


class LabelTreeClassification(MultiLabel):
    """Extreme multi-label classification with a probabilistic label tree (AttentionXML, You et al. 2019, §2.2–2.3).
    The data are those of `multi_label` (a text and its label names, labels ordered by training frequency); the
    model is built on a tree made from the training data (TF-IDF label representations, balanced 2-means, K-ary
    compression: `label_tree.py`) and trained level by level, top-down, one `Trainer` per level
    (`training_attention_xml.py`). Rows keep label id lists (`LabelSetCollator` makes the multi-hot batch), and
    the held-out P@k / nDCG@k / PSP@k are computed batch by batch (`batch_eval_metrics`): nothing of size
    examples × labels is ever held."""

    layout = TaskLayout("label_tree", label_sets=True, label_format=LabelFormat.LABEL_SET)
    label_kinds = (LABEL_TREE,)
    input_kinds = (Sentence,)
    variants = ()
    variant_of = "multi_label"  # the same data: `--head AttentionXmlForLabelTree` on a multi-label task trains here

    def generates(self, head):
        return False

    def encoder(self, data, tokenizer, config, head, max_length=None):
        longest = max_length or getattr(config, "max_text_length", None)  # AttentionXML truncates to 500 tokens
        kwargs = {"truncation": longest is not None, "max_length": longest}

        def encode(batch: dict[str, list]) -> dict[str, list]:
            encoded = dict(tokenizer(batch[data.text_column], **kwargs))
            encoded["labels"] = [sorted(config.label2id[name] for name in names) for names in batch[data.label_column]]
            return encoded

        return encode

    def collator(self, tokenizer, config, head):
        return LabelSetCollator(tokenizer.pad_token_id or 0, config.num_labels)

    def metrics(self, head, config, tokenizer, data=None):
        return RankingMetrics(propensities=self.propensities(config, data))

    def prepare(self, model, args, eval_split):
        args.batch_eval_metrics = True  # `RankingMetrics` ranks each batch and forgets it

    def build_model(self, head, config, data, args):
        # Imported here: the label tree's TF-IDF and k-means (scikit-learn) load only when a tree is trained.
        from .training_attention_xml import build_tree_for, tree_model

        texts = list(column_values(data.train, data.text_column))  # read in Arrow batches, not row by row
        names = column_values(data.train, data.label_column)
        label_sets = [[config.label2id[name] for name in row] for row in names]
        return tree_model(config, build_tree_for(texts, label_sets, config, seed=args.seed))

    def fit(self, args, model, head, tokenizer, data, splits, callbacks, resume):
        from .training_attention_xml import train_levels  # scikit-learn, as in build_model

        train_split, eval_split = splits
        if isinstance(resume, str):
            raise ValueError(
                "A label tree trains one level after the other, each with its checkpoints in output_dir/level_<d>: "
                "resume with `--resume_from_checkpoint true`, not a checkpoint path."
            )
        steps = train_levels(model, train_split, train_split["labels"], args, callbacks, resume=bool(resume))
        trainer = self.trainer(args, model, head, tokenizer, data, None, eval_split, callbacks)  # evaluates the beam
        trainer.state.global_step = steps  # the levels' steps, for the record
        return trainer, self.evaluate(trainer)

    @torch.no_grad()
    def predict(self, model, tokenizer, head, texts, pairs=None, top_k=5):
        inputs = model_inputs(head, tokenizer, texts, None, model.device)
        output = model(**inputs, top_k=top_k)
        names = model.config.id2label
        return [
            {"labels": [{"label": names[int(i)], "score": float(p)} for i, p in zip(ids, scores, strict=True)]}
            for ids, scores in zip(output.top_labels, output.top_scores, strict=True)
        ]

    def headline(self, metrics):
        return f"held-out P@1 {metrics['precision_at_1']:.4f}, P@5 {metrics.get('precision_at_5', float('nan')):.4f}"


# The shapes this folder adds (`hf_attn.tasks.heads` reads them).
TASK_SHAPES = (LabelTreeClassification(),)
