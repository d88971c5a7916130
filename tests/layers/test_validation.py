"""Inputs checked before use (hf_attn.layers.validation), over the registry: malformed input gets a `ValueError`
naming the argument, never a torch error from deep inside a model; the Transformer's decoder side is validated as
its encoder side is."""

from __future__ import annotations

import json

import pytest
import torch
import transformers
from torch import nn
from transformers import AutoConfig, pipeline

from hf_attn.layers import check_token_inputs
from hf_attn.registry.table import ARCHITECTURES, get_architecture
from tests.helpers import all_heads, make_inputs, make_labels, tiny_config


def build(architecture, head):
    torch.manual_seed(0)
    config = tiny_config(architecture)
    return head.model_class(config).eval(), config


@pytest.mark.parametrize(("architecture", "head"), all_heads())
def test_an_empty_batch_or_a_zero_length_axis_is_refused_naming_input_ids(architecture, head):
    model, config = build(architecture, head)
    inputs = make_inputs(head, config, [3, 2])
    no_examples = {name: tensor[:0] for name, tensor in inputs.items()}
    with pytest.raises(ValueError, match=r"`input_ids` is empty"):
        model(**no_examples)
    axis = 2 if head.inputs.name == "document" else 1  # documents: no words; everything else: no tokens
    no_positions = {
        name: tensor.narrow(axis, 0, 0) if name in ("input_ids", "attention_mask") else tensor
        for name, tensor in inputs.items()
    }
    with pytest.raises(ValueError, match=r"`input_ids` is empty"):
        model(**no_positions)


@pytest.mark.parametrize(("architecture", "head"), all_heads())
def test_labels_of_the_wrong_batch_size_or_out_of_range_are_refused(architecture, head):
    model, config = build(architecture, head)
    inputs = make_inputs(head, config, [3, 2])
    labels = make_labels(head, config, inputs)
    with pytest.raises(ValueError, match=r"`labels` must have"):
        model(**inputs, labels=labels[:1])
    wrong = labels.clone()
    if head.labels.name in ("multi_hot", "label_tree"):
        wrong[0, 0] = 2.0
        message = r"`labels` must hold multi-hot values in \[0, 1\]"
    else:
        wrong[wrong != -100] = 10_000
        message = r"`labels` holds ids outside"
    with pytest.raises(ValueError, match=message):
        model(**inputs, labels=wrong)


def _translation_model():
    architecture = get_architecture("vaswani_transformer")
    head = architecture.heads[0]
    model, config = build(architecture, head)
    return model, config, make_inputs(head, config, [5, 3], pair_lengths=[4, 2])


def test_decoder_attention_mask_and_batch_are_validated():
    model, _, inputs = _translation_model()
    mask = inputs["decoder_attention_mask"]
    for bad in (torch.cat([mask, mask[:, :1]], dim=1), mask[:, :-1]):  # one column too long, one too short
        with pytest.raises(ValueError, match=r"`decoder_attention_mask` must have shape"):
            model(**{**inputs, "decoder_attention_mask": bad})
    with pytest.raises(ValueError, match=r"`decoder_input_ids` must have the batch size of the source"):
        model(**{**inputs, "decoder_input_ids": inputs["decoder_input_ids"][:1], "decoder_attention_mask": None})


def test_a_left_padded_source_is_refused():
    model, _, inputs = _translation_model()
    with pytest.raises(ValueError, match=r"`attention_mask` must be right-padded"):
        model(**{**inputs, "attention_mask": inputs["attention_mask"].flip(-1)})


def test_an_all_padding_source_row_does_not_depend_on_the_padding_width():
    model, config, inputs = _translation_model()
    outputs = []
    for width in (3, 6):
        source = torch.full((1, width), config.pad_token_id)
        decoder = {"decoder_input_ids": inputs["decoder_input_ids"][:1], "decoder_attention_mask": None}
        outputs.append(model(input_ids=source, attention_mask=torch.zeros_like(source), **decoder).logits)
    assert torch.isfinite(outputs[0]).all()
    torch.testing.assert_close(outputs[0], outputs[1])


def test_elmo_tokenizer_pads_a_batch_of_empty_sentences_to_full_character_width():
    from hf_attn.models.elmo.tokenization_elmo import build_elmo_tokenizer

    architecture = get_architecture("elmo")
    model, config = build(architecture, architecture.heads[1])
    tokenizer = build_elmo_tokenizer(max_characters_per_token=config.max_characters_per_token)
    encoded = tokenizer([[], []], is_split_into_words=True, add_special_tokens=False, return_tensors="pt")
    assert encoded["input_ids"].shape == (2, 1, config.max_characters_per_token)
    assert torch.isfinite(model(**encoded).logits).all()  # an all-padding row: a defined output


@pytest.mark.parametrize("architecture", list(ARCHITECTURES.values()), ids=lambda row: row.name)
def test_a_misspelled_model_type_is_named_before_any_remote_code_prompt(architecture, tmp_path):
    head = next((head for head in architecture.heads if head.auto_class is not None), None)
    # Few-shot heads have no Auto class: their folder's base model (AutoModel) carries the code then.
    model_class, auto_class = (
        (head.model_class, head.auto_class) if head else (architecture.base_model_class, "AutoModel")
    )
    model_class(tiny_config(architecture)).save_pretrained(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    assert "AutoConfig" in config["auto_map"]  # the folder carries code: transformers would offer to run it
    misspelled = architecture.name[:-1] + "x"
    (tmp_path / "config.json").write_text(json.dumps({**config, "model_type": misspelled}))
    loaders = [AutoConfig.from_pretrained, getattr(transformers, auto_class).from_pretrained]
    tag = (head or architecture.heads[0]).pipeline_tag
    if tag is not None:
        loaders.append(lambda path: pipeline(tag, model=path))
    for load in loaders:
        with pytest.raises(ValueError, match=rf"model_type '{misspelled}'.*Did you mean '{architecture.name}'"):
            load(str(tmp_path))


def test_someone_elses_custom_code_model_keeps_transformers_rules(tmp_path):
    (tmp_path / "config.json").write_text(
        json.dumps({"model_type": "my_own_model", "auto_map": {"AutoConfig": "configuration_mine.MineConfig"}})
    )
    with pytest.raises(ValueError, match="trust_remote_code=True") as error:
        AutoConfig.from_pretrained(str(tmp_path))
    assert "hf_attn" not in str(error.value)


def test_check_token_inputs_errors_name_the_problem():
    ids = torch.tensor([[3, 4, 0]])
    assert check_token_inputs(ids, None, 10).all()  # no mask: every position is real, the pad id 0 too
    with pytest.raises(ValueError, match="must be right-padded"):
        check_token_inputs(ids, torch.tensor([[0, 1, 1]]), 10, right_padded=True)
    with pytest.raises(ValueError, match=r"2 dimensions \(batch, tokens\), got shape \(3,\)"):
        check_token_inputs(ids[0], None, 10)
    with pytest.raises(ValueError, match="`attention_mask` must have the same shape"):
        check_token_inputs(ids, torch.ones(1, 4), 10)
    with pytest.raises(ValueError, match=r"outside the vocabulary \[0, 4\): min 0, max 4"):
        check_token_inputs(ids, None, 4)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        check_token_inputs(-ids, None, 10)
    with pytest.raises(ValueError, match="integer token ids"):
        check_token_inputs(ids.float(), None, 10)
    with pytest.raises(ValueError, match="`pair_attention_mask`"):
        check_token_inputs(ids, torch.ones(2, 3), 10, name="pair_input_ids")


def test_value_checks_leave_no_branch_in_an_exported_graph():
    """Range and right-padding checks read values: `torch.export` traces past them (no data-dependent guard, no
    host sync), while the static checks still hold there."""

    class Checked(nn.Module):
        def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            return check_token_inputs(ids, mask, 10, right_padded=True).sum(-1)

    batch, tokens = torch.export.Dim("batch"), torch.export.Dim("tokens")
    ids, mask = torch.tensor([[3, 4, 0], [1, 2, 3]]), torch.tensor([[1, 1, 0], [1, 1, 1]])
    program = torch.export.export(Checked(), (ids, mask), dynamic_shapes=({0: batch, 1: tokens},) * 2)
    assert torch.equal(program.module()(ids, mask), torch.tensor([2, 3]))
    with pytest.raises(ValueError, match="must be right-padded"):  # eager: the check runs
        Checked()(ids, mask.flip(-1))
