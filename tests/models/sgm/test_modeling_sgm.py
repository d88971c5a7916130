"""SGM: generation (cache, repeat mask, beam search), the global embedding's equations, label sets, metrics."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers import AutoModelForSeq2SeqLM

from hf_attn import SgmConfig, SgmForMultiLabelClassification, SgmForMultiLabelGeneration, sgm_original_beam_search
from hf_attn.models.sgm.modeling_sgm import RepeatedLabelLogitsProcessor, SgmGlobalEmbedding
from hf_attn.registry.table import ARCHITECTURES, get_architecture
from hf_attn.tasks.metrics import label_sequences_to_multi_hot, multi_label_metrics
from tests.helpers import head_of, make_inputs, make_labels, tiny_config

ARCHITECTURE = ARCHITECTURES["sgm"]


def model_and_inputs(seed: int = 0, **overrides) -> tuple[SgmForMultiLabelGeneration, dict[str, torch.Tensor]]:
    torch.manual_seed(seed)
    # wide init: at U(-0.1, 0.1) an untrained model emits nearly uniform scores, and ties make the tests vacuous
    config = tiny_config(ARCHITECTURE, initializer_range=0.6, num_labels=8, **overrides)
    model = SgmForMultiLabelGeneration(config).eval()
    generator = torch.Generator().manual_seed(seed)
    input_ids = torch.randint(1, config.vocab_size, (4, 9), generator=generator)
    mask = (torch.arange(9)[None, :] < torch.tensor([9, 4, 7, 1])[:, None]).long()
    return model, {"input_ids": input_ids.masked_fill(mask == 0, 0), "attention_mask": mask}


@pytest.mark.parametrize("num_beams", [1, 3])
@pytest.mark.parametrize("source", ["masked", "unmasked"])
def test_cached_and_uncached_generation_are_identical(num_beams, source):
    model, inputs = model_and_inputs(global_embedding_source=source)
    kwargs = {"num_beams": num_beams, "max_new_tokens": 7, "output_scores": True, "return_dict_in_generate": True}
    cached = model.generate(**inputs, use_cache=True, **kwargs)
    uncached = model.generate(**inputs, use_cache=False, **kwargs)
    assert torch.equal(cached.sequences, uncached.sequences)
    for with_cache, without in zip(cached.scores, uncached.scores, strict=True):
        torch.testing.assert_close(with_cache, without, rtol=0, atol=1e-5)


@pytest.mark.parametrize("num_beams", [1, 3])
def test_no_label_is_emitted_twice_with_the_mask(num_beams):
    model, inputs = model_and_inputs()
    # greedy runs past EOS (every step masks all earlier ids); beam search stops at EOS (transformers needs one)
    no_stop = {"eos_token_id": []} if num_beams == 1 else {}
    masked = model.generate(**inputs, num_beams=num_beams, max_new_tokens=12, **no_stop)
    for row in masked[:, 1:].tolist():
        row = row if num_beams == 1 or 3 not in row else row[: row.index(3)]
        assert len(row) == len(set(row)), row
    unmasked = model.generate(**inputs, max_new_tokens=12, eos_token_id=[], mask_repeated_labels=False)
    assert any(len(row) != len(set(row)) for row in unmasked[:, 1:].tolist())  # the mask is what prevents it


def test_repeat_mask_keeps_the_start_token_and_masks_every_emitted_id():
    scores = torch.zeros(2, 6)
    processed = RepeatedLabelLogitsProcessor()(torch.tensor([[2, 5, 3], [2, 2, 4]]), scores)
    assert torch.isinf(processed).tolist() == [
        [False, False, False, True, False, True],
        [False, False, True, False, True, False],
    ]


@pytest.mark.parametrize("mask", [True])
def test_one_beam_of_the_original_beam_search_is_greedy_decoding(mask):
    """Beam 1 = greedy. (Without the repeat mask a greedy path may repeat a 3-gram, which the original's beam
    search blocks: the two then differ by design.)"""
    model, inputs = model_and_inputs()
    greedy = model.generate(**inputs, max_new_tokens=6, mask_repeated_labels=mask)
    beam = model.generate(
        **inputs, num_beams=1, max_new_tokens=6, custom_generate=sgm_original_beam_search, mask_repeated_labels=mask
    )
    for greedy_row, beam_row in zip(greedy.tolist(), beam.tolist(), strict=True):
        cut = lambda row: row[: row.index(3) + 1] if 3 in row else row  # noqa: E731
        assert cut(greedy_row) == cut(beam_row)


def test_save_and_load_keep_the_generation_config(tmp_path):
    model, inputs = model_and_inputs()
    model.generation_config.update(num_beams=3, max_new_tokens=5, length_penalty=0.0)
    expected = model.generate(**inputs)
    model.save_pretrained(tmp_path)
    reloaded = AutoModelForSeq2SeqLM.from_pretrained(tmp_path).eval()
    assert type(reloaded) is SgmForMultiLabelGeneration
    assert (reloaded.generation_config.num_beams, reloaded.generation_config.max_new_tokens) == (3, 5)
    assert torch.equal(reloaded.generate(**inputs), expected)


def test_global_embedding_by_hand():
    """Eq. 8–9 (paper gate) and the original's form, on known numbers."""
    config = SgmConfig(embedding_size=2, num_labels=1, num_special_tokens=4, global_embedding=True)
    module = SgmGlobalEmbedding(config)
    with torch.no_grad():
        for linear in (module.gate_label, module.gate_average):
            linear.weight.copy_(torch.eye(2))
            linear.bias.zero_()
    table = torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [2.0, 0.0]])  # (V=5, E=2)
    embedding = torch.tensor([[1.0, -1.0]])
    logits = torch.tensor([[0.0, 1.0, 2.0, 0.0, 3.0]])
    emitted = torch.tensor([[False, False, False, False, True]])
    probabilities = torch.softmax(torch.tensor([0.0, 1.0, 2.0, 0.0, -1e7]), dim=-1)
    average = probabilities @ table
    gate = torch.sigmoid(embedding + average)
    torch.testing.assert_close(module(embedding, table, logits, emitted), (1 - gate) * embedding + gate * average)
    config.global_embedding_source = "unmasked"
    average = torch.softmax(logits[0], -1) @ table
    gate = torch.sigmoid(embedding + average)
    torch.testing.assert_close(module(embedding, table, logits, emitted), (1 - gate) * embedding + gate * average)
    config.global_embedding_gate, config.global_embedding_tau = "original", 0.5
    average = torch.softmax(logits[0] / 0.5, -1) @ table
    gate = torch.sigmoid(embedding + average)
    expected = torch.cat([embedding, gate * embedding + (1 - gate) * average], dim=-1)
    torch.testing.assert_close(module(embedding, table, logits, emitted), expected)
    config.global_embedding_source = "uniform"  # the original's beam search; also every first step
    average = table.mean(0, keepdim=True)
    gate = torch.sigmoid(embedding + average)
    expected = torch.cat([embedding, gate * embedding + (1 - gate) * average], dim=-1)
    torch.testing.assert_close(module(embedding, table, logits, emitted), expected)
    torch.testing.assert_close(module(embedding, table, None, emitted), expected)


def test_global_embedding_changes_the_next_step_only_through_the_previous_scores():
    """With the global embedding, teacher-forced step t depends on step t−1's scores: perturbing the label
    projection's bias changes step 1 even for the same inputs; without it, only through the projection itself."""
    model, inputs = model_and_inputs()
    decoder_input_ids = torch.tensor([[2, 5, 6]] * 4)
    before = model(**inputs, decoder_input_ids=decoder_input_ids).logits
    with torch.no_grad():
        model.model.decoder.label_projection.bias[6] += 5.0
    after = model(**inputs, decoder_input_ids=decoder_input_ids).logits
    delta = (after - before).abs()
    delta[..., 6] = 0  # the perturbed score itself
    assert delta[:, 0].max() == 0 and delta[:, 1:].max() > 1e-4


def test_predict_label_sets_returns_names_without_repeats():
    model, inputs = model_and_inputs()
    model.config.id2label = {index: f"topic{index}" for index in range(model.config.num_labels)}
    sets = model.predict_label_sets(**inputs, max_new_tokens=6)
    assert len(sets) == 4
    for names in sets:
        assert len(names) == len(set(names)) and all(name.startswith("topic") for name in names)


def test_original_switches_need_matching_sizes():
    with pytest.raises(Exception, match="decoder_initial_state"):
        SgmConfig(encoder_hidden_size=8, decoder_hidden_size=12)
    with pytest.raises(Exception, match="luong_gate"):
        SgmConfig(
            encoder_hidden_size=8, decoder_hidden_size=8, attention_type="luong_gate", decoder_initial_state="zeros"
        )
    with pytest.raises(Exception, match="eos_token_id"):
        SgmConfig(eos_token_id=7)
    SgmConfig(encoder_hidden_size=8, decoder_hidden_size=8, merge_directions="sum", attention_type="luong_gate",
              decoder_initial_state="forward_final")  # fmt: skip


def test_clear_errors_for_bad_inputs():
    model, inputs = model_and_inputs()
    with pytest.raises(ValueError, match="right-padded"):
        model(inputs["input_ids"], inputs["attention_mask"].flip(-1), decoder_input_ids=torch.full((4, 1), 2))
    with pytest.raises(ValueError, match="decoder_input_ids"):
        model(**inputs, decoder_input_ids=torch.full((4, 1), model.config.target_vocab_size))
    with pytest.raises(ValueError, match="decoder_input_ids"):
        model(**inputs)


def test_reversed_source_equals_feeding_the_reversed_text():
    model, inputs = model_and_inputs(reverse_source=True)
    plain, _ = model_and_inputs(reverse_source=False)
    plain.load_state_dict(model.state_dict())
    reversed_ids = inputs["input_ids"].clone()
    for row, length in enumerate(inputs["attention_mask"].sum(-1).tolist()):
        reversed_ids[row, :length] = reversed_ids[row, :length].flip(0)
    decoder_input_ids = torch.tensor([[2, 5, 7]] * 4)
    expected = plain(reversed_ids, inputs["attention_mask"], decoder_input_ids=decoder_input_ids)
    actual = model(**inputs, decoder_input_ids=decoder_input_ids)
    torch.testing.assert_close(actual.logits, expected.logits, rtol=0, atol=1e-6)
    for row, length in enumerate(inputs["attention_mask"].sum(-1).tolist()):  # maps index the input as given
        torch.testing.assert_close(
            actual.cross_attentions[row, :, :length], expected.cross_attentions[row, :, :length].flip(-1)
        )


def test_binary_relevance_baseline_is_multi_label():
    torch.manual_seed(0)
    model = SgmForMultiLabelClassification(tiny_config(ARCHITECTURE)).eval()
    assert model.config.problem_type == "multi_label_classification"
    ids = torch.randint(1, 50, (2, 5))
    labels = torch.tensor([[1.0, 0, 1, 0, 0], [0, 0, 0, 0, 1]])
    output = model(ids, labels=labels)
    expected = torch.nn.functional.binary_cross_entropy_with_logits(output.logits, labels)
    torch.testing.assert_close(output.loss, expected)


def test_multi_label_metrics_by_hand():
    predicted = np.array([[1, 0, 1, 0], [0, 1, 0, 0], [0, 0, 0, 0]])
    gold = np.array([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 0, 1]])
    metrics = multi_label_metrics(predicted, gold)
    # tp = 2, fp = 1, fn = 1; per label F1: 1, 1, 0, 0
    assert metrics["hamming_loss"] == pytest.approx(2 / 12)
    assert metrics["micro_f1"] == pytest.approx(4 / 6)
    assert metrics["micro_precision"] == pytest.approx(2 / 3) and metrics["micro_recall"] == pytest.approx(2 / 3)
    assert metrics["macro_f1"] == pytest.approx(0.5)
    assert metrics["subset_accuracy"] == pytest.approx(1 / 3)


def test_label_sequences_decode_to_sets():
    config = SgmConfig(num_labels=3)
    sequences = np.array([[2, 5, 4, 5, 3, 6], [2, 3, 6, 0, 0, 0], [6, 1, 0, 4, 3, -100], [-100, -100, -100, 3, 4, 4]])
    assert label_sequences_to_multi_hot(sequences, config).astype(int).tolist() == [
        [1, 1, 0],
        [0, 0, 0],
        [1, 0, 1],
        [0, 0, 0],
    ]


def test_original_code_preset_sets_every_switch_at_once():
    paper, original = SgmConfig(num_labels=3), SgmConfig.original_code(num_labels=3, hidden_size=16)
    for name, value in SgmConfig.ORIGINAL_CODE_SWITCHES.items():
        assert getattr(original, name) == value != getattr(paper, name), name
    assert original.encoder_hidden_size == original.decoder_hidden_size == original.attention_size == 16
    assert SgmConfig.original_code(num_labels=3, input_feeding=True).input_feeding  # kwargs override the preset


def test_sgm_decoder_mask_and_batch_must_fit_the_decoder_ids():
    model, config, head = head_of("sgm", "SgmForMultiLabelGeneration")
    inputs = make_inputs(head, config, [5, 3])
    decoder_ids = inputs.pop("decoder_input_ids")
    fits = inputs.pop("decoder_attention_mask")
    model(**inputs, decoder_input_ids=decoder_ids, decoder_attention_mask=fits)  # the right shape is accepted
    for bad in (fits[:, :-1], torch.cat([fits, fits[:, :1]], dim=1), fits[:1]):  # short, long, one row
        with pytest.raises(ValueError, match=r"`decoder_attention_mask` must have shape \(batch, steps\)"):
            model(**inputs, decoder_input_ids=decoder_ids, decoder_attention_mask=bad)
    with pytest.raises(ValueError, match=r"`decoder_input_ids` must have the batch size of `input_ids`"):
        model(**inputs, decoder_input_ids=decoder_ids[:1])


def test_sgm_global_embedding_trains_in_float16():
    """The masked global embedding's score for emitted labels (the original's −1e7) is past float16's range: it is
    applied in float32, so `Trainer(fp16=True)` and `model.half()` run."""
    architecture = get_architecture("sgm")
    head = architecture.heads[0]
    torch.manual_seed(0)
    config = tiny_config(architecture, global_embedding=True, global_embedding_source="masked")
    model = head.model_class(config).half().train()
    inputs = make_inputs(head, config, [5, 3])
    output = model(**inputs, labels=make_labels(head, config, inputs))
    assert torch.isfinite(output.loss)
    output.loss.backward()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)
