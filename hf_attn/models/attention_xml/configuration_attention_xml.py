"""Configuration of AttentionXML, You et al., *AttentionXML: Label Tree-based Attention-Aware Deep Model for
High-Performance Extreme Multi-Label Text Classification* (NeurIPS 2019, arXiv:1811.01727)."""

from typing import ClassVar

from huggingface_hub.dataclasses import strict
from transformers import PreTrainedConfig
from transformers.utils.type_validators import interval, positive_int_field


@strict
class AttentionXmlConfig(PreTrainedConfig):
    r"""
    Configuration for [`AttentionXmlModel`] and [`AttentionXmlForSequenceClassification`]. Defaults are the paper's
    (§3.2 and appendix, the settings of the original code's `configure/models/AttentionXML-*.yaml`).

    A model scores `num_labels` labels. Flat AttentionXML (small label sets, or level 1 of the label tree) scores
    them all; a tree level (§2.3) scores only the candidates it is given (`candidates (B, C)` ids), and its label
    table then has one more row, the *padding candidate* `num_labels` that fills the unused candidate slots
    (`padding_candidate=True`, the original's `FastMLAttention`).

    Args:
        vocab_size (`int`, *optional*, defaults to 500000):
            Word vocabulary (set from the tokenizer; the original keeps the 500,000 most frequent words).
        embedding_size (`int`, *optional*, defaults to 300):
            Word embeddings (§3.2: 300-d GloVe).
        hidden_size (`int`, *optional*, defaults to 256):
            BiLSTM units per direction (§3.2: 256; 512 for the large sets); ĥ_t has `2 · hidden_size` features.
        num_hidden_layers (`int`, *optional*, defaults to 1):
            Stacked BiLSTM layers (original: 1).
        linear_sizes (`list[int]`, *optional*, defaults to `[256]`):
            The fully connected layers shared by all labels (§3.2: [256], or [512, 256] for the large sets), each
            Linear → ReLU, then one output unit per label.
        hidden_dropout_prob (`float`, *optional*, defaults to 0.5):
            Dropout on the BiLSTM's output (original: only there; the LSTM has no inter-layer dropout).
        embedding_dropout_prob (`float`, *optional*, defaults to 0.2):
            Dropout on the word embeddings.
        max_text_length (`int`, *optional*, defaults to 500):
            Texts are truncated to this many tokens for training and prediction (§3.2: 500).
        padding_candidate (`bool`, *optional*, defaults to `False`):
            The label table has a row `num_labels` for padded candidate slots (tree levels; see above).
        tree_children (`int`, *optional*, defaults to 8):
            K = 2^c, the label tree's branching factor (§2.2: K = 8).
        tree_top_candidates (`int`, *optional*, defaults to 160):
            C, the nodes of level d−1 whose children level d scores, in training and prediction (§2.3: 160).
        tree_cluster_size (`int`, *optional*):
            M, the largest leaf cluster of the 2-means tree (§2.2: M = K; `None` means K).
        tree_height (`int`, *optional*, defaults to 3):
            H, the levels of the compressed tree below the root (§2.2: chosen per dataset, 3 for the paper's sets).
        tree_level_sizes (`list[int]`, *optional*):
            The label tree's nodes per level, top-down, the last level being the labels (`num_labels`); set by
            the tree training for [`AttentionXmlForLabelTree`], `None` for a flat model.
        tree_max_children (`list[int]`, *optional*):
            The most children a node of each level but the last has (the width of the candidate tables).
        initializer_range (`float`, *optional*, defaults to 0.02):
            Not used by the original's initialisation (xavier-uniform for the label table and the shared layers,
            PyTorch's defaults elsewhere, a zero initial LSTM state), kept for transformers' utilities.
        pad_token_id (`int`, *optional*, defaults to 0):
            The padding id (original: 0, with `<UNK>` = 1).
    """

    model_type = "attention_xml"
    keys_to_ignore_at_inference: ClassVar[list[str]] = [
        "label_attentions",
        "candidates",
        "top_labels",
        "top_scores",
        "attentions",
        "hidden_states",
    ]

    vocab_size: int = positive_int_field(default=500000)
    embedding_size: int = positive_int_field(default=300)
    hidden_size: int = positive_int_field(default=256)
    num_hidden_layers: int = positive_int_field(default=1)
    linear_sizes: list[int] | tuple[int, ...] = (256,)
    hidden_dropout_prob: float | int = interval(min=0.0, max=1.0, exclude_max=True)(default=0.5)
    embedding_dropout_prob: float | int = interval(min=0.0, max=1.0, exclude_max=True)(default=0.2)
    max_text_length: int = positive_int_field(default=500)
    padding_candidate: bool = False
    tree_children: int = positive_int_field(default=8)
    tree_top_candidates: int = positive_int_field(default=160)
    tree_cluster_size: int | None = positive_int_field(default=None)
    tree_height: int = positive_int_field(default=3)
    tree_level_sizes: list[int] | None = None
    tree_max_children: list[int] | None = None
    initializer_range: float = 0.02
    pad_token_id: int | None = 0

    def __post_init__(self, **kwargs):
        self.linear_sizes = [int(size) for size in self.linear_sizes]
        if self.tree_cluster_size is None:
            self.tree_cluster_size = self.tree_children
        kwargs.setdefault("problem_type", "multi_label_classification")
        super().__post_init__(**kwargs)

    def validate_architecture(self):
        """The shared layers need at least one positive size; the tree needs K ≥ 2."""
        if not self.linear_sizes or any(size < 1 for size in self.linear_sizes):
            raise ValueError(f"linear_sizes must be a non-empty list of positive sizes, got {self.linear_sizes}.")
        if self.tree_level_sizes is not None:
            if self.tree_level_sizes[-1] != self.num_labels:
                raise ValueError(
                    f"tree_level_sizes must end with num_labels ({self.num_labels}), got {self.tree_level_sizes}."
                )
            if self.tree_max_children is None or len(self.tree_max_children) != len(self.tree_level_sizes) - 1:
                raise ValueError("tree_max_children needs one width per level of tree_level_sizes but the last.")
        if self.tree_children < 2:
            raise ValueError(f"tree_children (K) must be at least 2, got {self.tree_children}.")

    @property
    def num_label_rows(self) -> int:
        """Rows of the label table: `num_labels`, plus the padding candidate's row on tree levels."""
        return self.num_labels + int(self.padding_candidate)


__all__ = ["AttentionXmlConfig"]
