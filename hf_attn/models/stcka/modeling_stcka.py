"""Deep Short Text Classification with Knowledge Powered Attention (STCKA).

Jindong Chen, Yizhou Hu, Jingping Liu, Yanghua Xiao, Haiyun Jiang. AAAI 2019. arXiv:1902.08050.
No official code; the most used unofficial code: https://github.com/AIRobotZhang/STCKA

A short text is too short to classify from its words alone; its entities' concepts (from a knowledge base: "apple"
isA company, fruit) carry the missing knowledge. Short-text encoder (§3.3): a BiLSTM reads the words into H (n × 2u),
scaled dot-product self-attention with Q = K = V = H, A = softmax(Q Kᵀ / √(2u)) V, and a max-pool over time gives
q ∈ R^{2u}. Knowledge encoder (§3.4), over the concept embeddings c_i:
    α_i = softmax_i(w_1ᵀ f(W_1 [c_i; q] + b_1))          C-ST attention: concepts towards the short text (eq. 3)
    β_i = softmax_i(w_2ᵀ f(W_2 c_i + b_2))                C-CS attention: concepts towards the concept set (eq. 4)
    a_i = softmax_i(γ α_i + (1 − γ) β_i)                  (eq. 5), with a soft switch γ (eq. 6)
    p   = Σ_i a_i c_i                                     (eq. 7)
and the classifier reads [q; p] (f = tanh).

What differs from the paper / the code:
- γ: the paper learns it, γ = σ(wᵀ[α; β] + b). A weight vector over the whole [α; β] would tie the model to one
  concept-set size, so the switch is per concept: γ_i = σ(w_α α_i + w_β β_i + b) (`gamma=None`, the default). A float
  `gamma` fixes it, as the code's `gama`.
- b_2 sits inside f, as in the code: outside it, as one reading of eq. 4 has it, it would cancel in the softmax.
- Masks (the default): the BiLSTM is packed, padded tokens are never self-attention keys nor max-pooled, padded
  concepts get zero weight in α, β and a, and an empty concept set gives p = 0. The code has no masks at all
  (`mask_padding=False`: padding ids are ordinary embeddings, the LSTM runs over the padded width, every softmax
  runs over the padded width), so its outputs depend on the batch's padding.
- The double softmax of eq. 5 is kept, in both modes, as the paper writes it and the code computes it.
- Input embedding (§3.2): a word's or concept's word embedding and its character-CNN features, d/2 each by default
  (`char_feature_size`). The paper leaves the CNN open: here UTF-8 bytes embedded, one convolution (window 3, ReLU)
  and a max over the characters, shared by words and concepts. The code has none (`char_feature_size=0`).
- The classifier is one fully connected layer on [q; p] (the code's; the paper's text leaves one or two open).

Shape legend: B batch, T tokens, M concepts, W characters per word, E embedding size (d), U LSTM units per
direction (u), D = 2U, A = d_a, C = d_b, L labels.
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

from hf_attn.layers.losses import classification_loss
from hf_attn.layers.masking import masked_softmax
from hf_attn.layers.outputs import output_flags
from hf_attn.layers.rnn import PackedBiRNN
from hf_attn.layers.validation import check_token_inputs, embed_inputs, value_checks_apply
from hf_attn.utils.loading import SafetensorsLoadingMixin

from .configuration_stcka import StckaConfig

# ---------------------------------------------------------------------------------------------------------------
# Outputs
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class StckaModelOutput(ModelOutput):
    """
    Args:
        last_hidden_state (`torch.FloatTensor` of shape `(B, T, 2U)`): H, the BiLSTM states.
        text_representation (`torch.FloatTensor` of shape `(B, 2U)`): q, the max-pooled self-attention output.
        concept_representation (`torch.FloatTensor` of shape `(B, E)`): p = Σ a_i c_i.
        concept_attentions (`torch.FloatTensor` of shape `(B, M)`): a, the final weight of each concept (eq. 5).
        cst_attentions (`torch.FloatTensor` of shape `(B, M)`): α, concepts towards the short text.
        ccs_attentions (`torch.FloatTensor` of shape `(B, M)`): β, concepts towards the concept set.
        gamma (`torch.FloatTensor` of shape `(B, M)`): γ per concept (the fixed value when `config.gamma` is set).
        self_attentions (`torch.FloatTensor` of shape `(B, T, T)`): the self-attention weights, query × key.
        hidden_states / attentions (`tuple(torch.FloatTensor)`, *optional*): the text embeddings and H, and the
            maps (self-attention, α, β, a), when asked for (the head contract, CONTRIBUTING.md).
    """

    last_hidden_state: torch.FloatTensor | None = None
    text_representation: torch.FloatTensor | None = None
    concept_representation: torch.FloatTensor | None = None
    concept_attentions: torch.FloatTensor | None = None
    cst_attentions: torch.FloatTensor | None = None
    ccs_attentions: torch.FloatTensor | None = None
    gamma: torch.FloatTensor | None = None
    self_attentions: torch.FloatTensor | None = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None
    attentions: tuple[torch.FloatTensor, ...] | None = None


@dataclass
class StckaSequenceClassifierOutput(ModelOutput):
    """
    Args:
        loss (`torch.FloatTensor` of shape `()`, *optional*): the task loss, when `labels` are given.
        logits (`torch.FloatTensor` of shape `(B, L)`): class scores before softmax.
        text_representation, concept_representation, concept_attentions, cst_attentions, ccs_attentions, gamma,
            self_attentions, hidden_states, attentions: as [`StckaModelOutput`].
    """

    loss: torch.FloatTensor | None = None
    logits: torch.FloatTensor | None = None
    text_representation: torch.FloatTensor | None = None
    concept_representation: torch.FloatTensor | None = None
    concept_attentions: torch.FloatTensor | None = None
    cst_attentions: torch.FloatTensor | None = None
    ccs_attentions: torch.FloatTensor | None = None
    gamma: torch.FloatTensor | None = None
    self_attentions: torch.FloatTensor | None = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None
    attentions: tuple[torch.FloatTensor, ...] | None = None


# ---------------------------------------------------------------------------------------------------------------
# Building blocks
# ---------------------------------------------------------------------------------------------------------------


class StckaCharacterFeatures(nn.Module):
    """The character-level features of the input embedding (§3.2): a word's (or concept's) UTF-8 bytes embedded, one
    convolution with ReLU over them, and a max over its characters, `(…, W)` byte ids → `(…, char_feature_size)`.
    A position without characters (padding) gets zeros."""

    def __init__(self, config: StckaConfig) -> None:
        super().__init__()
        self.embeddings = nn.Embedding(config.num_characters, config.char_embedding_size, padding_idx=0)
        self.convolution = nn.Conv1d(
            config.char_embedding_size, config.char_feature_size, config.char_kernel_size,
            padding=config.char_kernel_size // 2,
        )  # fmt: skip

    def forward(self, char_ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        shape = char_ids.shape
        chars = self.embeddings(char_ids.reshape(-1, shape[-1])).transpose(1, 2)  # (N, C_e, W)
        features = torch.relu(self.convolution(chars)).transpose(1, 2)  # (N, W, F)
        flat_mask = mask.reshape(-1, shape[-1], 1).bool()
        features = features.masked_fill(~flat_mask, 0.0)  # ReLU ≥ 0: a max over the masked zeros is exact
        return features.max(dim=1).values.reshape(*shape[:-1], -1)


class StckaTextEncoder(nn.Module):
    """The short-text encoder (§3.3): BiLSTM → H, A = softmax(H Hᵀ/√(2u)) H (Q = K = V = H, eq. 1), q = max_t A_t
    (eq. 2)."""

    def __init__(self, config: StckaConfig) -> None:
        super().__init__()
        self.config = config
        self.lstm = PackedBiRNN(
            nn.LSTM(
                config.embedding_size, config.hidden_size, num_layers=config.num_hidden_layers, batch_first=True,
                bidirectional=True,
            )
        )  # fmt: skip

    def forward(self, embeddings: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """`(B, T, E)`, `(B, T)` bool → H `(B, T, 2U)`, q `(B, 2U)`, the self-attention weights `(B, T, T)`."""
        masked = self.config.mask_padding
        hidden = self.lstm(embeddings, mask, pack=masked)  # H
        scores = torch.bmm(hidden, hidden.transpose(1, 2)) / math.sqrt(hidden.size(-1))  # Q Kᵀ / √(2u)
        weights = masked_softmax(scores, mask[:, None, :] & mask[:, :, None] if masked else None)
        attended = torch.bmm(weights, hidden)  # A, (B, T, 2U)
        if masked:  # max over the real tokens; a text without any pools to 0
            attended = attended.masked_fill(~mask[..., None], torch.finfo(attended.dtype).min)
            pooled = attended.max(dim=1).values.masked_fill(~mask.any(dim=1, keepdim=True), 0.0)
        else:
            pooled = attended.max(dim=1).values
        return hidden, pooled, weights


class StckaKnowledgeEncoder(nn.Module):
    """The knowledge encoder (§3.4): C-ST attention α (eq. 3), C-CS attention β (eq. 4), the soft switch γ (eq. 6),
    a = softmax(γ α + (1 − γ) β) (eq. 5) and p = Σ a_i c_i (eq. 7)."""

    def __init__(self, config: StckaConfig) -> None:
        super().__init__()
        self.config = config
        text_width = 2 * config.hidden_size
        self.cst_projection = nn.Linear(config.embedding_size + text_width, config.cst_attention_size)  # W_1, b_1
        self.cst_context = nn.Linear(config.cst_attention_size, 1, bias=False)  # w_1
        self.ccs_projection = nn.Linear(config.embedding_size, config.ccs_attention_size)  # W_2, b_2
        self.ccs_context = nn.Linear(config.ccs_attention_size, 1, bias=False)  # w_2
        self.switch = nn.Linear(2, 1) if config.gamma is None else None  # γ_i = σ(w_α α_i + w_β β_i + b)

    def forward(self, concepts: torch.Tensor, mask: torch.Tensor, text: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """`concepts (B, M, E)`, `mask (B, M)` bool, `text` q `(B, 2U)` → p `(B, E)`, a, α, β, γ `(B, M)`."""
        concept_mask = mask if self.config.mask_padding else None  # None: the code's softmax over every position
        query = text[:, None, :].expand(-1, concepts.size(1), -1)
        alpha_logits = self.cst_context(torch.tanh(self.cst_projection(torch.cat([concepts, query], -1))))
        beta_logits = self.ccs_context(torch.tanh(self.ccs_projection(concepts)))
        alpha = masked_softmax(alpha_logits.squeeze(-1), concept_mask)  # α, (B, M)
        beta = masked_softmax(beta_logits.squeeze(-1), concept_mask)  # β, (B, M)
        if self.switch is None:
            gamma = torch.full_like(alpha, float(self.config.gamma))
        else:
            gamma = torch.sigmoid(self.switch(torch.stack([alpha, beta], dim=-1))).squeeze(-1)
        weights = masked_softmax(gamma * alpha + (1 - gamma) * beta, concept_mask)  # a: a softmax of softmaxes
        return torch.bmm(weights[:, None, :], concepts).squeeze(1), weights, alpha, beta, gamma


# ---------------------------------------------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------------------------------------------


class StckaPreTrainedModel(SafetensorsLoadingMixin, PreTrainedModel):
    config_class = StckaConfig
    base_model_prefix = "stcka"
    supports_gradient_checkpointing = True  # per layer or level: its GradientCheckpointingLayer modules
    _input_embed_layer = "embeddings"  # transformers' get/set_input_embeddings find them
    _no_split_modules: ClassVar[list[str]] = []

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        """PyTorch's defaults, as the code (which states no initialisation), for the linear layers, the character
        convolution and the LSTM;
        embeddings N(0, initializer_range²) (pre-trained vectors usually replace them), the padding rows zero; the
        switch starts at γ = 0.5 for every concept."""
        if isinstance(module, nn.Linear | nn.Conv1d):
            init.kaiming_uniform_(module.weight, a=math.sqrt(5))
            if module.bias is not None:
                bound = 1 / math.sqrt(module.weight[0].numel())
                init.uniform_(module.bias, -bound, bound)
            if module is getattr(getattr(self, "knowledge_encoder", None), "switch", None):
                init.zeros_(module.weight)
                init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            init.normal_(module.weight, std=self.config.initializer_range)
            if module.padding_idx is not None and not getattr(module.weight, "_is_hf_initialized", False):
                init.zeros_(module.weight[module.padding_idx])
        elif isinstance(module, nn.LSTM):
            bound = 1 / math.sqrt(module.hidden_size)
            for parameter in module.parameters():
                init.uniform_(parameter, -bound, bound)


class StckaModel(StckaPreTrainedModel):
    """Text and concept embeddings → the short-text encoder (q) and the knowledge encoder (p, with α, β, γ, a)."""

    def __init__(self, config: StckaConfig) -> None:
        super().__init__(config)
        padding = {"text": config.pad_token_id, "concept": config.concept_pad_token_id} if config.mask_padding else {}
        word_size = config.embedding_size - config.char_feature_size  # the word embedding's share of d
        self.embeddings = nn.Embedding(config.vocab_size, word_size, padding_idx=padding.get("text"))
        self.concept_embeddings = nn.Embedding(
            config.concept_vocab_size, word_size, padding_idx=padding.get("concept")
        )
        self.characters = StckaCharacterFeatures(config) if config.char_feature_size else None
        self.text_encoder = StckaTextEncoder(config)
        self.knowledge_encoder = StckaKnowledgeEncoder(config)
        if config.freeze_embeddings:
            self.embeddings.weight.requires_grad_(False)
            self.concept_embeddings.weight.requires_grad_(False)
        self.post_init()

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        concept_input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        concept_attention_mask: torch.Tensor | None = None,
        char_input_ids: torch.LongTensor | None = None,
        char_attention_mask: torch.Tensor | None = None,
        concept_char_input_ids: torch.LongTensor | None = None,
        concept_char_attention_mask: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        inputs_embeds: torch.FloatTensor | None = None,
    ) -> StckaModelOutput | tuple:
        r"""
        Args:
            input_ids (`torch.LongTensor` of shape `(B, T)`): text token ids, right-padded.
            concept_input_ids (`torch.LongTensor` of shape `(B, M)`): the ids of each text's concepts (its concept
                set C, from `StckaTokenizerFast`), right-padded; an all-padding row is an empty concept set.
            attention_mask (`torch.Tensor` of shape `(B, T)`, *optional*): 1 for tokens, 0 for padding; every position
                is a token when omitted.
            concept_attention_mask (`torch.Tensor` of shape `(B, M)`, *optional*): 1 for concepts, 0 for padding;
                every position is a concept when omitted.
            char_input_ids / concept_char_input_ids (`torch.LongTensor` of shape `(B, T, W)` / `(B, M, W)`): each
                word's / concept's UTF-8 bytes + 1 (0 pads), from a tokenizer built with `max_word_length`; needed
                when `config.char_feature_size` > 0, ignored otherwise.
            char_attention_mask / concept_char_attention_mask (*optional*): 1 for characters; derived from the ids.
            inputs_embeds (`torch.FloatTensor` of shape `(B, T, E_w)`, *optional*): word embeddings instead of
                `input_ids` (the character features, when the model has them, are still read from `char_input_ids`).
        """
        output_attentions, output_hidden_states, return_dict = output_flags(
            self.config, output_attentions, output_hidden_states, return_dict
        )
        if concept_input_ids is None:
            raise ValueError("`concept_input_ids` is required: STCKA reads each text's concept set.")
        config = self.config
        words, mask = embed_inputs(
            self.embeddings, input_ids, inputs_embeds, attention_mask,
            right_padded=config.mask_padding,
        )  # fmt: skip
        concept_mask = check_token_inputs(
            concept_input_ids, concept_attention_mask, config.concept_vocab_size,
            name="concept_input_ids", batch_size=mask.size(0),
        )  # fmt: skip
        embeddings = self.embed(
            self.embeddings, input_ids, char_input_ids, char_attention_mask, "char_input_ids", words
        )
        hidden, text, self_weights = self.text_encoder(embeddings, mask)  # embeddings (B, T, E)
        concepts = self.embed(
            self.concept_embeddings,
            concept_input_ids,
            concept_char_input_ids,
            concept_char_attention_mask,
            "concept_char_input_ids",
        )  # c_i, (B, M, E)
        knowledge, weights, alpha, beta, gamma = self.knowledge_encoder(concepts, concept_mask, text)
        output = StckaModelOutput(
            last_hidden_state=hidden,
            text_representation=text,
            concept_representation=knowledge,
            concept_attentions=weights,
            cst_attentions=alpha,
            ccs_attentions=beta,
            gamma=gamma,
            self_attentions=self_weights,
            hidden_states=(embeddings, hidden) if output_hidden_states else None,
            attentions=(self_weights, alpha, beta, weights) if output_attentions else None,
        )
        return output if return_dict else output.to_tuple()

    def embed(
        self, table: nn.Embedding, ids: torch.Tensor | None, char_ids: torch.Tensor | None,
        char_mask: torch.Tensor | None, name: str, words: torch.Tensor | None = None,
    ) -> torch.Tensor:  # fmt: skip
        """The input embedding (§3.2): [word embedding; character features] `(…, E)`; `words` are the word
        embeddings when given already (`inputs_embeds`)."""
        words = table(ids) if words is None else words
        if self.characters is None:
            return words
        if char_ids is None:
            raise ValueError(
                f"`{name}` is required: this model has character features (char_feature_size = "
                f"{self.config.char_feature_size}); build its tokenizer with `max_word_length`."
            )
        positions = words.shape[:-1]
        if char_ids.dim() == len(positions) and not char_ids.any():  # a collated batch of words without characters
            char_ids = char_ids[..., None]
            char_mask = char_mask[..., None] if char_mask is not None else None
        if char_ids.shape[:-1] != positions:
            raise ValueError(f"`{name}` must have shape {(*positions, 'chars')}, got {tuple(char_ids.shape)}.")
        if value_checks_apply(char_ids) and (char_ids.min() < 0 or char_ids.max() >= self.config.num_characters):
            raise ValueError(f"`{name}` holds ids outside [0, {self.config.num_characters}) (UTF-8 bytes + 1).")
        char_mask = char_ids != 0 if char_mask is None else char_mask.bool()
        return torch.cat([words, self.characters(char_ids, char_mask)], dim=-1)


class StckaForSequenceClassification(StckaPreTrainedModel):
    """STCKA's classifier (§3.5): logits = W [q; p] + b."""

    def __init__(self, config: StckaConfig) -> None:
        super().__init__(config)
        self.stcka = StckaModel(config)
        self.classifier = nn.Linear(2 * config.hidden_size + config.embedding_size, config.num_labels)
        self.post_init()

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        concept_input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        concept_attention_mask: torch.Tensor | None = None,
        char_input_ids: torch.LongTensor | None = None,
        char_attention_mask: torch.Tensor | None = None,
        concept_char_input_ids: torch.LongTensor | None = None,
        concept_char_attention_mask: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        inputs_embeds: torch.FloatTensor | None = None,
    ) -> StckaSequenceClassifierOutput | tuple:
        r"""
        Args:
            input_ids, concept_input_ids, attention_mask, concept_attention_mask, char_input_ids,
                char_attention_mask, concept_char_input_ids, concept_char_attention_mask: as [`StckaModel`].
            labels (`torch.Tensor` of shape `(B,)` or `(B, L)`, *optional*): class ids (-100: ignored), regression
                targets, or multi-hot vectors, by `config.problem_type`.
        """
        output_attentions, output_hidden_states, return_dict = output_flags(
            self.config, output_attentions, output_hidden_states, return_dict
        )
        encoded = self.stcka(
            input_ids, concept_input_ids, attention_mask, concept_attention_mask, char_input_ids, char_attention_mask,
            concept_char_input_ids, concept_char_attention_mask, output_attentions, output_hidden_states,
            return_dict=True, inputs_embeds=inputs_embeds,
        )  # fmt: skip
        logits = self.classifier(torch.cat([encoded.text_representation, encoded.concept_representation], dim=-1))
        output = StckaSequenceClassifierOutput(
            loss=classification_loss(self.config, logits, labels) if labels is not None else None,
            logits=logits,
            text_representation=encoded.text_representation,
            concept_representation=encoded.concept_representation,
            concept_attentions=encoded.concept_attentions,
            cst_attentions=encoded.cst_attentions,
            ccs_attentions=encoded.ccs_attentions,
            gamma=encoded.gamma,
            self_attentions=encoded.self_attentions,
            hidden_states=encoded.hidden_states,
            attentions=encoded.attentions,
        )
        return output if return_dict else output.to_tuple()


__all__ = ["StckaForSequenceClassification", "StckaModel", "StckaPreTrainedModel"]
