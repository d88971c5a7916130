"""Bi-BloSAN's equations on tiny hand-checked cases: direction masks, the block split, the attention kernel and its
recomputing backward, the fusion gates, a length-1 sentence, all-padding rows, and padding (in)variance."""

from __future__ import annotations

import pytest
import torch

from hf_attn.models.biblosa.block_attention import CHUNK_ELEMENTS, direction_mask, multi_dimensional_attention
from hf_attn.models.biblosa.configuration_biblosa import BiBlosaConfig
from hf_attn.models.biblosa.modeling_biblosa import (
    BiBlosaDirection,
    BiBlosaForSequenceClassification,
    BiBlosaModel,
    split_into_blocks,
)
from tests.helpers import load_benchmark

TINY = {"vocab_size": 30, "embedding_size": 4, "hidden_size": 3, "block_length": 3, "classifier_hidden_size": 5,
        "hidden_dropout_prob": 0.0, "num_labels": 2}  # fmt: skip


def model_of(**overrides) -> BiBlosaModel:
    torch.manual_seed(0)
    return BiBlosaModel(BiBlosaConfig(**{**TINY, **overrides})).eval()


def test_direction_masks_are_strict():
    assert direction_mask(3, "forward").int().tolist() == [[0, 0, 0], [1, 0, 0], [1, 1, 0]]
    assert direction_mask(3, "backward").int().tolist() == [[0, 1, 1], [0, 0, 1], [0, 0, 0]]
    with pytest.raises(ValueError, match="direction"):
        direction_mask(3, "both")


def test_block_split_pads_the_last_block():
    values = torch.arange(1, 8).view(1, 7)  # n = 7, r = 3 -> m = 3 blocks, two padding positions
    assert split_into_blocks(values, 3).tolist() == [[[1, 2, 3], [4, 5, 6], [7, 0, 0]]]
    assert split_into_blocks(torch.ones(1, 7, dtype=torch.bool), 3)[0, 2].tolist() == [True, False, False]
    assert split_into_blocks(values, 7).shape == (1, 1, 7) and split_into_blocks(values, 10).shape == (1, 1, 10)


def test_attention_kernel_on_a_hand_checked_block():
    """One block of three tokens, H = 1, c = 5: forward, s_0 = 0 (no key), s_1 = h_0 (its only key), s_2 mixes h_0
    and h_1 with softmax(5·tanh(u/5)); backward mirrors it; a padded key is never read."""
    keys = torch.tensor([[[1.0], [0.0], [-2.0]]])
    queries = torch.tensor([[[0.5], [0.0], [1.0]]])
    values = torch.tensor([[[2.0], [-1.0], [4.0]]])
    bias, mask = torch.tensor([0.25]), torch.ones(1, 3, dtype=torch.bool)
    out, maps = multi_dimensional_attention(keys, queries, bias, values, mask, "forward", 5.0)
    score = [5 * torch.tanh(torch.tensor((k + 1.0 + 0.25) / 5)) for k in (1.0, 0.0)]  # query 2 on keys 0, 1
    weight = torch.softmax(torch.stack(score), 0)
    expected = torch.tensor([[[0.0], [2.0], [float(weight[0] * 2.0 + weight[1] * -1.0)]]])
    torch.testing.assert_close(out, expected)
    assert maps[0].tolist()[0] == [0, 0, 0] and maps[0, 1].tolist() == [1, 0, 0]
    out, _ = multi_dimensional_attention(keys, queries, bias, values, mask, "backward", 5.0)
    assert out[0, 2, 0] == 0 and out[0, 1, 0] == 4.0
    padded = torch.tensor([[True, True, False]])
    out, maps = multi_dimensional_attention(keys, queries, bias, values, padded, "backward", 5.0)
    assert out[0, :, 0].tolist() == [-1.0, 0.0, 0.0] and maps[0, 2].sum() == 0  # key 2 padded; a padded query: 0


@pytest.mark.parametrize("direction", ["forward", "backward"])
def test_recomputing_backward_is_the_exact_gradient(direction):
    generator = torch.Generator().manual_seed(0)
    shape = (4, 5, 3)
    keys, queries, values = (torch.randn(shape, generator=generator, dtype=torch.float64) * 3 for _ in range(3))
    bias = torch.randn(3, generator=generator, dtype=torch.float64)
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0], [1, 0, 0, 0, 0], [0, 0, 0, 0, 0]], dtype=torch.bool)
    inputs = tuple(tensor.requires_grad_() for tensor in (keys, queries, bias, values))

    def attention(*tensors, recompute=True):
        with torch.autocast("cpu", enabled=False):
            from hf_attn.models.biblosa.block_attention import _RecomputedAttention, attention_probabilities

            allowed = direction_mask(5, direction)
            if recompute:
                return _RecomputedAttention.apply(*tensors, mask, direction, 5.0, True)[0]
            probabilities, _ = attention_probabilities(*tensors[:3], mask, allowed, 5.0)
            return (probabilities * tensors[3][:, None]).sum(2)

    assert torch.autograd.gradcheck(attention, inputs)
    plain = torch.autograd.grad(attention(*inputs, recompute=False).square().sum(), inputs)
    recomputed = torch.autograd.grad(attention(*inputs).square().sum(), inputs)
    for left, right in zip(plain, recomputed, strict=True):
        torch.testing.assert_close(left, right)


@pytest.mark.parametrize("direction", ["forward", "backward"])
def test_query_chunks_give_the_same_output_and_gradient(monkeypatch, direction):
    """A sequence too long for one chunk (the inter-block attention over many blocks) is cut into query ranges:
    3 queries × 7 keys × 4 features a chunk here. Output, maps and every gradient equal the unchunked ones."""
    generator = torch.Generator().manual_seed(1)
    shape = (2, 7, 4)
    keys, queries, values = (torch.randn(shape, generator=generator, dtype=torch.float64) for _ in range(3))
    bias = torch.randn(4, generator=generator, dtype=torch.float64)
    mask = torch.tensor([[1] * 7, [1] * 5 + [0] * 2], dtype=torch.bool)
    inputs = tuple(tensor.requires_grad_() for tensor in (keys, queries, bias, values))

    def run():
        out, maps = multi_dimensional_attention(*inputs[:3], inputs[3], mask, direction, 5.0)
        return out, maps, torch.autograd.grad(out.square().sum(), inputs)

    whole = run()
    monkeypatch.setattr("hf_attn.models.biblosa.block_attention.CHUNK_ELEMENTS", 3 * 7 * 4)
    from hf_attn.models.biblosa.block_attention import _chunks

    assert len(_chunks(2, 7, 4)) == 6  # 2 sequences × 3 query ranges (3, 3, 1): the test can fail
    chunked = run()
    torch.testing.assert_close(chunked[0], whole[0], rtol=0, atol=1e-6)  # float32 sums in another order
    torch.testing.assert_close(chunked[1], whole[1], rtol=0, atol=1e-6)  # float32 sums in another order
    for left, right in zip(chunked[2], whole[2], strict=True):
        torch.testing.assert_close(left, right, rtol=0, atol=1e-6)  # float32 sums in another order


def test_inter_block_maps_only_when_asked():
    """The inter-block map is (B, 2, m, m), quadratic in the blocks: returned with `output_attentions` only."""
    model = model_of(block_length=2)
    ids = torch.randint(1, 30, (1, 12))
    assert model(input_ids=ids).inter_block_attentions is None
    assert model(input_ids=ids, output_attentions=True).inter_block_attentions.shape == (1, 2, 6, 6)


def saved_elements(model: BiBlosaModel, inputs: dict) -> int:
    """The largest tensor autograd keeps for the backward pass of one forward."""
    sizes = []

    def pack(tensor):
        sizes.append(tensor.numel())
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        model(**inputs).last_hidden_state.sum()
    return max(sizes)


def test_backward_stores_no_score_tensor_when_recomputing():
    """B = 2, n = 96, r = 8, H = 16: a (B, m, r, r, H) score tensor has 24,576 elements, the (B, n, E) inputs 768."""
    inputs = {"input_ids": torch.randint(1, 30, (2, 96))}
    recomputing = model_of(hidden_size=16, block_length=8, recompute_block_attention=True).train()
    plain = model_of(hidden_size=16, block_length=8, recompute_block_attention=False).train()
    scores = 2 * 96 * 8 * 16
    assert saved_elements(plain, inputs) >= scores  # the test can fail: plain autograd keeps the scores
    assert saved_elements(recomputing, inputs) <= 2 * 96 * 3 * 16  # at most the fusion input (B, n, 3H)


def test_chunked_forward_equals_one_chunk(monkeypatch):
    model = model_of(hidden_size=8, block_length=4)
    inputs = {
        "input_ids": torch.randint(1, 30, (3, 23)),
        "attention_mask": (torch.arange(23) < 17).long().expand(3, -1),
    }
    whole = model(**inputs)
    monkeypatch.setattr("hf_attn.models.biblosa.block_attention.CHUNK_ELEMENTS", 4 * 4 * 8)  # one block a chunk
    chunked = model(**inputs)
    assert CHUNK_ELEMENTS > 4 * 4 * 8
    torch.testing.assert_close(chunked.last_hidden_state, whole.last_hidden_state, rtol=0, atol=1e-6)
    torch.testing.assert_close(chunked.block_attentions, whole.block_attentions, rtol=0, atol=1e-6)


@torch.no_grad()
def test_fusion_gates_open_and_close():
    """Inter-block gate F = σ(…): a large bias gives e = g, a very negative one e = o. Context fusion gate G: open,
    u = act(W_f1 [h; s; E] + b); shut, u = h."""
    direction = BiBlosaDirection(BiBlosaConfig(**TINY), "forward").eval()
    inputs, mask = torch.randn(2, 7, 4), torch.ones(2, 7, dtype=torch.bool)
    for bias, expected in ((50.0, "block_hidden"), (-50.0, "inter_output")):
        direction.inter_gate_bias.fill_(bias)
        out = direction(inputs, mask, 3)
        torch.testing.assert_close(out.block_output, getattr(out, expected))
    for bias in (50.0, -50.0):
        direction.fusion_gate.bias.fill_(bias)
        out = direction(inputs, mask, 3)
        new_context = torch.nn.functional.elu(direction.fusion_map(out.fusion_input)).view(2, 9, 3)[:, :7]
        expected = new_context if bias > 0 else out.hidden.reshape(2, 9, 3)[:, :7]
        torch.testing.assert_close(out.output, expected)
    # The fusion input is [h; s; e of the token's block].
    torch.testing.assert_close(out.fusion_input[:, 1, 2, 6:], out.block_output[:, 1])
    torch.testing.assert_close(out.fusion_input[..., 3:6], out.intra_output)


@torch.no_grad()
@pytest.mark.parametrize("mask_padding", [True, False])
def test_a_length_one_sentence(mask_padding):
    """s = 0, so every block summary is 0; the sentence vector is u_0 (its only token takes all the weight)."""
    model = model_of(mask_padding=mask_padding)
    output = model(
        input_ids=torch.tensor([[5, 0, 0, 0, 0, 0, 0]]), attention_mask=torch.tensor([[1, 0, 0, 0, 0, 0, 0]])
    )
    assert torch.isfinite(output.last_hidden_state).all() and torch.isfinite(output.sentence_embedding).all()
    torch.testing.assert_close(output.sentence_embedding, output.last_hidden_state[:, 0])
    direction = model.encoder.forward_attention
    out = direction(model.embeddings(torch.tensor([[5, 0, 0]])), torch.tensor([[True, False, False]]), 3)
    assert out.intra_output.abs().sum() == 0 and out.block_summaries.abs().sum() == 0


@torch.no_grad()
def test_all_padding_rows_give_zeros_without_nan():
    model = model_of()
    ids = torch.tensor([[0, 0, 0, 0], [4, 5, 6, 7]])
    output = model(input_ids=ids, attention_mask=torch.tensor([[0, 0, 0, 0], [1, 1, 1, 1]]), output_attentions=True)
    assert output.last_hidden_state[0].abs().sum() == 0 and output.sentence_embedding[0].abs().sum() == 0
    assert output.block_attentions[0].sum() == 0 and output.inter_block_attentions[0].sum() == 0
    original = model_of(mask_padding=False)(input_ids=ids, attention_mask=torch.tensor([[0] * 4, [1] * 4]))
    assert torch.isfinite(original.last_hidden_state).all() and torch.isfinite(original.sentence_embedding).all()


@torch.no_grad()
def test_padding_invariance_by_default_and_the_originals_dependence():
    """Padding a 5-token sentence to 12 adds blocks of padding: the default ignores them; the original lets them
    into the backward inter-block attention (fixture README, quirk 10)."""
    ids = torch.tensor([[3, 4, 5, 6, 7]])
    padded = torch.nn.functional.pad(ids, (0, 8))
    for mask_padding, changes in ((True, False), (False, True)):
        model = model_of(mask_padding=mask_padding)
        alone, batched = model(input_ids=ids), model(input_ids=padded, attention_mask=padded != 0)
        difference = (alone.sentence_embedding - batched.sentence_embedding).abs().max()
        assert (difference > 1e-3) == changes, (mask_padding, difference)
        forward_half = slice(0, TINY["hidden_size"])  # the forward direction only looks back: never affected
        torch.testing.assert_close(
            alone.last_hidden_state[..., forward_half], batched.last_hidden_state[:, :5, forward_half]
        )


def test_auto_block_length_follows_the_padded_width():
    model = model_of(block_length="auto")
    short = model(input_ids=torch.randint(1, 30, (1, 13)))  # ⌈26^(1/3)⌉ = 3
    long = model(input_ids=torch.randint(1, 30, (1, 14)))  # ⌈28^(1/3)⌉ = 4
    assert short.block_attentions.shape[-1] == 3 and long.block_attentions.shape[-1] == 4


def test_config_and_input_errors_name_the_argument():
    with pytest.raises(Exception, match="block_length"):  # huggingface_hub's validation error
        BiBlosaConfig(block_length=0)
    with pytest.raises(Exception, match="hidden_act"):
        BiBlosaConfig(hidden_act="tanh")  # the original's block attention accepts relu, elu and linear only
    model = model_of()
    with pytest.raises(ValueError, match="inputs_embeds"):
        model(input_ids=torch.tensor([[1, 2]]), inputs_embeds=torch.zeros(1, 2, 4))
    with pytest.raises(ValueError, match="inputs_embeds"):
        model(inputs_embeds=torch.zeros(1, 2, 5))
    with pytest.raises(ValueError, match="attention_mask"):
        model(inputs_embeds=torch.zeros(1, 3, 4), attention_mask=torch.tensor([[0, 1, 1]]))
    with pytest.raises(ValueError, match="input_ids"):
        model(input_ids=torch.tensor([[1, 99]]))


def test_l2_term_covers_the_originals_reg_vars():
    """wd · Σ‖W‖²/2 over every dense weight except the inter-block key/query projections; embeddings excluded."""
    torch.manual_seed(0)
    model = BiBlosaForSequenceClassification(BiBlosaConfig(**TINY, l2_regularization=0.5))
    excluded = ("embeddings", "inter_key", "inter_query")
    weights = [name for name, parameter in model.named_parameters()
               if parameter.dim() == 2 and not any(part in name for part in excluded)]  # fmt: skip
    expected = sum(model.get_parameter(name).square().sum() for name in weights) / 2
    # The original's 7 matrices per direction are 9 here (its fused key|query and context|gate matrices are split).
    assert len(weights) == 2 * 9 + 2 + 2
    torch.testing.assert_close(model.l2_penalty(), expected)
    ids, labels = torch.tensor([[1, 2, 3]]), torch.tensor([1])
    loss = model(input_ids=ids, labels=labels).loss
    plain = torch.nn.functional.cross_entropy(model(input_ids=ids).logits, labels)
    torch.testing.assert_close(loss, plain + 0.5 * expected)


def test_bf16_autocast_trains():
    model = model_of().train()
    head = BiBlosaForSequenceClassification(model.config)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = head(input_ids=torch.randint(1, 30, (3, 10)), labels=torch.tensor([0, 1, -100])).loss
    loss.backward()
    assert torch.isfinite(loss) and all(
        parameter.grad is None or torch.isfinite(parameter.grad).all() for parameter in head.parameters()
    )


def test_text_classification_pipeline(tmp_path):
    from transformers import pipeline

    from hf_attn.tokenization.word_level import train_word_level_tokenizer

    tokenizer = train_word_level_tokenizer(["the food was great", "the service was awful", "a fine meal"])
    torch.manual_seed(0)
    config = BiBlosaConfig(**{**TINY, "vocab_size": len(tokenizer), "id2label": {0: "negative", 1: "positive"}})
    BiBlosaForSequenceClassification(config).save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    classifier = pipeline("text-classification", model=str(tmp_path))
    results = classifier(["the food was great", "", "an unknown word"])
    assert [result["label"] in ("negative", "positive") for result in results] == [True] * 3
    assert all(0.5 <= result["score"] <= 1.0 for result in results)


@torch.no_grad()
def test_the_benchmarks_full_baseline_is_the_same_attention_over_one_block():
    """The DiSAN-style baseline attends over all n tokens with the kernel's scores and masks: Bi-BloSAN's attention
    with one block of n tokens."""
    benchmark = load_benchmark("biblosa_memory")
    torch.manual_seed(0)
    direction = benchmark.DisanDirection(4, 6, "backward")
    inputs, mask = torch.randn(3, 9, 4), (torch.arange(9) < torch.tensor([[9], [5], [1]]))
    h = torch.nn.functional.elu(direction.map(inputs))
    expected, _ = multi_dimensional_attention(
        direction.key(h), direction.query(h), direction.bias, h, mask, "backward", 5.0
    )
    gate = torch.sigmoid(direction.gate_h(h) + direction.gate_s(expected))
    torch.testing.assert_close(direction(inputs, mask), gate * h + (1 - gate) * expected)
