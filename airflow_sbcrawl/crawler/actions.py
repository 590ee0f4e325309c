"""Actions: groups of similar tag paths, each a centroid in an HNSW cosine index (Algorithm 1)."""

from __future__ import annotations

import hnswlib
import numpy as np

_CANDIDATES = 4  # nearest indexed centroids re-ranked by exact cosine against the live centroids
_CACHE_MAX = 100_000


class ActionIndex:
    """Maps a projected tag path to its nearest action if the cosine similarity reaches theta, else to a
    new action.

    Centroids live in a numpy array (the source of truth, saved in checkpoints); hnswlib indexes them for
    the nearest-neighbour lookup. Updating an element in hnswlib repairs its graph neighbourhood, which
    cost 14 ms per update at 1,500 actions in 4,096 dimensions — more than everything else a page costs —
    so an action's indexed vector is refreshed only when its size has doubled since the last refresh.
    The lookup takes a few candidates from the index and re-ranks them by exact cosine against the live
    centroids, so a slightly stale index changes which candidates are looked at, never the similarity
    that is compared with theta. A tag path seen before is first checked against the action it joined
    last time (exact cosine, no index lookup)."""

    def __init__(self, dim: int, theta: float, seed: int = 0, capacity: int = 1024) -> None:
        self.dim = dim
        self.theta = theta
        self._seed = seed
        self.centroids = np.zeros((0, dim), dtype=np.float32)
        self.sizes = np.zeros(0, dtype=np.int64)  # tag paths merged into each centroid
        self._indexed_sizes = np.zeros(0, dtype=np.int64)  # sizes when each was last written to the index
        self._index = self._new_index(capacity)
        self._last_action: dict[str, int] = {}

    def _new_index(self, capacity: int) -> hnswlib.Index:
        index = hnswlib.Index(space="cosine", dim=self.dim)
        index.init_index(max_elements=capacity, ef_construction=100, M=16, random_seed=self._seed)
        index.set_ef(32)
        index.set_num_threads(1)  # per-call thread start-up costs more than it saves on single queries
        return index

    def __len__(self) -> int:
        return len(self.sizes)

    def _cosines(self, actions: np.ndarray, vector: np.ndarray) -> np.ndarray:
        rows = self.centroids[actions]
        norms = np.linalg.norm(rows, axis=1) * float(np.linalg.norm(vector))
        return (rows @ vector) / np.maximum(norms, 1e-12)

    def assign(self, vector: np.ndarray, weight: int = 1, key: str | None = None) -> int:
        """Algorithm 1 for ``weight`` links sharing one tag path (``key``); returns the action id."""
        if not vector.any():
            vector = np.full(self.dim, 1.0 / self.dim, dtype=np.float32)  # cosine needs a non-zero vector
        if key is not None:
            last = self._last_action.get(key)
            if last is not None and self._cosines(np.array([last]), vector)[0] >= self.theta:
                self._merge(last, vector, weight)
                return last
        action = -1
        if len(self):
            labels, _ = self._index.knn_query(vector, k=min(_CANDIDATES, len(self)))
            candidates = labels[0].astype(np.int64)
            sims = self._cosines(candidates, vector)
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
        self.sizes[action] = n + weight
        if self.sizes[action] >= 2 * self._indexed_sizes[action]:
            self._index.add_items(self.centroids[action][None, :], np.array([action]))
            self._indexed_sizes[action] = self.sizes[action]

    def _add(self, vector: np.ndarray, weight: int) -> int:
        action = len(self)
        if action >= self._index.get_max_elements():
            self._index.resize_index(2 * self._index.get_max_elements())
        if action >= len(self.centroids):
            grown = np.zeros((max(64, 2 * len(self.centroids)), self.dim), dtype=np.float32)
            grown[:action] = self.centroids[:action]
            self.centroids = grown
        self.centroids[action] = vector
        self.sizes = np.append(self.sizes, weight)
        self._indexed_sizes = np.append(self._indexed_sizes, weight)
        self._index.add_items(vector[None, :], np.array([action]))
        return action

    # -- checkpoints -----------------------------------------------------------------------------------
    def arrays(self) -> dict[str, np.ndarray]:
        return {"centroids": self.centroids[: len(self)].copy(), "sizes": self.sizes.copy()}

    def restore(self, centroids: np.ndarray, sizes: np.ndarray) -> None:
        """Rebuild the index from saved centroids (the HNSW graph itself is derived state)."""
        count = len(sizes)
        if centroids.shape != (count, self.dim):
            raise ValueError(f"centroids of shape {centroids.shape} do not fit {count} actions of dim {self.dim}")
        self.centroids = np.zeros((max(64, count), self.dim), dtype=np.float32)
        self.centroids[:count] = centroids
        self.sizes = sizes.astype(np.int64)
        self._indexed_sizes = self.sizes.copy()
        self._last_action = {}
        self._index = self._new_index(max(1024, 2 * count))
        if count:
            self._index.add_items(self.centroids[:count], np.arange(count))
