"""The recurrent encoders (hf_attn.layers.rnn): outputs independent of padding and batch order, an all-padding row,
the masked and unpacked runs equal to the packed one, and the weights' layout by direction."""

from __future__ import annotations

import shutil

import pytest
import torch
from torch import nn

from hf_attn.layers import PackedBiRNN


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


# torch 2.13's inductor compiles a `scan`'s backward with wrong gradients for the tensors its step closes over (the
# recurrent weights W_hh, b_hh): off by up to 4 on this test's sizes, where `aot_eager` (the same graph, eager kernels)
# is exact. It reaches SgmForMultiLabelClassification (its compiled encoder) and the ELMo biLM (whose compile fails:
# "scan might be aliasing"). The strict xfail turns red once a torch fixes it, so that the manual's word goes.
# Only a gradient mismatch counts as the bug (`raises`); without a C++ compiler inductor cannot run on the CPU at all.
INDUCTOR_SCAN_BUG = [
    pytest.mark.xfail(
        torch.__version__.startswith("2.13."),
        raises=AssertionError,
        strict=True,
        reason="torch 2.13 inductor: a scan's closed-over gradients",
    ),
    pytest.mark.skipif(
        not (shutil.which("g++") or shutil.which("c++")), reason="inductor on the CPU needs a C++ compiler"
    ),
]


@pytest.mark.long
@pytest.mark.parametrize("backend", ["aot_eager", pytest.param("inductor", marks=INDUCTOR_SCAN_BUG)])
@pytest.mark.parametrize("cell", [nn.LSTM, nn.GRU])
def test_masked_rnn_compiled_gives_the_eager_gradients(cell, backend):
    """`masked_rnn` under `torch.compile(fullgraph=True)`: the gradients of every weight equal eager's."""
    from hf_attn.layers.rnn import masked_rnn

    torch.manual_seed(0)
    rnn = cell(6, 5, bidirectional=True, batch_first=True)
    inputs = torch.randn(4, 7, 6)
    mask = torch.arange(7)[None] < torch.tensor([5, 2, 7, 1])[:, None]

    def gradients(run) -> dict[str, torch.Tensor]:
        rnn.zero_grad(set_to_none=True)
        run(rnn, inputs, mask)[0].square().sum().backward()
        return {name: p.grad.clone() for name, p in rnn.named_parameters()}

    expected = gradients(masked_rnn)
    torch._dynamo.reset()
    try:
        actual = gradients(torch.compile(masked_rnn, backend=backend, fullgraph=True))
    finally:
        torch._dynamo.reset()
    for name, grad in actual.items():
        torch.testing.assert_close(grad, expected[name], rtol=1e-4, atol=1e-5, msg=name)
