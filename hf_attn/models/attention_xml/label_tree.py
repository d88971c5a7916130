"""AttentionXML's shallow and wide probabilistic label tree (You et al., NeurIPS 2019, §2.2).

Building:
1. Label representations: each label is the normalised sum of the TF-IDF features of its training texts
   (scikit-learn's `TfidfVectorizer`; the paper's "label representation").
2. T_0: top-down balanced 2-means on those representations (cosine similarity), splitting every cluster of more
   than M labels into two halves, until none has more than M. Every split of a level happens at the same depth, so
   the binary tree has one depth D for all clusters (a cluster already small enough is carried down unsplit).
   Balanced 2-means is not in scikit-learn (its `KMeans` gives unbalanced clusters); `balanced_two_means` is the
   original code's `split_node`: assign the half of the labels nearest to one centre to it, the rest to the other
   (deviation: the second initial centre is the label least similar to the first, not a random one).
3. Compression to a K = 2^c-ary tree of height H: the clusters are S_0; S_h are the depth D − c·h ancestors
   (h < H, depth > 0); the root's children are the top kept level, which may be wide (2^(D − c(H−1)) nodes: the
   paper's "shallow and wide"). Every node but the top level's has at most K children.

A `LabelTree` lists the model's levels top-down: level 0 holds the root's children, the next levels the
compressed ancestors, then the clusters, and the last level the labels themselves (node i = label i).
`parents[d][i]` is the index, in level d, of the parent of node i of level d + 1.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import sparse
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.preprocessing import normalize


@dataclass
class LabelTree:
    """Levels top-down; the last level's nodes are the labels (ids 0..num_labels-1)."""

    parents: list[np.ndarray]  # parents[d]: (nodes of level d+1,) indices into level d
    top_size: int  # nodes of level 0 (the root's children)

    @property
    def level_sizes(self) -> list[int]:
        return [self.top_size, *(len(parent) for parent in self.parents)]

    @property
    def num_labels(self) -> int:
        return self.level_sizes[-1]

    def children(self, level: int) -> list[np.ndarray]:
        """For each node of `level`, the indices of its children in `level + 1`."""
        parent = self.parents[level]
        order = np.argsort(parent, kind="stable")
        bounds = np.searchsorted(parent[order], np.arange(self.level_sizes[level] + 1))
        return [order[bounds[i] : bounds[i + 1]] for i in range(self.level_sizes[level])]

    def ancestors(self, labels: Sequence[int], level: int) -> set[int]:
        """The nodes of `level` on the paths from the root to `labels`."""
        nodes = np.asarray(list(labels), dtype=np.int64)
        for depth in range(len(self.parents) - 1, level - 1, -1):
            nodes = self.parents[depth][nodes]
        return set(nodes.tolist())

    def to_dict(self) -> dict:
        return {"top_size": self.top_size, "parents": [parent.tolist() for parent in self.parents]}

    @classmethod
    def from_dict(cls, data: dict) -> LabelTree:
        return cls([np.asarray(parent, dtype=np.int64) for parent in data["parents"]], int(data["top_size"]))


def label_representations(
    texts: Sequence[str], label_sets: Sequence[Sequence[int]], num_labels: int
) -> sparse.csr_matrix:
    """(num_labels, vocabulary): row l = normalise(Σ_{texts with label l} tfidf(text)). A label without a text
    gets a zero row."""
    features = TfidfVectorizer(token_pattern=r"\S+", lowercase=False).fit_transform(texts)  # (n, V)
    rows = [row for row, labels in enumerate(label_sets) for _ in labels]
    columns = [label for labels in label_sets for label in labels]
    membership = sparse.csr_matrix((np.ones(len(rows)), (rows, columns)), shape=(len(texts), num_labels))
    return normalize(membership.T.tocsr() @ features)


def balanced_two_means(
    vectors: sparse.csr_matrix, rng: np.random.Generator, eps: float = 1e-4, max_iterations: int = 100
) -> tuple[np.ndarray, np.ndarray]:
    """Splits the rows of `vectors` (unit-norm) into two halves of sizes ⌈n/2⌉ and ⌊n/2⌋ by balanced 2-means with
    cosine similarity: each round gives the rows most similar to centre 0 (relative to centre 1) to centre 0, the
    rest to centre 1, then re-centres; it stops when the mean similarity gains less than `eps`. Deviation: the
    initial centres (see below)."""
    n = vectors.shape[0]
    # A random first centre and, as k-means++ would, the row least similar to it as the second (the original
    # draws both at random: two centres in one true cluster then split the others arbitrarily).
    first_centre = int(rng.integers(n))
    second_centre = int(np.argmin(np.asarray(vectors @ vectors[first_centre].T.toarray()).ravel()))
    if second_centre == first_centre:
        second_centre = (first_centre + 1) % n
    centres = vectors[[first_centre, second_centre]].toarray()
    quality = -math.inf
    for _ in range(max_iterations):
        similarity = np.asarray(vectors @ centres.T)  # (n, 2)
        order = np.argsort(similarity[:, 1] - similarity[:, 0], kind="stable")
        first, second = order[: (n + 1) // 2], order[(n + 1) // 2 :]
        new_quality = (similarity[first, 0].sum() + similarity[second, 1].sum()) / n
        if new_quality - quality < eps:
            break
        quality = new_quality
        centres = normalize(np.asarray(np.vstack([vectors[first].sum(axis=0), vectors[second].sum(axis=0)])))
    return np.sort(first), np.sort(second)


def build_label_tree(
    representations: sparse.csr_matrix,
    cluster_size: int = 8,
    children: int = 8,
    height: int = 3,
    seed: int = 0,
    eps: float = 1e-4,
) -> LabelTree:
    """The compressed tree of §2.2 from label representations `(num_labels, features)`: clusters of at most
    `cluster_size` (M) labels, branching `children` (K = 2^c) between compressed levels, at most `height` (H)
    levels of nodes above the labels."""
    c = round(math.log2(children))
    if 2**c != children:
        raise ValueError(f"children (K) must be a power of two (K = 2^c), got {children}.")
    rng = np.random.default_rng(seed)
    num_labels = representations.shape[0]
    groups = [np.arange(num_labels)]  # the clusters at the current depth of T_0
    ancestry: list[np.ndarray] = []  # ancestry[t][g]: the depth-t index of group g's parent at depth t+1
    while max(len(group) for group in groups) > cluster_size:
        split, parent = [], []
        for index, group in enumerate(groups):
            if len(group) <= cluster_size:  # small enough: carried down unsplit
                halves = [group]
            else:
                halves = [group[half] for half in balanced_two_means(representations[group], rng, eps)]
            split += halves
            parent += [index] * len(halves)
        groups, ancestry = split, [*ancestry, np.asarray(parent)]
    depth = len(ancestry)
    # The depths kept: D (the clusters), D - c, D - 2c, ... above 0, at most `height` of them, top-down.
    kept = sorted({max(depth - c * h, 0) for h in range(height)} - ({0} if depth > 0 else set()))
    kept = kept or [0]

    def ancestor_at(target: int, source: int) -> np.ndarray:
        """For each group at depth `source`, its ancestor's index at depth `target` (≤ source)."""
        index = np.arange(len(ancestry[source - 1]) if source else 1)
        for t in range(source - 1, target - 1, -1):
            index = ancestry[t][index]
        return index

    parents = [ancestor_at(upper, lower) for upper, lower in itertools.pairwise(kept)]
    label_parent = np.empty(num_labels, dtype=np.int64)
    for index, group in enumerate(groups):
        label_parent[group] = index
    top_size = len(ancestry[kept[0] - 1]) if kept[0] else 1
    return LabelTree([*(p.astype(np.int64) for p in parents), label_parent], top_size)
