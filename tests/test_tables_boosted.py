"""The boosted trees' two evaluations (the walk down the trees, and the padded heaps with packed
comparisons) give the same raw scores to the bit."""

from __future__ import annotations

import numpy as np
import pytest

from airflow_sbcrawl.tables.boosted import BoostedTrees, _Heaps


def _fitted(classes: int, depth: int, seed: int) -> tuple[BoostedTrees, np.ndarray]:
    from sklearn.ensemble import HistGradientBoostingClassifier

    rng = np.random.default_rng(seed)
    x = rng.normal(size=(800, 6))
    x[:, 3] = rng.integers(0, 3, size=len(x))  # few distinct values: ties with thresholds, shallow leaves
    y = ((x[:, 0] + 0.5 * x[:, 1] > 0).astype(int) + (classes == 3) * (x[:, 2] > 0.5)
         + (classes == 4) * 2 * (x[:, 3] > 1))
    model = HistGradientBoostingClassifier(max_iter=25, max_depth=depth, min_samples_leaf=30, random_state=0).fit(x, y)
    return BoostedTrees.from_sklearn(model), rng.normal(size=(300, 6))


@pytest.mark.parametrize("classes", [2, 3, 4])
def test_the_heap_evaluation_gives_the_walks_raw_scores_to_the_bit(classes):
    trees, x = _fitted(classes, 4, classes)
    assert trees._heap is not None
    inner = trees.left != np.arange(trees.left.shape[1])
    assert (inner.sum(axis=1) < _Heaps.INNER).any()  # some trees with leaves above the last level
    rng = np.random.default_rng(0)
    ties = rng.integers(inner.sum(), size=200)
    x[rng.integers(len(x), size=200), trees.feature[inner][ties]] = trees.threshold[inner][ties]  # x == threshold
    x[rng.random(x.shape) < 0.05] = np.nan
    for rows in (1, 2, 3, 7, 8, 9, 33, 300):
        heap, walk = trees.raw(x[:rows]), trees._walk(x[:rows])
        assert heap.shape == walk.shape == (rows, max(classes, 2) - (classes == 2))
        assert heap.tobytes() == walk.tobytes()


def test_trees_deeper_than_the_heaps_are_walked():
    trees, x = _fitted(3, 6, 1)
    assert trees.depth > _Heaps.DEPTH and trees._heap is None
    assert trees.raw(x).tobytes() == trees._walk(x).tobytes()


def test_many_rows_go_through_in_blocks_with_the_same_scores(monkeypatch):
    # blocks of 8 rows, the last of 1 row (walked) or 4: each row's scores are those of the walk, to the bit
    trees, x = _fitted(3, 4, 2)
    monkeypatch.setattr(_Heaps, "MAX_ROWS", 8)
    calls = []
    leaf_values = _Heaps.leaf_values
    monkeypatch.setattr(_Heaps, "leaf_values", lambda self, rows: calls.append(len(rows)) or leaf_values(self, rows))
    for rows in (9, 20, 300):
        calls.clear()
        assert trees.raw(x[:rows]).tobytes() == trees._walk(x[:rows]).tobytes()
        assert max(calls) <= 8 and sum(calls) >= rows - 1  # in blocks (a last row alone is walked)
