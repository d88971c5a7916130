"""Parity of `conversion/convert_biblosa_original_to_hf.py` with the original TensorFlow code.

`../shared/fixtures/biblosa` holds the original's variables, inputs and 112 outputs and intermediates of three graphs
(the universal encoder, the SNLI model, the SC model). Every setting is read from its `original_config.json`, so the
same tests run on fixtures of other sizes, activations and block lengths. A float64 NumPy transcription of the
original's math (the fixture README's "math as the original computes it", applied to the original variable names)
checks the conversion at other sizes, block lengths and activations, on variables drawn here.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from safetensors.numpy import save_file
from safetensors.torch import load_file

from hf_attn.models.biblosa.block_attention import attention_probabilities, direction_mask, scaled_tanh_scores
from hf_attn.models.biblosa.convert_biblosa_original_to_hf import convert, main, original_arguments
from hf_attn.models.biblosa.modeling_biblosa import ACTIVATIONS, resolve_block_length, split_into_blocks
from tests.helpers import fixture_dir

ATOL = 1e-5


@pytest.fixture(scope="session")
def fixture():
    folder = fixture_dir("biblosa")
    return {
        "folder": folder,
        "checkpoint": folder / "original_checkpoint.safetensors",
        "config": json.loads((folder / "original_config.json").read_text()),
        "inputs": load_file(folder / "inputs.safetensors"),
        "expected": load_file(folder / "expected.safetensors"),
    }


def assert_matches(actual: dict[str, torch.Tensor], expected: dict[str, torch.Tensor], prefix: str) -> None:
    """Every named tensor against the fixture's `<prefix><name>`: masks, block lengths and predictions exactly, the
    rest at 1e-5."""
    for name, value in actual.items():
        reference = expected[prefix + name]
        assert tuple(value.shape) == tuple(reference.shape), (prefix + name, value.shape, reference.shape)
        if reference.dtype in (torch.bool, torch.int32, torch.int64):
            assert torch.equal(value.to(reference.dtype), reference), prefix + name
        else:
            torch.testing.assert_close(value.float(), reference, rtol=1e-5, atol=ATOL, msg=prefix + name)


def direction_tensors(direction, inputs: torch.Tensor, mask: torch.Tensor, block_length: int, full: bool):
    """One direction's tensors under the fixture's names: the model's own outputs, and the score tensors from the
    kernel's pieces (the model never holds them whole)."""
    out = direction(inputs, mask, block_length)
    tensors = {"rep_map": out.hidden, "block_summary": out.block_summaries, "inter_output": out.block_output,
               "output": out.output}  # fmt: skip
    if not full:
        return tensors
    mask_split = split_into_blocks(mask, block_length)
    batch, blocks, length, hidden = out.hidden.shape
    keys, queries = direction.intra_key(out.hidden), direction.intra_query(out.hidden)
    flat = (keys.flatten(0, 1), queries.flatten(0, 1))
    allowed = direction_mask(length, direction.direction)
    intra_logits, _ = scaled_tanh_scores(*flat, direction.intra_bias, direction.config.score_scale)
    intra_scores, _ = attention_probabilities(
        *flat, direction.intra_bias, mask_split.flatten(0, 1), allowed, direction.config.score_scale
    )
    inter_keys, inter_queries = direction.inter_key(out.block_hidden), direction.inter_query(out.block_hidden)
    everything = torch.ones(batch, blocks, dtype=torch.bool)  # the original's inter-block mask: padding blocks too
    inter_logits, _ = scaled_tanh_scores(inter_keys, inter_queries, direction.inter_bias, direction.config.score_scale)
    inter_scores, _ = attention_probabilities(
        inter_keys, inter_queries, direction.inter_bias, everything, direction_mask(blocks, direction.direction),
        direction.config.score_scale,
    )  # fmt: skip
    new_context = direction.fusion_map(out.fusion_input)
    gate_logits = direction.fusion_gate(out.fusion_input)
    activation = ACTIVATIONS[direction.config.hidden_act]
    tensors.update(
        rep_tensor_split=split_into_blocks(inputs, block_length),
        rep_mask_split=mask_split,
        intra_dependent_head=torch.cat([keys, queries], dim=-1),
        intra_logits=intra_logits.view(batch, blocks, length, length, hidden),
        intra_attn_mask=allowed & mask_split[..., :, None] & mask_split[..., None, :],
        intra_attn_score=intra_scores.view(batch, blocks, length, length, hidden),
        intra_attn_result=out.intra_output,
        s2t_logits=direction.summary_scores(out.intra_output),
        s2t_soft=out.summary_weights,
        inter_attn_mask=direction_mask(blocks, direction.direction).expand(batch, -1, -1),
        inter_rep_map=out.block_hidden,
        inter_logits=inter_logits,
        inter_attn_score=inter_scores,
        inter_attn_result=out.inter_output,
        inter_fusion_gate=out.inter_gate,
        comb_input=out.fusion_input,
        comb_new_context=new_context,
        comb_gate_logits=gate_logits,
        comb_gate=out.fusion_gate,
        comb_result=out.fusion_gate * activation(new_context) + (1 - out.fusion_gate) * out.hidden,
    )
    # The model's own intermediates agree with the pieces: its maps are the feature-averaged scores.
    torch.testing.assert_close(out.intra_attentions, intra_scores.mean(-1).view(batch, blocks, length, length))
    return tensors


def encoder_tensors(encoder, inputs: torch.Tensor, mask: torch.Tensor, full: bool) -> dict[str, torch.Tensor]:
    """The encoder's tensors under the fixture's names (`fw.`/`bw.` for the directions, `s2t.` for the pooling)."""
    block_length = resolve_block_length(encoder.config.block_length, mask.size(1))
    tensors: dict[str, torch.Tensor] = {"block_len": torch.tensor(block_length)}
    for name, direction in (("fw", encoder.forward_attention), ("bw", encoder.backward_attention)):
        for key, value in direction_tensors(direction, inputs, mask, block_length, full).items():
            tensors[f"{name}.{key}"] = value
    hidden_states, sentence, weights, _, _ = encoder(inputs, mask)
    tensors.update({"context_fusion_output": hidden_states, "sentence_vector": sentence, "s2t.soft": weights})
    if full:
        map1 = ACTIVATIONS[encoder.config.hidden_act](encoder.pooling.dense(hidden_states))
        tensors.update({"s2t.map1": map1, "s2t.logits": encoder.pooling.scores(map1)})
    return tensors


def converted_encoder(fixture):
    """The fixture's encoder converted with the original call's settings (`"auto"` r where the original computes
    it)."""
    call = fixture["config"]["encoder"]["call"]
    return convert(
        fixture["checkpoint"], scope=call["scope"], block_length=call["block_len"] or "auto",
        keep_prob=call["keep_prob"], wd=call["wd"], activation=call["activation_function"],
    )  # fmt: skip


@torch.no_grad()
def test_encoder_reproduces_every_intermediate_of_the_original(fixture):
    model = converted_encoder(fixture)
    inputs, mask = fixture["inputs"]["encoder.rep_tensor"], fixture["inputs"]["encoder.rep_mask"]
    tensors = encoder_tensors(model.encoder, inputs, mask, full=True)
    names = {name.removeprefix("encoder.") for name in fixture["expected"] if name.startswith("encoder.")}
    assert names == set(tensors), names ^ set(tensors)  # every intermediate the fixture names, and no other
    assert_matches(tensors, fixture["expected"], "encoder.")
    output = model(inputs_embeds=inputs, attention_mask=mask)  # the public forward gives the same
    torch.testing.assert_close(output.sentence_embedding, fixture["expected"]["encoder.sentence_vector"], rtol=0,
                               atol=ATOL)  # fmt: skip


@torch.no_grad()
def test_the_fused_kernels_reproduce_the_original(fixture, monkeypatch):
    """The encoder on the fused Triton kernels (in Triton's interpreter here, `triton_block_attention.py`) gives the
    original's sentence vector too, at the fixture's block length (`"auto"` where the original computes it)."""
    pytest.importorskip("triton")
    from hf_attn.models.biblosa import block_attention

    monkeypatch.setattr(block_attention, "TRITON_ON_CPU", True)
    model = converted_encoder(fixture)
    inputs, mask = fixture["inputs"]["encoder.rep_tensor"], fixture["inputs"]["encoder.rep_mask"]
    output = model(inputs_embeds=inputs, attention_mask=mask)
    torch.testing.assert_close(output.sentence_embedding, fixture["expected"]["encoder.sentence_vector"], rtol=0,
                               atol=ATOL)  # fmt: skip


def snli_argv(config: dict) -> list[str]:
    return config["snli"]["argv"]


def _flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def snli_scope(config: dict) -> str:
    """The SNLI model's variable scope: its network type (snli_main.py's `tf.variable_scope(network_type)`)."""
    return _flag(config["snli"]["argv"], "--network_type")


def sc_scope(config: dict) -> str:
    """The SC model's variable scope, `<dataset_type>_<network_type>` as sc_main.py builds it."""
    argv = config["sc"]["argv"]
    return f"{_flag(argv, '--dataset_type')}_{_flag(argv, '--network_type')}"


@torch.no_grad()
def test_snli_model_reproduces_the_original(fixture, tmp_path):
    inputs, expected = fixture["inputs"], fixture["expected"]
    glove, scope = save_npy(tmp_path, inputs["snli.glove_emb_mat"]), snli_scope(fixture["config"])
    main([
        "--checkpoint", str(fixture["checkpoint"]), "--output", str(tmp_path), "--scope", scope,
        "--argv", " ".join(snli_argv(fixture["config"])), "--glove-matrix", str(glove),
    ])  # fmt: skip
    from hf_attn import BiBlosaForPairClassification

    model = BiBlosaForPairClassification.from_pretrained(tmp_path).eval()
    wd = original_arguments(snli_argv(fixture["config"]))["wd"] or 0.0
    assert model.config.l2_regularization == pytest.approx(wd) and not model.config.mask_padding
    premise, hypothesis = inputs["snli.sent1_token"].long(), inputs["snli.sent2_token"].long()
    labels = inputs["snli.gold_label"].long()
    output = model(  # the original masks id 0 (tf.cast(ids, bool)): the tokenizer's attention_mask does the same
        input_ids=premise, attention_mask=premise != 0, pair_input_ids=hypothesis,
        pair_attention_mask=hypothesis != 0, labels=labels,
    )  # fmt: skip
    embeddings = model.biblosa.embeddings
    tensors = {"token_emb_mat": embeddings.weight, "s1_emb": embeddings(premise), "s2_emb": embeddings(hypothesis)}
    for name, ids in (("s1", premise), ("s2", hypothesis)):
        for key, value in encoder_tensors(model.biblosa.encoder, embeddings(ids), ids != 0, full=False).items():
            tensors[f"{name}.{key}"] = value
    head = model.classifier
    premise_vector, hypothesis_vector = output.sentence_embedding, output.pair_sentence_embedding
    out_rep = torch.cat([premise_vector, hypothesis_vector, premise_vector - hypothesis_vector,
                         premise_vector * hypothesis_vector], dim=-1)  # fmt: skip
    pre_output = head.activation(head.dense(out_rep))
    gate = torch.sigmoid(head.highway_gate(pre_output))
    tensors.update(
        s1_rep=premise_vector,
        s2_rep=hypothesis_vector,
        out_rep=out_rep,
        pre_output=pre_output,
        pre_output1=gate * head.activation(head.highway_map(pre_output)) + (1 - gate) * pre_output,
        logits=output.logits,
        predictions=output.logits.argmax(-1),
        accuracy=(output.logits.argmax(-1) == labels).float(),
        xentropy_loss_mean=torch.nn.functional.cross_entropy(output.logits, labels),
        loss=output.loss,  # cross-entropy + wd · Σ‖W‖²/2 over the original's reg_vars
    )
    names = {name.removeprefix("snli.") for name in expected if name.startswith("snli.")}
    assert names == set(tensors), names ^ set(tensors)
    assert_matches(tensors, expected, "snli.")


def save_npy(folder, tensor: torch.Tensor):
    path = folder / "glove.npy"
    np.save(path, tensor.numpy())
    return path


@torch.no_grad()
def test_sc_model_reproduces_the_original(fixture):
    inputs, expected = fixture["inputs"], fixture["expected"]
    argv = fixture["config"]["sc"]["argv"]
    scope = sc_scope(fixture["config"])
    model = convert(fixture["checkpoint"], scope=scope, argv=argv, glove_matrix=inputs["sc.glove_emb_mat"].numpy())
    ids, labels = inputs["sc.token_seq"].long(), inputs["sc.gold_label"].long()
    output = model(input_ids=ids, attention_mask=ids != 0, labels=labels)  # the original masks id 0
    emb = model.biblosa.embeddings(ids)
    tensors = {"token_emb_mat": model.biblosa.embeddings.weight, "emb": emb}
    for key, value in encoder_tensors(model.biblosa.encoder, emb, ids != 0, full=False).items():
        tensors[f"enc.{key}"] = value
    tensors.update(
        pre_logits=model.activation(model.dense(output.sentence_embedding)),
        logits=output.logits,
        predictions=output.logits.argmax(-1),
        accuracy=(output.logits.argmax(-1) == labels).float(),
        xentropy_loss_mean=torch.nn.functional.cross_entropy(output.logits, labels),
        loss=output.loss,
    )
    names = {name.removeprefix("sc.") for name in expected if name.startswith("sc.")}
    assert names == set(tensors), names ^ set(tensors)
    assert_matches(tensors, expected, "sc.")


def test_auto_block_length_is_the_originals_for_every_width(fixture):
    from hf_attn.models.biblosa.modeling_biblosa import original_block_length

    table = fixture["expected"]["auto_block_len_table"].tolist()
    assert [original_block_length(n) for n in range(1, len(table) + 1)] == table
    assert [original_block_length(n) for n in (4, 32, 108, 256, 500, 864)] == [2, 4, 7, 9, 11, 13]  # float32 cubes


def test_training_rule_block_length():
    from hf_attn.models.biblosa.modeling_biblosa import block_length_for_lengths

    lengths = [10, 14, 20, 8, 12]
    mean, std = float(np.mean(lengths)), float(np.std(lengths))
    expected = math.ceil(math.pow(2 * (mean + std * math.sqrt(2 * math.log(128))), 1 / 3)) + 1
    assert block_length_for_lengths(lengths, 128) == expected == 5
    with pytest.raises(ValueError, match="lengths"):
        block_length_for_lengths([], 128)


# A real tf.train.Saver checkpoint: EMA shadows and optimizer slots beside the variables --------------------------


@torch.no_grad()
def test_saver_extras_are_ignored_and_ema_shadows_selectable(fixture, tmp_path):
    variables = {name: value.numpy() for name, value in load_file(fixture["checkpoint"]).items()}
    scope = sc_scope(fixture["config"])
    own = {name: value for name, value in variables.items() if name.startswith(scope + "/")}
    saved = dict(own)
    for name, value in own.items():
        saved[f"{scope}/{name}/ExponentialMovingAverage"] = (value * 0.5).astype(np.float32)
        saved[f"{name}/Adam"] = np.zeros_like(value)
        saved[f"{name}/Adam_1"] = np.ones_like(value)
    saved.update(
        {"beta1_power": np.float32(0.9), "beta2_power": np.float32(0.99), f"{scope}/global_step": np.int64(7)}
    )
    path = tmp_path / "saver.npz"
    np.savez(path, **saved)
    argv = fixture["config"]["sc"]["argv"]
    raw = convert(path, argv=argv)
    reference = convert(fixture["checkpoint"], scope=scope, argv=argv)
    for (name, value), (_, expected) in zip(raw.state_dict().items(), reference.state_dict().items(), strict=True):
        torch.testing.assert_close(value, expected, rtol=0, atol=0, msg=name)
    ema = convert(path, argv=argv, use_ema=True)
    token_map = "biblosa.encoder.forward_attention.token_map.weight"
    torch.testing.assert_close(ema.state_dict()[token_map], reference.state_dict()[token_map] * 0.5)


def test_clear_errors(fixture, tmp_path):
    with pytest.raises(ValueError, match="--scope"):
        convert(fixture["checkpoint"])  # three models in one file
    with pytest.raises(ValueError, match="--activation"):
        convert(fixture["checkpoint"], scope=fixture["config"]["encoder"]["call"]["scope"])
    with pytest.raises(FileNotFoundError, match=r"--checkpoint .*model\.ckpt-100: no such file"):
        convert(tmp_path / "model.ckpt-100", scope="x")  # no checkpoint of that prefix
    (tmp_path / "model.ckpt-100.index").write_bytes(b"")  # a TensorFlow checkpoint's prefix: read with TensorFlow
    with pytest.raises(ValueError, match="TensorFlow"):
        convert(tmp_path / "model.ckpt-100", scope="x")
    with pytest.raises(ValueError, match=r"--checkpoint .*inputs\.csv is a CSV file, not the original's variables"):
        (tmp_path / "inputs.csv").write_text("text,label\na,1\n")
        convert(tmp_path / "inputs.csv", scope="x")
    variables = {name: value.numpy() for name, value in load_file(fixture["checkpoint"]).items()}
    variables[f"{sc_scope(fixture['config'])}/output/unknown/W"] = np.zeros((2, 2), np.float32)
    save_file(variables, tmp_path / "extra.safetensors")
    with pytest.raises(ValueError, match="unknown/W"):
        convert(tmp_path / "extra.safetensors", scope=sc_scope(fixture["config"]))


# The original's math in float64 NumPy, on the original variable names, at other settings ----------------------------


def _act(name: str):
    return {"elu": lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0))), "relu": lambda x: np.maximum(x, 0),
            "linear": lambda x: x}[name]  # fmt: skip


def _softmax(logits: np.ndarray, allowed: np.ndarray, axis: int) -> np.ndarray:
    masked = logits + (1 - allowed) * -1e30
    exp = np.exp(masked - masked.max(axis=axis, keepdims=True))
    return exp / exp.sum(axis=axis, keepdims=True)


def original_encoder(variables: dict, root: str, x: np.ndarray, mask: np.ndarray, r: int, act_name: str):
    """The README's `block_direction` and sentence encoding, transcribed."""
    act = _act(act_name)
    batch, n, _ = x.shape
    m = -(-n // r)
    outputs = []
    for direction in ("forward", "backward"):
        v_ = {key[len(f"{root}context_fusion_layers/ct_block_attn/{direction}_attn/"):]: value
              for key, value in variables.items() if f"/{direction}_attn/" in key}  # fmt: skip
        X = np.concatenate([x, np.zeros((batch, m * r - n, x.shape[2]))], 1).reshape(batch, m, r, -1)
        M = np.concatenate([mask, np.zeros((batch, m * r - n), bool)], 1).reshape(batch, m, r)
        h = act(X @ v_["split_seq/bn_dense_map/linear_map/W"] + v_["split_seq/bn_dense_map/linear_map/bias"])
        H = h.shape[-1]
        dh = h @ v_["self_attention/linear_dependent_head/W"]
        dep, head = dh[..., :H], dh[..., H:]
        S = 5 * np.tanh((dep[:, :, None, :, :] + head[:, :, :, None, :] + v_["self_attention/f_bias"]) / 5)
        i, j = np.arange(r)[:, None], np.arange(r)[None, :]
        D = (j < i) if direction == "forward" else (j > i)
        A = (D & M[:, :, :, None] & M[:, :, None, :])[..., None].astype(float)
        P = _softmax(S, A, axis=3) * A
        s = (P * h[:, :, None, :, :]).sum(3)
        a = (
            s @ v_["source2token_self_attn/bn_dense_map/linear_map/W"]
            + v_["source2token_self_attn/bn_dense_map/linear_map/bias"]
        )
        q = _softmax(a, M[..., None].astype(float), axis=2)
        v = (q * s).sum(2)
        disa = "self_attn_inter_block/disa/"
        g = act(v @ v_[disa + "bn_dense_map/linear_map/W"] + v_[disa + "bn_dense_map/linear_map/bias"])
        S2 = 5 * np.tanh((g[:, None, :, :] @ v_[disa + "attention/linear_dependent/W"]
                          + (g @ v_[disa + "attention/linear_head/W"])[:, :, None, :]
                          + v_[disa + "attention/f_bias"]) / 5)  # fmt: skip
        k, l_ = np.arange(m)[:, None], np.arange(m)[None, :]
        D2 = ((l_ < k) if direction == "forward" else (l_ > k))[None, :, :, None].astype(float)
        P2 = _softmax(S2, np.broadcast_to(D2, S2.shape), axis=2) * D2
        o = (P2 * g[:, None, :, :]).sum(2)
        F = 1 / (1 + np.exp(-(g @ v_[disa + "output/linear_fusion_i/W"] + v_[disa + "output/linear_fusion_i/bias"]
                              + o @ v_[disa + "output/linear_fusion_a/W"] + v_[disa + "output/linear_fusion_a/bias"]
                              + v_[disa + "output/o_bias"])))  # fmt: skip
        e = F * g + (1 - F) * o
        z = np.concatenate([h, s, np.repeat(e[:, :, None, :], r, 2)], -1)
        z = z @ v_["combination/linear_new_context_and_gate/W"] + v_["combination/linear_new_context_and_gate/bias"]
        G = 1 / (1 + np.exp(-z[..., H:]))
        outputs.append((G * act(z[..., :H]) + (1 - G) * h).reshape(batch, m * r, H)[:, :n])
    ct = np.concatenate(outputs, -1)
    s2t = f"{root}multi_dim_attn_for_block/"
    map1 = act(ct @ variables[s2t + "bn_dense_map1/linear_map/W"] + variables[s2t + "bn_dense_map1/linear_map/bias"])
    logits = map1 @ variables[s2t + "bn_dense_map2/linear_map/W"] + variables[s2t + "bn_dense_map2/linear_map/bias"]
    return ct, (_softmax(logits, mask[..., None].astype(float), axis=1) * ct).sum(1)


def random_variables(fixture, scope: str, d: int, hidden: int, seed: int) -> dict[str, np.ndarray]:
    """The fixture's encoder variable names under `scope`, with new values of new sizes."""
    rng = np.random.default_rng(seed)
    original_scope = fixture["config"]["encoder"]["call"]["scope"]
    names = [name for name in load_file(fixture["checkpoint"]) if name.startswith(original_scope + "/")]
    shapes = {"split_seq/bn_dense_map/linear_map/W": (d, hidden), "linear_dependent_head/W": (hidden, 2 * hidden),
              "linear_new_context_and_gate/W": (3 * hidden, 2 * hidden),
              "linear_new_context_and_gate/bias": (2 * hidden,)}  # fmt: skip
    variables = {}
    for name in names:
        suffix = next((key for key in shapes if name.endswith(key)), None)
        if suffix is not None:
            shape = shapes[suffix]
        elif "multi_dim_attn_for_block" in name:
            shape = (2 * hidden, 2 * hidden) if name.endswith("/W") else (2 * hidden,)
        else:
            shape = (hidden, hidden) if name.endswith("/W") else (hidden,)
        scale = 2.5 if "linear_dependent" in name or "linear_head" in name else 1.0
        variables[scope + name.removeprefix(original_scope)] = (
            rng.normal(size=shape) * scale / math.sqrt(shape[0] if len(shape) == 2 else 4)
        ).astype(np.float32)
    return variables


@torch.no_grad()
@pytest.mark.parametrize(
    ("d", "hidden", "block_length", "activation", "lengths"),
    [(5, 7, 4, "relu", [9, 3, 1]), (6, 6, "auto", "linear", [13, 13, 5, 2]), (4, 5, 2, "elu", [7, 4, 6])],
)
def test_conversion_matches_the_original_math_at_other_settings(fixture, tmp_path, d, hidden, block_length,
                                                                 activation, lengths):  # fmt: skip
    variables = random_variables(fixture, "my_encoder", d, hidden, seed=d + hidden)
    save_file(variables, tmp_path / "vars.safetensors")
    model = convert(tmp_path / "vars.safetensors", block_length=block_length, activation=activation)
    rng = np.random.default_rng(0)
    mask = np.arange(max(lengths))[None, :] < np.array(lengths)[:, None]
    x = rng.normal(size=(len(lengths), max(lengths), d)) * mask[..., None]
    r = resolve_block_length(block_length, max(lengths))
    ct, sentence = original_encoder({k: v.astype(np.float64) for k, v in variables.items()}, "my_encoder/", x, mask,
                                    r, activation)  # fmt: skip
    output = model(inputs_embeds=torch.tensor(x, dtype=torch.float32), attention_mask=torch.tensor(mask))
    torch.testing.assert_close(output.last_hidden_state.double(), torch.tensor(ct), rtol=0, atol=ATOL)
    torch.testing.assert_close(output.sentence_embedding.double(), torch.tensor(sentence), rtol=0, atol=ATOL)


@torch.no_grad()
def test_a_real_tensorflow_checkpoint(fixture, tmp_path):
    """A `tf.train.Saver` checkpoint (the variables, their EMA shadows, an optimizer slot, global_step), read by
    prefix and by folder. TensorFlow is the optional `tensorflow` extra, not installed by `make test`."""
    tf = pytest.importorskip(
        "tensorflow", reason="the tensorflow extra is not installed (pip install -e .[tensorflow])"
    )
    tf.compat.v1.disable_v2_behavior()
    scope = sc_scope(fixture["config"])
    variables = {name: value.numpy() for name, value in load_file(fixture["checkpoint"]).items()}
    with tf.Graph().as_default():
        for name, value in variables.items():
            if name.startswith(scope + "/"):
                tf.compat.v1.get_variable(name, initializer=tf.constant(value))
                tf.compat.v1.get_variable(f"{scope}/{name}/ExponentialMovingAverage", initializer=tf.constant(value))
                tf.compat.v1.get_variable(f"{name}/Adam", initializer=tf.constant(np.zeros_like(value)))
        tf.compat.v1.train.get_or_create_global_step()
        saver = tf.compat.v1.train.Saver()
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            prefix = saver.save(session, str(tmp_path / "model.ckpt"), global_step=120)
    argv = fixture["config"]["sc"]["argv"]
    reference = convert(fixture["checkpoint"], scope=scope, argv=argv).state_dict()
    for path in (prefix, tmp_path):
        converted = convert(path, argv=argv).state_dict()
        assert all(torch.equal(converted[name], reference[name]) for name in reference)
