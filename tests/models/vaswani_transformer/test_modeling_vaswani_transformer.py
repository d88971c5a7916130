"""Vaswani et al. (2017): positions, parity with Marian through the converter, generation and the loss."""

from __future__ import annotations

import math

import pytest
import torch
from transformers import GenerationConfig, MarianConfig, MarianMTModel

from hf_attn import ARCHITECTURES, VaswaniTransformerConfig, VaswaniTransformerForConditionalGeneration
from hf_attn.layers import sinusoidal_positions
from hf_attn.layers.generation_cache import output_cache
from tests.helpers import tiny_config

ARCH = ARCHITECTURES["vaswani_transformer"]
SOURCE = torch.tensor([[5, 6, 7, 8, 3], [9, 10, 3, 0, 0]])
TARGET = torch.tensor([[2, 11, 12, 13], [2, 14, 15, 0]])
GENERATION = {"max_new_tokens": 10, "do_sample": False, "bad_words_ids": None, "forced_eos_token_id": None}


def test_config_defaults_are_the_base_model():
    config = VaswaniTransformerConfig()
    assert (config.d_model, config.encoder_layers, config.encoder_attention_heads, config.encoder_ffn_dim) == (
        512, 6, 8, 2048,
    )  # fmt: skip
    assert (config.dropout, config.label_smoothing, config.normalize_before) == (0.1, 0.1, False)
    assert config.scale_embedding and config.tie_word_embeddings and config.share_encoder_decoder_embeddings
    with pytest.raises(Exception, match="multiple of the attention heads"):
        VaswaniTransformerConfig(d_model=10, encoder_attention_heads=4)


def test_sinusoids_follow_the_paper_and_the_other_layouts():
    table = sinusoidal_positions(50, 8)  # interleaved, paper timescale
    for pos, i in [(3, 0), (7, 1), (49, 3)]:
        angle = pos / 10000 ** (2 * i / 8)
        assert table[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-6)
        assert table[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-6)
    concatenated = sinusoidal_positions(50, 8, layout="concatenated")
    torch.testing.assert_close(concatenated[:, :4], table[:, 0::2])
    torch.testing.assert_close(concatenated[:, 4:], table[:, 1::2])
    t2t = sinusoidal_positions(50, 8, layout="concatenated", timescale="tensor2tensor")
    assert t2t[10, 3].item() == pytest.approx(math.sin(10 / 10000), abs=1e-6)  # slowest frequency exactly 1/10000
    marian_config = MarianConfig(
        vocab_size=10,
        d_model=8,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        max_position_embeddings=50,
        pad_token_id=0,
    )
    marian = MarianMTModel(marian_config)
    marian = marian.model.encoder
    assert torch.equal(marian.embed_positions.weight, concatenated)


def trained_like_model() -> VaswaniTransformerForConditionalGeneration:
    torch.manual_seed(0)
    model = VaswaniTransformerForConditionalGeneration(tiny_config(ARCH, dropout=0.0)).eval()
    with torch.no_grad():  # sharper distributions than at init, so that beams and caches have something to differ on
        for parameter in model.parameters():
            parameter.mul_(3.0)
    return model


def test_cache_and_no_cache_give_the_same_generations():
    model = trained_like_model()
    mask = (SOURCE != 0).long()
    for num_beams in (1, 4):
        cached = model.generate(SOURCE, attention_mask=mask, num_beams=num_beams, use_cache=True, **GENERATION)
        uncached = model.generate(SOURCE, attention_mask=mask, num_beams=num_beams, use_cache=False, **GENERATION)
        assert cached.tolist() == uncached.tolist()


def test_beam_one_is_greedy_and_sampling_runs():
    model = trained_like_model()
    mask = (SOURCE != 0).long()
    greedy = model.generate(SOURCE, attention_mask=mask, **GENERATION)
    beam_one = model.generate(SOURCE, attention_mask=mask, num_beams=1, **GENERATION)
    assert greedy.tolist() == beam_one.tolist()
    torch.manual_seed(0)
    sampled = model.generate(SOURCE, attention_mask=mask, max_new_tokens=5, do_sample=True, top_k=5)
    assert sampled.shape[0] == 2 and sampled[:, 0].tolist() == [model.config.decoder_start_token_id] * 2


def test_incremental_decoding_matches_the_full_forward():
    model = trained_like_model()
    mask = (SOURCE != 0).long()
    full = model(SOURCE, attention_mask=mask, decoder_input_ids=TARGET[:1].repeat(2, 1)).logits
    past, steps = None, []
    encoder_outputs = model.get_encoder()(SOURCE, attention_mask=mask)
    for t in range(TARGET.size(1)):
        step = model(
            attention_mask=mask, encoder_outputs=encoder_outputs, decoder_input_ids=TARGET[:1, t : t + 1].repeat(2, 1),
            past_key_values=past, use_cache=True,
        )  # fmt: skip
        past = output_cache(step)
        steps.append(step.logits)
    # Same math, different kernels (one query with a cache vs T queries with a causal mask): float32 rounding only.
    scale = full.abs().max().item()
    torch.testing.assert_close(torch.cat(steps, dim=1), full, rtol=0, atol=1e-6 * max(scale, 1.0) * 10)
    assert scale > 1.0


def test_generation_config_survives_save_and_load(tmp_path):
    model = trained_like_model()
    model.generation_config = GenerationConfig(
        num_beams=4, length_penalty=0.6, max_new_tokens=7, decoder_start_token_id=2, eos_token_id=3, pad_token_id=0
    )
    model.save_pretrained(tmp_path)
    reloaded = VaswaniTransformerForConditionalGeneration.from_pretrained(tmp_path)
    assert (reloaded.generation_config.num_beams, reloaded.generation_config.length_penalty) == (4, 0.6)
    mask = (SOURCE != 0).long()
    assert (
        reloaded.generate(SOURCE, attention_mask=mask).tolist() == model.generate(SOURCE, attention_mask=mask).tolist()
    )


def test_plain_loss_label_smoothing_by_the_trainer_and_token_normalisation():
    """`outputs.loss` is plain cross-entropy (transformers' contract); the paper's ε_ls = 0.1 (§5.4) is
    `TrainingArguments(label_smoothing_factor=0.1)`, whose `LabelSmoother` gives the paper's loss."""
    from transformers.trainer_pt_utils import LabelSmoother

    model = trained_like_model()
    labels = torch.tensor([[11, 12, 3, -100], [13, 3, -100, -100]])
    output = model(SOURCE, attention_mask=(SOURCE != 0).long(), labels=labels)
    log_probs = output.logits.log_softmax(-1)
    keep = labels != -100
    nll = -log_probs.gather(-1, labels.clamp(min=0)[..., None]).squeeze(-1)[keep]
    torch.testing.assert_close(output.loss, nll.mean(), rtol=1e-5, atol=1e-6)  # averaged over the 5 target tokens
    uniform = -log_probs.mean(-1)[keep]
    smoothed = ((1 - 0.1) * nll + 0.1 * uniform).mean()
    torch.testing.assert_close(LabelSmoother(epsilon=0.1)(output, labels), smoothed, rtol=1e-5, atol=1e-6)
    # Trainer passes the token count of the whole accumulated batch: the loss is a sum over it
    summed = model(SOURCE, attention_mask=(SOURCE != 0).long(), labels=labels, num_items_in_batch=10)
    torch.testing.assert_close(summed.loss, nll.mean() * 5 / 10, rtol=1e-5, atol=1e-6)
    assert VaswaniTransformerForConditionalGeneration.accepts_loss_kwargs


def test_hf_attn_train_sets_the_papers_label_smoothing():
    from hf_attn.options.reading import resolve_options

    assert resolve_options({"arch": ARCH.name})[1].label_smoothing_factor == 0.1  # config.label_smoothing
    assert (
        resolve_options({"arch": ARCH.name, "label_smoothing_factor": 0.0})[1].label_smoothing_factor == 0.0
    )  # typed
    assert resolve_options({"arch": ARCH.name, "config": {"label_smoothing": 0.2}})[1].label_smoothing_factor == 0.2
    assert resolve_options({"arch": "han"})[1].label_smoothing_factor == 0.0
    assert resolve_options({"recipe": "transformer-wmt14-ende"})[1].label_smoothing_factor == 0.1


def test_pre_ln_variant_and_bad_inputs():
    model = VaswaniTransformerForConditionalGeneration(
        tiny_config(ARCH, normalize_before=True, encoder_final_layer_norm=True, decoder_final_layer_norm=True)
    ).eval()
    assert model.model.encoder.layer_norm is not None
    assert torch.isfinite(model(SOURCE, decoder_input_ids=TARGET).logits).all()
    with pytest.raises(ValueError, match="`input_ids` must have 2 dimensions"):
        model(SOURCE[0], decoder_input_ids=TARGET)
    with pytest.raises(ValueError, match="`decoder_input_ids` holds token ids outside the vocabulary"):
        model(SOURCE, decoder_input_ids=TARGET + 100)


@pytest.mark.parametrize("output_bias", [False, True], ids=["tied", "marian-bias"])
def test_training_loss_is_fused_with_the_output_projection_and_equals_the_logits_loss(output_bias):
    """In training mode with labels the loss is computed fused (no logits: `outputs.logits` is None); the loss and
    every parameter's gradient equal the logits path's (`fused_output_loss=False`) within 1e-5. Eval mode and
    generation keep the logits."""
    torch.manual_seed(0)
    config = tiny_config(ARCHITECTURES["vaswani_transformer"], dropout=0.0, output_bias=output_bias)
    model = VaswaniTransformerForConditionalGeneration(config).train()
    input_ids = torch.randint(4, config.vocab_size, (3, 6))
    labels = torch.randint(4, config.vocab_size, (3, 5))
    labels[1, 3:] = -100
    results = {}
    for fused in (True, False):
        model.config.fused_output_loss = fused
        model.zero_grad()
        output = model(input_ids=input_ids, labels=labels)
        output.loss.backward()
        assert (output.logits is None) == fused
        results[fused] = (output.loss.detach(), {n: p.grad.clone() for n, p in model.named_parameters()})
    model.config.fused_output_loss = True
    torch.testing.assert_close(results[True][0], results[False][0], rtol=1e-5, atol=1e-5)
    for name, gradient in results[False][1].items():
        torch.testing.assert_close(results[True][1][name], gradient, rtol=1e-4, atol=1e-5, msg=name)
    model.eval()
    output = model(input_ids=input_ids, labels=labels)
    assert output.logits.shape == (3, 5, config.vocab_size)
    torch.testing.assert_close(output.loss, results[False][0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("num_beams", [1, 4])
def test_compiled_decoder_step_on_a_static_cache_generates_as_the_dynamic_cache(num_beams):
    """`generate()` with a static cache and a compiled forward (`CompileConfig(fullgraph=True)`, here with the
    `aot_eager` backend on the CPU; on a GPU transformers compiles it by itself): one graph for every decoding step,
    no graph break, and the same tokens as the dynamic cache, greedy and beam 4, a padded source included."""
    from transformers import CompileConfig

    torch.manual_seed(0)
    config = tiny_config(ARCHITECTURES["vaswani_transformer"])
    model = VaswaniTransformerForConditionalGeneration(config).eval()
    input_ids = torch.randint(4, config.vocab_size, (2, 6))
    attention_mask = torch.ones_like(input_ids)
    attention_mask[1, 4:] = 0
    settings = {"num_beams": num_beams, "max_new_tokens": 6, "do_sample": False}
    expected = model.generate(input_ids=input_ids, attention_mask=attention_mask, **settings)
    compile_config = CompileConfig(backend="aot_eager", fullgraph=True, dynamic=False)
    compile_config._compile_all_devices = True  # transformers compiles on accelerators only unless told
    try:
        actual = model.generate(
            input_ids=input_ids, attention_mask=attention_mask, cache_implementation="static",
            compile_config=compile_config, **settings,
        )  # fmt: skip
    finally:
        torch._dynamo.reset()
    assert actual.tolist() == expected.tolist()


def test_causal_mask_over_a_static_cache_sees_written_slots_only_and_never_an_empty_row():
    from hf_attn.models.vaswani_transformer.modeling_vaswani_transformer import causal_mask

    mask = causal_mask(2, torch.tensor(3), None, torch.device("cpu"), capacity=8)
    assert mask.shape == (1, 1, 2, 8)
    assert mask[0, 0].tolist() == [[True] * 4 + [False] * 4, [True] * 5 + [False] * 3]
    padding = torch.tensor([[1, 1, 1, 1, 1], [0, 0, 0, 0, 0]])
    padded = causal_mask(2, torch.tensor(3), padding, torch.device("cpu"), capacity=8)
    assert padded[0, 0].tolist() == mask[0, 0].tolist()
    assert padded[1, 0].tolist() == [[True] + [False] * 7] * 2  # nothing to see: the first slot, never NaN
