"""Converts the variables of the original Bi-BloSAN code (taoshen58/BiBloSA, TensorFlow 1) to hf_attn.

Original code: https://github.com/taoshen58/BiBloSA. Three models are read:
- `encoder`: the universal interface `context_fusion.sentence_encoding_models(..., method="block")` under any scope:
  a `BiBlosaModel` (feed it `inputs_embeds`, as the original's `rep_tensor`).
- `snli`: `exp_SNLI`'s `ModelContextFusion` (scope `exp_context_fusion`): a `BiBlosaForPairClassification`.
- `sc`: `exp_SC`'s (and exp_SST's, exp_TREC's) `ModelContextFusion` (scope `<dataset>_exp_context_fusion`): a
  `BiBlosaForSequenceClassification`.

Checkpoint formats: a real TensorFlow checkpoint (a `model.ckpt-N` prefix or its folder; needs the `tensorflow`
extra), or the same variables exported as `.safetensors` / `.npz`, keyed by their TF names without `:0`. Dense
weights are TF's `[in, out]` and are transposed for `nn.Linear`. A `tf.train.Saver` checkpoint also holds
`global_step`, optimizer slots (`Adadelta`, `Adam`, `beta*_power`) and an EMA shadow per variable
(`<scope>/<scope>/<name>/ExponentialMovingAverage`): the original evaluates with the raw variables, so the shadows are
ignored unless `--use-ema` picks them.

Key table (TF suffix -> hf_attn; `<dir>` is forward_attn/backward_attn -> forward_attention/backward_attention, under
`context_fusion_layers/ct_block_attn/`; transposes for every `W`):
    <dir>/split_seq/bn_dense_map/linear_map/{W,bias}                 <dir>.token_map               h = act(x W + b)
    <dir>/self_attention/linear_dependent_head/W  [H, 2H]            <dir>.intra_key (cols [:H]), .intra_query ([H:])
    <dir>/self_attention/f_bias                                      <dir>.intra_bias
    <dir>/source2token_self_attn/bn_dense_map/linear_map/{W,bias}    <dir>.summary_scores
    <dir>/self_attn_inter_block/disa/bn_dense_map/linear_map/*       <dir>.inter_map
    <dir>/self_attn_inter_block/disa/attention/linear_dependent/W    <dir>.inter_key
    <dir>/self_attn_inter_block/disa/attention/linear_head/W         <dir>.inter_query
    <dir>/self_attn_inter_block/disa/attention/f_bias                <dir>.inter_bias
    <dir>/self_attn_inter_block/disa/output/linear_fusion_i/*        <dir>.inter_gate_map
    <dir>/self_attn_inter_block/disa/output/linear_fusion_a/*        <dir>.inter_gate_attention
    <dir>/self_attn_inter_block/disa/output/o_bias                   <dir>.inter_gate_bias
    <dir>/combination/linear_new_context_and_gate/{W,bias} [3H, 2H]  <dir>.fusion_map (cols [:H]), .fusion_gate ([H:])
    multi_dim_attn_for_block/bn_dense_map{1,2}/linear_map/*          encoder.pooling.{dense,scores}
    emb/gene_token_emb_mat/emb_mat                                   embeddings rows 2.. (ids 0, 1 are zero rows)
    output/pre_output, output/pre_output1/{gate,map}/linear_map, output/logits   classifier.{dense, highway_gate,
                                                                     highway_map, out_proj}                (snli)
    output/pre_logits_linear, output/get_output (no bias)            dense, out_proj                       (sc)

What the weights do not say comes from the original's arguments (`--argv`, the training command's flags as the
original `configs.py` reads them, or the flags here, which win): the block length (`--block_len`; none = the in-graph
rule, `block_length="auto"`), the keep probability (`--dropout`), the L2 coefficient of the loss (`--wd`), and, for
the universal encoder, the activation (the SNLI model hard-codes elu, the SC models relu). The converted model keeps
the original's padding behaviour (`mask_padding=False`). The GloVe-only embedding rows are a graph constant
built from the data, not variables: `--glove-matrix` appends them (ids tds..); `--vocab` (one token per line, in id
order: `@@@empty`, `@@@unk`, ...) saves a tokenizer giving the original's ids.

Usage:
    hf-attn convert biblosa --checkpoint model.ckpt-120000 --output converted/ \
        [--scope exp_context_fusion] [--argv "--block_len 6 --dropout 0.75 --wd 5e-5"] [--glove-matrix glove.npy]
"""

from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path
from typing import Any

import numpy as np
import torch

from hf_attn.conversion import (
    EXAMPLE_HELP,
    add_output_arguments,
    check_output,
    conversion_record,
    converter_parser,
    finish_conversion,
    rename_state_dict,
)
from hf_attn.models.biblosa.configuration_biblosa import BiBlosaConfig
from hf_attn.models.biblosa.modeling_biblosa import (
    BiBlosaForPairClassification,
    BiBlosaForSequenceClassification,
    BiBlosaModel,
)
from hf_attn.utils.inputs import Stage, check_input, is_file_of

ORIGINAL_CODE = "https://github.com/taoshen58/BiBloSA"
_DIRECTION = r"context_fusion_layers/ct_block_attn/(forward|backward)_attn/"
_DISA = _DIRECTION + "self_attn_inter_block/disa/"
_LINEAR = r"/(?:linear_map/)?(W|bias)"
# TF suffix (after the encoder's root) -> hf_attn name, `\1` the direction; "W" becomes "weight" afterwards.
ENCODER_KEYS: list[tuple[str, str | None]] = [
    (_DIRECTION + r"split_seq/bn_dense_map/linear_map/(W|bias)", r"\1_attention.token_map.\2"),
    (_DIRECTION + r"self_attention/linear_dependent_head/W", r"\1_attention.intra_key_query.W"),
    (_DIRECTION + r"self_attention/f_bias", r"\1_attention.intra_bias"),
    (_DIRECTION + r"source2token_self_attn/bn_dense_map/linear_map/(W|bias)", r"\1_attention.summary_scores.\2"),
    (_DISA + r"bn_dense_map/linear_map/(W|bias)", r"\1_attention.inter_map.\2"),
    (_DISA + r"attention/linear_dependent/W", r"\1_attention.inter_key.W"),
    (_DISA + r"attention/linear_head/W", r"\1_attention.inter_query.W"),
    (_DISA + r"attention/f_bias", r"\1_attention.inter_bias"),
    (_DISA + r"output/linear_fusion_i/(W|bias)", r"\1_attention.inter_gate_map.\2"),
    (_DISA + r"output/linear_fusion_a/(W|bias)", r"\1_attention.inter_gate_attention.\2"),
    (_DISA + r"output/o_bias", r"\1_attention.inter_gate_bias"),
    (_DIRECTION + r"combination/linear_new_context_and_gate/(W|bias)", r"\1_attention.fusion_map_gate.\2"),
    (r"multi_dim_attn_for_block/bn_dense_map1/linear_map/(W|bias)", r"pooling.dense.\1"),
    (r"multi_dim_attn_for_block/bn_dense_map2/linear_map/(W|bias)", r"pooling.scores.\1"),
]
# TF suffix (after the model's scope) -> hf_attn name, for the heads.
HEAD_KEYS: list[tuple[str, str | None]] = [
    (r"emb/gene_token_emb_mat/emb_mat", "biblosa.embeddings.emb_mat"),
    (r"output/pre_output" + _LINEAR, r"classifier.dense.\1"),
    (r"output/pre_output1/gate" + _LINEAR, r"classifier.highway_gate.\1"),
    (r"output/pre_output1/map" + _LINEAR, r"classifier.highway_map.\1"),
    (r"output/logits" + _LINEAR, r"classifier.out_proj.\1"),
    (r"output/pre_logits_linear" + _LINEAR, r"dense.\1"),
    (r"output/get_output/W", r"out_proj.W"),
]
# What a tf.train.Saver checkpoint holds beside the variables.
IGNORED = [r"(.*/)?global_step", r"(.*/)?beta[12]_power", r".*/(Adadelta|Adam)(_1)?", r".*/ExponentialMovingAverage"]
ENCODER_ROOTS = ("sent_encoding/ct_based_sent2vec/", "")
ACTIVATIONS = {"snli": "elu", "sc": "relu"}  # hard-coded in the original models


# What `read_variables` reads (a TensorFlow checkpoint is a prefix, not a file: looked for by its `.index`).
VARIABLES = Stage(
    "the original's variables (a .safetensors or .npz of them, or a TensorFlow checkpoint prefix)",
    is_file_of("safetensors", "weights", "npz"),
    hub=False,
)


def read_variables(path: str | Path) -> dict[str, np.ndarray]:
    """The checkpoint's variables by TF name: `.safetensors`, `.npz` (no pickle), or a TensorFlow checkpoint (its
    prefix, beside which `PREFIX.index` lies); a file of another kind is refused, named as what it is."""
    path = Path(path)
    if not Path(f"{path}.index").is_file():
        check_input("--checkpoint", path, VARIABLES)
    if path.suffix == ".safetensors":
        from safetensors.numpy import load_file

        return dict(load_file(path))
    if path.suffix == ".npz":
        with np.load(path, allow_pickle=False) as archive:
            return {name: archive[name] for name in archive.files}
    try:
        import tensorflow as tf
    except ImportError as error:
        raise ValueError(
            f"{path} is neither .safetensors nor .npz, so it must be a TensorFlow checkpoint, which needs "
            "TensorFlow: `pip install hf_attn[tensorflow]`, or export the variables to .npz first."
        ) from error
    reader = tf.train.load_checkpoint(str(path))
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}


def select_scope(variables: dict[str, np.ndarray], scope: str | None) -> str:
    """The model's scope (the first name component): `scope`, or the only one that holds a Bi-BloSA encoder."""
    scopes = sorted({name.split("/")[0] for name in variables if "/ct_block_attn/" in name})
    if scope is None:
        if len(scopes) != 1:
            raise ValueError(f"The checkpoint holds Bi-BloSA encoders under scopes {scopes}: choose one with --scope.")
        return scopes[0]
    if scope not in scopes:
        raise ValueError(f"--scope {scope!r} holds no Bi-BloSA encoder; the checkpoint's scopes are {scopes}.")
    return scope


def model_kind(variables: dict[str, np.ndarray], scope: str) -> str:
    """`snli`, `sc` or `encoder`, from the output layers present."""
    if f"{scope}/output/logits/W" in variables:
        return "snli"
    if f"{scope}/output/get_output/W" in variables:
        return "sc"
    return "encoder"


def scope_variables(variables: dict[str, np.ndarray], scope: str, use_ema: bool) -> dict[str, torch.Tensor]:
    """The scope's trainable variables by their name inside the scope; the EMA shadows instead with `use_ema`."""
    selected = {}
    for name, value in variables.items():
        if not name.startswith(f"{scope}/") or any(re.fullmatch(pattern, name) for pattern in IGNORED):
            continue
        if use_ema:
            shadow = f"{scope}/{name}/ExponentialMovingAverage"
            if shadow not in variables:
                raise ValueError(f"--use-ema: the checkpoint has no EMA shadow {shadow!r} of {name!r}.")
            value = variables[shadow]
        selected[name.removeprefix(f"{scope}/")] = torch.from_numpy(np.array(value, dtype=np.float32))
    return selected


def original_arguments(argv: list[str] | None) -> dict[str, Any]:
    """The flags of the original `configs.py` that change outputs or loss, from a training command's argv."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--block_len", type=int, default=None)
    parser.add_argument("--dropout", type=float, default=None)  # the keep probability
    parser.add_argument("--wd", type=float, default=None)
    parser.add_argument("--context_fusion_method", default="block")
    known, _ = parser.parse_known_args(argv or [])
    if known.context_fusion_method != "block":
        raise ValueError(f"--context_fusion_method {known.context_fusion_method!r} is not Bi-BloSA ('block').")
    return {"block_len": known.block_len, "keep_prob": known.dropout, "wd": known.wd}


def convert_state_dict(variables: dict[str, torch.Tensor], kind: str, hidden_size: int) -> dict[str, torch.Tensor]:
    """Renames by the key tables, transposes TF's `[in, out]` weights and splits the fused column blocks."""
    prefix = "encoder." if kind == "encoder" else "biblosa.encoder."
    root = next(root for root in ENCODER_ROOTS if any(name.startswith(root + "context_fusion") for name in variables))
    rules = [(re.escape(root) + pattern, prefix + target) for pattern, target in ENCODER_KEYS]
    rules += [(pattern, target) for pattern, target in HEAD_KEYS] if kind != "encoder" else []
    renamed = rename_state_dict(variables, rules)
    state_dict: dict[str, torch.Tensor] = {}
    for name, value in renamed.items():
        if name.endswith(".emb_mat"):  # ids 0 (@@@empty) and 1 (@@@unk) are constant zero rows
            state_dict["biblosa.embeddings.weight"] = torch.cat([value.new_zeros(2, value.size(1)), value])
        elif name.endswith("intra_key_query.W"):
            base = name.removesuffix("intra_key_query.W")
            state_dict[base + "intra_key.weight"] = value[:, :hidden_size].T.contiguous()
            state_dict[base + "intra_query.weight"] = value[:, hidden_size:].T.contiguous()
        elif ".fusion_map_gate." in name:
            base, part = name.split(".fusion_map_gate.")
            target = "weight" if part == "W" else "bias"
            columns = (value[..., :hidden_size], value[..., hidden_size:])
            for module, column in zip(("fusion_map", "fusion_gate"), columns, strict=True):
                state_dict[f"{base}.{module}.{target}"] = column.T.contiguous() if part == "W" else column.clone()
        elif name.endswith(".W"):
            state_dict[name.removesuffix(".W") + ".weight"] = value.T.contiguous()
        else:
            state_dict[name] = value
    return state_dict


def convert(
    checkpoint_path: str | Path,
    output_dir: str | Path | None = None,
    scope: str | None = None,
    argv: list[str] | None = None,
    block_length: int | str | None = None,
    keep_prob: float | None = None,
    wd: float | None = None,
    activation: str | None = None,
    glove_matrix: np.ndarray | torch.Tensor | None = None,
    use_ema: bool = False,
    vocab: list[str] | None = None,
    example: str | None = None,
) -> BiBlosaModel | BiBlosaForPairClassification | BiBlosaForSequenceClassification:
    """Builds (and with `output_dir` saves) the hf_attn model of the checkpoint's Bi-BloSA model under `scope`.

    `argv` is the original training command's flags; `block_length` (an int, `"auto"`, or `None` for the argv's
    `--block_len`, itself `None` = `"auto"`), `keep_prob`, `wd` and `activation` override them. `example`: a text
    whose attention the card shows (with `vocab`, which gives the folder a tokenizer).
    """
    variables = read_variables(checkpoint_path)
    scope = select_scope(variables, scope)
    kind = model_kind(variables, scope)
    selected = scope_variables(variables, scope, use_ema)
    arguments = original_arguments(argv)
    activation = activation or ACTIVATIONS.get(kind)
    if activation is None:
        raise ValueError("The universal encoder's activation is a call argument, not a variable: pass --activation.")
    token_map = next(value for name, value in selected.items() if name.endswith("split_seq/bn_dense_map/linear_map/W"))
    embedding_size, hidden_size = token_map.shape
    state_dict = convert_state_dict(selected, kind, hidden_size)
    if glove_matrix is not None and kind != "encoder":
        glove = torch.as_tensor(np.asarray(glove_matrix, dtype=np.float32))
        state_dict["biblosa.embeddings.weight"] = torch.cat([state_dict["biblosa.embeddings.weight"], glove])
    block_length = block_length if block_length is not None else arguments["block_len"]
    keep_prob = keep_prob if keep_prob is not None else arguments["keep_prob"]
    wd = wd if wd is not None else arguments["wd"]
    fields: dict[str, Any] = {
        "embedding_size": embedding_size,
        "hidden_size": hidden_size,
        "block_length": "auto" if block_length is None else block_length,
        "hidden_act": activation,
        "hidden_dropout_prob": 1.0 - keep_prob if keep_prob is not None else 0.0,
        "l2_regularization": wd or 0.0,
        "mask_padding": False,
        "pad_token_id": 0,
    }
    if kind == "snli":
        fields["classifier_hidden_size"] = state_dict["classifier.dense.weight"].size(0)
        fields["num_labels"] = state_dict["classifier.out_proj.weight"].size(0)
        fields["id2label"] = {0: "contradiction", 1: "neutral", 2: "entailment"} if fields["num_labels"] == 3 else None
    elif kind == "sc":
        fields["classifier_hidden_size"] = state_dict["dense.weight"].size(0)
        fields["num_labels"] = state_dict["out_proj.weight"].size(0)
    if kind != "encoder":
        fields["vocab_size"] = state_dict["biblosa.embeddings.weight"].size(0)
    config = BiBlosaConfig(**{key: value for key, value in fields.items() if value is not None})
    model_class = {
        "encoder": BiBlosaModel,
        "snli": BiBlosaForPairClassification,
        "sc": BiBlosaForSequenceClassification,
    }
    model = model_class[kind](config)
    if kind == "encoder":  # the universal encoder reads embeddings from its caller: keep the initial table
        state_dict["embeddings.weight"] = model.embeddings.weight.detach().clone()
    model.load_state_dict(state_dict, strict=True)
    model.eval()
    if output_dir is not None:
        model.save_pretrained(output_dir)
        if vocab is not None:
            from hf_attn.tokenization.word_level import build_word_level_tokenizer

            tokenizer = build_word_level_tokenizer(vocab, pad_token=vocab[0], unk_token=vocab[1], lowercase=False)
            tokenizer.save_pretrained(output_dir)
        record = conversion_record(
            ORIGINAL_CODE, __file__, checkpoint_path, output_dir,
            scope=scope, model=kind, use_ema=use_ema, argv=argv,
            original_arguments={**arguments, "activation": activation},
            layout="TF variables by name; W [in, out] transposed; fused columns split",
        )  # fmt: skip
        finish_conversion(output_dir, record, example=example)
    return model


def main(argv: list[str] | None = None, prog: str | None = None) -> None:
    parser = converter_parser(__doc__, prog)
    parser.add_argument("--checkpoint", required=True, help=".safetensors / .npz of TF variables, or a TF checkpoint")
    add_output_arguments(parser)
    parser.add_argument("--scope", help="the model's variable scope (default: the only one)")
    parser.add_argument("--argv", help="the original training command's flags, e.g. '--block_len 6 --dropout 0.75'")
    parser.add_argument("--block-len", help="an int, or 'auto' (the in-graph rule); overrides --argv")
    parser.add_argument("--keep-prob", type=float, help="the original's --dropout (a keep probability)")
    parser.add_argument("--wd", type=float, help="the L2 coefficient of the original's loss")
    parser.add_argument("--activation", choices=["elu", "relu", "linear"], help="required for the universal encoder")
    parser.add_argument("--glove-matrix", help="the GloVe-only embedding rows (.npy), appended after emb_mat")
    parser.add_argument("--vocab", help="the token list (one per line, in id order) for a tokenizer")
    parser.add_argument("--use-ema", action="store_true", help="take the EMA shadows instead of the raw variables")
    parser.add_argument("--example", help=EXAMPLE_HELP)
    args = parser.parse_args(argv)
    check_output(args)
    block_length = args.block_len if args.block_len in (None, "auto") else int(args.block_len)
    convert(
        args.checkpoint, args.output, scope=args.scope, argv=shlex.split(args.argv) if args.argv else None,
        block_length=block_length, keep_prob=args.keep_prob, wd=args.wd, activation=args.activation,
        glove_matrix=np.load(args.glove_matrix, allow_pickle=False) if args.glove_matrix else None,
        use_ema=args.use_ema, vocab=Path(args.vocab).read_text().splitlines() if args.vocab else None,
        example=args.example,
    )  # fmt: skip


if __name__ == "__main__":
    main()
