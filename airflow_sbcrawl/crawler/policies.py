"""Crawl policies behind one small interface; the engine never knows which one it drives.

Like Scrapy's scheduler: ``add`` the new links of a page, ``next`` gives the link to crawl, ``feedback``
tells the policy what that page was worth, ``len`` is the frontier size, and ``state``/``arrays`` plus
``restore`` carry it through checkpoints. Links are int ids into the engine's LinkTable."""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import groupby

import numpy as np

from airflow_sbcrawl.crawler.actions import ActionIndex
from airflow_sbcrawl.crawler.bandit import SleepingBandit
from airflow_sbcrawl.crawler.config import CrawlConfig
from airflow_sbcrawl.crawler.frontier import RandomBag
from airflow_sbcrawl.crawler.tagpath import TagPathVectorizer


@dataclass(slots=True)
class NewLink:
    id: int
    url: str
    tag_path: str
    anchor: str
    depth: int


class Policy:
    name = "policy"
    #: True when the engine should label new links (HEAD, classifier or oracle) and fetch targets at once.
    classifies_links = False

    def add(self, links: Sequence[NewLink]) -> None:
        raise NotImplementedError

    def next(self) -> int | None:
        raise NotImplementedError

    def feedback(self, link_id: int, reward: float) -> None:
        pass

    def outcome(self, link_id: int, kind: str) -> None:
        """What the GET of a link handed out by ``next`` found (html, target, redirect, blocked, other,
        error), before ``feedback``: a free label for policies that learn from it (FOCUSED)."""

    def __len__(self) -> int:
        raise NotImplementedError

    def state(self) -> dict:
        return {}

    def arrays(self) -> dict[str, np.ndarray]:
        return {}

    def restore(self, state: dict, arrays: dict[str, np.ndarray]) -> None:
        raise NotImplementedError

    def describe(self) -> dict:
        """Figures for reports: whatever the policy can say about what it learnt."""
        return {}


class FifoPolicy(Policy):
    """BFS (first in, first out) or, with ``lifo``, DFS."""

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


class SleepingBanditPolicy(Policy):
    """SB-CLASSIFIER / SB-ORACLE (§3): links grouped into actions by tag path, actions chosen by AUER,
    a uniformly random link of the chosen action crawled next."""

    classifies_links = True

    def __init__(self, config: CrawlConfig, rng: np.random.Generator, name: str = "sb-classifier") -> None:
        self.name = name
        self._rng = rng
        self.vectorizer = TagPathVectorizer(config.ngram, config.dim_log2, config.hash_width, config.hash_prime,
                                            ignore_digits=config.tagpath_ignore_digits)
        self.actions = ActionIndex(self.vectorizer.dim, config.theta, seed=config.seed)
        self.bandit = SleepingBandit(config.alpha, config.bandit_epsilon)
        self._buckets: list[RandomBag] = []
        self._sizes = np.zeros(0, dtype=np.int64)
        self._total = 0
        self._pending: dict[int, int] = {}  # link id handed out by next() -> its action
        self.examples: dict[int, str] = {}  # one tag path per action, for reports

    def add(self, links: Sequence[NewLink]) -> None:
        # Links sharing a tag path map to the same action: vectorise and query the index once per path.
        for tag_path, group in groupby(sorted(links, key=lambda link: link.tag_path), key=lambda link: link.tag_path):
            members = list(group)
            action = self.actions.assign(self.vectorizer.transform_one(tag_path), len(members), key=tag_path)
            self._ensure(action)
            self.examples.setdefault(action, tag_path)
            bucket = self._buckets[action]
            for link in members:
                bucket.add(link.id)
            self._sizes[action] += len(members)
            self._total += len(members)

    def _ensure(self, action: int) -> None:
        while len(self._buckets) <= action:
            self._buckets.append(RandomBag())
        if len(self._sizes) <= action:
            self._sizes = np.concatenate([self._sizes, np.zeros(max(64, len(self._sizes)), dtype=np.int64)])
        self.bandit.grow(len(self._buckets))

    def next(self) -> int | None:
        if self._total == 0:
            return None
        n = len(self._buckets)
        action = self.bandit.select(self._sizes[:n] > 0, self._rng)
        link_id = self._buckets[action].pop_random(self._rng)
        self._sizes[action] -= 1
        self._total -= 1
        self._pending[link_id] = action
        return link_id

    def feedback(self, link_id: int, reward: float) -> None:
        action = self._pending.pop(link_id, None)
        if action is not None:
            self.bandit.reward(action, reward)

    def __len__(self) -> int:
        return self._total

    def state(self) -> dict:
        return {"steps": self.bandit.steps, "examples": {str(k): v for k, v in self.examples.items()}}

    def arrays(self) -> dict[str, np.ndarray]:
        lengths = np.array([len(b) for b in self._buckets], dtype=np.int64)
        ids = (np.concatenate([np.frombuffer(b.items, dtype=np.int64) for b in self._buckets])
               if self._buckets else np.zeros(0, dtype=np.int64))
        return {**self.actions.arrays(), **self.bandit.arrays(), "bucket_lengths": lengths, "bucket_ids": ids}

    def restore(self, state: dict, arrays: dict[str, np.ndarray]) -> None:
        self.actions.restore(arrays["centroids"], arrays["sizes"])
        self.bandit.restore(arrays["bandit_counts"], arrays["bandit_means"], int(state["steps"]))
        lengths = arrays["bucket_lengths"]
        ids = arrays["bucket_ids"].astype(np.int64)
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        self._buckets = [RandomBag(array("q", ids[offsets[i]:offsets[i + 1]].tobytes()))
                         for i in range(len(lengths))]
        self._sizes = np.zeros(max(64, len(lengths)), dtype=np.int64)
        self._sizes[: len(lengths)] = lengths
        self._total = int(lengths.sum())
        self._pending = {}
        self.examples = {int(k): v for k, v in state.get("examples", {}).items()}

    def describe(self) -> dict:
        n = len(self._buckets)
        order = np.argsort(-self.bandit.means[:n])[:10]
        return {
            "actions": len(self.actions),
            "top_actions": [
                {"action": int(a), "mean_reward": float(self.bandit.means[a]), "pulls": int(self.bandit.counts[a]),
                 "tag_path": self.examples.get(int(a), "")}
                for a in order
            ],
        }


def make_policy(config: CrawlConfig, rng: np.random.Generator,
                is_target: Callable[[str], bool] | None = None) -> Policy:
    """The policy ``config.policy`` names; ``is_target`` is the truth, needed by TP-OFF's oracle."""
    if config.policy in ("sb-classifier", "sb-oracle"):
        return SleepingBanditPolicy(config, rng, name=config.policy)
    if config.policy in ("bfs", "dfs"):
        return FifoPolicy(lifo=config.policy == "dfs")
    if config.policy == "random":
        return RandomPolicy(rng)
    # Imported here: baselines imports this module for Policy and NewLink.
    if config.policy == "focused":
        from airflow_sbcrawl.crawler.baselines import FocusedPolicy

        return FocusedPolicy(seed=config.seed)
    if config.policy == "tp-off":
        from airflow_sbcrawl.crawler.baselines import TagPathOfflinePolicy

        if is_target is None:
            raise ValueError("policy tp-off learns from an oracle: pass is_target (known only for simulated sites)")
        return TagPathOfflinePolicy(config, is_target)
    raise ValueError(f"unknown policy {config.policy!r}")
