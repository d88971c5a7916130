"""A Structured Self-Attentive Sentence Embedding.

Zhouhan Lin, Minwei Feng, Cicero Nogueira dos Santos, Mo Yu, Bing Xiang, Bowen Zhou, Yoshua Bengio.
ICLR 2017. arXiv:1703.03130. Reference PyTorch port: https://github.com/ExplorerFreda/Structured-Self-Attentive-Sentence-Embedding

A bidirectional LSTM reads the sentence into H (n × 2u, eq. 1–3). A two-layer MLP without biases scores every
token r times, A = softmax(W_s2 tanh(W_s1 Hᵀ)) (eq. 6), and the sentence becomes the matrix M = A H (r × 2u, eq. 7).
P = ‖AAᵀ − I‖²_F (eq. 8) pushes the r hops to attend to different tokens.

What differs from the paper / the original code:
- Padding is excluded exactly: the LSTM runs packed and padded tokens get zero attention, so an example's outputs
  do not depend on its batch. The original runs the LSTM over pads and adds −10000 to padded scores;
  `pack_sequences=False` and `attention_mask_value=-10000.0` reproduce that (the converter sets both).
- The penalty is the paper's squared Frobenius norm; the original code's sqrt(‖·‖²_F + 1e-10) is
  `penalty_type="frobenius"`. Examples without a single token get P = 0.
- Dropout sits where the original code puts it: embeddings, between LSTM layers, the attention MLP's input, and
  both layers of the classifier (the paper does not say).
- The pair head implements the gated multiplicative interaction of appendix B (F_h ⊙ F_p); its classifier MLP
  uses tanh like the single-sentence head.
- The annotation scorer looks at each h_t alone (a position-wise MLP), exactly as in the paper.

Shape legend: B batch, T tokens, E embedding size, U LSTM units per direction (u), D = 2U, A attention units (d_a),
R hops (r), F pair-interaction size, C classifier hidden units, L labels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import nn
from transformers import PreTrainedModel
from transformers import initialization as init
from transformers.utils import ModelOutput

from .configuration_lin_self_attentive import LinSelfAttentiveConfig
from .layers_attention import AdditiveAttentionPooling
from .layers_initialization import uniform_init
from .layers_losses import classification_loss
from .layers_outputs import output_flags
from .layers_rnn import PackedBiRNN
from .layers_validation import check_token_inputs, embed_inputs
from .utils_loading import SafetensorsLoadingMixin

# ---------------------------------------------------------------------------------------------------------------
# Outputs
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class LinSelfAttentiveModelOutput(ModelOutput):
    """
    Args:
        last_hidden_state (`torch.FloatTensor` of shape `(B, T, 2U)`): H, the BiLSTM states (zero at pads).
        sentence_embedding (`torch.FloatTensor` of shape `(B, R, 2U)`): M = A H, the sentence embedding matrix.
        hop_attentions (`torch.FloatTensor` of shape `(B, R, T)`): A, one distribution over tokens per hop.
        penalty (`torch.FloatTensor` of shape `(B,)`): P per example (eq. 8, or the original's unsquared norm).
        hidden_states / attentions (`tuple(torch.FloatTensor)`, *optional*): the states (embeddings first) and the maps
            above, when asked for (`output_hidden_states` / `output_attentions`; the head contract, CONTRIBUTING.md).
    """

    last_hidden_state: torch.FloatTensor | None = None
    sentence_embedding: torch.FloatTensor | None = None
    hop_attentions: torch.FloatTensor | None = None
    penalty: torch.FloatTensor | None = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None
    attentions: tuple[torch.FloatTensor, ...] | None = None


@dataclass
class LinSelfAttentiveSequenceClassifierOutput(ModelOutput):
    """
    Args:
        loss (`torch.FloatTensor` of shape `()`, *optional*): task loss + penalty_coefficient · mean P, when
            `labels` are given.
        logits (`torch.FloatTensor` of shape `(B, L)`): class scores before softmax.
        sentence_embedding (`torch.FloatTensor` of shape `(B, R, 2U)`): M.
        hop_attentions (`torch.FloatTensor` of shape `(B, R, T)`): A.
        penalty (`torch.FloatTensor` of shape `(B,)`): P per example.
        hidden_states / attentions (`tuple(torch.FloatTensor)`, *optional*): the states (embeddings first) and the maps
            above, when asked for (`output_hidden_states` / `output_attentions`; the head contract, CONTRIBUTING.md).
    """

    loss: torch.FloatTensor | None = None
    logits: torch.FloatTensor | None = None
    sentence_embedding: torch.FloatTensor | None = None
    hop_attentions: torch.FloatTensor | None = None
    penalty: torch.FloatTensor | None = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None
    attentions: tuple[torch.FloatTensor, ...] | None = None


@dataclass
class LinSelfAttentivePairClassifierOutput(ModelOutput):
    """
    Args:
        loss (`torch.FloatTensor` of shape `()`, *optional*): task loss + penalty_coefficient · (mean P of the first
            sentence + mean P of the second), when `labels` are given.
        logits (`torch.FloatTensor` of shape `(B, L)`): class scores before softmax.
        sentence_embedding (`torch.FloatTensor` of shape `(B, R, 2U)`): M of the first sentence (premise).
        hop_attentions (`torch.FloatTensor` of shape `(B, R, T)`): A of the first sentence.
        penalty (`torch.FloatTensor` of shape `(B,)`): P of the first sentence.
        pair_sentence_embedding (`torch.FloatTensor` of shape `(B, R, 2U)`): M of the second sentence (hypothesis).
        pair_hop_attentions (`torch.FloatTensor` of shape `(B, R, T')`): A of the second sentence.
        pair_penalty (`torch.FloatTensor` of shape `(B,)`): P of the second sentence.
        hidden_states / attentions (`tuple(torch.FloatTensor)`, *optional*): the states (embeddings first) and the maps
            above, when asked for (`output_hidden_states` / `output_attentions`; the head contract, CONTRIBUTING.md).
    """

    loss: torch.FloatTensor | None = None
    logits: torch.FloatTensor | None = None
    sentence_embedding: torch.FloatTensor | None = None
    hop_attentions: torch.FloatTensor | None = None
    penalty: torch.FloatTensor | None = None
    pair_sentence_embedding: torch.FloatTensor | None = None
    pair_hop_attentions: torch.FloatTensor | None = None
    pair_penalty: torch.FloatTensor | None = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None
    attentions: tuple[torch.FloatTensor, ...] | None = None


# ---------------------------------------------------------------------------------------------------------------
# Building blocks
# ---------------------------------------------------------------------------------------------------------------


def annotation_penalty(
    hop_attentions: torch.Tensor, attention_mask: torch.Tensor, penalty_type: str = "squared_frobenius"
) -> torch.Tensor:
    """P = ‖A Aᵀ − I‖²_F per example (eq. 8), shape `(B,)`.

    `penalty_type="frobenius"` gives the original code's sqrt(‖A Aᵀ − I‖²_F + 1e-10) instead. Padded tokens carry
    no attention, so they do not enter A Aᵀ; an example without a single token gets P = 0.

    Args:
        hop_attentions: A, `(B, R, T)`.
        attention_mask: `(B, T)`, true at real tokens.
        penalty_type: `"squared_frobenius"` (paper) or `"frobenius"` (original code).
    """
    gram = torch.bmm(hop_attentions, hop_attentions.transpose(1, 2))  # A Aᵀ, (B, R, R)
    identity = torch.eye(gram.size(-1), dtype=gram.dtype, device=gram.device)
    penalty = (gram - identity).pow(2).sum(dim=(1, 2))
    if penalty_type == "frobenius":
        penalty = torch.sqrt(penalty + 1e-10)
    return penalty * attention_mask.any(dim=-1).to(penalty.dtype)


class LinSelfAttentiveClassificationHead(nn.Module):
    """The paper's MLP classifier on the flattened sentence matrix (§2.1, §4):
    logits = W_2 tanh(W_1 flat(M) + b_1) + b_2.

    Dropout comes before each layer, as in the original code.
    """

    def __init__(self, config: LinSelfAttentiveConfig, input_size: int) -> None:
        super().__init__()
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.dense = nn.Linear(input_size, config.classifier_hidden_size)
        self.out_proj = nn.Linear(config.classifier_hidden_size, config.num_labels)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        hidden = torch.tanh(self.dense(self.dropout(features)))  # (B, C)
        return self.out_proj(self.dropout(hidden))  # (B, L)


class GatedMultiplicativeInteraction(nn.Module):
    """Appendix B: F_h = batched_dot(M_h, W_fh), F_p = batched_dot(M_p, W_fp), F_r = F_h ⊙ F_p.

    `batched_dot` takes the hops as the batch axis: hop r of each sentence matrix is multiplied by its own
    `(2U, F)` slice of the 3-way weight tensors. Returns F_r of shape `(B, R, F)`.
    """

    def __init__(self, config: LinSelfAttentiveConfig) -> None:
        super().__init__()
        shape = (config.attention_hops, 2 * config.hidden_size, config.pair_interaction_size)
        self.premise_factor = nn.Parameter(torch.empty(shape))  # W_fp
        self.hypothesis_factor = nn.Parameter(torch.empty(shape))  # W_fh

    def forward(self, premise_embedding: torch.Tensor, hypothesis_embedding: torch.Tensor) -> torch.Tensor:
        premise_factors = torch.einsum("brd,rdf->brf", premise_embedding, self.premise_factor)  # F_p
        hypothesis_factors = torch.einsum("brd,rdf->brf", hypothesis_embedding, self.hypothesis_factor)  # F_h
        return premise_factors * hypothesis_factors  # F_r


def flatten_sentence_embedding(sentence_embedding: torch.Tensor, flatten_order: str) -> torch.Tensor:
    """`(B, R, D) -> (B, R·D)`: hop-major (row after row of M, the original's `M.view(B, -1)`) or feature-major."""
    if flatten_order == "feature_major":
        sentence_embedding = sentence_embedding.transpose(1, 2)
    return sentence_embedding.reshape(sentence_embedding.size(0), -1)


# ---------------------------------------------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------------------------------------------


class LinSelfAttentivePreTrainedModel(SafetensorsLoadingMixin, PreTrainedModel):
    config_class = LinSelfAttentiveConfig
    base_model_prefix = "lin"
    supports_gradient_checkpointing = True  # per layer or level: its GradientCheckpointingLayer modules
    _input_embed_layer = "embeddings"  # transformers' get/set_input_embeddings find them
    _no_split_modules: ClassVar[list[str]] = []

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        """As the original code: embeddings and linear weights ~ U(−0.1, 0.1), biases 0, the LSTM with PyTorch's
        U(−1/√U, 1/√U); the pair factors ~ U(−1/√(2U), 1/√(2U)). The padding row starts at zero. Deviation:
        W_s2 starts at zero (uniform attention), see below."""
        bound = self.config.initializer_range
        if isinstance(module, nn.Linear | nn.Embedding):
            uniform_init(module, bound)
        elif isinstance(module, nn.RNNBase):
            rnn_bound = 1.0 / math.sqrt(module.hidden_size)
            for parameter in module.parameters():
                init.uniform_(parameter, -rnn_bound, rnn_bound)
        elif isinstance(module, AdditiveAttentionPooling):
            # W_s2 = 0: every hop starts uniform. There the penalty's gradient is the same for every token and
            # vanishes through the softmax, so the task loss shapes the hops before the penalty spreads them
            # (with a random W_s2 the penalty locks hops onto arbitrary tokens first).
            init.zeros_(module.context)
        elif isinstance(module, GatedMultiplicativeInteraction):
            factor_bound = 1.0 / math.sqrt(module.premise_factor.size(1))
            init.uniform_(module.premise_factor, -factor_bound, factor_bound)
            init.uniform_(module.hypothesis_factor, -factor_bound, factor_bound)


class LinSelfAttentiveModel(LinSelfAttentivePreTrainedModel):
    """Embeddings → BiLSTM (H, eq. 1–3) → r-hop self-attention (A, eq. 6) → M = A H (eq. 7), with P (eq. 8)."""

    def __init__(self, config: LinSelfAttentiveConfig) -> None:
        super().__init__(config)
        self.embeddings = nn.Embedding(config.vocab_size, config.embedding_size, padding_idx=config.pad_token_id)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.encoder = PackedBiRNN(
            nn.LSTM(
                config.embedding_size,
                config.hidden_size,
                num_layers=config.num_hidden_layers,
                dropout=config.hidden_dropout_prob if config.num_hidden_layers > 1 else 0.0,
                bidirectional=True,
                batch_first=True,
            )
        )
        # W_s1 (d_a × 2u) and W_s2 (r × d_a), both without biases (eq. 5–6).
        self.attention = AdditiveAttentionPooling(
            2 * config.hidden_size,
            config.attention_hidden_size,
            num_hops=config.attention_hops,
            bias=False,
            dropout=config.hidden_dropout_prob,
            additive_mask_value=config.attention_mask_value,
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
    ) -> LinSelfAttentiveModelOutput | tuple:
        r"""
        Args:
            input_ids (`torch.LongTensor` of shape `(B, T)`): token ids, right-padded.
            attention_mask (`torch.Tensor` of shape `(B, T)`, *optional*): 1 for tokens, 0 for padding; every position
                is a token when omitted.
            inputs_embeds (`torch.FloatTensor` of shape `(B, T, E)`, *optional*): word vectors instead of `input_ids`.
        """
        output_attentions, output_hidden_states, return_dict = output_flags(
            self.config, output_attentions, output_hidden_states, return_dict
        )
        embeddings, mask = embed_inputs(self.embeddings, input_ids, inputs_embeds, attention_mask)
        embeddings = self.dropout(embeddings)  # (B, T, E)
        hidden_states = self.encoder(embeddings, mask, pack=self.config.pack_sequences)  # H, (B, T, 2U)
        sentence_embedding, hop_attentions = self.attention(hidden_states, mask)  # M (B, R, 2U), A (B, R, T)
        penalty = annotation_penalty(hop_attentions, mask, self.config.penalty_type)  # P, (B,)
        output = LinSelfAttentiveModelOutput(
            last_hidden_state=hidden_states,
            sentence_embedding=sentence_embedding,
            hop_attentions=hop_attentions,
            penalty=penalty,
            hidden_states=(embeddings, hidden_states) if output_hidden_states else None,
            attentions=(hop_attentions,) if output_attentions else None,
        )
        return output if return_dict else output.to_tuple()


class LinSelfAttentiveForSequenceClassification(LinSelfAttentivePreTrainedModel):
    """The paper's sentence classifier (Yelp, Age; §4.1–4.2): the MLP head on flat(M).

    Loss = task loss (by `problem_type`) + `penalty_coefficient` · mean_b P_b.
    """

    def __init__(self, config: LinSelfAttentiveConfig) -> None:
        super().__init__(config)
        self.lin = LinSelfAttentiveModel(config)
        self.classifier = LinSelfAttentiveClassificationHead(config, config.attention_hops * 2 * config.hidden_size)
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
    ) -> LinSelfAttentiveSequenceClassifierOutput | tuple:
        r"""
        Args:
            input_ids (`torch.LongTensor` of shape `(B, T)`): token ids, right-padded.
            attention_mask (`torch.Tensor` of shape `(B, T)`, *optional*): 1 for tokens, 0 for padding.
            labels (`torch.Tensor` of shape `(B,)` or `(B, L)`, *optional*): class ids, regression targets, or
                multi-hot vectors, by `config.problem_type`.
        """
        output_attentions, output_hidden_states, return_dict = output_flags(
            self.config, output_attentions, output_hidden_states, return_dict
        )
        encoded = self.lin(
            input_ids, attention_mask, output_attentions, output_hidden_states, True, inputs_embeds=inputs_embeds
        )
        logits = self.classifier(flatten_sentence_embedding(encoded.sentence_embedding, self.config.flatten_order))
        loss = None
        if labels is not None:
            loss = classification_loss(self.config, logits, labels)
            loss = loss + self.config.penalty_coefficient * encoded.penalty.mean()
        output = LinSelfAttentiveSequenceClassifierOutput(
            loss=loss,
            logits=logits,
            sentence_embedding=encoded.sentence_embedding,
            hop_attentions=encoded.hop_attentions,
            penalty=encoded.penalty,
            hidden_states=encoded.hidden_states,
            attentions=encoded.attentions,
        )
        return output if return_dict else output.to_tuple()


class LinSelfAttentiveForPairClassification(LinSelfAttentivePreTrainedModel):
    """Sentence-pair classification (SNLI, appendix B): one shared encoder embeds both sentences, the gated
    multiplicative interaction F_r = F_h ⊙ F_p combines them hop by hop, and the MLP head classifies flat(F_r).

    Inputs follow hf_attn's pair convention: the premise as `input_ids`/`attention_mask`, the hypothesis as
    `pair_input_ids`/`pair_attention_mask`. Loss = task loss + `penalty_coefficient` · (mean P_p + mean P_h).
    """

    def __init__(self, config: LinSelfAttentiveConfig) -> None:
        super().__init__(config)
        self.lin = LinSelfAttentiveModel(config)
        self.interaction = GatedMultiplicativeInteraction(config)
        self.classifier = LinSelfAttentiveClassificationHead(
            config, config.attention_hops * config.pair_interaction_size
        )
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
    ) -> LinSelfAttentivePairClassifierOutput | tuple:
        r"""
        Args:
            input_ids (`torch.LongTensor` of shape `(B, T)`): the premise's token ids, right-padded.
            pair_input_ids (`torch.LongTensor` of shape `(B, T')`): the hypothesis's token ids, right-padded.
            attention_mask (`torch.Tensor` of shape `(B, T)`, *optional*): the premise's mask.
            pair_attention_mask (`torch.Tensor` of shape `(B, T')`, *optional*): the hypothesis's mask.
            labels (`torch.Tensor` of shape `(B,)`, *optional*): class ids (or targets, by `config.problem_type`).
        """
        output_attentions, output_hidden_states, return_dict = output_flags(
            self.config, output_attentions, output_hidden_states, return_dict
        )
        # Checked here so that errors name the pair arguments (the encoder checks again, cheaply).
        vocab_size = self.config.vocab_size
        attention_mask = check_token_inputs(input_ids, attention_mask, vocab_size)
        pair_attention_mask = check_token_inputs(
            pair_input_ids, pair_attention_mask, vocab_size, name="pair_input_ids",
            batch_size=input_ids.size(0),
        )  # fmt: skip
        flags = {"output_attentions": output_attentions, "output_hidden_states": output_hidden_states}
        premise = self.lin(input_ids, attention_mask, **flags, return_dict=True)
        hypothesis = self.lin(pair_input_ids, pair_attention_mask, **flags, return_dict=True)
        interaction = self.interaction(premise.sentence_embedding, hypothesis.sentence_embedding)  # (B, R, F)
        logits = self.classifier(flatten_sentence_embedding(interaction, self.config.flatten_order))
        loss = None
        if labels is not None:
            loss = classification_loss(self.config, logits, labels)
            loss = loss + self.config.penalty_coefficient * (premise.penalty.mean() + hypothesis.penalty.mean())
        output = LinSelfAttentivePairClassifierOutput(
            loss=loss,
            logits=logits,
            sentence_embedding=premise.sentence_embedding,
            hop_attentions=premise.hop_attentions,
            penalty=premise.penalty,
            pair_sentence_embedding=hypothesis.sentence_embedding,
            pair_hop_attentions=hypothesis.hop_attentions,
            pair_penalty=hypothesis.penalty,
            # The premise's, then the hypothesis's.
            hidden_states=premise.hidden_states + hypothesis.hidden_states if output_hidden_states else None,
            attentions=premise.attentions + hypothesis.attentions if output_attentions else None,
        )
        return output if return_dict else output.to_tuple()


__all__ = [
    "LinSelfAttentiveForPairClassification",
    "LinSelfAttentiveForSequenceClassification",
    "LinSelfAttentiveModel",
    "LinSelfAttentivePreTrainedModel",
]
