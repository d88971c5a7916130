"""The paper's schedule through Trainer, the shared BPE tokenizer and the synthetic translation task."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoTokenizer, Trainer, TrainingArguments

from hf_attn import ARCHITECTURES, VaswaniTransformerForConditionalGeneration
from hf_attn.data import toy_translation
from hf_attn.models.vaswani_transformer.schedules_vaswani_transformer import noam_arguments
from hf_attn.tokenization import train_bpe_tokenizer
from tests.helpers import tiny_config


def test_noam_schedule_through_trainer_follows_eq_3(tmp_path):
    d_model, warmup = 512, 4000
    model = VaswaniTransformerForConditionalGeneration(tiny_config(ARCHITECTURES["vaswani_transformer"]))
    args = TrainingArguments(
        output_dir=str(tmp_path), report_to="none", use_cpu=True, **noam_arguments(d_model, warmup)
    )
    trainer = Trainer(model=model, args=args)
    trainer.create_optimizer_and_scheduler(num_training_steps=20000)
    optimizer, scheduler = trainer.optimizer, trainer.lr_scheduler
    assert optimizer.defaults["betas"] == (0.9, 0.98) and optimizer.defaults["eps"] == 1e-9
    rates = {}
    for step in range(1, 12001):
        optimizer.step()
        scheduler.step()
        rates[step] = scheduler.get_last_lr()[0]
    for step in (100, 2000, 4000, 8000, 12000):
        expected = d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)  # eq. 3
        assert rates[step] == pytest.approx(expected, rel=1e-6), step


def test_bpe_tokenizer_is_shared_appends_eos_and_round_trips(tmp_path):
    data = toy_translation(500, seed=0)
    tokenizer = train_bpe_tokenizer(list(data["source"]) + list(data["target"]), vocab_size=300)
    assert tokenizer.convert_ids_to_tokens([0, 1, 2, 3]) == ["[PAD]", "[UNK]", "[BOS]", "[EOS]"]
    encoded = tokenizer(data[0]["target"])["input_ids"]
    assert (
        encoded[-1] == tokenizer.eos_token_id
        and tokenizer.decode(encoded, skip_special_tokens=True) == data[0]["target"]
    )
    tokenizer.save_pretrained(tmp_path)
    reloaded = AutoTokenizer.from_pretrained(tmp_path)
    assert reloaded(data[1]["source"])["input_ids"] == tokenizer(data[1]["source"])["input_ids"]
    assert reloaded.bos_token_id == 2 and reloaded.pad_token_id == 0


def test_toy_translation_rules():
    data = toy_translation(200, seed=3)
    assert data.to_dict() == toy_translation(200, seed=3).to_dict()
    row = next(r for r in data if "red" in r["source"].split() and "house" in r["source"].split())
    assert "roja" in row["target"].split() or "rojo" in row["target"].split()
    for row in data:
        source, target = row["source"].split(), row["target"].split()
        assert len(source) == len(target)  # one word each; reordering, not insertion
        for index, word in enumerate(source):
            if word == "house" and index > 0 and source[index - 1] == "red":  # "red house" -> "casa roja"
                position = target.index("casa")
                assert target[position + 1] == "roja"


def test_bad_decoder_inputs_are_clear_errors():
    model = VaswaniTransformerForConditionalGeneration(tiny_config(ARCHITECTURES["vaswani_transformer"]))
    with pytest.raises(ValueError, match="`decoder_input_ids` must have 2 dimensions"):
        model(torch.tensor([[5, 6]]), decoder_input_ids=torch.tensor([2, 5]))
