"""The registry row of Proto-HATT (`hf_attn.registry.row.Architecture`)."""

from hf_attn.data import episodes as _episodes  # noqa: F401  (registers the few-shot synthetic tasks)
from hf_attn.data.kinds import EPISODE, EPISODES
from hf_attn.registry.row import Architecture, Head, Paper
from hf_attn.tokenization.kinds import WORD_LEVEL_TOKENIZER
from hf_attn.visualization.views import few_shot_view

from .configuration_proto_hatt import ProtoHattConfig
from .modeling_proto_hatt import (
    ProtoHattForFewShotClassification,
    ProtoHattModel,
    ProtoHattProtoNetForFewShotClassification,
)

ARCHITECTURE = Architecture(
    name="proto_hatt",
    display_name="Proto-HATT",
    config_class=ProtoHattConfig,
    base_model_class=ProtoHattModel,
    heads=(
        Head(
            ProtoHattForFewShotClassification,
            None,  # transformers has no few-shot Auto class: load with this class, or pipeline("hf-attn-few-shot")
            EPISODES,
            "text-classification",
            labels=EPISODE,
            attention_fields=("instance_attentions",),
            scores_evidence=False,  # a distribution over support instances, not over a text's words
        ),
        Head(
            ProtoHattProtoNetForFewShotClassification,
            None,
            EPISODES,
            "text-classification",
            labels=EPISODE,
        ),
    ),
    paper=Paper(
        title="Hybrid Attention-Based Prototypical Networks for Noisy Few-Shot Relation Classification",
        authors="Tianyu Gao, Xu Han, Zhiyuan Liu, Maosong Sun",
        year=2019,
        venue="AAAI",
        arxiv=None,
        link="https://doi.org/10.1609/aaai.v33i01.33016407",
        bibtex=(
            "@inproceedings{gao2019hybrid,\n"
            "  title     = {Hybrid Attention-Based Prototypical Networks for Noisy Few-Shot Relation\n"
            "               Classification},\n"
            "  author    = {Gao, Tianyu and Han, Xu and Liu, Zhiyuan and Sun, Maosong},\n"
            "  booktitle = {Proceedings of the AAAI Conference on Artificial Intelligence},\n"
            "  volume    = {33},\n"
            "  pages     = {6407--6414},\n"
            "  year      = {2019},\n"
            "  doi       = {10.1609/aaai.v33i01.33016407}\n"
            "}"
        ),
    ),
    original_code="https://github.com/thunlp/HATT-Proto",
    tokenizer=WORD_LEVEL_TOKENIZER,
    synthetic_task="few_shot_relations",
    attention_fields={"instance_attentions": "support_attention_mask/instances"},
    # Its attention weighs the support instances (eq. 8), not a text's words: the instances are what the
    # faithfulness measures rank and erase (an erased shot is all padding, as an absent one is).
    importance_over="support_attention_mask/instances",
    tiny_config={
        "vocab_size": 50,
        "word_embedding_size": 8,
        "position_embedding_size": 2,
        "use_entity_positions": True,
        "max_sentence_length": 12,
        "hidden_size": 16,
        "num_ways": 3,
        "num_shots": 3,
        "num_queries": 2,
        "feature_attention_channels": [4, 6],
        "feature_attention_dropout_prob": 0.1,
    },
    attention_view=few_shot_view,
    tags=("few-shot", "relation-classification", "prototypical-network", "cnn"),
    converter="convert_proto_hatt_original_to_hf",
)
