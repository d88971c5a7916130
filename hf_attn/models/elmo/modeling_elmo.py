"""Deep contextualized word representations (ELMo).

Matthew E. Peters, Mark Neumann, Mohit Iyyer, Matt Gardner, Christopher Clark, Kenton Lee, Luke Zettlemoyer.
NAACL 2018. arXiv:1802.05365. Original code: https://github.com/allenai/bilm-tf (TensorFlow 1).

A bidirectional language model over characters (§3.1, §3.4). Each token t_k is read as characters: a character
CNN with max-pooling over positions, highway layers and a linear projection give a context-free token vector x_k.
A forward LSTM stack reads x_1..x_N left to right to predict the next token, p(t_k | t_1..t_{k−1}) (eq. 1), a
separate backward stack reads right to left to predict the previous one (eq. 2); both share the token encoder and
the softmax and are trained jointly (eq. 3). Every LSTM layer has 4096 cells projected to 512 with clipping, and a
residual connection from the second layer on. A task sees the 2L+1 representations R_k = {x_k, →h_kj, ←h_kj}
= {h_kj | j = 0..L} with h_k0 = [x_k; x_k] and h_kj = [→h_kj; ←h_kj] (eq. 1 of §3.2), collapsed by a learned
scalar mix ELMo_k = γ Σ_j s_j h_kj with s = softmax(w) (eq. 1 of §3.2).

What differs from bilm-tf:
- Stateless by default: every call starts from zero states, so a sentence's vectors do not depend on the
  sentences the model saw before. `config.stateful=True` (or `model.stateful = True`) carries the final states to
  the next call row by row, exactly as the original does (`reset_states()` starts over).
- Tokens of a padded position never enter the char CNN (only real tokens are encoded), and every output is zero
  at padded positions, including layer 0 (bilm-tf leaves x_k of padded slots non-zero).
- TF's constant forget-gate bias of +1 is folded into the LSTM bias (the converter adds it; a fresh model
  initialises it so), and the gates are stored in PyTorch's order (i, f, g, o) instead of TF's (i, j, f, o).
- The highway layer is written as in Srivastava et al.: y = t ⊙ relu(W_H x + b_H) + (1 − t) ⊙ x with the gate
  t = σ(W_T x + b_T). bilm-tf calls the gate weights `W_carry` although they weigh the transformed path.
- The task heads (scalar mix, optional task BiLSTM, classifier) follow §3.2 and AllenNLP's usage; the regulariser
  λ‖w‖² on the mix weights is left to the optimiser's weight decay.

Speed: the char CNN runs once over all real tokens of the batch; the LSTM input projections of all time steps are
one matmul per layer; both directions advance together (their weights are stacked on a leading direction axis,
one batched matmul per step for the gates and one for the projection); gates are activated in two fused calls.
The recurrence itself is the only per-step Python work.

Shape legend: B sentences, T tokens per sentence (the `<S>`/`</S>` boundaries included), C characters per token,
E character embedding size, F Σ filters, P projection (token embedding and LSTM output), H LSTM cells, L LSTM layers,
V words of the language-model softmax, N labels.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import nn
from transformers import PreTrainedModel
from transformers import initialization as init
from transformers.utils import ModelOutput

from hf_attn.layers.checkpointing import CheckpointingLayer
from hf_attn.layers.losses import classification_loss, token_cross_entropy
from hf_attn.layers.outputs import output_flags
from hf_attn.layers.rnn import PackedBiRNN
from hf_attn.layers.sequences import reverse_padded
from hf_attn.layers.validation import (
    check_inputs_embeds,
    check_right_padded,
    check_token_inputs,
    value_checks_apply,
)
from hf_attn.utils.loading import SafetensorsLoadingMixin

from .configuration_elmo import ElmoConfig
from .fused_lstm import elmo_lstm_recurrence

# ---------------------------------------------------------------------------------------------------------------
# Outputs
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class ElmoModelOutput(ModelOutput):
    """
    Args:
        last_hidden_state (`torch.FloatTensor` of shape `(B, T, 2P)`): h_kL = [→h_kL; ←h_kL], the top layer.
        hidden_states (`tuple(torch.FloatTensor)`, L + 1 tensors of shape `(B, T, 2P)`): every layer h_kj,
            j = 0..L; layer 0 is the token embedding duplicated for both directions, [x_k; x_k]. They are ELMo's
            product (a task mixes them, `ElmoScalarMix`), so `ElmoModel` returns them unless
            `output_hidden_states=False`.
        token_embeddings (`torch.FloatTensor` of shape `(B, T, P)`): x_k, the context-free token vectors.
        attention_mask (`torch.LongTensor` of shape `(B, T)`): 1 where a position holds a token (boundaries included);
            every output is zero elsewhere.
    """

    last_hidden_state: torch.FloatTensor | None = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None
    token_embeddings: torch.FloatTensor | None = None
    attention_mask: torch.BoolTensor | None = None


@dataclass
class ElmoLanguageModelingOutput(ModelOutput):
    """
    Args:
        loss (`torch.FloatTensor` of shape `()`, *optional*): ½ (forward + backward) mean token cross-entropy
            (eq. 3 of §3.1, as bilm-tf averages the two directions), when `labels` are given.
        logits (`torch.FloatTensor` of shape `(B, T, V)`): the forward LM's scores at position k for token k + 1.
        backward_logits (`torch.FloatTensor` of shape `(B, T, V)`): the backward LM's scores at k for token k − 1.
        hidden_states (`tuple(torch.FloatTensor)`, *optional*): with `output_hidden_states=True`, the biLM's layers,
            as `ElmoModelOutput.hidden_states`.
    """

    loss: torch.FloatTensor | None = None
    logits: torch.FloatTensor | None = None
    backward_logits: torch.FloatTensor | None = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None


@dataclass
class ElmoClassifierOutput(ModelOutput):
    """
    Args:
        loss (`torch.FloatTensor` of shape `()`, *optional*): the task loss, when `labels` are given.
        logits (`torch.FloatTensor` of shape `(B, N)` or `(B, T, N)`): class scores per sentence or per token.
        elmo_representations (`torch.FloatTensor` of shape `(B, T, 2P)`): ELMo_k = γ Σ_j s_j h_kj.
        attention_mask (`torch.LongTensor` of shape `(B, T)`): the token mask (1 for tokens, 0 for padding).
        hidden_states (`tuple(torch.FloatTensor)`, *optional*): with `output_hidden_states=True`, the biLM's layers
            h_kj (j = 0..L), as `ElmoModelOutput.hidden_states`.
    """

    loss: torch.FloatTensor | None = None
    logits: torch.FloatTensor | None = None
    elmo_representations: torch.FloatTensor | None = None
    attention_mask: torch.BoolTensor | None = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None


# ---------------------------------------------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------------------------------------------


def check_character_inputs(
    input_ids: torch.Tensor, attention_mask: torch.Tensor | None, config: ElmoConfig
) -> torch.Tensor:
    """Validates `(B, T, C)` character ids (rank, dtype and range by `check_token_inputs`, then C) and returns the
    boolean token mask `(B, T)`, derived when omitted: a position holds a token when any of its character ids is
    non-zero. Raises `ValueError` for anything else, including left padding."""
    characters = config.max_characters_per_token
    check_token_inputs(input_ids, None, config.n_characters, shape=f"(batch, tokens, {characters})")
    if input_ids.size(-1) != characters:
        raise ValueError(
            f"`input_ids` has {input_ids.size(-1)} characters per token; this model reads {characters} "
            "(config.max_characters_per_token)."
        )
    if attention_mask is None:
        mask = (input_ids > 0).any(dim=-1)
    elif tuple(attention_mask.shape) != tuple(input_ids.shape[:2]):
        raise ValueError(
            f"`attention_mask` must have shape (batch, tokens) = {tuple(input_ids.shape[:2])}, got "
            f"{tuple(attention_mask.shape)}."
        )
    else:
        mask = attention_mask.to(torch.bool)
    check_right_padded(
        mask, "ELMo needs right-padded sentences (an attention_mask of the form 1…1 0…0), as the tokenizer pads them."
    )
    return mask


def remove_sentence_boundaries(
    tensor: torch.Tensor, attention_mask: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Drops the `<S>` and `</S>` positions of every sentence: `(B, T, ...)` -> `(B, T − 2, ...)` and the new mask.

    Each sentence loses its first and its last real token; padding stays at the end (zeros).
    """
    mask = attention_mask.to(torch.bool)
    lengths = (mask.sum(dim=1) - 2).clamp(min=0)
    new_mask = torch.arange(max(tensor.size(1) - 2, 0), device=mask.device)[None, :] < lengths[:, None]
    trimmed = tensor[:, 1:-1] if tensor.size(1) > 2 else tensor[:, :0]
    keep = new_mask.reshape(*new_mask.shape, *[1] * (trimmed.dim() - 2))
    return trimmed * keep.to(trimmed.dtype), new_mask


# ---------------------------------------------------------------------------------------------------------------
# The biLM
# ---------------------------------------------------------------------------------------------------------------


class ElmoHighway(nn.Module):
    """One highway layer (Srivastava et al., 2015): y = t ⊙ relu(W_H x + b_H) + (1 − t) ⊙ x, t = σ(W_T x + b_T).

    bilm-tf's `W_transform`/`b_transform` are W_H/b_H and its `W_carry`/`b_carry` are W_T/b_T (its "carry" gate
    weighs the transformed path).
    """

    def __init__(self, size: int) -> None:
        super().__init__()
        self.transform = nn.Linear(size, size)  # W_H, b_H
        self.gate = nn.Linear(size, size)  # W_T, b_T

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        gate = torch.sigmoid(self.gate(hidden))
        return gate * torch.relu(self.transform(hidden)) + (1.0 - gate) * hidden


class ElmoCharacterEncoder(nn.Module):
    """x_k from the characters of t_k (§3.4 / Józefowicz et al. 2016): embed characters, convolve with every filter
    width, max over positions, activation, highway layers, projection to P.

    `forward(input_ids (B, T, C), mask (B, T)) -> (B, T, P)`; zero at padded positions, which are never encoded.
    """

    def __init__(self, config: ElmoConfig) -> None:
        super().__init__()
        self.character_embeddings = nn.Embedding(config.n_characters, config.character_embedding_size, padding_idx=0)
        self.convolutions = nn.ModuleList(
            nn.Conv1d(config.character_embedding_size, number, width) for width, number in config.filters
        )
        self.activation = torch.relu if config.activation == "relu" else torch.tanh
        self.highways = nn.ModuleList(ElmoHighway(config.num_filters) for _ in range(config.num_highway_layers))
        # bilm-tf projects only when the filters do not already give P features (its `use_proj`).
        self.projection = (
            nn.Linear(config.num_filters, config.projection_dim)
            if config.num_filters != config.projection_dim
            else None
        )

    def forward(
        self, input_ids: torch.Tensor | None, mask: torch.Tensor, character_vectors: torch.Tensor | None = None
    ) -> torch.Tensor:
        """`character_vectors (B, T, C, E)`, the character table's rows, may stand in for `input_ids`."""
        # Eager on the CPU: the real tokens of the batch alone, N of them. Traced (torch.export, ONNX) and on an
        # accelerator: every position, so no shape depends on the mask's values (selecting the real tokens would
        # wait for the device, and a CUDA graph could not hold it); padded positions are zeroed at the end either way.
        traced = not value_checks_apply(mask)
        if character_vectors is None:
            tokens = input_ids.flatten(0, 1) if traced else input_ids[mask]
            characters = self.character_embeddings(tokens)  # (N, C, E)
        else:
            characters = character_vectors.flatten(0, 1) if traced else character_vectors[mask]
        characters = characters.transpose(1, 2)  # (N, E, C)
        # Max over the valid positions of each width, then the activation (bilm-tf's order; equal for relu).
        features = torch.cat([self.activation(conv(characters).amax(dim=-1)) for conv in self.convolutions], dim=-1)
        for highway in self.highways:
            features = highway(features)  # (N, F)
        if self.projection is not None:
            features = self.projection(features)  # (N, P)
        if traced:
            return features.view(*mask.shape, -1) * mask[..., None].to(features.dtype)
        embeddings = features.new_zeros(*mask.shape, features.size(-1))
        embeddings[mask] = features
        return embeddings


class ElmoLstmLayer(CheckpointingLayer):
    """One LSTM layer of the biLM for both directions at once (index 0 forward, 1 backward on the leading axis).

    The cell is TF1's `LSTMCell(num_proj=P, cell_clip, proj_clip)` without peepholes, per step t:
        [i, f, g, o] = W_ih x_t + W_hh m_{t−1} + b
        c_t = clip(σ(f) ⊙ c_{t−1} + σ(i) ⊙ tanh(g), cell_clip)
        m_t = clip(W_proj (σ(o) ⊙ tanh(c_t)), proj_clip)      (no projection and no clip when P = H)
    With `residual`, the caller adds x_t to m_t for the layer's output (TF's `ResidualWrapper`); the recurrent
    state stays m_t.

    Parameters: `weight_ih (2, 4H, D)`, `weight_hh (2, 4H, P)`, `bias (2, 4H)` (TF's forget bias +1 included), and
    `weight_proj (2, P, H)` when P < H; gates in PyTorch's order i, f, g, o.

    `forward(inputs (2, B, T, D), state (c (2, B, H), m (2, B, P)))` -> `(m (2, B, T, P), cells (T, 2, B, H) or
    None)`: the backward direction's inputs come already reversed. Positions past a row's length are computed
    and must be discarded by the caller (they never influence earlier positions); `return_cells` keeps c_t of every
    step so the caller can pick each row's final state.
    """

    def __init__(self, input_size: int, config: ElmoConfig, residual: bool) -> None:
        super().__init__()
        hidden, projection = config.hidden_size, min(config.projection_dim, config.hidden_size)
        self.hidden_size, self.output_size, self.residual = hidden, projection, residual
        self.cell_clip, self.proj_clip = config.cell_clip, config.proj_clip
        self.weight_ih = nn.Parameter(torch.empty(2, 4 * hidden, input_size))
        self.weight_hh = nn.Parameter(torch.empty(2, 4 * hidden, projection))
        self.bias = nn.Parameter(torch.empty(2, 4 * hidden))
        self.weight_proj = nn.Parameter(torch.empty(2, projection, hidden)) if projection < hidden else None
        # "fused" (`fused_lstm.py`) or "reference" (the readable `_step` loop under autograd): the same outputs.
        self.implementation = "fused"

    def forward(
        self, inputs: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor], return_cells: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        directions, batch, steps, _ = inputs.shape
        hidden = self.hidden_size
        # W_ih x_t + b for all steps at once: one batched matmul per layer, (2, B, T, 4H).
        flat = inputs.reshape(directions, batch * steps, -1)
        projected = torch.baddbmm(self.bias[:, None, :], flat, self.weight_ih.transpose(1, 2))
        if torch.compiler.is_compiling():  # traced: one scan over the steps, for any length (ONNX's Scan)
            from torch._higher_order_ops.scan import scan

            weight_hh = self.weight_hh.transpose(1, 2)  # (2, P, 4H)
            weight_proj = self.weight_proj.transpose(1, 2) if self.weight_proj is not None else None  # (2, H, P)

            def scan_step(carry, projected_step):
                cell, output = self._step(projected_step, *carry, weight_hh, weight_proj)
                return (cell, output), (output.clone(), cell.clone())  # a scan's outputs must not alias its carry

            steps_first = projected.view(directions, batch, steps, 4 * hidden).permute(2, 0, 1, 3)  # (T, 2, B, 4H)
            _, (outputs, cells) = scan(scan_step, tuple(value.clone() for value in state), steps_first)
            return outputs.permute(1, 2, 0, 3), (cells if return_cells else None)
        projected = projected.view(directions, batch, steps, 4 * hidden)
        if steps == 0:
            return inputs.new_zeros(directions, batch, 0, self.output_size), None
        if self.implementation == "reference":
            return self.forward_reference(projected, state, return_cells)
        # The same steps fused (`fused_lstm.py`): a hand-written backward, Triton cells and CUDA graphs on CUDA.
        outputs, cells = elmo_lstm_recurrence(
            projected, self.weight_hh, self.weight_proj, state, self.cell_clip, self.proj_clip
        )
        return outputs, (cells.permute(2, 0, 1, 3) if return_cells else None)  # cells as (T, 2, B, H)

    def forward_reference(
        self, projected: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor], return_cells: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The readable loop: `_step` per step under autograd, from `projected (2, B, T, 4H)` = W_ih x_t + b. The
        fused recurrence's oracle in the tests and its peer in `benchmarks/elmo_throughput.py`."""
        weight_hh = self.weight_hh.transpose(1, 2)  # (2, P, 4H)
        weight_proj = self.weight_proj.transpose(1, 2) if self.weight_proj is not None else None  # (2, H, P)
        cell, output = state
        outputs, cells = [], []
        # unbind, not projected[:, :, t]: the backward of T indexings would fill T zero tensors of the full size.
        for projected_step in projected.unbind(dim=2):
            cell, output = self._step(projected_step, cell, output, weight_hh, weight_proj)
            outputs.append(output)
            if return_cells:
                cells.append(cell)
        return torch.stack(outputs, dim=2), (torch.stack(cells) if return_cells else None)

    def _step(
        self,
        projected_step: torch.Tensor,
        cell: torch.Tensor,
        output: torch.Tensor,
        weight_hh: torch.Tensor,
        weight_proj: torch.Tensor | None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """One step of both directions: (c_{t−1} (2, B, H), m_{t−1} (2, B, P)) -> (c_t, m_t), the class docstring's
        equations."""
        gates = torch.baddbmm(projected_step, output, weight_hh)  # (2, B, 4H)
        # chunk, not slices: its backward is one concatenation, where each slice's would fill a (2, B, 4H) zero
        # tensor per step.
        input_gate, forget_gate, candidate, output_gate = gates.chunk(4, dim=-1)
        cell = torch.sigmoid(forget_gate) * cell + torch.sigmoid(input_gate) * torch.tanh(candidate)
        if self.cell_clip is not None:
            cell = cell.clamp(-self.cell_clip, self.cell_clip)
        output = torch.sigmoid(output_gate) * torch.tanh(cell)  # (2, B, H)
        if weight_proj is not None:
            output = torch.bmm(output, weight_proj)  # (2, B, P)
            if self.proj_clip is not None:
                output = output.clamp(-self.proj_clip, self.proj_clip)
        return cell, output


def _overlay(under: torch.Tensor, over: torch.Tensor) -> torch.Tensor:
    """`under` with its first rows (axis 1) replaced by those of `over`, as many as both have."""
    rows = min(under.size(1), over.size(1))
    return torch.cat([over[:, :rows].to(under), under[:, rows:]], dim=1)


class ElmoBiLm(nn.Module):
    """The forward and backward LSTM stacks over x_1..x_T (§3.1), with the states the original carries over.

    `forward(embeddings (B, T, P), mask (B, T), stateful)` -> per layer `(B, T, 2P)` = [→h_kj; ←h_kj], zero at
    padding. The backward stack reads each sentence reversed (its padding stays at the end), so both stacks run
    the same loop; its outputs are reversed back.
    """

    def __init__(self, config: ElmoConfig) -> None:
        super().__init__()
        output_size = min(config.projection_dim, config.hidden_size)
        self.layers = nn.ModuleList(
            ElmoLstmLayer(
                config.projection_dim if index == 0 else output_size,
                config,
                residual=config.use_skip_connections and index > 0,  # none from x_k into the first layer
            )
            for index in range(config.num_hidden_layers)
        )
        self.dropout = nn.Dropout(config.dropout)
        # Stateful mode: per layer (c (2, B_max, H), m (2, B_max, P)), detached; rows beyond a batch are kept.
        self._states: list[tuple[torch.Tensor, torch.Tensor]] | None = None

    def reset_states(self) -> None:
        self._states = None

    def _initial_states(self, batch: int, reference: torch.Tensor, stateful: bool):
        """Zero states, with the stored rows laid over the first ones in stateful mode."""
        states = [
            (reference.new_zeros(2, batch, layer.hidden_size), reference.new_zeros(2, batch, layer.output_size))
            for layer in self.layers
        ]
        if stateful and self._states is not None:
            states = [tuple(map(_overlay, zero, stored)) for zero, stored in zip(states, self._states, strict=True)]
        return states

    def _store_states(self, finals: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
        """Keeps the batch's final states in rows [0, B) of the state buffers (rows beyond B untouched)."""
        self._states = [
            tuple(
                _overlay(old if old.size(1) > new.size(1) else new, new).detach()
                for old, new in zip(old_pair, new_pair, strict=True)
            )
            for old_pair, new_pair in zip(self._states or finals, finals, strict=True)
        ]

    def forward(self, embeddings: torch.Tensor, mask: torch.Tensor, stateful: bool = False) -> list[torch.Tensor]:
        batch = embeddings.size(0)
        lengths = mask.sum(dim=1)
        keep = mask[None, :, :, None].to(embeddings.dtype)  # (1, B, T, 1)
        # (2, B, T, P): the forward stack reads x_1..x_n, the backward stack x_n..x_1.
        inputs = torch.stack([embeddings, reverse_padded(embeddings, lengths)])
        states = self._initial_states(batch, embeddings, stateful)
        last = (lengths - 1).clamp(min=0)  # each row's last real step
        layers, finals = [], []
        for layer, state in zip(self.layers, states, strict=True):
            inputs = self.dropout(inputs)  # bilm-tf's DropoutWrapper(input_keep_prob) around the residual cell
            memory, cells = layer(inputs, state, return_cells=stateful)  # m_t, (2, B, T, P)
            if stateful:
                finals.append(self._final_state(memory, cells, state, last, lengths))
            outputs = (memory + inputs if layer.residual else memory) * keep  # positions past a length discarded
            layers.append(torch.cat([outputs[0], reverse_padded(outputs[1], lengths)], dim=-1))  # (B, T, 2P)
            inputs = outputs
        if stateful:
            self._store_states(finals)
        return layers

    @staticmethod
    def _final_state(memory, cells, state, last, lengths) -> tuple[torch.Tensor, torch.Tensor]:
        """(c, m) after each row's last real token (the initial state for an empty row), as TF's `dynamic_rnn`
        returns them with `sequence_length`. `memory`: m_t before any residual, `(2, B, T, P)`."""
        rows = torch.arange(memory.size(1), device=memory.device)
        has_tokens = (lengths > 0)[None, :, None]
        cell = cells[last, :, rows].transpose(0, 1)  # (2, B, H)
        return torch.where(has_tokens, cell, state[0]), torch.where(has_tokens, memory[:, rows, last], state[1])


# ---------------------------------------------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------------------------------------------


class ElmoPreTrainedModel(SafetensorsLoadingMixin, PreTrainedModel):
    config_class = ElmoConfig
    base_model_prefix = "elmo"
    supports_gradient_checkpointing = True  # per layer or level: its GradientCheckpointingLayer modules
    _no_split_modules: ClassVar[list[str]] = []

    # ELMo reads characters: its input embeddings are the character table, whatever the word vocabulary (a dotted
    # path: SafetensorsLoadingMixin's get/set_input_embeddings follow it; ElmoModel's starts below `elmo`).
    _input_embed_layer = "elmo.character_encoder.character_embeddings"

    def resize_token_embeddings(
        self, new_num_tokens: int | None = None, pad_to_multiple_of: int | None = None, mean_resizing: bool = True
    ) -> nn.Embedding:
        """Resizes the word vocabulary, `config.vocab_size`: the words the biLM's softmax predicts (its rows are kept,
        new rows start at the old rows' mean, as transformers resizes an output layer). ELMo reads words as
        characters, so the character table it returns, as transformers' method returns the input embeddings, is
        the same for every vocabulary."""
        if new_num_tokens is None and pad_to_multiple_of is None:
            return self.get_input_embeddings()
        size = self.config.vocab_size if new_num_tokens is None else new_num_tokens
        if pad_to_multiple_of is not None:
            size = -(-size // pad_to_multiple_of) * pad_to_multiple_of
        softmax = self.get_output_embeddings()
        if softmax is not None:
            self.set_output_embeddings(self._get_resized_lm_head(softmax, size, mean_resizing=mean_resizing))
        self.config.vocab_size = self.vocab_size = size
        return self.get_input_embeddings()

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        """bilm-tf's initialisers: character embeddings ~ U(−1, 1) (padding row 0); relu convolutions ~
        U(−range, range), tanh ones ~ N(0, 1/(width·E)); highway and projection weights ~ N(0, 1/fan_in) with the
        gate bias at −2 (mostly carry at the start); LSTM kernels Glorot-uniform over TF's (D + P, 4H) kernel,
        biases 0 but the forget gate's +1; the softmax ~ N(0, 1/P); the scalar mix uniform (w = 0, γ = 1)."""
        config = self.config
        if isinstance(module, nn.Embedding):
            init.uniform_(module.weight, -1.0, 1.0)
            if module.padding_idx is not None and not getattr(module.weight, "_is_hf_initialized", False):
                init.zeros_(module.weight[module.padding_idx])
        elif isinstance(module, nn.Conv1d):
            if config.activation == "relu":
                init.uniform_(module.weight, -config.initializer_range, config.initializer_range)
            else:
                init.normal_(module.weight, 0.0, (module.kernel_size[0] * module.in_channels) ** -0.5)
            init.zeros_(module.bias)
        elif isinstance(module, ElmoHighway):
            size = module.gate.in_features
            init.normal_(module.transform.weight, 0.0, size**-0.5)
            init.zeros_(module.transform.bias)
            init.normal_(module.gate.weight, 0.0, size**-0.5)
            init.constant_(module.gate.bias, -2.0)
        elif isinstance(module, ElmoLstmLayer):
            hidden = module.hidden_size
            bound = (6.0 / (module.weight_ih.size(2) + module.weight_hh.size(2) + 4 * hidden)) ** 0.5
            init.uniform_(module.weight_ih, -bound, bound)
            init.uniform_(module.weight_hh, -bound, bound)
            bias = torch.zeros_like(module.bias)
            bias[:, hidden : 2 * hidden] = 1.0  # TF's forget_bias
            init.copy_(module.bias, bias)
            if module.weight_proj is not None:
                bound = (6.0 / (hidden + module.output_size)) ** 0.5
                init.uniform_(module.weight_proj, -bound, bound)
        elif isinstance(module, ElmoScalarMix):
            init.zeros_(module.scalar_weights)
            init.ones_(module.gamma)
        elif isinstance(module, nn.Linear):  # projections, softmax, classifiers
            init.normal_(module.weight, 0.0, module.in_features**-0.5)
            if module.bias is not None:
                init.zeros_(module.bias)
        elif isinstance(module, nn.RNNBase):  # the task heads' BiLSTM
            bound = module.hidden_size**-0.5
            for parameter in module.parameters():
                init.uniform_(parameter, -bound, bound)


class ElmoModel(ElmoPreTrainedModel):
    """The biLM: characters -> x_k -> L forward and L backward LSTM layers; returns every layer h_kj (j = 0..L).

    Stateless unless `config.stateful` (or the `stateful` attribute) is set; then each call starts from the final
    states of the previous one, row by row, like bilm-tf (`reset_states()` goes back to zero states).
    """

    _input_embed_layer = "character_encoder.character_embeddings"

    def __init__(self, config: ElmoConfig) -> None:
        super().__init__(config)
        self.character_encoder = ElmoCharacterEncoder(config)
        self.bilm = ElmoBiLm(config)
        self.stateful = config.stateful
        self.post_init()

    def reset_states(self) -> None:
        """Forgets the states carried over in stateful mode."""
        self.bilm.reset_states()

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        inputs_embeds: torch.FloatTensor | None = None,
    ) -> ElmoModelOutput | tuple:
        r"""
        Args:
            input_ids (`torch.LongTensor` of shape `(B, T, C)`): character ids per token, as
                `ElmoCharacterTokenizerFast` returns them (sentence boundaries included).
            attention_mask (`torch.Tensor` of shape `(B, T)`, *optional*): 1 for tokens, 0 for padding (right
                padding only); derived from the character ids when omitted.
            output_attentions (`bool`, *optional*): accepted as every hf_attn head does; ELMo has no attention.
            output_hidden_states (`bool`, *optional*): return every layer; unlike other models, `None` means yes
                here: the layers are what ELMo is for.
            inputs_embeds (`torch.FloatTensor` of shape `(B, T, C, E)` or `(B, T, P)`, *optional*): instead of
                `input_ids`, either the character vectors `get_input_embeddings()(input_ids)` (transformers'
                meaning) or the token vectors x_k (what the character CNN makes of each token: `token_embeddings` of
                an earlier output); every position is a token unless `attention_mask` says otherwise.
        """
        return_dict = self.config.return_dict if return_dict is None else return_dict
        if (input_ids is None) == (inputs_embeds is None):
            raise ValueError("Pass exactly one of `input_ids` and `inputs_embeds`.")
        if input_ids is not None:
            mask = check_character_inputs(input_ids, attention_mask, self.config)
            token_embeddings = self.character_encoder(input_ids, mask)  # x_k, (B, T, P)
        elif isinstance(inputs_embeds, torch.Tensor) and inputs_embeds.dim() == 4:  # character vectors
            width = self.config.character_embedding_size
            check_inputs_embeds(inputs_embeds, None, width, f"(batch, tokens, {self.config.max_characters_per_token})")
            stand_in = torch.ones(inputs_embeds.shape[:-1], dtype=torch.long, device=inputs_embeds.device)
            mask = check_character_inputs(stand_in, attention_mask, self.config)  # ones: every position a token
            token_embeddings = self.character_encoder(None, mask, character_vectors=inputs_embeds)  # x_k, (B, T, P)
        else:
            mask = check_inputs_embeds(inputs_embeds, attention_mask, self.config.projection_dim, right_padded=True)
            token_embeddings = inputs_embeds * mask[..., None].to(inputs_embeds.dtype)  # zero at padding
        first = torch.cat([token_embeddings, token_embeddings], dim=-1)  # h_k0 = [x_k; x_k], (B, T, 2P)
        # The LSTMs read x_k as the first half of h_k0: the layer returned is the one the outputs come from.
        layers = self.bilm(first[..., : token_embeddings.size(-1)], mask, stateful=self.stateful)  # h_kj, j = 1..L
        hidden_states = (first, *layers)
        output = ElmoModelOutput(
            last_hidden_state=hidden_states[-1],
            hidden_states=hidden_states if output_hidden_states is not False else None,
            token_embeddings=token_embeddings,
            attention_mask=mask.long(),  # 1/0 as transformers' masks (a bool output breaks tuple/dict checks)
        )
        return output if return_dict else output.to_tuple()


class ElmoForBidirectionalLanguageModeling(ElmoPreTrainedModel):
    """The biLM with its softmax, trained as §3.1: maximise Σ_k log p(t_k | t_<k) + log p(t_k | t_>k) (eq. 3),
    one softmax Θ_s shared by the two directions, fed the top layer of each.

    `labels (B, T)` are the word ids of the same positions as `input_ids` (boundaries included, -100 for padding
    or unknown words), e.g. `tokenizer(..., return_token_ids=True)["token_ids"]`: the forward LM at k predicts
    labels[k + 1], the backward LM labels[k − 1]. Perplexity = exp(loss).
    """

    def __init__(self, config: ElmoConfig) -> None:
        super().__init__(config)
        if config.vocab_size < 1:
            raise ValueError("ElmoForBidirectionalLanguageModeling needs `config.vocab_size` (the softmax's words).")
        self.elmo = ElmoModel(config)
        self.dropout = nn.Dropout(config.dropout)
        self.softmax = nn.Linear(min(config.projection_dim, config.hidden_size), config.vocab_size)  # Θ_s
        self.post_init()

    def get_output_embeddings(self) -> nn.Linear:
        return self.softmax

    def set_output_embeddings(self, value: nn.Linear) -> None:
        self.softmax = value

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        labels: torch.LongTensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        inputs_embeds: torch.FloatTensor | None = None,
    ) -> ElmoLanguageModelingOutput | tuple:
        r"""
        Args:
            input_ids (`torch.LongTensor` of shape `(B, T, C)`): character ids.
            attention_mask (`torch.Tensor` of shape `(B, T)`, *optional*): the token mask.
            labels (`torch.LongTensor` of shape `(B, T)`, *optional*): word ids at the same positions (-100 is
                ignored).
            inputs_embeds (`torch.FloatTensor` of shape `(B, T, P)`, *optional*): the token vectors x_k instead of
                `input_ids` (as [`ElmoModel`] takes them).
        """
        output_attentions, output_hidden_states, return_dict = output_flags(
            self.config, output_attentions, output_hidden_states, return_dict
        )
        encoded = self.elmo(
            input_ids, attention_mask, output_hidden_states=True, return_dict=True, inputs_embeds=inputs_embeds
        )
        forward_states, backward_states = self.dropout(encoded.last_hidden_state).chunk(2, dim=-1)
        logits, backward_logits = self.softmax(forward_states), self.softmax(backward_states)  # (B, T, V)
        loss = None
        if labels is not None:
            positions = tuple(encoded.attention_mask.shape)  # (B, T)
            if tuple(labels.shape) != positions:
                raise ValueError(f"`labels` must have shape {positions}, got {tuple(labels.shape)}.")
            forward_loss = token_cross_entropy(logits[:, :-1], labels[:, 1:])
            backward_loss = token_cross_entropy(backward_logits[:, 1:], labels[:, :-1])
            loss = 0.5 * (forward_loss + backward_loss)  # bilm-tf's total loss
        output = ElmoLanguageModelingOutput(
            loss=loss,
            logits=logits,
            backward_logits=backward_logits,
            hidden_states=encoded.hidden_states if output_hidden_states else None,
        )
        return output if return_dict else output.to_tuple()


class ElmoScalarMix(nn.Module):
    """ELMo_k^task = γ^task Σ_j s_j^task h_kj with s^task = softmax(w) (eq. 1 of §3.2), over the L + 1 layers.

    Parameters: `scalar_weights` w `(L + 1,)` (0 at the start: an equal mix) and `gamma` γ `(1,)` (1 at the start).
    """

    def __init__(self, num_layers: int) -> None:
        super().__init__()
        self.scalar_weights = nn.Parameter(torch.zeros(num_layers))
        self.gamma = nn.Parameter(torch.ones(1))

    def forward(self, layers: Sequence[torch.Tensor]) -> torch.Tensor:
        weights = torch.softmax(self.scalar_weights, dim=0)
        return self.gamma * sum(weight * layer for weight, layer in zip(weights, layers, strict=True))


class _ElmoTaskModel(ElmoPreTrainedModel):
    """Shared by the task heads: the biLM (frozen unless `config.freeze_elmo` is False; kept in eval mode then, so
    its dropout stays off), the scalar mix, dropout, and the optional task BiLSTM."""

    def __init__(self, config: ElmoConfig) -> None:
        super().__init__(config)
        self.elmo = ElmoModel(config)
        self.scalar_mix = ElmoScalarMix(config.num_hidden_layers + 1)
        self.dropout = nn.Dropout(config.elmo_dropout)
        features = 2 * min(config.projection_dim, config.hidden_size)
        self.task_encoder = None
        if config.task_hidden_size:
            lstm = nn.LSTM(features, config.task_hidden_size, batch_first=True, bidirectional=True)
            self.task_encoder = PackedBiRNN(lstm)
            features = self.task_encoder.output_size
        self.feature_size = features

    def _freeze(self) -> None:
        if self.config.freeze_elmo:
            self.elmo.requires_grad_(False)

    def train(self, mode: bool = True):
        super().train(mode)
        if self.config.freeze_elmo:
            self._freeze()  # again: `from_pretrained` hands back parameters that require gradients
            self.elmo.eval()
        return self

    def _features(
        self, input_ids, attention_mask, inputs_embeds=None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, tuple]:
        """(task features (B, T, D), ELMo_k (B, T, 2P), mask (B, T), the biLM's layers)."""
        # A frozen biLM is a feature extractor: no graph is built through it, whatever `requires_grad` says.
        with torch.set_grad_enabled(torch.is_grad_enabled() and not self.config.freeze_elmo):
            encoded = self.elmo(
                input_ids, attention_mask, output_hidden_states=True, return_dict=True, inputs_embeds=inputs_embeds
            )
        representation = self.scalar_mix(encoded.hidden_states)  # (B, T, 2P)
        features = self.dropout(representation)
        mask = encoded.attention_mask.bool()
        if self.task_encoder is not None:
            features = self.task_encoder(features, mask)
        return features, representation, mask, encoded.hidden_states


class ElmoForSequenceClassification(_ElmoTaskModel):
    """ELMo features -> (task BiLSTM) -> [masked mean; masked max] over the tokens -> linear classifier."""

    def __init__(self, config: ElmoConfig) -> None:
        super().__init__(config)
        self.classifier = nn.Linear(2 * self.feature_size, config.num_labels)
        self.post_init()
        self._freeze()

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        inputs_embeds: torch.FloatTensor | None = None,
    ) -> ElmoClassifierOutput | tuple:
        r"""
        Args:
            input_ids (`torch.LongTensor` of shape `(B, T, C)`): character ids.
            attention_mask (`torch.Tensor` of shape `(B, T)`, *optional*): the token mask.
            labels (`torch.Tensor` of shape `(B,)`, *optional*): class ids (or regression / multi-hot targets by
                `config.problem_type`).
        """
        output_attentions, output_hidden_states, return_dict = output_flags(
            self.config, output_attentions, output_hidden_states, return_dict
        )
        features, representation, mask, layers = self._features(input_ids, attention_mask, inputs_embeds)
        keep = mask[..., None].to(features.dtype)
        mean = (features * keep).sum(dim=1) / keep.sum(dim=1).clamp(min=1)
        maximum = features.masked_fill(~mask[..., None], torch.finfo(features.dtype).min).amax(dim=1)
        maximum = maximum * mask.any(dim=1, keepdim=True).to(features.dtype)  # an empty sentence pools to 0
        logits = self.classifier(torch.cat([mean, maximum], dim=-1))  # (B, N)
        loss = classification_loss(self.config, logits, labels) if labels is not None else None
        output = ElmoClassifierOutput(
            loss=loss,
            logits=logits,
            elmo_representations=representation,
            attention_mask=mask.long(),
            hidden_states=layers if output_hidden_states else None,
        )
        return output if return_dict else output.to_tuple()


class ElmoForTokenClassification(_ElmoTaskModel):
    """ELMo features -> (task BiLSTM) -> a linear classifier per token (tagging, as the paper's NER/SRL models)."""

    def __init__(self, config: ElmoConfig) -> None:
        super().__init__(config)
        self.classifier = nn.Linear(self.feature_size, config.num_labels)
        self.post_init()
        self._freeze()

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        labels: torch.LongTensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        inputs_embeds: torch.FloatTensor | None = None,
    ) -> ElmoClassifierOutput | tuple:
        r"""
        Args:
            input_ids (`torch.LongTensor` of shape `(B, T, C)`): character ids.
            attention_mask (`torch.Tensor` of shape `(B, T)`, *optional*): the token mask.
            labels (`torch.LongTensor` of shape `(B, T)`, *optional*): a class id per position; -100 (padding, the
                `<S>`/`</S>` boundaries) is ignored.
        """
        output_attentions, output_hidden_states, return_dict = output_flags(
            self.config, output_attentions, output_hidden_states, return_dict
        )
        features, representation, mask, layers = self._features(input_ids, attention_mask, inputs_embeds)
        logits = self.classifier(features) * mask[..., None].to(features.dtype)  # (B, T, N)
        loss = None
        if labels is not None:
            if labels.shape != mask.shape:
                raise ValueError(f"`labels` must have shape {tuple(mask.shape)}, got {tuple(labels.shape)}.")
            loss = token_cross_entropy(logits, labels.masked_fill(~mask, -100))
        output = ElmoClassifierOutput(
            loss=loss,
            logits=logits,
            elmo_representations=representation,
            attention_mask=mask.long(),
            hidden_states=layers if output_hidden_states else None,
        )
        return output if return_dict else output.to_tuple()


__all__ = [
    "ElmoForBidirectionalLanguageModeling",
    "ElmoForSequenceClassification",
    "ElmoForTokenClassification",
    "ElmoModel",
    "ElmoPreTrainedModel",
    "ElmoScalarMix",
    "remove_sentence_boundaries",
]
