"""Converts a checkpoint of the ExplorerFreda PyTorch port of Lin et al. (2017) to an hf_attn model.

Original code: https://github.com/ExplorerFreda/Structured-Self-Attentive-Sentence-Embedding (`models.Classifier`
with `pooling='all'`, trained by `train.py`).

Checkpoint layout (read with `torch.load(..., weights_only=True)`): a dict with
- `state_dict`: the `Classifier`'s weights under their original names (table below);
- `config`: the dict passed to `Classifier(...)` (`ntoken`, `ninp`, `nhid`, `nlayers`, `attention-unit`,
  `attention-hops`, `nfc`, `dropout`, `class-number`, `pooling`) with `dictionary` = the idx2word list;
- optionally `pad_token` / `pad_token_id` (default: the `<pad>` entry of the dictionary).
`train.py` itself pickles the whole module (`torch.save(model, f)`); load that once in the original code's
environment and save `{"state_dict": model.state_dict(), "config": {..., "dictionary": idx2word}}` to use this.

The converted model reproduces the original exactly, so its config switches the original's quirks on:
`pack_sequences=False` (the BiLSTM runs over the pads), `attention_mask_value=-10000.0` (added to padded scores),
`penalty_type="frobenius"` (train.py adds the unsquared norm), `flatten_order="hop_major"` (`M.view(B, -1)`).
Set them back to the defaults to fine-tune with exact masking.

The original dictionary has no unknown-word entry; when it lacks one, `[UNK]` is appended as a new last row with
a zero embedding so the tokenizer can map unseen words (ids of the original vocabulary are unchanged).

The original run's `train.py` arguments that change the loss travel too: `--penalization-coeff` becomes
`penalty_coefficient`. They are read from `--config PATH` (a JSON of the run's arguments: `{"--penalization-coeff":
0.7, ...}`, argparse names such as `penalization_coeff`, or a file with a `train_args_equivalent` table like the
fixture's `original_config.json`), then from an `args` entry of the checkpoint; a command-line
`--penalization-coeff` overrides both, and train.py's default (1.0) applies when none says. Architecture arguments
in the file (`--nhid`, `--attention-hops`, ...) must agree with the checkpoint's constructor dict.

Usage:
    hf-attn convert lin_self_attentive --checkpoint original_checkpoint.pt \
        --output converted/ [--config original_args.json] [--fixture ../shared/fixtures/lin_self_attentive] \
        [--penalization-coeff 1.0]
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
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
from hf_attn.models.lin_self_attentive.configuration_lin_self_attentive import LinSelfAttentiveConfig
from hf_attn.models.lin_self_attentive.modeling_lin_self_attentive import LinSelfAttentiveForSequenceClassification
from hf_attn.tokenization import build_word_level_tokenizer

# Original key (regex, full match) -> hf_attn key. nn.LSTM parameters keep their layout (gates i, f, g, o; two
# biases; `_reverse` = backward direction), so the LSTM needs no transposes or gate re-ordering.
KEY_MAPPING: list[tuple[str, str | None]] = [
    (r"encoder\.bilstm\.encoder\.weight", r"lin.embeddings.weight"),
    (r"encoder\.bilstm\.bilstm\.((?:weight|bias)_(?:ih|hh)_l\d+(?:_reverse)?)", r"lin.encoder.rnn.\1"),
    (r"encoder\.ws1\.weight", r"lin.attention.projection.weight"),  # W_s1 (d_a × 2u), no bias
    (r"encoder\.ws2\.weight", r"lin.attention.context"),  # W_s2 (r × d_a): one context vector per hop
    (r"fc\.(weight|bias)", r"classifier.dense.\1"),  # [nfc, hops·2·nhid], input flattened hop-major
    (r"pred\.(weight|bias)", r"classifier.out_proj.\1"),
]
UNKNOWN_WORDS = ("<unk>", "<UNK>", "[UNK]", "UNK")
# train.py argument (argparse name) -> the `Classifier(...)` constructor key it sets: checked against the checkpoint.
ARCHITECTURE_ARGUMENTS = {"emsize": "ninp", "nhid": "nhid", "nlayers": "nlayers", "attention_unit": "attention-unit",
                          "attention_hops": "attention-hops", "nfc": "nfc", "class_number": "class-number",
                          "dropout": "dropout"}  # fmt: skip
TRAIN_PY_PENALIZATION_COEFF = 1.0  # train.py's default for --penalization-coeff


def read_original_arguments(path: str | Path) -> dict:
    """The original run's train.py arguments from a JSON file, keyed by argparse name (`penalization_coeff`)."""
    data = json.loads(Path(path).read_text())
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object of train.py arguments.")
    arguments = dict(data.get("train_args_equivalent") or data.get("args") or data)
    if "penalization_coeff" in data:  # a top-level record of the coefficient (the fixture's original_config.json)
        arguments.setdefault("penalization_coeff", data["penalization_coeff"])
    return {str(key).lstrip("-").replace("-", "_"): value for key, value in arguments.items()}


def training_arguments(
    checkpoint: dict, config_path: str | Path | None = None, penalization_coeff: float | None = None
) -> dict:
    """The train.py arguments that the conversion keeps: the file's, over the checkpoint's own `args`, with a
    command-line `penalization_coeff` over both; checked against the checkpoint's architecture."""
    arguments = {
        str(key).lstrip("-").replace("-", "_"): value for key, value in dict(checkpoint.get("args") or {}).items()
    }
    if config_path is not None:
        arguments.update(read_original_arguments(config_path))
    if penalization_coeff is not None:
        arguments["penalization_coeff"] = penalization_coeff
    arguments.setdefault("penalization_coeff", TRAIN_PY_PENALIZATION_COEFF)
    constructor = checkpoint["config"]
    for name, key in ARCHITECTURE_ARGUMENTS.items():
        if name in arguments and key in constructor and arguments[name] != constructor[key]:
            raise ValueError(
                f"The original arguments say --{name.replace('_', '-')} {arguments[name]}, but the checkpoint was "
                f"built with {key}={constructor[key]}: they come from different runs."
            )
    return arguments


ORIGINAL_CODE = "https://github.com/ExplorerFreda/Structured-Self-Attentive-Sentence-Embedding"


def convert_config(
    original: dict, pad_token_id: int, vocab_size: int, penalty_coefficient: float
) -> LinSelfAttentiveConfig:
    """The `Classifier(...)` constructor dict -> `LinSelfAttentiveConfig`, with the original's quirks switched on."""
    if original.get("pooling", "all") != "all":
        raise ValueError(
            f"pooling={original['pooling']!r} is the plain BiLSTM baseline, not the self-attentive model; "
            "only pooling='all' checkpoints can be converted."
        )
    return LinSelfAttentiveConfig(
        vocab_size=vocab_size,
        embedding_size=original["ninp"],
        hidden_size=original["nhid"],
        num_hidden_layers=original["nlayers"],
        attention_hidden_size=original["attention-unit"],
        attention_hops=original["attention-hops"],
        classifier_hidden_size=original["nfc"],
        hidden_dropout_prob=original["dropout"],
        num_labels=original["class-number"],
        penalty_coefficient=penalty_coefficient,
        pad_token_id=pad_token_id,
        pack_sequences=False,
        attention_mask_value=-10000.0,
        penalty_type="frobenius",
        flatten_order="hop_major",
    )


# The checkpoint this converter reads (module docstring), checked before anything else.
LAYOUT = CheckpointLayout(
    "Lin et al.'s checkpoint (a dict of `state_dict` and `config`)", keys=("state_dict", "config")
)


def convert(
    checkpoint_path: str | Path,
    output_dir: str | Path,
    penalty_coefficient: float | None = None,
    config_path: str | Path | None = None,
):
    """Converts and saves model + tokenizer to `output_dir`; returns `(model, tokenizer, training arguments)`.

    `penalty_coefficient` (train.py's `--penalization-coeff`) overrides what `config_path` or the checkpoint say."""
    checkpoint = load_original_checkpoint(checkpoint_path, LAYOUT)
    arguments = training_arguments(checkpoint, config_path, penalty_coefficient)
    original_config = checkpoint["config"]
    dictionary = list(original_config["dictionary"])
    pad_token = checkpoint.get("pad_token", "<pad>")
    pad_token_id = checkpoint.get("pad_token_id", dictionary.index(pad_token))
    if dictionary[pad_token_id] != pad_token:
        raise ValueError(f"pad_token_id {pad_token_id} is {dictionary[pad_token_id]!r}, not {pad_token!r}.")
    if len(dictionary) != original_config["ntoken"]:
        raise ValueError(f"The dictionary has {len(dictionary)} words but ntoken = {original_config['ntoken']}.")

    state_dict = rename_state_dict(checkpoint["state_dict"], KEY_MAPPING)
    unk_token = next((word for word in UNKNOWN_WORDS if word in dictionary), None)
    if unk_token is None:
        unk_token = "[UNK]"
        dictionary.append(unk_token)
        embeddings = state_dict["lin.embeddings.weight"]
        state_dict["lin.embeddings.weight"] = torch.cat([embeddings, embeddings.new_zeros(1, embeddings.size(1))])

    config = convert_config(original_config, pad_token_id, len(dictionary), float(arguments["penalization_coeff"]))
    model = LinSelfAttentiveForSequenceClassification(config)
    model.load_state_dict(state_dict, strict=True)
    model.eval()

    # The original tokenizers lower-case (tokenizer-yelp.py); keep case only if the dictionary has upper case.
    lowercase = all(word == word.lower() for word in dictionary if word not in (pad_token, unk_token))
    tokenizer = build_word_level_tokenizer(dictionary, pad_token=pad_token, unk_token=unk_token, lowercase=lowercase)

    output_dir = Path(output_dir)
    model.save_pretrained(output_dir)
    tokenizer.save_pretrained(output_dir)
    return model, tokenizer, arguments


@torch.no_grad()
def check_fixture(model: LinSelfAttentiveForSequenceClassification, fixture_dir: str | Path, atol: float = 1e-5):
    """Runs the fixture's inputs and compares with the original's outputs; returns max |diff| per tensor."""
    fixture_dir = Path(fixture_dir)
    inputs = load_file(fixture_dir / "inputs.safetensors")
    expected = load_file(fixture_dir / "expected.safetensors")
    input_ids = inputs["input_ids"].t().contiguous()  # the original is time-major [len, bsz]
    mask = input_ids != model.config.pad_token_id  # the original masks its pad ids, as the tokenizer's mask does
    output = model(input_ids, mask)
    loss = model(input_ids, mask, labels=inputs["targets"]).loss
    actual = {
        "logits": output.logits,
        "attention": output.hop_attentions,
        "sentence_embedding": output.sentence_embedding,
        "penalty_repo_norm_per_example": output.penalty,
        "loss_total_repo": loss,
    }
    return max_abs_diffs(actual, {name: expected[name] for name in actual}, atol=atol)


def main(argv: list[str] | None = None, prog: str | None = None) -> None:
    parser = converter_parser(__doc__, prog)
    parser.add_argument("--checkpoint", required=True, help="original checkpoint (.pt dict, see the docstring)")
    add_output_arguments(parser, "folder for the converted model and tokenizer")
    parser.add_argument("--config", help="the original run's train.py arguments (JSON; see the docstring)")
    parser.add_argument(
        "--penalization-coeff", type=float, default=None, help="train.py's --penalization-coeff (overrides --config)"
    )
    parser.add_argument("--fixture", help="folder with inputs.safetensors + expected.safetensors to check parity")
    parser.add_argument("--atol", type=float, default=1e-5)
    parser.add_argument("--example", help=EXAMPLE_HELP)
    args = parser.parse_args(argv)
    check_output(args)

    model, _, arguments = convert(args.checkpoint, args.output, args.penalization_coeff, args.config)
    report = conversion_record(ORIGINAL_CODE, __file__, args.checkpoint, args.output, training_arguments=arguments)
    if args.fixture:
        report["max_abs_diff"] = check_fixture(model, args.fixture, args.atol)
    finish_conversion(args.output, report, example=args.example)


if __name__ == "__main__":
    main()
