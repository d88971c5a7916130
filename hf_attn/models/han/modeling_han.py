"""Hierarchical Attention Networks for Document Classification.

Zichao Yang, Diyi Yang, Chris Dyer, Xiaodong He, Alex Smola, Eduard Hovy. NAACL 2016. doi:10.18653/v1/N16-1174.
No official code was released.

A document is a sequence of sentences, a sentence a sequence of words. A bidirectional GRU reads the words of each
sentence (eq. 2–4); word attention with a learned context vector u_w pools them into a sentence vector s_i
(eq. 5–7); a bidirectional GRU reads the sentence vectors (eq. 8–10); sentence attention with a context vector u_s
pools them into the document vector v (eq. 9–10); p = softmax(W_c v + b_c) (eq. 11), trained with the negative
log-likelihood of the correct label (eq. 12).

What differs from the paper:
- Padding is excluded exactly at both levels: GRUs run packed over the real words and the real sentences only,
  and padded words / empty sentences get zero attention, so a document's outputs do not depend on its batch.
  An empty document (no word at all) gets a zero document vector and finite logits; its attention rows are zero.
- Speed: every non-empty sentence of the batch goes through ONE packed word-GRU call (the paper batches documents
  of similar size instead); the result is the same as running sentence by sentence.
- Optional dropout (`hidden_dropout_prob`, default 0 like the paper) on embeddings, sentence and document vectors.
- `rnn_type="lstm"` swaps both GRUs for LSTMs (a common variant); the paper's model is the default.

Shape legend: B documents, S sentences, T words per sentence, E embedding size, Hw / Hs GRU units per direction
of the word / sentence encoder, Aw / As attention sizes, L labels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import nn
from transformers import PreTrainedModel
from transformers.utils import ModelOutput

from hf_attn.layers.attention import AdditiveAttentionPooling
from hf_attn.layers.hierarchy import (
    init_hierarchical_attention_weights,
    run_rnn_over_sentences,
    run_rnn_skipping_masked,
)
from hf_attn.layers.losses import classification_loss
from hf_attn.layers.outputs import output_flags
from hf_attn.layers.rnn import PackedBiRNN
from hf_attn.layers.validation import embed_inputs
from hf_attn.utils.loading import SafetensorsLoadingMixin

from .configuration_han import HanConfig

# ---------------------------------------------------------------------------------------------------------------
# Outputs
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class HanModelOutput(ModelOutput):
    """
    Args:
        document_embedding (`torch.FloatTensor` of shape `(B, 2Hs)`): v, the document vector (eq. 10).
        sentence_hidden_states (`torch.FloatTensor` of shape `(B, S, 2Hs)`): h_i, the sentence encoder's states
            (eq. 8; zero at empty sentences).
        sentence_embeddings (`torch.FloatTensor` of shape `(B, S, 2Hw)`): s_i, the sentence vectors (eq. 7).
        word_hidden_states (`torch.FloatTensor` of shape `(B, S, T, 2Hw)`): h_it, the word encoder's states (eq. 4).
        word_attentions (`torch.FloatTensor` of shape `(B, S, T)`): α_it (eq. 6), one distribution over the words
            of each sentence (a zero row for an empty sentence).
        sentence_attentions (`torch.FloatTensor` of shape `(B, S)`): α_i (eq. 9), one distribution over the
            sentences of each document (a zero row for an empty document).
        hidden_states / attentions (`tuple(torch.FloatTensor)`, *optional*): the states (embeddings first) and the maps
            above, when asked for (`output_hidden_states` / `output_attentions`; the head contract, CONTRIBUTING.md).
    """

    document_embedding: torch.FloatTensor | None = None
    sentence_hidden_states: torch.FloatTensor | None = None
    sentence_embeddings: torch.FloatTensor | None = None
    word_hidden_states: torch.FloatTensor | None = None
    word_attentions: torch.FloatTensor | None = None
    sentence_attentions: torch.FloatTensor | None = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None
    attentions: tuple[torch.FloatTensor, ...] | None = None


@dataclass
class HanDocumentClassifierOutput(ModelOutput):
    """
    Args:
        loss (`torch.FloatTensor` of shape `()`, *optional*): the task loss (eq. 12 for single-label problems), when
            `labels` are given.
        logits (`torch.FloatTensor` of shape `(B, L)`): W_c v + b_c, before the softmax of eq. 11.
        document_embedding (`torch.FloatTensor` of shape `(B, 2Hs)`): v.
        word_attentions (`torch.FloatTensor` of shape `(B, S, T)`): α_it.
        sentence_attentions (`torch.FloatTensor` of shape `(B, S)`): α_i.
        hidden_states / attentions (`tuple(torch.FloatTensor)`, *optional*): the states (embeddings first) and the maps
            above, when asked for (`output_hidden_states` / `output_attentions`; the head contract, CONTRIBUTING.md).
    """

    loss: torch.FloatTensor | None = None
    logits: torch.FloatTensor | None = None
    document_embedding: torch.FloatTensor | None = None
    word_attentions: torch.FloatTensor | None = None
    sentence_attentions: torch.FloatTensor | None = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None
    attentions: tuple[torch.FloatTensor, ...] | None = None


# ---------------------------------------------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------------------------------------------


def _bidirectional_rnn(config: HanConfig, input_size: int, hidden_size: int) -> PackedBiRNN:
    rnn_class = nn.GRU if config.rnn_type == "gru" else nn.LSTM
    return PackedBiRNN(rnn_class(input_size, hidden_size, bidirectional=True, batch_first=True))


class HanPreTrainedModel(SafetensorsLoadingMixin, PreTrainedModel):
    config_class = HanConfig
    base_model_prefix = "han"
    supports_gradient_checkpointing = True  # per layer or level: its GradientCheckpointingLayer modules
    _input_embed_layer = "embeddings"  # transformers' get/set_input_embeddings find them
    _no_split_modules: ClassVar[list[str]] = []

    def _init_weights(self, module: nn.Module) -> None:
        """HAN's initialisation (§2.2): U(−initializer_range, initializer_range) for embeddings, projections and
        context vectors, zero biases, PyTorch's RNN init, a zero padding row."""
        init_hierarchical_attention_weights(module, self.config.initializer_range)


class HanModel(HanPreTrainedModel):
    """Word encoder + word attention (eq. 2–7) → sentence encoder + sentence attention (eq. 8–10) → v."""

    def __init__(self, config: HanConfig) -> None:
        super().__init__(config)
        self.embeddings = nn.Embedding(config.vocab_size, config.embedding_size, padding_idx=config.pad_token_id)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.word_encoder = _bidirectional_rnn(config, config.embedding_size, config.word_hidden_size)
        # u_it = tanh(W_w h_it + b_w), α_it = softmax_t(u_itᵀ u_w) (eq. 5–6): one hop, W_w with a bias.
        self.word_attention = AdditiveAttentionPooling(2 * config.word_hidden_size, config.word_attention_size)
        self.sentence_encoder = _bidirectional_rnn(config, 2 * config.word_hidden_size, config.sentence_hidden_size)
        self.sentence_attention = AdditiveAttentionPooling(
            2 * config.sentence_hidden_size, config.sentence_attention_size
        )
        self.post_init()

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        inputs_embeds: torch.FloatTensor | None = None,
    ) -> HanModelOutput | tuple:
        r"""
        Args:
            input_ids (`torch.LongTensor` of shape `(B, S, T)`): word ids of each sentence of each document, as
                `DocumentTokenizerFast` returns them.
            attention_mask (`torch.Tensor` of shape `(B, S, T)`, *optional*): 1 for words, 0 for padding; every
                position is a word when omitted. A sentence without a single word is padding.
            inputs_embeds (`torch.FloatTensor` of shape `(B, S, T, E)`, *optional*): word vectors instead of
                `input_ids`.
        """
        output_attentions, output_hidden_states, return_dict = output_flags(
            self.config, output_attentions, output_hidden_states, return_dict
        )
        embeddings, mask = embed_inputs(
            self.embeddings, input_ids, inputs_embeds, attention_mask,
            "(batch, sentences, words)",
        )  # fmt: skip
        batch, sentences, words = mask.shape
        embeddings = self.dropout(embeddings)  # x_it = W_e w_it (eq. 1), (B, S, T, E)
        word_states = run_rnn_over_sentences(self.word_encoder, embeddings, mask)  # h_it (eq. 2–4), (B, S, T, 2Hw)
        sentence_embeddings, word_attentions = self.word_attention(
            word_states.view(batch * sentences, words, -1), mask.view(batch * sentences, words), map_shape=mask.shape
        )  # s_i = Σ_t α_it h_it (eq. 7): (B·S, 1, 2Hw), α_it: (B, S, T)
        sentence_embeddings = sentence_embeddings.view(batch, sentences, -1)
        sentence_mask = mask.any(dim=-1)  # (B, S)
        sentence_states = run_rnn_skipping_masked(
            self.sentence_encoder, self.dropout(sentence_embeddings), sentence_mask
        )  # h_i (eq. 8), (B, S, 2Hs)
        document, sentence_attentions = self.sentence_attention(
            sentence_states, sentence_mask, map_shape=sentence_mask.shape
        )  # v (eq. 9–10), (B, 1, 2Hs); α_i: (B, S)
        output = HanModelOutput(
            document_embedding=document.squeeze(1),
            sentence_hidden_states=sentence_states,
            sentence_embeddings=sentence_embeddings,
            word_hidden_states=word_states,
            word_attentions=word_attentions,
            sentence_attentions=sentence_attentions,
            # x_it, h_it, h_i: the words' embeddings and states, then the sentences' states.
            hidden_states=(embeddings, word_states, sentence_states) if output_hidden_states else None,
            attentions=(word_attentions, sentence_attentions) if output_attentions else None,
        )
        return output if return_dict else output.to_tuple()


class HanForDocumentClassification(HanPreTrainedModel):
    """The paper's classifier: p = softmax(W_c v + b_c) (eq. 11), loss −Σ_d log p_dj (eq. 12) for single-label
    problems (`problem_type` as in transformers: regression and multi-label also work)."""

    def __init__(self, config: HanConfig) -> None:
        super().__init__(config)
        self.han = HanModel(config)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.classifier = nn.Linear(2 * config.sentence_hidden_size, config.num_labels)
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
    ) -> HanDocumentClassifierOutput | tuple:
        r"""
        Args:
            input_ids (`torch.LongTensor` of shape `(B, S, T)`): word ids per sentence per document.
            attention_mask (`torch.Tensor` of shape `(B, S, T)`, *optional*): 1 for words, 0 for padding.
            labels (`torch.Tensor` of shape `(B,)` or `(B, L)`, *optional*): class ids, regression targets or
                multi-hot vectors, by `config.problem_type`.
        """
        output_attentions, output_hidden_states, return_dict = output_flags(
            self.config, output_attentions, output_hidden_states, return_dict
        )
        encoded = self.han(
            input_ids, attention_mask, output_attentions, output_hidden_states, True, inputs_embeds=inputs_embeds
        )
        logits = self.classifier(self.dropout(encoded.document_embedding))  # (B, L)
        loss = classification_loss(self.config, logits, labels) if labels is not None else None
        output = HanDocumentClassifierOutput(
            loss=loss,
            logits=logits,
            document_embedding=encoded.document_embedding,
            word_attentions=encoded.word_attentions,
            sentence_attentions=encoded.sentence_attentions,
            hidden_states=encoded.hidden_states,
            attentions=encoded.attentions,
        )
        return output if return_dict else output.to_tuple()


__all__ = ["HanForDocumentClassification", "HanModel", "HanPreTrainedModel"]
