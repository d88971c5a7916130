"""Common tests, parametrised over the registry: every head of every architecture gets them automatically."""

from __future__ import annotations

import collections

import numpy as np
import pytest
import torch
import transformers
from safetensors.torch import save_file
from torch.utils._python_dispatch import TorchDispatchMode
from transformers import AutoConfig, AutoModel, Trainer, TrainingArguments
from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

import hf_attn
from hf_attn.layers.validation import value_checks
from hf_attn.registry.auto import register_all
from hf_attn.registry.table import ARCHITECTURES
from tests.helpers import (
    all_heads,
    attention_maps,
    logits_shape,
    make_inputs,
    make_labels,
    select_example,
    tiny_config,
    trainer_rows,
    trim_like,
)

LENGTHS = [5, 2, 7, 1]


def build(architecture, head, **overrides):
    torch.manual_seed(0)
    config = tiny_config(architecture, **overrides)
    return head.model_class(config).eval(), config


@pytest.mark.parametrize(("architecture", "head"), all_heads())
def test_forward_shapes_and_attention_rows_sum_to_one_over_unmasked_tokens(architecture, head):
    model, config = build(architecture, head)
    inputs = make_inputs(head, config, LENGTHS)
    output = model(**inputs, **head.attention_kwargs)
    assert output.loss is None
    assert output.logits.shape == logits_shape(head, config, inputs)
    maps = attention_maps(architecture, output, inputs)
    missing = [field for field in head.attention_fields if output.get(field) is None]
    assert not missing, f"the registry promises {missing}, which {head.model_class.__name__} does not return"
    for field, attention, mask in maps:
        assert attention.shape[0] == len(LENGTHS) and attention.shape[-1] == mask.shape[-1], field
        # Keys broadcast over the axes the mask lacks (heads, queries, hops); rows without a key sum to 0.
        key_mask = mask.reshape(mask.shape[0], *[1] * (attention.dim() - mask.dim()), *mask.shape[1:])
        key_mask = key_mask.expand_as(attention)
        torch.testing.assert_close(attention.sum(-1), key_mask.any(-1).to(attention.dtype), msg=field)
        assert torch.all(attention.masked_select(~key_mask) == 0), field


@pytest.mark.parametrize(("architecture", "head"), all_heads())
def test_loss_only_with_labels_and_backward_reaches_every_parameter(architecture, head):
    model, config = build(architecture, head)
    model.train()
    inputs = make_inputs(head, config, LENGTHS)
    output = model(**inputs, labels=make_labels(head, config, inputs))
    assert output.loss.dim() == 0 and torch.isfinite(output.loss)
    output.loss.backward()
    trainable = {name: parameter for name, parameter in model.named_parameters() if parameter.requires_grad}
    assert trainable
    missing = [name for name, parameter in trainable.items() if parameter.grad is None]
    assert not missing, f"no gradient reaches {missing}"
    assert all(torch.isfinite(parameter.grad).all() for parameter in trainable.values())
    frozen = [name for name, parameter in model.named_parameters() if not parameter.requires_grad]
    assert all(model.get_parameter(name).grad is None for name in frozen)


@pytest.mark.parametrize(("architecture", "head"), all_heads())
def test_tuple_outputs_match_dict_outputs(architecture, head):
    model, config = build(architecture, head)
    inputs = make_inputs(head, config, LENGTHS)
    as_tuple = model(**inputs, return_dict=False)
    torch.testing.assert_close(as_tuple[0], model(**inputs).logits)


ATTENTION_FIELDS = ("attentions", "encoder_attentions", "decoder_attentions", "cross_attentions")
HIDDEN_STATE_FIELDS = ("hidden_states", "encoder_hidden_states", "decoder_hidden_states")


def _tensor_tuple(value) -> bool:
    """A tuple of tensors (one per layer or map), or one map (SGM's single-layer `cross_attentions`)."""
    if isinstance(value, torch.Tensor):
        return True
    return isinstance(value, tuple) and len(value) > 0 and all(isinstance(item, torch.Tensor) for item in value)


@pytest.mark.parametrize(("architecture", "head"), all_heads())
def test_head_contract_output_attentions_hidden_states_return_dict(architecture, head):
    """transformers' output arguments (CONTRIBUTING.md, "the head contract"): maps and states filled when asked,
    `None` otherwise (a config default counts as asking), a tuple without `None`s for `return_dict=False`, loss
    first; the paper-named maps stay."""
    model, config = build(architecture, head)
    inputs = make_inputs(head, config, LENGTHS)
    labels = make_labels(head, config, inputs)
    full = model(**inputs, labels=labels, output_attentions=True, output_hidden_states=True)
    plain = model(**inputs, labels=labels, output_attentions=False, output_hidden_states=False)
    attends = head.has_attention and bool(architecture.attention_fields)
    if attends:
        assert any(_tensor_tuple(full.get(name)) for name in ATTENTION_FIELDS), "no attentions with output_attentions"
        if not head.attention_kwargs:  # maps that need no asking (the paper-named ones) stay
            assert [field for field in architecture.attention_fields if plain.get(field) is not None], "maps gone"
    assert plain.get("attentions") is None and (attends or full.get("attentions") is None)
    assert any(_tensor_tuple(full.get(name)) for name in HIDDEN_STATE_FIELDS), "no hidden_states when asked"
    assert all(plain.get(name) is None for name in HIDDEN_STATE_FIELDS)
    for value in [full.get(name) for name in ATTENTION_FIELDS + HIDDEN_STATE_FIELDS]:
        assert value is None or all(torch.isfinite(item).all() for item in value if isinstance(item, torch.Tensor))

    as_tuple = model(**inputs, labels=labels, output_attentions=True, output_hidden_states=True, return_dict=False)
    assert type(as_tuple) is tuple and len(as_tuple) == len(full.to_tuple())
    torch.testing.assert_close(as_tuple[0], full.loss)
    torch.testing.assert_close(as_tuple[1], full.logits)

    # Config defaults count as asking (`output_attentions` is left alone: SDPA models refuse it in the config).
    model.config.output_hidden_states, model.config.return_dict = True, False
    from_config = model(**inputs, labels=labels, output_attentions=False)
    expected = model(**inputs, labels=labels, output_attentions=False, output_hidden_states=True, return_dict=True)
    assert type(from_config) is tuple and len(from_config) == len(expected.to_tuple())


@pytest.mark.parametrize(("architecture", "head"), all_heads())
def test_padding_does_not_change_an_example(architecture, head):
    model, config = build(architecture, head)
    inputs = make_inputs(head, config, LENGTHS)
    batched = model(**inputs, **head.attention_kwargs)
    batched_maps = attention_maps(architecture, batched, inputs)
    for index in range(len(LENGTHS)):
        single = select_example(inputs, index, head)
        alone = model(**single, **head.attention_kwargs)
        torch.testing.assert_close(trim_like(batched.logits, index, alone.logits), alone.logits, rtol=0, atol=1e-5)
        for (field, attention, _), (_, full, _) in zip(
            attention_maps(architecture, alone, single), batched_maps, strict=True
        ):
            torch.testing.assert_close(trim_like(full, index, attention), attention, rtol=0, atol=1e-5, msg=field)


@pytest.mark.parametrize(("architecture", "head"), all_heads())
def test_save_and_from_pretrained_give_identical_outputs(architecture, head, tmp_path):
    model, config = build(architecture, head)
    inputs = make_inputs(head, config, LENGTHS)
    model.save_pretrained(tmp_path)
    assert (tmp_path / "model.safetensors").is_file() and not list(tmp_path.glob("*.bin"))
    reloaded = head.model_class.from_pretrained(tmp_path).eval()
    assert type(reloaded) is head.model_class
    flags = {"output_attentions": True, "output_hidden_states": True}
    expected, actual = model(**inputs, **flags), reloaded(**inputs, **flags)
    assert list(actual.keys()) == list(expected.keys())
    for name in expected:
        assert_nested_close(actual[name], expected[name], name)


def assert_nested_close(actual, expected, name: str) -> None:
    """Tensors, and tuples / lists of them at any depth (per-layer maps, hidden states), compared exactly enough;
    other values (caches) are skipped."""
    if isinstance(expected, torch.Tensor):
        torch.testing.assert_close(actual, expected, rtol=0, atol=1e-6, msg=name)
    elif isinstance(expected, tuple | list):
        assert isinstance(actual, tuple | list) and len(actual) == len(expected), name
        for index, (got, want) in enumerate(zip(actual, expected, strict=True)):
            assert_nested_close(got, want, f"{name}[{index}]")


@pytest.mark.parametrize(("architecture", "head"), all_heads())
def test_missing_weights_are_initialised(architecture, head, tmp_path):
    """from_pretrained builds on the meta device and initialises only what the checkpoint lacks: every missing
    parameter must come out as `_init_weights` makes it for a fresh model (raw nn.Parameters and RNNs included),
    never as leftover memory."""
    model, _ = build(architecture, head)
    model.save_pretrained(tmp_path)
    kept = next(name for name, _ in model.named_parameters() if name.endswith("bias"))
    save_file({kept: model.state_dict()[kept].contiguous()}, tmp_path / "model.safetensors", metadata={"format": "pt"})
    reloaded = head.model_class.from_pretrained(tmp_path)
    fresh = dict(model.named_parameters())
    for name, parameter in reloaded.named_parameters():
        assert parameter.device.type == "cpu", name
        assert torch.isfinite(parameter).all(), name
        bound = fresh[name].abs().max().item()
        assert parameter.abs().max().item() <= bound * 1.5 + 1e-6, f"{name} is outside its init range"
        if fresh[name].numel() > 1 and fresh[name].std() > 0:
            assert parameter.std() > 0, f"{name} is constant"
        else:
            torch.testing.assert_close(parameter, fresh[name])
    torch.testing.assert_close(reloaded.state_dict()[kept], model.state_dict()[kept])


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
@pytest.mark.parametrize(("architecture", "head"), all_heads())
def test_trainer_runs_three_steps(architecture, head, precision, tmp_path):
    """Three `Trainer` steps move every trainable parameter (Lin's W_s1 gets its first gradient once W_s2 has left
    zero), in float32 and under `bf16=True` (autocast: finite loss, gradients through every recurrence, the LSTMN's
    hand-written backward included)."""
    model, config = build(architecture, head)
    model.train()
    rows = trainer_rows(head, config)
    before = {name: p.detach().clone() for name, p in model.named_parameters() if p.requires_grad}
    args = TrainingArguments(
        output_dir=str(tmp_path),
        max_steps=3,
        per_device_train_batch_size=2,
        report_to="none",
        learning_rate=0.05,
        save_strategy="no",
        disable_tqdm=True,
        use_cpu=True,
        bf16=precision == "bf16",
    )
    collator = head.inputs.collator(config)  # the input kind pads its own inputs
    trainer = Trainer(model=model, args=args, train_dataset=rows, data_collator=collator)
    result = trainer.train()
    assert result.global_step == 3 and np.isfinite(result.training_loss) and result.training_loss > 0
    assert all(torch.isfinite(p).all() for p in model.parameters())
    predictions = trainer.predict(rows).predictions  # the logits alone: attention maps and caches are kept out
    assert isinstance(predictions, np.ndarray) and predictions.shape[0] == len(rows)
    assert predictions.shape[-1] == logits_shape(head, config, make_inputs(head, config, [3]))[-1]
    changed = [name for name in before if not torch.equal(model.get_parameter(name), before[name])]
    assert len(changed) == len(before)


@pytest.mark.parametrize(("architecture", "head"), all_heads())
def test_float16_forward_and_backward_stay_finite(architecture, head):
    """Every head in float16 (`model.half()`: weights, activations and masked fills all in half precision, what
    `Trainer(fp16=True)`'s autocast runs on a GPU and stricter): masked scores use float16's own finite minimum,
    never a constant past its ±65,504, and loss, logits and gradients stay finite, padding included."""
    model, config = build(architecture, head)
    model.half().train()
    inputs = make_inputs(head, config, LENGTHS)
    inputs = {name: value.half() if value.is_floating_point() else value for name, value in inputs.items()}
    output = model(**inputs, labels=make_labels(head, config, inputs))
    assert torch.isfinite(output.loss), f"loss {output.loss}"
    # masked scores are the dtype's finite minimum, never -inf or NaN (a fused output loss returns no logits)
    assert output.logits is None or torch.isfinite(output.logits).all()
    output.loss.backward()
    bad = [name for name, p in model.named_parameters() if p.grad is not None and not torch.isfinite(p.grad).all()]
    assert not bad, f"non-finite float16 gradients in {bad}"


@pytest.mark.parametrize("architecture", list(ARCHITECTURES.values()), ids=list(ARCHITECTURES))
def test_auto_classes_resolve_from_model_type(architecture):
    config = AutoConfig.for_model(architecture.name, **architecture.tiny_config)
    assert type(config) is architecture.config_class
    assert type(AutoModel.from_config(config)) is architecture.base_model_class
    for head in architecture.heads:
        if head.auto_class is not None:
            assert type(getattr(transformers, head.auto_class).from_config(config)) is head.model_class


@pytest.mark.parametrize("architecture", list(ARCHITECTURES.values()), ids=list(ARCHITECTURES))
def test_model_type_never_collides_with_transformers(architecture):
    assert architecture.name not in CONFIG_MAPPING_NAMES
    assert architecture.config_class.model_type == architecture.name


def test_registration_is_idempotent():
    register_all()
    register_all()
    import importlib

    importlib.reload(hf_attn)
    config = AutoConfig.for_model("lin_self_attentive")
    assert type(config) is hf_attn.LinSelfAttentiveConfig


def test_unknown_model_type_is_a_clear_value_error(tmp_path):
    (tmp_path / "config.json").write_text('{"model_type": "lin_self_attentiv"}')
    with pytest.raises(ValueError, match="lin_self_attentiv"):
        AutoConfig.from_pretrained(tmp_path)
    with pytest.raises(ValueError, match="Unknown architecture 'han2'"):
        hf_attn.get_architecture("han2")


@pytest.mark.parametrize(("architecture", "head"), all_heads())
def test_one_graph_per_forward_and_backward(architecture, head):
    """`torch.compile(fullgraph=True)` (dynamo + AOT autograd; `aot_eager` runs eager kernels, so no C++ toolchain is
    needed) traces the whole forward with labels, and its backward, without a graph break: no host sync, no
    data-dependent branch or shape. Loss, logits and every gradient match eager mode."""
    torch._dynamo.reset()
    model, config = build(architecture, head)
    inputs = make_inputs(head, config, LENGTHS)
    labels = make_labels(head, config, inputs)
    expected = model(**inputs, labels=labels)
    expected.loss.backward()
    expected_grads = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
    model.zero_grad(set_to_none=True)
    compiled = torch.compile(model, backend="aot_eager", fullgraph=True)
    try:
        output = compiled(**inputs, labels=labels)
        output.loss.backward()
    finally:
        torch._dynamo.reset()  # no compiled frame outlives the test
    torch.testing.assert_close(output.logits, expected.logits, rtol=0, atol=1e-5)
    torch.testing.assert_close(output.loss, expected.loss, rtol=0, atol=1e-5)
    grads = {name: p.grad for name, p in model.named_parameters() if p.grad is not None}
    assert grads.keys() == expected_grads.keys()
    for name, grad in grads.items():
        torch.testing.assert_close(grad, expected_grads[name], rtol=1e-4, atol=1e-5, msg=name)


# Operators that read a tensor's value on the host (`.item()`, `int()`, `bool()`, `torch.equal`) or give a shape
# that depends on values (`nonzero`, boolean indexing): on an accelerator each one stalls until the device catches up.
HOST_READS = {"_local_scalar_dense", "equal", "is_nonzero", "nonzero", "nonzero_static", "masked_select", "_unique2",
              "unique_dim", "unique_consecutive", "repeat_interleave", "allclose"}  # fmt: skip
# The one exception, and why: SGM's encoder hands the decoder each row's final LSTM cell at its last real token,
# which only cuDNN's packed run returns, and packing takes its lengths on the host (one transfer per forward).
HOST_READS_ALLOWED = {"sgm": {"_local_scalar_dense"}}


class _HostReads(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.seen: collections.Counter = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.__name__.split(".")[0]
        if name in HOST_READS:
            self.seen[name] += 1
        # `tensor[mask]` and `tensor[mask] = value` with a boolean mask: the result's size is the mask's count.
        indices = args[1] if name in {"index", "index_put", "index_put_", "_index_put_impl_"} else None
        if any(isinstance(index, torch.Tensor) and index.dtype == torch.bool for index in indices or ()):
            self.seen[f"{name} with a boolean mask"] += 1
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize(("architecture", "head"), all_heads())
def test_a_forward_reads_nothing_on_the_host_where_reading_is_not_free(architecture, head):
    """With `value_checks(False)` a CPU forward runs as on an accelerator: no value is read on the host in the
    forward with labels or in the backward (a dispatch mode sees every operator), and the outputs are the eager
    CPU ones (the unpacked RNN runs, the skipped reorderings)."""
    model, config = build(architecture, head)
    inputs = make_inputs(head, config, LENGTHS)
    labels = make_labels(head, config, inputs)
    expected = model(**inputs, labels=labels)
    reads = _HostReads()
    with value_checks(False), reads:
        output = model(**inputs, labels=labels)
        output.loss.backward()
    unexpected = {name: count for name, count in reads.seen.items()
                  if name not in HOST_READS_ALLOWED.get(architecture.name, set())}  # fmt: skip
    assert not unexpected, f"host reads: {unexpected}"
    torch.testing.assert_close(output.logits, expected.logits, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(output.loss, expected.loss, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("architecture", "head"), [param for param in all_heads() if param.values[1].labels.per_token]
)
def test_a_batch_with_nothing_to_score_gives_loss_zero_and_no_gradient(architecture, head):
    model, config = build(architecture, head)
    inputs = make_inputs(head, config, LENGTHS)
    labels = torch.full_like(make_labels(head, config, inputs), -100)
    loss = model(**inputs, labels=labels).loss
    loss.backward()
    assert loss.item() == 0.0
    assert all(p.grad is None or not p.grad.any() for p in model.parameters())


@pytest.mark.parametrize(("architecture", "head"), all_heads())
def test_input_embeddings_are_found_and_replaceable(architecture, head):
    """transformers' `get_input_embeddings` / `set_input_embeddings` (and so `resize_token_embeddings`) work on
    every head: the token table, or ELMo's character table (it reads characters, whatever its word vocabulary)."""
    model, config = build(architecture, head)
    embeddings = model.get_input_embeddings()
    assert isinstance(embeddings, torch.nn.Embedding)
    rows = config.n_characters if architecture.tokenizer.name == "characters" else config.vocab_size
    assert embeddings.num_embeddings == rows
    replacement = torch.nn.Embedding(config.vocab_size, embeddings.embedding_dim, padding_idx=embeddings.padding_idx)
    model.set_input_embeddings(replacement)
    assert model.get_input_embeddings() is replacement


def _range_checked_fields(config_class) -> list[str]:
    """Sizes, layer counts and dropouts: the fields every config must range-check."""
    import dataclasses

    names = [field.name for field in dataclasses.fields(config_class)]
    return [name for name in names if name.endswith(("_size", "_layers", "_dim", "dropout", "dropout_prob"))]


@pytest.mark.parametrize("architecture", list(ARCHITECTURES.values()), ids=list(ARCHITECTURES))
def test_config_rejects_out_of_range_values_naming_the_field(architecture):
    """A negative size or a dropout of 1.5 is refused when the config is built, by an error naming the field
    (transformers' field validators under `@strict`), never later inside `forward`."""
    from huggingface_hub.errors import StrictDataclassError

    names = _range_checked_fields(architecture.config_class)
    assert "vocab_size" in names or architecture.tokenizer.name == "characters"
    assert names, "no size field found"
    for name in names:
        bad = 1.5 if "dropout" in name else -1
        with pytest.raises((ValueError, StrictDataclassError), match=name):
            tiny_config(architecture, **{name: bad})
