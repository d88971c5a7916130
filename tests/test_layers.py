"""Unit tests of the paper-agnostic primitives in hf_attn.layers."""

import pytest
import torch
from torch import nn

from hf_attn.layers import AdditiveAttentionPooling, PackedBiRNN, check_token_inputs, masked_softmax


def test_masked_softmax_equals_softmax_over_unmasked_positions():
    scores = torch.randn(2, 3, 6)
    mask = torch.tensor([[1, 1, 1, 0, 0, 0], [1, 0, 1, 1, 1, 1]], dtype=torch.bool)[:, None, :]
    weights = masked_softmax(scores, mask)
    assert torch.all(weights[:, :, :][~mask.expand_as(weights)] == 0)
    expected = torch.softmax(scores[0, :, :3], dim=-1)
    torch.testing.assert_close(weights[0, :, :3], expected, rtol=0, atol=1e-7)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 3))


def test_masked_softmax_all_masked_row_is_zero_not_nan_and_has_finite_gradient():
    scores = torch.randn(2, 4, requires_grad=True)
    mask = torch.tensor([[0, 0, 0, 0], [1, 1, 0, 0]], dtype=torch.bool)
    weights = masked_softmax(scores, mask)
    assert torch.equal(weights[0], torch.zeros(4))
    (weights * torch.arange(4.0)).sum().backward()
    assert torch.isfinite(scores.grad).all()
    assert torch.equal(scores.grad[0], torch.zeros(4))


def test_masked_softmax_without_mask_and_in_half_precision():
    scores = torch.randn(3, 5)
    torch.testing.assert_close(masked_softmax(scores, None), torch.softmax(scores, -1))
    half = masked_softmax(scores.half(), torch.zeros(3, 5, dtype=torch.bool))
    assert torch.isfinite(half).all() and half.abs().sum() == 0


def test_additive_attention_pooling_starts_uniform():
    pooling = AdditiveAttentionPooling(input_size=6, attention_size=5, num_hops=3)
    _, weights = pooling(torch.randn(2, 4, 6), torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]]))
    torch.testing.assert_close(weights[0], torch.full((3, 4), 0.25))
    torch.testing.assert_close(weights[1, :, :2], torch.full((3, 2), 0.5))


def test_additive_attention_pooling_matches_the_equations():
    torch.manual_seed(0)
    pooling = AdditiveAttentionPooling(input_size=6, attention_size=5, num_hops=3, bias=True)
    nn.init.normal_(pooling.context)
    hidden = torch.randn(2, 4, 6)
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]])
    pooled, weights = pooling(hidden, mask)
    # e = W_2 tanh(W_1 h + b_1), α = softmax over unmasked tokens, m = Σ α h  — recomputed by hand for example 1.
    scores = pooling.context @ torch.tanh(
        pooling.projection.weight @ hidden[1, :2].T + pooling.projection.bias[:, None]
    )
    alpha = torch.softmax(scores, dim=-1)  # (R, 2)
    torch.testing.assert_close(weights[1, :, :2], alpha)
    assert torch.equal(weights[1, :, 2:], torch.zeros(3, 2))
    torch.testing.assert_close(pooled[1], alpha @ hidden[1, :2])
    assert pooled.shape == (2, 3, 6) and weights.shape == (2, 3, 4)
    values = torch.randn(2, 4, 2)  # scored by `hidden`, pooled from other features
    pooled_values, same_weights = pooling(hidden, mask, values=values)
    torch.testing.assert_close(same_weights, weights)
    torch.testing.assert_close(pooled_values[1], alpha @ values[1, :2])


def test_additive_attention_pooling_additive_mask_matches_exact_mask_except_on_empty_rows():
    torch.manual_seed(0)
    exact = AdditiveAttentionPooling(4, 3, num_hops=2, bias=False)
    nn.init.normal_(exact.context)
    additive = AdditiveAttentionPooling(4, 3, num_hops=2, bias=False, additive_mask_value=-10000.0)
    additive.load_state_dict(exact.state_dict())
    hidden, mask = torch.randn(3, 5, 4), torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [0, 0, 0, 0, 0]])
    (pooled_exact, weights_exact), (pooled_add, weights_add) = exact(hidden, mask), additive(hidden, mask)
    torch.testing.assert_close(weights_exact[:2], weights_add[:2])
    torch.testing.assert_close(pooled_exact[:2], pooled_add[:2])
    assert torch.equal(weights_exact[2], torch.zeros(2, 5))  # exact masking: an empty row attends to nothing
    assert torch.equal(pooled_exact[2], torch.zeros(2, 4))
    torch.testing.assert_close(weights_add[2].sum(-1), torch.ones(2))  # the original's -10000: uniform-ish, finite


@pytest.mark.parametrize("cell", [nn.LSTM, nn.GRU])
def test_packed_birnn_outputs_do_not_depend_on_padding_or_batch_order(cell):
    torch.manual_seed(0)
    rnn = PackedBiRNN(cell(3, 4, num_layers=2, bidirectional=True, batch_first=True)).eval()
    inputs = torch.randn(3, 6, 3)
    lengths = torch.tensor([2, 6, 4])  # not sorted: packing must restore the order
    mask = (torch.arange(6)[None] < lengths[:, None]).long()
    outputs = rnn(inputs, mask)
    assert outputs.shape == (3, 6, 8)
    for index, length in enumerate(lengths.tolist()):
        alone = rnn(inputs[index : index + 1, :length], torch.ones(1, length))
        torch.testing.assert_close(outputs[index, :length], alone[0], rtol=0, atol=1e-6)
        assert torch.equal(outputs[index, length:], torch.zeros(6 - length, 8))
    unpacked = rnn(inputs, mask, pack=False)
    assert not torch.allclose(unpacked[0, :2], outputs[0, :2])  # the backward direction saw the pads


def test_packed_birnn_all_padding_row_and_left_padding():
    rnn = PackedBiRNN(nn.LSTM(3, 4, bidirectional=True, batch_first=True))
    inputs = torch.randn(2, 3, 3)
    outputs = rnn(inputs, torch.tensor([[0, 0, 0], [1, 1, 0]]))
    assert torch.equal(outputs[0], torch.zeros(3, 8))
    with pytest.raises(ValueError, match="right-padded"):
        rnn(inputs, torch.tensor([[0, 1, 1], [1, 1, 1]]))
    with pytest.raises(ValueError, match="batch_first"):
        PackedBiRNN(nn.LSTM(3, 4))


def test_check_token_inputs_errors_name_the_problem():
    ids = torch.tensor([[3, 4, 0]])
    assert check_token_inputs(ids, None, 10).all()  # no mask: every position is real, the pad id 0 too
    with pytest.raises(ValueError, match="must be right-padded"):
        check_token_inputs(ids, torch.tensor([[0, 1, 1]]), 10, right_padded=True)
    with pytest.raises(ValueError, match=r"2 dimensions \(batch, tokens\), got shape \(3,\)"):
        check_token_inputs(ids[0], None, 10)
    with pytest.raises(ValueError, match="`attention_mask` must have the same shape"):
        check_token_inputs(ids, torch.ones(1, 4), 10)
    with pytest.raises(ValueError, match=r"outside the vocabulary \[0, 4\): min 0, max 4"):
        check_token_inputs(ids, None, 4)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        check_token_inputs(-ids, None, 10)
    with pytest.raises(ValueError, match="integer token ids"):
        check_token_inputs(ids.float(), None, 10)
    with pytest.raises(ValueError, match="`pair_attention_mask`"):
        check_token_inputs(ids, torch.ones(2, 3), 10, name="pair_input_ids")


def test_value_checks_leave_no_branch_in_an_exported_graph():
    """Range and right-padding checks read values: `torch.export` traces past them (no data-dependent guard, no
    host sync), while the static checks still hold there."""

    class Checked(nn.Module):
        def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            return check_token_inputs(ids, mask, 10, right_padded=True).sum(-1)

    batch, tokens = torch.export.Dim("batch"), torch.export.Dim("tokens")
    ids, mask = torch.tensor([[3, 4, 0], [1, 2, 3]]), torch.tensor([[1, 1, 0], [1, 1, 1]])
    program = torch.export.export(Checked(), (ids, mask), dynamic_shapes=({0: batch, 1: tokens},) * 2)
    assert torch.equal(program.module()(ids, mask), torch.tensor([2, 3]))
    with pytest.raises(ValueError, match="must be right-padded"):  # eager: the check runs
        Checked()(ids, mask.flip(-1))


def test_token_cross_entropy_has_one_rule_for_a_batch_with_nothing_to_score():
    from hf_attn.layers import token_cross_entropy

    logits = torch.randn(2, 3, 5, requires_grad=True)
    nothing = torch.full((2, 3), -100)
    loss = token_cross_entropy(logits, nothing)
    loss.backward()
    assert loss.item() == 0.0 and torch.equal(logits.grad, torch.zeros_like(logits))
    labels = torch.tensor([[1, -100, 2], [0, 4, -100]])
    expected = torch.nn.functional.cross_entropy(logits.reshape(-1, 5), labels.reshape(-1), ignore_index=-100)
    torch.testing.assert_close(token_cross_entropy(logits, labels), expected)
    torch.testing.assert_close(token_cross_entropy(logits, labels, num_items_in_batch=8), expected * 4 / 8)
    diverged = logits.detach().clone()
    diverged[0, 0, 0] = float("nan")
    assert torch.isnan(token_cross_entropy(diverged, labels))  # a real NaN is never hidden


@pytest.mark.parametrize("cell", [nn.LSTM, nn.GRU])
@pytest.mark.parametrize("layers", [1, 2])
def test_masked_rnn_equals_the_packed_run(cell, layers):
    """The traced recurrence (`masked_rnn`, a scan that carries the state over masked steps) gives the packed
    outputs and final states: right padding, an all-padding row, an initial state, several layers."""
    from hf_attn.layers.rnn import masked_rnn

    torch.manual_seed(0)
    rnn = cell(4, 5, num_layers=layers, bidirectional=True, batch_first=True).eval()
    inputs = torch.randn(3, 7, 4)
    mask = torch.tensor([[1] * 7, [1] * 3 + [0] * 4, [0] * 7], dtype=torch.bool)
    h0 = torch.randn(2 * layers, 3, 5)
    state = (h0, torch.randn_like(h0)) if cell is nn.LSTM else h0
    outputs, final = masked_rnn(rnn, inputs, mask, state)
    torch.testing.assert_close(outputs, PackedBiRNN(rnn)(inputs, mask, initial_state=state), rtol=1e-5, atol=1e-6)
    lengths = mask.sum(-1)
    packed = nn.utils.rnn.pack_padded_sequence(inputs, lengths.clamp(min=1), batch_first=True, enforce_sorted=False)
    _, expected = rnn(packed, state)
    for ours, theirs in zip(final if cell is nn.LSTM else (final,), expected if cell is nn.LSTM else (expected,),
                            strict=True):  # fmt: skip
        torch.testing.assert_close(ours[:, :2], theirs[:, :2], rtol=1e-5, atol=1e-6)  # rows with tokens


@pytest.mark.parametrize(
    "rnn",
    [
        nn.LSTM(4, 5, num_layers=2, bidirectional=True, batch_first=True),
        nn.GRU(4, 5, bidirectional=True, batch_first=True),
        nn.RNN(4, 5, num_layers=2, nonlinearity="relu", bidirectional=True, batch_first=True),
        nn.LSTM(4, 5, proj_size=3, bidirectional=True, batch_first=True),
        nn.LSTM(4, 5, batch_first=True),
    ],
    ids=["lstm-2-layers", "gru", "relu-rnn-2-layers", "lstm-proj", "lstm-one-direction"],
)
def test_the_unpacked_run_equals_the_packed_run(rnn):
    """On an accelerator (here: the CPU with `value_checks(False)`) `PackedBiRNN` runs `reversed_rnn`: the RNN's
    kernel over the padded batch, the backward direction on reversed prefixes. Same outputs and gradients as the
    packed run, with an initial state and an all-padding row, and nothing read on the host."""
    from hf_attn.layers.validation import value_checks

    torch.manual_seed(0)
    layer = PackedBiRNN(rnn).eval()
    inputs = torch.randn(3, 7, 4, requires_grad=True)
    mask = torch.tensor([[1] * 7, [1] * 3 + [0] * 4, [0] * 7])
    directions = 2 if rnn.bidirectional else 1
    h0 = torch.randn(rnn.num_layers * directions, 3, rnn.proj_size or rnn.hidden_size)
    state = (h0, torch.randn(rnn.num_layers * directions, 3, rnn.hidden_size)) if isinstance(rnn, nn.LSTM) else h0
    results = []
    for checks in (True, False):
        inputs.grad = None
        layer.zero_grad()
        with value_checks(checks):
            outputs = layer(inputs, mask, initial_state=state)
        outputs.square().sum().backward()
        results.append((outputs, inputs.grad.clone(), rnn.weight_hh_l0.grad.clone()))
    for packed, unpacked in zip(*results, strict=True):
        torch.testing.assert_close(unpacked, packed, rtol=1e-5, atol=1e-6)
    assert torch.equal(results[1][0][2], torch.zeros(7, results[1][0].size(-1)))  # the all-padding row


def test_a_large_loss_runs_in_chunks_with_the_same_value_and_gradient_in_less_memory():
    """Over `chunk_elements` logits, `token_cross_entropy` runs chunk by chunk under checkpointing: the same loss and
    gradient, and the backward pass keeps no float32 copy of the logits (a 25k-token batch over 32k words: 3.3 GB)."""
    from hf_attn.layers import token_cross_entropy

    torch.manual_seed(0)
    logits = torch.randn(6, 50, 300).to(torch.bfloat16).requires_grad_()
    labels = torch.randint(0, 300, (6, 50))
    labels[0, :7] = -100
    results = []
    for chunk_elements in (10**9, 3000):  # whole, then 10-row chunks
        saved = []

        def pack(tensor: torch.Tensor, saved: list = saved) -> torch.Tensor:
            if tensor.untyped_storage().data_ptr() != logits.untyped_storage().data_ptr():  # not a view of the logits
                saved.append(tensor.numel() * tensor.element_size())
            return tensor

        logits.grad = None
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
            loss = token_cross_entropy(logits, labels, label_smoothing=0.1, chunk_elements=chunk_elements)
        loss.backward()
        results.append((loss.detach(), logits.grad.clone(), sum(saved)))
    (whole, whole_grad, whole_saved), (chunked, chunked_grad, chunked_saved) = results
    torch.testing.assert_close(chunked, whole, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(chunked_grad.float(), whole_grad.float(), rtol=0, atol=1e-5)
    float32_logits = logits.numel() * 4
    assert whole_saved >= float32_logits  # the float32 log-softmax of every position
    assert chunked_saved < float32_logits / 4, (chunked_saved, float32_logits)
    logits.grad = None
    compiled = torch.compile(token_cross_entropy, backend="aot_eager", fullgraph=True)  # one graph, chunks included
    try:
        loss = compiled(logits, labels, label_smoothing=0.1, chunk_elements=3000)
        loss.backward()
    finally:
        torch._dynamo.reset()
    torch.testing.assert_close(loss.detach(), whole, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(logits.grad.float(), whole_grad.float(), rtol=0, atol=1e-5)


def _two_step_loss(hidden, weight, bias, labels, **kwargs):
    from hf_attn.layers.losses import token_cross_entropy

    return token_cross_entropy(nn.functional.linear(hidden, weight, bias), labels, **kwargs)


@pytest.mark.parametrize("label_smoothing", [0.0, 0.1])
@pytest.mark.parametrize("with_bias", [False, True], ids=["no-bias", "bias"])
def test_fused_linear_cross_entropy_equals_the_projection_then_the_loss(label_smoothing, with_bias):
    """The fused output loss (chunks of 4 rows here) against `token_cross_entropy(linear(h))`: the loss and the
    gradients of h, W and b within 1e-5 in float32, with ignored positions, ε smoothing and `num_items_in_batch`;
    what autograd keeps for the backward pass is the three gradients, never a (tokens, V) tensor."""
    from hf_attn.layers.losses import fused_linear_cross_entropy

    torch.manual_seed(0)
    vocabulary = 400
    hidden = torch.randn(3, 9, 16, requires_grad=True)
    weight = torch.randn(vocabulary, 16, requires_grad=True)
    bias = torch.randn(vocabulary, requires_grad=True) if with_bias else None
    labels = torch.randint(0, vocabulary, (3, 9))
    labels[0, 4:] = -100
    leaves = [hidden, weight] + ([bias] if with_bias else [])
    for count in (None, 40):
        kwargs = {"num_items_in_batch": count, "label_smoothing": label_smoothing}
        expected = _two_step_loss(hidden, weight, bias, labels, **kwargs)
        expected_grads = torch.autograd.grad(expected, leaves)
        saved = []

        def pack(tensor: torch.Tensor, saved: list = saved) -> torch.Tensor:
            saved.append(tensor.numel())
            return tensor

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
            fused = fused_linear_cross_entropy(hidden, weight, bias, labels, chunk_elements=4 * vocabulary, **kwargs)
        assert max(saved) < labels.numel() * vocabulary  # no logits-sized tensor kept
        torch.testing.assert_close(fused, expected, rtol=1e-5, atol=1e-5)
        for ours, theirs in zip(torch.autograd.grad(fused, leaves), expected_grads, strict=True):
            torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=1e-5)


def test_fused_linear_cross_entropy_edge_cases_and_bf16():
    """Nothing to score: loss 0 and zero gradients, never NaN; a NaN hidden state still gives NaN; under bf16
    autocast the loss and gradients agree with the two-step loss to bf16's precision."""
    from hf_attn.layers.losses import fused_linear_cross_entropy

    torch.manual_seed(0)
    hidden = torch.randn(2, 5, 8, requires_grad=True)
    weight = torch.randn(30, 8, requires_grad=True)
    nothing = torch.full((2, 5), -100)
    loss = fused_linear_cross_entropy(hidden, weight, None, nothing)
    loss.backward()
    assert loss.item() == 0.0 and not hidden.grad.any() and not weight.grad.any()
    labels = torch.randint(0, 30, (2, 5))
    assert torch.isnan(fused_linear_cross_entropy(hidden * float("nan"), weight, None, labels))
    with pytest.raises(ValueError, match="labels"):
        fused_linear_cross_entropy(hidden, weight, None, torch.randint(0, 30, (2, 4)))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        fused = fused_linear_cross_entropy(hidden, weight, None, labels, chunk_elements=60)
        expected = _two_step_loss(hidden, weight, None, labels)
    ours = torch.autograd.grad(fused, [hidden, weight])
    theirs = torch.autograd.grad(expected, [hidden, weight])
    torch.testing.assert_close(fused, expected.float(), rtol=2e-2, atol=2e-2)
    for mine, reference in zip(ours, theirs, strict=True):
        assert mine.dtype == reference.dtype
        torch.testing.assert_close(mine, reference, rtol=5e-2, atol=5e-2)


def test_weights_are_laid_out_by_direction_only_when_the_rnn_owns_their_storage():
    """`compact_by_direction` moves an RNN's weights into buffers of their own only when nothing else lives in the
    storage they leave (an RNN's own parameters), never views into another owner's buffer (FSDP's flat parameter)."""
    from hf_attn.layers.rnn import _owns_its_storage

    lstm = nn.LSTM(4, 3, num_layers=2, bidirectional=True)
    assert _owns_its_storage(lstm._flat_weights)
    shared = torch.zeros(10_000)
    views = [nn.Parameter(shared[:12].view(3, 4)), nn.Parameter(shared[12:24].view(3, 4))]
    assert not _owns_its_storage(views)
    assert not _owns_its_storage([weight.detach() for weight in lstm._flat_weights])  # plain tensors
