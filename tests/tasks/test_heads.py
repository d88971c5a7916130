"""Which shape and which head (hf_attn.tasks.heads): the shapes by name with the folders' own, a run's head by name
or by its data's shape, a saved folder's head read without its weights, and a model's head in memory, each lookup
refusing what is not a head in one line that names the heads there are."""

from __future__ import annotations

import pytest

from hf_attn.registry.table import get_architecture
from hf_attn.tasks import Classification, MultiLabel
from hf_attn.tasks.heads import (
    TASK_SHAPES,
    find_head,
    head_named,
    heads_for,
    load_trained,
    pick_head,
    shape_for_head,
    shape_of,
    trained_head,
)

LIN = "lin_self_attentive"


def test_the_shapes_by_name_hold_the_shared_ones_and_a_folders_variant():
    assert isinstance(TASK_SHAPES["classification"], Classification)
    assert isinstance(TASK_SHAPES["multi_label"], MultiLabel)
    assert TASK_SHAPES["label_tree"].variant_of == "multi_label"  # AttentionXML's folder adds it
    assert TASK_SHAPES["multi_label"].variants == ("label_tree",)
    assert all(shape.name == name for name, shape in TASK_SHAPES.items())


def test_a_head_asked_for_by_name_picks_the_variant_that_trains_it():
    xml = get_architecture("attention_xml")
    multi_label = TASK_SHAPES["multi_label"]
    assert shape_for_head(multi_label, xml, "AttentionXmlForLabelTree").name == "label_tree"
    assert shape_for_head(multi_label, xml, None) is multi_label
    assert pick_head(xml, TASK_SHAPES["label_tree"], None).model_class.__name__ == "AttentionXmlForLabelTree"
    assert [head.model_class.__name__ for head in heads_for(xml, multi_label, None)] == [
        "AttentionXmlForSequenceClassification"
    ]
    assert shape_of(pick_head(xml, TASK_SHAPES["label_tree"], None)).name == "label_tree"


def test_a_head_the_shape_does_not_train_is_refused_naming_the_heads():
    lin = get_architecture(LIN)
    with pytest.raises(ValueError, match=r"^lin_self_attentive has no head for seq2seq tasks \(its heads: Lin"):
        pick_head(lin, TASK_SHAPES["seq2seq"], None)
    with pytest.raises(ValueError, match=r"has no head NoSuchHead for classification tasks"):
        pick_head(lin, TASK_SHAPES["classification"], "NoSuchHead")


def test_the_head_of_a_model_and_of_a_saved_folder_and_the_base_model_refused(tmp_path):
    lin = get_architecture(LIN)
    config = lin.config_class(**lin.tiny_config)
    head = lin.heads[0]
    model = head.model_class(config)
    assert find_head(model) == (lin, head)
    assert head_named(lin, head.model_class.__name__) is head and head_named(lin, "LinSelfAttentiveModel") is None
    base = lin.base_model_class(config)
    with pytest.raises(ValueError, match=r"LinSelfAttentiveModel is not a head of lin_self_attentive: pass a head"):
        find_head(base)
    model.save_pretrained(tmp_path / "head")
    read_config, read_head = trained_head(str(tmp_path / "head"))
    assert read_head is head and read_config.model_type == LIN
    base.save_pretrained(tmp_path / "base")
    with pytest.raises(ValueError, match=r"LinSelfAttentiveModel is not a task head of lin_self_attentive"):
        trained_head(str(tmp_path / "base"))
    with pytest.raises(ValueError, match=r"has no tokenizer \(save one with the model\)"):
        load_trained(str(tmp_path / "head"), head=head)
