"""The registry row of ELMo (deep contextualized word representations) (`hf_attn.registry.row.Architecture`)."""

from hf_attn.data.kinds import CLASS, TOKEN_CLASS, TOKEN_VOCAB
from hf_attn.registry.row import Architecture, Head, Paper

from . import synthetic_elmo  # noqa: F401  (registers its synthetic task, ambiguous_tagging)
from .configuration_elmo import ElmoConfig
from .kinds import CHARACTER_TOKENIZER, CHARACTERS
from .modeling_elmo import (
    ElmoForBidirectionalLanguageModeling,
    ElmoForSequenceClassification,
    ElmoForTokenClassification,
    ElmoModel,
)
from .visualization_elmo import scalar_mix_view

ARCHITECTURE = Architecture(
    name="elmo",
    display_name="ELMo (deep contextualized word representations)",
    config_class=ElmoConfig,
    base_model_class=ElmoModel,
    heads=(
        Head(
            ElmoForTokenClassification,
            "AutoModelForTokenClassification",
            CHARACTERS,
            "token-classification",
            labels=TOKEN_CLASS,
        ),
        Head(
            ElmoForSequenceClassification,
            "AutoModelForSequenceClassification",
            CHARACTERS,
            "text-classification",
            labels=CLASS,
        ),
        Head(ElmoForBidirectionalLanguageModeling, "AutoModelForPreTraining", CHARACTERS, labels=TOKEN_VOCAB),
    ),
    paper=Paper(
        title="Deep contextualized word representations",
        authors="Matthew E. Peters, Mark Neumann, Mohit Iyyer, Matt Gardner, Christopher Clark, Kenton Lee, "
        "Luke Zettlemoyer",
        year=2018,
        venue="NAACL",
        arxiv="1802.05365",
        bibtex=(
            "@inproceedings{peters2018deep,\n"
            "  title     = {Deep Contextualized Word Representations},\n"
            "  author    = {Peters, Matthew E. and Neumann, Mark and Iyyer, Mohit and Gardner, Matt and\n"
            "               Clark, Christopher and Lee, Kenton and Zettlemoyer, Luke},\n"
            "  booktitle = {Proceedings of NAACL-HLT},\n"
            "  pages     = {2227--2237},\n"
            "  year      = {2018},\n"
            "  doi       = {10.18653/v1/N18-1202},\n"
            "  url       = {https://arxiv.org/abs/1802.05365}\n"
            "}"
        ),
    ),
    original_code="https://github.com/allenai/bilm-tf",
    tokenizer=CHARACTER_TOKENIZER,
    synthetic_task="ambiguous_tagging",
    attention_fields={},  # ELMo has no attention; its scalar mix weighs layers, not tokens
    pretraining_head="ElmoForBidirectionalLanguageModeling",  # the biLM learns the texts first (§3)
    tiny_config={
        "character_embedding_size": 4,
        "filters": [[1, 4], [2, 6], [3, 7]],
        "num_highway_layers": 1,
        "projection_dim": 8,
        "hidden_size": 12,
        "num_hidden_layers": 2,
        "cell_clip": 3.0,
        "proj_clip": 2.5,
        "dropout": 0.1,
        "vocab_size": 30,
        "task_hidden_size": 5,
        "elmo_dropout": 0.2,
        "num_labels": 3,
    },
    attention_view=scalar_mix_view,
    tags=("elmo", "bilm", "character-cnn", "contextual-embeddings", "lstm"),
    converter="convert_elmo_original_to_hf",
)
