"""Memory bounded at any setting: for every head whose cost can explode with a setting (BiBloSA's block
count, AttentionXML's label count, SGM's beams × labels, the few-shot heads' N × K, the LSTMN's tape length), the
largest tensor one training step (or one beam search) creates stays within the bound stated here, at a small and
at a four times larger setting. Every bound also admits the largest parameter (and its gradient): the model's size,
which the config sets.

The measure is every tensor any aten op returns during forward and backward (`TorchDispatchMode`), so a quadratic
intermediate that lives for one op counts as much as a stored one. Peak resident memory on a 20,000-token example
is measured by `benchmarks/biblosa_memory.py` (its results table).

Shape legend of the bounds: B batch, n / T tokens, E embedding size, H hidden size, V vocabulary, L labels,
K beams or shots, N ways, Q queries, S source tokens, D instance features.
"""

from __future__ import annotations

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from hf_attn.models.biblosa import block_attention
from hf_attn.registry.table import get_architecture
from tests.helpers import make_inputs, make_labels, tiny_config


class LargestTensor(TorchDispatchMode):
    """Records the element count and origin of the largest tensor any aten op returns, but the ops named in
    `ignored` (substrings of the op's name)."""

    def __init__(self, ignored: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.elements, self.origin, self.ignored = 0, "", ignored

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        if any(name in str(func) for name in self.ignored):
            return result
        for tensor in tree_leaves(result):
            if isinstance(tensor, torch.Tensor) and tensor.numel() > self.elements:
                self.elements, self.origin = tensor.numel(), f"{func} {tuple(tensor.shape)}"
        return result


def head_and_config(arch: str, class_name: str, **overrides):
    architecture = get_architecture(arch)
    (head,) = [head for head in architecture.heads if head.model_class.__name__ == class_name]
    return head, tiny_config(architecture, **overrides)


def largest_in_a_training_step(arch: str, class_name: str, lengths: list[int], ignored: tuple[str, ...] = (),
                               **overrides):  # fmt: skip
    head, config = head_and_config(arch, class_name, **overrides)
    torch.manual_seed(0)
    model = head.model_class(config).train()
    inputs = make_inputs(head, config, lengths)
    labels = make_labels(head, config, inputs)
    with LargestTensor(ignored) as largest:
        model(**inputs, labels=labels).loss.backward()
    return largest, config, largest_parameter(model)


def largest_parameter(model: torch.nn.Module) -> int:
    """The model's own size: a parameter and its gradient (the word table, an LSTM's weights, the label tree's
    per-label weights) are what the config asks for, in every bound below."""
    return max(parameter.numel() for parameter in model.parameters())


@pytest.mark.parametrize("block_length", [1, 3])
@pytest.mark.parametrize("tokens", [96, 384])
def test_biblosa_is_linear_in_the_tokens_at_any_block_length(monkeypatch, block_length, tokens):
    """Bound: max(CHUNK_ELEMENTS, 4·B·n·max(E, 2H)): the chunked intra- and inter-block scores, and the fusion
    input (B, m, r, 3H). At r = 1 the inter-block attention runs over m = n blocks: without query chunks its scores
    would be n²·H, and its direction mask n²."""
    monkeypatch.setattr(block_attention, "CHUNK_ELEMENTS", 4096)  # small, so that n = 384 is cut into chunks
    largest, config, parameters = largest_in_a_training_step(
        "biblosa", "BiBlosaForSequenceClassification", [tokens, tokens // 2], block_length=block_length
    )
    width = max(config.embedding_size, 2 * config.hidden_size)
    bound = max(4096, 4 * 2 * tokens * width, parameters)
    assert largest.elements <= bound, largest.origin


@pytest.mark.parametrize("labels", [32, 128])
def test_attention_xml_is_linear_in_the_labels_and_the_tree_in_its_candidates(labels):
    """Flat head, bound 2·B·L·max(T, 4H, E): one attention row per label (B, L, T) and one representation per label
    (B, L, 2H). Label tree, bound max(2·B·(L + 1), 2·B·max(C, T)·max(T, 4H, E)) with C = top candidates ×
    children: a level scores only the children of its beam (and the encoder reads T tokens), and L enters only
    through the final dense logits."""
    tokens = [20, 3]
    # The CPU's LSTM kernel (oneDNN) returns an opaque workspace, linear in B·T and in the sizes, which no label
    # enters; at these tiny sizes it is larger than the bound, so it is left out of the measure.
    rnn_kernel = ("mkldnn_rnn_layer",)
    flat, config, parameters = largest_in_a_training_step(
        "attention_xml", "AttentionXmlForSequenceClassification", tokens, rnn_kernel, num_labels=labels
    )
    width = max(max(tokens), 4 * config.hidden_size, config.embedding_size)  # 4H: the LSTM's gates
    assert flat.elements <= max(2 * 2 * labels * width, parameters), flat.origin
    tree, config, parameters = largest_in_a_training_step(
        "attention_xml", "AttentionXmlForLabelTree", tokens, rnn_kernel, num_labels=labels
    )
    candidates = config.tree_top_candidates * max(config.tree_children, config.tree_cluster_size)
    bound = max(2 * 2 * (labels + 1), 2 * 2 * max(candidates, max(tokens)) * width, parameters)
    assert tree.elements <= bound, tree.origin


@pytest.mark.parametrize(("beams", "labels"), [(2, 5), (8, 5), (2, 20)])
def test_sgm_beam_search_is_linear_in_beams_times_labels(beams, labels):
    """Bound: 2·B·K·max(V', S·max(C, A, H_dec)) with V' = labels + special tokens: the beams' scores over the
    labels (B, K·V') and the beams' attention over the source."""
    head, config = head_and_config("sgm", "SgmForMultiLabelGeneration", num_labels=labels)
    torch.manual_seed(0)
    model = head.model_class(config).eval()
    inputs = {name: value for name, value in make_inputs(head, config, [7, 5]).items() if "decoder" not in name}
    with LargestTensor() as largest:
        model.generate(**inputs, num_beams=beams, max_new_tokens=6)
    source = inputs["input_ids"].size(1)
    widths = (config.encoder_output_size, config.attention_size, config.decoder_hidden_size)
    bound = max(2 * 2 * beams * max(config.target_vocab_size, source * max(widths)), largest_parameter(model))
    assert largest.elements <= bound, largest.origin


@pytest.mark.parametrize(("arch", "class_name"), [("proto_hatt", "ProtoHattForFewShotClassification"),
                                                  ("hapn", "HapnForFewShotClassification")])  # fmt: skip
@pytest.mark.parametrize(("ways", "shots"), [(3, 3), (6, 3), (3, 12)])
def test_few_shot_heads_are_linear_in_queries_times_ways_times_shots(arch, class_name, ways, shots):
    """Bound: 4·B·Q·N·K·D (each query's own prototypes: the query-dependent instance attention over the N·K support
    instances, Q = N × queries per class), or 4·B·(N·K + Q)·T·max(D, E) (the instance encoder)."""
    largest, config, parameters = largest_in_a_training_step(arch, class_name, [6, 4], num_ways=ways, num_shots=shots)
    queries = ways * config.num_queries
    features = 3 * config.hidden_size  # HAPN's instance features are [h; a; h ⊙ a]-sized; D ≤ 3H for both
    encoder = 4 * 2 * (ways * shots + queries) * 6 * max(features, config.word_embedding_size)
    bound = max(4 * 2 * queries * ways * shots * features, encoder, parameters)
    assert largest.elements <= bound, largest.origin


@pytest.mark.parametrize("class_name", ["LstmnForSequenceClassification", "LstmnForCausalLM"])
@pytest.mark.parametrize("tokens", [16, 64])
def test_lstmn_tape_is_linear_per_step_and_its_attention_maps_quadratic(class_name, tokens):
    """Bound: B·T·max(T, 8H, E): the tape of T slots (B, T, H), and the intra-attention maps (B, T, T), which are
    the model (every token attends over all earlier ones, §3.1): nothing is (B, T, T, H)."""
    largest, config, parameters = largest_in_a_training_step("lstmn", class_name, [tokens, tokens // 2])
    bound = max(2 * tokens * max(tokens, 8 * config.hidden_size, config.embedding_size), parameters)
    if class_name.endswith("CausalLM"):  # the LM's logits (B, T, V)
        bound = max(bound, 2 * tokens * config.vocab_size)
    assert largest.elements <= bound, largest.origin
