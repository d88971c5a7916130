"""How faithful a model's attention is, over a set of labelled examples: the measures of the field's debate, each a
mean over examples with its 95% confidence interval (`statistics.estimate`).

- **Agreement** (Jain & Wallace 2019, "Attention is not Explanation", §3): Kendall's τ between the attention's
  importance of the tokens (`hf_attn.data.importance.token_importance`) and each of Integrated Gradients,
  gradient × input and leave-one-out erasure (`attribution`, `erasure.Eraser.leave_one_out`), beside the τ of a random
  scoring with the same reference.
- **Erasure** (DeYoung et al. 2020, ERASER, §4): comprehensiveness and sufficiency at k% of the tokens, the tokens
  ranked by attention, by Integrated Gradients and at random, and their area over the k's (AOPC).
- **Decision flips** (Serrano & Smith 2019, §4): the share of examples whose predicted class changes when the single
  top token of each ranking is removed.

Wiegreffe & Pinter (2019, "Attention is not not Explanation", §3) ask for the random baseline beside each figure:
a measure that cannot tell a model's attention from noise says nothing, so every figure here has one.

The prediction explained is the model's own: ŷ = argmax p(·|x), p the softmax of a class head's logits or the
sigmoid of a multi-label head's (its top label); a few-shot head's query is explained against its episode's N
classes, each query an example (`one_query_per_episode`). What is ranked and erased is the units the head's row
names (`Architecture.importance_over`): a text's tokens, STCKA's concepts, or Proto-HATT's support instances.
Shapes: B examples; T tokens (S × W words of a document; N × K support instances).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from ..data.importance import has_token_importance, importance_mask, token_importance, unit_mask
from ..data.kinds import ClassLabels, EpisodeLabels, MultiHot, TokenVocabulary
from .attribution import gradient_times_input, integrated_gradients, text_embedding_layers
from .erasure import ERASER_KS, Eraser, check_ks, ranking
from .statistics import Estimate, estimate, kendall_tau

if TYPE_CHECKING:
    from transformers import PreTrainedModel

    from ..registry.row import Head

# The rankings whose erasures are measured, and the importances attention is compared with.
RANKINGS = ("attention", "integrated_gradients", "random")
REFERENCES = ("integrated_gradients", "gradient_x_input", "leave_one_out")


def check_measurable(head: Head) -> None:
    """Refuses, in one line naming the head, a head the measures have no meaning for: one that generates (its
    attention explains each output token, not one prediction), one without a map over its input's tokens (ELMo's
    tagger and classifier: its scalar mix weighs layers, not tokens; a prototypical network without attention), or
    one whose labels are not classes."""
    name = head.model_class.__name__
    if isinstance(head.labels, TokenVocabulary):
        raise ValueError(
            f"{name} generates its output ({head.labels.name}): faithfulness is measured for a head that classifies "
            "(one prediction per text to explain), not for generation."
        )
    if not has_token_importance(head):
        fields = ", ".join(head.attention_fields) or "none"
        raise ValueError(
            f"{name} has no attention over the tokens of its text (its attention maps: {fields}): there is nothing "
            "to measure."
        )
    if not isinstance(head.labels, (ClassLabels, EpisodeLabels)):
        raise NotImplementedError(
            f"{name}'s {head.labels.name} labels are not measured yet: classes, label sets and few-shot queries are."
        )


def probabilities_of(head: Head) -> Callable[[Any], torch.Tensor]:
    """p(·|x) `(B, C)` from a head's output: sigmoid for a label set (each label its own decision), softmax for
    classes, and for a few-shot head's one query per episode (`one_query_per_episode`: logits `(B, 1, N)`) the
    softmax over the episode's N classes."""
    if isinstance(head.labels, MultiHot):
        return lambda output: output.logits.float().sigmoid()
    if isinstance(head.labels, EpisodeLabels):
        return lambda output: output.logits.float().softmax(-1)[:, 0]
    return lambda output: output.logits.float().softmax(-1)


# The prefix of a few-shot episode's support set inputs (`support_input_ids`, `(B, N, K, T)`).
SUPPORT = "support_"


def one_query_per_episode(inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Few-shot episodes `(B, Q, T)` queries, `(B, N, K, T)` support, as B·Q episodes of one query each, the support
    repeated: each query is an example, explained against its own episode (an all-padding query slot then has
    nothing to rank and is skipped). A relation episode's entity positions `(B, Q, 2)` go with their queries."""
    queries = inputs["input_ids"].shape[1]
    return {
        name: tensor.repeat_interleave(queries, dim=0)
        if name.startswith(SUPPORT)
        else tensor.reshape(tensor.shape[0] * queries, 1, *tensor.shape[2:])
        for name, tensor in inputs.items()
    }


@dataclass
class FaithfulnessReport:
    """The measures (module docstring) over `examples` texts, erasing at `ks` % of their tokens."""

    examples: int
    skipped: int  # examples without a token to rank (an empty concept set), left out of every figure
    ks: tuple[float, ...]
    agreement: dict[str, dict[str, Estimate]]  # reference -> {"attention": τ, "random": τ}
    comprehensiveness: dict[str, list[Estimate]]  # ranking -> one per k
    sufficiency: dict[str, list[Estimate]]
    aopc: dict[str, dict[str, Estimate]]  # "comprehensiveness" / "sufficiency" -> ranking -> AOPC
    flips: dict[str, Estimate]  # ranking -> share of flipped decisions
    convergence_delta: Estimate  # |Σ_t a_t − (p(ŷ|x) − p(ŷ|x'))| of Integrated Gradients
    ig_steps: int
    curves: dict[str, dict[str, np.ndarray]] = field(default_factory=dict, repr=False)  # per example, for pictures

    def as_dict(self) -> dict[str, Any]:
        """The report as JSON-ready numbers (each estimate: mean, low, high, n)."""
        return {
            "examples": self.examples,
            "skipped": self.skipped,
            "ks": list(self.ks),
            "ig_steps": self.ig_steps,
            "agreement": {ref: {name: e.as_dict() for name, e in row.items()} for ref, row in self.agreement.items()},
            "comprehensiveness": {name: [e.as_dict() for e in row] for name, row in self.comprehensiveness.items()},
            "sufficiency": {name: [e.as_dict() for e in row] for name, row in self.sufficiency.items()},
            "aopc": {what: {name: e.as_dict() for name, e in row.items()} for what, row in self.aopc.items()},
            "decision_flips": {name: e.as_dict() for name, e in self.flips.items()},
            "ig_convergence_delta": self.convergence_delta.as_dict(),
        }


def measure_faithfulness(
    model: PreTrainedModel,
    head: Head,
    batches: Iterable[dict[str, torch.Tensor]],
    ks: Sequence[float] = ERASER_KS,
    ig_steps: int = 32,
    internal_batch_size: int | None = None,
    batch_size: int = 64,
    seed: int = 0,
) -> FaithfulnessReport:
    """The measures of the module docstring for `model` (whose registry head is `head`) over `batches` of its
    inputs (padded, as its collator makes them; labels, if any, are not read: the prediction explained is the
    model's); an example whose measured input is empty (a text without a concept) is skipped and counted. `ks`: the
    erasure bins (% of each text's tokens, in (0, 100]); `ig_steps`: Integrated Gradients'
    points, run `internal_batch_size` at a time (default: `batch_size`); `batch_size`: the erasures run together."""
    check_measurable(head)
    check_ks(ks)
    was_training = model.training
    model.eval()  # dropout off while measuring; the mode is put back after
    probability = probabilities_of(head)
    pad = model.config.pad_token_id or 0
    generator = torch.Generator().manual_seed(seed)
    device = next(model.parameters()).device
    kind = head.inputs
    over = importance_mask(head)  # the units ranked and erased: a text's tokens, or support instances

    def score(inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        with torch.no_grad():
            return probability(model(**inputs))

    def differentiable(inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        return probability(model(**inputs))

    eraser = Eraser(score, kind, pad, batch_size, over)

    taus: dict[str, dict[str, list[float]]] = {ref: {"attention": [], "random": []} for ref in REFERENCES}
    erased: dict[str, dict[str, list[torch.Tensor]]] = {name: {} for name in RANKINGS}
    deltas: list[torch.Tensor] = []
    layers: list[torch.nn.Module] = []
    examples = skipped = 0
    try:
        for batch in batches:
            inputs = {name: tensor.to(device) for name, tensor in batch.items() if name != "labels"}
            if isinstance(head.labels, EpisodeLabels):
                inputs = one_query_per_episode(inputs)
            units = unit_mask(over, inputs)
            ranked = units.reshape(len(units), -1).any(1)  # (B,) an empty input: nothing to rank
            if not ranked.all():  # e.g. a short text without a concept: skipped, and counted
                skipped += int((~ranked).sum())
                inputs = {name: tensor[ranked] for name, tensor in inputs.items()}
                if not ranked.any():
                    continue
            mask = unit_mask(over, inputs)
            with torch.no_grad():
                output = model(**inputs, **head.attention_kwargs)
            probabilities = probability(output)
            predicted = probabilities.argmax(-1)
            full = probabilities.gather(1, predicted[:, None]).squeeze(1)
            layers = layers or text_embedding_layers(model, inputs, over)  # found once: the same for every batch
            importance = {
                "attention": token_importance(head, inputs, output),
                "gradient_x_input": gradient_times_input(differentiable, model, inputs, predicted, layers, over),
                "leave_one_out": eraser.leave_one_out(inputs, predicted, full),
                "random": torch.rand(mask.shape, generator=generator).to(device),
            }
            points = internal_batch_size or batch_size
            importance["integrated_gradients"], delta = integrated_gradients(
                differentiable, model, inputs, predicted, ig_steps, points, layers, over
            )
            deltas.append(delta.abs().cpu())
            for row in range(len(mask)):
                real = mask[row].reshape(-1)
                values = {name: value[row].reshape(-1)[real].cpu().numpy() for name, value in importance.items()}
                for ref in REFERENCES:
                    for name in ("attention", "random"):
                        taus[ref][name].append(kendall_tau(values[name], values[ref]))
            orders = {name: ranking(importance[name], mask, generator) for name in RANKINGS}
            curves = eraser.curves(inputs, predicted, full, orders, ks)
            for name, measures in curves.items():
                for what, values in measures.items():
                    erased[name].setdefault(what, []).append(values)
            examples += len(mask)
    finally:
        model.train(was_training)
    if examples == 0:
        raise ValueError(f"no example to measure: the rows hold no token to rank ({skipped} without one).")
    joined = {name: {what: torch.cat(parts).numpy() for what, parts in row.items()} for name, row in erased.items()}
    return FaithfulnessReport(
        examples=examples,
        skipped=skipped,
        ks=tuple(ks),
        agreement={ref: {name: estimate(values) for name, values in row.items()} for ref, row in taus.items()},
        comprehensiveness={n: [estimate(c) for c in joined[n]["comprehensiveness"].T] for n in RANKINGS},
        sufficiency={n: [estimate(c) for c in joined[n]["sufficiency"].T] for n in RANKINGS},
        aopc={
            what: {name: estimate(joined[name][what].mean(1)) for name in RANKINGS}
            for what in ("comprehensiveness", "sufficiency")
        },
        flips={name: estimate(joined[name]["flip"]) for name in RANKINGS},
        convergence_delta=estimate(torch.cat(deltas).numpy()),
        ig_steps=ig_steps,
        curves=joined,
    )
