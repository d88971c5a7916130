"""The Transformer's training schedule (Vaswani et al., NeurIPS 2017, §5.3): Adam(β1 0.9, β2 0.98, ε 1e-9) and the
learning rate of eq. 3, `hf-attn train --schedule noam` (the row's `schedules`).

The module imports nothing: `resolve_options` reads a schedule before any training code loads.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["SCHEDULES", "noam_arguments", "noam_learning_rate"]

WARMUP_STEPS = 4000  # the paper's


def noam_learning_rate(d_model: int, warmup_steps: int, factor: float = 1.0) -> float:
    """The peak of Vaswani et al.'s schedule (eq. 3), lrate = d_model^-0.5 · min(step^-0.5, step · warmup^-1.5),
    reached at step = warmup_steps."""
    return factor * d_model**-0.5 * warmup_steps**-0.5


def noam_arguments(d_model: int, warmup_steps: int = 4000, factor: float = 1.0) -> dict[str, Any]:
    """`TrainingArguments` keywords for the paper's optimiser (§5.3): Adam(β1 0.9, β2 0.98, ε 1e-9) and eq. 3.

    Eq. 3 rises linearly to its peak over `warmup_steps` and then decays as step^-0.5: exactly transformers'
    `inverse_sqrt` schedule with timescale = warmup_steps, started from the peak learning rate."""
    return {
        "learning_rate": noam_learning_rate(d_model, warmup_steps, factor),
        "lr_scheduler_type": "inverse_sqrt",
        "lr_scheduler_kwargs": {"timescale": warmup_steps},
        "warmup_steps": warmup_steps,
        "adam_beta1": 0.9,
        "adam_beta2": 0.98,
        "adam_epsilon": 1e-9,
        "weight_decay": 0.0,
        "optim": "adamw_torch",
    }


def noam_schedule(config_value: Callable[[str], Any], warmup_steps: int | None = None) -> dict[str, Any]:
    """`--schedule noam` for a run whose config will have `config_value("d_model")`, over `warmup_steps` (the
    paper's 4000 when not given)."""
    return noam_arguments(config_value("d_model"), int(warmup_steps or WARMUP_STEPS))


SCHEDULES = {"noam": noam_schedule}
