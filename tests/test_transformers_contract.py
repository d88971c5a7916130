"""transformers' input contract, for every head of the registry: `attention_mask=None` means every position is real
(a pad id inside a text is a token like any other), and left padding either gives the right-padded outputs or is
refused with a message that says the model needs right padding."""

from __future__ import annotations

import pytest
import torch

from tests.helpers import all_heads, make_inputs, tiny_config

LENGTHS = [5, 2, 7, 1]


def build(architecture, head):
    torch.manual_seed(0)
    config = tiny_config(architecture)
    return head.model_class(config).eval(), config


@torch.no_grad()
@pytest.mark.parametrize(("architecture", "head"), all_heads())
def test_no_mask_means_every_position_is_real_pad_ids_included(architecture, head):
    if head.inputs.name == "characters":
        pytest.skip("ELMo's ids are a token's characters: a position without any character is no token (bilm-tf)")
    model, config = build(architecture, head)
    inputs = make_inputs(head, config, LENGTHS)
    pad = config.pad_token_id if config.pad_token_id is not None else 0
    for name, ids in inputs.items():
        if name.endswith("input_ids") and ids.size(-1) > 2:
            ids[..., 1] = pad  # a pad id inside the text: without a mask it is read as a token
    # Character masks stay: a character id 0 is no character (STCKA's bytes + 1), not a token's id.
    token_masks = [name for name in inputs if name.endswith("attention_mask") and "char" not in name]
    unmasked = {name: value for name, value in inputs.items() if name not in token_masks}
    all_real = {name: torch.ones_like(value) if name in token_masks else value for name, value in inputs.items()}
    torch.testing.assert_close(model(**unmasked).logits, model(**all_real).logits, rtol=1e-5, atol=1e-5)


def _left_padded(ids: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Each row's real tokens moved to the end of the row (its padding first)."""
    shifts = (mask.size(-1) - mask.sum(-1)).tolist()
    rolled = [
        (torch.roll(row, shift, -1), torch.roll(m, shift, -1)) for row, m, shift in zip(ids, mask, shifts, strict=True)
    ]
    return torch.stack([r for r, _ in rolled]), torch.stack([m for _, m in rolled])


@torch.no_grad()
@pytest.mark.parametrize(("architecture", "head"), all_heads())
def test_left_padding_gives_the_same_outputs_or_is_refused(architecture, head):
    if head.inputs.name != "sentence" or head.labels.per_token:
        pytest.skip("one text of token ids with one prediction per text: other inputs have no single padding side")
    model, config = build(architecture, head)
    inputs = make_inputs(head, config, LENGTHS)
    right = model(**inputs).logits
    left_ids, left_mask = _left_padded(inputs["input_ids"], inputs["attention_mask"])
    try:
        left = model(**{**inputs, "input_ids": left_ids, "attention_mask": left_mask}).logits
    except ValueError as error:
        assert "right-padded" in str(error) or "padding_side" in str(error), error
        return
    torch.testing.assert_close(left, right, rtol=1e-5, atol=1e-5)


@torch.no_grad()
def test_accelerate_big_model_loading_after_tie_weights(tmp_path):
    """The manual's recipe: `init_empty_weights`, `tie_weights()` (the Transformer's lm_head shares the target
    embeddings, as Bart's does), `load_checkpoint_and_dispatch` gives the saved model's logits."""
    from accelerate import init_empty_weights, load_checkpoint_and_dispatch
    from transformers import AutoConfig, AutoModelForSeq2SeqLM

    from hf_attn.registry.table import get_architecture

    architecture = get_architecture("vaswani_transformer")
    head = architecture.heads[0]
    saved, config = build(architecture, head)
    saved.save_pretrained(tmp_path)
    with init_empty_weights():
        model = AutoModelForSeq2SeqLM.from_config(AutoConfig.from_pretrained(tmp_path))
    model.tie_weights()
    model = load_checkpoint_and_dispatch(model, str(tmp_path), device_map="auto").eval()
    inputs = make_inputs(head, config, [4, 3])
    torch.testing.assert_close(model(**inputs).logits, saved(**inputs).logits, rtol=0, atol=1e-6)
