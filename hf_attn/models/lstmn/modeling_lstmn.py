"""Long Short-Term Memory-Networks for Machine Reading (LSTMN).

Jianpeng Cheng, Li Dong, Mirella Lapata. EMNLP 2016. arXiv:1601.06733.
Original code (Lua Torch, the NLI model with deep fusion): https://github.com/cheng6076/SNLI-attention

The LSTMN replaces the LSTM's single memory cell with a tape of every state it has written, and reads the tape
with attention at every step (§3):

    a_i^t       = vᵀ tanh(W_h h_i + W_x x_t + W_h̃ h̃_{t−1})         intra-attention over the tape       (eq. 4)
    s^t         = softmax_i(a_i^t)                                                                         (eq. 5)
    [h̃_t; c̃_t]  = Σ_i s_i^t [h_i; c_i]                             the adaptive summary of the memory  (eq. 6)
    i, f, o, ĉ  = σ, σ, σ, tanh (W · [h̃_t; x_t])                                                          (eq. 7)
    c_t         = f_t ⊙ c̃_t + i_t ⊙ ĉ_t                                                                  (eq. 8)
    h_t         = o_t ⊙ tanh(c_t)                                                                          (eq. 9)

Stacked layers read h_t of the layer below. Two sequences (§4): a premise encoder LSTMN writes the memory
[γ_j; α_j] (its hidden states and cells), and a hypothesis decoder LSTMN reads it with inter-attention:

    b_j^t       = uᵀ tanh(W_γ γ_j + W_x' x_t + W_γ̃ γ̃_{t−1})                                            (eq. 10)
    p^t         = softmax_j(b_j^t),   [γ̃_t; α̃_t] = Σ_j p_j^t [γ_j; α_j]                                 (eq. 11–12)
    r_t         = σ(W_r · [γ̃_t; x_t])                                                                     (eq. 13)
    c_t         = r_t ⊙ α̃_t + f_t ⊙ c̃_t + i_t ⊙ ĉ_t                     deep fusion                      (eq. 14)

Shallow fusion reads the premise with the same inter-attention (eq. 10–12) but leaves the decoder's memory alone;
the read-out γ̃_t goes to the classifier.

`LstmnLayer.forward_reference` is the readable path: the equations above as a loop over tokens (a `torch.cat`-grown
tape, autograd), selected by `recurrence_implementation="reference"`. The recurrence is sequential, so its speed
is engineering, kept beside this file in `fast_recurrence.py` (the default): the input-side terms of every step
(W_x x_t, W x_t, W_x' x_t, W_r x_t) are one GEMM before the loop; the tape is preallocated and W_h h_i is cached as
each state is written (the memory's "keys", like a transformer's KV cache); the backward pass is written by hand
and recomputes the tanh features, so training memory grows as B·T·(H + A) plus the B·T² attention weights, never
B·T²·A. The tests check it against the reference loop.

What differs from the paper / the original code:
- Slot 0 of every tape is the initial state h_0 = c_0 = 0, as in the original code (`rnn_h_enc = {h_init}`), so
  token t reads slots 0..t and the first token's memory is that zero state. An attention map is `(B, T, T)`,
  lower-triangular; column j is the slot written before token j (j = 0: the initial state; j ≥ 1: the state after
  token j − 1).
- Masks everywhere (the original has none): a padded token writes no readable slot and does not move the summary
  carried to the next query, so any padding (right or left) leaves every real token's outputs as if unpadded.
  Padded tokens' outputs and attention rows are zero.
- The encoder's intra-attention has the W_h̃ h̃_{t−1} term of eq. 4 (the original's encoder omits it; its decoder
  has it). The inter-attention reads the premise's token states only (the original also offers its zero slot).
- Layer k of the decoder reads layer k of the encoder (the original has one layer). Both share the embeddings.
- Gates are stored in PyTorch's order i, f, g (= ĉ), o; the Lua code's is i, f, o, g.
- The classifiers pool with a masked mean (the original averages every slot of fixed-length padded tapes) or,
  with `pooling="last"`, the last real token's state.

Shape legend: B batch, T tokens, M premise tokens (the decoder's inter-attention memory), S tape slots (T + 1 in
training), E embedding size, H hidden size, A attention size, V vocabulary, L labels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from torch import nn
from transformers import GenerationMixin, PreTrainedModel
from transformers.utils import ModelOutput

from hf_attn.layers.checkpointing import CheckpointingLayer
from hf_attn.layers.generation_cache import CACHE_FIELD, cache_argument, cache_field, output_cache
from hf_attn.layers.initialization import uniform_init
from hf_attn.layers.losses import classification_loss, token_cross_entropy
from hf_attn.layers.masking import masked_softmax
from hf_attn.layers.outputs import output_flags
from hf_attn.layers.validation import check_token_inputs, embed_inputs
from hf_attn.utils.loading import SafetensorsLoadingMixin

from .configuration_lstmn import LstmnConfig
from .fast_recurrence import (
    LstmnLayerState,
    LstmnStepInputs,
    LstmnWeights,
    lstmn_recurrence,
    run_recurrence,
    scan_recurrence,
)

# ---------------------------------------------------------------------------------------------------------------
# Outputs
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class LstmnModelOutput(ModelOutput):
    """
    Args:
        last_hidden_state (`torch.FloatTensor` of shape `(B, T, H)`): h_t of the top layer (zero at padding).
        past_key_values (`LstmnCache`, *optional*): every layer's tape, returned with `use_cache=True`.
        hidden_states (`tuple(torch.FloatTensor)`, *optional*): the embeddings and each layer's h_t, with
            `output_hidden_states=True`.
        intra_attentions (`tuple(torch.FloatTensor)` of shape `(B, T, S)`, *optional*): with `output_attentions=True`
            (a per-layer tuple stays out of pipeline outputs unless asked for), s^t of each layer (eq. 5); column j
            is tape slot j. Without a cache S = T and the maps are lower-triangular.
        attentions (`tuple(torch.FloatTensor)`, *optional*): with `output_attentions=True`, the maps above as one
            tuple (transformers' field).
    """

    last_hidden_state: torch.FloatTensor | None = None
    # The generation cache, under the installed transformers' name (`hf_attn.layers.generation_cache`): a field
    # named `past_key_values` makes transformers ≥ 5.24 warn on every output built.
    if CACHE_FIELD == "cache":
        cache: Any = None
    else:
        past_key_values: Any = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None
    intra_attentions: tuple[torch.FloatTensor, ...] | None = None
    attentions: tuple[torch.FloatTensor, ...] | None = None


@dataclass
class LstmnSequenceClassifierOutput(ModelOutput):
    """
    Args:
        loss (`torch.FloatTensor` of shape `()`, *optional*): the classification loss, when `labels` are given.
        logits (`torch.FloatTensor` of shape `(B, L)`).
        intra_attentions (`tuple(torch.FloatTensor)` of shape `(B, T, T)`, *optional*): with `output_attentions=True`,
            s^t of each layer.
        hidden_states (`tuple(torch.FloatTensor)`, *optional*): with `output_hidden_states=True`, the embeddings and
            each layer's h_t (for pairs: the premise's, then the hypothesis's).
        attentions (`tuple(torch.FloatTensor)`, *optional*): with `output_attentions=True`, the maps above as one
            tuple (transformers' field).
    """

    loss: torch.FloatTensor | None = None
    logits: torch.FloatTensor | None = None
    intra_attentions: tuple[torch.FloatTensor, ...] | None = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None
    attentions: tuple[torch.FloatTensor, ...] | None = None


@dataclass
class LstmnPairClassifierOutput(ModelOutput):
    """
    Args:
        loss (`torch.FloatTensor` of shape `()`, *optional*): the classification loss, when `labels` are given.
        logits (`torch.FloatTensor` of shape `(B, L)`).
        intra_attentions (`tuple(torch.FloatTensor)` of shape `(B, M, M)`, *optional*): with `output_attentions=True`
            (as the two below), the premise encoder's s^t per layer.
        pair_intra_attentions (`tuple(torch.FloatTensor)` of shape `(B, T, T)`): the hypothesis decoder's s^t.
        inter_attentions (`tuple(torch.FloatTensor)` of shape `(B, T, M)`, *optional*): p^t per decoder layer
            (eq. 11): each hypothesis token's read of the premise. `None` with `fusion="none"`.
        hidden_states (`tuple(torch.FloatTensor)`, *optional*): with `output_hidden_states=True`, the embeddings and
            each layer's h_t (for pairs: the premise's, then the hypothesis's).
        attentions (`tuple(torch.FloatTensor)`, *optional*): with `output_attentions=True`, the maps above as one
            tuple (transformers' field).
    """

    loss: torch.FloatTensor | None = None
    logits: torch.FloatTensor | None = None
    intra_attentions: tuple[torch.FloatTensor, ...] | None = None
    pair_intra_attentions: tuple[torch.FloatTensor, ...] | None = None
    inter_attentions: tuple[torch.FloatTensor, ...] | None = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None
    attentions: tuple[torch.FloatTensor, ...] | None = None


@dataclass
class LstmnCausalLMOutput(ModelOutput):
    """
    Args:
        loss (`torch.FloatTensor` of shape `()`, *optional*): mean next-token cross-entropy, when `labels` are given.
        logits (`torch.FloatTensor` of shape `(B, T, V)`): scores of the next token after each position.
        past_key_values (`LstmnCache`, *optional*): the tapes to continue from (`generate()` passes them back).
        hidden_states (`tuple(torch.FloatTensor)`, *optional*): as in [`LstmnModelOutput`].
        intra_attentions (`tuple(torch.FloatTensor)` of shape `(B, T, S)`, *optional*): with `output_attentions=True`,
            s^t of each layer.
        attentions (`tuple(torch.FloatTensor)`, *optional*): with `output_attentions=True`, the maps above as one
            tuple (transformers' field).
    """

    loss: torch.FloatTensor | None = None
    logits: torch.FloatTensor | None = None
    # The generation cache, under the installed transformers' name (`hf_attn.layers.generation_cache`): a field
    # named `past_key_values` makes transformers ≥ 5.24 warn on every output built.
    if CACHE_FIELD == "cache":
        cache: Any = None
    else:
        past_key_values: Any = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None
    intra_attentions: tuple[torch.FloatTensor, ...] | None = None
    attentions: tuple[torch.FloatTensor, ...] | None = None


# ---------------------------------------------------------------------------------------------------------------
# The memory: tapes and the cache
# ---------------------------------------------------------------------------------------------------------------


class LstmnCache:
    """`past_key_values` of the LSTMN language model: one [`LstmnLayerState`] per layer. `generate()` hands it back
    to `forward`, which appends the new tokens' states; `reorder_cache` keeps the chosen beams."""

    def __init__(self, layers: list[LstmnLayerState]) -> None:
        self.layers = layers

    def get_seq_length(self, layer_idx: int = 0) -> int:
        """Tokens read so far (the initial slot excluded)."""
        return self.layers[layer_idx].length - 1 if self.layers else 0

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        for layer in self.layers:
            layer.reorder(beam_idx)

    def __len__(self) -> int:
        return len(self.layers)


# ---------------------------------------------------------------------------------------------------------------
# Building blocks
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class LstmnLayerOutput:
    """One layer's results: hidden `(B, T, H)` and cells `(B, T, H)` (zero at padding), the intra-attention
    `(B, T, S)`, with inter-attention the read-out γ̃ `(B, T, H)` and its weights `(B, T, M)`, and the memory after
    the last token (`None` unless asked for)."""

    hidden: torch.Tensor
    cells: torch.Tensor
    intra_attentions: torch.Tensor
    memory_read: torch.Tensor | None = None
    inter_attentions: torch.Tensor | None = None
    state: LstmnLayerState | None = None


class LstmnLayer(CheckpointingLayer):
    """One LSTMN layer (eq. 4–9), with inter-attention over an encoder's memory for `fusion` "shallow" or "deep"
    (eq. 10–14).

    Parameters: `input_projection` holds every input-side term, applied to all steps in one GEMM: rows
    [W_x (eq. 4, A); W's x columns (eq. 7, 4H; gates i, f, g, o)] then, with fusion, [W_x' (eq. 10, A)] and, for deep
    fusion, [W_r's x columns (eq. 13, H)]; its bias is the scores' and gates' bias. `key_projection` W_h,
    `summary_projection` W_h̃, `score` v, `recurrent_projection` W's h̃ columns; `memory_key_projection` W_γ,
    `memory_summary_projection` W_γ̃, `memory_score` u, `memory_gate` W_r's γ̃ columns.
    """

    def __init__(self, config: LstmnConfig, input_size: int, fusion: str = "none") -> None:
        super().__init__()
        hidden_size, attention_size = config.hidden_size, config.attention_size
        self.config = config
        self.fusion = fusion
        self.hidden_size, self.attention_size = hidden_size, attention_size
        self.reads_memory, self.deep = fusion != "none", fusion == "deep"
        sizes = [attention_size, 4 * hidden_size]
        if self.reads_memory:
            sizes.append(attention_size)
        if self.deep:
            sizes.append(hidden_size)
        self.split_sizes = sizes
        self.input_projection = nn.Linear(input_size, sum(sizes))
        self.key_projection = nn.Linear(hidden_size, attention_size, bias=False)
        self.summary_projection = nn.Linear(hidden_size, attention_size, bias=False)
        self.score = nn.Linear(attention_size, 1, bias=False)
        self.recurrent_projection = nn.Linear(hidden_size, 4 * hidden_size, bias=False)
        if self.reads_memory:
            self.memory_key_projection = nn.Linear(hidden_size, attention_size, bias=False)
            self.memory_summary_projection = nn.Linear(hidden_size, attention_size, bias=False)
            self.memory_score = nn.Linear(attention_size, 1, bias=False)
        if self.deep:
            self.memory_gate = nn.Linear(hidden_size, hidden_size, bias=False)

    def weights(self) -> LstmnWeights:
        return LstmnWeights(
            key=self.key_projection.weight,
            summary=self.summary_projection.weight,
            score=self.score.weight[0],
            recurrent=self.recurrent_projection.weight,
            memory_summary=self.memory_summary_projection.weight if self.reads_memory else None,
            memory_score=self.memory_score.weight[0] if self.reads_memory else None,
            memory_gate=self.memory_gate.weight if self.deep else None,
        )

    def step_inputs(
        self, inputs: torch.Tensor, mask: torch.Tensor, memory: LstmnLayerOutput | None, memory_mask: torch.Tensor
    ) -> LstmnStepInputs:
        """Everything the loop reads, computed for all steps at once (the GEMMs that need no recurrence)."""
        parts = list(self.input_projection(inputs).split(self.split_sizes, dim=-1))
        step_inputs = LstmnStepInputs(queries=parts[0], gate_inputs=parts[1], mask=mask)
        if self.reads_memory:
            if memory is None:
                raise ValueError(f"An LSTMN layer with {self.fusion} fusion reads an encoder memory; none was given.")
            step_inputs.memory_queries = parts[2]
            step_inputs.memory_gate_inputs = parts[3] if self.deep else None
            step_inputs.memory = torch.cat([memory.hidden, memory.cells], dim=-1)  # [γ_j; α_j]
            step_inputs.memory_keys = self.memory_key_projection(memory.hidden)  # W_γ γ_j, once per sequence
            step_inputs.memory_mask = memory_mask
        return step_inputs

    def forward_reference(
        self,
        inputs: torch.Tensor,
        mask: torch.Tensor,
        memory: LstmnLayerOutput | None = None,
        memory_mask: torch.Tensor | None = None,
    ) -> LstmnLayerOutput:
        """The straightforward LSTMN, step by step with autograd: the tape grows by `torch.cat` and every step
        projects the whole tape (W_h h_i) and the whole encoder memory (W_γ γ_j) again. Same weights and outputs
        as the fast path; the benchmark's peer and the tests' oracle."""
        batch_size, steps, _ = inputs.shape
        hidden_size = self.hidden_size
        parts = list(self.input_projection(inputs).split(self.split_sizes, dim=-1))
        queries, gate_inputs = parts[0], parts[1]
        hidden_tape = inputs.new_zeros(batch_size, 1, hidden_size)  # slot 0: h_0 = 0
        cell_tape = inputs.new_zeros(batch_size, 1, hidden_size)
        valid = torch.ones(batch_size, 1, dtype=torch.bool, device=inputs.device)
        summary = inputs.new_zeros(batch_size, hidden_size)
        memory_summary = inputs.new_zeros(batch_size, hidden_size)
        hiddens, cells, intra_rows, memory_reads, inter_rows = [], [], [], [], []
        for t in range(steps):
            real = mask[:, t, None]
            weights, read_hidden, cell, output_gate = self._intra_step(
                hidden_tape, cell_tape, valid, summary, queries[:, t], gate_inputs[:, t]
            )
            if self.reads_memory:  # eq. 10–14
                memory_weights, memory_hidden, cell = self._inter_step(
                    memory, memory_mask, memory_summary, parts[2][:, t], parts[3][:, t] if self.deep else None, cell
                )
                memory_reads.append(memory_hidden * real)
                inter_rows.append(memory_weights * real)
                memory_summary = torch.where(real, memory_hidden, memory_summary)
            hidden = output_gate.sigmoid() * cell.tanh()
            hidden_tape = torch.cat([hidden_tape, hidden[:, None]], dim=1)
            cell_tape = torch.cat([cell_tape, cell[:, None]], dim=1)
            valid = torch.cat([valid, real], dim=1)
            summary = torch.where(real, read_hidden, summary)
            hiddens.append(hidden * real)
            cells.append(cell * real)
            intra_rows.append(nn.functional.pad(weights * real, (0, steps - t - 1)))
        return LstmnLayerOutput(
            hidden=torch.stack(hiddens, dim=1),
            cells=torch.stack(cells, dim=1),
            intra_attentions=torch.stack(intra_rows, dim=1),
            memory_read=torch.stack(memory_reads, dim=1) if self.reads_memory else None,
            inter_attentions=torch.stack(inter_rows, dim=1) if self.reads_memory else None,
        )

    def _intra_step(
        self,
        hidden_tape: torch.Tensor,
        cell_tape: torch.Tensor,
        valid: torch.Tensor,
        summary: torch.Tensor,
        query: torch.Tensor,
        gate_input: torch.Tensor,
    ) -> tuple[torch.Tensor, ...]:
        """Eq. 4–9 for one step over the tape `(B, S, H)` (its slots `valid (B, S)`), projected afresh: the attention
        `(B, S)`, the read h̃ `(B, H)`, the new cell c_t `(B, H)` (before any fusion) and the output gate's input."""
        features = torch.tanh(self.key_projection(hidden_tape) + (query + self.summary_projection(summary))[:, None])
        weights = masked_softmax(self.score(features).squeeze(-1), valid)  # (B, S)
        read_hidden = (weights[..., None] * hidden_tape).sum(1)
        read_cell = (weights[..., None] * cell_tape).sum(1)
        gates = gate_input + self.recurrent_projection(read_hidden)
        input_gate, forget_gate, candidate, output_gate = gates.chunk(4, dim=-1)
        cell = forget_gate.sigmoid() * read_cell + input_gate.sigmoid() * candidate.tanh()
        return weights, read_hidden, cell, output_gate

    def _inter_step(
        self,
        memory: LstmnLayerOutput,
        memory_mask: torch.Tensor,
        memory_summary: torch.Tensor,
        memory_query: torch.Tensor,
        memory_gate_input: torch.Tensor | None,
        cell: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Eq. 10–14 for one step: the attention over the encoder's memory `(B, M)`, the read γ̃ `(B, H)`, and the
        cell with deep fusion's gated memory cell added."""
        memory_features = torch.tanh(
            self.memory_key_projection(memory.hidden)
            + (memory_query + self.memory_summary_projection(memory_summary))[:, None]
        )
        memory_weights = masked_softmax(self.memory_score(memory_features).squeeze(-1), memory_mask)
        memory_hidden = (memory_weights[..., None] * memory.hidden).sum(1)
        if self.deep:  # eq. 13–14
            memory_cell = (memory_weights[..., None] * memory.cells).sum(1)
            cell = cell + (memory_gate_input + self.memory_gate(memory_hidden)).sigmoid() * memory_cell
        return memory_weights, memory_hidden, cell

    def forward(
        self,
        inputs: torch.Tensor,
        mask: torch.Tensor,
        memory: LstmnLayerOutput | None = None,
        memory_mask: torch.Tensor | None = None,
        state: LstmnLayerState | None = None,
        return_state: bool = False,
    ) -> LstmnLayerOutput:
        """Reads `inputs (B, T, D)` under `mask (B, T)`; `memory` is the encoder layer's output (for fusion) and
        `state` a memory to continue from (inference only: `generate()`).

        Under autocast (`Trainer(bf16=True)`, `torch.autocast`) the layer runs in float32: its hand-written backward
        computes in one dtype, and a memory read by softmax over many steps wants the precision. The projections
        around it (embeddings, classifier, LM head) still run in the autocast dtype."""
        device_type = inputs.device.type
        if torch.is_autocast_enabled(device_type):
            with torch.autocast(device_type, enabled=False):
                return self.forward(inputs.float(), mask, memory, memory_mask, state, return_state)
        if self.config.recurrence_implementation == "reference" and state is None and not return_state:
            return self.forward_reference(inputs, mask, memory, memory_mask)
        # Exported (torch.export, ONNX): one scan of standard ops, at any length, that other runtimes can run.
        # Everywhere else, `torch.compile` included, the recurrence is the `lstmn_recurrence` operator (one
        # node in a compiled graph, with its hand-written backward).
        if torch.compiler.is_exporting() and state is None and not return_state:
            return self._output(*scan_recurrence(self, inputs, mask, memory, memory_mask))
        step_inputs = self.step_inputs(inputs, mask, memory, memory_mask)
        compiled = self.config.compile_recurrence
        if state is not None:  # continuing a cached memory: inference only, no graph through the past
            with torch.no_grad():
                trace = run_recurrence(self.weights(), step_inputs, state, compiled)
            real = mask[..., None].to(inputs.dtype)
            written = state.tape[:, state.length - inputs.size(1) : state.length]
            return LstmnLayerOutput(
                hidden=written[..., : self.hidden_size] * real,
                cells=written[..., self.hidden_size :] * real,
                intra_attentions=trace.intra_attentions,
                memory_read=None if trace.memory_reads is None else trace.memory_reads[..., : self.hidden_size] * real,
                inter_attentions=trace.inter_attentions,
                state=state,
            )
        weights = self.weights()
        # The trace the hand-written backward reads is kept only when a gradient can be taken: inference saves none.
        record = torch.is_grad_enabled() and any(
            value is not None and value.requires_grad
            for value in (*vars(step_inputs).values(), *vars(weights).values())
        )
        hidden, cells, memory_read, intra, inter, tape, keys, valid, summary, memory_summary, *_ = lstmn_recurrence(
            compiled,
            record,
            step_inputs.queries,
            step_inputs.gate_inputs,
            mask,
            weights.key,
            weights.summary,
            weights.score,
            weights.recurrent,
            step_inputs.memory_queries,
            step_inputs.memory_gate_inputs,
            step_inputs.memory,
            step_inputs.memory_keys,
            step_inputs.memory_mask,
            weights.memory_summary,
            weights.memory_score,
            weights.memory_gate,
        )
        final_state = None
        if return_state:
            final_state = LstmnLayerState(
                tape=tape,
                keys=keys,
                valid=valid,
                length=tape.size(1),
                summary=summary,
                memory_summary=memory_summary if self.reads_memory else None,
            )
        return self._output(hidden, cells, intra, memory_read, inter, final_state)

    def _output(
        self,
        hidden: torch.Tensor,
        cells: torch.Tensor,
        intra: torch.Tensor,
        memory_read: torch.Tensor | None,
        inter: torch.Tensor | None,
        state: LstmnLayerState | None = None,
    ) -> LstmnLayerOutput:
        """The layer's output; the memory read and inter-attention only with fusion."""
        return LstmnLayerOutput(
            hidden=hidden,
            cells=cells,
            intra_attentions=intra,
            memory_read=memory_read if self.reads_memory else None,
            inter_attentions=inter if self.reads_memory else None,
            state=state,
        )


class LstmnStack(nn.Module):
    """`num_hidden_layers` LSTMN layers, each reading the h_t of the one below (dropout between layers). With deep
    fusion, layer k also reads layer k of the encoder's memory; with shallow fusion only the top layer reads the
    encoder's top layer (its read-out is the stack's, for the classifier)."""

    def __init__(self, config: LstmnConfig, fusion: str = "none") -> None:
        super().__init__()
        count = config.num_hidden_layers
        fusions = [fusion] * count if fusion != "shallow" else ["none"] * (count - 1) + ["shallow"]
        self.layers = nn.ModuleList(
            LstmnLayer(config, config.embedding_size if index == 0 else config.hidden_size, fusions[index])
            for index in range(count)
        )
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(
        self,
        embeddings: torch.Tensor,
        mask: torch.Tensor,
        memories: list[LstmnLayerOutput] | None = None,
        memory_mask: torch.Tensor | None = None,
        cache: LstmnCache | None = None,
        return_state: bool = False,
    ) -> list[LstmnLayerOutput]:
        outputs, inputs = [], embeddings
        for index, layer in enumerate(self.layers):
            output = layer(
                self.dropout(inputs),
                mask,
                memory=None if memories is None or not layer.reads_memory else memories[index],
                memory_mask=memory_mask,
                state=None if cache is None else cache.layers[index],
                return_state=return_state,
            )
            outputs.append(output)
            inputs = output.hidden
        return outputs


class LstmnClassificationHead(nn.Module):
    """The original classifier: Linear → ReLU → Linear → ReLU → dropout → Linear over the pooled features."""

    def __init__(self, config: LstmnConfig, input_size: int) -> None:
        super().__init__()
        self.dense = nn.Linear(input_size, config.classifier_hidden_size)
        self.hidden = nn.Linear(config.classifier_hidden_size, config.classifier_hidden_size)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.out_proj = nn.Linear(config.classifier_hidden_size, config.num_labels)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        hidden = torch.relu(self.hidden(torch.relu(self.dense(features))))
        return self.out_proj(self.dropout(hidden))


def pool_states(states: torch.Tensor, mask: torch.Tensor, pooling: str) -> torch.Tensor:
    """`(B, T, H)` → `(B, H)`: the mean over real tokens (`"mean"`) or the last real token's state (`"last"`); an
    all-padding row pools to zeros."""
    real = mask.to(states.dtype)[..., None]
    if pooling == "last":
        positions = torch.arange(mask.size(1), device=mask.device).expand_as(mask)
        last = torch.where(mask, positions, -1).max(dim=1).values  # (B,), −1 when empty
        picked = states[torch.arange(states.size(0), device=states.device), last.clamp(min=0)]
        return picked * (last >= 0).to(states.dtype)[:, None]
    return (states * real).sum(1) / real.sum(1).clamp(min=1.0)


# ---------------------------------------------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------------------------------------------


class LstmnPreTrainedModel(SafetensorsLoadingMixin, PreTrainedModel):
    config_class = LstmnConfig
    base_model_prefix = "lstmn"
    supports_gradient_checkpointing = True  # per layer or level: its GradientCheckpointingLayer modules
    _input_embed_layer = "embeddings"  # transformers' get/set_input_embeddings find them
    _no_split_modules: ClassVar[list[str]] = ["LstmnLayer"]

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        """Every weight and embedding ~ U(−range, range) (the original's `param_init`), biases 0, the padding row 0."""
        bound = self.config.initializer_range
        if isinstance(module, nn.Linear | nn.Embedding):
            uniform_init(module, bound)


class LstmnModel(LstmnPreTrainedModel):
    """Word embeddings and a stack of LSTMN layers (the single-sequence reader of §3)."""

    def __init__(self, config: LstmnConfig) -> None:
        super().__init__(config)
        self.embeddings = nn.Embedding(config.vocab_size, config.embedding_size, padding_idx=config.pad_token_id)
        self.encoder = LstmnStack(config)
        self.post_init()

    def encode(
        self,
        input_ids: torch.LongTensor | None,
        attention_mask: torch.Tensor | None = None,
        past_key_values: LstmnCache | None = None,
        return_state: bool = False,
        name: str = "input_ids",
        inputs_embeds: torch.FloatTensor | None = None,
    ) -> tuple[torch.Tensor, list[torch.Tensor], list[LstmnLayerOutput]]:
        """Checks the inputs (ids, or their vectors `inputs_embeds`) and runs the layers: `(mask (B, T),
        [embeddings, h^1, …], per-layer outputs)`. With a cache, `attention_mask` may cover the past tokens too (as
        `generate()` passes it); its last T columns are the new tokens'."""
        config = self.config
        if past_key_values is not None and attention_mask is not None and attention_mask.dim() == 2:
            new = (input_ids if input_ids is not None else inputs_embeds).size(1)
            attention_mask = attention_mask[:, -new:]
        embeddings, mask = embed_inputs(
            self.embeddings, input_ids, inputs_embeds, attention_mask, name=name
        )  # x_t, (B, T, E)
        if past_key_values is not None and len(past_key_values) != config.num_hidden_layers:
            raise ValueError(
                f"`past_key_values` holds {len(past_key_values)} layers; this model has {config.num_hidden_layers}."
            )
        layers = self.encoder(embeddings, mask, cache=past_key_values, return_state=return_state)
        return mask, [embeddings] + [layer.hidden for layer in layers], layers

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        past_key_values: LstmnCache | None = None,
        use_cache: bool | None = None,
        output_hidden_states: bool | None = None,
        output_attentions: bool | None = None,
        return_dict: bool | None = None,
        cache: LstmnCache | None = None,
        inputs_embeds: torch.FloatTensor | None = None,
    ) -> LstmnModelOutput | tuple:
        r"""
        Args:
            input_ids (`torch.LongTensor` of shape `(B, T)`): token ids, padded on either side.
            attention_mask (`torch.Tensor` of shape `(B, T)`, *optional*): 1 for tokens, 0 for padding.
            past_key_values / cache (`LstmnCache`, *optional*): tapes to continue from (inference; `cache` is
                transformers ≥ 5.24's name).
            use_cache (`bool`, *optional*): return the tapes (as `past_key_values`, or `cache` from 5.24).
            output_hidden_states (`bool`, *optional*): also return every layer's states.
        """
        output_attentions, output_hidden_states, return_dict = output_flags(
            self.config, output_attentions, output_hidden_states, return_dict
        )
        past_key_values = cache_argument(past_key_values, cache)
        use_cache = bool(use_cache) or past_key_values is not None
        _, states, layers = self.encode(
            input_ids, attention_mask, past_key_values, return_state=use_cache, inputs_embeds=inputs_embeds
        )
        cache = past_key_values
        if use_cache and cache is None:
            cache = LstmnCache([layer.state for layer in layers])
        intra_attentions = tuple(layer.intra_attentions for layer in layers)
        output = LstmnModelOutput(
            last_hidden_state=states[-1],
            **cache_field(cache if use_cache else None),
            hidden_states=tuple(states) if output_hidden_states else None,
            intra_attentions=intra_attentions if output_attentions else None,
            attentions=intra_attentions if output_attentions else None,
        )
        return output if return_dict else output.to_tuple()


class LstmnForSequenceClassification(LstmnPreTrainedModel):
    """Sentence classification (the paper's SST setting, §5.2): the top layer's states pooled (masked mean, or the
    last real token with `config.pooling = "last"`) into the original's ReLU MLP."""

    def __init__(self, config: LstmnConfig) -> None:
        super().__init__(config)
        self.lstmn = LstmnModel(config)
        self.classifier = LstmnClassificationHead(config, config.hidden_size)
        self.post_init()

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        inputs_embeds: torch.FloatTensor | None = None,
    ) -> LstmnSequenceClassifierOutput | tuple:
        r"""
        Args:
            input_ids (`torch.LongTensor` of shape `(B, T)`): token ids.
            attention_mask (`torch.Tensor` of shape `(B, T)`, *optional*): 1 for tokens, 0 for padding.
            labels (`torch.Tensor` of shape `(B,)`, *optional*): class ids (or targets, by `config.problem_type`).
        """
        output_attentions, output_hidden_states, return_dict = output_flags(
            self.config, output_attentions, output_hidden_states, return_dict
        )
        mask, states, layers = self.lstmn.encode(input_ids, attention_mask, inputs_embeds=inputs_embeds)
        logits = self.classifier(pool_states(states[-1], mask, self.config.pooling))
        loss = classification_loss(self.config, logits, labels) if labels is not None else None
        intra_attentions = tuple(layer.intra_attentions for layer in layers)
        output = LstmnSequenceClassifierOutput(
            loss=loss,
            logits=logits,
            intra_attentions=intra_attentions if output_attentions else None,
            hidden_states=tuple(states) if output_hidden_states else None,
            attentions=intra_attentions if output_attentions else None,
        )
        return output if return_dict else output.to_tuple()


class LstmnForPairClassification(LstmnPreTrainedModel):
    """Natural language inference (§4, §5.3): an LSTMN encoder reads the premise, an LSTMN decoder the hypothesis,
    joined by `config.fusion` ("deep": eq. 10–14; "shallow": inter-attention read-out only; "none"). The
    classifier is the original's: the masked means of both sequences' top states ([premise; hypothesis], plus
    the mean read-out γ̃ with shallow fusion) into a ReLU MLP.

    Inputs follow hf_attn's pair convention: the premise as `input_ids`/`attention_mask`, the hypothesis as
    `pair_input_ids`/`pair_attention_mask`.
    """

    def __init__(self, config: LstmnConfig) -> None:
        super().__init__(config)
        self.lstmn = LstmnModel(config)  # the premise encoder and the shared embeddings
        self.decoder = LstmnStack(config, fusion=config.fusion)
        features = (3 if config.fusion == "shallow" else 2) * config.hidden_size
        self.classifier = LstmnClassificationHead(config, features)
        self.post_init()

    def forward(
        self,
        input_ids: torch.LongTensor,
        pair_input_ids: torch.LongTensor,
        attention_mask: torch.Tensor | None = None,
        pair_attention_mask: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
    ) -> LstmnPairClassifierOutput | tuple:
        r"""
        Args:
            input_ids (`torch.LongTensor` of shape `(B, M)`): the premise's token ids.
            pair_input_ids (`torch.LongTensor` of shape `(B, T)`): the hypothesis's token ids.
            attention_mask (`torch.Tensor` of shape `(B, M)`, *optional*): the premise's mask.
            pair_attention_mask (`torch.Tensor` of shape `(B, T)`, *optional*): the hypothesis's mask.
            labels (`torch.Tensor` of shape `(B,)`, *optional*): class ids (or targets, by `config.problem_type`).
        """
        output_attentions, output_hidden_states, return_dict = output_flags(
            self.config, output_attentions, output_hidden_states, return_dict
        )
        config = self.config
        premise_mask, premise_states, premise_layers = self.lstmn.encode(input_ids, attention_mask)
        hypothesis_mask = check_token_inputs(
            pair_input_ids, pair_attention_mask, config.vocab_size, name="pair_input_ids",
            batch_size=input_ids.size(0),
        )  # fmt: skip
        hypothesis_embeddings = self.lstmn.embeddings(pair_input_ids)
        hypothesis_layers = self.decoder(
            hypothesis_embeddings,
            hypothesis_mask,
            memories=premise_layers if config.fusion != "none" else None,
            memory_mask=premise_mask,
        )
        features = [
            pool_states(premise_states[-1], premise_mask, "mean"),
            pool_states(hypothesis_layers[-1].hidden, hypothesis_mask, "mean"),
        ]
        if config.fusion == "shallow":
            features.append(pool_states(hypothesis_layers[-1].memory_read, hypothesis_mask, "mean"))
        logits = self.classifier(torch.cat(features, dim=-1))
        loss = classification_loss(config, logits, labels) if labels is not None else None
        maps = {
            "intra_attentions": tuple(layer.intra_attentions for layer in premise_layers),
            "pair_intra_attentions": tuple(layer.intra_attentions for layer in hypothesis_layers),
            "inter_attentions": tuple(
                layer.inter_attentions for layer in hypothesis_layers if layer.inter_attentions is not None
            ),
        }
        hypothesis_states = [hypothesis_embeddings] + [layer.hidden for layer in hypothesis_layers]
        output = LstmnPairClassifierOutput(
            loss=loss,
            logits=logits,
            intra_attentions=maps["intra_attentions"] if output_attentions else None,
            pair_intra_attentions=maps["pair_intra_attentions"] if output_attentions else None,
            inter_attentions=(maps["inter_attentions"] or None) if output_attentions else None,
            hidden_states=tuple(premise_states + hypothesis_states) if output_hidden_states else None,
            attentions=sum(maps.values(), ()) if output_attentions else None,
        )
        return output if return_dict else output.to_tuple()


class LstmnForCausalLM(LstmnPreTrainedModel, GenerationMixin):
    """Language modelling (the paper's PTB setting, §5.1): softmax(W h_t + b) predicts token t + 1.

    `generate()` works with every decoding strategy: the tapes are the cache (`LstmnCache`), so each new token
    costs one step, and beam search reorders them. Padding may be on either side (left padding for batched
    prompts).
    """

    def __init__(self, config: LstmnConfig) -> None:
        super().__init__(config)
        self.lstmn = LstmnModel(config)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size)
        self.post_init()

    def get_output_embeddings(self) -> nn.Linear:
        return self.lm_head

    def set_output_embeddings(self, value: nn.Linear) -> None:
        self.lm_head = value

    @classmethod
    def _supports_default_dynamic_cache(cls) -> bool:
        return False  # the cache is the LSTMN's own tapes (`LstmnCache`), not key/value tensors

    def _reorder_cache(self, cache: LstmnCache, beam_idx: torch.LongTensor) -> LstmnCache:
        cache.reorder_cache(beam_idx)
        return cache

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        past_key_values: LstmnCache | None = None,
        use_cache: bool | None = None,
        labels: torch.LongTensor | None = None,
        output_hidden_states: bool | None = None,
        output_attentions: bool | None = None,
        return_dict: bool | None = None,
        cache: LstmnCache | None = None,
        inputs_embeds: torch.FloatTensor | None = None,
        **kwargs: Any,
    ) -> LstmnCausalLMOutput | tuple:
        r"""
        Args:
            input_ids (`torch.LongTensor` of shape `(B, T)`): token ids (only the new ones when continuing).
            attention_mask (`torch.Tensor` of shape `(B, T)` or `(B, past + T)`, *optional*): 1 for tokens, 0 for
                padding; without it every position is a token (the pad id included, which a model may generate).
            past_key_values / cache (`LstmnCache`, *optional*): the tapes of the tokens read before (`cache` from
                transformers 5.24).
            use_cache (`bool`, *optional*): return the tapes; defaults to `config.use_cache` in eval mode.
            labels (`torch.LongTensor` of shape `(B, T)`, *optional*): the tokens themselves (shifted inside, as in
                transformers); −100 and padded positions are ignored.
        """
        output_attentions, output_hidden_states, return_dict = output_flags(
            self.config, output_attentions, output_hidden_states, return_dict
        )
        if use_cache is None:
            use_cache = self.config.use_cache and not self.training and labels is None
        if attention_mask is None:  # every token is real, as in transformers' LMs (generate() drops all-ones masks)
            shape = (input_ids if input_ids is not None else inputs_embeds).shape[:2]
            attention_mask = torch.ones(shape, dtype=torch.long, device=self.lm_head.weight.device)
        outputs = self.lstmn(
            input_ids,
            attention_mask=attention_mask,
            inputs_embeds=inputs_embeds,
            cache=cache_argument(past_key_values, cache),
            use_cache=use_cache,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
            return_dict=True,
        )
        logits = self.lm_head(self.dropout(outputs.last_hidden_state))  # (B, T, V)
        loss = None
        if labels is not None:
            if attention_mask.shape == labels.shape:  # a mask is always there (made above when none is given)
                labels = labels.masked_fill(attention_mask == 0, -100)
            loss = token_cross_entropy(logits[:, :-1], labels[:, 1:])
        output = LstmnCausalLMOutput(
            loss=loss,
            logits=logits,
            **cache_field(output_cache(outputs)),
            hidden_states=outputs.hidden_states,
            intra_attentions=outputs.intra_attentions,
            attentions=outputs.attentions,
        )
        return output if return_dict else output.to_tuple()


__all__ = [
    "LstmnCache",
    "LstmnForCausalLM",
    "LstmnForPairClassification",
    "LstmnForSequenceClassification",
    "LstmnLayer",
    "LstmnModel",
    "LstmnPreTrainedModel",
]
