"""Gradient-boosted trees kept as plain arrays: fitted with scikit-learn, shipped as JSON, evaluated in numpy.

A fitted ``HistGradientBoostingClassifier`` becomes four arrays per tree (the feature a node
tests, its threshold, its two children; a leaf points to itself) and the leaves' values. All trees are
padded to the same number of nodes, so that one numpy step moves every row through every tree at once:
the cost of a prediction is ``depth`` steps over a (rows x trees) array, whatever the number of trees.
Loading the JSON runs no code (never a pickle).
"""

from __future__ import annotations

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


def _blank(n_trees: int, n_nodes: int) -> tuple[np.ndarray, ...]:
    """Feature, threshold, left, right and value arrays of ``n_trees`` trees of ``n_nodes`` nodes, every
    node a leaf of value 0 until filled in (a leaf's children are itself)."""
    shape = (n_trees, n_nodes)
    left = np.tile(np.arange(n_nodes, dtype=np.int32), (n_trees, 1))
    return np.zeros(shape, dtype=np.int32), np.zeros(shape), left, left.copy(), np.zeros(shape)
