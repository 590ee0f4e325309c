"""Policies that learn nothing: BFS, DFS and RANDOM."""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Sequence

import numpy as np

from airflow_sbcrawl.crawler.frontier import RandomBag
from airflow_sbcrawl.crawler.policies.base import NewLink, Policy


class FifoPolicy(Policy):
    """BFS (first in, first out) or, with ``lifo``, DFS."""

    sequential = False  # learns nothing

    def __init__(self, lifo: bool = False) -> None:
        self.name = "dfs" if lifo else "bfs"
        self._lifo = lifo
        self._queue: deque[int] = deque()

    def add(self, links: Sequence[NewLink]) -> None:
        self._queue.extend(link.id for link in links)

    def next(self) -> int | None:
        if not self._queue:
            return None
        return self._queue.pop() if self._lifo else self._queue.popleft()

    def __len__(self) -> int:
        return len(self._queue)

    def arrays(self) -> dict[str, np.ndarray]:
        return {"queue": np.fromiter(self._queue, dtype=np.int64, count=len(self._queue))}

    def restore(self, state: dict, arrays: dict[str, np.ndarray]) -> None:
        self._queue = deque(int(x) for x in arrays["queue"])


class RandomPolicy(Policy):
    """The next link drawn uniformly from the frontier (the paper's RANDOM baseline)."""

    sequential = False
    name = "random"

    def __init__(self, rng: np.random.Generator) -> None:
        self._rng = rng
        self._bag = RandomBag()

    def add(self, links: Sequence[NewLink]) -> None:
        for link in links:
            self._bag.add(link.id)

    def next(self) -> int | None:
        return self._bag.pop_random(self._rng) if len(self._bag) else None

    def __len__(self) -> int:
        return len(self._bag)

    def arrays(self) -> dict[str, np.ndarray]:
        return {"bag": np.frombuffer(self._bag.items, dtype=np.int64).copy()}

    def restore(self, state: dict, arrays: dict[str, np.ndarray]) -> None:
        self._bag = RandomBag(array("q", arrays["bag"].astype(np.int64).tobytes()))


def make_bfs(config, rng, is_target=None) -> FifoPolicy:
    return FifoPolicy()


def make_dfs(config, rng, is_target=None) -> FifoPolicy:
    return FifoPolicy(lifo=True)


def make_random(config, rng, is_target=None) -> RandomPolicy:
    return RandomPolicy(rng)
