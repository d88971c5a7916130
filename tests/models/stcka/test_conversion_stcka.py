"""Parity of `conversion/convert_stcka_original_to_hf.py` with the unofficial STCKA code (AIRobotZhang/STCKA).

`../shared/fixtures/stcka` holds the code's checkpoint, a batch, and its logits, loss, prediction and 19
intermediates. The constructor arguments (γ, layers, fine-tuning) and the vocabularies are read from its
`original_config.json`, so the same tests run on fixtures of other sizes and settings. A transcription of the
fixture README's math on the original key names checks other γ, layers, sizes and frozen embeddings.
"""

from __future__ import annotations

import json
import math

import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoTokenizer

from hf_attn.models.stcka.convert_stcka_original_to_hf import convert, main
from tests.helpers import fixture_dir

ATOL = 1e-5


@pytest.fixture(scope="session")
def fixture():
    folder = fixture_dir("stcka")
    return {
        "folder": folder,
        "checkpoint": folder / "original_checkpoint.pt",
        "config_path": folder / "original_config.json",
        "config": json.loads((folder / "original_config.json").read_text()),
        "inputs": load_file(folder / "inputs.safetensors"),
        "expected": load_file(folder / "expected.safetensors"),
    }


@torch.no_grad()
def model_tensors(model, text_ids: torch.Tensor, concept_ids: torch.Tensor, labels: torch.Tensor) -> dict:
    """The model's tensors under the fixture's names: its outputs, and the intermediates from its modules."""
    output = model(input_ids=text_ids, concept_input_ids=concept_ids, labels=labels, output_hidden_states=True)
    stcka = model.stcka
    text_embed, hidden = output.hidden_states
    _, (h_n, c_n) = stcka.text_encoder.lstm.rnn(text_embed)  # unpacked, as the code: the final states it ignores
    concepts = stcka.concept_embeddings(concept_ids)
    knowledge = stcka.knowledge_encoder
    query = output.text_representation[:, None, :].expand(-1, concepts.size(1), -1)
    cst_tanh = torch.tanh(knowledge.cst_projection(torch.cat([concepts, query], dim=-1)))
    ccs_tanh = torch.tanh(knowledge.ccs_projection(concepts))
    return {
        "logits": output.logits,
        "loss": output.loss,
        "pred": output.logits.argmax(dim=1),
        "txt_embed": text_embed,
        "cpt_embed": concepts,
        "lstm_output": hidden,
        "lstm_h_n": h_n,
        "lstm_c_n": c_n,
        "self_attn_scores": torch.bmm(hidden, hidden.transpose(1, 2)),
        "self_attn_weights": output.self_attentions,
        "self_attn_output": torch.bmm(output.self_attentions, hidden),
        "q": output.text_representation,
        "cst_tanh": cst_tanh,
        "alpha_logits": knowledge.cst_context(cst_tanh).squeeze(-1),
        "alpha": output.cst_attentions,
        "ccs_tanh": ccs_tanh,
        "beta_logits": knowledge.ccs_context(ccs_tanh).squeeze(-1),
        "beta": output.ccs_attentions,
        "cpt_atten": output.concept_attentions,
        "p": output.concept_representation,
        "hidden_rep": torch.cat([output.text_representation, output.concept_representation], dim=-1),
    }


def test_reproduces_every_tensor_of_the_original(fixture, tmp_path):
    main(
        [
            "--checkpoint",
            str(fixture["checkpoint"]),
            "--output",
            str(tmp_path),
            "--config",
            str(fixture["config_path"]),
        ]
    )
    from hf_attn import StckaForSequenceClassification

    model = StckaForSequenceClassification.from_pretrained(tmp_path).eval()
    arguments = fixture["config"]["constructor_kwargs"]
    assert model.config.gamma == arguments["gama"] and model.config.num_hidden_layers == arguments["num_layer"]
    assert model.config.freeze_embeddings == (not arguments["finetuning"]) and not model.config.mask_padding
    inputs, expected = fixture["inputs"], fixture["expected"]
    tensors = model_tensors(model, inputs["txt_wordid"], inputs["cpt_wordid"], inputs["label"])
    assert set(expected) - set(tensors) == {"logits_solo_unpadded"}
    for name, value in tensors.items():
        if name == "pred":
            assert torch.equal(value, expected[name])
        else:
            torch.testing.assert_close(value, expected[name], rtol=1e-5, atol=ATOL, msg=name)
    # Each row alone at its own length: the code's outputs depend on the batch's padding, and so do these.
    with torch.no_grad():
        for row, (text_length, concept_length) in enumerate(
            zip(inputs["txt_lengths"], inputs["cpt_lengths"], strict=True)
        ):
            alone = model(input_ids=inputs["txt_wordid"][row : row + 1, :text_length],
                          concept_input_ids=inputs["cpt_wordid"][row : row + 1, :concept_length]).logits  # fmt: skip
            torch.testing.assert_close(alone[0], expected["logits_solo_unpadded"][row], rtol=1e-5, atol=ATOL)
    # The saved tokenizer gives the original's ids from the rows' words and concepts.
    tokenizer = AutoTokenizer.from_pretrained(tmp_path)
    rows = fixture["config"]["batch_examples"]
    encoded = tokenizer([" ".join(row["text"]) for row in rows], concepts=[row["concepts"] for row in rows],
                        padding=True, return_tensors="pt")  # fmt: skip
    assert torch.equal(encoded["input_ids"], inputs["txt_wordid"])
    assert torch.equal(encoded["concept_input_ids"], inputs["cpt_wordid"])
    assert model.config.id2label == dict(enumerate(fixture["config"]["vocab"]["label_itos"]))


def original_forward(state: dict[str, torch.Tensor], text_ids, concept_ids, gama: float, layers: int) -> torch.Tensor:
    """The fixture README's math block, on the original key names (an `nn.LSTM` holds the code's LSTM weights)."""
    x = state["txt_word_embed.weight"][text_ids]
    hidden_size = state["lstm.weight_hh_l0"].size(1)
    lstm = torch.nn.LSTM(x.size(-1), hidden_size, num_layers=layers, batch_first=True, bidirectional=True)
    lstm.load_state_dict({key.removeprefix("lstm."): value for key, value in state.items() if key.startswith("lstm.")})
    h = lstm(x)[0]
    a = torch.softmax(h @ h.transpose(1, 2) / math.sqrt(h.size(-1)), dim=-1) @ h
    q = a.max(dim=1).values
    c = state["cpt_word_embed.weight"][concept_ids]
    cq = torch.cat([c, q[:, None].expand(-1, c.size(1), -1)], -1)
    alpha = torch.softmax(torch.tanh(cq @ state["W1.weight"].T + state["W1.bias"]) @ state["w1.weight"][0], dim=-1)
    beta = torch.softmax(torch.tanh(c @ state["W2.weight"].T + state["W2.bias"]) @ state["w2.weight"][0], dim=-1)
    weights = torch.softmax(gama * alpha + (1 - gama) * beta, dim=-1)
    p = (weights[..., None] * c).sum(1)
    return torch.cat([q, p], -1) @ state["output.weight"].T + state["output.bias"]


@torch.no_grad()
@pytest.mark.parametrize(("gama", "layers", "hidden", "finetuning"), [(0.3, 2, 7, False), (0.9, 1, 5, True)])
def test_other_gamma_layers_sizes_and_frozen_embeddings(tmp_path, gama, layers, hidden, finetuning):
    generator = torch.Generator().manual_seed(layers)
    words, concepts, width, labels = 23, 17, 10, 3
    shapes = {"txt_word_embed.weight": (words, width), "cpt_word_embed.weight": (concepts, width),
              "W1.weight": (hidden, 2 * hidden + width), "W1.bias": (hidden,), "w1.weight": (1, hidden),
              "W2.weight": (hidden // 2, width), "W2.bias": (hidden // 2,), "w2.weight": (1, hidden // 2),
              "output.weight": (labels, 2 * hidden + width), "output.bias": (labels,)}  # fmt: skip
    for layer in range(layers):
        for suffix in ("", "_reverse"):
            inputs = width if layer == 0 else 2 * hidden
            shapes.update({f"lstm.weight_ih_l{layer}{suffix}": (4 * hidden, inputs),
                           f"lstm.weight_hh_l{layer}{suffix}": (4 * hidden, hidden),
                           f"lstm.bias_ih_l{layer}{suffix}": (4 * hidden,),
                           f"lstm.bias_hh_l{layer}{suffix}": (4 * hidden,)})  # fmt: skip
    state = {key: torch.randn(shape, generator=generator) for key, shape in shapes.items()}
    torch.save({f"module.{key}": value for key, value in state.items()}, tmp_path / "model.pt")  # a DataParallel save
    (tmp_path / "args.json").write_text(json.dumps({"gama": gama, "num_layer": layers, "finetuning": finetuning}))
    model = convert(tmp_path / "model.pt", config_path=tmp_path / "args.json")
    text_ids = torch.randint(0, words, (4, 6), generator=generator)
    concept_ids = torch.randint(0, concepts, (4, 5), generator=generator)
    expected = original_forward(state, text_ids, concept_ids, gama, layers)
    torch.testing.assert_close(model(input_ids=text_ids, concept_input_ids=concept_ids).logits, expected)
    frozen = [not model.stcka.embeddings.weight.requires_grad, not model.stcka.concept_embeddings.weight.requires_grad]
    assert frozen == [not finetuning] * 2
    assert convert(tmp_path / "model.pt", gamma=0.2).config.gamma == 0.2  # --gama when the config has none


def test_a_config_that_contradicts_the_weights_is_refused(fixture, tmp_path):
    (tmp_path / "args.json").write_text(json.dumps({"hidden_size": 99}))
    with pytest.raises(ValueError, match="hidden_size = 99"):
        convert(fixture["checkpoint"], config_path=tmp_path / "args.json")
