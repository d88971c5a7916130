"""A packed (bidirectional) RNN wrapper, and the same recurrence as one traceable graph.

Running an RNN over right-padded batches without packing lets the backward direction start on the pads, so the
states of real tokens depend on how much padding the batch needed. Packing by lengths removes that dependence:
an example's outputs are the same alone or padded in any batch.

Packing has a data-dependent shape (the batch sizes per step come from the lengths, read on the host): on an
accelerator that read is a device sync, and `torch.compile(fullgraph=True)`, `torch.export` and
`torch.onnx.export(dynamo=True)` cannot trace it. On the CPU PyTorch's packed run is slow to train: it slices its
input once per time step, and each slice's backward writes a zero tensor the size of the whole input, so the
backward grows with T² (measured on 2 cores, a 2-layer BiLSTM of 300 units, 32 rows of 800-1,000 tokens: 171 s
against 3.4 s for `reversed_rnn`; 26.5 s against 0.8 s at 320-400 tokens). So `PackedBiRNN` never packs; it runs
one of two recurrences that give the packed outputs:

* eager and under `torch.compile`, on any device: `reversed_rnn`, the RNN's own kernel (cuDNN, oneDNN) over the
  padded batch, one layer and direction at a time, the backward direction on each row's reversed prefix
  (`reverse_padded`): in both runs the pads come after a row's real tokens, so they never reach a real token's
  state. Nothing is read on the host, and the graph is static. cuDNN takes one layer and direction's weights
  without a copy only when they are one buffer in its own layout, starting that buffer: `compact_by_direction`
  lays the module's weights out so, one buffer per layer and direction, once (not per call, as cuDNN's "not part
  of single contiguous chunk of memory" fallback would);
* exported: `masked_rnn`, the same weights as `torch._higher_order_ops.scan` over time, a loop the exported graph
  (and ONNX's `Scan`) keeps for any batch and length: at a masked position the state is carried over unchanged, so
  each direction starts at its first real token. It also reads masks that are not right-padded.

`reversed_rnn`'s final states are those after the pads. A caller that needs each row's own final state (an
encoder handing it to a decoder) runs `segmented_rnn` on the CPU: the packed run, final states included, as one
kernel call per stretch of time in which the same rows are real, whose backward is linear in T.

Shape legend: ``B`` batch, ``T`` tokens, ``D`` input features, ``H`` hidden units per direction, ``K`` directions,
``L`` layers, ``G`` gates · H (LSTM 4H: i, f, g, o; GRU 3H: r, z, n; PyTorch's order).
"""

from __future__ import annotations

import torch
from torch import nn

from .layers_checkpointing import CheckpointingLayer
from .layers_sequences import reverse_padded
from .layers_validation import check_right_padded

# `torch.compile` stops at any module that *is* an `nn.RNN`/`nn.GRU`/`nn.LSTM` ("Dynamo does not support RNN")
# unless `allow_rnn` is on, so no model holding one could compile with `fullgraph=True`. Our models, while traced,
# run such a module either as `masked_rnn` below (its weights in a `scan`) or over every position (one `aten.lstm`
# node, cuDNN on CUDA). The flag is process-wide: a user's own RNN modules are then traced too, instead of running
# eagerly between two graphs (the manual, "The transformers contract").
torch._dynamo.config.allow_rnn = True


def _direction(
    rnn: nn.RNNBase, layer: int, reverse: bool, inputs: torch.Tensor, mask: torch.Tensor, state: tuple
) -> tuple[torch.Tensor, tuple]:
    """One layer and direction of `rnn` over `inputs (B, T, D)` under `mask (B, T)` from `state` (`(h, c)` or
    `(h,)`, each `(B, H)`): outputs `(B, T, H)` (zero at masked positions) and the state after the last real step."""
    from torch._higher_order_ops.scan import scan

    suffix = f"l{layer}" + ("_reverse" if reverse else "")
    w_ih, w_hh = getattr(rnn, f"weight_ih_{suffix}"), getattr(rnn, f"weight_hh_{suffix}")
    b_ih = getattr(rnn, f"bias_ih_{suffix}") if rnn.bias else None
    b_hh = getattr(rnn, f"bias_hh_{suffix}") if rnn.bias else None
    if reverse:
        inputs, mask = inputs.flip(1), mask.flip(1)
    projected = nn.functional.linear(inputs, w_ih, b_ih)  # W_ih x_t + b_ih for every step at once, (B, T, G)
    # The step's weights become the scan's inputs, which must not alias one another; on CUDA `compact_by_direction`
    # lays a layer-direction's weights out in one buffer (torch 2.11 refused the scan: "Input-to-input aliasing").
    w_hh, b_hh = w_hh.clone(), (None if b_hh is None else b_hh.clone())
    is_lstm, is_gru = isinstance(rnn, nn.LSTM), isinstance(rnn, nn.GRU)

    def step(carry: tuple, step_inputs: tuple) -> tuple[tuple, torch.Tensor]:
        x_t, m_t = step_inputs  # (B, G), (B,)
        h = carry[0]
        recurrent = nn.functional.linear(h, w_hh, b_hh)  # (B, G)
        if is_lstm:
            i, f, g, o = (x_t + recurrent).chunk(4, dim=-1)
            c = torch.sigmoid(f) * carry[1] + torch.sigmoid(i) * torch.tanh(g)
            new = (torch.sigmoid(o) * torch.tanh(c), c)
        elif is_gru:
            x_r, x_z, x_n = x_t.chunk(3, dim=-1)
            h_r, h_z, h_n = recurrent.chunk(3, dim=-1)
            r, z = torch.sigmoid(x_r + h_r), torch.sigmoid(x_z + h_z)
            n = torch.tanh(x_n + r * h_n)
            new = ((1 - z) * n + z * h,)
        else:
            activation = torch.tanh if rnn.nonlinearity == "tanh" else torch.relu
            new = (activation(x_t + recurrent),)
        keep = m_t[:, None]
        new = tuple(torch.where(keep, value, old) for value, old in zip(new, carry, strict=True))  # masked: carried
        return new, new[0] * keep.to(new[0].dtype)

    final, outputs = scan(step, state, (projected.transpose(0, 1), mask.transpose(0, 1)))  # over T
    outputs = outputs.transpose(0, 1)  # (B, T, H)
    return (outputs.flip(1) if reverse else outputs), final


def _between_layers(rnn: nn.RNNBase, layer: int, inputs: torch.Tensor) -> torch.Tensor:
    """The input of `layer`: the outputs of the layer below, with the RNN's dropout between layers in training."""
    if layer > 0 and rnn.dropout and rnn.training:
        return nn.functional.dropout(inputs, rnn.dropout, training=True)
    return inputs


def masked_rnn(
    rnn: nn.RNNBase,
    inputs: torch.Tensor,
    mask: torch.Tensor,
    initial_state: torch.Tensor | tuple[torch.Tensor, torch.Tensor] | None = None,
) -> tuple[torch.Tensor, torch.Tensor | tuple[torch.Tensor, torch.Tensor]]:
    """`rnn(pack(inputs by mask), initial_state)` as one traceable graph (module docstring): `inputs (B, T, D)`, any
    boolean `mask (B, T)` (masked positions are skipped, the others read in order). Returns the outputs `(B, T, K·H)`,
    zero at masked positions, and the final state in `nn.LSTM`/`nn.GRU`'s layout (`(L·K, B, H)`, each the state
    after its direction's last real step). Projections (`proj_size`) are not supported."""
    if getattr(rnn, "proj_size", 0):
        raise NotImplementedError("masked_rnn does not run LSTMs with proj_size.")
    directions = 2 if rnn.bidirectional else 1
    batch = inputs.size(0)
    is_lstm = isinstance(rnn, nn.LSTM)
    if initial_state is None:
        shape = (rnn.num_layers * directions, batch, rnn.hidden_size)
        # Two tensors for an LSTM's (h0, c0): a scan's carries must not alias one another.
        initial_state = (inputs.new_zeros(shape), inputs.new_zeros(shape)) if is_lstm else inputs.new_zeros(shape)
    states = initial_state if is_lstm else (initial_state,)
    layer_inputs, finals = inputs, []
    for layer in range(rnn.num_layers):
        layer_inputs = _between_layers(rnn, layer, layer_inputs)
        outputs = []
        for direction in range(directions):
            index = layer * directions + direction
            state = tuple(value[index].clone() for value in states)  # a scan carry must be its own tensor
            output, final = _direction(rnn, layer, direction == 1, layer_inputs, mask, state)
            outputs.append(output)
            finals.append(final)
        layer_inputs = torch.cat(outputs, dim=-1)
    final_state = tuple(torch.stack([final[i] for final in finals]) for i in range(len(states)))
    return layer_inputs, (final_state if is_lstm else final_state[0])


def _layer_weights(rnn: nn.RNNBase, layer: int, reverse: bool) -> list[torch.Tensor]:
    """One layer and direction's weights in the order of `torch.lstm`/`torch.gru`'s `params` (w_ih, w_hh, b_ih,
    b_hh, w_hr)."""
    suffix = f"l{layer}" + ("_reverse" if reverse else "")
    names = ["weight_ih", "weight_hh"] + (["bias_ih", "bias_hh"] if rnn.bias else [])
    names += ["weight_hr"] if getattr(rnn, "proj_size", 0) else []
    return [getattr(rnn, f"{name}_{suffix}") for name in names]


# The RNN's kernel for one layer and direction (cuDNN, oneDNN or ATen's own), by `rnn.mode`; each is called as
# `run(inputs, hx, weights, has_biases, 1 layer, 0.0 dropout, train, bidirectional=False, batch_first=True)`.
_KERNELS = {"LSTM": torch.lstm, "GRU": torch.gru, "RNN_TANH": torch.rnn_tanh, "RNN_RELU": torch.rnn_relu}


def _directions(rnn: nn.RNNBase, layer: int) -> list[tuple[int, bool, list[torch.Tensor]]]:
    """`(index, reverse, weights)` of each direction of `layer`: its row in the `(L·K, B, H)` states, whether it reads
    backwards, and its weights in the kernel's order."""
    directions = 2 if rnn.bidirectional else 1
    return [(layer * directions + k, k == 1, _layer_weights(rnn, layer, k == 1)) for k in range(directions)]


def compact_by_direction(rnn: nn.RNNBase) -> None:
    """Lays `rnn`'s weights out as cuDNN reads a one-layer, one-direction RNN: one flat buffer per layer and
    direction (w_ih, w_hh, b_ih, b_hh, w_hr, at the offsets cuDNN asks), the parameters made views into it.

    `reversed_rnn` calls cuDNN once per layer and direction. cuDNN uses the weights in place only when they are
    one buffer in its own layout, beginning at the start of their storage; `nn.RNNBase.flatten_parameters` makes
    one buffer for the whole module, which only the first layer's forward direction starts, so every other call
    would copy (compact) its weights and warn. The parameters stay the same objects (an optimizer holding them
    keeps working); their storage moves once. A module moved or re-flattened since (`.to()`, `flatten_parameters`)
    is laid out again on its next call. A no-op off CUDA, without cuDNN and while tracing.
    """
    first = rnn._flat_weights[0] if rnn._flat_weights else None
    if (
        torch.compiler.is_compiling()
        or not isinstance(first, torch.Tensor)
        or not first.is_cuda
        or not torch.backends.cudnn.is_acceptable(first)
        or not torch._use_cudnn_rnn_flatten_weight()
    ):
        return
    if getattr(rnn, "_direction_layout", None) == tuple(weight.data_ptr() for weight in rnn._flat_weights):
        return
    if not _owns_its_storage(rnn._flat_weights):  # views into someone else's buffer (FSDP's flat parameter): leave
        return
    from torch.backends.cudnn import rnn as cudnn_rnn

    directions = 2 if rnn.bidirectional else 1
    output_size = getattr(rnn, "proj_size", 0) or rnn.hidden_size
    with torch.cuda.device_of(first), torch.no_grad():
        for layer in range(rnn.num_layers):
            input_size = rnn.input_size if layer == 0 else output_size * directions
            for direction in range(directions):
                weights = _layer_weights(rnn, layer, reverse=direction == 1)
                # Allocates the buffer, copies the weights in and makes each weight a view of it (`set_`).
                torch._cudnn_rnn_flatten_weight(
                    weights,
                    len(weights),
                    input_size,
                    cudnn_rnn.get_cudnn_mode(rnn.mode),
                    rnn.hidden_size,
                    getattr(rnn, "proj_size", 0),
                    1,
                    True,
                    False,
                )
    rnn._direction_layout = tuple(weight.data_ptr() for weight in rnn._flat_weights)


def _owns_its_storage(weights: list[torch.Tensor]) -> bool:
    """Whether `weights` alone fill the storages they live in (an RNN's own flat buffer, or one per direction, up to
    cuDNN's alignment), so that moving them to new buffers takes nothing from another owner."""
    if not all(type(weight) is nn.Parameter for weight in weights):  # FSDP's views, DTensors: another owner's
        return False
    storages = {weight.untyped_storage().data_ptr(): weight.untyped_storage().nbytes() for weight in weights}
    used = sum(weight.numel() * weight.element_size() for weight in weights)
    return sum(storages.values()) <= used * 1.125 + 1024 * len(storages)


def reversed_rnn(
    rnn: nn.RNNBase,
    inputs: torch.Tensor,
    lengths: torch.Tensor,
    initial_state: torch.Tensor | tuple[torch.Tensor, torch.Tensor] | None = None,
) -> torch.Tensor:
    """`rnn` over right-padded `inputs (B, T, D)` with real `lengths (B,)`, without packing (module docstring):
    each layer and direction is one call of the RNN's kernel over all T positions; the backward direction reads
    each row's real prefix reversed. Returns the outputs `(B, T, K·H)`, zero at padded positions (the final states
    at the pads would not be the packed ones, so none are returned)."""
    compact_by_direction(rnn)
    mode = rnn.mode  # "LSTM", "GRU", "RNN_TANH", "RNN_RELU"
    run = _KERNELS[mode]
    real = (torch.arange(inputs.size(1), device=inputs.device) < lengths[:, None])[..., None]  # (B, T, 1)
    states = initial_state if isinstance(initial_state, tuple) else (initial_state,)
    layer_inputs = inputs
    for layer in range(rnn.num_layers):
        layer_inputs = _between_layers(rnn, layer, layer_inputs)
        outputs = []
        for index, reverse, weights in _directions(rnn, layer):
            sequence = reverse_padded(layer_inputs, lengths) if reverse else layer_inputs
            if states[0] is None:
                hidden = getattr(rnn, "proj_size", 0) or rnn.hidden_size
                zeros = sequence.new_zeros(1, sequence.size(0), hidden)
                hx = (zeros, sequence.new_zeros(1, sequence.size(0), rnn.hidden_size)) if mode == "LSTM" else zeros
            else:
                hx = tuple(state[index : index + 1] for state in states)
                hx = hx if mode == "LSTM" else hx[0]
            output = run(sequence, hx, weights, rnn.bias, 1, 0.0, rnn.training, False, True)[0]  # (B, T, H)
            outputs.append(reverse_padded(output, lengths) if reverse else output)
        layer_inputs = torch.cat(outputs, dim=-1)  # its pads reach no real token of the next layer either
    return layer_inputs * real


def segmented_rnn(
    rnn: nn.RNNBase,
    inputs: torch.Tensor,
    lengths: torch.Tensor,
    initial_state: torch.Tensor | tuple[torch.Tensor, torch.Tensor] | None = None,
) -> tuple[torch.Tensor, torch.Tensor | tuple[torch.Tensor, torch.Tensor]]:
    """`rnn(pack_padded_sequence(inputs, lengths), initial_state)`, step for step, with a backward linear in T (module
    docstring): `inputs (B, T, D)` right-padded, real `lengths (B,)` (0 runs one step, as packing's `clamp(min=1)`).

    The rows are sorted by length; between two consecutive lengths the same rows are real, so each such stretch is
    one call of the RNN's kernel on those rows, from the state the previous stretch ended in, and a row's final state
    is the state of the stretch its length ends. The backward direction runs the same way over each row's reversed
    prefix. At most one call per distinct length, layer and direction. Returns the outputs `(B, T, K·H)`, zero past
    each row's length, and the final state in `nn.LSTM`/`nn.GRU`'s layout (`(L·K, B, H)` each), as the packed run.
    """
    mode = rnn.mode  # "LSTM", "GRU", "RNN_TANH", "RNN_RELU"
    run = _KERNELS[mode]
    directions = 2 if rnn.bidirectional else 1
    batch, steps = inputs.shape[:2]
    lengths = lengths.clamp(min=1)
    order = torch.argsort(lengths, descending=True, stable=True)
    restore = torch.argsort(order)
    lengths = lengths[order]
    host = lengths.tolist()
    # Stretches (start, end, rows, still): the first `rows` sorted rows are real over [start, end), and the first
    # `still` of them go on after it (rows `still` to `rows` end there).
    stretches, start = [], 0
    for end in sorted(set(host)):
        stretches.append((start, end, sum(length >= end for length in host), sum(length > end for length in host)))
        start = end
    hidden = getattr(rnn, "proj_size", 0) or rnn.hidden_size
    if initial_state is None:
        zeros = inputs.new_zeros(rnn.num_layers * directions, batch, hidden)
        states = (zeros, inputs.new_zeros((*zeros.shape[:2], rnn.hidden_size))) if mode == "LSTM" else (zeros,)
    else:
        states = initial_state if isinstance(initial_state, tuple) else (initial_state,)
        states = tuple(state[:, order] for state in states)
    layer_inputs, finals = inputs[order], []
    for layer in range(rnn.num_layers):
        layer_inputs = _between_layers(rnn, layer, layer_inputs)
        outputs = []
        for index, reverse, weights in _directions(rnn, layer):
            sequence = reverse_padded(layer_inputs, lengths) if reverse else layer_inputs
            carry = tuple(state[index : index + 1] for state in states)  # (1, B, H) each
            pieces, ended = [], []
            for start, end, rows, still in stretches:
                carry = tuple(value[:, :rows] for value in carry)
                output, *carry = run(
                    sequence[:rows, start:end],
                    carry if mode == "LSTM" else carry[0],
                    weights,
                    rnn.bias,
                    1,
                    0.0,
                    rnn.training,
                    False,
                    True,
                )
                pieces.append(nn.functional.pad(output, (0, 0, 0, 0, 0, batch - rows)))  # (B, end − start, H)
                ended.append(tuple(value[:, still:rows] for value in carry))  # the rows whose length is `end`
            output = nn.functional.pad(torch.cat(pieces, dim=1), (0, 0, 0, steps - host[0]))  # (B, T, H)
            outputs.append(reverse_padded(output, lengths) if reverse else output)
            finals.append(tuple(torch.cat(values[::-1], dim=1) for values in zip(*ended, strict=True)))
        layer_inputs = torch.cat(outputs, dim=-1)
    final_state = tuple(torch.cat([final[i] for final in finals])[:, restore] for i in range(len(states)))
    return layer_inputs[restore], (final_state if mode == "LSTM" else final_state[0])


class PackedBiRNN(CheckpointingLayer):
    """Runs a batch-first ``nn.LSTM``/``nn.GRU``/``nn.RNN`` over right-padded inputs, packed by their lengths.

    Its outputs are the packed run's, without packing (`reversed_rnn`, module docstring). Outputs at padded positions
    are zero; an all-padding row yields zeros.

    Args:
        rnn: the recurrent module; must be built with ``batch_first=True``.

    ``forward(inputs (B, T, D), attention_mask (B, T) | None, pack=True, initial_state=None) -> (B, T, K·H)``. With
    ``pack=False`` (or no mask) the RNN runs over every position, pads included, as several original implementations
    do. ``initial_state`` is the RNN's ``hx`` (``(h0, c0)`` for an LSTM, each ``(layers·K, B, H)``); ``None``: zeros.
    Exported, the run is `masked_rnn` (module docstring): the same outputs.
    """

    def __init__(self, rnn: nn.RNNBase) -> None:
        super().__init__()
        if not rnn.batch_first:
            raise ValueError("PackedBiRNN expects an RNN built with batch_first=True.")
        self.rnn = rnn

    @property
    def output_size(self) -> int:
        """``K·H``: features per position of the outputs."""
        hidden = getattr(self.rnn, "proj_size", 0) or self.rnn.hidden_size
        return hidden * (2 if self.rnn.bidirectional else 1)

    def forward(
        self,
        inputs: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        pack: bool = True,
        initial_state: torch.Tensor | tuple[torch.Tensor, torch.Tensor] | None = None,
    ) -> torch.Tensor:
        if attention_mask is None or not pack:
            if getattr(self.rnn, "_direction_layout", None) is not None and not torch.compiler.is_compiling():
                # Laid out by direction (`compact_by_direction`): the module's own call would copy its weights.
                full = torch.full(inputs.shape[:1], inputs.size(1), dtype=torch.long, device=inputs.device)
                return reversed_rnn(self.rnn, inputs, full, initial_state)
            return self.rnn(inputs, initial_state)[0]
        mask = attention_mask.to(torch.bool)
        if torch.compiler.is_exporting():  # an exported graph: the recurrence as a scan of standard ops
            return masked_rnn(self.rnn, inputs, mask, initial_state)[0]
        check_right_padded(
            mask,
            "PackedBiRNN needs right-padded inputs (attention_mask of the form 1…1 0…0); "
            "use a tokenizer with padding_side='right'.",
        )
        return reversed_rnn(self.rnn, inputs, mask.sum(dim=-1), initial_state)  # zero at pads and all-padding rows
