"""Actions: groups of similar tag paths, each a centroid in an HNSW cosine index (Algorithm 1)."""

from __future__ import annotations

import hnswlib
import numpy as np


class ActionIndex:
    """Maps a projected tag path to its nearest action if the cosine similarity reaches theta, else to a
    new action. Centroids are kept in a numpy array (the source of truth, saved in checkpoints) and mirrored
    in hnswlib, where an add with an existing label updates that element in place."""

    def __init__(self, dim: int, theta: float, seed: int = 0, capacity: int = 1024) -> None:
        self.dim = dim
        self.theta = theta
        self._seed = seed
        self.centroids = np.zeros((0, dim), dtype=np.float32)
        self.sizes = np.zeros(0, dtype=np.int64)  # tag paths merged into each centroid
        self._index = self._new_index(capacity)

    def _new_index(self, capacity: int) -> hnswlib.Index:
        index = hnswlib.Index(space="cosine", dim=self.dim)
        index.init_index(max_elements=capacity, ef_construction=100, M=16, random_seed=self._seed)
        index.set_ef(50)
        index.set_num_threads(1)  # per-call thread start-up costs more than it saves on single queries
        return index

    def __len__(self) -> int:
        return len(self.sizes)

    def assign(self, vector: np.ndarray, weight: int = 1) -> int:
        """Algorithm 1 for ``weight`` links sharing one tag path; returns the action id."""
        if not vector.any():
            vector = np.full(self.dim, 1.0 / self.dim, dtype=np.float32)  # cosine needs a non-zero vector
        if len(self):
            labels, distances = self._index.knn_query(vector, k=1)
            action = int(labels[0, 0])
            if 1.0 - float(distances[0, 0]) >= self.theta:
                n = self.sizes[action]
                centroid = (self.centroids[action] * n + vector * weight) / (n + weight)
                self.centroids[action] = centroid
                self.sizes[action] = n + weight
                self._index.add_items(centroid[None, :], np.array([action]))
                return action
        return self._add(vector, weight)

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
        self._index = self._new_index(max(1024, 2 * count))
        if count:
            self._index.add_items(self.centroids[:count], np.arange(count))
