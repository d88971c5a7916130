"""Converts a checkpoint of the original AttentionXML code (yourh/AttentionXML) to an hf_attn
`AttentionXmlForSequenceClassification`.

Original code: https://github.com/yourh/AttentionXML (`deepxml/networks.py`, `deepxml/modules.py`).

Two checkpoint layouts, both read with `torch.load(..., weights_only=True)` (bare `OrderedDict`s of tensors):
- flat AttentionXML / level 0 of FastAttentionXML (`Model.save_model`): bare keys (`emb.emb.weight`, ...), the label
  table `attention.attention.weight` (N, 2H) of an `nn.Linear`;
- a tree level (`XMLModel.save_model_to_disk`): the same keys prefixed `Network.`, and the label table an
  `nn.Embedding` of N + 1 rows, row N being the padding candidate. A level trained with `parallel_attn=False` keeps
  its table in `AttentionWeights.emb.{i}.weight` shards (label-id ranges, no padding row); they are concatenated and
  a zero padding row is appended, which is what the original's shards give the padding id.

Sizes come from the weights (vocabulary, embedding, hidden units, layers, shared layers, labels). The original's
training arguments that change the loss but not the weights (`dropout`, `emb_dropout`) and the padding id come from
`--config`: a JSON or YAML file holding the network's constructor arguments (`AttentionRNN(labels_num, emb_size,
hidden_size, layers_num, linear_size, dropout, padding_idx, emb_dropout, ...)`), or the original's model YAML
(`configure/models/*.yaml`, its `model:` section); without it, the original's defaults (0.5, 0.2, 0). Sizes given
there are checked against the weights. `--vocab vocab.npy` (the original's `build_vocab` output: `<PAD>`, `<UNK>`,
then the words) saves a tokenizer with the model that gives the original's ids: whitespace splitting only, as the
original reads its pre-tokenized texts.

Key table (original -> hf_attn, `attention_xml.` is the base model):
    emb.emb.weight                      attention_xml.embeddings.weight
    lstm.init_state  (4·layers, 1, H)   attention_xml.initial_cell (first half), attention_xml.initial_hidden (second)
    lstm.lstm.<nn.LSTM parameter>       attention_xml.encoder.rnn.<same>   (gates i, f, g, o; two biases)
    attention.attention.weight          attention.label_queries
    linear.linear.<i>.(weight|bias)     classifier.hidden.<i>.(weight|bias)
    linear.output.(weight|bias)         classifier.output.(weight|bias)

Usage:
    hf-attn convert attention_xml --checkpoint Model.pt --output converted/ \
        [--config model.yaml] [--labels labels.txt] [--vocab vocab.npy] [--fixture ../shared/fixtures/attentionxml]
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import torch
import yaml
from safetensors.torch import load_file

from hf_attn.conversion import (
    EXAMPLE_HELP,
    CheckpointLayout,
    add_output_arguments,
    check_output,
    conversion_record,
    converter_parser,
    finish_conversion,
    load_original_checkpoint,
    max_abs_diffs,
    rename_state_dict,
)
from hf_attn.models.attention_xml.configuration_attention_xml import AttentionXmlConfig
from hf_attn.models.attention_xml.modeling_attention_xml import AttentionXmlForSequenceClassification
from hf_attn.tokenization.base import HfAttnTokenizerFast
from hf_attn.tokenization.word_level import build_word_level_tokenizer

ORIGINAL_CODE = "https://github.com/yourh/AttentionXML"
TREE_PREFIX = "Network."
DEFAULTS = {"dropout": 0.5, "emb_dropout": 0.2, "padding_idx": 0}  # deepxml.networks / modules defaults

KEY_MAPPING: list[tuple[str, str | None]] = [
    (r"emb\.emb\.weight", r"attention_xml.embeddings.weight"),
    (r"lstm\.init_state", r"attention_xml.initial_state"),  # split below
    (r"lstm\.lstm\.((?:weight|bias)_(?:ih|hh)_l\d+(?:_reverse)?)", r"attention_xml.encoder.rnn.\1"),
    (r"attention\.attention\.weight", r"attention.label_queries"),
    (r"linear\.linear\.(\d+)\.(weight|bias)", r"classifier.hidden.\1.\2"),
    (r"linear\.output\.(weight|bias)", r"classifier.output.\1"),
]


def read_original_arguments(path: str | Path | None) -> dict[str, Any]:
    """The network's constructor arguments from a JSON/YAML file (or the `model:` section of the original's model
    YAML), over the original's defaults."""
    if path is None:
        return dict(DEFAULTS)
    loaded = yaml.safe_load(Path(path).read_text())
    if not isinstance(loaded, dict):
        raise ValueError(
            f"--config {path}: expected a mapping of the network's arguments, got {type(loaded).__name__}."
        )
    arguments = loaded.get("model", loaded)
    return {**DEFAULTS, **arguments}


def split_tree_level(state_dict: dict[str, torch.Tensor]) -> tuple[dict[str, torch.Tensor], bool]:
    """Strips `Network.` from a tree level's keys and gathers `AttentionWeights` shards into the label table;
    returns the network's state dict and whether it is a tree level (a padding-candidate row in its table)."""
    if not any(key.startswith(TREE_PREFIX) for key in state_dict):
        return dict(state_dict), False
    network = {
        key.removeprefix(TREE_PREFIX): value for key, value in state_dict.items() if key.startswith(TREE_PREFIX)
    }
    shards = sorted(
        (int(match.group(1)), value)
        for key, value in state_dict.items()
        if (match := re.fullmatch(r"AttentionWeights\.emb\.(\d+)\.weight", key))
    )
    others = [key for key in state_dict if not key.startswith(TREE_PREFIX) and not key.startswith("AttentionWeights.")]
    if others:
        raise ValueError(f"Unexpected keys in a tree-level checkpoint: {others[:5]}.")
    if shards:  # parallel_attn=False: label-id ranges, no padding row (the padding id gets a zero query)
        if "attention.attention.weight" in network:
            raise ValueError("A tree-level checkpoint has both a label table and AttentionWeights shards.")
        table = torch.cat([value for _, value in shards])
        network["attention.attention.weight"] = torch.cat([table, table.new_zeros(1, table.size(1))])
    return network, True


def convert_config(state_dict: dict[str, torch.Tensor], tree_level: bool, arguments: dict[str, Any],
                   labels: list[str] | None = None) -> AttentionXmlConfig:  # fmt: skip
    """Sizes from the weights, dropouts and the padding id from the original's arguments (checked against them)."""
    vocab_size, embedding_size = state_dict["emb.emb.weight"].shape
    state_rows, _, hidden_size = state_dict["lstm.init_state"].shape
    layers = state_rows // 4
    hidden = sorted(int(m.group(1)) for k in state_dict if (m := re.fullmatch(r"linear\.linear\.(\d+)\.weight", k)))
    linear_sizes = [state_dict[f"linear.linear.{index}.weight"].size(0) for index in hidden]
    rows = state_dict["attention.attention.weight"].size(0)
    num_labels = rows - int(tree_level)
    inferred = {"vocab_size": vocab_size, "emb_size": embedding_size, "hidden_size": hidden_size,
                "layers_num": layers, "linear_size": linear_sizes, "labels_num": num_labels}  # fmt: skip
    for name, value in inferred.items():
        given = arguments.get(name)
        if given is not None and (list(given) if isinstance(given, list | tuple) else given) != value:
            raise ValueError(f"--config says {name}={given!r} but the checkpoint's weights have {name}={value!r}.")
    if labels is not None and len(labels) != num_labels:
        raise ValueError(f"--labels names {len(labels)} labels but the checkpoint has {num_labels}.")
    names = labels or [f"LABEL_{index}" for index in range(num_labels)]
    return AttentionXmlConfig(
        vocab_size=vocab_size,
        embedding_size=embedding_size,
        hidden_size=hidden_size,
        num_hidden_layers=layers,
        linear_sizes=linear_sizes,
        hidden_dropout_prob=float(arguments["dropout"]),
        embedding_dropout_prob=float(arguments["emb_dropout"]),
        padding_candidate=tree_level,
        pad_token_id=int(arguments["padding_idx"]),
        id2label=dict(enumerate(names)),
        label2id={name: index for index, name in enumerate(names)},
    )


def convert_state_dict(state_dict: dict[str, torch.Tensor], config: AttentionXmlConfig) -> dict[str, torch.Tensor]:
    """Renames by the key table and splits `init_state` into (c0, h0) (fixture quirk 1: the FIRST half is c0)."""
    renamed = rename_state_dict(state_dict, KEY_MAPPING)
    initial = renamed.pop("attention_xml.initial_state")
    half = initial.size(0) // 2
    renamed["attention_xml.initial_cell"], renamed["attention_xml.initial_hidden"] = initial[:half], initial[half:]
    return renamed


# The checkpoint this converter reads (module docstring), checked before anything else: a flat model's weights, or a
# tree level's under `Network.`.
LAYOUT = CheckpointLayout(
    "AttentionXML's weights (Model.save_model or XMLModel.save_model_to_disk: `emb.emb.weight`, ...)",
    weights=(r"(Network\.)?emb\.emb\.weight",),
)


def convert(checkpoint_path: str | Path, output_dir: str | Path | None, config_path: str | Path | None = None,
            labels: list[str] | None = None) -> AttentionXmlForSequenceClassification:  # fmt: skip
    """Converts (and saves to `output_dir`, when given) a flat or tree-level checkpoint; returns the model."""
    state_dict, tree_level = split_tree_level(load_original_checkpoint(checkpoint_path, LAYOUT))
    config = convert_config(state_dict, tree_level, read_original_arguments(config_path), labels)
    model = AttentionXmlForSequenceClassification(config)
    model.load_state_dict(convert_state_dict(state_dict, config), strict=True)
    model.eval()
    if output_dir is not None:
        model.save_pretrained(output_dir)
    return model


@torch.no_grad()
def fixture_outputs(model: AttentionXmlForSequenceClassification, inputs: dict[str, torch.Tensor], k: int,
                    prefix: str) -> dict[str, torch.Tensor]:  # fmt: skip
    """The fixture's tensors, computed by the converted model: intermediates cut to the batch's longest text (as
    the original cuts them), and the original's predict post-processing (`Model.predict_step` for flat models,
    `XMLModel.predict_step` with the previous level's candidate scores for tree levels)."""
    input_ids = inputs["input_ids"]
    mask = input_ids != model.config.pad_token_id
    width = int(mask.sum(-1).max())
    candidates = inputs["candidates"] if model.config.padding_candidate else None
    output = model(input_ids, mask.long(), candidates=candidates, output_hidden_states=True)
    embedded, states, contexts = output.hidden_states
    outputs = {
        "logits": output.logits,
        "emb_out": embedded[:, :width],
        "lengths": mask.sum(-1),
        "masks": mask[:, :width],
        "rnn_out": states[:, :width],
        "attention_weights": output.label_attentions[..., :width],
        "attn_out": contexts,
    }
    if candidates is None:
        scores, labels = output.logits.topk(k)
        outputs["predict_topk_scores"], outputs["predict_topk_labels"] = scores.sigmoid(), labels
    else:
        scores, positions = (output.logits.sigmoid() * inputs["candidate_scores"]).topk(k)
        outputs["predict_topk_scores"], outputs["predict_topk_labels"] = scores, candidates.gather(1, positions)
    return {f"{prefix}.{name}": value for name, value in outputs.items()}


def check_fixture(model: AttentionXmlForSequenceClassification, fixture_dir: str | Path, k: int,
                  atol: float = 1e-5) -> dict[str, float]:  # fmt: skip
    """Compares with the fixture's `attention_rnn.*` (flat) or `fast_attention_rnn.*` (tree level) tensors: floats
    within `atol`, integers and masks exactly; returns max |diff| per float tensor."""
    fixture_dir = Path(fixture_dir)
    prefix = "fast_attention_rnn" if model.config.padding_candidate else "attention_rnn"
    expected = load_file(fixture_dir / "expected.safetensors")
    actual = fixture_outputs(model, load_file(fixture_dir / "inputs.safetensors"), k, prefix)
    floats = {}
    for name, value in actual.items():
        if value.is_floating_point():
            floats[name] = value
        elif not torch.equal(value, expected[name].to(value.dtype)):
            raise AssertionError(f"{name} differs from the original:\n{value}\nvs\n{expected[name]}")
    return max_abs_diffs(floats, {name: expected[name] for name in floats}, atol=atol)


def original_tokenizer(vocab_path: str | Path, config: AttentionXmlConfig) -> HfAttnTokenizerFast:
    """The original's vocabulary (`data_utils.build_vocab`: `<PAD>` = 0, `<UNK>` = 1, then the words; saved as a
    numpy array of strings, read here without pickle) as a tokenizer: texts are split on whitespace only, as the
    original's `convert_to_binary` does with its pre-tokenized texts, and truncated to `max_text_length`."""
    words = np.load(vocab_path, allow_pickle=False).tolist()
    if len(words) != config.vocab_size:
        raise ValueError(f"--vocab {vocab_path} has {len(words)} words but the checkpoint's embedding has "
                         f"{config.vocab_size} rows.")  # fmt: skip
    return build_word_level_tokenizer(words, pad_token="<PAD>", unk_token="<UNK>", lowercase=False,
                                      model_max_length=config.max_text_length, pre_tokenized=True)  # fmt: skip


def main(argv: list[str] | None = None, prog: str | None = None) -> None:
    parser = converter_parser(__doc__, prog)
    parser.add_argument("--checkpoint", required=True, help="Model.save_model or XMLModel.save_model_to_disk file")
    add_output_arguments(parser, "folder for the converted model")
    parser.add_argument("--config", help="JSON/YAML of the network's arguments (or the original's model YAML)")
    parser.add_argument("--labels", help="the label names, one per line (or a JSON list), in label-id order")
    parser.add_argument("--vocab", help="the original's vocab.npy (word i has id i): saves a tokenizer with the model")
    parser.add_argument("--fixture", help="folder with inputs.safetensors + expected.safetensors to check parity")
    parser.add_argument("--top_k", type=int, default=4, help="k of the fixture's predict post-processing")
    parser.add_argument("--atol", type=float, default=1e-5)
    parser.add_argument("--example", help=EXAMPLE_HELP)
    args = parser.parse_args(argv)
    check_output(args)

    labels = None
    if args.labels:
        text = Path(args.labels).read_text()
        labels = json.loads(text) if text.lstrip().startswith("[") else [line for line in text.splitlines() if line]
    model = convert(args.checkpoint, args.output, args.config, labels)
    if args.vocab:
        tokenizer = original_tokenizer(args.vocab, model.config)
        tokenizer.save_pretrained(args.output)
    report = conversion_record(
        ORIGINAL_CODE,
        __file__,
        args.checkpoint,
        args.output,
        layout="tree level (XMLModel)" if model.config.padding_candidate else "flat (Model)",
    )
    if args.fixture:
        report["max_abs_diff"] = check_fixture(model, args.fixture, args.top_k, args.atol)
    finish_conversion(args.output, report, example=args.example)


if __name__ == "__main__":
    main()
