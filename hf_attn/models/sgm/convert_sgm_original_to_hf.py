"""Converts a checkpoint of the original SGM code (lancopku/SGM) to an hf_attn `SgmForMultiLabelGeneration`.

Original code: https://github.com/lancopku/SGM (`models.seq2seq`, saved by `train.py:save_model`).

Checkpoint layout (read with `torch.load(..., weights_only=True)`): a dict with
- `model`: `seq2seq.state_dict()` under the original key names (table below);
- `config`: the run's config as a plain dict (`config.yaml` + `opts.py` defaults, `src_vocab_size`,
  `tgt_vocab_size`); `optim` and `updates` are not read.
The target vocabulary is the original's: PAD 0, UNK 1, BOS 2, EOS 3, then the labels in the order of its
frequency-sorted label dictionary. Pass `--labels FILE` (a JSON list of the label names, in that order) to name them;
without it they are `LABEL_0`, `LABEL_1`, … The word dictionary is not in the checkpoint: build the tokenizer from
the original's `src.dict` (`hf_attn.tokenization.build_word_level_tokenizer`).

The converted model reproduces the original, so its config switches the original's choices on: summed encoder
directions, sources read backwards, decoder started from the forward final states, luong-gate attention, attention
over the padding, no input feeding, the original's global-embedding gate and τ. `global_embedding_source="masked"`
is what the original's greedy decoding (the one it uses for every model) feeds the global embedding; its training
used `"unmasked"` and its beam search `"uniform"`. The generation config: `num_beams` = the original's beam size
(1 for global-embedding models, which the original decodes greedily), `max_new_tokens` = `max_time_step`,
`length_penalty` 1.0 (`length_norm`) or 0.0.

Usage:
    hf-attn convert sgm --checkpoint original_checkpoint.pt --output converted/ \
        [--fixture ../shared/fixtures/sgm] [--labels labels.json]
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

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
from hf_attn.layers.sequences import reverse_padded
from hf_attn.models.sgm.configuration_sgm import SgmConfig
from hf_attn.models.sgm.generation_sgm import sgm_original_beam_search
from hf_attn.models.sgm.modeling_sgm import SgmForMultiLabelGeneration

ORIGINAL_CODE = "https://github.com/lancopku/SGM"
NUM_SPECIAL_TOKENS = 4  # utils/dict_helper.py: PAD, UNK, BOS, EOS

# Original key (regex, full match) -> hf_attn key. nn.LSTM and nn.LSTMCell keep their layout (gates i, f, g, o;
# two biases), so nothing is transposed or re-ordered. The luong-gate attention's `nn.Sequential`s are (Linear,
# SELU, Dropout, Linear, SELU, Dropout): their Linears are entries 0 and 3.
KEY_MAPPING: list[tuple[str, str | None]] = [
    (r"encoder\.embedding\.weight", r"model.encoder.embeddings.weight"),
    (r"encoder\.rnn\.((?:weight|bias)_(?:ih|hh)_l\d+(?:_reverse)?)", r"model.encoder.rnn.\1"),
    (r"decoder\.embedding\.weight", r"model.decoder.embeddings.weight"),
    (r"decoder\.rnn\.layers\.(\d+)\.((?:weight|bias)_(?:ih|hh))", r"model.decoder.layers.\1.\2"),
    (r"decoder\.linear\.(weight|bias)", r"model.decoder.label_projection.\1"),  # W_o
    (r"decoder\.attention\.linear_in\.0\.(weight|bias)", r"model.decoder.attention.query_1.\1"),
    (r"decoder\.attention\.linear_in\.3\.(weight|bias)", r"model.decoder.attention.query_2.\1"),
    (r"decoder\.attention\.linear_out\.0\.(weight|bias)", r"model.decoder.attention.readout_1.\1"),  # on [h; c]
    (r"decoder\.attention\.linear_out\.3\.(weight|bias)", r"model.decoder.attention.readout_2.\1"),
    (r"decoder\.ge_proj1\.(weight|bias)", r"model.decoder.global_embedding.gate_label.\1"),  # on e
    (r"decoder\.ge_proj2\.(weight|bias)", r"model.decoder.global_embedding.gate_average.\1"),  # on ē
]


def convert_config(original: dict[str, Any], labels: list[str] | None = None) -> SgmConfig:
    """The original run config -> `SgmConfig` with the original's behaviour selected."""
    unsupported = {
        "cell": (original.get("cell", "lstm"), "lstm"),
        "attention": (original.get("attention"), "luong_gate"),
        "bidirectional": (original.get("bidirectional", True), True),
        "shared_vocab": (original.get("shared_vocab", False), False),
    }
    for name, (value, supported) in unsupported.items():
        if value != supported:
            raise ValueError(f"Only {name}={supported!r} checkpoints can be converted, got {name}={value!r}.")
    num_labels = original["tgt_vocab_size"] - NUM_SPECIAL_TOKENS
    if labels is not None and len(labels) != num_labels:
        raise ValueError(f"--labels names {len(labels)} labels but the checkpoint has {num_labels}.")
    names = labels or [f"LABEL_{index}" for index in range(num_labels)]
    return SgmConfig.original_code(
        vocab_size=original["src_vocab_size"],
        embedding_size=original["emb_size"],
        encoder_hidden_size=original["hidden_size"],
        decoder_hidden_size=original["hidden_size"],
        encoder_layers=original["enc_num_layers"],
        decoder_layers=original["dec_num_layers"],
        hidden_dropout_prob=original["dropout"],
        attention_size=original["hidden_size"],  # unused by luong-gate attention
        initializer_range=original.get("param_init", 0.1),
        global_embedding=bool(original.get("global_emb", False)),
        global_embedding_tau=original.get("tau", 1.0),
        global_embedding_source="masked",  # what the original's greedy decoding feeds (the default)
        mask_repeated_labels=bool(original.get("mask", True)),
        num_special_tokens=NUM_SPECIAL_TOKENS,
        id2label=dict(enumerate(names)),
        label2id={name: index for index, name in enumerate(names)},
    )


# The checkpoint this converter reads (module docstring), checked before anything else.
LAYOUT = CheckpointLayout("SGM's checkpoint (train.py's dict of `model` and `config`)", keys=("model", "config"))


def convert(
    checkpoint_path: str | Path, output_dir: str | Path, labels: list[str] | None = None
) -> SgmForMultiLabelGeneration:
    """Converts and saves the model (weights, config, generation config) to `output_dir`; returns it."""
    checkpoint = load_original_checkpoint(checkpoint_path, LAYOUT)
    original = checkpoint["config"]
    config = convert_config(original, labels)
    model = SgmForMultiLabelGeneration(config)
    model.load_state_dict(rename_state_dict(checkpoint["model"], KEY_MAPPING), strict=True)
    model.eval()
    model.generation_config.update(
        num_beams=1 if config.global_embedding else original.get("beam_size", 1),
        max_new_tokens=original["max_time_step"],
        length_penalty=1.0 if original.get("length_norm", True) else 0.0,
        decoder_start_token_id=config.decoder_start_token_id,
        bos_token_id=config.bos_token_id,
        eos_token_id=config.eos_token_id,
        pad_token_id=config.pad_token_id,
    )
    model.save_pretrained(output_dir)
    return model


def _natural_order(collated: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The original's collated sources are reversed; hf_attn takes natural order (and reverses inside)."""
    mask = torch.arange(collated.size(1))[None, :] < lengths[:, None]
    return reverse_padded(collated, lengths), mask.long()


@torch.no_grad()
def fixture_outputs(
    model: SgmForMultiLabelGeneration, inputs: dict[str, torch.Tensor], max_time_step: int, beam_size: int
) -> dict[str, torch.Tensor]:
    """Runs the fixture's three calls (teacher-forced `forward`, greedy `sample`, `beam_sample`, the last also with
    `max_time_step` 2) the hf_attn way, and returns the tensors named as in the fixture. Source positions of
    encoder states and attention maps are put back in the original's reversed order to compare."""
    config = model.config
    source_mode = config.global_embedding_source
    outputs: dict[str, torch.Tensor] = {}
    try:
        # (1) Teacher forcing, as the original trains: the global embedding reads the raw scores.
        config.global_embedding_source = "unmasked"
        lengths = inputs["forward_src_len"]
        input_ids, mask = _natural_order(inputs["forward_src"], lengths)
        targets = inputs["forward_targets"]
        result = model(input_ids, mask, decoder_input_ids=inputs["forward_dec"], labels=targets)
        logits = result.logits
        outputs["forward_scores"] = logits.transpose(0, 1)
        outputs["forward_loss"] = torch.nn.functional.cross_entropy(
            outputs["forward_scores"].reshape(-1, logits.size(-1)),
            targets.t().reshape(-1),
            ignore_index=config.pad_token_id,
            reduction="none",
        )
        outputs["forward_loss_mean"] = result.loss.reshape(1)
        outputs["forward_pred"] = logits.argmax(-1)
        encoded = model.get_encoder()(input_ids, mask)
        outputs["forward_encoder_outputs"] = reverse_padded(encoded.last_hidden_state, lengths).transpose(0, 1)
        outputs["forward_encoder_h"] = encoded.decoder_initial_hidden.transpose(0, 1)
        outputs["forward_encoder_c"] = encoded.decoder_initial_cell.transpose(0, 1)
        outputs["forward_attn"] = reverse_padded(result.cross_attentions.transpose(1, 2), lengths).permute(2, 0, 1)

        # (2) Greedy decoding as `sample()`: `max_time_step` steps, every earlier prediction masked.
        config.global_embedding_source = "masked"
        lengths = inputs["src_len"]
        input_ids, mask = _natural_order(inputs["src"], lengths)
        greedy = model.generate(
            input_ids=input_ids,
            attention_mask=mask,
            num_beams=1,
            do_sample=False,
            max_new_tokens=max_time_step,
            eos_token_id=[],  # no stop at EOS: the original runs every step
            output_scores=True,
            output_attentions=True,
            return_dict_in_generate=True,
            mask_repeated_labels=True,
        )
        attention = torch.stack([step[:, -1] for step in greedy.cross_attentions], dim=1)  # (B, T, S)
        attention = reverse_padded(attention.transpose(1, 2), lengths).transpose(1, 2)
        outputs["sample_ids"] = greedy.sequences[:, 1:]
        outputs["sample_step_scores"] = torch.stack(greedy.scores, dim=1).clamp(min=-1e7)  # −inf ↔ the original's −1e7
        outputs["sample_step_attn"] = attention
        outputs["sample_alignments"] = attention.argmax(-1)

        # (3) Beam search as `beam_sample()`: no repeat mask; the global embedding reads the uniform average.
        config.global_embedding_source = "uniform"
        for prefix, steps in (("beam", max_time_step), ("beam_short", 2)):
            beam = model.generate(
                input_ids=input_ids,
                attention_mask=mask,
                num_beams=beam_size,
                max_new_tokens=steps,
                custom_generate=sgm_original_beam_search,
                mask_repeated_labels=False,
                return_dict_in_generate=True,
            )
            attention = torch.stack(beam.cross_attentions, dim=1)  # (B, L, S) along the chosen paths
            attention = reverse_padded(attention.transpose(1, 2), lengths).transpose(1, 2)
            outputs[f"{prefix}_hyps"] = beam.sequences[:, 1:]
            outputs[f"{prefix}_scores"] = beam.sequences_scores
            outputs[f"{prefix}_attn"] = attention
            outputs[f"{prefix}_alignments"] = attention.argmax(-1)
    finally:
        config.global_embedding_source = source_mode
    return outputs


def check_fixture(
    model: SgmForMultiLabelGeneration,
    fixture_dir: str | Path,
    original_config: dict[str, Any],
    expected_file: str | None = None,
    atol: float = 1e-5,
) -> dict[str, float]:
    """Compares with the fixture (`expected_ge.safetensors` for a global-embedding model, else `expected.safetensors`,
    unless `expected_file` is given): floats within `atol`, ids exactly (hypotheses cut at the original's lengths);
    returns max |diff| per float tensor."""
    fixture_dir = Path(fixture_dir)
    expected_file = expected_file or ("expected_ge" if model.config.global_embedding else "expected") + ".safetensors"
    inputs = load_file(fixture_dir / "inputs.safetensors")
    expected = load_file(fixture_dir / expected_file)
    actual = fixture_outputs(model, inputs, original_config["max_time_step"], original_config["beam_size"])
    floats = {}
    for name, value in actual.items():
        wanted = expected[name]
        prefix, _, kind = name.rpartition("_")
        if name.startswith("beam") and kind in ("hyps", "alignments", "attn"):
            lengths = expected[f"{prefix}_hyp_lengths"]  # hypotheses are padded with -1 (ids) or 0 (attention)
            width = int(lengths.max())
            if value.size(1) != width:
                raise AssertionError(f"{name}: hypotheses of {value.size(1)} steps, the original's {width}")
            keep = torch.arange(width)[None, :] < lengths[:, None]
            value = value.masked_fill(~keep, -1) if value.dtype == torch.long else value * keep[:, :, None]
        if value.dtype == torch.long:
            if not torch.equal(value, wanted):
                raise AssertionError(f"{name} differs from the original:\n{value}\nvs\n{wanted}")
        else:
            floats[name] = value
    return max_abs_diffs(floats, {name: expected[name] for name in floats}, atol=atol)


def main(argv: list[str] | None = None, prog: str | None = None) -> None:
    parser = converter_parser(__doc__, prog)
    parser.add_argument("--checkpoint", required=True, help="original checkpoint (train.py's save_model dict)")
    add_output_arguments(parser, "folder for the converted model")
    parser.add_argument("--labels", help="JSON list of the label names, in the original label dictionary's order")
    parser.add_argument("--fixture", help="folder with inputs.safetensors + expected*.safetensors to check parity")
    parser.add_argument("--expected", help="the expected-outputs file in --fixture (default: by global_emb)")
    parser.add_argument("--atol", type=float, default=1e-5)
    parser.add_argument("--example", help=EXAMPLE_HELP)
    args = parser.parse_args(argv)
    check_output(args)

    labels = json.loads(Path(args.labels).read_text()) if args.labels else None
    model = convert(args.checkpoint, args.output, labels)
    report = conversion_record(ORIGINAL_CODE, __file__, args.checkpoint, args.output)
    if args.fixture:
        original_config = load_original_checkpoint(args.checkpoint, LAYOUT)["config"]
        report["max_abs_diff"] = check_fixture(model, args.fixture, original_config, args.expected, args.atol)
    finish_conversion(args.output, report, example=args.example)


if __name__ == "__main__":
    main()
