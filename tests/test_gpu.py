"""The GPU suite (`make test-gpu`): every head of the registry on a CUDA device, and the fused recurrences there.

Skipped, with the reason, where there is no CUDA device. Per head: CPU vs CUDA logits in float32; a bf16-autocast
forward and backward, finite; three `Trainer` steps in bf16 and in fp16 (finite loss, every parameter moved);
greedy `generate` equal on CPU and CUDA; `torch.compile(fullgraph=True)` with inductor matching eager. Then the
recurrences: the LSTMN and ELMo layers replayed as CUDA graphs equal to their eager runs and to the readable loops
(outputs and gradients), and `reversed_rnn` without cuDNN's per-call weight copy. The fused kernels' own tests
(tests/test_kernels.py) run here on CUDA too. Sized to finish in a few minutes on one H100/H200 (`-n 8`).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from transformers import Trainer, TrainingArguments

import hf_attn
from hf_attn.layers.rnn import PackedBiRNN
from tests.helpers import all_heads, make_inputs, make_labels, tiny_config, trainer_rows

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device: make test-gpu needs one"),
]
LENGTHS = [5, 2, 7, 1]
CUDA = torch.device("cuda")


@pytest.fixture(autouse=True)
def exact_float32():
    """fp32 comparisons without TF32, which cuDNN's RNNs use by default (a 1e-4 difference from the CPU)."""
    matmul = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    with torch.backends.cudnn.flags(enabled=True, allow_tf32=False):
        yield
    torch.backends.cuda.matmul.allow_tf32 = matmul


def build(architecture, head):
    torch.manual_seed(0)
    config = tiny_config(architecture)
    return head.model_class(config).eval(), config


def on(inputs: dict, device: torch.device) -> dict:
    return {name: value.to(device) if isinstance(value, torch.Tensor) else value for name, value in inputs.items()}


@pytest.mark.parametrize(("architecture", "head"), all_heads())
def test_cuda_logits_match_the_cpu(architecture, head):
    model, config = build(architecture, head)
    inputs = make_inputs(head, config, LENGTHS)
    expected = model(**inputs).logits
    actual = model.to(CUDA)(**on(inputs, CUDA)).logits
    torch.testing.assert_close(actual.cpu(), expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(("architecture", "head"), all_heads())
def test_bf16_autocast_forward_and_backward_are_finite(architecture, head):
    model, config = build(architecture, head)
    model.to(CUDA).train()
    inputs = on(make_inputs(head, config, LENGTHS), CUDA)
    labels = make_labels(head, config, make_inputs(head, config, LENGTHS)).to(CUDA)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        output = model(**inputs, labels=labels)
    assert torch.isfinite(output.loss)
    if output.logits is None:  # the fused output loss, training with labels: the logits are never built
        assert model.config.fused_output_loss
    else:
        assert torch.isfinite(output.logits.float()).all()
    output.loss.backward()
    bad = [name for name, p in model.named_parameters() if p.grad is not None and not torch.isfinite(p.grad).all()]
    assert not bad, f"non-finite gradients: {bad}"


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
@pytest.mark.parametrize(("architecture", "head"), all_heads())
def test_trainer_three_steps_on_cuda(architecture, head, precision, tmp_path):
    model, config = build(architecture, head)
    model.train()
    rows = trainer_rows(head, config)
    before = {name: p.detach().clone() for name, p in model.named_parameters() if p.requires_grad}
    # fp16's loss scaler starts at 2¹⁶ and skips the steps whose scaled gradients overflow, halving the scale each
    # time: more steps there, so that three or more are taken.
    args = TrainingArguments(
        output_dir=str(tmp_path),
        max_steps=3 if precision == "bf16" else 12,
        per_device_train_batch_size=2,
        report_to="none",
        learning_rate=0.05,
        save_strategy="no",
        disable_tqdm=True,
        bf16=precision == "bf16",
        fp16=precision == "fp16",
    )
    trainer = Trainer(model=model, args=args, train_dataset=rows, data_collator=head.inputs.collator(config))
    result = trainer.train()
    assert result.global_step == args.max_steps and np.isfinite(result.training_loss)
    unmoved = [name for name in before if torch.equal(model.get_parameter(name).detach().cpu(), before[name])]
    assert not unmoved, f"parameters that did not move: {unmoved}"


@pytest.mark.parametrize(
    ("architecture", "head"), [param for param in all_heads() if param.values[1].model_class.can_generate()]
)
def test_greedy_generate_is_the_same_on_cpu_and_cuda(architecture, head):
    model, config = build(architecture, head)
    inputs = make_inputs(head, config, [5, 3])
    inputs = {name: value for name, value in inputs.items() if not name.startswith("decoder_")}
    kwargs = {"max_new_tokens": 5, "do_sample": False, "num_beams": 1}
    expected = model.generate(**inputs, **kwargs)
    actual = model.to(CUDA).generate(**on(inputs, CUDA), **kwargs)
    assert torch.equal(actual.cpu(), expected)


@pytest.mark.parametrize(("architecture", "head"), all_heads())
def test_inductor_fullgraph_matches_eager_on_cuda(architecture, head):
    """Inductor (Triton kernels) compiles the forward with labels and its backward as one graph on CUDA; loss,
    logits and gradients match eager (eval mode: no dropout draws to differ; cuDNN's RNN has no backward in eval
    mode, so both run PyTorch's own RNN kernels)."""
    torch._dynamo.reset()
    model, config = build(architecture, head)
    model.to(CUDA)
    inputs = on(make_inputs(head, config, LENGTHS), CUDA)
    labels = make_labels(head, config, make_inputs(head, config, LENGTHS)).to(CUDA)
    with torch.backends.cudnn.flags(enabled=False):
        expected = model(**inputs, labels=labels)
        expected.loss.backward()
        expected_grads = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
        model.zero_grad(set_to_none=True)
        try:
            output = torch.compile(model, fullgraph=True)(**inputs, labels=labels)
            output.loss.backward()
        finally:
            torch._dynamo.reset()
    torch.testing.assert_close(output.logits, expected.logits, rtol=1e-3, atol=1e-4)
    torch.testing.assert_close(output.loss, expected.loss, rtol=1e-3, atol=1e-4)
    grads = {name: p.grad for name, p in model.named_parameters() if p.grad is not None}
    assert grads.keys() == expected_grads.keys()
    for name, grad in grads.items():
        torch.testing.assert_close(grad, expected_grads[name], rtol=1e-3, atol=1e-4, msg=name)


def _lstmn_layer_run(layer, inputs, mask):
    layer.zero_grad()
    inputs = inputs.detach().requires_grad_()
    output = layer(inputs, mask)
    (output.hidden.square().sum() + output.cells.sum()).backward()
    return [output.hidden.detach(), output.intra_attentions.detach(), inputs.grad,
            *(p.grad.clone() for p in layer.parameters())]  # fmt: skip


def test_lstmn_layer_replayed_as_a_cuda_graph_matches_eager_and_the_reference(monkeypatch):
    """The per-step fast recurrence at B = 8, T = 40 on CUDA: eager (first call), captured (second) and replayed
    (third) runs equal, and equal to the readable loop, outputs and every gradient."""
    from hf_attn.models.lstmn import fast_recurrence
    from hf_attn.models.lstmn.modeling_lstmn import LstmnLayer

    monkeypatch.setenv("HF_ATTN_LSTMN_PERSISTENT", "0")

    config = tiny_config(hf_attn.ARCHITECTURES["lstmn"], hidden_dropout_prob=0.0)
    torch.manual_seed(0)
    layer = LstmnLayer(config, config.embedding_size).to(CUDA)
    inputs = torch.randn(8, 40, config.embedding_size, device=CUDA)
    mask = torch.arange(40, device=CUDA)[None] < torch.tensor([40, 31, 1, 0, 17, 40, 5, 22], device=CUDA)[:, None]
    fast_recurrence._GRAPHED_RECURRENCE.clear()
    runs = [_lstmn_layer_run(layer, inputs, mask) for _ in range(3)]
    assert fast_recurrence._GRAPHED_RECURRENCE.graphs, "the forward loop was not captured"
    reference = [value.detach() for value in _reference_run(layer, inputs, mask)]
    for run in runs[1:]:
        for ours, theirs in zip(run, runs[0], strict=True):
            torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=1e-6)
    for ours, theirs in zip(runs[-1], reference, strict=True):
        torch.testing.assert_close(ours, theirs, rtol=1e-4, atol=1e-5)


def _reference_run(layer, inputs, mask):
    layer.config.recurrence_implementation = "reference"
    try:
        return _lstmn_layer_run(layer, inputs, mask)
    finally:
        layer.config.recurrence_implementation = "fast"


def test_elmo_layer_replayed_as_a_cuda_graph_matches_eager_and_the_readable_cell(monkeypatch):
    from hf_attn.models.elmo import fused_lstm
    from tests.test_kernels import elmo_layer, elmo_run

    monkeypatch.setenv("HF_ATTN_ELMO_PERSISTENT", "0")

    layer = elmo_layer(projection=True).to(CUDA)
    fused_lstm._GRAPHED_FORWARD.clear()

    def run(implementation):
        return [value.detach().cpu() for value in elmo_run(layer, implementation, device="cuda")]

    runs = [run("fused") for _ in range(3)]
    assert fused_lstm._GRAPHED_FORWARD.graphs, "the forward loop was not captured"
    reference = run("reference")
    for ours, theirs in zip(runs[-1], reference, strict=True):
        torch.testing.assert_close(ours, theirs, rtol=1e-4, atol=1e-5)
    for ours, theirs in zip(runs[1], runs[0], strict=True):
        torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=1e-6)


def test_lstmn_layer_on_the_persistent_kernel_matches_the_reference(monkeypatch):
    """The persistent kernel (one launch a layer) at B = 8, T = 40 on CUDA, at the paper's widths (H = A = 450, past
    the size where it is chosen: forced here): outputs, maps and every gradient equal the readable loop's, and
    repeated runs equal each other."""
    from hf_attn import LstmnConfig
    from hf_attn.models.lstmn import fast_recurrence
    from hf_attn.models.lstmn.modeling_lstmn import LstmnLayer

    monkeypatch.setattr(fast_recurrence, "PERSISTENT_MAX_WEIGHTS", float("inf"))

    config = LstmnConfig(embedding_size=300, hidden_size=450, hidden_dropout_prob=0.0)
    torch.manual_seed(0)
    layer = LstmnLayer(config, config.embedding_size).to(CUDA)
    for parameter in layer.parameters():  # the original's U(−0.05, 0.05)
        torch.nn.init.uniform_(parameter, -0.05, 0.05)
    inputs = torch.randn(8, 40, config.embedding_size, device=CUDA)
    mask = torch.arange(40, device=CUDA)[None] < torch.tensor([40, 31, 1, 0, 17, 40, 5, 22], device=CUDA)[:, None]
    assert fast_recurrence.persistent_applies(inputs[..., :450], 450, False, False)
    runs = [_lstmn_layer_run(layer, inputs, mask) for _ in range(2)]
    reference = [value.detach() for value in _reference_run(layer, inputs, mask)]
    for ours, theirs in zip(runs[1], runs[0], strict=True):
        torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=1e-6)
    for ours, theirs in zip(runs[-1], reference, strict=True):
        torch.testing.assert_close(ours, theirs, rtol=1e-4, atol=1e-5)


def test_elmo_layer_on_the_persistent_kernel_matches_the_readable_cell(monkeypatch):
    """ELMo's persistent kernel (one launch a layer, both directions) on CUDA against the readable cell, fp32,
    with both clips binding: outputs, cells and every gradient."""
    from tests.test_kernels import elmo_layer, elmo_run, use_elmo_path

    launched = use_elmo_path(monkeypatch, "persistent")
    layer = elmo_layer(projection=True).to(CUDA)
    ours = [value.detach().cpu() for value in elmo_run(layer, "fused", device="cuda")]
    assert launched == ["forward", "backward"], launched
    reference = [value.detach().cpu() for value in elmo_run(layer, "reference", device="cuda")]
    for mine, theirs in zip(ours, reference, strict=True):
        torch.testing.assert_close(mine, theirs, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_reversed_rnn_copies_no_weights_per_call(kind):
    """After the first call the weights are one cuDNN buffer per layer and direction: no "not part of single
    contiguous chunk of memory" warning, and the outputs are the packed run's."""
    torch.manual_seed(0)
    module = (torch.nn.LSTM if kind == "lstm" else torch.nn.GRU)(6, 5, num_layers=2, bidirectional=True,
                                                                  batch_first=True)  # fmt: skip
    wrapper = PackedBiRNN(module)
    inputs = torch.randn(4, 7, 6)
    mask = torch.arange(7)[None] < torch.tensor([7, 3, 1, 0])[:, None]
    expected = wrapper(inputs, mask)
    wrapper.to(CUDA)
    wrapper(inputs.to(CUDA), mask.to(CUDA))  # lays the weights out by direction
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        actual = wrapper(inputs.to(CUDA), mask.to(CUDA))
        actual.sum().backward()
    assert not [w for w in caught if "contiguous chunk" in str(w.message)]
    torch.testing.assert_close(actual.detach().cpu(), expected.detach(), rtol=1e-4, atol=1e-5)
    parameters = list(module.parameters())
    assert all(p.is_cuda for p in parameters) and len({p.data_ptr() for p in parameters}) == len(parameters)


@pytest.mark.parametrize("num_beams", [1, 4])
def test_transformer_static_cache_generation_compiled_by_transformers_matches_the_dynamic_cache(num_beams):
    """On CUDA `generate(cache_implementation="static")` compiles the decoding step (transformers' own auto-compile,
    inductor); greedy and beam 4 decode what the dynamic cache decodes."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    config = tiny_config(hf_attn.ARCHITECTURES["vaswani_transformer"])
    model = hf_attn.VaswaniTransformerForConditionalGeneration(config).eval().to(CUDA)
    input_ids = torch.randint(4, config.vocab_size, (3, 7), device=CUDA)
    attention_mask = torch.ones_like(input_ids)
    attention_mask[1, 5:] = 0
    settings = {"num_beams": num_beams, "max_new_tokens": 8, "do_sample": False}
    expected = model.generate(input_ids=input_ids, attention_mask=attention_mask, **settings)
    try:
        actual = model.generate(
            input_ids=input_ids, attention_mask=attention_mask, cache_implementation="static", **settings
        )
    finally:
        torch._dynamo.reset()
    assert actual.tolist() == expected.tolist()


def test_transformer_fused_output_loss_matches_the_logits_loss_under_bf16_on_cuda():
    """The fused projection + loss against the logits path on CUDA, fp32 (TF32 off) and bf16 autocast."""
    torch.manual_seed(0)
    config = tiny_config(hf_attn.ARCHITECTURES["vaswani_transformer"], dropout=0.0)
    model = hf_attn.VaswaniTransformerForConditionalGeneration(config).train().to(CUDA)
    input_ids = torch.randint(4, config.vocab_size, (4, 9), device=CUDA)
    labels = torch.randint(4, config.vocab_size, (4, 7), device=CUDA)
    labels[2, 4:] = -100
    for dtype, tolerance in ((torch.float32, 1e-5), (torch.bfloat16, 3e-2)):
        results = {}
        for fused in (True, False):
            model.config.fused_output_loss = fused
            model.zero_grad()
            with torch.autocast("cuda", dtype=dtype, enabled=dtype != torch.float32):
                loss = model(input_ids=input_ids, labels=labels).loss
            loss.backward()
            results[fused] = (loss.detach().float(), [p.grad.float().clone() for p in model.parameters()])
        torch.testing.assert_close(results[True][0], results[False][0], rtol=tolerance, atol=tolerance)
        for ours, theirs in zip(results[True][1], results[False][1], strict=True):
            torch.testing.assert_close(ours, theirs, rtol=tolerance * 10, atol=tolerance)
    model.config.fused_output_loss = True
