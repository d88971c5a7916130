"""Converts a checkpoint of the most used unofficial STCKA code (AIRobotZhang/STCKA) to an hf_attn
`StckaForSequenceClassification`.

Original code: https://github.com/AIRobotZhang/STCKA (`model/STCKA.py`: `STCK_Atten`; `main.py` saves
`model.state_dict()` as a bare `OrderedDict`, read here with `torch.load(..., weights_only=True)`; a `module.` prefix
of a DataParallel save is dropped). Every size comes from the weights: the two vocabularies, d, u, the BiLSTM's layers,
d_a = W1's rows, d_b = W2's rows, the classes. What the weights do not hold comes from the original's constructor
arguments (`--config`, a JSON object with `gama`, `num_layer`, `finetuning`, ... at its top level or under
`constructor_kwargs`, as the fixture's `original_config.json`): `gama`, the fixed γ (a Python float the code never
saves; the constructor's default 0.5 when absent), and `finetuning` (`False` freezes both embedding tables). The
converted model keeps the code's behaviour: no masks (`mask_padding=False`), `<pad>` = 1 an ordinary embedding row.
When the config also holds the vocabularies (`vocab`: `text_itos`, `concept_itos`, `label_itos`, torchtext's order),
a tokenizer giving the original's ids (whitespace split, lower-cased, `<unk>` 0, `<pad>` 1) and the label names are
saved too; the original takes concept sets from its TSV files, so they come with each call
(`tokenizer(texts, concepts=[...])`) unless a knowledge base is given (`--concepts isa.tsv`).

Key table (original -> hf_attn):
    txt_word_embed.weight                     stcka.embeddings.weight
    cpt_word_embed.weight                     stcka.concept_embeddings.weight
    lstm.{weight,bias}_{ih,hh}_l<k>[_reverse] stcka.text_encoder.lstm.rnn.<same>     (nn.LSTM, gates i, f, g, o)
    W1.{weight,bias}                          stcka.knowledge_encoder.cst_projection  (columns [c; q], the same order)
    w1.weight                                 stcka.knowledge_encoder.cst_context
    W2.{weight,bias}                          stcka.knowledge_encoder.ccs_projection
    w2.weight                                 stcka.knowledge_encoder.ccs_context
    output.{weight,bias}                      classifier                              (columns [q; p], the same order)

Usage:
    hf-attn convert stcka --checkpoint results/12_Model_0.85.pt --output converted/ \
        [--config original_config.json] [--gama 0.5] [--concepts isa.tsv]
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import torch

from hf_attn.conversion import (
    EXAMPLE_HELP,
    CheckpointLayout,
    add_output_arguments,
    check_output,
    conversion_record,
    converter_parser,
    finish_conversion,
    load_original_checkpoint,
    rename_state_dict,
)
from hf_attn.models.stcka.configuration_stcka import StckaConfig
from hf_attn.models.stcka.kinds import build_concept_tokenizer
from hf_attn.models.stcka.modeling_stcka import StckaForSequenceClassification
from hf_attn.models.stcka.tokenization_stcka import ConceptSource

ORIGINAL_CODE = "https://github.com/AIRobotZhang/STCKA"
KEY_MAPPING: list[tuple[str, str | None]] = [
    (r"txt_word_embed\.weight", "stcka.embeddings.weight"),
    (r"cpt_word_embed\.weight", "stcka.concept_embeddings.weight"),
    (r"lstm\.((?:weight|bias)_(?:ih|hh)_l\d+(?:_reverse)?)", r"stcka.text_encoder.lstm.rnn.\1"),
    (r"W1\.(weight|bias)", r"stcka.knowledge_encoder.cst_projection.\1"),
    (r"w1\.weight", "stcka.knowledge_encoder.cst_context.weight"),
    (r"W2\.(weight|bias)", r"stcka.knowledge_encoder.ccs_projection.\1"),
    (r"w2\.weight", "stcka.knowledge_encoder.ccs_context.weight"),
    (r"output\.(weight|bias)", r"classifier.\1"),
]
PAD, UNK = "<pad>", "<unk>"  # torchtext 0.3.1's specials: <unk> 0, <pad> 1


# The checkpoint this converter reads (module docstring), checked before anything else.
LAYOUT = CheckpointLayout(
    "STCKA's `model.state_dict()` (`txt_word_embed.weight`, ...)", weights=(r"txt_word_embed\.weight",)
)


def read_state_dict(path: str | Path) -> dict[str, torch.Tensor]:
    """The bare state dict `main.py` saves (a DataParallel `module.` prefix dropped), on the CPU."""
    state_dict = load_original_checkpoint(path, LAYOUT)
    return {key.removeprefix("module."): value for key, value in state_dict.items()}


def constructor_arguments(config: dict[str, Any] | None) -> dict[str, Any]:
    """The original's constructor arguments: the top level of `config`, or its `constructor_kwargs`."""
    config = config or {}
    return dict(config.get("constructor_kwargs", config))


def convert_config(state_dict: dict[str, torch.Tensor], arguments: dict[str, Any], labels: list[str] | None = None):
    """The config from the weights' sizes and the constructor arguments (checked against the weights)."""
    layers = len([key for key in state_dict if re.fullmatch(r"lstm\.weight_ih_l\d+", key)])
    fields: dict[str, Any] = {
        "vocab_size": state_dict["txt_word_embed.weight"].size(0),
        "concept_vocab_size": state_dict["cpt_word_embed.weight"].size(0),
        "embedding_size": state_dict["txt_word_embed.weight"].size(1),
        "char_feature_size": 0,  # the code has no character features
        "hidden_size": state_dict["lstm.weight_hh_l0"].size(1),
        "num_hidden_layers": layers,
        "cst_attention_size": state_dict["W1.weight"].size(0),
        "ccs_attention_size": state_dict["W2.weight"].size(0),
        "num_labels": state_dict["output.weight"].size(0),
        "gamma": float(arguments.get("gama", 0.5)),  # the constructor's default, which main.py never overrides
        "freeze_embeddings": not bool(arguments.get("finetuning", True)),
        "mask_padding": False,
        "pad_token_id": 1,
        "concept_pad_token_id": 1,
    }
    expected = {"vocab_size": "text_vocab_size", "concept_vocab_size": "concept_vocab_size",
                "embedding_size": "embedding_dim", "hidden_size": "hidden_size", "num_hidden_layers": "num_layer",
                "num_labels": "output_size"}  # fmt: skip
    for field, argument in expected.items():
        if isinstance(arguments.get(argument), int) and arguments[argument] != fields[field]:
            raise ValueError(f"--config says {argument} = {arguments[argument]}, the weights give {fields[field]}.")
    if labels:
        fields["id2label"] = dict(enumerate(labels))
    return StckaConfig(**fields)


def convert(
    checkpoint_path: str | Path,
    output_dir: str | Path | None = None,
    config_path: str | Path | None = None,
    gamma: float | None = None,
    concepts_path: str | Path | None = None,
    example: str | None = None,
) -> StckaForSequenceClassification:
    """Builds (and with `output_dir` saves, with a tokenizer when the config has the vocabularies) the model;
    `example`: a text whose attention the card shows."""
    state_dict = read_state_dict(checkpoint_path)
    config_json = json.loads(Path(config_path).read_text()) if config_path else {}
    arguments = constructor_arguments(config_json)
    if gamma is not None:
        arguments["gama"] = gamma
    vocab = config_json.get("vocab", {})
    config = convert_config(state_dict, arguments, vocab.get("label_itos"))
    model = StckaForSequenceClassification(config)
    model.load_state_dict(rename_state_dict(state_dict, KEY_MAPPING), strict=True)
    model.eval()
    if output_dir is not None:
        model.save_pretrained(output_dir)
        if "text_itos" in vocab and "concept_itos" in vocab:
            source = ConceptSource.from_file(concepts_path) if concepts_path else None
            tokenizer = build_concept_tokenizer(
                vocab["text_itos"], vocab["concept_itos"], source, pad_token=PAD, unk_token=UNK, pre_tokenized=True
            )
            tokenizer.save_pretrained(output_dir)
        record = conversion_record(
            ORIGINAL_CODE, __file__, checkpoint_path, output_dir,
            constructor_arguments={"gama": config.gamma, "finetuning": not config.freeze_embeddings,
                                   "num_layer": config.num_hidden_layers},
            layout="bare state_dict (main.py's torch.save(model.state_dict()))",
        )  # fmt: skip
        finish_conversion(output_dir, record, example=example)
    return model


def main(argv: list[str] | None = None, prog: str | None = None) -> None:
    parser = converter_parser(__doc__, prog)
    parser.add_argument("--checkpoint", required=True)
    add_output_arguments(parser)
    parser.add_argument("--config", help="the original's constructor arguments (and vocabularies) as JSON")
    parser.add_argument("--gama", type=float, help="the fixed γ the checkpoint was trained with (default 0.5)")
    parser.add_argument("--concepts", help="a knowledge base (entity<TAB>concept<TAB>score) for the tokenizer")
    parser.add_argument("--example", help=EXAMPLE_HELP)
    args = parser.parse_args(argv)
    check_output(args)
    convert(args.checkpoint, args.output, args.config, args.gama, args.concepts, example=args.example)


if __name__ == "__main__":
    main()
