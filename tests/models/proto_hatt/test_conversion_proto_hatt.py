"""Proto-HATT conversion: parity with the original code's outputs (`../shared/fixtures/proto_hatt`, its own K), and the
same conversion on checkpoints of other sizes (even K, K = 1, N = 2, the plain Proto model), checked against the
original's math written out from the fixture README on the original's own key names."""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import load_file

from hf_attn.models.proto_hatt.configuration_proto_hatt import ProtoHattConfig
from hf_attn.models.proto_hatt.modeling_proto_hatt import (
    ProtoHattForFewShotClassification,
    ProtoHattProtoNetForFewShotClassification,
)
from tests.helpers import REPO_ROOT, fixture_dir

SCRIPT = REPO_ROOT / "conversion" / "convert_proto_hatt_original_to_hf.py"


def load_script():
    from hf_attn.models.proto_hatt import convert_proto_hatt_original_to_hf

    return convert_proto_hatt_original_to_hf


@pytest.fixture(scope="session")
def script():
    return load_script()


def test_the_converted_checkpoint_reproduces_the_original(script, tmp_path):
    fixture = fixture_dir("proto_hatt")
    script.main(
        ["--checkpoint", str(fixture / "original_checkpoint.pt"), "--config", str(fixture / "original_config.json"),
         "--output", str(tmp_path), "--fixture", str(fixture)]
    )  # fmt: skip
    record = json.loads((tmp_path / "hf_attn_conversion.json").read_text())
    assert record["layout"] == "Proto-HATT" and set(record["max_abs_diff"]) >= {"logits", "ins_att_score", "loss"}
    assert max(record["max_abs_diff"].values()) <= 1e-5
    model = ProtoHattForFewShotClassification.from_pretrained(tmp_path).eval()
    config = model.config
    original = json.loads((fixture / "original_config.json").read_text())
    episode, derived = original["episode"], original["derived"]
    sizes = (episode["K"], episode["N"], episode["Q"], original["CNNSentenceEncoder"]["max_length"])
    assert (config.num_shots, config.num_ways, config.num_queries, config.max_sentence_length) == sizes
    assert config.mask_padding is False and config.pad_token_id == derived["word_padding_idx"]
    channels = [derived["fea_att_conv1"]["out"], derived["fea_att_conv2"]["out"]]
    assert config.feature_attention_channels == channels
    # The reloaded folder gives the original's outputs too (pred exactly), and its card records the conversion.
    script.check_fixture(model, fixture)  # raises beyond atol 1e-5 + rtol 1e-5 · |expected|
    assert "HATT-Proto" in (tmp_path / "README.md").read_text()


def test_without_the_config_the_sizes_come_from_the_weights(script, tmp_path):
    fixture = fixture_dir("proto_hatt")
    model = script.convert(fixture / "original_checkpoint.pt", None)
    script.check_fixture(model, fixture)


# The original's math on its own state dict (the fixture README's block), for checkpoints no fixture covers -------


def original_forward(state: dict[str, torch.Tensor], batch: dict[str, torch.Tensor], ways: int, shots: int):
    """`ProtoHATT.forward` (or `Proto.forward` without `fc`) as the README writes it out: no pad mask, max over all L
    positions, feature scores through ReLU, per-query prototypes."""
    encoder = "sentence_encoder."

    def encode(side: str) -> torch.Tensor:
        x = torch.cat(
            [
                F.embedding(batch[f"{side}_word"], state[f"{encoder}embedding.word_embedding.weight"]),
                F.embedding(batch[f"{side}_pos1"], state[f"{encoder}embedding.pos1_embedding.weight"]),
                F.embedding(batch[f"{side}_pos2"], state[f"{encoder}embedding.pos2_embedding.weight"]),
            ],
            dim=-1,
        )
        weight = state[f"{encoder}encoder.conv.weight"]
        h = F.relu(
            F.conv1d(x.transpose(1, 2), weight, state[f"{encoder}encoder.conv.bias"], padding=weight.size(2) // 2)
        )
        return h.max(dim=2).values

    support, query = encode("support"), encode("query")
    hidden = support.size(-1)
    support = support.view(-1, ways, shots, hidden)
    query = query.view(support.size(0), -1, hidden)
    if "fc.weight" not in state:
        return -((support.mean(2)[:, None] - query[:, :, None]) ** 2).sum(-1)
    features = support.reshape(-1, 1, shots, hidden)
    for name in ("conv1", "conv2"):
        features = F.relu(F.conv2d(features, state[f"{name}.weight"], state[f"{name}.bias"], padding=(shots // 2, 0)))
    features = F.conv2d(features, state["conv_final.weight"], state["conv_final.bias"], stride=(shots, 1))
    scores = F.relu(features).view(support.size(0), ways, hidden)[:, None]
    fc = lambda x: F.linear(x, state["fc.weight"], state["fc.bias"])  # noqa: E731
    attention = F.softmax(torch.tanh(fc(support)[:, None] * fc(query)[:, :, None, None]).sum(-1), dim=-1)
    prototypes = (support[:, None] * attention[..., None]).sum(3)
    return -(((prototypes - query[:, :, None]) ** 2) * scores).sum(3)


def original_checkpoint(ways: int, shots: int, hatt: bool = True, seed: int = 0, vocab: int = 30, length: int = 10):
    """A random state dict with the original's keys and shapes (`CNNSentenceEncoder` + `ProtoHATT(shots)`), the
    feature attention's last bias raised so that the scores are not all 0."""
    generator = torch.Generator().manual_seed(seed)
    words, positions, hidden = 6, 3, 8
    width = words + 2 * positions

    def randn(*shape):
        return torch.randn(*shape, generator=generator) * 0.5

    pad_row, position_pad = torch.zeros(1, words), torch.zeros(1, positions)  # padding rows stay 0 in training
    state = {
        "sentence_encoder.embedding.word_embedding.weight": torch.cat([randn(vocab + 1, words), pad_row]),
        "sentence_encoder.embedding.pos1_embedding.weight": torch.cat(
            [position_pad, randn(2 * length - 1, positions)]
        ),
        "sentence_encoder.embedding.pos2_embedding.weight": torch.cat(
            [position_pad, randn(2 * length - 1, positions)]
        ),
        "sentence_encoder.encoder.conv.weight": randn(hidden, width, 3),
        "sentence_encoder.encoder.conv.bias": randn(hidden),
        "sentence_encoder.encoder.mask_embedding.weight": torch.tensor([[1.0, 0, 0], [0, 1, 0], [0, 0, 1], [0, 0, 0]]),
    }
    if hatt:
        state.update({
            "fc.weight": randn(hidden, hidden), "fc.bias": randn(hidden),
            "conv1.weight": randn(32, 1, shots, 1), "conv1.bias": randn(32),
            "conv2.weight": randn(64, 32, shots, 1) * 0.2, "conv2.bias": randn(64),
            "conv_final.weight": randn(1, 64, shots, 1) * 0.2, "conv_final.bias": randn(1) + 1.0,
        })  # fmt: skip
    return state


def original_batch(ways: int, shots: int, queries: int, batch: int = 2, vocab: int = 30, length: int = 10, seed=0):
    """A flat batch as `JSONFileDataLoader.next_batch` builds it: ids (BLANK = vocab + 1 past each length), position
    ids j − e + L for every j, the PCNN mask (0 at padding)."""
    generator = torch.Generator().manual_seed(seed)
    tensors = {}
    for side, rows in (("support", batch * ways * shots), ("query", batch * ways * queries)):
        lengths = torch.randint(2, length + 1, (rows,), generator=generator)
        real = torch.arange(length)[None] < lengths[:, None]
        words = torch.randint(0, vocab + 1, (rows, length), generator=generator).masked_fill(~real, vocab + 1)
        head = (torch.rand(rows, generator=generator) * lengths).long()
        tail = (torch.rand(rows, generator=generator) * lengths).long()
        tensors[f"{side}_word"] = words
        tensors[f"{side}_pos1"] = torch.arange(length)[None] - head[:, None] + length
        tensors[f"{side}_pos2"] = torch.arange(length)[None] - tail[:, None] + length
        tensors[f"{side}_mask"] = real.long()
    tensors["label"] = torch.randint(0, ways, (batch, ways * queries), generator=generator)
    return tensors


@pytest.mark.parametrize(
    ("ways", "shots", "queries", "hatt"),
    [(3, 4, 2, True), (2, 1, 3, True), (5, 5, 1, True), (4, 3, 2, False), (2, 2, 2, False)],
    ids=["even-K4", "K1-N2", "N5-K5", "proto-K3", "proto-K2"],
)
def test_other_sizes_convert_to_the_original_outputs(script, tmp_path, ways, shots, queries, hatt):
    state = original_checkpoint(ways, shots, hatt)
    torch.save({"state_dict": state}, tmp_path / "checkpoint.pt")
    config = {"episode": {"N": ways, "K": shots, "Q": queries}}
    (tmp_path / "config.json").write_text(json.dumps(config))
    model = script.convert(tmp_path / "checkpoint.pt", tmp_path / "out", tmp_path / "config.json")
    assert isinstance(model, ProtoHattForFewShotClassification if hatt else ProtoHattProtoNetForFewShotClassification)
    assert (model.config.num_ways, model.config.num_shots, model.config.num_queries) == (ways, shots, queries)
    batch = original_batch(ways, shots, queries)
    expected = original_forward(state, batch, ways, shots)
    episode = script.episode_inputs(batch, model.config, batch["label"].size(0))
    with torch.no_grad():
        logits = model(**episode).logits
    torch.testing.assert_close(logits, expected, rtol=1e-5, atol=1e-5)
    assert torch.equal(logits.argmax(-1), expected.argmax(-1))


def test_a_two_shot_proto_hatt_is_refused_as_the_original_crashes():
    with pytest.raises(ValueError, match="num_shots = 2 with 2 feature-attention convolutions"):
        ProtoHattForFewShotClassification(ProtoHattConfig(num_shots=2, vocab_size=20, hidden_size=4))
    ProtoHattProtoNetForFewShotClassification(ProtoHattConfig(num_shots=2, vocab_size=20, hidden_size=4))  # any K
    model = ProtoHattForFewShotClassification(ProtoHattConfig(num_shots=3, vocab_size=20, hidden_size=4))
    support = torch.ones(1, 2, 4, 3, dtype=torch.long)
    queries = torch.ones(1, 2, 3, dtype=torch.long)
    positions = {"entity_positions": torch.zeros(1, 2, 2, dtype=torch.long),
                 "support_entity_positions": torch.zeros(1, 2, 4, 2, dtype=torch.long)}  # fmt: skip
    with pytest.raises(ValueError, match=r"`support_input_ids` has K = 4 shots.*K = 3 \(num_shots\)"):
        model(input_ids=queries, support_input_ids=support, **positions)


def test_the_word_vectors_give_the_original_ids(script, tmp_path):
    vectors = [{"word": "The", "vec": [0.1, 0.2]}, {"word": "cat", "vec": [0.3, 0.4]}, {"word": "sat", "vec": [0, 1]}]
    (tmp_path / "glove.json").write_text(json.dumps(vectors))
    config = ProtoHattConfig(vocab_size=5, pad_token_id=4, mask_padding=False)
    tokenizer = script.original_tokenizer(tmp_path / "glove.json", config)
    encoded = tokenizer(["the CAT sat on", "cat"], padding=True)
    assert encoded["input_ids"] == [[0, 1, 2, 3], [1, 4, 4, 4]]  # lower-cased, UNK = V = 3, BLANK = V + 1 = 4
    with pytest.raises(ValueError, match="has 3 words"):
        script.original_tokenizer(tmp_path / "glove.json", ProtoHattConfig(vocab_size=9))


def test_predict_on_raw_texts_gives_the_original_scores(script):
    """Without masks an instance's encoding depends on its padding: `predict` pads every text to
    `max_sentence_length`, as the original loader, so a converted model scores raw texts as the original did. The
    fixture's first episode, written back as texts with their entities, gets the original's probabilities."""
    from hf_attn.tokenization.word_level import build_word_level_tokenizer

    fixture = fixture_dir("proto_hatt")
    model = script.convert(fixture / "original_checkpoint.pt", None)
    inputs, expected = load_file(fixture / "inputs.safetensors"), load_file(fixture / "expected.safetensors")
    vocabulary = [f"w{i}" for i in range(model.config.vocab_size - 2)] + ["[UNK]", "[PAD]"]
    tokenizer = build_word_level_tokenizer(vocabulary, lowercase=False, pre_tokenized=True)
    episode = json.loads((fixture / "original_config.json").read_text())["episode"]
    length, ways, shots, queries_per_class = model.config.max_sentence_length, episode["N"], episode["K"], episode["Q"]

    def texts(side: str, rows: range) -> tuple[list[str], list[tuple[int, int]]]:
        words = inputs[f"{side}_word"][rows.start : rows.stop]
        mask = inputs[f"{side}_mask"][rows.start : rows.stop] != 0
        strings = [" ".join(vocabulary[i] for i in row[keep].tolist()) for row, keep in zip(words, mask, strict=True)]
        heads = (length - inputs[f"{side}_pos1"][rows.start : rows.stop, 0]).tolist()
        tails = (length - inputs[f"{side}_pos2"][rows.start : rows.stop, 0]).tolist()
        return strings, list(zip(heads, tails, strict=True))

    support, support_entities = texts("support", range(ways * shots))
    labels = [f"relation {row // shots}" for row in range(ways * shots)]
    queries, query_entities = texts("query", range(ways * queries_per_class))
    results = model.predict(support, labels, queries, tokenizer, support_entities=support_entities,
                            query_entities=query_entities, output_attentions=True)  # fmt: skip
    probabilities = torch.tensor([list(result["scores"].values()) for result in results])
    torch.testing.assert_close(probabilities, expected["logits"][0].softmax(-1), rtol=0, atol=1e-5)
    assert [result["label"] for result in results] == [
        f"relation {i}" for i in expected["pred"][: ways * queries_per_class].tolist()
    ]
    attention = torch.tensor([[result["instance_attention"][name] for name in result["scores"]] for result in results])
    torch.testing.assert_close(attention, expected["ins_att_score"][0], rtol=0, atol=1e-5)
    with pytest.raises(ValueError, match=rf"`support_labels`: .*tied to K = {shots}"):  # the fixture's own K
        model.predict(support[:-1], labels[:-1], queries, tokenizer, support_entities=support_entities[:-1],
                      query_entities=query_entities)  # fmt: skip
