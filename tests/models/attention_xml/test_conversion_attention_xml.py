"""Parity of converted yourh/AttentionXML checkpoints (flat `Model.save_model` and tree-level
`XMLModel.save_model_to_disk`) with the original's outputs (../shared/fixtures/attentionxml), and with a reference
written from the original's code on checkpoints of other sizes and layouts."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from collections import OrderedDict

import pytest
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
from transformers import AutoModelForSequenceClassification

import hf_attn  # noqa: F401
from tests.helpers import REPO_ROOT, fixture_dir

SCRIPT = REPO_ROOT / "conversion" / "convert_attention_xml_original_to_hf.py"
ATOL = 1e-5

from hf_attn.models.attention_xml import convert_attention_xml_original_to_hf as converter  # noqa: E402


def original_arguments(network: str = "attention_rnn") -> dict:
    """The fixture's constructor arguments of `network` (its `original_config.json`), `emb_init` left out."""
    config = json.loads((fixture_dir("attentionxml") / "original_config.json").read_text())
    return {k: v for k, v in config[network]["constructor_kwargs"].items() if k != "emb_init"}


def constructor_arguments(tmp_path, network: str):
    """The fixture's constructor arguments of `network`, as a user would write them (emb_init is an array there)."""
    config = json.loads((fixture_dir("attentionxml") / "original_config.json").read_text())
    arguments = original_arguments(network)
    path = tmp_path / f"{network}.json"
    path.write_text(json.dumps(arguments))
    return path, config[network]["predict_k"]


@pytest.mark.parametrize(
    ("checkpoint", "network"),
    [("original_checkpoint.pt", "attention_rnn"), ("original_checkpoint_fast.pt", "fast_attention_rnn")],
    ids=["flat", "tree_level"],
)
def test_conversion_reproduces_the_original(checkpoint, network, tmp_path):
    """The script checks every fixture tensor within 1e-5 (logits, embeddings, BiLSTM states, label-wise attention,
    contexts, predict scores) and lengths, masks and predicted labels exactly; then the folder loads with the Auto
    class and gives the same logits."""
    fixture = fixture_dir("attentionxml")
    config_path, k = constructor_arguments(tmp_path, network)
    output = tmp_path / "converted"
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--checkpoint", str(fixture / checkpoint), "--output", str(output),
         "--config", str(config_path), "--fixture", str(fixture), "--top_k", str(k)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout[result.stdout.index("{") :])
    assert max(report["max_abs_diff"].values()) <= ATOL
    assert len(report["max_abs_diff"]) == 6  # every float tensor of the network was compared
    model = AutoModelForSequenceClassification.from_pretrained(output).eval()
    assert model.config.padding_candidate == (network == "fast_attention_rnn")
    original = original_arguments(network)  # from --config
    assert (model.config.hidden_dropout_prob, model.config.embedding_dropout_prob) == (
        original["dropout"],
        original["emb_dropout"],
    )
    assert "Conversion provenance" in (output / "README.md").read_text()


def test_a_config_that_contradicts_the_weights_is_refused(tmp_path):
    hidden = original_arguments()["hidden_size"]
    config_path = tmp_path / "model.yaml"
    config_path.write_text(f"model:\n  hidden_size: {32 * hidden}\n  dropout: 0.3\n")
    with pytest.raises(
        ValueError, match=rf"hidden_size={32 * hidden} but the checkpoint's weights have hidden_size={hidden}"
    ):
        converter.convert(fixture_dir("attentionxml") / "original_checkpoint.pt", None, config_path)


# ---------------------------------------------------------------------------------------------------------------
# Other sizes and layouts: random checkpoints under the original's key names, against a reference forward written
# from deepxml/modules.py (Embedding, LSTMEncoder, MLAttention / FastMLAttention, MLLinear) in eval mode.
# ---------------------------------------------------------------------------------------------------------------


def original_state_dict(vocab, emb, hidden, layers, linear, labels, rows, seed=0) -> OrderedDict:
    generator = torch.Generator().manual_seed(seed)

    def rand(*shape, scale=0.5):
        return torch.randn(*shape, generator=generator) * scale

    state = OrderedDict({"emb.emb.weight": torch.cat([torch.zeros(1, emb), rand(vocab - 1, emb)])})
    state["lstm.init_state"] = rand(4 * layers, 1, hidden)
    lstm = nn.LSTM(emb, hidden, layers, batch_first=True, bidirectional=True)
    state.update({f"lstm.lstm.{name}": rand(*value.shape) for name, value in lstm.state_dict().items()})
    state["attention.attention.weight"] = rand(rows, 2 * hidden, scale=1.0)
    sizes = [2 * hidden, *linear]
    for index, (a, b) in enumerate(itertools.pairwise(sizes)):
        state[f"linear.linear.{index}.weight"], state[f"linear.linear.{index}.bias"] = rand(b, a), rand(b)
    state["linear.output.weight"], state["linear.output.bias"] = rand(1, sizes[-1]), rand(1)
    return state


@torch.no_grad()
def reference_logits(state, input_ids, candidates=None, padding_idx=0):
    """deepxml's forward: lengths from non-padding ids, cut to the longest, packed BiLSTM from (h0, c0) =
    (init_state[n//2:], init_state[:n//2]), -inf masked dot-product label attention, shared ReLU MLP."""
    masks = input_ids != padding_idx
    lengths = masks.sum(-1)
    width = int(lengths.max())
    emb = state["emb.emb.weight"][input_ids][:, :width]
    masks = masks[:, :width]
    init_state = state["lstm.init_state"]
    layers, hidden = init_state.size(0) // 4, init_state.size(2)
    lstm = nn.LSTM(emb.size(-1), hidden, layers, batch_first=True, bidirectional=True)
    lstm.load_state_dict({k.removeprefix("lstm.lstm."): v for k, v in state.items() if k.startswith("lstm.lstm.")})
    init_state = init_state.repeat(1, input_ids.size(0), 1)
    n = init_state.size(0)
    packed = pack_padded_sequence(emb, lengths, batch_first=True, enforce_sorted=False)
    rnn_out = pad_packed_sequence(lstm(packed, (init_state[n // 2 :], init_state[: n // 2]))[0], batch_first=True)[0]
    table = state["attention.attention.weight"]
    scores = (rnn_out @ table.T).transpose(1, 2) if candidates is None else table[candidates] @ rnn_out.transpose(1, 2)
    attention = scores.masked_fill(~masks[:, None, :], -torch.inf).softmax(-1)
    hidden_out = attention @ rnn_out
    index = 0
    while f"linear.linear.{index}.weight" in state:
        hidden_out = torch.relu(
            hidden_out @ state[f"linear.linear.{index}.weight"].T + state[f"linear.linear.{index}.bias"]
        )
        index += 1
    return (hidden_out @ state["linear.output.weight"].T + state["linear.output.bias"]).squeeze(-1)


INPUT_IDS = torch.tensor([[5, 9, 3, 7, 1, 2, 8, 0, 0, 0], [4, 4, 6, 0, 0, 0, 0, 0, 0, 0],
                          [11, 0, 0, 0, 0, 0, 0, 0, 0, 0], [2, 3, 4, 5, 6, 7, 8, 9, 10, 11]])  # fmt: skip


@pytest.mark.parametrize(
    ("layout", "layers", "linear"), [("flat", 2, [12, 6]), ("tree_level", 1, [10]), ("sharded", 2, [8])]
)
def test_other_sizes_and_layouts_match_the_original_forward(layout, layers, linear, tmp_path):
    labels = 30
    rows = labels + (layout == "tree_level")
    state = original_state_dict(vocab=40, emb=12, hidden=6, layers=layers, linear=linear, labels=labels, rows=rows)
    saved = OrderedDict(state)
    if layout != "flat":
        saved = OrderedDict((f"Network.{k}", v) for k, v in state.items())
    if layout == "sharded":  # parallel_attn=False: label-id ranges in AttentionWeights, no padding row
        table = saved.pop("Network.attention.attention.weight")
        saved["AttentionWeights.emb.0.weight"], saved["AttentionWeights.emb.1.weight"] = table[:17], table[17:]
        state["attention.attention.weight"] = torch.cat([table, torch.zeros(1, table.size(1))])
    torch.save(saved, tmp_path / "original.pt")
    model = converter.convert(tmp_path / "original.pt", tmp_path / "converted")
    assert model.config.num_labels == labels and model.config.linear_sizes == linear
    mask = (INPUT_IDS != 0).long()
    if layout == "flat":
        actual = model(INPUT_IDS, mask).logits
        expected = reference_logits(state, INPUT_IDS)
    else:
        candidates = torch.tensor([[0, 5, 29, 30], [1, 2, 3, 30], [7, 8, 30, 30], [29, 28, 27, 26]])
        actual = model(INPUT_IDS, mask, candidates=candidates).logits
        expected = reference_logits(state, INPUT_IDS, candidates)
    torch.testing.assert_close(actual, expected, atol=ATOL, rtol=0)
    reloaded = AutoModelForSequenceClassification.from_pretrained(tmp_path / "converted").eval()
    torch.testing.assert_close(reloaded(INPUT_IDS, mask).logits, model(INPUT_IDS, mask).logits, atol=1e-6, rtol=0)


def test_the_original_vocabulary_becomes_a_tokenizer_with_the_original_ids(tmp_path):
    """`--vocab vocab.npy` (`build_vocab`'s array: `<PAD>`, `<UNK>`, then words as they appear in the pre-tokenized
    texts) saves a tokenizer that gives the original's ids: whitespace splitting only, no lower-casing, unknown
    words `<UNK>` = 1; a vocabulary of the wrong size is refused."""
    import numpy as np
    from transformers import AutoTokenizer

    fixture = fixture_dir("attentionxml")
    config_path, _ = constructor_arguments(tmp_path, "attention_rnn")
    rows = original_arguments()["vocab_size"]  # one word per row of the checkpoint's embedding
    words = ["<PAD>", "<UNK>", "Don", "n't", "/SEP/", "U.S.", "the", *[f"w{i}" for i in range(rows - 7)]]
    np.save(tmp_path / "vocab.npy", np.asarray(words))
    output = tmp_path / "converted"
    command = [sys.executable, str(SCRIPT), "--checkpoint", str(fixture / "original_checkpoint.pt"), "--output",
               str(output), "--config", str(config_path), "--vocab", str(tmp_path / "vocab.npy")]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    tokenizer = AutoTokenizer.from_pretrained(output)
    assert tokenizer("Don n't /SEP/ U.S. the the unseen w5")["input_ids"] == [2, 3, 4, 5, 6, 6, 1, 12]
    assert tokenizer("the")["input_ids"] != tokenizer("The")["input_ids"]  # case is kept, as in the original
    np.save(tmp_path / "small.npy", np.asarray(words[:-1]))
    command[-1] = str(tmp_path / "small.npy")
    command[command.index(str(output))] = str(tmp_path / "refused")
    refused = subprocess.run(command, capture_output=True, text=True, check=False)
    assert (
        refused.returncode != 0
        and f"has {rows - 1} words but the checkpoint's embedding has {rows} rows" in refused.stderr
    )
