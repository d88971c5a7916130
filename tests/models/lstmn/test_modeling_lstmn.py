"""LSTMN's equations by hand, the fast recurrence against the straightforward one (outputs and gradients), masks,
causality, memory, generation with the tape cache, and errors."""

from __future__ import annotations

import math

import pytest
import torch
from transformers import AutoModelForCausalLM, pipeline

import hf_attn
from hf_attn.layers.generation_cache import output_cache
from hf_attn.models.lstmn.configuration_lstmn import LstmnConfig
from hf_attn.models.lstmn.modeling_lstmn import (
    LstmnForCausalLM,
    LstmnForPairClassification,
    LstmnForSequenceClassification,
    LstmnLayer,
    LstmnModel,
)
from hf_attn.tokenization import build_word_level_tokenizer
from tests.helpers import tiny_config

ARCHITECTURE = hf_attn.ARCHITECTURES["lstmn"]


def tiny(**overrides) -> LstmnConfig:
    return tiny_config(ARCHITECTURE, hidden_dropout_prob=0.0, **overrides)


def sigmoid(value: float) -> float:
    return 1.0 / (1.0 + math.exp(-value))


def padded(lengths: list[int], width: int, left: bool = False, vocab_size: int = 50, seed: int = 0):
    """Random ids in [1, vocab) with a mask of the given lengths, padded on the right (or left) with id 0."""
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, vocab_size, (len(lengths), width), generator=generator)
    positions = torch.arange(width)[None, :]
    lengths_ = torch.tensor(lengths)[:, None]
    mask = positions >= width - lengths_ if left else positions < lengths_
    return ids.masked_fill(~mask, 0), mask.long()


def test_config_defaults_are_the_papers():
    config = LstmnConfig()
    assert (config.embedding_size, config.hidden_size, config.hidden_dropout_prob) == (300, 450, 0.5)
    assert config.attention_size == config.classifier_hidden_size == 450  # = hidden size, as the original
    assert config.fusion == "deep" and config.initializer_range == 0.05


@pytest.mark.parametrize(
    ("field", "value"),
    [("fusion", "medium"), ("pooling", "max"), ("recurrence_implementation", "cuda"), ("hidden_size", 0)],
)
def test_config_rejects_bad_values(field, value):
    with pytest.raises(Exception, match=field):  # huggingface_hub's strict-dataclass error, naming the field
        LstmnConfig(**{field: value})


def test_two_steps_follow_the_equations_by_hand():
    """E = H = A = 1 with known weights, every term of eq. 4–9 written out for two tokens: the first reads only the
    initial zero slot; the second weighs slot 0 (h_0 = 0) against slot 1 (h_1) with a_i = v tanh(W_h h_i + W_x x_2
    + W_h̃ h̃_1 + b), and its LSTM update starts from [h̃_2; c̃_2] = s_1 [h_1; c_1]."""
    config = LstmnConfig(vocab_size=3, embedding_size=1, hidden_size=1, attention_size=1, hidden_dropout_prob=0.0)
    model = LstmnModel(config).eval()
    layer = model.encoder.layers[0]
    w_x, b_a, w_h, w_s, v = 0.7, 0.1, 1.3, -0.4, 2.0
    gate_x = [0.5, -0.3, 0.8, 0.2]  # i, f, g, o
    gate_b = [0.1, 0.2, -0.1, 0.3]
    gate_h = [0.9, -0.6, 0.4, 1.1]
    with torch.no_grad():
        model.embeddings.weight.copy_(torch.tensor([[0.0], [1.5], [-2.0]]))
        layer.input_projection.weight.copy_(torch.tensor([[w_x], *[[g] for g in gate_x]]))
        layer.input_projection.bias.copy_(torch.tensor([b_a, *gate_b]))
        layer.key_projection.weight.fill_(w_h)
        layer.summary_projection.weight.fill_(w_s)
        layer.score.weight.fill_(v)
        layer.recurrent_projection.weight.copy_(torch.tensor([[g] for g in gate_h]))
    output = model(torch.tensor([[1, 2]]), output_attentions=True)

    def update(x: float, summary: float, summary_cell: float) -> tuple[float, float]:
        pre = [gate_x[k] * x + gate_b[k] + gate_h[k] * summary for k in range(4)]
        i, f, g, o = sigmoid(pre[0]), sigmoid(pre[1]), math.tanh(pre[2]), sigmoid(pre[3])
        cell = f * summary_cell + i * g  # eq. 8
        return o * math.tanh(cell), cell  # eq. 9

    x1, x2 = 1.5, -2.0
    h1, c1 = update(x1, 0.0, 0.0)  # one readable slot, the zero state: h̃_1 = c̃_1 = 0
    query = w_x * x2 + b_a + w_s * 0.0  # h̃_1 = 0
    a0, a1 = v * math.tanh(w_h * 0.0 + query), v * math.tanh(w_h * h1 + query)  # eq. 4
    s1 = math.exp(a1) / (math.exp(a0) + math.exp(a1))  # eq. 5
    h2, _ = update(x2, s1 * h1, s1 * c1)  # eq. 6: slot 0 contributes 0
    torch.testing.assert_close(output.last_hidden_state[0, :, 0], torch.tensor([h1, h2]), rtol=0, atol=1e-6)
    expected_map = torch.tensor([[1.0, 0.0], [1 - s1, s1]])
    torch.testing.assert_close(output.intra_attentions[0][0], expected_map, rtol=0, atol=1e-6)


def test_summary_term_enters_the_third_query():
    """W_h̃ h̃_{t−1} (eq. 4): only the query side differs when W_h̃ changes, so token 3's attention moves and the first
    two tokens (whose h̃_{t−1} is 0 or reads before any non-zero summary) do not."""
    torch.manual_seed(0)
    model = LstmnModel(tiny(num_hidden_layers=1, initializer_range=1.0)).eval()
    ids = torch.tensor([[3, 4, 5, 6]])
    before = model(ids, output_attentions=True).intra_attentions[0]
    with torch.no_grad():
        model.encoder.layers[0].summary_projection.weight.mul_(-5.0)
    after = model(ids, output_attentions=True).intra_attentions[0]
    torch.testing.assert_close(after[:, :2], before[:, :2])
    assert (after[:, 2:] - before[:, 2:]).abs().max() > 1e-3


def test_deep_fusion_gates_the_premise_memory_into_the_cell():
    """Eq. 13–14 on a one-token premise (p = 1, so [γ̃; α̃] = [γ_1; α_1]) and a one-token hypothesis (its own tape
    holds only the zero slot): c = r ⊙ α_1 + i ⊙ ĉ with r = σ(W_r x + b_r + W_rγ γ_1)."""
    torch.manual_seed(0)
    config = tiny(num_hidden_layers=1, fusion="deep")
    model = LstmnForPairClassification(config).eval()
    premise, hypothesis = torch.tensor([[7]]), torch.tensor([[9]])
    _, _, premise_layers = model.lstmn.encode(premise)
    gamma, alpha = premise_layers[0].hidden[0, 0], premise_layers[0].cells[0, 0]
    layer = model.decoder.layers[0]
    hidden_size, attention_size = config.hidden_size, config.attention_size
    projected = layer.input_projection(model.lstmn.embeddings(hypothesis))[0, 0]
    gates = projected[attention_size : attention_size + 4 * hidden_size]  # h̃ = 0: no recurrent term
    i, _, g, o = gates.chunk(4)
    relevance = torch.sigmoid(projected[-hidden_size:] + layer.memory_gate.weight @ gamma)
    cell = relevance * alpha + torch.sigmoid(i) * torch.tanh(g)
    decoded = model.decoder(model.lstmn.embeddings(hypothesis), torch.ones(1, 1, dtype=torch.bool), premise_layers,
                            torch.ones(1, 1, dtype=torch.bool))  # fmt: skip
    torch.testing.assert_close(decoded[0].cells[0, 0], cell)
    torch.testing.assert_close(decoded[0].hidden[0, 0], torch.sigmoid(o) * torch.tanh(cell))
    torch.testing.assert_close(decoded[0].inter_attentions, torch.ones(1, 1, 1))


def run_both(model, inputs, labels):
    """Loss, outputs and every parameter's gradient under each recurrence implementation."""
    results = {}
    for implementation in ("fast", "reference"):
        model.config.recurrence_implementation = implementation
        model.zero_grad()
        output = model(**inputs, labels=labels, output_attentions=True)
        output.loss.backward()
        gradients = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
        results[implementation] = (output, gradients)
    model.config.recurrence_implementation = "fast"
    return results


@pytest.mark.parametrize("fusion", ["none", "shallow", "deep"])
@pytest.mark.parametrize("left", [False, True], ids=["right-padded", "left-padded"])
def test_fast_recurrence_matches_the_straightforward_loop(fusion, left):
    """Outputs, attention maps and every parameter's gradient agree within 1e-5 (fp32), with padding, a length-1
    row and an all-padding row."""
    torch.manual_seed(0)
    model = LstmnForPairClassification(tiny(fusion=fusion)).train()
    premise, premise_mask = padded([6, 3, 1, 0], 6, left=left)
    hypothesis, hypothesis_mask = padded([4, 0, 2, 3], 5, left=left, seed=1)
    inputs = {"input_ids": premise, "attention_mask": premise_mask, "pair_input_ids": hypothesis,
              "pair_attention_mask": hypothesis_mask}  # fmt: skip
    results = run_both(model, inputs, torch.tensor([0, 1, 2, 1]))
    (fast, fast_grads), (reference, reference_grads) = results["fast"], results["reference"]
    torch.testing.assert_close(fast.logits, reference.logits, rtol=0, atol=1e-5)
    for name in ("intra_attentions", "pair_intra_attentions", "inter_attentions"):
        for ours, theirs in zip(getattr(fast, name) or (), getattr(reference, name) or (), strict=True):
            torch.testing.assert_close(ours, theirs, rtol=0, atol=1e-5)
    assert fast_grads.keys() == reference_grads.keys() == {n for n, _ in model.named_parameters()}
    for name, gradient in reference_grads.items():
        torch.testing.assert_close(fast_grads[name], gradient, rtol=1e-4, atol=1e-5, msg=name)


def test_fast_recurrence_matches_the_straightforward_loop_for_the_language_model():
    torch.manual_seed(0)
    model = LstmnForCausalLM(tiny()).train()
    ids, mask = padded([7, 4, 1], 7)
    results = run_both(model, {"input_ids": ids, "attention_mask": mask}, ids)
    (fast, fast_grads), (reference, reference_grads) = results["fast"], results["reference"]
    torch.testing.assert_close(fast.loss, reference.loss, rtol=0, atol=1e-6)
    for name, gradient in reference_grads.items():
        torch.testing.assert_close(fast_grads[name], gradient, rtol=1e-4, atol=1e-5, msg=name)


@pytest.mark.parametrize("head_class", [LstmnForSequenceClassification, LstmnForCausalLM, LstmnForPairClassification])
def test_left_padding_gives_the_unpadded_outputs(head_class):
    """A pad writes no readable slot and leaves the carried summary alone, so left padding (as batched generation
    uses) changes nothing; the common tests cover right padding."""
    torch.manual_seed(0)
    model = head_class(tiny(fusion="deep")).eval()
    ids, mask = padded([5, 2], 5, left=True)
    inputs, single = {"input_ids": ids, "attention_mask": mask}, {"input_ids": ids[1:, 3:]}
    if head_class is LstmnForPairClassification:  # row 1's hypothesis is row 0's unpadded sentence
        inputs.update(pair_input_ids=ids.flip(0), pair_attention_mask=mask.flip(0))
        single.update(pair_input_ids=ids[:1])
    batched, alone = model(**inputs).logits, model(**single).logits
    expected = batched[1:, 3:] if head_class is LstmnForCausalLM else batched[1:]
    torch.testing.assert_close(alone, expected, rtol=0, atol=1e-5)


def test_length_one_and_all_padding_rows_give_finite_outputs_and_gradients():
    torch.manual_seed(0)
    model = LstmnForPairClassification(tiny(fusion="deep")).train()
    ids, mask = padded([1, 0], 3)
    output = model(ids, ids, mask, mask, labels=torch.tensor([0, 2]), output_attentions=True)
    output.loss.backward()
    assert torch.isfinite(output.logits).all()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters())
    assert torch.all(output.intra_attentions[0][1] == 0) and torch.all(output.inter_attentions[-1][1] == 0)


@pytest.mark.parametrize("implementation", ["fast", "reference"])
def test_future_tokens_never_change_earlier_outputs(implementation):
    """Causality: replacing tokens 4.. leaves the states and attention rows of tokens 0..3 bit-for-bit alone."""
    torch.manual_seed(0)
    model = LstmnModel(tiny(recurrence_implementation=implementation)).eval()
    ids, _ = padded([8], 8)
    changed = ids.clone()
    changed[:, 4:] = (changed[:, 4:] + 7) % 49 + 1
    first = model(ids, output_hidden_states=True, output_attentions=True)
    second = model(changed, output_hidden_states=True, output_attentions=True)
    for before, after in zip(first.hidden_states, second.hidden_states, strict=True):
        torch.testing.assert_close(after[:, :4], before[:, :4], rtol=0, atol=0)
        assert (after[:, 4:] - before[:, 4:]).abs().max() > 0
    for before, after in zip(first.intra_attentions, second.intra_attentions, strict=True):
        torch.testing.assert_close(after[:, :4], before[:, :4], rtol=0, atol=0)
        assert torch.all(before.triu(diagonal=1) == 0)  # row t reads slots 0..t only


def test_training_memory_grows_with_t_not_t_squared_times_hidden():
    """What autograd keeps for backward: the fast path stays within a linear budget in T (tapes, per-step traces)
    plus the T × T attention weights; the straightforward loop keeps a (B, t, A) tanh per step, O(T²·A)."""
    torch.manual_seed(0)
    batch, steps, size = 2, 96, 16
    config = LstmnConfig(vocab_size=10, embedding_size=size, hidden_size=size, attention_size=size)
    layer = LstmnLayer(config, size)
    inputs = torch.randn(batch, steps, size, requires_grad=True)
    mask = torch.ones(batch, steps, dtype=torch.bool)

    def saved_bytes(run) -> int:
        total = 0

        def pack(tensor):
            nonlocal total
            total += tensor.numel() * tensor.element_size()
            return tensor

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
            run()
        return total

    fast = saved_bytes(lambda: layer(inputs, mask))
    reference = saved_bytes(lambda: layer.forward_reference(inputs, mask))
    # 16 floats per token and unit (tapes, cached keys, per-step queries, reads, gates, the input) + the T × T map
    linear_budget = 4 * batch * (steps + 1) * 16 * size + 4 * batch * steps * steps
    assert fast <= linear_budget
    assert reference > 4 * linear_budget  # the budget catches an O(T²·A) graph


def test_generate_with_the_tape_cache_matches_recomputing_everything():
    torch.manual_seed(0)
    model = LstmnForCausalLM(tiny(initializer_range=0.5)).eval()
    prompt = torch.tensor([[5, 9, 2, 7], [3, 3, 8, 1]])
    cached = model.generate(prompt, max_new_tokens=6, do_sample=False)
    uncached = model.generate(prompt, max_new_tokens=6, do_sample=False, use_cache=False)
    tokens = prompt
    for _ in range(6):  # greedy decoding by hand, re-reading the whole prefix each time
        tokens = torch.cat([tokens, model(tokens).logits[:, -1].argmax(-1, keepdim=True)], dim=1)
    assert torch.equal(cached, uncached) and torch.equal(cached, tokens)


def test_cached_continuation_equals_one_pass():
    torch.manual_seed(0)
    model = LstmnForCausalLM(tiny(initializer_range=0.5)).eval()
    ids, _ = padded([9], 9)
    whole = model(ids, output_attentions=True)
    first = model(ids[:, :5], use_cache=True)
    assert output_cache(first).get_seq_length() == 5
    rest = model(ids[:, 5:], past_key_values=output_cache(first), output_attentions=True)
    torch.testing.assert_close(torch.cat([first.logits, rest.logits], dim=1), whole.logits, rtol=0, atol=1e-5)
    assert rest.intra_attentions[0].shape == (1, 4, 9)  # the new rows read all slots written so far
    torch.testing.assert_close(rest.intra_attentions[0], whole.intra_attentions[0][:, 5:], rtol=0, atol=1e-5)


def test_beam_search_and_left_padded_batches_generate():
    torch.manual_seed(0)
    model = LstmnForCausalLM(tiny(initializer_range=0.5)).eval()
    ids, mask = padded([4, 2], 4, left=True)
    batched = model.generate(ids, attention_mask=mask, max_new_tokens=5, do_sample=False)
    alone = model.generate(ids[1:, 2:], max_new_tokens=5, do_sample=False)  # generates the pad id: still a token
    assert torch.equal(batched[1, 2:], alone[0])
    # beam search reorders the tapes (`_reorder_cache`): the padded row still decodes as if alone
    beams = model.generate(ids, attention_mask=mask, max_new_tokens=5, num_beams=3, do_sample=False)
    alone_beams = model.generate(ids[1:, 2:], max_new_tokens=5, num_beams=3, do_sample=False)
    uncached = model.generate(ids[1:, 2:], max_new_tokens=5, num_beams=3, do_sample=False, use_cache=False)
    assert beams.shape == (2, 9) and torch.equal(beams[1, 2:], alone_beams[0])
    assert torch.equal(alone_beams, uncached)


def test_causal_lm_loads_with_auto_class_and_serves_text_generation(tmp_path):
    words = ["[PAD]", "[UNK]"] + [f"w{index}" for index in range(48)]
    tokenizer = build_word_level_tokenizer(words)
    torch.manual_seed(0)
    LstmnForCausalLM(tiny(initializer_range=0.5)).save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    model = AutoModelForCausalLM.from_pretrained(tmp_path)
    assert type(model) is LstmnForCausalLM
    generator = pipeline("text-generation", model=str(tmp_path))
    text = generator("w3 w4 w5", max_new_tokens=3, do_sample=False)[0]["generated_text"]
    prompt = tokenizer("w3 w4 w5", return_tensors="pt")
    new_tokens = tokenizer.convert_ids_to_tokens(model.generate(**prompt, max_new_tokens=3, do_sample=False)[0, 3:])
    assert text.startswith("w3 w4 w5") and text.endswith(new_tokens[-1]) and all(t in text for t in new_tokens)


def test_classifier_serves_text_classification_pipeline(tmp_path):
    words = ["[PAD]", "[UNK]"] + [f"w{index}" for index in range(48)]
    torch.manual_seed(0)
    config = tiny(id2label={0: "red", 1: "blue", 2: "green"}, label2id={"red": 0, "blue": 1, "green": 2})
    LstmnForSequenceClassification(config).save_pretrained(tmp_path)
    build_word_level_tokenizer(words).save_pretrained(tmp_path)
    classify = pipeline("text-classification", model=str(tmp_path))
    predictions = classify(["w3 w4 w5", "w7"], top_k=None)
    assert [sorted(p["label"] for p in row) for row in predictions] == [["blue", "green", "red"]] * 2
    assert all(abs(sum(p["score"] for p in row) - 1) < 1e-5 for row in predictions)


def test_language_model_ignores_padding_and_gives_zero_without_targets():
    torch.manual_seed(0)
    model = LstmnForCausalLM(tiny())
    ids, mask = padded([5, 3], 5)
    loss = model(ids, attention_mask=mask, labels=ids).loss
    labels = ids.masked_fill(mask == 0, 7)  # garbage at padded positions: ignored through the mask
    torch.testing.assert_close(model(ids, attention_mask=mask, labels=labels).loss, loss)
    empty = model(ids, attention_mask=mask, labels=torch.full_like(ids, -100)).loss
    assert empty.item() == 0.0


def test_shallow_fusion_reads_the_premise_from_the_top_layer_only():
    model = LstmnForPairClassification(tiny(fusion="shallow", num_hidden_layers=2))
    assert [layer.fusion for layer in model.decoder.layers] == ["none", "shallow"]
    assert [layer.fusion for layer in LstmnForPairClassification(tiny(fusion="deep")).decoder.layers] == ["deep"] * 2
    assert (
        LstmnForPairClassification(tiny(fusion="none"))(
            torch.tensor([[3]]), torch.tensor([[4]]), output_attentions=True
        ).inter_attentions
        is None
    )


def test_bad_inputs_are_clear_value_errors():
    model = LstmnForPairClassification(tiny())
    with pytest.raises(ValueError, match="batch size"):
        model(torch.tensor([[3, 4]]), torch.tensor([[3], [4]]))
    with pytest.raises(ValueError, match=r"pair_input_ids.*vocabulary"):
        model(torch.tensor([[3, 4]]), torch.tensor([[99]]))
    language_model = LstmnForCausalLM(tiny())
    cache = output_cache(language_model(torch.tensor([[3, 4]]), use_cache=True))
    cache.layers.pop()
    with pytest.raises(ValueError, match="past_key_values"):
        language_model(torch.tensor([[5]]), past_key_values=cache)


@pytest.mark.slow
def test_compiled_step_functions_match_eager():
    torch.manual_seed(0)
    model = LstmnForPairClassification(tiny(fusion="deep")).train()
    ids, mask = padded([5, 3], 5)
    eager = model(ids, ids, mask, mask, labels=torch.tensor([0, 1]))
    eager.loss.backward()
    eager_grads = {name: p.grad.clone() for name, p in model.named_parameters()}
    model.zero_grad()
    model.config.compile_recurrence = True
    compiled = model(ids, ids, mask, mask, labels=torch.tensor([0, 1]))
    compiled.loss.backward()
    torch.testing.assert_close(compiled.logits, eager.logits, rtol=1e-5, atol=1e-6)
    for name, parameter in model.named_parameters():
        torch.testing.assert_close(parameter.grad, eager_grads[name], rtol=1e-4, atol=1e-6)
