"""The registry row of HAPN (`hf_attn.registry.row.Architecture`)."""

from hf_attn.data import episodes as _episodes  # noqa: F401  (registers the few-shot synthetic tasks)
from hf_attn.data.kinds import EPISODE, EPISODES
from hf_attn.registry.row import Architecture, Head, Paper
from hf_attn.tokenization.kinds import WORD_LEVEL_TOKENIZER
from hf_attn.visualization.views import few_shot_view

from .configuration_hapn import HapnConfig
from .modeling_hapn import HapnForFewShotClassification, HapnModel

ARCHITECTURE = Architecture(
    name="hapn",
    display_name="HAPN",
    config_class=HapnConfig,
    base_model_class=HapnModel,
    heads=(
        Head(
            HapnForFewShotClassification,
            None,  # transformers has no few-shot Auto class: load with this class, or pipeline("hf-attn-few-shot")
            EPISODES,
            "text-classification",
            labels=EPISODE,
            attention_fields=("word_attentions", "support_word_attentions", "instance_attentions"),
        ),
    ),
    paper=Paper(
        title="Hierarchical Attention Prototypical Networks for Few-Shot Text Classification",
        authors="Shengli Sun, Qingfeng Sun, Kevin Zhou, Tengchao Lv",
        year=2019,
        venue="EMNLP-IJCNLP",
        arxiv=None,
        link="https://aclanthology.org/D19-1045",
        bibtex=(
            "@inproceedings{sun2019hierarchical,\n"
            "  title     = {Hierarchical Attention Prototypical Networks for Few-Shot Text Classification},\n"
            "  author    = {Sun, Shengli and Sun, Qingfeng and Zhou, Kevin and Lv, Tengchao},\n"
            "  booktitle = {Proceedings of the 2019 Conference on Empirical Methods in Natural Language Processing\n"
            "               and the 9th International Joint Conference on Natural Language Processing\n"
            "               (EMNLP-IJCNLP)},\n"
            "  pages     = {476--485},\n"
            "  year      = {2019},\n"
            "  url       = {https://aclanthology.org/D19-1045}\n"
            "}"
        ),
    ),
    original_code=None,
    tokenizer=WORD_LEVEL_TOKENIZER,
    synthetic_task="few_shot_topics",
    attention_fields={
        "word_attentions": "attention_mask",
        "support_word_attentions": "support_attention_mask",
        "instance_attentions": "support_attention_mask/instances",
    },
    tiny_config={
        "vocab_size": 50,
        "word_embedding_size": 8,
        "hidden_size": 16,
        "word_attention_size": 10,
        "instance_attention_size": 12,
        "num_ways": 3,
        "num_shots": 2,
        "num_queries": 2,
        "feature_attention_channels": [4, 6],
        "feature_attention_dropout_prob": 0.1,
    },
    attention_view=few_shot_view,
    tags=("few-shot", "text-classification", "prototypical-network", "hierarchical-attention", "cnn"),
)
