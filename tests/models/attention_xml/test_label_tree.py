"""AttentionXML's label tree (§2.2): TF-IDF label representations, balanced 2-means, compression to K-ary levels."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import sparse
from sklearn.preprocessing import normalize

from hf_attn.models.attention_xml.label_tree import (
    LabelTree,
    balanced_two_means,
    build_label_tree,
    label_representations,
)
from tests.helpers import head_of, make_inputs


def random_representations(num_labels: int, seed: int = 0) -> sparse.csr_matrix:
    return normalize(sparse.random(num_labels, 200, density=0.05, random_state=seed, format="csr"))


@pytest.mark.parametrize(
    ("num_labels", "cluster_size", "children", "height"),
    [(1000, 8, 8, 3), (1000, 8, 4, 2), (300, 4, 2, 5), (5, 8, 8, 3)],
)
def test_every_label_has_one_path_and_the_levels_keep_the_papers_bounds(num_labels, cluster_size, children, height):
    tree = build_label_tree(random_representations(num_labels), cluster_size, children, height)
    assert tree.num_labels == num_labels and len(tree.level_sizes) <= height + 1
    assert max(len(c) for c in tree.children(len(tree.parents) - 1)) <= cluster_size  # clusters: at most M labels
    for level in range(len(tree.parents) - 1):
        assert max(len(c) for c in tree.children(level)) <= children  # inner levels: at most K children
    for level, parent in enumerate(tree.parents):  # every node has a parent in the level above, and every
        assert parent.min() >= 0 and parent.max() < tree.level_sizes[level]  # node above has a child
        assert set(parent.tolist()) == set(range(tree.level_sizes[level]))
    assert LabelTree.from_dict(tree.to_dict()).level_sizes == tree.level_sizes


def test_balanced_two_means_splits_in_halves_and_separates_planted_clusters():
    rng = np.random.default_rng(0)
    # Two groups of 9 and 8 labels on disjoint features: the split must follow them.
    dense = np.zeros((17, 10))
    dense[:9, :5] = rng.random((9, 5)) + 0.1
    dense[9:, 5:] = rng.random((8, 5)) + 0.1
    first, second = balanced_two_means(normalize(sparse.csr_matrix(dense)), rng)
    assert (len(first), len(second)) == (9, 8)
    assert {tuple(first), tuple(second)} == {tuple(range(9)), tuple(range(9, 17))}


def test_label_representations_sum_the_tfidf_of_each_labels_texts_and_the_tree_groups_related_labels():
    # 16 labels, 4 topics in 2 areas: a text of label l holds label l's word, its topic's word and its area's word.
    texts, label_sets = [], []
    rng = np.random.default_rng(1)
    for _ in range(400):
        label = int(rng.integers(16))
        texts.append(f"area{label // 8} topic{label // 4} word{label} filler{rng.integers(5)}")
        label_sets.append([label])
    representations = label_representations(texts, label_sets, 17)  # label 16 has no text: a zero row
    assert representations.shape[0] == 17 and abs(representations[16]).sum() == 0
    np.testing.assert_allclose(sparse.linalg.norm(representations[:16], axis=1), 1.0)
    tree = build_label_tree(representations[:16], cluster_size=4, children=2, height=2)
    clusters = tree.children(len(tree.parents) - 1)
    assert sorted(sorted(c.tolist()) for c in clusters) == [[4 * t + i for i in range(4)] for t in range(4)]


@pytest.mark.parametrize("top_k", [-1, 0])
def test_label_tree_top_k_must_be_at_least_one(top_k):
    model, config, head = head_of("attention_xml", "AttentionXmlForLabelTree")
    inputs = make_inputs(head, config, [5, 3])
    with pytest.raises(ValueError, match=r"`top_k` must be a whole number ≥ 1"):
        model(**inputs, top_k=top_k)
