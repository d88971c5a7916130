"""SGM: multi-label classification as label-sequence generation.

Pengcheng Yang, Xu Sun, Wei Li, Shuming Ma, Wei Wu, Houfeng Wang. *SGM: Sequence Generation Model for Multi-Label
Classification*. COLING 2018. arXiv:1806.04822. Original code: https://github.com/lancopku/SGM

A BiLSTM reads the text (eq. 1–2); an LSTM decoder emits the text's labels one by one, most frequent first,
attending to the words at every step (eq. 3–6); the softmax of step t masks the labels already emitted, y_t =
softmax(o_t + I_t) (eq. 7), so a label set comes out as a sequence without repeats, ended by EOS. With the global
embedding (SGM+GE, §2.3), the decoder's next input is not the argmax label's embedding alone but a gated mix with
ē = Σ_i y_{t−1}^(i) e_i, the embedding average under the whole previous distribution, so that one wrong argmax does
not derail the steps after it (exposure bias).

What differs from the paper, and how the original code is reproduced (each switch is a config field):
- The masked softmax of eq. 7 is a `LogitsProcessor` (`RepeatedLabelLogitsProcessor`) that `generate()` adds, for
  greedy and beam search alike (the original masks in greedy decoding only); `logits` stay the raw scores o_t, and
  the teacher-forced loss is the plain cross-entropy, as in both paper and code.
- Original code (`lancopku/SGM`), selected at once by `SgmConfig.original_code()`: `merge_directions="sum"`,
  `reverse_source=True`, `decoder_initial_state="forward_final"`, `attention_type="luong_gate"`,
  `mask_padding=False`, `input_feeding=False`, `global_embedding_gate="original"` (and, from the converted
  checkpoint, `global_embedding_tau=0.1`): encoder directions summed,
  sources read backwards, decoder started from the forward direction's final states, "luong-gate" attention with
  SELU read-out, attention over the padding too, no input feeding, the GE gate mixing the other way round and the
  plain embedding concatenated to it, y_{t−1} sharpened by τ. Its greedy decoding runs a fixed number of steps
  (`max_new_tokens`, with EOS masked like any other emitted id after it appears); its beam search (no repeat mask,
  3-gram blocking, score / (length + 1), every example of the batch decoded until all are done) is
  `sgm_original_beam_search` (in `generation_sgm.py`, beside this file), passed as
  `generate(custom_generate=...)`. The original feeds ē from the raw scores in training, from the masked ones in
  greedy decoding and the uniform average in beam search: `global_embedding_source` selects any of the three.
- The paper's f in o_t = W_o f(W_d s_t + V_d c_t) is unnamed; tanh here.
- Sources are given in natural order; `reverse_source` reverses each one inside the encoder and the encoder states
  are put back in natural order, so `cross_attentions` always index the input tokens.

Shape legend: B batch, S source tokens, T decoder steps, E embedding, C encoder output (2·H_e or H_e), H decoder
units, A attention units, L decoder layers, V target vocabulary (specials + labels), N labels, K beams.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from torch import nn
from transformers import GenerationMixin, LogitsProcessor, LogitsProcessorList, PreTrainedModel
from transformers import initialization as init
from transformers.modeling_outputs import SequenceClassifierOutput
from transformers.utils import ModelOutput

from hf_attn.layers.checkpointing import CheckpointingLayer
from hf_attn.layers.generation_cache import CACHE_FIELD, cache_argument, cache_field, output_cache
from hf_attn.layers.losses import classification_loss, token_cross_entropy
from hf_attn.layers.masking import masked_softmax
from hf_attn.layers.outputs import output_flags
from hf_attn.layers.rnn import masked_rnn, segmented_rnn
from hf_attn.layers.sequences import label_ids_of_sequence, reverse_padded, shift_tokens_right
from hf_attn.layers.validation import check_token_inputs, embed_inputs
from hf_attn.utils.loading import SafetensorsLoadingMixin

from .configuration_sgm import SgmConfig

# Scores of already-emitted labels in the global embedding's y_{t−1}: finite (the original's value), so that a row
# whose every label was emitted still gives a distribution (uniform), not NaN, after division by τ.
EMITTED_SCORE = -1e7


# ---------------------------------------------------------------------------------------------------------------
# Outputs
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class SgmEncoderOutput(ModelOutput):
    """The encoder's reading of the source.

    Args:
        last_hidden_state (`(B, S, C)`): h_i (eq. 2), in natural token order, zero at padding.
        decoder_initial_hidden / decoder_initial_cell (`(B, L, H)`): s_0 for each decoder layer (batch first, so
            that generation expands and reorders them with the other encoder outputs).
    """

    last_hidden_state: torch.Tensor | None = None
    decoder_initial_hidden: torch.Tensor | None = None
    decoder_initial_cell: torch.Tensor | None = None


@dataclass
class SgmModelOutput(ModelOutput):
    """Teacher-forced (or cached, step-by-step) decoding.

    Args:
        logits (`(B, T, V)`): o_t, the raw label scores (eq. 6); the repeat mask I_t is applied by generation.
        last_hidden_state (`(B, T, H)`): the decoder's read-out before the label projection.
        cross_attentions (`(B, T, S)`): α_ti, step t's attention over the source tokens (eq. 3–4).
        past_key_values ([`SgmCache`]): the decoder state after the last step.
        encoder_last_hidden_state (`(B, S, C)`): h_i.
        decoder_hidden_states / encoder_hidden_states (`tuple(torch.Tensor)`, *optional*): with
            `output_hidden_states=True`, `(read-outs,)` and `(h_i,)`.
    """

    logits: torch.Tensor | None = None
    last_hidden_state: torch.Tensor | None = None
    cross_attentions: torch.Tensor | None = None
    # The generation cache, under the installed transformers' name (`hf_attn.layers.generation_cache`): a field
    # named `past_key_values` makes transformers ≥ 5.24 warn on every output built.
    if CACHE_FIELD == "cache":
        cache: SgmCache | None = None
    else:
        past_key_values: SgmCache | None = None
    encoder_last_hidden_state: torch.Tensor | None = None
    decoder_hidden_states: tuple[torch.Tensor, ...] | None = None
    encoder_hidden_states: tuple[torch.Tensor, ...] | None = None


@dataclass
class SgmGenerationOutput(ModelOutput):
    """[`SgmForMultiLabelGeneration`]'s output: `loss` (cross-entropy of the label sequence) first, for `Trainer`.
    `cross_attentions` (α_ti, `(B, T, S)`) is the paper's map and always returned; `decoder_attentions` is always
    `None` (the decoder has no self-attention; the field is what generation reads). With `output_hidden_states=True`,
    `decoder_hidden_states` is `(read-outs (B, T, H),)` and `encoder_hidden_states` is `(h_i (B, S, C),)`."""

    loss: torch.Tensor | None = None
    logits: torch.Tensor | None = None
    cross_attentions: torch.Tensor | None = None
    decoder_attentions: torch.Tensor | None = None
    # The generation cache, under the installed transformers' name (`hf_attn.layers.generation_cache`): a field
    # named `past_key_values` makes transformers ≥ 5.24 warn on every output built.
    if CACHE_FIELD == "cache":
        cache: SgmCache | None = None
    else:
        past_key_values: SgmCache | None = None
    decoder_hidden_states: tuple[torch.Tensor, ...] | None = None
    encoder_last_hidden_state: torch.Tensor | None = None
    encoder_hidden_states: tuple[torch.Tensor, ...] | None = None


# ---------------------------------------------------------------------------------------------------------------
# Decoder state (the generation cache) and the repeat mask
# ---------------------------------------------------------------------------------------------------------------


class SgmCache:
    """`past_key_values` of SGM: the decoder's recurrent state after the steps read so far.

    hidden / cell `(L, B, H)`: the LSTM layers' s_t and cell; context `(B, C)`: c_t (fed at the next step under input
    feeding); logits `(B, V)`: o_t (the next step's global embedding reads it); emitted `(B, V)`: the target ids
    read after the start token (the labels emitted so far, masked in the global embedding's y_t); keys `(B, S, A)`:
    the attention's keys (U_a h_i), computed once per source rather than at every step; length: steps.
    `reorder_cache` keeps the chosen beams.
    """

    def __init__(
        self,
        hidden: torch.Tensor,
        cell: torch.Tensor,
        context: torch.Tensor,
        logits: torch.Tensor | None,
        emitted: torch.Tensor,
        keys: torch.Tensor,
        length: int,
    ) -> None:
        self.hidden, self.cell, self.context = hidden, cell, context
        self.logits, self.emitted, self.keys, self.length = logits, emitted, keys, length

    def get_seq_length(self, layer_idx: int = 0) -> int:
        return self.length

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        self.hidden = self.hidden.index_select(1, beam_idx.to(self.hidden.device))
        self.cell = self.cell.index_select(1, beam_idx.to(self.cell.device))
        self.context = self.context.index_select(0, beam_idx.to(self.context.device))
        self.emitted = self.emitted.index_select(0, beam_idx.to(self.emitted.device))
        self.keys = self.keys.index_select(0, beam_idx.to(self.keys.device))
        if self.logits is not None:
            self.logits = self.logits.index_select(0, beam_idx.to(self.logits.device))

    def __len__(self) -> int:
        return self.hidden.size(0)


class RepeatedLabelLogitsProcessor(LogitsProcessor):
    """I_t of eq. 7: every id generated so far gets −inf, so no label is emitted twice.

    `input_ids` are the decoder's ids, the start token first (it is not masked: it was given, not emitted). Like the
    original's greedy mask, it also masks an emitted special id (EOS included, which matters only when decoding
    continues past EOS).
    """

    def __init__(self, start_positions: int = 1) -> None:
        self.start_positions = start_positions

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        emitted = input_ids[:, self.start_positions :]
        if emitted.numel() == 0:
            return scores
        return scores.scatter(1, emitted, float("-inf"))


# ---------------------------------------------------------------------------------------------------------------
# Building blocks
# ---------------------------------------------------------------------------------------------------------------


class SgmEncoder(CheckpointingLayer):
    """The BiLSTM encoder (eq. 1–2) over the packed source; also hands the decoder its initial state."""

    def __init__(self, config: SgmConfig) -> None:
        super().__init__()
        self.config = config
        self.embeddings = nn.Embedding(config.vocab_size, config.embedding_size)
        self.rnn = nn.LSTM(
            config.embedding_size,
            config.encoder_hidden_size,
            num_layers=config.encoder_layers,
            bidirectional=True,
            batch_first=True,
            dropout=config.hidden_dropout_prob if config.encoder_layers > 1 else 0.0,
        )

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        inputs_embeds: torch.FloatTensor | None = None,
        **kwargs: Any,
    ) -> SgmEncoderOutput:
        config = self.config
        embedded, mask = embed_inputs(
            self.embeddings, input_ids, inputs_embeds, attention_mask, right_padded=True
        )  # x_i, (B, S, E)
        lengths = mask.sum(dim=-1)
        if config.reverse_source:
            embedded = reverse_padded(embedded, lengths)
        if torch.compiler.is_compiling():  # traced (torch.export): the packed run as one graph
            outputs, (final_hidden, final_cell) = masked_rnn(self.rnn, embedded, mask)
        elif embedded.device.type == "cpu":  # the packed run, with a backward linear in S (`layers/rnn.py`)
            outputs, (final_hidden, final_cell) = segmented_rnn(self.rnn, embedded, lengths)
        else:
            packed = nn.utils.rnn.pack_padded_sequence(
                embedded, lengths.clamp(min=1).cpu(), batch_first=True, enforce_sorted=False
            )
            outputs, (final_hidden, final_cell) = self.rnn(packed)
            outputs, _ = nn.utils.rnn.pad_packed_sequence(outputs, batch_first=True, total_length=mask.size(1))
        forward_half, backward_half = outputs.chunk(2, dim=-1)  # (B, S, H_e) each
        if config.merge_directions == "sum":
            outputs = forward_half + backward_half
        outputs = outputs * (lengths > 0)[:, None, None].to(outputs.dtype)  # an all-padding row reads nothing
        if config.reverse_source:
            outputs = reverse_padded(outputs, lengths)
        initial_hidden, initial_cell = self._decoder_initial_state(final_hidden, final_cell)
        return SgmEncoderOutput(
            last_hidden_state=outputs, decoder_initial_hidden=initial_hidden, decoder_initial_cell=initial_cell
        )

    def _decoder_initial_state(
        self, final_hidden: torch.Tensor, final_cell: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """s_0 per decoder layer `(B, L, H)` from the final states `(2·L, B, H_e)` (layer-major, forward first)."""
        config = self.config
        if config.decoder_initial_state == "zeros":
            batch_size = final_hidden.size(1)
            zeros = final_hidden.new_zeros(batch_size, config.decoder_layers, config.decoder_hidden_size)
            return zeros, zeros
        states = []
        for final in (final_hidden, final_cell):
            if config.decoder_initial_state == "forward_final":
                state = final[0::2]
            else:
                state = torch.cat([final[0::2], final[1::2]], dim=-1)
            states.append(state.transpose(0, 1))
        return states[0], states[1]


class SgmAdditiveAttention(nn.Module):
    """Eq. 3–4: e_ti = vᵀ tanh(W_a s_t + U_a h_i), α_t = softmax(e_t), c_t = Σ_i α_ti h_i; and the read-out of eq. 6,
    tanh(W_d s_t + V_d c_t)."""

    def __init__(self, config: SgmConfig) -> None:
        super().__init__()
        self.query = nn.Linear(config.decoder_hidden_size, config.attention_size, bias=False)  # W_a
        self.key = nn.Linear(config.encoder_output_size, config.attention_size)  # U_a
        self.score = nn.Linear(config.attention_size, 1, bias=False)  # v
        self.readout_state = nn.Linear(config.decoder_hidden_size, config.decoder_hidden_size)  # W_d
        self.readout_context = nn.Linear(config.encoder_output_size, config.decoder_hidden_size, bias=False)  # V_d

    def keys(self, encoder_states: torch.Tensor) -> torch.Tensor:
        """U_a h_i `(B, S, A)`: computed once per source, read at every step."""
        return self.key(encoder_states)

    def forward(
        self, state: torch.Tensor, keys: torch.Tensor, encoder_states: torch.Tensor, mask: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """state `(B, H)`, keys `(B, S, A)`, encoder_states `(B, S, C)`, mask `(B, S)` → (read-out `(B, H)`, context
        `(B, C)`, weights `(B, S)`)."""
        scores = self.score(torch.tanh(keys + self.query(state)[:, None, :])).squeeze(-1)  # (B, S)
        weights = masked_softmax(scores, mask)
        context = torch.bmm(weights[:, None, :], encoder_states).squeeze(1)
        readout = torch.tanh(self.readout_state(state) + self.readout_context(context))
        return readout, context, weights


class SgmLuongGateAttention(nn.Module):
    """The original code's "luong_gate" attention: γ = SELU(W₂ SELU(W₁ s_t)), e_ti = h_iᵀ γ, α_t = softmax(e_t),
    c_t = Σ_i α_ti h_i, read-out SELU(W₄ SELU(W₃ [s_t; c_t])) (state first). Dropout as the original: after each
    SELU and on the raw scores."""

    def __init__(self, config: SgmConfig) -> None:
        super().__init__()
        size = config.decoder_hidden_size
        self.query_1 = nn.Linear(size, size)
        self.query_2 = nn.Linear(size, size)
        self.readout_1 = nn.Linear(size + config.encoder_output_size, size)
        self.readout_2 = nn.Linear(size, size)
        self.activation = nn.SELU()
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def keys(self, encoder_states: torch.Tensor) -> torch.Tensor:
        return encoder_states

    def forward(
        self, state: torch.Tensor, keys: torch.Tensor, encoder_states: torch.Tensor, mask: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        gamma = self.dropout(self.activation(self.query_1(state)))
        gamma = self.dropout(self.activation(self.query_2(gamma)))
        scores = self.dropout(torch.bmm(encoder_states, gamma[:, :, None]).squeeze(-1))  # (B, S)
        weights = masked_softmax(scores, mask)
        context = torch.bmm(weights[:, None, :], encoder_states).squeeze(1)
        readout = self.dropout(self.activation(self.readout_1(torch.cat([state, context], dim=-1))))
        readout = self.dropout(self.activation(self.readout_2(readout)))
        return readout, context, weights


def check_decoder_mask(
    decoder_attention_mask: torch.Tensor | None, decoder_input_ids: torch.Tensor, cache: SgmCache | None
) -> None:
    """Refuses a `decoder_attention_mask` that does not fit `decoder_input_ids` `(B, T)`: B rows and T columns, or
    past + T columns after `cache` steps (transformers' generation passes the whole mask with only the new ids)."""
    if decoder_attention_mask is None:
        return
    batch_size, steps = decoder_input_ids.shape
    past = cache.length if cache is not None else 0
    allowed = sorted({steps, past + steps})
    if (
        decoder_attention_mask.dim() != 2
        or decoder_attention_mask.size(0) != batch_size
        or (decoder_attention_mask.size(1) not in allowed)
    ):
        columns = " or ".join(str(count) for count in allowed)
        raise ValueError(
            f"`decoder_attention_mask` must have shape (batch, steps) = ({batch_size}, {columns}) to fit "
            f"`decoder_input_ids` of shape {tuple(decoder_input_ids.shape)}"
            + (f" after {past} cached steps" if past else "")
            + f"; got {tuple(decoder_attention_mask.shape)}."
        )


class SgmGlobalEmbedding(nn.Module):
    """§2.3, eq. 8–9: ē = Σ_i y_{t−1}^(i) e_i, H = σ(W_1 e + W_2 ē); the decoder's label input is g = (1 − H) ⊙ e +
    H ⊙ ē (paper) or [e; H ⊙ e + (1 − H) ⊙ ē] (original)."""

    def __init__(self, config: SgmConfig) -> None:
        super().__init__()
        self.config = config
        self.gate_label = nn.Linear(config.embedding_size, config.embedding_size)  # W_1
        self.gate_average = nn.Linear(config.embedding_size, config.embedding_size)  # W_2

    def forward(
        self,
        embedding: torch.Tensor,
        label_embeddings: torch.Tensor,
        previous_logits: torch.Tensor | None,
        emitted: torch.Tensor,
    ) -> torch.Tensor:
        """embedding `(B, E)` (e, the argmax label's), label_embeddings `(V, E)`, previous_logits `(B, V)` (o_{t−1};
        `None` at the first step: uniform), emitted `(B, V)` → the LSTM's label input `(B, E)` or `(B, 2E)`."""
        config = self.config
        if previous_logits is None or config.global_embedding_source == "uniform":
            scores = embedding.new_zeros(embedding.size(0), label_embeddings.size(0))
        elif config.global_embedding_source == "masked":
            # In float32: EMITTED_SCORE (the original's) is past float16's range.
            scores = previous_logits.float().masked_fill(emitted, EMITTED_SCORE)
        else:
            scores = previous_logits
        probabilities = torch.softmax(scores / config.global_embedding_tau, dim=-1)  # y_{t−1}
        probabilities = probabilities.to(label_embeddings.dtype)  # back from float32 (the masked scores)
        average = probabilities @ label_embeddings  # ē
        gate = torch.sigmoid(self.gate_label(embedding) + self.gate_average(average))  # H
        if config.global_embedding_gate == "paper":
            return (1 - gate) * embedding + gate * average
        return torch.cat([embedding, gate * embedding + (1 - gate) * average], dim=-1)


class SgmDecoder(nn.Module):
    """The attention LSTM decoder (eq. 5–6) with the label projection W_o, one step at a time."""

    def __init__(self, config: SgmConfig) -> None:
        super().__init__()
        self.config = config
        self.embeddings = nn.Embedding(config.target_vocab_size, config.embedding_size)
        self.global_embedding = SgmGlobalEmbedding(config) if config.global_embedding else None
        label_input = config.embedding_size * (
            2 if config.global_embedding and config.global_embedding_gate == "original" else 1
        )
        input_size = label_input + (config.encoder_output_size if config.input_feeding else 0)
        self.layers = nn.ModuleList(
            nn.LSTMCell(input_size if index == 0 else config.decoder_hidden_size, config.decoder_hidden_size)
            for index in range(config.decoder_layers)
        )
        attention_class = SgmLuongGateAttention if config.attention_type == "luong_gate" else SgmAdditiveAttention
        self.attention = attention_class(config)
        self.label_projection = nn.Linear(config.decoder_hidden_size, config.target_vocab_size)  # W_o
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def initial_cache(self, encoder_outputs: SgmEncoderOutput) -> SgmCache:
        hidden = encoder_outputs.decoder_initial_hidden.transpose(0, 1).contiguous()  # (L, B, H)
        cell = encoder_outputs.decoder_initial_cell.transpose(0, 1).contiguous()
        states = encoder_outputs.last_hidden_state
        batch_size = states.size(0)
        context = states.new_zeros(batch_size, self.config.encoder_output_size)
        emitted = torch.zeros(batch_size, self.config.target_vocab_size, dtype=torch.bool, device=states.device)
        return SgmCache(hidden, cell, context, None, emitted, self.attention.keys(states), 0)

    def forward(
        self,
        decoder_input_ids: torch.LongTensor,
        encoder_outputs: SgmEncoderOutput,
        source_mask: torch.Tensor,
        cache: SgmCache | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, SgmCache]:
        """Runs the steps of `decoder_input_ids` `(B, T)` (y_{t−1}: the start token, then labels) from `cache` (a
        fresh state when `None`). Returns logits `(B, T, V)`, read-outs `(B, T, H)`, attentions `(B, T, S)` and the
        state after the last step. The state is not modified in place (generation may still hold it)."""
        config = self.config
        if cache is None:
            cache = self.initial_cache(encoder_outputs)
        states, keys = encoder_outputs.last_hidden_state, cache.keys
        mask = source_mask if config.mask_padding else None
        hidden, cell = list(cache.hidden.unbind(0)), list(cache.cell.unbind(0))
        context, previous_logits, emitted = cache.context, cache.logits, cache.emitted
        all_logits, all_readouts, all_weights = [], [], []
        embedded = self.dropout(self.embeddings(decoder_input_ids))  # (B, T, E)
        table = None
        if self.global_embedding is not None:  # every label's e_i as the embedding module gives it (with any adapter)
            table = self.embeddings(torch.arange(config.target_vocab_size, device=decoder_input_ids.device))
        for step in range(decoder_input_ids.size(1)):
            label_input = embedded[:, step]
            if self.global_embedding is not None:
                label_input = self.global_embedding(label_input, table, previous_logits, emitted)
            layer_input = torch.cat([label_input, context], dim=-1) if config.input_feeding else label_input
            for index, layer in enumerate(self.layers):  # eq. 5, a stacked LSTM
                hidden[index], cell[index] = layer(layer_input, (hidden[index], cell[index]))
                layer_input = self.dropout(hidden[index]) if index + 1 < len(self.layers) else hidden[index]
            readout, context, weights = self.attention(hidden[-1], keys, states, mask)
            logits = self.label_projection(self.dropout(readout))  # o_t (eq. 6)
            if cache.length + step > 0:  # the start token is given, not emitted
                emitted = emitted.scatter(1, decoder_input_ids[:, step : step + 1], True)
            previous_logits = logits
            all_logits.append(logits)
            all_readouts.append(readout)
            all_weights.append(weights)
        new_cache = SgmCache(
            torch.stack(hidden),
            torch.stack(cell),
            context,
            previous_logits,
            emitted,
            keys,
            cache.length + len(all_logits),
        )
        return torch.stack(all_logits, 1), torch.stack(all_readouts, 1), torch.stack(all_weights, 1), new_cache


# ---------------------------------------------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------------------------------------------


class SgmPreTrainedModel(SafetensorsLoadingMixin, PreTrainedModel):
    config_class = SgmConfig
    base_model_prefix = "model"
    supports_gradient_checkpointing = True  # per layer or level: its GradientCheckpointingLayer modules
    _no_split_modules: ClassVar[list[str]] = ["SgmEncoder", "SgmDecoder"]

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        """The original's `param_init`: every weight and bias U(−r, r)."""
        if isinstance(module, nn.Linear | nn.Embedding | nn.LSTM | nn.LSTMCell):
            for parameter in module.parameters(recurse=False):
                init.uniform_(parameter, -self.config.initializer_range, self.config.initializer_range)


class SgmModel(SgmPreTrainedModel):
    """Encoder and decoder. The label projection W_o belongs to the decoder: under the global embedding, step t reads
    step t−1's label distribution, so the decoder cannot run without it; the output carries the `logits`."""

    # A dotted path: SafetensorsLoadingMixin's get/set_input_embeddings follow it.
    _input_embed_layer = "encoder.embeddings"

    def __init__(self, config: SgmConfig) -> None:
        super().__init__(config)
        self.encoder = SgmEncoder(config)
        self.decoder = SgmDecoder(config)
        self.post_init()

    def get_encoder(self) -> SgmEncoder:
        return self.encoder

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        decoder_input_ids: torch.LongTensor | None = None,
        decoder_attention_mask: torch.Tensor | None = None,
        encoder_outputs: SgmEncoderOutput | tuple | None = None,
        past_key_values: SgmCache | None = None,
        use_cache: bool | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        cache: SgmCache | None = None,
        inputs_embeds: torch.FloatTensor | None = None,
        **kwargs: Any,
    ) -> SgmModelOutput | tuple:
        r"""
        Args:
            input_ids (`torch.LongTensor` of shape `(B, S)`): source word ids, right-padded, in natural order.
            attention_mask (`torch.Tensor` of shape `(B, S)`, *optional*): 1 for words, 0 for padding.
            decoder_input_ids (`torch.LongTensor` of shape `(B, T)`): the start token, then target ids (labels are
                ids `num_special_tokens + i`); only the new ones when continuing from `past_key_values`.
            decoder_attention_mask (*optional*): checked, not read: the decoder is causal, so padding after a
                sequence's end never changes the steps before it. Its shape must be `(B, T)`, or `(B, past + T)`
                when continuing from `past_key_values` (as generation passes it).
            encoder_outputs ([`SgmEncoderOutput`], *optional*): a precomputed encoder output (generation reuses it).
            past_key_values / cache ([`SgmCache`], *optional*): the decoder state after the steps read before
                (`cache` is transformers ≥ 5.24's name).
        """
        output_attentions, output_hidden_states, return_dict = output_flags(
            self.config, output_attentions, output_hidden_states, return_dict
        )
        past_key_values = cache_argument(past_key_values, cache)
        if encoder_outputs is None:
            encoder_outputs = self.encoder(input_ids, attention_mask, inputs_embeds=inputs_embeds)
        elif not isinstance(encoder_outputs, SgmEncoderOutput):
            encoder_outputs = SgmEncoderOutput(*encoder_outputs)
        states = encoder_outputs.last_hidden_state
        if attention_mask is None:  # every source position is a word
            attention_mask = torch.ones(states.shape[:2], dtype=torch.bool, device=states.device)
        if decoder_input_ids is None:
            raise ValueError("SGM needs `decoder_input_ids` (or `labels`, which are shifted right to make them).")
        check_token_inputs(
            decoder_input_ids, None, self.config.target_vocab_size, name="decoder_input_ids", batch_size=states.size(0)
        )
        check_decoder_mask(decoder_attention_mask, decoder_input_ids, past_key_values)
        logits, readouts, weights, new_cache = self.decoder(
            decoder_input_ids, encoder_outputs, attention_mask.to(torch.bool), past_key_values
        )
        output = SgmModelOutput(
            logits=logits,
            last_hidden_state=readouts,
            cross_attentions=weights,
            **cache_field(new_cache if use_cache else None),
            encoder_last_hidden_state=states,
            decoder_hidden_states=(readouts,) if output_hidden_states else None,
            encoder_hidden_states=(states,) if output_hidden_states else None,
        )
        return output if return_dict else output.to_tuple()


class SgmForMultiLabelGeneration(SgmPreTrainedModel, GenerationMixin):
    """SGM for multi-label classification: the label set as a sequence, trained with teacher forcing (cross-entropy
    of `labels` = [l_1, …, l_k, EOS] in frequency order) and decoded with `generate()` (greedy or beam search, the
    repeat mask I_t as a logits processor). `predict_label_sets` returns label names."""

    accepts_loss_kwargs = True  # the loss divides by `num_items_in_batch` (see `forward`)

    def __init__(self, config: SgmConfig) -> None:
        super().__init__(config)
        self.model = SgmModel(config)
        self.post_init()

    @classmethod
    def _supports_default_dynamic_cache(cls) -> bool:
        return False  # the cache is the LSTM decoder's state (`SgmCache`), not key/value tensors

    def _reorder_cache(self, cache: SgmCache, beam_idx: torch.LongTensor) -> SgmCache:
        cache.reorder_cache(beam_idx)
        return cache

    def get_encoder(self) -> SgmEncoder:
        return self.model.encoder

    def get_output_embeddings(self) -> None:
        """None: the decoder scores labels, not the words of `vocab_size`, so `resize_token_embeddings` (which
        resizes the output layer with the input vocabulary) must leave the label projection alone."""
        return None

    def prepare_decoder_input_ids_from_labels(self, labels: torch.Tensor) -> torch.Tensor:
        """Decoder inputs from `labels`: the start token, then the labels without the last; −100 → PAD."""
        return shift_tokens_right(labels, self.config.pad_token_id, self.config.decoder_start_token_id)

    def prepare_inputs_for_generation(
        self,
        input_ids: torch.LongTensor,
        past_key_values: SgmCache | None = None,
        attention_mask: torch.Tensor | None = None,
        encoder_outputs: SgmEncoderOutput | None = None,
        use_cache: bool | None = None,
        cache: SgmCache | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        """`input_ids` are the decoder's ids so far; with a cache only the unread ones are fed."""
        cache = cache_argument(past_key_values, cache)
        if cache is not None:
            input_ids = input_ids[:, cache.get_seq_length() :]
        return {
            "decoder_input_ids": input_ids,
            "encoder_outputs": encoder_outputs,
            "attention_mask": attention_mask,
            **cache_field(cache),
            "use_cache": use_cache,
        }

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        decoder_input_ids: torch.LongTensor | None = None,
        decoder_attention_mask: torch.Tensor | None = None,
        encoder_outputs: SgmEncoderOutput | tuple | None = None,
        past_key_values: SgmCache | None = None,
        labels: torch.LongTensor | None = None,
        use_cache: bool | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        num_items_in_batch: int | torch.Tensor | None = None,
        cache: SgmCache | None = None,
        inputs_embeds: torch.FloatTensor | None = None,
        **kwargs: Any,
    ) -> SgmGenerationOutput | tuple:
        r"""
        Args:
            labels (`torch.LongTensor` of shape `(B, T)`, *optional*): target ids [l_1, …, l_k, EOS], −100 (or PAD)
                after the end; without `decoder_input_ids` they are shifted right to make them.
            num_items_in_batch (*optional*): target tokens in the whole (accumulated) batch, passed by `Trainer`.
        """
        output_attentions, output_hidden_states, return_dict = output_flags(
            self.config, output_attentions, output_hidden_states, return_dict
        )
        if labels is not None:
            labels = labels.masked_fill(labels == self.config.pad_token_id, -100)
            if decoder_input_ids is None:
                decoder_input_ids = self.prepare_decoder_input_ids_from_labels(labels)
        if use_cache is None:
            use_cache = self.config.use_cache and not self.training
        outputs = self.model(
            input_ids,
            attention_mask=attention_mask,
            decoder_input_ids=decoder_input_ids,
            decoder_attention_mask=decoder_attention_mask,
            encoder_outputs=encoder_outputs,
            cache=cache_argument(past_key_values, cache),
            use_cache=use_cache,
            output_hidden_states=output_hidden_states,
            return_dict=True,
            inputs_embeds=inputs_embeds,
        )
        loss = None
        if labels is not None:
            loss = token_cross_entropy(outputs.logits, labels, num_items_in_batch)
        output = SgmGenerationOutput(
            loss=loss,
            logits=outputs.logits,
            cross_attentions=outputs.cross_attentions,
            **cache_field(output_cache(outputs)),
            decoder_hidden_states=outputs.decoder_hidden_states,
            encoder_last_hidden_state=outputs.encoder_last_hidden_state,
            encoder_hidden_states=outputs.encoder_hidden_states,
        )
        return output if return_dict else output.to_tuple()

    def generate(
        self,
        inputs: torch.Tensor | None = None,
        generation_config: Any = None,
        logits_processor: LogitsProcessorList | None = None,
        mask_repeated_labels: bool | None = None,
        **kwargs: Any,
    ) -> Any:
        """`GenerationMixin.generate`, with the repeat mask I_t (eq. 7) added as a logits processor when
        `mask_repeated_labels` (default: `config.mask_repeated_labels`). Pass
        `custom_generate=sgm_original_beam_search` for the original code's beam search."""
        mask = self.config.mask_repeated_labels if mask_repeated_labels is None else mask_repeated_labels
        if mask:
            logits_processor = LogitsProcessorList([*(logits_processor or []), RepeatedLabelLogitsProcessor()])
        return super().generate(inputs, generation_config, logits_processor, **kwargs)

    def decode_label_sets(self, sequences: torch.Tensor | list[list[int]]) -> list[list[str]]:
        """Generated target ids → label names: the ids after the start token up to the first EOS, specials and
        repeats dropped, in emission order."""
        sequences = sequences.tolist() if isinstance(sequences, torch.Tensor) else sequences
        return [
            [self.config.id2label[index] for index in label_ids_of_sequence(sequence, self.config)]
            for sequence in sequences
        ]

    @torch.no_grad()
    def predict_label_sets(
        self, input_ids: torch.LongTensor, attention_mask: torch.Tensor | None = None, **generate_kwargs: Any
    ) -> list[list[str]]:
        """The predicted label names of each text (`generate()` with `generate_kwargs`, then `decode_label_sets`)."""
        sequences = self.generate(input_ids=input_ids, attention_mask=attention_mask, **generate_kwargs)
        if not isinstance(sequences, torch.Tensor):
            sequences = sequences.sequences
        return self.decode_label_sets(sequences)


class SgmForMultiLabelClassification(SgmPreTrainedModel):
    """The binary-relevance baseline of the paper's comparison (BR, §3.2): SGM's BiLSTM encoder, masked max-pooling
    over the words, and one sigmoid per label (`problem_type="multi_label_classification"`)."""

    # A dotted path: SafetensorsLoadingMixin's get/set_input_embeddings follow it.
    _input_embed_layer = "encoder.embeddings"

    def __init__(self, config: SgmConfig) -> None:
        config.problem_type = "multi_label_classification"
        config.is_encoder_decoder = False  # the classifier reads the encoder alone (no decoder inputs, no generation)
        super().__init__(config)
        self.encoder = SgmEncoder(config)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.classifier = nn.Linear(config.encoder_output_size, config.num_labels)
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
        **kwargs: Any,
    ) -> SequenceClassifierOutput | tuple:
        r"""
        Args:
            labels (`torch.Tensor` of shape `(B, N)`, *optional*): multi-hot label indicators.
            output_attentions (`bool`, *optional*): accepted as every head does; this baseline has no attention.
            output_hidden_states (`bool`, *optional*): return `(h_i (B, S, C), pooled (B, C))`.
        """
        output_attentions, output_hidden_states, return_dict = output_flags(
            self.config, output_attentions, output_hidden_states, return_dict
        )
        states = self.encoder(input_ids, attention_mask, inputs_embeds=inputs_embeds).last_hidden_state  # (B, S, C)
        mask = torch.ones(states.shape[:2], dtype=torch.bool, device=states.device)
        mask = mask if attention_mask is None else attention_mask.to(torch.bool)  # checked by the encoder
        pooled = states.masked_fill(~mask[:, :, None], torch.finfo(states.dtype).min).amax(dim=1)
        pooled = torch.where(mask.any(dim=1, keepdim=True), pooled, torch.zeros_like(pooled))  # all-padding: 0
        logits = self.classifier(self.dropout(pooled))
        loss = classification_loss(self.config, logits, labels.float()) if labels is not None else None
        output = SequenceClassifierOutput(
            loss=loss, logits=logits, hidden_states=(states, pooled) if output_hidden_states else None
        )
        return output if return_dict else output.to_tuple()


__all__ = [
    "RepeatedLabelLogitsProcessor",
    "SgmCache",
    "SgmForMultiLabelClassification",
    "SgmForMultiLabelGeneration",
    "SgmModel",
    "SgmPreTrainedModel",
    "label_ids_of_sequence",
]
