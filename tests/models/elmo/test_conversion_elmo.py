"""Parity of the converted bilm-tf ELMo with the original TensorFlow outputs (../shared/fixtures/elmo), and clear
errors for malformed originals."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import h5py
import numpy as np
import pytest
import torch
from transformers import AutoModel, AutoTokenizer

import hf_attn
from hf_attn.models.elmo.configuration_elmo import ElmoConfig
from hf_attn.models.elmo.modeling_elmo import remove_sentence_boundaries
from tests.helpers import REPO_ROOT, fixture_dir

SCRIPT = REPO_ROOT / "conversion" / "convert_elmo_original_to_hf.py"
from hf_attn.models.elmo import convert_elmo_original_to_hf as converter  # noqa: E402

# The tests share a session-scoped fixture: one worker runs them all (`--dist loadgroup`) and keeps it, so it is
# built once even when other tests run between them (a module-scoped one was rebuilt then).
pytestmark = pytest.mark.xdist_group("elmo_conversion")


# The fixture's criterion (its README): numpy.allclose(atol=1e-6, rtol=1e-5), as AllenNLP's port is checked.
ATOL, RTOL = 1e-6, 1e-5


@pytest.fixture(scope="session")
def converted(tmp_path_factory):
    fixture = fixture_dir("elmo")
    output = tmp_path_factory.mktemp("elmo")
    result = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--options",
            str(fixture / "options.json"),
            "--weights",
            str(fixture / "lm_weights.hdf5"),
            "--vocab",
            str(fixture / "vocab_test.txt"),
            "--output",
            str(output),
            "--fixture",
            str(fixture),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout[result.stdout.index("{") :])
    model = AutoModel.from_pretrained(output).eval()
    tokenizer = AutoTokenizer.from_pretrained(output)
    return model, tokenizer, output, fixture, report


def expected_top_layers(fixture) -> list[list[np.ndarray]]:
    """expected[k][i]: sentence i of list k, (n_tokens, 2P) = forward and backward concatenated."""
    lists = json.loads((fixture / "sentences.json").read_text())
    expected = []
    for k in range(len(lists)):
        with h5py.File(fixture / f"lm_embeddings_{k}.hdf5", "r") as handle:
            expected.append([np.concatenate(handle[str(i)][...], axis=-1) for i in range(len(lists[k]))])
    return expected


def assert_allclose(actual: torch.Tensor, expected: np.ndarray) -> float:
    actual = actual.detach().numpy()
    assert actual.shape == expected.shape
    np.testing.assert_allclose(actual, expected, atol=ATOL, rtol=RTOL)
    return float(np.abs(actual - expected).max())


def test_converted_folder_loads_with_auto_classes_and_holds_provenance(converted):
    model, tokenizer, output, fixture, report = converted
    assert type(model) is hf_attn.ElmoModel and type(tokenizer).__name__ == "ElmoCharacterTokenizerFast"
    assert not model.stateful
    assert (output / "model.safetensors").is_file() and not list(output.glob("*.bin"))
    assert report["files"]["lm_weights.hdf5"] == converter.sha256_of(fixture / "lm_weights.hdf5")
    card = (output / "README.md").read_text()
    assert converter.sha256_of(fixture / "options.json") in card and "top_layer_stateful_10_batches" in card
    assert set(report["max_abs_diff"]) == {
        "token_embeddings",
        "top_layer_stateless_batch0",
        "top_layer_stateful_10_batches",
    }
    # The word vocabulary is bilm-tf's vocab file, ids in file order.
    vocabulary = (fixture / "vocab_test.txt").read_text().split("\n")
    assert tokenizer.convert_tokens_to_ids(vocabulary) == list(range(len(vocabulary)))


@torch.no_grad()
def test_context_free_token_embeddings_match_the_original(converted):
    model, tokenizer, _, fixture, _ = converted
    words = (fixture / "vocab_test.txt").read_text().split("\n")
    batch = tokenizer([[word] for word in words], is_split_into_words=True, return_tensors="pt")
    with h5py.File(fixture / "elmo_token_embeddings.hdf5", "r") as handle:
        expected = handle["embedding"][...]
    assert_allclose(model(**batch).token_embeddings[:, 1], expected)


@torch.no_grad()
def test_top_layer_of_batch_zero_matches_the_original_stateless(converted):
    model, tokenizer, _, fixture, _ = converted
    lists = json.loads((fixture / "sentences.json").read_text())
    expected = expected_top_layers(fixture)
    batch = tokenizer([sentences[0] for sentences in lists], return_tensors="pt")
    output = model(**batch)
    top, mask = remove_sentence_boundaries(output.last_hidden_state, output.attention_mask)
    assert mask.sum(dim=1).tolist() == [len(sentences[0].split()) for sentences in lists]
    for k in range(len(lists)):
        assert_allclose(top[k, : mask[k].sum()], expected[k][0])
    # Stateless: the same batch again gives the same vectors; each sentence alone too.
    torch.testing.assert_close(model(**batch).last_hidden_state, output.last_hidden_state, rtol=0, atol=0)
    alone = model(**tokenizer(lists[1][0], return_tensors="pt")).last_hidden_state
    torch.testing.assert_close(alone[0], output.last_hidden_state[1, : alone.size(1)], rtol=0, atol=1e-6)


@torch.no_grad()
def test_all_ten_batches_match_the_original_in_stateful_mode(converted):
    model, tokenizer, output_dir, fixture, _ = converted
    stateful = type(model).from_pretrained(output_dir, stateful=True).eval()
    lists = json.loads((fixture / "sentences.json").read_text())
    expected = expected_top_layers(fixture)
    worst = 0.0
    for i in range(len(lists[0])):
        output = stateful(**tokenizer([sentences[i] for sentences in lists], return_tensors="pt"))
        top, mask = remove_sentence_boundaries(output.last_hidden_state, output.attention_mask)
        for k in range(len(lists)):
            worst = max(worst, assert_allclose(top[k, : mask[k].sum()], expected[k][i]))
    assert worst < 2e-6
    # The carried state matters: from batch 1 on, the stateless model is further from the original than the
    # tolerance, and reset_states() starts over from zero states.
    batch = tokenizer([sentences[1] for sentences in lists], return_tensors="pt")
    stateless_top = remove_sentence_boundaries(model(**batch).last_hidden_state, batch["attention_mask"])[0]
    assert not np.allclose(stateless_top[0, : len(lists[0][1].split())].numpy(), expected[0][1], atol=ATOL, rtol=RTOL)
    stateful.reset_states()
    first = stateful(**tokenizer([sentences[0] for sentences in lists], return_tensors="pt")).last_hidden_state
    torch.testing.assert_close(first, model(**tokenizer([s[0] for s in lists], return_tensors="pt")).last_hidden_state)


@torch.no_grad()
def test_stateful_mode_keeps_rows_beyond_a_smaller_batch(converted):
    """bilm-tf keeps one state row per batch position: a smaller batch uses and updates the first rows only."""
    model, tokenizer, output_dir, fixture, _ = converted
    stateful = type(model).from_pretrained(output_dir, stateful=True).eval()
    lists = json.loads((fixture / "sentences.json").read_text())
    stateful(**tokenizer([sentences[0] for sentences in lists], return_tensors="pt"))
    third_row = [state[1][:, 2].clone() for state in stateful.bilm._states]
    stateful(**tokenizer([lists[0][1]], return_tensors="pt"))  # one row: rows 1 and 2 keep their states
    assert all(torch.equal(state[1][:, 2], kept) for state, kept in zip(stateful.bilm._states, third_row, strict=True))
    output = stateful(**tokenizer([sentences[2] for sentences in lists], return_tensors="pt")).last_hidden_state
    assert torch.isfinite(output).all()


def test_save_and_reload_round_trip_is_exact(converted, tmp_path):
    model, tokenizer, _, _, _ = converted
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    reloaded = AutoModel.from_pretrained(tmp_path).eval()
    again = AutoTokenizer.from_pretrained(tmp_path)
    batch = again(["A sentence of the test .", "Short"], return_tensors="pt")
    for name, value in tokenizer(["A sentence of the test .", "Short"], return_tensors="pt").items():
        assert torch.equal(batch[name], value), name
    with torch.no_grad():
        for expected, actual in zip(model(**batch).hidden_states, reloaded(**batch).hidden_states, strict=True):
            assert torch.equal(expected, actual)


def test_config_from_options_mirrors_the_file():
    options = json.loads((fixture_dir("elmo") / "options.json").read_text())
    config = ElmoConfig.from_bilm_tf_options(fixture_dir("elmo") / "options.json")
    cnn, lstm = options["char_cnn"], options["lstm"]
    assert config.filters == [list(f) for f in cnn["filters"]]
    assert config.num_filters == sum(count for _, count in cnn["filters"])
    assert (config.character_embedding_size, config.num_highway_layers, config.n_characters) == (
        cnn["embedding"]["dim"], cnn["n_highway"], cnn["n_characters"]
    )  # fmt: skip
    assert (config.hidden_size, config.projection_dim, config.num_hidden_layers) == (
        lstm["dim"], lstm["projection_dim"], lstm["n_layers"]
    )  # fmt: skip
    assert (config.cell_clip, config.proj_clip, config.use_skip_connections) == (
        lstm["cell_clip"], lstm["proj_clip"], lstm["use_skip_connections"]
    )  # fmt: skip


def _broken_options(tmp_path, edit) -> str:
    options = json.loads((fixture_dir("elmo") / "options.json").read_text())
    edit(options)
    path = tmp_path / "options.json"
    path.write_text(json.dumps(options))
    return str(path)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda o: o["lstm"].pop("dim"), r"`lstm\.dim`"),
        (lambda o: o.pop("char_cnn"), r"`char_cnn`"),
        (lambda o: o["char_cnn"]["embedding"].pop("dim"), r"`char_cnn\.embedding\.dim`"),
        (lambda o: o["char_cnn"].update(n_characters=300), r"`char_cnn\.n_characters` must be 262"),
        (lambda o: o["lstm"].update(projection_dim=128), r"`lstm\.projection_dim` \(128\) exceeds `lstm\.dim`"),
        (lambda o: o["char_cnn"].update(filters=[[1]]), r"filters"),
        (lambda o: o["lstm"].update(n_layers="2"), r"`num_hidden_layers` must be an integer"),
    ],
)
def test_malformed_options_name_the_offending_key(tmp_path, edit, message):
    with pytest.raises(ValueError, match=message):
        ElmoConfig.from_bilm_tf_options(_broken_options(tmp_path, edit))


def _broken_weights(tmp_path, edit) -> str:
    path = tmp_path / "weights.hdf5"
    shutil.copy(fixture_dir("elmo") / "lm_weights.hdf5", path)
    with h5py.File(path, "r+") as handle:
        edit(handle)
    return str(path)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda h: h.__delitem__("CNN_proj/W_proj"), r"no dataset `CNN_proj/W_proj`"),
        (
            lambda h: h.__delitem__("RNN_1/RNN/MultiRNNCell/Cell1/LSTMCell/B"),
            r"no dataset `RNN_1/RNN/MultiRNNCell/Cell1/LSTMCell/B`",
        ),
        (
            lambda h: (h.__delitem__("char_embed"), h.create_dataset("char_embed", data=np.zeros((262, 4)))),
            r"`char_embed` has shape \(262, 4\)",
        ),
        (
            lambda h: h.create_dataset("CNN/W_cnn_5", data=np.zeros((1, 6, 4, 2))),
            r"does not describe: \['CNN/W_cnn_5'\]",
        ),
    ],
)
def test_malformed_weights_name_the_offending_dataset(tmp_path, edit, message):
    config = ElmoConfig.from_bilm_tf_options(fixture_dir("elmo") / "options.json")
    with pytest.raises(ValueError, match=message):
        converter.convert_weights(converter.read_weights(_broken_weights(tmp_path, edit)), config)


def test_converter_refuses_weights_of_another_model(tmp_path):
    """The script fails (non-zero exit, the dataset named) instead of writing a model when shapes disagree."""
    options = _broken_options(tmp_path, lambda o: o["lstm"].update(dim=32))
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--options", options, "--weights", str(fixture_dir("elmo") / "lm_weights.hdf5"),
         "--output", str(tmp_path / "out")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode != 0 and "RNN_0/RNN/MultiRNNCell/Cell0/LSTMCell/W_0" in result.stderr
    assert not (tmp_path / "out" / "model.safetensors").exists()


def _random_bilm_tf_dump(options: dict, path, seed: int = 0) -> dict[str, np.ndarray]:
    """A bilm-tf weight dump with random values, in the layout `options` implies (for shapes the fixture lacks)."""
    rng = np.random.default_rng(seed)
    char_cnn, lstm = options["char_cnn"], options["lstm"]
    embed, projection, hidden = char_cnn["embedding"]["dim"], lstm["projection_dim"], lstm["dim"]
    filters = sum(number for _, number in char_cnn["filters"])
    output = min(projection, hidden)
    shapes = {"char_embed": (261, embed)}
    for i, (width, number) in enumerate(char_cnn["filters"]):
        shapes |= {f"CNN/W_cnn_{i}": (1, width, embed, number), f"CNN/b_cnn_{i}": (number,)}
    for k in range(char_cnn.get("n_highway", 0)):
        for name in ("carry", "transform"):
            shapes |= {f"CNN_high_{k}/W_{name}": (filters, filters), f"CNN_high_{k}/b_{name}": (filters,)}
    if filters != projection:
        shapes |= {"CNN_proj/W_proj": (filters, projection), "CNN_proj/b_proj": (projection,)}
    for direction in (0, 1):
        for layer in range(lstm["n_layers"]):
            cell = f"RNN_{direction}/RNN/MultiRNNCell/Cell{layer}/LSTMCell/"
            inputs = projection if layer == 0 else output
            shapes |= {cell + "W_0": (inputs + output, 4 * hidden), cell + "B": (4 * hidden,)}
            if output < hidden:
                shapes[cell + "W_P_0"] = (hidden, output)
    arrays = {name: (0.3 * rng.standard_normal(shape)).astype("float32") for name, shape in shapes.items()}
    with h5py.File(path, "w") as handle:
        for name, array in arrays.items():
            handle[name] = array
    return arrays


@pytest.mark.parametrize(
    "options",
    [
        # No LSTM projection (P = H), no highway, no CNN projection (Σ filters = P), tanh, no residual, 1 layer.
        {"lstm": {"dim": 16, "projection_dim": 16, "n_layers": 1, "use_skip_connections": False},
         "char_cnn": {"embedding": {"dim": 3}, "filters": [[1, 8], [2, 8]], "n_characters": 261,
                      "max_characters_per_token": 20, "activation": "tanh"}},
        # Three layers with residuals, one highway, projection, clips.
        {"lstm": {"dim": 24, "projection_dim": 6, "n_layers": 3, "cell_clip": 1, "proj_clip": 0.5,
                  "use_skip_connections": True},
         "char_cnn": {"embedding": {"dim": 4}, "filters": [[1, 4], [3, 5]], "n_highway": 1, "n_characters": 262,
                      "max_characters_per_token": 50, "activation": "relu"}},
    ],
)  # fmt: skip
def test_other_bilm_tf_layouts_convert_with_the_documented_mapping(tmp_path, options):
    (tmp_path / "options.json").write_text(json.dumps(options))
    arrays = _random_bilm_tf_dump(options, tmp_path / "weights.hdf5")
    model, tokenizer = converter.convert(tmp_path / "options.json", tmp_path / "weights.hdf5", tmp_path / "out")
    config, hidden = model.config, options["lstm"]["dim"]
    assert config.max_characters_per_token == tokenizer.max_characters_per_token
    assert (model.character_encoder.projection is None) == (config.num_filters == config.projection_dim)
    # Spot-check the mapping on the last layer's backward cell: W_0 splits into input/recurrent parts, gates
    # (i, j, f, o) -> (i, f, j, o), the forget bias gets +1, W_P_0 is transposed.
    layer = config.num_hidden_layers - 1
    cell = f"RNN_1/RNN/MultiRNNCell/Cell{layer}/LSTMCell/"
    i, j, f, o = np.split(arrays[cell + "W_0"].T, 4)
    kernel = np.concatenate([i, f, j, o])
    inputs = model.bilm.layers[layer].weight_ih.shape[2]
    np.testing.assert_array_equal(model.bilm.layers[layer].weight_ih[1].detach().numpy(), kernel[:, :inputs])
    np.testing.assert_array_equal(model.bilm.layers[layer].weight_hh[1].detach().numpy(), kernel[:, inputs:])
    b_i, b_j, b_f, b_o = np.split(arrays[cell + "B"], 4)
    np.testing.assert_array_equal(
        model.bilm.layers[layer].bias[1].detach().numpy(), np.concatenate([b_i, b_f + 1, b_j, b_o])
    )
    if cell + "W_P_0" in arrays:
        np.testing.assert_array_equal(
            model.bilm.layers[layer].weight_proj[1].detach().numpy(), arrays[cell + "W_P_0"].T
        )
    else:
        assert model.bilm.layers[layer].weight_proj is None
    with torch.no_grad():
        output = model(**tokenizer(["a few words", "x"], return_tensors="pt"))
    assert len(output.hidden_states) == config.num_hidden_layers + 1
    assert all(torch.isfinite(h).all() for h in output.hidden_states)
    if options["lstm"].get("proj_clip") and config.projection_dim < hidden:
        top_memory = output.hidden_states[1]  # first layer: no residual, so m_t itself
        assert top_memory.abs().max() <= options["lstm"]["proj_clip"]
    reloaded = AutoModel.from_pretrained(tmp_path / "out")
    for name, tensor in model.state_dict().items():
        assert torch.equal(reloaded.state_dict()[name], tensor), name
