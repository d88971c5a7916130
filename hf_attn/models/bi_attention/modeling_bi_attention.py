"""Attention-based LSTM Network for Cross-Lingual Sentiment Classification (BI-Attention).

Xinjie Zhou, Xiaojun Wan, Jianguo Xiao. EMNLP 2016. doi:10.18653/v1/D16-1024. No official code was released.

Every document comes in two views (the paper: an English review and its Chinese translation, or a Chinese review
and its English translation). Each view has its own hierarchical encoder:

    words      w_ij (embedding), →h_ij, ←h_ij = bi-LSTM over the words of sentence i
               e_ij = [w_ij; →h_ij; ←h_ij]                         the word representation
               a_ij = softmax_j(FFN_w(e_ij))                        word attention, FFN_w a two-layer net
               s_i  = Σ_j a_ij e_ij                                 the sentence vector
    sentences  →g_i, ←g_i = bi-LSTM over s_1 … s_n
               A_i  = softmax_i(FFN_s([s_i; →g_i; ←g_i]))           sentence attention
    document   r    = Σ_i A_i s_i = Σ_i A_i Σ_j a_ij e_ij

The prediction is softmax(W [r_view1; r_view2] + b), and training minimises L = L1 + α·L2: L1 the cross-entropy
on the labelled pairs, L2 = ‖r_view1 − r_view2‖² on every pair, labelled or not (the bilingual, semi-supervised
term). Unlabelled pairs carry label −100 and ride in the same batches, so `Trainer` trains it unchanged.

What differs from the paper / how it is read here:
- r = Σ_i A_i Σ_j a_ij e_ij pools the word representations themselves (the paper's double sum); the sentence
  bi-LSTM states enter the sentence scores, as the word states enter the word scores.
- Both levels of both views mask padding exactly (packed LSTMs, zero attention on pads); empty sentences and empty
  documents give zero vectors, never NaN. All sentences of a view go through one packed LSTM call.
- L1 averages over the labelled pairs of the batch (0 when a batch has none); L2 averages over all its pairs.

Shape legend: B documents, S sentences, T words per sentence, E embedding size, Hw / Hs LSTM units per direction of
the word / sentence encoder, D = E + 2Hw the word and document representation size, A attention units, L labels.
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

from .configuration_bi_attention import BiAttentionConfig

# ---------------------------------------------------------------------------------------------------------------
# Outputs
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class BiAttentionModelOutput(ModelOutput):
    """
    Args:
        document_embedding (`torch.FloatTensor` of shape `(B, D)`): r of the first view.
        word_attentions (`torch.FloatTensor` of shape `(B, S, T)`): a_ij of the first view.
        sentence_attentions (`torch.FloatTensor` of shape `(B, S)`): A_i of the first view.
        pair_document_embedding (`torch.FloatTensor` of shape `(B, D)`, *optional*): r of the second view.
        pair_word_attentions (`torch.FloatTensor` of shape `(B, S', T')`, *optional*): a_ij of the second view.
        pair_sentence_attentions (`torch.FloatTensor` of shape `(B, S')`, *optional*): A_i of the second view.
        hidden_states / attentions (`tuple(torch.FloatTensor)`, *optional*): the states (embeddings first) and the maps
            above, when asked for (`output_hidden_states` / `output_attentions`; the head contract, CONTRIBUTING.md).
    """

    document_embedding: torch.FloatTensor | None = None
    word_attentions: torch.FloatTensor | None = None
    sentence_attentions: torch.FloatTensor | None = None
    pair_document_embedding: torch.FloatTensor | None = None
    pair_word_attentions: torch.FloatTensor | None = None
    pair_sentence_attentions: torch.FloatTensor | None = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None
    attentions: tuple[torch.FloatTensor, ...] | None = None


@dataclass
class BiAttentionDocumentClassifierOutput(ModelOutput):
    """
    Args:
        loss (`torch.FloatTensor` of shape `()`, *optional*): L = L1 + α·L2, when `labels` are given.
        logits (`torch.FloatTensor` of shape `(B, L)`): W [r_view1; r_view2] + b.
        bilingual_distance (`torch.FloatTensor` of shape `(B,)`): ‖r_view1 − r_view2‖² per pair (L2's terms).
        document_embedding / pair_document_embedding (`torch.FloatTensor` of shape `(B, D)`): r of each view.
        word_attentions / pair_word_attentions (`torch.FloatTensor` of shape `(B, S, T)`): a_ij of each view.
        sentence_attentions / pair_sentence_attentions (`torch.FloatTensor` of shape `(B, S)`): A_i of each view.
        hidden_states / attentions (`tuple(torch.FloatTensor)`, *optional*): the states (embeddings first) and the maps
            above, when asked for (`output_hidden_states` / `output_attentions`; the head contract, CONTRIBUTING.md).
    """

    loss: torch.FloatTensor | None = None
    logits: torch.FloatTensor | None = None
    bilingual_distance: torch.FloatTensor | None = None
    document_embedding: torch.FloatTensor | None = None
    pair_document_embedding: torch.FloatTensor | None = None
    word_attentions: torch.FloatTensor | None = None
    sentence_attentions: torch.FloatTensor | None = None
    pair_word_attentions: torch.FloatTensor | None = None
    pair_sentence_attentions: torch.FloatTensor | None = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None
    attentions: tuple[torch.FloatTensor, ...] | None = None


# ---------------------------------------------------------------------------------------------------------------
# Building blocks
# ---------------------------------------------------------------------------------------------------------------


class BiAttentionDocumentEncoder(nn.Module):
    """One view's hierarchical encoder: words → e_ij, a_ij, s_i; sentences → A_i; document → r (module docstring).

    Returns from `forward(embeddings (B, S, T, E), mask (B, S, T))` (the words' vectors: `self.embeddings` of their
    ids, or `inputs_embeds`): `(r (B, D), a (B, S, T), A (B, S), the hidden states)`.
    """

    def __init__(self, config: BiAttentionConfig, vocab_size: int) -> None:
        super().__init__()
        representation_size = config.embedding_size + 2 * config.word_hidden_size  # D
        self.embeddings = nn.Embedding(vocab_size, config.embedding_size, padding_idx=config.pad_token_id)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.word_encoder = PackedBiRNN(
            nn.LSTM(config.embedding_size, config.word_hidden_size, bidirectional=True, batch_first=True)
        )
        # FFN_w(e) = vᵀ tanh(W e + b): the additive pooling's scorer is exactly a two-layer feed-forward net (a bias
        # on its output layer would cancel in the softmax).
        self.word_attention = AdditiveAttentionPooling(representation_size, config.attention_size)
        self.sentence_encoder = PackedBiRNN(
            nn.LSTM(representation_size, config.sentence_hidden_size, bidirectional=True, batch_first=True)
        )
        self.sentence_attention = AdditiveAttentionPooling(
            representation_size + 2 * config.sentence_hidden_size, config.attention_size
        )

    def forward(self, embeddings: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, ...]:
        batch, sentences, words = mask.shape
        embeddings = self.dropout(embeddings)  # w_ij, (B, S, T, E)
        word_states = run_rnn_over_sentences(self.word_encoder, embeddings, mask)  # [→h; ←h], (B, S, T, 2Hw)
        # e_ij = [w_ij; →h_ij; ←h_ij]; padded words get zero attention, so they add nothing to s_i.
        flat_words = torch.cat([embeddings, word_states], dim=-1).view(batch * sentences, words, -1)
        # a_ij and s_i = Σ_j a_ij e_ij: (B·S, 1, D), (B, S, T)
        sentence_vectors, word_attentions = self.word_attention(
            flat_words, mask.view(batch * sentences, words), map_shape=mask.shape
        )
        sentence_vectors = sentence_vectors.view(batch, sentences, -1)  # (B, S, D)
        sentence_mask = mask.any(dim=-1)  # (B, S)
        sentence_states = run_rnn_skipping_masked(self.sentence_encoder, sentence_vectors, sentence_mask)
        scored = torch.cat([sentence_vectors, sentence_states], dim=-1)  # [s_i; →g_i; ←g_i], (B, S, D + 2Hs)
        # A_i from [s_i; →g_i; ←g_i], pooling s_i alone: r = Σ_i A_i s_i, (B, 1, D), A: (B, S)
        document, sentence_attentions = self.sentence_attention(
            scored, sentence_mask, values=sentence_vectors, map_shape=sentence_mask.shape
        )
        return document.squeeze(1), word_attentions, sentence_attentions, (embeddings, word_states, sentence_states)


# ---------------------------------------------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------------------------------------------


class BiAttentionPreTrainedModel(SafetensorsLoadingMixin, PreTrainedModel):
    config_class = BiAttentionConfig
    base_model_prefix = "bi_attention"
    supports_gradient_checkpointing = True  # per layer or level: its GradientCheckpointingLayer modules
    _no_split_modules: ClassVar[list[str]] = []

    def _init_weights(self, module: nn.Module) -> None:
        """HAN's initialisation (§2.2): U(−initializer_range, initializer_range) for embeddings, projections and
        context vectors, zero biases, PyTorch's RNN init, a zero padding row."""
        init_hierarchical_attention_weights(module, self.config.initializer_range)


class BiAttentionModel(BiAttentionPreTrainedModel):
    """The two views' hierarchical encoders. The second view is optional here (its outputs are then `None`)."""

    _input_embed_layer = "encoder.embeddings"  # the first view's word embedding

    def __init__(self, config: BiAttentionConfig) -> None:
        super().__init__(config)
        self.encoder = BiAttentionDocumentEncoder(config, config.vocab_size)
        self.pair_encoder = BiAttentionDocumentEncoder(config, config.pair_vocab_size)
        self.post_init()

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        pair_input_ids: torch.LongTensor | None = None,
        pair_attention_mask: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        inputs_embeds: torch.FloatTensor | None = None,
        pair_inputs_embeds: torch.FloatTensor | None = None,
    ) -> BiAttentionModelOutput | tuple:
        r"""
        Args:
            input_ids (`torch.LongTensor` of shape `(B, S, T)`): the first view's word ids per sentence.
            attention_mask (`torch.Tensor` of shape `(B, S, T)`, *optional*): 1 for words, 0 for padding.
            pair_input_ids (`torch.LongTensor` of shape `(B, S', T')`, *optional*): the second view's word ids.
            pair_attention_mask (`torch.Tensor` of shape `(B, S', T')`, *optional*): its mask.
            inputs_embeds / pair_inputs_embeds (`torch.FloatTensor` of shape `(B, S, T, E)`, *optional*): word
                vectors instead of a view's ids.
        """
        output_attentions, output_hidden_states, return_dict = output_flags(
            self.config, output_attentions, output_hidden_states, return_dict
        )
        shape = "(batch, sentences, words)"
        embeddings, mask = embed_inputs(self.encoder.embeddings, input_ids, inputs_embeds, attention_mask, shape)
        document, word_attentions, sentence_attentions, states = self.encoder(embeddings, mask)
        pair_document = pair_word_attentions = pair_sentence_attentions = None
        attentions, pair_states = (word_attentions, sentence_attentions), ()
        if pair_input_ids is not None or pair_inputs_embeds is not None:
            pair_embeddings, pair_mask = embed_inputs(
                self.pair_encoder.embeddings, pair_input_ids, pair_inputs_embeds, pair_attention_mask, shape,
                name="pair_input_ids", batch_size=mask.size(0),
            )  # fmt: skip
            pair_document, pair_word_attentions, pair_sentence_attentions, pair_states = self.pair_encoder(
                pair_embeddings, pair_mask
            )
            attentions += (pair_word_attentions, pair_sentence_attentions)
        output = BiAttentionModelOutput(
            document_embedding=document,
            word_attentions=word_attentions,
            sentence_attentions=sentence_attentions,
            pair_document_embedding=pair_document,
            pair_word_attentions=pair_word_attentions,
            pair_sentence_attentions=pair_sentence_attentions,
            # Each view's word embeddings, word states and sentence states; the first view's first.
            hidden_states=states + pair_states if output_hidden_states else None,
            attentions=attentions if output_attentions else None,
        )
        return output if return_dict else output.to_tuple()


class BiAttentionForDocumentClassification(BiAttentionPreTrainedModel):
    """softmax(W [r_view1; r_view2] + b), trained with L = L1 + α·L2 (module docstring).

    Inputs follow hf_attn's pair convention: the first view as `input_ids`/`attention_mask`, the second as
    `pair_input_ids`/`pair_attention_mask`, both `(B, S, T)` documents. Label −100 marks an unlabelled pair.
    """

    def __init__(self, config: BiAttentionConfig) -> None:
        super().__init__(config)
        self.bi_attention = BiAttentionModel(config)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.classifier = nn.Linear(2 * (config.embedding_size + 2 * config.word_hidden_size), config.num_labels)
        self.post_init()

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        pair_input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        pair_attention_mask: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        inputs_embeds: torch.FloatTensor | None = None,
        pair_inputs_embeds: torch.FloatTensor | None = None,
    ) -> BiAttentionDocumentClassifierOutput | tuple:
        r"""
        Args:
            input_ids (`torch.LongTensor` of shape `(B, S, T)`): the first view's word ids.
            pair_input_ids (`torch.LongTensor` of shape `(B, S', T')`): the second view's word ids.
            attention_mask / pair_attention_mask (`torch.Tensor`, *optional*): 1 for words, 0 for padding.
            labels (`torch.Tensor` of shape `(B,)` or `(B, L)`, *optional*): class ids (or targets, by
                `config.problem_type`); −100 marks an unlabelled pair, which enters only the L2 term.
        """
        output_attentions, output_hidden_states, return_dict = output_flags(
            self.config, output_attentions, output_hidden_states, return_dict
        )
        encoded = self.bi_attention(
            input_ids, attention_mask, pair_input_ids, pair_attention_mask, output_attentions, output_hidden_states,
            return_dict=True, inputs_embeds=inputs_embeds, pair_inputs_embeds=pair_inputs_embeds,
        )  # fmt: skip
        view, pair_view = encoded.document_embedding, encoded.pair_document_embedding
        logits = self.classifier(self.dropout(torch.cat([view, pair_view], dim=-1)))  # (B, L)
        distance = (view - pair_view).pow(2).sum(dim=-1)  # ‖r_view1 − r_view2‖², (B,)
        loss = None
        if labels is not None:
            if labels.size(0) != logits.size(0):
                raise ValueError(f"`labels` must have batch size {logits.size(0)}, got shape {tuple(labels.shape)}.")
            labelled = labels != -100 if labels.dim() == 1 else (labels != -100).all(dim=-1)  # (B,)
            supervised = classification_loss(self.config, logits, labels, rows=labelled)  # L1 (0 with none labelled)
            loss = supervised + self.config.bilingual_loss_weight * distance.mean()  # L = L1 + α·L2
        output = BiAttentionDocumentClassifierOutput(
            loss=loss,
            logits=logits,
            bilingual_distance=distance,
            document_embedding=view,
            pair_document_embedding=pair_view,
            word_attentions=encoded.word_attentions,
            sentence_attentions=encoded.sentence_attentions,
            pair_word_attentions=encoded.pair_word_attentions,
            pair_sentence_attentions=encoded.pair_sentence_attentions,
            hidden_states=encoded.hidden_states,
            attentions=encoded.attentions,
        )
        return output if return_dict else output.to_tuple()


__all__ = ["BiAttentionForDocumentClassification", "BiAttentionModel", "BiAttentionPreTrainedModel"]
