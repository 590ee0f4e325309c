"""Gradient-boosted trees kept as plain arrays: fitted with scikit-learn, shipped as JSON, evaluated in numpy.

A fitted ``HistGradientBoostingClassifier`` becomes four arrays per tree (the feature a node
tests, its threshold, its two children; a leaf points to itself) and the leaves' values. All trees are
padded to the same number of nodes, so that one numpy step moves every row through every tree at once
(``_walk``: ``depth`` steps over a (rows x trees) array, whatever the number of trees); trees of depth 4
or less are also kept as complete heaps (``_Heaps``), whose evaluation needs no step per level and gives
the same scores to the bit at about half the cost. Loading the JSON runs no code (never a pickle).
"""

from __future__ import annotations

import functools

import numpy as np


class BoostedTrees:
    """A gradient-boosted tree ensemble: ``proba(x)`` gives the class probabilities of every row of ``x``.

    Trees come in rounds of one tree per class (one tree per round for two classes, whose raw score is the
    log-odds of the second class).
    """

    def __init__(self, feature: np.ndarray, threshold: np.ndarray, left: np.ndarray, right: np.ndarray,
                 value: np.ndarray, base: np.ndarray, depth: int) -> None:
        self.feature = feature  # (trees, nodes) int: the feature a node tests (0 at leaves)
        self.threshold = threshold  # (trees, nodes) float: x <= threshold goes left
        self.left = left  # (trees, nodes) int: child node, the node itself at a leaf
        self.right = right
        self.value = value  # (trees, nodes) float: a leaf's contribution to the raw score
        self.base = np.asarray(base, dtype=float).ravel()  # one raw score per class (one for two classes)
        self.depth = depth
        n_trees, n_nodes = feature.shape
        # Flat arrays, node k of tree t at t * n_nodes + k; a node's children side by side (right, then
        # left) at twice its flat index, as flat indices: one step down is one gather
        offset = np.repeat(np.arange(n_trees) * n_nodes, n_nodes)
        self._roots = np.arange(n_trees) * n_nodes
        self._feature = feature.ravel().astype(np.intp)
        self._threshold = threshold.ravel()
        self._children = np.stack([right.ravel() + offset, left.ravel() + offset], axis=1).ravel().astype(np.intp)
        self._value = value.ravel()
        self._heap = _Heaps(self) if 0 < depth <= _Heaps.DEPTH else None

    @classmethod
    def from_sklearn(cls, model) -> BoostedTrees:
        """The trees of a fitted ``HistGradientBoostingClassifier`` (numeric features, no NaN)."""
        trees = [tree.nodes for round_ in model._predictors for tree in round_]
        feature, threshold, left, right, value = _blank(len(trees), max(len(t) for t in trees))
        depth = 0
        for t, nodes in enumerate(trees):
            n = len(nodes)
            leaf = nodes["is_leaf"].astype(bool)
            feature[t, :n] = np.where(leaf, 0, nodes["feature_idx"])
            threshold[t, :n] = np.where(leaf, 0.0, nodes["num_threshold"])
            left[t, :n] = np.where(leaf, np.arange(n), nodes["left"])
            right[t, :n] = np.where(leaf, np.arange(n), nodes["right"])
            value[t, :n] = np.where(leaf, nodes["value"], 0.0)
            depth = max(depth, int(nodes["depth"].max()))
        return cls(feature, threshold, left, right, value, np.ravel(model._baseline_prediction), depth)

    def raw(self, x: np.ndarray) -> np.ndarray:
        """The raw scores of every row of ``x`` (rows x features): (rows, per-round trees)."""
        k = len(self.base)
        if len(x) == 0:
            return np.zeros((0, k))
        x = np.ascontiguousarray(x, dtype=float)
        if self._heap is None or len(x) < _Heaps.MIN_ROWS:
            return self._walk(x)
        if len(x) > _Heaps.MAX_ROWS:  # a row's scores do not depend on the rows beside it
            return np.concatenate([self.raw(x[a : a + _Heaps.MAX_ROWS]) for a in range(0, len(x), _Heaps.MAX_ROWS)])
        # round after round, as the walk's sum(axis=1) adds them (a reduction over the first axis)
        values = self._heap.leaf_values(x)  # (trees, rows padded)
        total = np.add.reduce(values.reshape(-1, k, values.shape[1]), axis=0)
        return self.base + total[:, : len(x)].T

    def _walk(self, x: np.ndarray) -> np.ndarray:
        """``raw`` by moving every row down every tree one level at a time (trees of any depth)."""
        k = len(self.base)
        # the first step: every row at the roots, whose features and thresholds are one per tree
        node = self._roots
        if self.depth:
            node = self._children[2 * self._roots + (x[:, self._feature[node]] <= self._threshold[node])]
        # x flat, row r's feature f at r * width + f: 1-D gathers are cheaper than 2-D fancy indexing
        flat = x.ravel()
        row_start = (np.arange(len(x)) * x.shape[1])[:, None]
        for _ in range(self.depth - 1):
            go_left = flat[row_start + self._feature[node]] <= self._threshold[node]
            node = self._children[2 * node + go_left]
        node = np.broadcast_to(node, (len(x), len(self._roots)))
        return self.base + self._value[node].reshape(len(x), -1, k).sum(axis=1)

    def proba(self, x: np.ndarray) -> np.ndarray:
        """The class probabilities of every row of ``x``: (rows, classes)."""
        raw = self.raw(x)
        if raw.shape[1] == 1:
            p = 1.0 / (1.0 + np.exp(-raw))
            return np.hstack([1.0 - p, p])
        raw = raw - raw.max(axis=1, keepdims=True)
        e = np.exp(raw)
        return e / e.sum(axis=1, keepdims=True)

    def to_dict(self) -> dict:
        """The trees as plain JSON: per tree the used nodes only (padding is rebuilt on loading)."""
        used = [int(n) for n in self._used_nodes()]
        return {
            "kind": "boosted-trees",
            "base": [round(float(b), 8) for b in self.base],
            "depth": self.depth,
            "trees": [
                {"feature": self.feature[t, :n].tolist(),
                 "threshold": [round(float(v), 8) for v in self.threshold[t, :n]],
                 "left": self.left[t, :n].tolist(), "right": self.right[t, :n].tolist(),
                 "value": [round(float(v), 8) for v in self.value[t, :n]]}
                for t, n in enumerate(used)
            ],
        }

    def _used_nodes(self) -> np.ndarray:
        # padding nodes are leaves pointing to themselves with value 0 after the last real node; a real
        # tree's last node is a leaf too, so count up to the highest node any other node points to
        reach = np.maximum(self.left.max(axis=1), self.right.max(axis=1))
        return reach + 1

    @classmethod
    def from_dict(cls, params: dict) -> BoostedTrees:
        """Trees from ``to_dict``'s output; ``ValueError`` when it is not such a dict."""
        if params.get("kind") != "boosted-trees":
            raise ValueError("not a boosted-trees model")
        trees = params["trees"]
        feature, threshold, left, right, value = _blank(len(trees), max((len(t["feature"]) for t in trees), default=1))
        for t, tree in enumerate(trees):
            n = len(tree["feature"])
            feature[t, :n] = tree["feature"]
            threshold[t, :n] = tree["threshold"]
            left[t, :n] = tree["left"]
            right[t, :n] = tree["right"]
            value[t, :n] = tree["value"]
        base = np.asarray(params["base"], dtype=float)
        return cls(feature, threshold, left, right, value, base, int(params["depth"]))


class _Heaps:
    """The trees padded to complete binary trees of depth ``DEPTH`` (4), evaluated level-free.

    Tree ``t``'s inner node ``h`` in heap order (children of ``h`` at ``2h + 1``, taken when ``x <=
    threshold``, and ``2h + 2``) is slot ``h`` of the tree (15 nodes and one unused slot); a leaf above the
    last level becomes a subtree whose nodes compare with +inf (a NaN goes right, to a copy of the same
    leaf) and whose last-level leaves all hold its value. For a block of rows, every distinct (feature,
    threshold) of the slots is compared once (1,541 for the 320 role trees' 5,120 slots), the slots' bits
    gathered from those in blocks of rows (a gather of whole rows, not of single elements), each tree's 16
    bits packed into one 16-bit code four rows at a time (a 64-bit word holds one 16-bit lane per row),
    and one table common to all trees maps a code to the leaf its path reaches: ten numpy calls whatever
    the depth, instead of seven per level. The leaf values are the walk's and are added round after
    round as the walk's ``sum(axis=1)`` adds them, so the raw scores are the same to the bit
    (``tests/test_tables_boosted.py``).
    """

    DEPTH = 4
    INNER = 2**DEPTH - 1
    SLOTS = INNER + 1  # 16 bits per tree: two bytes
    #: fewer rows than this go through the walk, cheaper for them (the packing's cost is fixed)
    MIN_ROWS = 2
    #: more rows than this go through in blocks: the slots' bits take 2 bytes per (slot, row), 10 kB a row
    #: for the 320 role trees (260 MB for the 25,932 lines of a 2.4 MB long-format CSV at once); blocks of
    #: 128 rows keep them in the cache, and took 2.4x less time per row than 20,000 rows at once
    MAX_ROWS = 128

    def __init__(self, trees: BoostedTrees) -> None:
        n_trees = len(trees.feature)
        feature = np.zeros((n_trees, self.SLOTS), dtype=np.intp)
        threshold = np.full((n_trees, self.SLOTS), np.inf)
        self.leaf = np.zeros((n_trees, self.INNER + 1))
        for t in range(n_trees):
            self._place(trees, feature, threshold, t, 0, 0, 0)
        pairs, slot_pair = np.unique(np.stack([feature.ravel().astype(float), threshold.ravel()]), axis=1,
                                     return_inverse=True)
        self.pair_feature = pairs[0].astype(np.intp)
        self.pair_threshold = pairs[1][:, None]
        # slot h of every tree, then slot h + 1 ...: a slot's bits for all trees and rows are one block
        self.slot_pair = slot_pair.reshape(n_trees, self.SLOTS).T.ravel().astype(np.intp)
        self.n_trees = n_trees
        self.leaf = self.leaf.ravel()
        self.offset = (np.arange(n_trees) * (self.INNER + 1))[:, None]
        self.leaf_of_code = _leaf_table(self.DEPTH)

    def _place(self, trees: BoostedTrees, feature: np.ndarray, threshold: np.ndarray, t: int, node: int, h: int,
               level: int) -> None:
        """Tree ``t``'s ``node`` and its subtree at heap position ``h``, ``level`` steps below the root."""
        left, right = trees.left[t, node], trees.right[t, node]
        if left == node and right == node:  # a leaf: every last-level position under h holds its value
            first = h
            for _ in range(self.DEPTH - level):
                first = 2 * first + 1
            first -= self.INNER
            self.leaf[t, first : first + (1 << (self.DEPTH - level))] = trees.value[t, node]
            return
        feature[t, h] = trees.feature[t, node]
        threshold[t, h] = trees.threshold[t, node]
        self._place(trees, feature, threshold, t, left, 2 * h + 1, level + 1)
        self._place(trees, feature, threshold, t, right, 2 * h + 2, level + 1)

    def leaf_values(self, x: np.ndarray) -> np.ndarray:
        """Every tree's leaf value for every row of ``x``: (trees, rows rounded up to a multiple of 8, the
        rows added being zeros)."""
        padded = np.zeros((x.shape[1], -(-len(x) // 8) * 8))
        padded[:, : len(x)] = x.T
        # the comparisons as booleans (bytes of 0 and 1): a comparison cast into 16 bits cost 4x as much
        goes_left = np.less_equal(np.take(padded, self.pair_feature, axis=0), self.pair_threshold).view(np.uint8)
        codes = _pack_bytes(np.take(goes_left, self.slot_pair, axis=0), self.n_trees)
        return self.leaf[self.leaf_of_code[codes] + self.offset]


#: slot h's bit shifted to bit h of its 16-bit code
_SHIFTS = np.arange(16, dtype=np.uint64)[:, None]


def _pack(bits: np.ndarray, n_trees: int) -> np.ndarray:
    """(16 slots x trees, rows) of 0/1 in 16 bits, rows a multiple of 4 -> (trees, rows) 16-bit codes: a
    64-bit word of ``bits`` holds 4 rows' bits of one slot of one tree, so shifting each slot's words to
    its bit and or-ing the 16 slots gives 4 rows' codes at once, in place."""
    words = bits.view(np.uint64).reshape(16, -1) << _SHIFTS
    return np.bitwise_or.reduce(words, axis=0).view(np.uint16).reshape(n_trees, -1)


_BYTE_SHIFTS = np.arange(8, dtype=np.uint64)[:, None]


def _pack_bytes(bits: np.ndarray, n_trees: int) -> np.ndarray:
    """``_pack`` of bits held in bytes (rows a multiple of 8): a 64-bit word holds 8 rows' bits of one slot,
    so slots 0-7 give each code's low byte and slots 8-15 its high byte, 8 rows at once; the two bytes are
    then laid side by side as the 16-bit code (low byte first, as ``_pack``'s lanes are)."""
    words = bits.view(np.uint64).reshape(2, 8, -1) << _BYTE_SHIFTS
    low, high = np.bitwise_or.reduce(words, axis=1).view(np.uint8).reshape(2, n_trees, -1)
    return np.stack([low, high], axis=-1).view(np.uint16)[..., 0]


@functools.cache
def _leaf_table(depth: int) -> np.ndarray:
    """For every 16-bit code ``_pack`` gives (heap node ``h`` sending a row left as bit ``h``, slot 15
    unused), the last-level position (0 = leftmost) a row reaches from the root of a tree of ``depth``."""
    inner = 2**depth - 1
    patterns = ((np.arange(1 << 16)[None, :] >> np.arange(16)[:, None]) & 1).astype(np.uint16)  # (slots, codes)
    codes = _pack(patterns, 1)[0]
    h = np.zeros(patterns.shape[1], dtype=np.intp)
    for _ in range(depth):
        h = 2 * h + 2 - patterns[h, np.arange(patterns.shape[1])]
    table = np.zeros(1 << 16, dtype=np.intp)
    table[codes] = h - inner
    return table


def _blank(n_trees: int, n_nodes: int) -> tuple[np.ndarray, ...]:
    """Feature, threshold, left, right and value arrays of ``n_trees`` trees of ``n_nodes`` nodes, every
    node a leaf of value 0 until filled in (a leaf's children are itself)."""
    shape = (n_trees, n_nodes)
    left = np.tile(np.arange(n_nodes, dtype=np.int32), (n_trees, 1))
    return np.zeros(shape, dtype=np.int32), np.zeros(shape), left, left.copy(), np.zeros(shape)
