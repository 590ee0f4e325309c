"""Actions: groups of similar tag paths, each a centroid in an HNSW cosine index (Algorithm 1)."""

from __future__ import annotations

import hnswlib
import numpy as np

_CANDIDATES = 4  # nearest centroids re-ranked by exact cosine against the live centroids
_CACHE_MAX = 100_000
# Below this many actions the nearest centroids are found exactly, on the tag path's non-zero dimensions
# (a few dozen of 4,096), for less than an HNSW query costs, and without the HNSW updates whose cost grew
# with the number of actions (14 ms each at 1,500 actions). 20,000 actions: about 1 ms per lookup.
EXACT_BELOW = 20_000


def _norm(vector: np.ndarray) -> np.floating:
    """The L2 norm of a 1-D vector: what np.linalg.norm computes for one (the same dot product and square
    root, to the bit), without its argument handling, which cost more than the product on a page's few
    tag paths."""
    return np.sqrt(vector.dot(vector))


class ActionIndex:
    """Maps a projected tag path to its nearest action if the cosine similarity reaches theta, else to a
    new action.

    Centroids live in a numpy array (the source of truth, saved in checkpoints). While there are fewer than
    ``exact_below`` actions, the candidates are the nearest centroids by exact cosine, computed on the
    vector's non-zero dimensions only; beyond, hnswlib indexes the centroids for the nearest-neighbour
    lookup. Updating an element in hnswlib repairs its graph neighbourhood, which cost 14 ms per update at
    1,500 actions in 4,096 dimensions — more than everything else a page costs — so an action's indexed
    vector is refreshed only when its size has doubled since the last refresh. Either way the lookup takes
    a few candidates and re-ranks them by exact cosine against the live centroids, so a slightly stale
    index changes which candidates are looked at, never the similarity that is compared with theta; the
    exact candidates are those an exact index would give, so both ways assign alike (up to ties). A tag
    path seen before is first checked against the action it joined last time (exact cosine, no lookup)."""

    def __init__(self, dim: int, theta: float, seed: int = 0, capacity: int = 1024,
                 exact_below: int = EXACT_BELOW) -> None:
        self.dim = dim
        self.theta = theta
        self._seed = seed
        self._capacity = capacity
        self.exact_below = exact_below
        self.centroids = np.zeros((0, dim), dtype=np.float32)
        self._norms = np.zeros(0, dtype=np.float32)  # L2 norm of each centroid, kept with it
        self.sizes = np.zeros(0, dtype=np.int64)  # tag paths merged into each centroid
        self._indexed_sizes = np.zeros(0, dtype=np.int64)  # sizes when each was last written to the index
        self._index: hnswlib.Index | None = None  # built once there are exact_below actions
        self._last_action: dict[str, int] = {}
        if exact_below <= 0:
            self._index = self._new_index(capacity)

    def _new_index(self, capacity: int) -> hnswlib.Index:
        index = hnswlib.Index(space="cosine", dim=self.dim)
        index.init_index(max_elements=capacity, ef_construction=100, M=16, random_seed=self._seed)
        index.set_ef(32)
        index.set_num_threads(1)  # per-call thread start-up costs more than it saves on single queries
        return index

    def _build_index(self) -> None:
        """The HNSW index of every centroid as it is now (at the switch from exact, and on restore)."""
        count = len(self)
        self._index = self._new_index(max(self._capacity, 2 * count))
        self._indexed_sizes = self.sizes.copy()
        if count:
            self._index.add_items(self.centroids[:count], np.arange(count))

    def __len__(self) -> int:
        return len(self.sizes)

    def _cosines(self, actions: np.ndarray | slice, vector: np.ndarray, vector_norm: float) -> np.ndarray:
        rows = self.centroids[actions]
        norms = self._norms[actions] * vector_norm
        return (rows @ vector) / np.maximum(norms, 1e-12)

    def _candidates(self, vector: np.ndarray, vector_norm: float) -> np.ndarray:
        """The ``_CANDIDATES`` nearest actions, nearest first."""
        k = min(_CANDIDATES, len(self))
        if self._index is not None:
            labels, _ = self._index.knn_query(vector, k=k)
            return labels[0].astype(np.int64)
        nonzero = np.flatnonzero(vector)
        n = len(self)
        dots = self.centroids[:n, nonzero] @ vector[nonzero]
        sims = dots / np.maximum(self._norms[:n] * vector_norm, 1e-12)
        if n > k:
            top = np.argpartition(-sims, k - 1)[:k]
            return top[np.argsort(-sims[top], kind="stable")]
        return np.argsort(-sims, kind="stable")

    def assign(self, vector: np.ndarray, weight: int = 1, key: str | None = None) -> int:
        """Algorithm 1 for ``weight`` links sharing one tag path (``key``); returns the action id."""
        if not vector.any():
            vector = np.full(self.dim, 1.0 / self.dim, dtype=np.float32)  # cosine needs a non-zero vector
        vector_norm = float(_norm(vector))
        if key is not None:
            last = self._last_action.get(key)
            # A one-row slice: the same product as indexing that row, without copying it.
            if last is not None and self._cosines(slice(last, last + 1), vector, vector_norm)[0] >= self.theta:
                self._merge(last, vector, weight)
                return last
        action = -1
        if len(self):
            candidates = self._candidates(vector, vector_norm)
            sims = self._cosines(candidates, vector, vector_norm)
            best = int(np.argmax(sims))
            if sims[best] >= self.theta:
                action = int(candidates[best])
                self._merge(action, vector, weight)
        if action < 0:
            action = self._add(vector, weight)
        if key is not None:
            if len(self._last_action) >= _CACHE_MAX:
                self._last_action.clear()
            self._last_action[key] = action
        return action

    def _merge(self, action: int, vector: np.ndarray, weight: int) -> None:
        n = self.sizes[action]
        self.centroids[action] = (self.centroids[action] * n + vector * weight) / (n + weight)
        self._norms[action] = _norm(self.centroids[action])
        self.sizes[action] = n + weight
        if self._index is not None and self.sizes[action] >= 2 * self._indexed_sizes[action]:
            self._index.add_items(self.centroids[action][None, :], np.array([action]))
            self._indexed_sizes[action] = self.sizes[action]

    def _add(self, vector: np.ndarray, weight: int) -> int:
        action = len(self)
        if action >= len(self.centroids):
            size = max(64, 2 * len(self.centroids))
            grown = np.zeros((size, self.dim), dtype=np.float32)
            grown[:action] = self.centroids[:action]
            self.centroids = grown
            self._norms = np.concatenate([self._norms, np.zeros(size - len(self._norms), dtype=np.float32)])
        self.centroids[action] = vector
        self._norms[action] = _norm(vector)
        self.sizes = np.append(self.sizes, weight)
        self._indexed_sizes = np.append(self._indexed_sizes, weight)
        if self._index is not None:
            if action >= self._index.get_max_elements():
                self._index.resize_index(2 * self._index.get_max_elements())
            self._index.add_items(vector[None, :], np.array([action]))
        elif len(self) >= self.exact_below:
            self._build_index()
        return action

    # -- checkpoints -----------------------------------------------------------------------------------
    def arrays(self) -> dict[str, np.ndarray]:
        return {"centroids": self.centroids[: len(self)].copy(), "sizes": self.sizes.copy()}

    def restore(self, centroids: np.ndarray, sizes: np.ndarray) -> None:
        """Take saved centroids back (the HNSW graph, when there are enough actions for one, is derived
        state and rebuilt)."""
        count = len(sizes)
        if centroids.shape != (count, self.dim):
            raise ValueError(f"centroids of shape {centroids.shape} do not fit {count} actions of dim {self.dim}")
        self.centroids = np.zeros((max(64, count), self.dim), dtype=np.float32)
        self.centroids[:count] = centroids
        self._norms = np.zeros(len(self.centroids), dtype=np.float32)
        self._norms[:count] = np.linalg.norm(self.centroids[:count], axis=1)
        self.sizes = sizes.astype(np.int64)
        self._indexed_sizes = self.sizes.copy()
        self._last_action = {}
        self._index = None
        if count >= self.exact_below or self.exact_below <= 0:
            self._build_index()
