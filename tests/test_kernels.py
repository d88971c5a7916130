"""The fused recurrences' kernels against the readable loops, outputs and gradients: the LSTMN's Triton step
functions (`models/lstmn/triton_steps.py`) and ELMo's fused LSTM (`models/elmo/fused_lstm.py`). Without a GPU the
Triton kernels run in Triton's interpreter (`TRITON_INTERPRET=1`, set by conftest); `make test-gpu` runs them on
CUDA (tests/test_gpu.py)."""

from __future__ import annotations

import os

import pytest
import torch

import hf_attn
from hf_attn.models.elmo import fused_lstm
from hf_attn.models.elmo.modeling_elmo import ElmoLstmLayer
from hf_attn.models.lstmn import fast_recurrence, triton_steps
from hf_attn.models.lstmn.modeling_lstmn import LstmnForCausalLM, LstmnForPairClassification
from tests.helpers import tiny_config

pytest.importorskip("triton")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(
        not torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1",
        reason="Triton's kernels need a CUDA device or its interpreter (TRITON_INTERPRET=1)",
    ),
]

# On a CUDA device (`make test-gpu`) the kernels run there; elsewhere on CPU tensors, in Triton's interpreter.
DEVICE = torch.device("cuda" if torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1" else "cpu")

TOLERANCE = {torch.float32: {"rtol": 1e-5, "atol": 1e-5}, torch.bfloat16: {"rtol": 2e-2, "atol": 2e-2}}


def lstmn_step_inputs(dtype: torch.dtype, deep: bool, seed: int = 0) -> dict:
    """A step's tensors at awkward sizes (no block divides them), tape prefixes as views of larger tapes, a row
    whose slots are all masked and one with a few."""
    generator = torch.Generator().manual_seed(seed)
    batch, slots, capacity, attention, hidden = 3, 37, 45, 70, 20

    def draw(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=generator).to(DEVICE, dtype)

    valid = torch.rand(batch, capacity, generator=generator) > 0.4
    valid[:, 0] = True
    valid[2] = False
    valid = valid.to(DEVICE)
    return {
        "keys": draw(batch, capacity, attention)[:, :slots],
        "values": draw(batch, capacity, 2 * hidden)[:, :slots],
        "valid": valid[:, :slots],
        "query": draw(batch, attention),
        "score": draw(attention),
        "grad_read": draw(batch, 2 * hidden),
        "gate_input": draw(batch, 4 * hidden),
        "read": draw(batch, 2 * hidden),
        "recurrent": draw(4 * hidden, hidden) * 0.3,
        "memory_read": draw(batch, 2 * hidden) if deep else None,
        "memory_gate_input": draw(batch, hidden) if deep else None,
        "memory_gate": draw(hidden, hidden) * 0.3 if deep else None,
        "grad_hidden": draw(batch, hidden),
        "grad_cell": draw(batch, hidden),
    }


def close(ours, theirs, dtype: torch.dtype) -> None:
    for mine, reference in zip(ours, theirs, strict=True):
        if reference is None:
            assert mine is None
            continue
        torch.testing.assert_close(mine.float(), reference.float(), **TOLERANCE[dtype])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_lstmn_attention_kernels_match_the_pytorch_step(dtype):
    """`attend` (eq. 4–6) and its backward: the read, the weights (0 at masked slots, a row with no readable
    slot all 0), ∂query, ∂v and the ∂keys added in place. bf16 inputs are checked against float32 PyTorch."""
    x = lstmn_step_inputs(dtype, deep=False)
    as_float = {name: value.float() if value is not None and value.is_floating_point() else value
                for name, value in x.items()}  # fmt: skip
    args = ("keys", "values", "valid", "query", "score")
    read, weights = triton_steps.attend(*(x[name] for name in args))
    expected_read, expected_weights = fast_recurrence.attend(*(as_float[name] for name in args))
    close([read, weights], [expected_read, expected_weights], dtype)
    assert not weights[2].any() and not read[2].any()  # no readable slot: zeros, not NaN
    assert (weights[~x["valid"]] == 0).all()

    grad_keys = torch.randn(x["keys"].shape).to(DEVICE, dtype)
    expected_grad_keys = grad_keys.float().clone()
    backward = triton_steps.attend_backward(
        x["keys"], x["values"], x["query"], x["score"], weights, x["grad_read"], grad_keys
    )
    expected = fast_recurrence.attend_backward(
        as_float["keys"], as_float["values"], as_float["query"], as_float["score"], expected_weights,
        as_float["grad_read"], expected_grad_keys,
    )  # fmt: skip
    close([*backward, grad_keys], [*expected, expected_grad_keys], dtype)


@pytest.mark.parametrize("deep", [False, True], ids=["intra", "deep-fusion"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_lstmn_cell_kernels_match_the_pytorch_step(dtype, deep):
    """`cell_update` (eq. 7–9, with deep fusion 13–14) and its backward."""
    x = lstmn_step_inputs(dtype, deep=deep)
    as_float = {name: value.float() if value is not None else None for name, value in x.items()}
    args = ("gate_input", "read", "recurrent", "memory_read", "memory_gate_input", "memory_gate")
    hidden, cell, gates, relevance = triton_steps.cell_update(*(x[name] for name in args))
    expected = fast_recurrence.cell_update(*(as_float[name] for name in args))
    close([hidden, cell, gates, relevance], expected, dtype)

    def backward_args(values, computed):
        return (values["grad_hidden"], values["grad_cell"], computed[1], computed[2], values["read"],
                values["recurrent"], values["memory_read"], computed[3], values["memory_gate"])  # fmt: skip

    ours = triton_steps.cell_update_backward(*backward_args(x, (hidden, cell, gates, relevance)))
    theirs = fast_recurrence.cell_update_backward(*backward_args(as_float, expected))
    close(ours, theirs, dtype)


@pytest.fixture
def lstmn_kernels_on_cpu(monkeypatch):
    """The LSTMN's recurrence runs its Triton step functions on CPU tensors too (in the interpreter)."""
    monkeypatch.setattr(fast_recurrence, "TRITON_ON_CPU", True)


def on_device(values: dict) -> dict:
    return {name: value.to(DEVICE) for name, value in values.items()}


@pytest.mark.parametrize(
    ("fusion", "persistent"),
    [("none", True), ("none", False), ("shallow", False), ("deep", False)],
    ids=["persistent", "steps", "shallow-steps", "deep-steps"],
)
def test_lstmn_layer_on_the_kernels_matches_the_reference_loop(lstmn_kernels_on_cpu, monkeypatch, fusion, persistent):
    """The whole recurrence on the kernels (forward and hand-written backward; the persistent kernel, or the
    per-step kernels that fusion layers always take) against the readable loop under autograd: logits, attention
    maps and every parameter's gradient, fp32, with padding, a length-1 row and an all-padding row."""
    launched = record_persistent_launches(monkeypatch)
    if not persistent:
        monkeypatch.setenv("HF_ATTN_LSTMN_PERSISTENT", "0")
    torch.manual_seed(0)
    config = tiny_config(hf_attn.ARCHITECTURES["lstmn"], hidden_dropout_prob=0.0, fusion=fusion)
    model = LstmnForPairClassification(config).to(DEVICE).train()
    premise = torch.randint(1, 40, (4, 6))
    hypothesis = torch.randint(1, 40, (4, 5))
    premise_mask = (torch.arange(6)[None] < torch.tensor([6, 3, 1, 0])[:, None]).long()
    hypothesis_mask = (torch.arange(5)[None] < torch.tensor([4, 0, 2, 3])[:, None]).long()
    inputs = {"input_ids": premise * premise_mask, "attention_mask": premise_mask,
              "pair_input_ids": hypothesis * hypothesis_mask, "pair_attention_mask": hypothesis_mask}  # fmt: skip
    results = {}
    for implementation in ("fast", "reference"):
        model.config.recurrence_implementation = implementation
        model.zero_grad()
        output = model(**on_device(inputs), labels=torch.tensor([0, 1, 2, 1], device=DEVICE), output_attentions=True)
        output.loss.backward()
        results[implementation] = (output, {name: p.grad.clone() for name, p in model.named_parameters()})
    (fast, fast_grads), (reference, reference_grads) = results["fast"], results["reference"]
    # every layer of both texts, forward and backward, on the persistent kernel; none on the per-step path
    layers = 2 * config.num_hidden_layers
    assert launched == (["forward"] * layers + ["backward"] * layers if persistent else []), launched
    torch.testing.assert_close(fast.logits, reference.logits, rtol=0, atol=1e-5)
    for name in ("intra_attentions", "pair_intra_attentions", "inter_attentions"):
        for ours, theirs in zip(getattr(fast, name) or (), getattr(reference, name) or (), strict=True):
            torch.testing.assert_close(ours, theirs, rtol=0, atol=1e-5)
    for name, gradient in reference_grads.items():
        torch.testing.assert_close(fast_grads[name], gradient, rtol=1e-4, atol=1e-5, msg=name)


def record_calls(monkeypatch, module, kinds: dict[str, str]) -> list[str]:
    """Records each call of `module`'s functions named in `kinds` (name -> what to record), in order, so that a test
    knows which path ran; the functions still run."""
    calls: list[str] = []
    for name, kind in kinds.items():
        original = getattr(module, name)

        def recorded(*arguments, _original=original, _kind=kind, **keywords):
            calls.append(_kind)
            return _original(*arguments, **keywords)

        monkeypatch.setattr(module, name, recorded)
    return calls


def record_persistent_launches(monkeypatch) -> list[str]:
    """Records each call of the LSTMN's persistent kernels."""
    from hf_attn.models.lstmn import triton_persistent

    kinds = {"lstmn_persistent_forward": "forward", "lstmn_persistent_backward": "backward"}
    return record_calls(monkeypatch, triton_persistent, kinds)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_lstmn_persistent_kernel_matches_the_step_loop(dtype):
    """The persistent kernel against the PyTorch step loop (`_recurrence` and `_recurrence_backward`), at sizes no
    tile divides (T = 35 slots cross two slot tiles, A = 70, 2H = 80, 4H = 160 cross feature tiles), with a padded
    row, a length-1 row and an all-padding row: the tape, keys, maps, final summary and trace, and every gradient.
    fp32 to 1e-5; bf16 inputs against float32 PyTorch to bf16's precision. Without `save` it keeps no trace."""
    from hf_attn.models.lstmn import triton_persistent

    generator = torch.Generator().manual_seed(0)
    batch, steps, attention, hidden = 4, 35, 70, 40

    def draw(*shape: int, scale: float = 1.0) -> torch.Tensor:
        return (torch.randn(*shape, generator=generator) * scale).to(DEVICE, dtype)

    inputs = [draw(batch, steps, attention), draw(batch, steps, 4 * hidden)]
    mask = (torch.arange(steps)[None] < torch.tensor([steps, 20, 1, 0])[:, None]).to(DEVICE)
    weights = [draw(attention, hidden, scale=0.2), draw(attention, hidden, scale=0.2), draw(attention),
               draw(4 * hidden, hidden, scale=0.2)]  # fmt: skip
    ours = triton_persistent.lstmn_persistent_forward(*inputs, mask, *weights, save=True)
    as_float = [value.float() if value.is_floating_point() else value for value in (*inputs, mask, *weights)]
    no_memory = [None] * 8
    computed = fast_recurrence._recurrence(False, True, *as_float, *no_memory)
    theirs = dict(zip(fast_recurrence.RECURRENCE_OUTPUTS, computed, strict=True))
    pairs = {"tape": "tape", "keys": "keys", "intra": "intra_attentions", "summary": "final_summary",
             "step_queries": "step_queries", "previous_summaries": "previous_summaries", "reads": "reads",
             "gates": "gates"}  # fmt: skip
    close([ours[name] for name in pairs], [theirs[name] for name in pairs.values()], dtype)
    assert not ours["intra"][3].any() and torch.isfinite(ours["tape"].float()).all()  # all padding: zero maps
    inference = triton_persistent.lstmn_persistent_forward(*inputs, mask, *weights, save=False)
    assert inference["reads"] is None and inference["gates"] is None
    torch.testing.assert_close(inference["tape"], ours["tape"], rtol=0, atol=0)

    grad_hidden, grad_cells = draw(batch, steps, hidden), draw(batch, steps, hidden)
    trace = [ours[name] for name in ("tape", "keys", "intra", "step_queries", "previous_summaries", "reads", "gates")]
    grads = triton_persistent.lstmn_persistent_backward(grad_hidden, grad_cells, mask, *weights, *trace)
    saved = [mask, *as_float[3:], *[torch.empty(0, device=DEVICE)] * 5,
             *(theirs[name] for name in ("tape", "keys", "intra_attentions", "step_queries", "previous_summaries",
                                         "reads", "gates")), *[torch.empty(0, device=DEVICE)] * 5]  # fmt: skip
    expected = fast_recurrence._recurrence_backward(
        False, grad_hidden.float(), grad_cells.float(), torch.zeros_like(grad_hidden.float()), saved
    )
    expected = [expected[index] for index in (0, 1, 3, 4, 5, 6)]
    if dtype == torch.float32:
        close(grads, expected, dtype)
    else:  # bf16 traces over 35 steps, summed over the batch: 5% of each gradient's scale
        for mine, reference in zip(grads, expected, strict=True):
            scale = reference.abs().max().item()
            torch.testing.assert_close(mine.float(), reference, rtol=5e-2, atol=5e-2 * scale)


def test_lstmn_generation_on_the_kernels_matches_the_pytorch_steps(lstmn_kernels_on_cpu, monkeypatch):
    """The tape cache's continuation (`run_recurrence` from a state) on the kernels: greedy generation as on the
    PyTorch step functions."""
    torch.manual_seed(0)
    model = LstmnForCausalLM(tiny_config(hf_attn.ARCHITECTURES["lstmn"], hidden_dropout_prob=0.0)).to(DEVICE).eval()
    prompt = torch.randint(1, 40, (2, 4)).to(DEVICE)
    fused = model.generate(prompt, max_new_tokens=4, do_sample=False, pad_token_id=0)
    monkeypatch.setattr(fast_recurrence, "triton_applies", lambda tensor: False)
    plain = model.generate(prompt, max_new_tokens=4, do_sample=False, pad_token_id=0)
    assert torch.equal(fused, plain)


def elmo_layer(projection: bool, seed: int = 0, std: float = 0.5) -> ElmoLstmLayer:
    """A small ELMo layer whose clips bind (random weights of scale `std` drive cells and projections past them)."""
    config = tiny_config(hf_attn.ARCHITECTURES["elmo"], cell_clip=0.8, proj_clip=0.6)
    config.hidden_size = 20  # 4H = 80 gates: more than one feature tile
    config.projection_dim = 12 if projection else config.hidden_size
    torch.manual_seed(seed)
    layer = ElmoLstmLayer(config.projection_dim, config, residual=False)
    assert (layer.weight_proj is not None) == projection
    for parameter in layer.parameters():
        torch.nn.init.normal_(parameter, std=std)
    return layer


def elmo_run(
    layer: ElmoLstmLayer,
    implementation: str,
    autocast: bool = False,
    device: torch.device = DEVICE,
    gradients: bool = True,
):
    """m and c of every step, and the gradients of the inputs, the initial state and the weights, for one
    loss over the outputs (the layer on `device`); m and c alone without `gradients` (call it under no_grad)."""
    layer.to(device)
    generator = torch.Generator().manual_seed(1)
    batch, steps = 3, 7

    def leaf(*shape: int, clip: float | None = None) -> torch.Tensor:
        value = torch.randn(*shape, generator=generator)
        value = value if clip is None else value.clamp(-clip, clip)
        return value.to(device).requires_grad_()

    inputs = leaf(2, batch, steps, layer.weight_ih.size(-1))
    cell = leaf(2, batch, layer.hidden_size, clip=0.8)
    output = leaf(2, batch, layer.output_size)
    weights = torch.randn(2, batch, steps, layer.output_size, generator=generator).to(device)
    layer.implementation = implementation
    layer.zero_grad()
    with torch.autocast(torch.device(device).type, dtype=torch.bfloat16, enabled=autocast):
        outputs, cells = layer(inputs, (cell, output), return_cells=True)
        if not gradients:
            return [outputs.float(), cells.float()]
        (outputs.float() * weights).sum().backward()
    gradients = [inputs.grad, cell.grad, output.grad, *(p.grad for p in layer.parameters())]
    return [outputs.float(), cells.float(), *gradients]


ELMO_PATHS = ["pytorch-cells", "triton-cells", "persistent"]


def use_elmo_path(monkeypatch, path: str) -> list[str]:
    """Routes ELMo's fused recurrence to the per-step loop on the PyTorch twins or the Triton cells, or to the
    persistent kernel; returns the list that records each persistent launch (forward, backward)."""
    from hf_attn.models.elmo import triton_persistent

    monkeypatch.setattr(fused_lstm, "use_triton", lambda tensor: path != "pytorch-cells")
    monkeypatch.setenv("HF_ATTN_ELMO_PERSISTENT", "1" if path == "persistent" else "0")
    kinds = {"elmo_persistent_forward": "forward", "elmo_persistent_backward": "backward"}
    return record_calls(monkeypatch, triton_persistent, kinds)


@pytest.mark.parametrize("projection", [True, False], ids=["projected", "unprojected"])
@pytest.mark.parametrize("path", ELMO_PATHS)
def test_elmo_fused_lstm_matches_the_readable_cell(monkeypatch, projection, path):
    """The fused recurrence (hand-written backward; per step on Triton cells or their PyTorch twins, or the
    persistent kernel) against `_step` under autograd: outputs, cells and every gradient (inputs, initial state,
    weights), fp32, with both clips binding; and without a gradient (inference, nothing saved) the same outputs."""
    launched = use_elmo_path(monkeypatch, path)
    layer = elmo_layer(projection)
    reference = elmo_run(layer, "reference")
    clipped = reference[1].abs() >= 0.8 - 1e-6
    assert clipped.any() and not clipped.all()  # the cell clip binds somewhere, not everywhere
    for ours, theirs in zip(elmo_run(layer, "fused"), reference, strict=True):
        torch.testing.assert_close(ours, theirs, rtol=1e-4, atol=1e-5)
    assert launched == (["forward", "backward"] if path == "persistent" else []), launched
    with torch.no_grad():
        inference = elmo_run(layer, "fused", gradients=False)
    for ours, theirs in zip(inference, reference[:2], strict=True):
        torch.testing.assert_close(ours, theirs, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("path", ELMO_PATHS)
def test_elmo_fused_lstm_under_bf16_autocast_matches_the_readable_cell(monkeypatch, path):
    """Under bf16 autocast both compute in bfloat16. One bf16 rounding apart can flip a binding clip and so a
    gradient, and 7 saturated steps amplify it (at weights of scale 0.5 the readable cell's own bf16 error reaches
    50% for some seeds): at scale 0.3 the fused path is held to the readable cell's own bf16 error against float32,
    twice it plus 5% of each value's scale, outputs, cells and every gradient."""
    use_elmo_path(monkeypatch, path)
    layer = elmo_layer(projection=True, std=0.3)
    exact = elmo_run(layer, "reference")
    reference = elmo_run(layer, "reference", autocast=True)
    fused = elmo_run(layer, "fused", autocast=True)
    for index, (ours, theirs, truth) in enumerate(zip(fused, reference, exact, strict=True)):
        assert torch.isfinite(ours).all()
        own_error = (theirs.float() - truth).abs().max().item()
        error = (ours.float() - truth).abs().max().item()
        assert error <= 2 * own_error + 5e-2 * truth.abs().max().item(), (index, error, own_error)


# ---------------------------------------------------------------------------------------------------------------
# BiBloSA's fused block self-attention (`models/biblosa/triton_block_attention.py`)
# ---------------------------------------------------------------------------------------------------------------


def use_fused_kernels(monkeypatch, fused: bool) -> list[str]:
    """Routes BiBloSA's block attention to the fused kernels or to the chunked PyTorch path; returns the list that
    records each kernel forward launched (so a test knows which path ran, not only that two runs agree)."""
    from hf_attn.models.biblosa import block_attention, triton_block_attention

    monkeypatch.setattr(block_attention, "TRITON_ON_CPU", fused)
    monkeypatch.setattr(block_attention, "kernels_apply", lambda tensor, on_cpu=False: fused)
    launched, forward = [], triton_block_attention.attention_forward

    def recorded(*arguments, **keywords):
        launched.append("forward")
        return forward(*arguments, **keywords)

    monkeypatch.setattr(triton_block_attention, "attention_forward", recorded)
    return launched


def block_attention_run(fused: bool, monkeypatch, dtype, groups, length, features, direction, with_maps, seed=0):
    """out, maps and every input's gradient of `multi_dimensional_attention` for one loss, on the fused kernels or
    the chunked PyTorch path, inputs in `dtype`; a padded tail, an all-padding sequence and a one-token one."""
    from hf_attn.models.biblosa import block_attention

    launched = use_fused_kernels(monkeypatch, fused)
    generator = torch.Generator().manual_seed(seed)

    def leaf(*shape):
        return torch.randn(*shape, generator=generator).to(DEVICE, dtype).requires_grad_()

    keys, queries, values = (leaf(groups, length, features) for _ in range(3))
    bias = leaf(features)
    lengths = torch.tensor([length, max(length - 5, 1), 0, 1][:groups] + [length] * max(0, groups - 4))
    mask = (torch.arange(length)[None] < lengths[:, None]).to(DEVICE)
    weights = torch.randn(groups, length, features, generator=generator).to(DEVICE)
    out, maps = block_attention.multi_dimensional_attention(
        keys, queries, bias, values, mask, direction, 5.0, with_maps=with_maps
    )
    (out.float() * weights).sum().backward()
    assert bool(launched) == fused, launched  # the path asked for is the one that ran
    return [out.float(), *([maps] if with_maps else []), keys.grad, queries.grad, bias.grad, values.grad]


@pytest.mark.parametrize("direction", ["forward", "backward"])
@pytest.mark.parametrize(("groups", "length", "features"), [(4, 6, 8), (5, 21, 20), (3, 37, 33)])
def test_biblosa_fused_attention_matches_the_chunked_path(monkeypatch, direction, groups, length, features):
    """Outputs, feature-averaged maps and the gradients of keys, queries, bias and values, fp32 to 1e-5, at block
    lengths and widths no tile divides (one tile and several), with padding, an all-padding and a one-token block."""
    fused = block_attention_run(True, monkeypatch, torch.float32, groups, length, features, direction, True)
    reference = block_attention_run(False, monkeypatch, torch.float32, groups, length, features, direction, True)
    for ours, theirs in zip(fused, reference, strict=True):
        torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=1e-5)
    assert not fused[0][2].any() and not fused[1][2].any()  # the all-padding block: 0 out, 0 maps, not NaN


def test_biblosa_fused_attention_in_bf16_and_without_maps(monkeypatch):
    """bf16 inputs (both paths compute in float32 and return bf16): equal to bf16's precision, gradients too."""
    fused = block_attention_run(True, monkeypatch, torch.bfloat16, 3, 19, 24, "forward", False)
    reference = block_attention_run(False, monkeypatch, torch.bfloat16, 3, 19, 24, "forward", False)
    for ours, theirs in zip(fused, reference, strict=True):
        assert torch.isfinite(ours.float()).all()
        torch.testing.assert_close(ours.float(), theirs.float(), **TOLERANCE[torch.bfloat16])


@pytest.mark.parametrize("block_length", [3, "auto"])
def test_biblosa_model_on_the_fused_kernels_matches_the_reference(monkeypatch, block_length):
    """A whole Bi-BloSAN pair classifier (intra- and inter-block attention, both directions, the fusion gate) on the
    kernels against the chunked path: logits, maps and every parameter's gradient, fixed and automatic r."""
    from hf_attn.models.biblosa.modeling_biblosa import BiBlosaForPairClassification

    config = tiny_config(hf_attn.ARCHITECTURES["biblosa"], block_length=block_length)
    torch.manual_seed(0)
    model = BiBlosaForPairClassification(config).to(DEVICE).train()
    for module in model.modules():  # no dropout draws to differ between the two runs
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
    lengths, pair_lengths = torch.tensor([11, 4, 1, 0]), torch.tensor([7, 11, 2, 5])
    premise_mask = (torch.arange(11)[None] < lengths[:, None]).long()
    hypothesis_mask = (torch.arange(11)[None] < pair_lengths[:, None]).long()
    inputs = {"input_ids": torch.randint(1, 40, (4, 11)) * premise_mask, "attention_mask": premise_mask,
              "pair_input_ids": torch.randint(1, 40, (4, 11)) * hypothesis_mask,
              "pair_attention_mask": hypothesis_mask}  # fmt: skip
    results = []
    for fused in (True, False):
        launched = use_fused_kernels(monkeypatch, fused)
        model.zero_grad()
        output = model(**on_device(inputs), labels=torch.tensor([0, 1, 2, 1], device=DEVICE), output_attentions=True)
        output.loss.backward()
        # both texts, both directions, inside and between the blocks: 8 launches on the kernels, none off them
        assert len(launched) == (8 if fused else 0), launched
        results.append((output, {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}))
    (fused, fused_grads), (reference, reference_grads) = results
    assert fused.keys() == reference.keys() and "block_attentions" in fused
    for key in reference:  # loss, logits, sentence vectors and every attention map
        torch.testing.assert_close(fused[key], reference[key], rtol=1e-5, atol=1e-5, msg=key)
    assert fused_grads.keys() == reference_grads.keys()
    for name, gradient in reference_grads.items():
        torch.testing.assert_close(fused_grads[name], gradient, rtol=1e-4, atol=1e-5, msg=name)


# ---------------------------------------------------------------------------------------------------------------
# Launches per sequence (`hf_attn.layers.kernels.LaunchCounter`: Triton launches and computing ATen operators)
# ---------------------------------------------------------------------------------------------------------------


def launches(run, steps: int) -> tuple[int, int]:
    """(forward, backward) launches of `run(steps)`, which returns the loss after its forward."""
    from hf_attn.layers.kernels import LaunchCounter

    with LaunchCounter() as forward:
        loss = run(steps)
    with LaunchCounter() as backward:
        loss.backward()
    return forward.total, backward.total


def lstmn_layer_run(monkeypatch, persistent: bool):
    from hf_attn.models.lstmn.modeling_lstmn import LstmnLayer

    monkeypatch.setattr(fast_recurrence, "TRITON_ON_CPU", True)
    monkeypatch.setenv("HF_ATTN_LSTMN_PERSISTENT", "1" if persistent else "0")
    config = tiny_config(hf_attn.ARCHITECTURES["lstmn"], hidden_dropout_prob=0.0)
    torch.manual_seed(0)
    layer = LstmnLayer(config, config.embedding_size).to(DEVICE)

    def run(steps: int) -> torch.Tensor:
        for parameter in layer.parameters():
            parameter.grad = None  # the first backward stores each gradient, a later one adds: count alike
        inputs = torch.randn(2, steps, config.embedding_size, device=DEVICE, requires_grad=True)
        output = layer(inputs, torch.ones(2, steps, dtype=torch.bool, device=DEVICE))
        return output.hidden.sum() + output.cells.sum()

    return run


def elmo_layer_run(monkeypatch, persistent: bool):
    monkeypatch.setattr(fused_lstm, "RUN_ON_CPU", True)
    monkeypatch.setenv("HF_ATTN_ELMO_PERSISTENT", "1" if persistent else "0")
    layer = elmo_layer(projection=True).to(DEVICE)

    def run(steps: int) -> torch.Tensor:
        for parameter in layer.parameters():
            parameter.grad = None
        inputs = torch.randn(2, 2, steps, layer.weight_ih.size(-1), device=DEVICE, requires_grad=True)
        state = (
            torch.zeros(2, 2, layer.hidden_size, device=DEVICE),
            torch.zeros(2, 2, layer.output_size, device=DEVICE),
        )
        return layer(inputs, state)[0].sum()

    return run


# The per-step paths' launches a step, forward and backward, as counted: the bound this test holds them to. On CUDA
# ELMo's products are one GEMM a direction (`fused_lstm.direction_product`), two where the CPU runs one.
PER_STEP_LAUNCHES = {"lstmn": (7, 9), "elmo": (6, 6) if DEVICE.type == "cuda" else (4, 4)}


@pytest.mark.parametrize("model", ["lstmn", "elmo"])
def test_the_persistent_kernels_launch_a_constant_number_of_kernels_per_sequence(monkeypatch, model):
    """One LSTMN layer and one ELMo layer, forward and backward, at T = 3 and T = 11: on the persistent kernels the
    launches do not grow with T (one kernel for all the steps, a fixed number of GEMMs and copies around it); on the
    per-step path they grow by a fixed number a step (`PER_STEP_LAUNCHES`), which it must not exceed."""
    make = lstmn_layer_run if model == "lstmn" else elmo_layer_run
    persistent = make(monkeypatch, persistent=True)
    launches(persistent, 2)  # a first run (allocations, caches) before counting
    short, long = launches(persistent, 3), launches(persistent, 11)
    assert short == long, (short, long)
    assert max(short) <= 25, short  # the layer's input GEMM, the kernel, the GEMMs and copies around it
    per_step = make(monkeypatch, persistent=False)
    launches(per_step, 2)
    short, long = launches(per_step, 3), launches(per_step, 11)
    growth = tuple((b - a) / 8 for a, b in zip(short, long, strict=True))
    assert growth <= PER_STEP_LAUNCHES[model] and min(growth) > 0, growth


# ---------------------------------------------------------------------------------------------------------------
# The fused output loss's kernel (`hf_attn/layers/triton_losses.py`)
# ---------------------------------------------------------------------------------------------------------------
