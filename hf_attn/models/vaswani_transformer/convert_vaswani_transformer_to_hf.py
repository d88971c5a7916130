"""Converts Transformer checkpoints of other implementations to hf_attn's `VaswaniTransformerForConditionalGeneration`.

Sources:
- `marian`: a saved Hugging Face `MarianMTModel` folder (safetensors). Marian implements the paper's math with
  [sin | cos] positions on the paper's timescale, post-LN and a logits bias; the keys map one to one.
- `fsmt`: a saved Hugging Face `FSMTForConditionalGeneration` folder (fairseq's transformer ported, same keys
  under `model.`).
- `fairseq`: a fairseq transformer checkpoint, a dict `{"args" | "cfg": ..., "model": state_dict}` read with
  `torch.load(weights_only=True)` (an `argparse.Namespace` of arguments is allowed, nothing else is unpickled).
  fairseq offsets positions by padding_idx + 1 and uses the tensor2tensor timescale; its dictionary puts
  `<s>` 0, `<pad>` 1, `</s>` 2, and decoding starts from `</s>`.

Key mapping (hf_attn name on the right; `None` drops the key):
    encoder.layers.{i}.self_attn.{q,k,v,out}_proj   -> model.encoder.layers.{i}.self_attn.{q,k,v,out}_proj
    encoder.layers.{i}.self_attn_layer_norm         -> model.encoder.layers.{i}.self_attn_sublayer.layer_norm
    encoder.layers.{i}.fc1 / fc2                    -> model.encoder.layers.{i}.ffn.fc1 / fc2
    encoder.layers.{i}.final_layer_norm             -> model.encoder.layers.{i}.ffn_sublayer.layer_norm
    decoder.layers.{i}.encoder_attn(_layer_norm)    -> model.decoder.layers.{i}.encoder_attn(_sublayer.layer_norm)
    shared / embed_tokens                           -> model.shared (or source/target embeddings)
    embed_positions                                 -> None (sinusoids are recomputed; checked against the source)

Generation settings travel with the weights: a Marian or FSMT folder's `generation_config.json` (or, without
one, the generation fields of its config: `forced_eos_token_id`, `bad_words_ids`, `num_beams`, `max_length`,
`length_penalty`, ...) becomes the converted model's `generation_config`, so `generate()` decodes as the source
does; a fairseq checkpoint's `beam`, `lenpen`, `max_len_b` (with `max_len_a` 0), `min_len`, `no_repeat_ngram_size`
and `unkpen`-free settings become `num_beams`, `length_penalty`, `max_new_tokens`, `min_new_tokens` and
`no_repeat_ngram_size` when the checkpoint records them.

Usage:
    hf-attn convert vaswani_transformer --source marian --checkpoint marian_dir --output out_dir
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
from transformers import GenerationConfig

from hf_attn.conversion import (
    CheckpointLayout,
    add_output_arguments,
    check_output,
    converter_parser,
    load_original_checkpoint,
    rename_state_dict,
)
from hf_attn.models.vaswani_transformer.configuration_vaswani_transformer import VaswaniTransformerConfig
from hf_attn.models.vaswani_transformer.modeling_vaswani_transformer import VaswaniTransformerForConditionalGeneration
from hf_attn.utils.inputs import model_folder, read_input

LAYER_RULES: list[tuple[str, str | None]] = [
    (r"(encoder|decoder)\.layers\.(\d+)\.(self_attn|encoder_attn)\.(q_proj|k_proj|v_proj|out_proj)\.(weight|bias)",
     r"model.\1.layers.\2.\3.\4.\5"),
    (r"(encoder|decoder)\.layers\.(\d+)\.(self_attn|encoder_attn)_layer_norm\.(weight|bias)",
     r"model.\1.layers.\2.\3_sublayer.layer_norm.\4"),
    (r"(encoder|decoder)\.layers\.(\d+)\.(fc1|fc2)\.(weight|bias)", r"model.\1.layers.\2.ffn.\3.\4"),
    (r"(encoder|decoder)\.layers\.(\d+)\.final_layer_norm\.(weight|bias)",
     r"model.\1.layers.\2.ffn_sublayer.layer_norm.\3"),
    (r"(encoder|decoder)\.embed_positions\..*", None),
]  # fmt: skip


def _check_paper_math(config: dict, source: str) -> None:
    if config.get("layernorm_embedding") or config.get("normalize_embedding"):
        raise ValueError(f"this {source} checkpoint normalises embeddings, which the Transformer does not do")


def from_marian(folder: str | Path) -> tuple[VaswaniTransformerConfig, dict[str, torch.Tensor], GenerationConfig]:
    from transformers import MarianMTModel

    marian = read_input(
        "--checkpoint",
        folder,
        model_folder("marian", "a Marian model"),
        lambda: MarianMTModel.from_pretrained(folder, use_safetensors=True),
    )
    source = marian.config
    if not source.share_encoder_decoder_embeddings:
        raise ValueError("Marian models with separate vocabularies are not supported yet")
    bias = marian.final_logits_bias.detach().reshape(-1)
    config = VaswaniTransformerConfig(
        vocab_size=source.vocab_size,
        d_model=source.d_model,
        encoder_layers=source.encoder_layers,
        decoder_layers=source.decoder_layers,
        encoder_attention_heads=source.encoder_attention_heads,
        decoder_attention_heads=source.decoder_attention_heads,
        encoder_ffn_dim=source.encoder_ffn_dim,
        decoder_ffn_dim=source.decoder_ffn_dim,
        dropout=source.dropout,
        attention_dropout=source.attention_dropout,
        activation_dropout=source.activation_dropout,
        activation_function=source.activation_function,
        max_position_embeddings=source.max_position_embeddings,
        scale_embedding=source.scale_embedding,
        share_encoder_decoder_embeddings=True,
        tie_word_embeddings=source.tie_word_embeddings,
        sinusoid_layout="concatenated",
        sinusoid_timescale="paper",
        output_bias=bool(bias.abs().max() > 0),
        pad_token_id=source.pad_token_id,
        eos_token_id=source.eos_token_id,
        bos_token_id=getattr(source, "bos_token_id", None),
        decoder_start_token_id=source.decoder_start_token_id,
        label_smoothing=0.1,
    )
    state_dict = {key.removeprefix("model."): value for key, value in marian.state_dict().items()}
    rules = [
        *LAYER_RULES,
        (r"shared\.weight", r"model.shared.weight"),
        (r"(encoder|decoder)\.embed_tokens\.weight", None),  # the same tensor as shared
        (r"lm_head\.weight", None if source.tie_word_embeddings else r"lm_head.weight"),
        (r"final_logits_bias", r"output_bias" if config.output_bias else None),
    ]
    converted = rename_state_dict(state_dict, rules)
    if config.output_bias:
        converted["output_bias"] = converted["output_bias"].reshape(-1)
    return config, converted, _hf_generation_config(marian)


def _hf_generation_config(model) -> GenerationConfig:
    """The source's generation settings: its `generation_config.json` when the folder has one (what `from_pretrained`
    read), else the generation fields of its config."""
    return GenerationConfig.from_dict(model.generation_config.to_dict())


# fairseq generation argument -> `GenerationConfig` field (`max_len_b` only when `max_len_a` is 0: fairseq's
# max length a·|source| + b has no transformers equivalent otherwise).
FAIRSEQ_GENERATION = {"beam": "num_beams", "lenpen": "length_penalty", "min_len": "min_new_tokens",
                      "no_repeat_ngram_size": "no_repeat_ngram_size"}  # fmt: skip


def _fairseq_generation_config(config: VaswaniTransformerConfig, args: dict) -> GenerationConfig:
    generation = GenerationConfig.from_model_config(config)
    for name, field in FAIRSEQ_GENERATION.items():
        if args.get(name) is not None:
            setattr(generation, field, args[name])
    if args.get("max_len_b") is not None and not args.get("max_len_a"):
        generation.max_new_tokens = int(args["max_len_b"])
    return generation


def _fairseq_config(args: dict, state_dict: dict[str, torch.Tensor]) -> VaswaniTransformerConfig:
    """fairseq `transformer` arguments -> config. Only the paper's architecture family converts: no embedding
    LayerNorm, sinusoidal (not learned) positions, one vocabulary size on both sides."""
    _check_paper_math(args, "fairseq")
    if args.get("encoder_learned_pos") or args.get("decoder_learned_pos"):
        raise ValueError("learned positions are not the Transformer's sinusoids; not supported")
    source_vocab, d_model = state_dict["encoder.embed_tokens.weight"].shape
    target_vocab = state_dict["decoder.embed_tokens.weight"].shape[0]
    if source_vocab != target_vocab:
        raise ValueError(
            f"source and target vocabularies differ ({source_vocab} vs {target_vocab}): not supported yet"
        )
    shared = bool(args.get("share_all_embeddings")) or (
        state_dict["encoder.embed_tokens.weight"].data_ptr() == state_dict["decoder.embed_tokens.weight"].data_ptr()
    )
    normalize_before = bool(args.get("encoder_normalize_before", False))
    if normalize_before != bool(args.get("decoder_normalize_before", False)):
        raise ValueError("mixed pre-/post-LN stacks are not supported")
    pad = args.get("pad", 1)
    return VaswaniTransformerConfig(
        vocab_size=source_vocab,
        d_model=d_model,
        encoder_layers=args["encoder_layers"],
        decoder_layers=args["decoder_layers"],
        encoder_attention_heads=args["encoder_attention_heads"],
        decoder_attention_heads=args["decoder_attention_heads"],
        encoder_ffn_dim=args["encoder_ffn_embed_dim"],
        decoder_ffn_dim=args["decoder_ffn_embed_dim"],
        dropout=args.get("dropout", 0.1),
        attention_dropout=args.get("attention_dropout", 0.0),
        activation_dropout=args.get("activation_dropout", args.get("relu_dropout", 0.0)),
        activation_function=args.get("activation_fn", "relu"),
        label_smoothing=args.get("label_smoothing", 0.1),
        max_position_embeddings=args.get("max_source_positions", 1024),
        scale_embedding=not args.get("no_scale_embedding", False),
        share_encoder_decoder_embeddings=shared,
        tie_word_embeddings=bool(args.get("share_decoder_input_output_embed", shared)),
        normalize_before=normalize_before,
        encoder_final_layer_norm="encoder.layer_norm.weight" in state_dict,
        decoder_final_layer_norm="decoder.layer_norm.weight" in state_dict,
        sinusoid_layout="concatenated",
        sinusoid_timescale="tensor2tensor",
        position_offset=pad + 1,  # fairseq numbers real tokens from padding_idx + 1
        pad_token_id=pad,
        bos_token_id=args.get("bos", 0),
        eos_token_id=args.get("eos", 2),
        decoder_start_token_id=args.get("eos", 2),  # fairseq starts decoding from </s>
    )


def _fairseq_state_dict(config: VaswaniTransformerConfig, state_dict: dict[str, torch.Tensor]) -> dict:
    if config.share_encoder_decoder_embeddings:
        embeddings = [
            (r"encoder\.embed_tokens\.weight", r"model.shared.weight"),
            (r"decoder\.embed_tokens\.weight", None),
        ]
    else:
        embeddings = [
            (r"encoder\.embed_tokens\.weight", r"model.source_embeddings.weight"),
            (r"decoder\.embed_tokens\.weight", r"model.target_embeddings.weight"),
        ]
    rules = [
        *LAYER_RULES,
        *embeddings,
        (r"(encoder|decoder)\.layer_norm\.(weight|bias)", r"model.\1.layer_norm.\2"),
        (r"decoder\.output_projection\.weight", None if config.tie_word_embeddings else r"lm_head.weight"),
        (r"(encoder|decoder)\.version", None),
    ]
    return rename_state_dict(state_dict, rules)


# A fairseq checkpoint (checked before anything else): its weights under `model`, its arguments under `args` (older
# releases) or `cfg` (newer).
FAIRSEQ_LAYOUT = CheckpointLayout("a fairseq checkpoint (a dict of `model` and `args` or `cfg`)", keys=("model",))


def from_fairseq(path: str | Path) -> tuple[VaswaniTransformerConfig, dict[str, torch.Tensor], GenerationConfig]:
    with torch.serialization.safe_globals([argparse.Namespace]):
        checkpoint = load_original_checkpoint(path, FAIRSEQ_LAYOUT)
    args = checkpoint.get("args") or (checkpoint.get("cfg") or {}).get("model")
    if args is None:
        raise ValueError("not a fairseq checkpoint: neither `args` nor `cfg['model']` is present")
    args = vars(args) if isinstance(args, argparse.Namespace) else dict(args)
    state_dict = checkpoint["model"]
    config = _fairseq_config(args, state_dict)
    generation_args = {**args, **dict((checkpoint.get("cfg") or {}).get("generation") or {})}
    return config, _fairseq_state_dict(config, state_dict), _fairseq_generation_config(config, generation_args)


def from_fsmt(folder: str | Path) -> tuple[VaswaniTransformerConfig, dict[str, torch.Tensor], GenerationConfig]:
    from transformers import FSMTForConditionalGeneration

    fsmt = read_input(
        "--checkpoint",
        folder,
        model_folder("fsmt", "an FSMT model"),
        lambda: FSMTForConditionalGeneration.from_pretrained(folder, use_safetensors=True),
    )
    source = fsmt.config
    state_dict = {key.removeprefix("model."): value for key, value in fsmt.state_dict().items()}
    args = {
        "encoder_layers": source.encoder_layers,
        "decoder_layers": source.decoder_layers,
        "encoder_attention_heads": source.encoder_attention_heads,
        "decoder_attention_heads": source.decoder_attention_heads,
        "encoder_ffn_embed_dim": source.encoder_ffn_dim,
        "decoder_ffn_embed_dim": source.decoder_ffn_dim,
        "dropout": source.dropout,
        "attention_dropout": source.attention_dropout,
        "activation_dropout": source.activation_dropout,
        "activation_fn": source.activation_function,
        "max_source_positions": source.max_position_embeddings,
        "no_scale_embedding": not source.scale_embedding,
        "share_all_embeddings": False,  # FSMT keeps separate source and target tables
        "share_decoder_input_output_embed": source.tie_word_embeddings,
        "pad": source.pad_token_id,
        "bos": source.bos_token_id,
        "eos": source.eos_token_id,
    }
    config = _fairseq_config(args, state_dict)
    return config, _fairseq_state_dict(config, state_dict), _hf_generation_config(fsmt)


def convert(source: str, checkpoint: str | Path, output: str | Path) -> VaswaniTransformerForConditionalGeneration:
    """Converts, loads strictly, and saves to `output`; returns the model."""
    readers = {"marian": from_marian, "fsmt": from_fsmt, "fairseq": from_fairseq}
    if source not in readers:
        raise ValueError(f"unknown source {source!r}; choose one of {sorted(readers)}")
    config, state_dict, generation_config = readers[source](checkpoint)
    model = VaswaniTransformerForConditionalGeneration(config)
    model.generation_config = generation_config
    tied = {"lm_head.weight"} if config.tie_word_embeddings else set()
    missing, unexpected = model.load_state_dict(state_dict, strict=False)
    if set(missing) - tied or unexpected:
        raise ValueError(f"state dict mismatch: missing {sorted(set(missing) - tied)}, unexpected {unexpected}")
    model.tie_weights()
    model.eval()
    model.save_pretrained(output)
    return model


def main(argv: list[str] | None = None, prog: str | None = None) -> None:
    parser = converter_parser(__doc__, prog)
    parser.add_argument("--source", required=True, choices=["marian", "fsmt", "fairseq"])
    parser.add_argument("--checkpoint", required=True, help="the source folder or file")
    add_output_arguments(parser)
    args = parser.parse_args(argv)
    check_output(args)
    model = convert(args.source, args.checkpoint, args.output)
    print(json.dumps({"output": str(args.output), "parameters": sum(p.numel() for p in model.parameters())}))


if __name__ == "__main__":
    main()
