"""AttentionXML: Label Tree-based Attention-Aware Deep Model for High-Performance Extreme Multi-Label Text
Classification.

Ronghui You, Zihan Zhang, Ziye Wang, Suyang Dai, Hiroshi Mamitsuka, Shanfeng Zhu. NeurIPS 2019. arXiv:1811.01727.
Original code: https://github.com/yourh/AttentionXML (`deepxml/networks.py`: `AttentionRNN`, `FastAttentionRNN`).

The attention-aware model of §2.4, five layers:
1. word representation: embeddings (300-d GloVe in the paper) with dropout;
2. BiLSTM: ĥ_t = [→h_t; ←h_t] (eq. 1), from a learned initial state shared by all texts (original code);
3. multi-label attention: one query ŵ_j per label, α_tj = exp(ĥ_t · ŵ_j) / Σ_t' exp(ĥ_t' · ŵ_j) (eq. 2) over the
   text's real tokens, m̂_j = Σ_t α_tj ĥ_t (eq. 3);
4. fully connected layers shared by all labels, each Linear → ReLU (eq. 4 applies them label by label);
5. output layer: one score per label, a sigmoid in the loss (binary cross-entropy, eq. 5; no normalisation across
   labels).

A level of the probabilistic label tree (§2.3) is the same network scoring only the nodes it is given: `candidates
(B, C)` label ids, the children of the previous level's top nodes. Its label table has one more row, the padding
candidate (id `num_labels`) that fills unused slots (`config.padding_candidate`), as the original's
`FastAttentionRNN`. Without candidates the model scores every label (flat AttentionXML, or level 1 of the tree).

What differs from the original code (the converter reproduces its outputs exactly on right-padded inputs):
- Masks come from `attention_mask` (every position is a token without one), not from counting non-padding ids; a
  mask that is not right-padded is refused (the original would silently read the wrong tokens).
- An all-padding text gives zero states, an all-zero attention and the logits of a zero context; the original
  crashes (`pack_padded_sequence` refuses length 0).
- Padded candidate slots: the original trains them as negatives; `labels == -100` leaves an entry out of the loss
  (used for padded slots by hf_attn's tree training; 0 still works as in the original).
- Outputs keep the input's width T (the original cuts to the batch's longest text); the extra positions hold
  zero states and zero attention.
- The learned initial state is two parameters, `initial_cell` and `initial_hidden`; the original stores one
  `init_state` whose FIRST half is c0 and second half h0 (fixture quirk 1), which the converter splits.
- A new model trained on data whose label frequencies the config records (`label_frequencies`, written by
  `hf-attn train`) starts its output unit's bias at the log-odds of the mean label frequency, b = log(p̄ / (1 − p̄)),
  as Lin et al. (2017, Focal Loss, §4.1 "Initialization") start a rare class's bias at its prior: with every label
  rare (90 Reuters topics, 1.2 a story, log-odds −4.3) the original's bias of about 0 predicts p = 0.5 everywhere,
  and Adam, which moves a parameter by about its learning rate a step, needs thousands of steps at 1e-3 to bring
  the shared bias there. The original's weights (conversion) and a config without frequencies are unchanged.

Shape legend: B batch, T tokens, E embedding size, H LSTM units per direction, D = 2H, N labels (`num_labels`),
C candidates per text, K labels scored per text (N without candidates, C with them), F shared layer sizes.
"""

from __future__ import annotations

import collections
import itertools
from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from torch import nn
from transformers import PreTrainedModel
from transformers import initialization as init
from transformers.utils import ModelOutput

from hf_attn.layers.losses import multi_label_cross_entropy
from hf_attn.layers.masking import masked_softmax
from hf_attn.layers.outputs import output_flags
from hf_attn.layers.rnn import PackedBiRNN
from hf_attn.layers.validation import check_multi_hot, embed_inputs, value_checks_apply
from hf_attn.utils.loading import SafetensorsLoadingMixin

from .configuration_attention_xml import AttentionXmlConfig


@dataclass
class AttentionXmlModelOutput(ModelOutput):
    """
    Args:
        last_hidden_state (`torch.FloatTensor` of shape `(B, T, D)`): ĥ_t, zero at padded positions.
        hidden_states (`tuple(torch.FloatTensor)`, *optional*): `(embeddings (B, T, E), ĥ (B, T, D))`, when asked.
    """

    last_hidden_state: torch.FloatTensor | None = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None


@dataclass
class AttentionXmlClassifierOutput(ModelOutput):
    """
    Args:
        loss (`torch.FloatTensor` of shape `()`, *optional*): binary cross-entropy over the scored labels.
        logits (`torch.FloatTensor` of shape `(B, K)`): one score per label scored (all labels, or the candidates).
        label_attentions (`torch.FloatTensor` of shape `(B, K, T)`): α of eq. 2, one distribution over the text's
            tokens per label scored (zero on padding).
        candidates (`torch.LongTensor` of shape `(B, C)`, *optional*): the label ids the logits belong to, when the
            model scored candidates.
        hidden_states (`tuple(torch.FloatTensor)`, *optional*): `(embeddings, ĥ, m̂ (B, K, D))`, when asked.
        attentions (`tuple(torch.FloatTensor)`, *optional*): `(label_attentions,)`, when asked.
    """

    loss: torch.FloatTensor | None = None
    logits: torch.FloatTensor | None = None
    label_attentions: torch.FloatTensor | None = None
    candidates: torch.LongTensor | None = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None
    attentions: tuple[torch.FloatTensor, ...] | None = None


class MultiLabelAttention(nn.Module):
    """Eq. 2–3: a query ŵ_j per label row; α = masked softmax over tokens of ĥ · ŵ_j (no scaling, no bias), m̂ = α ĥ.

    `forward(states (B, T, D), mask (B, T), candidates (B, C) | None) -> (m̂ (B, K, D), α (B, K, T))`.
    """

    def __init__(self, num_rows: int, size: int) -> None:
        super().__init__()
        self.label_queries = nn.Parameter(torch.empty(num_rows, size))  # ŵ_j, one row per label

    def forward(
        self, states: torch.Tensor, mask: torch.Tensor, candidates: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if candidates is None:
            scores = torch.einsum("btd,nd->bnt", states, self.label_queries)  # (B, N, T)
        else:
            queries = nn.functional.embedding(candidates, self.label_queries)  # (B, C, D)
            scores = torch.bmm(queries, states.transpose(1, 2))  # (B, C, T)
        weights = masked_softmax(scores, mask[:, None, :])
        return torch.bmm(weights, states), weights


class SharedLabelClassifier(nn.Module):
    """Layers 4–5: Linear → ReLU for each of `linear_sizes`, shared by all labels, then one output unit.

    `forward(m̂ (B, K, D)) -> logits (B, K)`.
    """

    def __init__(self, config: AttentionXmlConfig) -> None:
        super().__init__()
        sizes = [2 * config.hidden_size, *config.linear_sizes]
        self.hidden = nn.ModuleList(nn.Linear(a, b) for a, b in itertools.pairwise(sizes))
        self.output = nn.Linear(sizes[-1], 1)
        self.output.label_output = True  # its bias starts at the labels' prior (`_init_weights`)

    def forward(self, contexts: torch.Tensor) -> torch.Tensor:
        for layer in self.hidden:
            contexts = nn.functional.relu(layer(contexts))
        return self.output(contexts).squeeze(-1)


def label_prior_log_odds(config: AttentionXmlConfig) -> float | None:
    """log(p̄ / (1 − p̄)) for p̄ the mean frequency of a label among the training texts (`config.label_frequencies`,
    `{"examples": n, "counts": [...]}` as `hf-attn train` records it); `None` without them or for another label set
    (a tree level's nodes) than the config's labels."""
    frequencies = getattr(config, "label_frequencies", None)
    if not isinstance(frequencies, dict) or len(frequencies.get("counts", ())) != config.num_labels:
        return None
    examples = frequencies.get("examples") or 0
    if examples <= 0:
        return None
    mean = sum(frequencies["counts"]) / (examples * config.num_labels)
    mean = min(max(mean, 1.0 / (examples + 1)), 1.0 - 1.0 / (examples + 1))  # finite where no label or every one
    return float(torch.logit(torch.tensor(mean, dtype=torch.float64)))


class AttentionXmlPreTrainedModel(SafetensorsLoadingMixin, PreTrainedModel):
    config_class = AttentionXmlConfig
    base_model_prefix = "attention_xml"
    supports_gradient_checkpointing = True  # per layer or level: its GradientCheckpointingLayer modules
    _input_embed_layer = "embeddings"
    _no_split_modules: ClassVar[list[str]] = []

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        """As the original code: the label queries and the shared layers' weights xavier-uniform, the LSTM
        PyTorch's default, the initial state zeros. Deviations: the shared layers' biases start at 0 (the original:
        PyTorch's default uniform), the output unit's bias at the labels' prior where the config records their
        frequencies (module docstring), and the embeddings N(0, 1) with a zero padding row (the original starts
        from GloVe; `--word_vectors` does that here)."""
        if isinstance(module, MultiLabelAttention):
            init.xavier_uniform_(module.label_queries)
        elif isinstance(module, nn.Linear):  # the shared layers, the model's only Linears
            init.xavier_uniform_(module.weight)
            init.zeros_(module.bias)
            # The output unit of a flat model (a tree level scores nodes, whose frequencies the config lacks).
            flat = isinstance(self, AttentionXmlForSequenceClassification) and getattr(module, "label_output", False)
            if flat and (prior := label_prior_log_odds(self.config)) is not None:
                init.constant_(module.bias, prior)
        elif isinstance(module, nn.LSTM):
            bound = 1.0 / module.hidden_size**0.5
            for parameter in module.parameters():
                init.uniform_(parameter, -bound, bound)
        elif isinstance(module, AttentionXmlModel):
            init.zeros_(module.initial_cell)
            init.zeros_(module.initial_hidden)
        elif isinstance(module, nn.Embedding):
            init.normal_(module.weight)
            if module.padding_idx is not None and not getattr(module.weight, "_is_hf_initialized", False):
                init.zeros_(module.weight[module.padding_idx])
        elif isinstance(module, AttentionXmlForLabelTree):  # the children tables, also when built on the meta device
            for level in range(len(module.levels) - 1):
                init.constant_(getattr(module, f"children_{level}"), module.config.tree_level_sizes[level + 1])
            if module.initial_parents is not None:
                module.set_tree(module.initial_parents)


class AttentionXmlModel(AttentionXmlPreTrainedModel):
    """Layers 1–2: embeddings with dropout → BiLSTM from a learned initial state (packed: the backward direction
    starts at each text's last real token) → dropout. Returns ĥ (B, T, D), zero at padding."""

    def __init__(self, config: AttentionXmlConfig) -> None:
        super().__init__(config)
        self.embeddings = nn.Embedding(config.vocab_size, config.embedding_size, padding_idx=config.pad_token_id)
        self.embedding_dropout = nn.Dropout(config.embedding_dropout_prob)
        lstm = nn.LSTM(config.embedding_size, config.hidden_size, config.num_hidden_layers, batch_first=True,
                       bidirectional=True)  # fmt: skip
        self.encoder = PackedBiRNN(lstm)
        # (layers · 2 directions, 1, H) each, in nn.LSTM's order: layer 0 forward, layer 0 backward, layer 1 ...
        self.initial_cell = nn.Parameter(torch.zeros(2 * config.num_hidden_layers, 1, config.hidden_size))
        self.initial_hidden = nn.Parameter(torch.zeros(2 * config.num_hidden_layers, 1, config.hidden_size))
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.post_init()

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        inputs_embeds: torch.FloatTensor | None = None,
        **kwargs: Any,
    ) -> AttentionXmlModelOutput | tuple:
        r"""
        Args:
            input_ids (`torch.LongTensor` of shape `(B, T)`): token ids, right-padded.
            attention_mask (`torch.Tensor` of shape `(B, T)`, *optional*): 1 for tokens, 0 for padding (every position
                is a token when not given).
            inputs_embeds (`torch.FloatTensor` of shape `(B, T, E)`, *optional*): word vectors instead of `input_ids`.
        """
        _, output_hidden_states, return_dict = output_flags(self.config, None, output_hidden_states, return_dict)
        embedded, mask = embed_inputs(self.embeddings, input_ids, inputs_embeds, attention_mask, right_padded=True)
        embedded = self.embedding_dropout(embedded)
        batch = mask.size(0)
        initial_state = (self.initial_hidden.expand(-1, batch, -1), self.initial_cell.expand(-1, batch, -1))
        states = self.encoder(embedded, mask, initial_state=tuple(s.contiguous() for s in initial_state))
        states = self.dropout(states)
        output = AttentionXmlModelOutput(
            last_hidden_state=states, hidden_states=(embedded, states) if output_hidden_states else None
        )
        return output if return_dict else output.to_tuple()


class AttentionXmlForSequenceClassification(AttentionXmlPreTrainedModel):
    """AttentionXML's attention-aware model (layers 1–5): a score per label, or per candidate on a tree level.

    `problem_type="multi_label_classification"`: `labels` are multi-hot `(B, N)` (or `(B, C)` targets of the
    candidates), −100 for entries left out of the loss.
    """

    def __init__(self, config: AttentionXmlConfig) -> None:
        config.problem_type = "multi_label_classification"
        super().__init__(config)
        self.attention_xml = AttentionXmlModel(config)
        self.attention = MultiLabelAttention(config.num_label_rows, 2 * config.hidden_size)
        self.classifier = SharedLabelClassifier(config)
        self.post_init()

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        candidates: torch.LongTensor | None = None,
        labels: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        inputs_embeds: torch.FloatTensor | None = None,
        **kwargs: Any,
    ) -> AttentionXmlClassifierOutput | tuple:
        r"""
        Args:
            input_ids (`torch.LongTensor` of shape `(B, T)`): token ids, right-padded.
            attention_mask (`torch.Tensor` of shape `(B, T)`, *optional*): 1 for tokens, 0 for padding.
            candidates (`torch.LongTensor` of shape `(B, C)`, *optional*): the label ids to score (a tree level:
                ids in `[0, num_labels]`, `num_labels` being the padding candidate when the config has it);
                `None` scores every label.
            labels (`torch.Tensor` of shape `(B, K)`, *optional*): 1 where the label (candidate) applies, 0 where
                not, −100 to leave it out of the loss.
        """
        output_attentions, output_hidden_states, return_dict = output_flags(
            self.config, output_attentions, output_hidden_states, return_dict
        )
        if candidates is not None:
            self._check_candidates(candidates, input_ids if input_ids is not None else inputs_embeds)
        encoded = self.attention_xml(
            input_ids, attention_mask, output_hidden_states=output_hidden_states, return_dict=True,
            inputs_embeds=inputs_embeds,
        )  # fmt: skip
        states = encoded.last_hidden_state
        mask = torch.ones(states.shape[:2], dtype=torch.bool, device=states.device)
        mask = mask if attention_mask is None else attention_mask.to(torch.bool)  # checked by the encoder
        contexts, weights = self.attention(encoded.last_hidden_state, mask, candidates)
        logits = self.classifier(contexts)
        loss = multi_label_cross_entropy(logits, labels) if labels is not None else None
        output = AttentionXmlClassifierOutput(
            loss=loss,
            logits=logits,
            label_attentions=weights,
            candidates=candidates,
            hidden_states=(*encoded.hidden_states, contexts) if output_hidden_states else None,
            attentions=(weights,) if output_attentions else None,
        )
        return output if return_dict else output.to_tuple()

    def _check_candidates(self, candidates: torch.Tensor, input_ids: torch.Tensor) -> None:
        rows = self.config.num_label_rows
        if candidates.dim() != 2 or candidates.size(0) != input_ids.size(0) or candidates.is_floating_point():
            raise ValueError(
                f"`candidates` must be integer label ids of shape (batch, candidates) with the batch of `input_ids` "
                f"({input_ids.size(0)}), got {candidates.dtype} of shape {tuple(candidates.shape)}."
            )
        if (
            value_checks_apply(candidates)
            and candidates.numel()
            and (int(candidates.min()) < 0 or int(candidates.max()) >= rows)
        ):
            raise ValueError(
                f"`candidates` must hold label ids in [0, {rows}) (num_labels {self.config.num_labels}"
                f"{' + the padding candidate' if self.config.padding_candidate else ''}), got ids in "
                f"[{int(candidates.min())}, {int(candidates.max())}]."
            )


@dataclass
class AttentionXmlTreeOutput(ModelOutput):
    """
    Args:
        loss (`torch.FloatTensor` of shape `()`, *optional*): with `labels`, the sum over levels of each level's
            binary cross-entropy on the nodes it scored (see `AttentionXmlForLabelTree.forward`).
        logits (`torch.FloatTensor` of shape `(B, N)`): the logit of each label's path probability (the product of
            the sigmoids down its path, §2.3) for the labels the beam reached; the most negative value for the
            others (their probability is 0 to the model's beam).
        top_labels (`torch.LongTensor` of shape `(B, k)`): the k labels of highest path probability, best first.
        top_scores (`torch.FloatTensor` of shape `(B, k)`): their path probabilities.
        candidates (`torch.LongTensor` of shape `(B, C)`): the labels the last level scored (`num_labels`: a
            padded slot).
        label_attentions (`torch.FloatTensor` of shape `(B, C, T)`): the last level's attention for `candidates`.
        hidden_states (`tuple(torch.FloatTensor)`, *optional*): the last level's `(embeddings, ĥ, m̂)`, when asked.
        attentions (`tuple(torch.FloatTensor)`, *optional*): `(label_attentions,)`, when asked.
    """

    loss: torch.FloatTensor | None = None
    logits: torch.FloatTensor | None = None
    top_labels: torch.LongTensor | None = None
    top_scores: torch.FloatTensor | None = None
    candidates: torch.LongTensor | None = None
    label_attentions: torch.FloatTensor | None = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None
    attentions: tuple[torch.FloatTensor, ...] | None = None


def contiguous_tree(num_labels: int, cluster_size: int, children: int, height: int) -> list[list[int]]:
    """The level sizes of a tree that groups labels by id, for a cascade built before its tree is known: clusters
    of `cluster_size` consecutive labels, then groups of `children` nodes, at most `height` levels above the labels,
    the top level left wide once it has at most `children` nodes (the shape of §2.2's compressed tree). Returns
    `parents` as `AttentionXmlForLabelTree.set_tree` takes them (`parents[d][i]`: node i of level d + 1's parent)."""
    sizes = [num_labels, -(-num_labels // cluster_size)]
    widths = [cluster_size]
    while len(sizes) <= height and sizes[-1] > children:
        sizes.append(-(-sizes[-1] // children))
        widths.append(children)
    return [[node // width for node in range(size)] for size, width in zip(sizes[-2::-1], widths[::-1], strict=True)]


class AttentionXmlForLabelTree(AttentionXmlPreTrainedModel):
    """AttentionXML with its probabilistic label tree (§2.3): one attention-aware network per level, level 0
    scoring every node of the root's children, level d only the children of level d−1's `tree_top_candidates`
    best nodes (the candidate beam); a label's score is the product of the sigmoids down its path.

    The tree lives in `config.tree_level_sizes` / `tree_max_children` and in the `children_<d>` buffers (the
    children of each node of level d, padded with the next level's padding candidate), saved with the weights.
    A config without a tree gets one grouping labels by id (`contiguous_tree`) until `set_tree` gives the real one;
    `training_attention_xml.py` builds the tree from the training data (§2.2) and trains the levels one after
    the other, as the paper does. `labels` give the loss of all levels at once (see `forward`).
    """

    # level 0's word embedding (each level has its own; training starts level d from level d − 1's)
    _input_embed_layer = "levels.0.attention_xml.embeddings"

    def __init__(self, config: AttentionXmlConfig) -> None:
        config.problem_type = "multi_label_classification"
        parents = None
        if not config.tree_level_sizes:
            parents = contiguous_tree(
                config.num_labels, config.tree_cluster_size, config.tree_children, config.tree_height
            )
            config.tree_level_sizes = [max(parents[0]) + 1, *(len(parent) for parent in parents)]
            config.tree_max_children = [max(collections.Counter(parent).values()) for parent in parents]
        super().__init__(config)
        sizes = config.tree_level_sizes
        self.levels = nn.ModuleList(
            AttentionXmlForSequenceClassification(self.level_config(config, level)) for level in range(len(sizes))
        )
        for level, width in enumerate(config.tree_max_children):
            # One extra row: the children of a padded candidate are padded candidates.
            self.register_buffer(f"children_{level}", torch.full((sizes[level] + 1, width), sizes[level + 1]))
        self.initial_parents = parents  # what `_init_weights` fills the tables with (None: a checkpoint's tree)
        self.post_init()
        if parents is not None:  # also without `_init_weights` (transformers may skip it)
            self.set_tree(parents)

    def resize_token_embeddings(
        self, new_num_tokens: int | None = None, pad_to_multiple_of: int | None = None, mean_resizing: bool = True
    ) -> nn.Embedding:
        """Every level reads the same words with its own embedding table: each is resized, with `vocab_size`."""
        for level in self.levels:
            level.resize_token_embeddings(new_num_tokens, pad_to_multiple_of, mean_resizing)
        self.config.vocab_size = self.vocab_size = self.levels[0].config.vocab_size
        return self.get_input_embeddings()

    @staticmethod
    def level_config(config: AttentionXmlConfig, level: int) -> AttentionXmlConfig:
        """The configuration of one level's network: the shared sizes, the level's node count, and a padding
        candidate row below the top level."""
        shared = ("vocab_size", "embedding_size", "hidden_size", "num_hidden_layers", "linear_sizes",
                  "hidden_dropout_prob", "embedding_dropout_prob", "max_text_length", "pad_token_id")  # fmt: skip
        return AttentionXmlConfig(
            **{name: getattr(config, name) for name in shared},
            num_labels=config.tree_level_sizes[level],
            padding_candidate=level > 0,
        )

    @torch.no_grad()
    def set_tree(self, parents: list[list[int]]) -> None:
        """Fills the children tables from `parents[d][i]`, the parent (in level d) of node i of level d + 1."""
        for level, parent in enumerate(parents):
            table = getattr(self, f"children_{level}")
            table.fill_(self.config.tree_level_sizes[level + 1])
            filled = [0] * table.size(0)
            for child, node in enumerate(parent):
                if filled[node] >= table.size(1):
                    raise ValueError(f"node {node} of level {level} has more than {table.size(1)} children.")
                table[node, filled[node]] = child
                filled[node] += 1

    def node_targets(self, labels: torch.Tensor) -> list[torch.Tensor]:
        """Per level, top-down, the targets `(B, nodes)` of its nodes from the labels' multi-hot `(B, N)`: 1 when a
        label below the node applies, else −100 when one below it is left out (−100), else 0."""
        targets = [labels.float()]
        for level in range(len(self.levels) - 2, -1, -1):
            below = targets[0]
            padded = torch.cat([below, below.new_zeros(below.size(0), 1)], dim=1)  # the padding child scores 0
            table = getattr(self, f"children_{level}")[: self.config.tree_level_sizes[level]]
            children = padded[:, table]  # (B, nodes, K)
            positive, unknown = (children == 1).any(-1), (children == -100).any(-1)
            targets.insert(0, torch.where(positive, 1.0, torch.where(unknown, -100.0, 0.0)))
        return targets

    def beam(
        self,
        input_ids: torch.LongTensor,
        attention_mask: torch.Tensor | None = None,
        levels: int | None = None,
        top_candidates: int | None = None,
        targets: list[torch.Tensor] | None = None,
        positives_first: bool = False,
        output_hidden_states: bool = False,
    ) -> tuple[torch.Tensor | None, torch.Tensor, AttentionXmlClassifierOutput, list[torch.Tensor]]:
        """Runs the first `levels` levels (all by default): returns the last level's nodes `(B, C)` (`None` at
        level 0: every node), their path probabilities `(B, C)`, that level's output and, with `targets` (from
        `node_targets`), each level's loss on the nodes it scored. `positives_first` puts each level's positive
        parents first in its beam (the training rule of §2.3: positives always among the candidates)."""
        top = top_candidates or self.config.tree_top_candidates
        last = (levels or len(self.levels)) - 1
        losses = []
        if targets is not None:  # a padded slot (id = the level's size) is left out: target −100
            padded_targets = [torch.cat([t, t.new_full((t.size(0), 1), -100.0)], dim=1) for t in targets]
        output = self.levels[0](
            input_ids, attention_mask, labels=None if targets is None else targets[0],
            output_hidden_states=output_hidden_states and last == 0,
        )  # fmt: skip
        nodes, scores = None, output.logits.sigmoid()
        for level in range(1, last + 1):
            losses.append(output.loss)
            ranking = scores
            if targets is not None and positives_first:
                previous = targets[level - 1] if nodes is None else padded_targets[level - 1].gather(1, nodes)
                ranking = scores + 2.0 * (previous == 1)
            index = ranking.topk(min(top, scores.size(1))).indices
            best = scores.gather(1, index)
            parents = index if nodes is None else nodes.gather(1, index)
            children = getattr(self, f"children_{level - 1}")[parents]  # (B, top, K)
            nodes = children.flatten(1)
            padded = nodes == self.config.tree_level_sizes[level]
            parent_scores = best[:, :, None].expand_as(children).flatten(1).masked_fill(padded, 0.0)
            level_labels = None
            if targets is not None:
                level_labels = padded_targets[level].gather(1, nodes)
            output = self.levels[level](
                input_ids, attention_mask, candidates=nodes, labels=level_labels,
                output_hidden_states=output_hidden_states and level == last,
            )  # fmt: skip
            scores = output.logits.sigmoid() * parent_scores
        losses.append(output.loss)
        return nodes, scores, output, [loss for loss in losses if loss is not None]

    def forward(
        self,
        input_ids: torch.LongTensor,
        attention_mask: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        top_k: int = 5,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        **kwargs: Any,
    ) -> AttentionXmlTreeOutput | tuple:
        r"""
        Args:
            input_ids (`torch.LongTensor` of shape `(B, T)`): token ids, right-padded.
            attention_mask (`torch.Tensor` of shape `(B, T)`, *optional*): 1 for tokens, 0 for padding.
            labels (`torch.Tensor` of shape `(B, N)`, *optional*): multi-hot labels (−100: left out). The loss is
                the sum over levels of each level's binary cross-entropy on the nodes it scores, a node's target
                being 1 when a label below it applies. In training mode the beam puts each level's positive parents
                first (§2.3's training rule; all levels then learn at once, where the paper trains them one after
                the other); in evaluation mode the beam is the prediction's, so the loss and the logits are those
                of the prediction.
            top_k (`int`, *optional*, defaults to 5): how many labels `top_labels` lists.
        """
        output_attentions, output_hidden_states, return_dict = output_flags(
            self.config, output_attentions, output_hidden_states, return_dict
        )
        num_labels = self.config.num_labels
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
            raise ValueError(
                f"`top_k` must be a whole number ≥ 1 (how many labels `top_labels` lists), got {top_k!r}."
            )
        if labels is not None:
            if tuple(labels.shape) != (input_ids.size(0), num_labels):
                raise ValueError(
                    f"`labels` must have shape (batch, num_labels) = {(input_ids.size(0), num_labels)}, got "
                    f"{tuple(labels.shape)}."
                )
            check_multi_hot(labels)
        targets = self.node_targets(labels) if labels is not None else None
        nodes, scores, last, losses = self.beam(
            input_ids,
            attention_mask,
            targets=targets,
            positives_first=self.training,
            output_hidden_states=output_hidden_states,
        )
        if nodes is None:
            nodes = torch.arange(scores.size(1), device=scores.device).expand_as(scores)
        top_scores, index = scores.topk(min(top_k, scores.size(1)))
        probabilities = scores.float().clamp(min=1e-7, max=1 - 1e-7)
        dense = torch.full((scores.size(0), num_labels + 1), torch.finfo(torch.float32).min, device=scores.device)
        dense.scatter_(1, nodes, torch.where(nodes < num_labels, probabilities.logit(), dense.gather(1, nodes)))
        output = AttentionXmlTreeOutput(
            loss=torch.stack(losses).sum() if losses else None,
            logits=dense[:, :num_labels],
            top_labels=nodes.gather(1, index),
            top_scores=top_scores,
            candidates=nodes,
            label_attentions=last.label_attentions,
            hidden_states=last.hidden_states,
            attentions=(last.label_attentions,) if output_attentions else None,
        )
        return output if return_dict else output.to_tuple()


__all__ = [
    "AttentionXmlForLabelTree",
    "AttentionXmlForSequenceClassification",
    "AttentionXmlModel",
    "AttentionXmlPreTrainedModel",
    "contiguous_tree",
]
