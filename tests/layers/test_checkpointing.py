"""Gradient checkpointing on every head of the registry: `gradient_checkpointing_enable()` (and
`TrainingArguments(gradient_checkpointing=True)`) checkpoints each layer or level (transformers'
`GradientCheckpointingLayer`: Transformer layers, LSTMN and ELMo layers, BiBloSA directions, the recurrent encoders,
the few-shot instance encoders), and the gradients equal those of training without it."""

from __future__ import annotations

import pytest
import torch
from transformers import Trainer, TrainingArguments
from transformers.modeling_layers import GradientCheckpointingLayer

from hf_attn.registry.table import get_architecture
from tests.helpers import all_heads, make_inputs, make_labels, tiny_config

LENGTHS = [5, 2, 7, 1]


def _gradients(model, inputs, labels) -> dict[str, torch.Tensor]:
    model.zero_grad(set_to_none=True)
    torch.manual_seed(1)  # the same dropout masks in both runs (checkpointing replays the RNG state)
    model(**inputs, labels=labels).loss.backward()
    return {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize(("architecture", "head"), all_heads())
def test_checkpointed_gradients_equal_plain_ones(architecture, head):
    torch.manual_seed(0)
    config = tiny_config(architecture)
    model = head.model_class(config).train()
    assert model.supports_gradient_checkpointing
    inputs = make_inputs(head, config, LENGTHS)
    labels = make_labels(head, config, inputs)
    plain = _gradients(model, inputs, labels)

    model.gradient_checkpointing_enable()
    assert model.is_gradient_checkpointing
    layers = [module for module in model.modules() if isinstance(module, GradientCheckpointingLayer)]
    assert layers and all(layer.gradient_checkpointing for layer in layers)
    replays = []  # every checkpointed call goes through the checkpoint function
    for layer in layers:
        checkpoint = layer._gradient_checkpointing_func
        layer._gradient_checkpointing_func = lambda *args, _f=checkpoint, **kwargs: (
            replays.append(1) or _f(*args, **kwargs)
        )
    checkpointed = _gradients(model, inputs, labels)
    assert replays, "no layer was checkpointed"
    assert plain.keys() == checkpointed.keys()
    for name, gradient in plain.items():
        torch.testing.assert_close(checkpointed[name], gradient, rtol=1e-5, atol=1e-5, msg=name)

    model.gradient_checkpointing_disable()
    assert not any(layer.gradient_checkpointing for layer in layers)


def test_trainer_trains_with_gradient_checkpointing(tmp_path):
    from hf_attn.data import PaddingCollator

    architecture = get_architecture("han")
    head = architecture.heads[0]
    torch.manual_seed(0)
    model = head.model_class(tiny_config(architecture))
    rows = [{"input_ids": [[1 + i, 2, 3], [4, 5 + i]], "labels": i % 2} for i in range(8)]
    args = TrainingArguments(
        output_dir=str(tmp_path), max_steps=4, per_device_train_batch_size=4, learning_rate=1e-2, report_to="none",
        use_cpu=True, gradient_checkpointing=True, logging_steps=1,
    )  # fmt: skip
    trainer = Trainer(model=model, args=args, train_dataset=rows, data_collator=PaddingCollator(0))
    trainer.train()
    assert model.is_gradient_checkpointing
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    assert len(losses) == 4 and losses[-1] < losses[0]
