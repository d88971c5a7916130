"""AttentionXML's equations on tiny cases: label-wise attention (eq. 2-3), candidates as a tree level scores them,
the learned initial state, the loss with −100 entries, and errors that name the argument."""

from __future__ import annotations

import pytest
import torch

from hf_attn import AttentionXmlConfig, AttentionXmlForSequenceClassification

CONFIG = {"vocab_size": 30, "embedding_size": 8, "hidden_size": 5, "linear_sizes": [7, 4], "num_labels": 6,
          "hidden_dropout_prob": 0.0, "embedding_dropout_prob": 0.0}  # fmt: skip
INPUT_IDS = torch.tensor([[3, 4, 5, 6, 7], [8, 9, 0, 0, 0]])
MASK = (INPUT_IDS != 0).long()


def model(**overrides) -> AttentionXmlForSequenceClassification:
    torch.manual_seed(0)
    return AttentionXmlForSequenceClassification(AttentionXmlConfig(**{**CONFIG, **overrides})).eval()


@torch.no_grad()
def test_label_wise_attention_and_the_shared_layers_follow_equations_2_to_5():
    net = model()
    output = net(INPUT_IDS, MASK, output_hidden_states=True)
    _, states, contexts = output.hidden_states  # ĥ (B, T, D), m̂ (B, N, D)
    queries = net.attention.label_queries  # ŵ_j (N, D)
    for row, length in enumerate(MASK.sum(-1).tolist()):
        h = states[row, :length]
        alpha = torch.softmax(queries @ h.T, dim=-1)  # eq. 2: over the text's real tokens, per label
        torch.testing.assert_close(output.label_attentions[row, :, :length], alpha)
        assert not output.label_attentions[row, :, length:].any()
        torch.testing.assert_close(contexts[row], alpha @ h)  # eq. 3
        hidden = contexts[row]
        for layer in net.classifier.hidden:  # shared by all labels, Linear -> ReLU
            hidden = torch.relu(layer(hidden))
        torch.testing.assert_close(output.logits[row], net.classifier.output(hidden).squeeze(-1))


@torch.no_grad()
def test_candidates_score_exactly_what_the_flat_model_scores_for_those_labels():
    net = model()
    candidates = torch.tensor([[5, 0, 2], [1, 1, 4]])
    flat, some = net(INPUT_IDS, MASK), net(INPUT_IDS, MASK, candidates=candidates)
    torch.testing.assert_close(some.logits, flat.logits.gather(1, candidates))
    torch.testing.assert_close(some.label_attentions, flat.label_attentions[torch.arange(2)[:, None], candidates])
    assert torch.equal(some.candidates, candidates)


@torch.no_grad()
def test_a_tree_level_has_a_padding_candidate_row_and_refuses_ids_beyond_it():
    net = model(padding_candidate=True)
    assert net.attention.label_queries.shape == (7, 10)  # N + 1 rows of D = 2H
    assert net(INPUT_IDS, MASK, candidates=torch.tensor([[6, 6], [0, 6]])).logits.shape == (2, 2)
    with pytest.raises(ValueError, match=r"`candidates` must hold label ids in \[0, 7\)"):
        net(INPUT_IDS, MASK, candidates=torch.tensor([[7, 0], [0, 1]]))
    with pytest.raises(ValueError, match=r"`candidates` must be integer label ids of shape \(batch, candidates\)"):
        net(INPUT_IDS, MASK, candidates=torch.tensor([[0.0, 1.0], [0.0, 1.0]]))
    with pytest.raises(ValueError, match=r"`candidates` must be integer label ids"):
        net(INPUT_IDS, MASK, candidates=torch.tensor([[0, 1]]))


@torch.no_grad()
def test_the_learned_initial_state_starts_both_directions():
    net = model()
    before = net(INPUT_IDS, MASK).logits
    net.attention_xml.initial_hidden.fill_(0.5)
    after_hidden = net(INPUT_IDS, MASK).logits
    net.attention_xml.initial_cell.fill_(-0.5)
    after_cell = net(INPUT_IDS, MASK).logits
    assert (before - after_hidden).abs().max() > 1e-3 and (after_hidden - after_cell).abs().max() > 1e-3


def test_loss_leaves_out_minus_100_entries_and_is_zero_when_nothing_is_scored():
    net = model()
    labels = torch.tensor([[1.0, 0, 0, 1, -100, 0], [0, 0, 1, -100, -100, 0]])
    output = net(INPUT_IDS, MASK, labels=labels)
    kept = labels != -100
    expected = torch.nn.functional.binary_cross_entropy_with_logits(output.logits[kept], labels[kept])
    torch.testing.assert_close(output.loss, expected)
    nothing = net(INPUT_IDS, MASK, labels=torch.full((2, 6), -100.0))
    nothing.loss.backward()
    assert nothing.loss.item() == 0 and all(
        p.grad is None or p.grad.abs().max() == 0 for p in net.parameters()
    )  # no NaN, no gradient


def tree_model(top_candidates: int):
    """A 3-level cascade over 10 labels: level 0 has 2 nodes, level 1 has 4, the labels hang below."""
    from hf_attn import AttentionXmlForLabelTree

    config = AttentionXmlConfig(**{**CONFIG, "num_labels": 10}, tree_level_sizes=[2, 4, 10], tree_max_children=[2, 3],
                                tree_top_candidates=top_candidates)  # fmt: skip
    torch.manual_seed(0)
    net = AttentionXmlForLabelTree(config).eval()
    parents = [[0, 0, 1, 1], [0, 0, 0, 1, 1, 2, 2, 3, 3, 3]]
    net.set_tree(parents)
    return net, parents


@torch.no_grad()
def test_the_tree_scores_a_label_by_the_product_of_the_sigmoids_down_its_path():
    """With a beam wide enough to keep every node, the cascade's score of each label is exactly
    σ(level 0 of its grandparent) · σ(level 1 of its parent) · σ(level 2 of the label) (§2.3)."""
    net, parents = tree_model(top_candidates=4)
    output = net(INPUT_IDS, MASK, top_k=10)
    top = torch.sigmoid(net.levels[0](INPUT_IDS, MASK).logits)  # (B, 2)
    middle = torch.sigmoid(net.levels[1](INPUT_IDS, MASK, candidates=torch.arange(4).expand(2, 4)).logits)
    leaves = torch.sigmoid(net.levels[2](INPUT_IDS, MASK, candidates=torch.arange(10).expand(2, 10)).logits)
    for label in range(10):
        parent = parents[1][label]
        expected = top[:, parents[0][parent]] * middle[:, parent] * leaves[:, label]
        torch.testing.assert_close(output.logits[:, label].sigmoid(), expected)
    assert torch.equal(output.top_labels, output.logits.topk(10).indices)


@torch.no_grad()
def test_a_narrow_beam_scores_only_the_children_of_the_best_nodes(tmp_path):
    from hf_attn import AttentionXmlForLabelTree

    net, parents = tree_model(top_candidates=1)
    output = net(INPUT_IDS, MASK, top_k=3)
    best_top = net.levels[0](INPUT_IDS, MASK).logits.argmax(-1)  # (B,)
    for row in range(2):
        reached = {label for label in range(10) if parents[0][parents[1][label]] == best_top[row]}
        scored = {label for label in output.candidates[row].tolist() if label < 10}
        assert scored <= reached and set(output.top_labels[row].tolist()) <= reached
        unscored = [label for label in range(10) if label not in scored]
        assert (output.logits[row, unscored] == torch.finfo(output.logits.dtype).min).all()
    net.save_pretrained(tmp_path)
    reloaded = AttentionXmlForLabelTree.from_pretrained(tmp_path).eval()  # the tree travels in the buffers
    assert torch.equal(reloaded(INPUT_IDS, MASK, top_k=3).top_labels, output.top_labels)


@torch.no_grad()
def test_the_tree_loss_sums_the_levels_and_puts_positives_in_the_training_beam():
    """With labels, each level is scored against its nodes' targets (1 when a label below applies; −100 below
    propagates). In evaluation mode the beam is the prediction's; in training mode a positive parent is always
    among the candidates, even one the beam would have dropped (§2.3)."""
    net, parents = tree_model(top_candidates=1)
    best_top = net.levels[0](INPUT_IDS, MASK).logits.argmax(-1)
    # One label per example, under the top node the beam does NOT keep.
    labels = torch.zeros(2, 10)
    target_labels = [next(label for label in range(10) if parents[0][parents[1][label]] != int(best_top[row]))
                     for row in range(2)]  # fmt: skip
    for row, label in enumerate(target_labels):
        labels[row, label] = 1.0
    targets = net.node_targets(labels)
    for row, label in enumerate(target_labels):
        assert targets[2][row].nonzero().flatten().tolist() == [label]
        assert targets[1][row].nonzero().flatten().tolist() == [parents[1][label]]
        assert targets[0][row].nonzero().flatten().tolist() == [parents[0][parents[1][label]]]
    unknown = labels.clone()
    unknown[0, 9] = -100  # label 9's parent (3) and grandparent (1) become unknown unless a positive is below them
    assert net.node_targets(unknown)[1][0, 3] == (1.0 if parents[1][target_labels[0]] == 3 else -100.0)

    evaluated = net(INPUT_IDS, MASK, labels=labels)
    assert evaluated.candidates.tolist() == net(INPUT_IDS, MASK).candidates.tolist()  # the prediction's beam
    level0 = torch.nn.functional.binary_cross_entropy_with_logits(net.levels[0](INPUT_IDS, MASK).logits, targets[0])
    assert evaluated.loss > level0  # the sum of three levels' losses
    net.training = True  # the cascade's mode picks the beam; its levels stay in eval mode (no dropout)
    teacher_forced = net(INPUT_IDS, MASK, labels=labels)
    for row, label in enumerate(target_labels):
        assert label in teacher_forced.candidates[row].tolist()
        assert label not in evaluated.candidates[row].tolist()


def test_a_new_model_starts_at_the_labels_prior_and_a_saved_one_keeps_its_bias(tmp_path):
    """With the training labels' frequencies in the config (as `hf-attn train` records them), the output unit's bias
    is log(p̄ / (1 − p̄)): the mean predicted probability of a label is its mean frequency from the first step. A
    checkpoint's bias is loaded, not reset; a config without frequencies keeps the original's 0; a tree level (whose
    nodes are not the config's labels) too."""
    from hf_attn import AttentionXmlForLabelTree

    counts = [30, 6, 3, 9, 1, 0]  # 49 label occurrences over 100 texts and 6 labels: p̄ = 49/600
    primed = model(label_frequencies={"examples": 100, "counts": counts})
    bias = primed.classifier.output.bias.item()
    assert bias == pytest.approx(torch.logit(torch.tensor(49 / 600, dtype=torch.float64)).item(), abs=1e-6)
    with torch.no_grad():
        probabilities = torch.sigmoid(primed(INPUT_IDS, MASK).logits)
    assert probabilities.mean().item() == pytest.approx(49 / 600, abs=0.05)
    assert model().classifier.output.bias.item() == 0.0
    with torch.no_grad():
        primed.classifier.output.bias.fill_(1.25)
    primed.save_pretrained(tmp_path)
    assert AttentionXmlForSequenceClassification.from_pretrained(tmp_path).classifier.output.bias.item() == 1.25
    frequencies = {"examples": 100, "counts": counts}
    tree_config = AttentionXmlConfig(**CONFIG, label_frequencies=frequencies, tree_cluster_size=2, tree_children=2,
                                     tree_height=1)  # fmt: skip
    tree = AttentionXmlForLabelTree(tree_config)
    assert [level.classifier.output.bias.item() for level in tree.levels] == [0.0, 0.0]
