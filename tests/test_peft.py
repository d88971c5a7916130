"""PEFT on every head with an Auto class, in the task type of that class: LoRA on every linear layer trains (the loss
falls), the adapter saves and reloads onto a freshly loaded base model with the same outputs, and merging it into
the weights changes nothing. Heads that read token ids also take `inputs_embeds`, which PEFT passes (as `None`, or
as vectors in prompt learning), with the outputs of their ids."""

from __future__ import annotations

import pytest
import torch

from tests.helpers import all_heads, make_inputs, make_labels, tiny_config

peft = pytest.importorskip("peft")

TASK_TYPES = {
    "AutoModelForSequenceClassification": "SEQ_CLS",
    "AutoModelForTokenClassification": "TOKEN_CLS",
    "AutoModelForSeq2SeqLM": "SEQ_2_SEQ_LM",
    "AutoModelForCausalLM": "CAUSAL_LM",
}
LENGTHS = [5, 2, 7, 3]


def peft_heads():
    return [param for param in all_heads() if param.values[1].auto_class in TASK_TYPES]


def lora_targets(model: torch.nn.Module) -> list[str]:
    """Every linear and embedding layer but the output layers (PEFT trains a classifier whole, as
    `modules_to_save`; an LM head is tied to its embeddings): what `target_modules="all-linear"` means for a
    transformer, extended to the embedding tables some of these models keep their only adaptable weights in."""
    output_layers = {"classifier", "score", "lm_head"}
    return [
        name
        for name, module in model.named_modules()
        if isinstance(module, torch.nn.Linear | torch.nn.Embedding) and not output_layers & set(name.split("."))
    ]


def _logits(model, inputs):
    model.eval()
    with torch.no_grad():
        return model(**inputs).logits


@pytest.mark.parametrize(("architecture", "head"), peft_heads())
def test_lora_trains_saves_reloads_and_merges(architecture, head, tmp_path):
    torch.manual_seed(0)
    config = tiny_config(architecture)
    model = head.model_class(config)
    model.save_pretrained(tmp_path / "base")
    inputs = make_inputs(head, config, LENGTHS)
    labels = make_labels(head, config, inputs)
    lora = peft.LoraConfig(
        task_type=TASK_TYPES[head.auto_class], target_modules=lora_targets(model), r=4, lora_alpha=8,
        lora_dropout=0.0,
    )  # fmt: skip
    adapted = peft.get_peft_model(model, lora)
    trainable = [parameter for parameter in adapted.parameters() if parameter.requires_grad]
    assert trainable and len(trainable) < len(list(adapted.parameters()))
    assert any("lora_" in name for name, _ in adapted.named_parameters())
    optimizer = torch.optim.Adam(trainable, lr=1e-2)
    adapted.train()
    losses = []
    for _ in range(8):
        optimizer.zero_grad()
        loss = adapted(**inputs, labels=labels).loss
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0], losses
    expected = _logits(adapted, inputs)

    adapted.save_pretrained(tmp_path / "adapter")
    assert (tmp_path / "adapter" / "adapter_model.safetensors").is_file()
    base = head.model_class.from_pretrained(tmp_path / "base")
    reloaded = peft.PeftModel.from_pretrained(base, tmp_path / "adapter")
    torch.testing.assert_close(_logits(reloaded, inputs), expected, rtol=1e-5, atol=1e-5)
    merged = reloaded.merge_and_unload()
    assert not any("lora_" in name for name, _ in merged.named_parameters())
    torch.testing.assert_close(_logits(merged, inputs), expected, rtol=1e-5, atol=1e-5)


@torch.no_grad()
@pytest.mark.parametrize(("architecture", "head"), all_heads())
def test_inputs_embeds_give_the_outputs_of_their_ids(architecture, head):
    if head.inputs.name == "episodes":
        pytest.skip("a few-shot episode is many texts (support and queries): PEFT has no task type for it")
    if head.auto_class is None:  # pair heads, the label tree
        pytest.skip(f"{head.model_class.__name__} has no Auto class: PEFT never wraps it")
    torch.manual_seed(0)
    config = tiny_config(architecture)
    model = head.model_class(config).eval()
    inputs = make_inputs(head, config, LENGTHS)
    embedded = {name: value for name, value in inputs.items() if name != "input_ids"}
    if head.inputs.name == "characters":  # ELMo's token vectors x_k are what its character CNN makes of each token
        embedded["inputs_embeds"] = model.base_model(**inputs).token_embeddings
    else:
        embedded["inputs_embeds"] = model.get_input_embeddings()(inputs["input_ids"])
    torch.testing.assert_close(model(**embedded).logits, model(**inputs).logits, rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="exactly one of `input_ids` and `inputs_embeds`"):
        model(**inputs, inputs_embeds=embedded["inputs_embeds"])
