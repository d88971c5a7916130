"""Converts a checkpoint of the original Proto-HATT code (thunlp/HATT-Proto) to an hf_attn
`ProtoHattForFewShotClassification` (or, for the repository's plain `Proto` model, a
`ProtoHattProtoNetForFewShotClassification`).

Original code: https://github.com/thunlp/HATT-Proto (`models/proto_hatt.py`, `models/proto.py`,
`fewshot_re_kit/sentence_encoder.py`, `fewshot_re_kit/network/{embedding,encoder}.py`).

Checkpoint layout: `FewShotREFramework.train` saves `{'state_dict': model.state_dict()}`, read here with
`torch.load(..., weights_only=True)`. Every size comes from the weights: the vocabulary V + 2 (UNK = V, BLANK = V + 1
= padding), d_w, the position tables' 2L rows (L = `max_length`), d_p, the CNN's filters and window, the shots K of
the feature attention's kernels (K, 1) and its channels. `--config` (the original's constructor arguments as JSON,
e.g. the fixture's `original_config.json`) adds what the weights do not hold and checks the rest: the feature
attention's dropout, and the training episodes (N, K, Q) that set the loss. The converted model keeps the original's
behaviour (`mask_padding=False`: no padding mask in the encoder, inputs padded to L).

Key table (original -> hf_attn; `proto_hatt.` is the instance encoder):
    sentence_encoder.embedding.word_embedding.weight   proto_hatt.encoder.word_embeddings.weight
    sentence_encoder.embedding.pos1_embedding.weight   proto_hatt.encoder.head_position_embeddings.weight
    sentence_encoder.embedding.pos2_embedding.weight   proto_hatt.encoder.tail_position_embeddings.weight
    sentence_encoder.encoder.conv.(weight|bias)        proto_hatt.encoder.convolution.(weight|bias)
    sentence_encoder.encoder.mask_embedding.weight     dropped (the PCNN's frozen segment table, unused by CNN)
    fc.(weight|bias)                                   instance_attention.projection.(weight|bias)   (g, eq. 7)
    conv<i>.(weight|bias)                              feature_attention.convolutions.<i - 1>.(weight|bias)
    conv_final.(weight|bias)                           feature_attention.output.(weight|bias)

`--word-vectors` (the original's GloVe JSON, `[{"word": ..., "vec": [...]}, ...]`, whose order gives the word ids)
saves a tokenizer with the model that gives the original's ids: words lower-cased (the loader's
`case_sensitive=False`), split on whitespace (FewRel texts are token lists), UNK = V, BLANK = V + 1.

Usage:
    hf-attn convert proto_hatt --checkpoint checkpoint/proto_hatt.pth.tar \
        --output converted/ [--config original_config.json] [--word-vectors glove.6B.50d.json] \
        [--fixture ../shared/fixtures/proto_hatt]
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file

from hf_attn.conversion import (
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
from hf_attn.models.proto_hatt.configuration_proto_hatt import ProtoHattConfig
from hf_attn.models.proto_hatt.modeling_proto_hatt import (
    ProtoHattForFewShotClassification,
    ProtoHattProtoNetForFewShotClassification,
)
from hf_attn.tokenization.base import HfAttnTokenizerFast
from hf_attn.tokenization.word_level import build_word_level_tokenizer

ORIGINAL_CODE = "https://github.com/thunlp/HATT-Proto"
ENCODER = "sentence_encoder."
KEY_MAPPING: list[tuple[str, str | None]] = [
    (r"sentence_encoder\.embedding\.word_embedding\.weight", "proto_hatt.encoder.word_embeddings.weight"),
    (r"sentence_encoder\.embedding\.pos1_embedding\.weight", "proto_hatt.encoder.head_position_embeddings.weight"),
    (r"sentence_encoder\.embedding\.pos2_embedding\.weight", "proto_hatt.encoder.tail_position_embeddings.weight"),
    (r"sentence_encoder\.encoder\.conv\.(weight|bias)", r"proto_hatt.encoder.convolution.\1"),
    (r"sentence_encoder\.encoder\.mask_embedding\.weight", None),
    (r"fc\.(weight|bias)", r"instance_attention.projection.\1"),
    (r"conv_final\.(weight|bias)", r"feature_attention.output.\1"),
    (r"conv(\d+)\.(weight|bias)", None),  # renumbered from 0 by `convert_state_dict`
]


# The checkpoint this converter reads (module docstring), checked before anything else.
LAYOUT = CheckpointLayout(
    "FewShotREFramework's checkpoint ({'state_dict': ...} with `sentence_encoder.embedding.word_embedding.weight`)",
    weights=(r"sentence_encoder\.embedding\.word_embedding\.weight",),
    within=("state_dict",),
)


def read_state_dict(path: str | Path) -> dict[str, torch.Tensor]:
    """The checkpoint's `state_dict` (`{'state_dict': ...}` as the framework saves it, or a bare state dict)."""
    checkpoint = load_original_checkpoint(path, LAYOUT)
    state_dict = checkpoint.get("state_dict", checkpoint)
    return {key.removeprefix("module."): value for key, value in state_dict.items()}  # a DataParallel save


def feature_convolutions(state_dict: dict[str, torch.Tensor]) -> list[str]:
    """The names of the hidden convolutions of the feature attention, in order (`conv1`, `conv2`, ...)."""
    numbers = sorted({int(match[1]) for key in state_dict if (match := re.fullmatch(r"conv(\d+)\.weight", key))})
    return [f"conv{number}" for number in numbers]


def convert_config(state_dict: dict[str, torch.Tensor], arguments: dict[str, Any] | None) -> ProtoHattConfig:
    """The config from the weights' sizes, the original's fixed settings (no padding mask, BLANK = V + 1 as the
    padding id) and, from `arguments` (the original's constructor arguments), the dropout and the episode."""
    words = state_dict[f"{ENCODER}embedding.word_embedding.weight"]
    positions = state_dict[f"{ENCODER}embedding.pos1_embedding.weight"]
    convolution = state_dict[f"{ENCODER}encoder.conv.weight"]  # (D, E, m)
    hatt = "fc.weight" in state_dict
    fields: dict[str, Any] = {
        "vocab_size": words.size(0),
        "word_embedding_size": words.size(1),
        "position_embedding_size": positions.size(1),
        "use_entity_positions": True,
        "max_sentence_length": positions.size(0) // 2,
        "hidden_size": convolution.size(0),
        "kernel_size": convolution.size(2),
        "mask_padding": False,
        "pad_token_id": words.size(0) - 1,  # BLANK
        "feature_attention_dropout_prob": 0.5,  # the original's nn.Dropout()
    }
    if hatt:
        fields["num_shots"] = state_dict["conv_final.weight"].size(2)
        fields["feature_attention_channels"] = [state_dict[f"{name}.weight"].size(0)
                                                for name in feature_convolutions(state_dict)]  # fmt: skip
    arguments = arguments or {}
    derived = arguments.get("derived", {})
    if "fea_att_dropout_p" in derived:
        fields["feature_attention_dropout_prob"] = float(derived["fea_att_dropout_p"])
    episode = arguments.get("episode", {})
    fields.update(
        {name: int(episode[key]) for key, name in (("N", "num_ways"), ("Q", "num_queries")) if key in episode}
    )
    expected = {  # what the constructor arguments say, checked against the weights
        "max_sentence_length": arguments.get("CNNSentenceEncoder", {}).get("max_length"),
        "word_embedding_size": arguments.get("CNNSentenceEncoder", {}).get("word_embedding_dim"),
        "position_embedding_size": arguments.get("CNNSentenceEncoder", {}).get("pos_embedding_dim"),
        "hidden_size": arguments.get("CNNSentenceEncoder", {}).get("hidden_size"),
        "num_shots": arguments.get("ProtoHATT", {}).get("shots") if hatt else None,
    }
    for name, value in expected.items():
        if value is not None and int(value) != fields[name]:
            raise ValueError(f"--config says {name} = {value}, but the checkpoint's weights give {fields[name]}.")
    if hatt and "K" in episode and int(episode["K"]) != fields["num_shots"]:
        raise ValueError(
            f"--config's episode K = {episode['K']} differs from the model's shots {fields['num_shots']}."
        )
    if not hatt and "K" in episode:
        fields["num_shots"] = int(episode["K"])
    return ProtoHattConfig(**fields)


def convert_state_dict(state_dict: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Renames by the key table; the hidden convolutions `conv1, conv2, ...` become `convolutions.0, 1, ...`."""
    renamed = rename_state_dict(state_dict, KEY_MAPPING)
    for index, name in enumerate(feature_convolutions(state_dict)):
        for part in ("weight", "bias"):
            renamed[f"feature_attention.convolutions.{index}.{part}"] = state_dict[f"{name}.{part}"]
    return renamed


def convert(
    checkpoint_path: str | Path, output_dir: str | Path | None, config_path: str | Path | None = None
) -> ProtoHattForFewShotClassification | ProtoHattProtoNetForFewShotClassification:
    """Converts (and saves to `output_dir`, when given) a Proto-HATT or Proto checkpoint; returns the model."""
    state_dict = read_state_dict(checkpoint_path)
    arguments = json.loads(Path(config_path).read_text()) if config_path else None
    config = convert_config(state_dict, arguments)
    model_class = (
        ProtoHattForFewShotClassification if "fc.weight" in state_dict else ProtoHattProtoNetForFewShotClassification
    )
    model = model_class(config)
    model.load_state_dict(convert_state_dict(state_dict), strict=True)
    model.eval()
    if output_dir is not None:
        model.save_pretrained(output_dir)
    return model


def episode_inputs(inputs: dict[str, torch.Tensor], config: ProtoHattConfig, batch: int) -> dict[str, torch.Tensor]:
    """The original's flat batch (`next_batch`: support rows (b·N + n)·K + k, query rows b·N·Q + i, `word`, `pos1`,
    `pos2`, `mask`) as hf_attn's episode tensors. Entity positions come back from the position ids: pos1[0] = 0 −
    head + L, so head = L − pos1[0]; padding is where the PCNN mask is 0 (BLANK)."""
    length = config.max_sentence_length
    shots = config.num_shots
    ways = inputs["support_word"].size(0) // (batch * shots)
    episode = {}
    for prefix, shape in (("support_", (batch, ways, shots)), ("", (batch, -1))):
        side = "support" if prefix else "query"
        head = length - inputs[f"{side}_pos1"][:, 0]
        tail = length - inputs[f"{side}_pos2"][:, 0]
        episode[f"{prefix}input_ids"] = inputs[f"{side}_word"].reshape(*shape, inputs[f"{side}_word"].size(-1))
        episode[f"{prefix}attention_mask"] = (
            (inputs[f"{side}_mask"] != 0).long().reshape(episode[f"{prefix}input_ids"].shape)
        )
        episode[f"{prefix}entity_positions"] = torch.stack([head, tail], dim=-1).reshape(
            *episode[f"{prefix}input_ids"].shape[:-1], 2
        )
    return episode


@torch.no_grad()
def fixture_outputs(
    model: ProtoHattForFewShotClassification, inputs: dict[str, torch.Tensor]
) -> dict[str, torch.Tensor]:
    """The fixture's tensors, computed by the converted model (flattened as the original returns them)."""
    labels = inputs["label"]
    episode = episode_inputs(inputs, model.config, labels.size(0))
    captured = {}
    hook = model.feature_attention.output.register_forward_hook(lambda _, __, out: captured.setdefault("final", out))
    try:
        output = model(**episode, labels=labels, output_hidden_states=True)
    finally:
        hook.remove()
    support_embeddings, query_embeddings, support_encoded, query_encoded = output.hidden_states
    ways = episode["support_input_ids"].size(1)
    predictions = output.logits.reshape(-1, ways).argmax(dim=-1)
    return {
        "logits": output.logits,
        "pred": predictions,
        "loss": output.loss,
        "accuracy": (predictions == labels.reshape(-1)).float().mean(),
        "conv_final_out": captured["final"],
        "fea_att_score": output.feature_scores[:, None],
        "ins_att_score": output.instance_attentions,
        "support_proto": output.prototypes,
        "support_encoded": support_encoded.reshape(-1, support_encoded.size(-1)),
        "query_encoded": query_encoded.reshape(-1, query_encoded.size(-1)),
        "support_token_embeddings": support_embeddings.reshape(-1, *support_embeddings.shape[-2:]),
        "query_token_embeddings": query_embeddings.reshape(-1, *query_embeddings.shape[-2:]),
    }


# The logits are negative squared distances to the prototypes, sums over the 230 features: float32 rounds such a sum
# in proportion to its size (about 1e-6 of logits of size 14, some ten ulps, differs from one CPU's kernels to
# another's), so the check is relative as well, as the fixture's README suggests (atol 1e-5, rtol 1e-5).
FIXTURE_RTOL = 1e-5


def check_fixture(
    model: ProtoHattForFewShotClassification, fixture_dir: str | Path, atol: float = 1e-5, rtol: float = FIXTURE_RTOL
) -> dict[str, float]:
    """Compares with the fixture's expected tensors: floats within `atol + rtol · |expected|` (`FIXTURE_RTOL`),
    `pred` exactly; returns max |diff| per tensor."""
    fixture_dir = Path(fixture_dir)
    expected = load_file(fixture_dir / "expected.safetensors")
    actual = fixture_outputs(model, load_file(fixture_dir / "inputs.safetensors"))
    if not torch.equal(actual["pred"], expected["pred"]):
        raise AssertionError(f"pred differs from the original:\n{actual['pred']}\nvs\n{expected['pred']}")
    floats = {name: value for name, value in actual.items() if name in expected and value.is_floating_point()}
    return max_abs_diffs(floats, {name: expected[name] for name in floats}, atol=atol, rtol=rtol)


def original_tokenizer(word_vectors_path: str | Path, config: ProtoHattConfig) -> HfAttnTokenizerFast:
    """The original's vocabulary from its word-vector JSON (word i = id i, lower-cased), then UNK = V and BLANK =
    V + 1, as `JSONFileDataLoader` builds it."""
    entries = json.loads(Path(word_vectors_path).read_text())
    words = [entry["word"].lower() for entry in entries]
    if len(words) + 2 != config.vocab_size:
        raise ValueError(f"--word-vectors {word_vectors_path} has {len(words)} words but the checkpoint's embedding "
                         f"has {config.vocab_size} rows (V + UNK + BLANK).")  # fmt: skip
    return build_word_level_tokenizer(
        [*words, "[UNK]", "[PAD]"], lowercase=True, model_max_length=config.max_sentence_length, pre_tokenized=True
    )


def main(argv: list[str] | None = None, prog: str | None = None) -> None:
    parser = converter_parser(__doc__, prog)
    parser.add_argument("--checkpoint", required=True, help="the {'state_dict': ...} file FewShotREFramework saves")
    add_output_arguments(parser, "folder for the converted model")
    parser.add_argument("--config", help="JSON of the original's constructor arguments and episode (N, K, Q)")
    parser.add_argument("--word-vectors", "--word_vectors", help="the original's GloVe JSON: saves a tokenizer")
    parser.add_argument("--fixture", help="folder with inputs.safetensors + expected.safetensors to check parity")
    parser.add_argument("--atol", type=float, default=1e-5)
    args = parser.parse_args(argv)
    check_output(args)

    model = convert(args.checkpoint, args.output, args.config)
    if args.word_vectors:
        original_tokenizer(args.word_vectors, model.config).save_pretrained(args.output)
    report = conversion_record(
        ORIGINAL_CODE,
        __file__,
        args.checkpoint,
        args.output,
        layout="Proto-HATT" if isinstance(model, ProtoHattForFewShotClassification) else "Proto",
    )
    if args.fixture:
        report["max_abs_diff"] = check_fixture(model, args.fixture, args.atol)
    finish_conversion(args.output, report)


if __name__ == "__main__":
    main()
