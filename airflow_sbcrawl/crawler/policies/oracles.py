"""Baselines that need the site's ground truth, so only the benchmark uses them: TP-OFF (an oracle gives
each learning page its true benefit) and OMNISCIENT (one GET per known target, computed, not crawled)."""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np

from airflow_sbcrawl.crawler.actions import ActionIndex
from airflow_sbcrawl.crawler.config import CrawlConfig
from airflow_sbcrawl.crawler.policies.base import NewLink, Policy
from airflow_sbcrawl.crawler.tagpath import TagPathVectorizer


# ---------------------------------------------------------------------------------------------------------
# TP-OFF
# ---------------------------------------------------------------------------------------------------------
class TagPathOfflinePolicy(Policy):
    """TP-OFF [20]: BFS for the first ``learning_pages`` pages, grouping the tag paths of the followed links
    as in §3.2 and giving each page its true benefit from an oracle; then a fixed priority: links go to the
    learnt group nearest to their tag path (cosine >= theta) and groups are crawled by decreasing mean
    benefit. A tag path matching no learnt group gets benefit 0 (crawled last, not dropped, so that a crawl
    with an unlimited budget still ends with every page).

    The benefit of following a link is the number of targets it yields at once: 1 if the link is itself a
    target, plus the number of new target links on the page it reaches (the paper's "number of targets
    behind a page's links", with files counted so that download links are not left for last)."""

    name = "tp-off"
    classifies_links = False

    def __init__(self, config: CrawlConfig, is_target: Callable[[str], bool], learning_pages: int = 3000) -> None:
        self.learning_pages = learning_pages
        self._is_target = is_target
        self._config = config
        self._vectorizer = TagPathVectorizer(config.ngram, config.dim_log2, config.hash_width, config.hash_prime)
        self.groups = ActionIndex(self._vectorizer.dim, config.theta, seed=config.seed)
        self._benefit_sum: list[float] = []
        self._benefit_n: list[int] = []
        self._links: dict[int, tuple[str, str]] = {}  # frontier link id -> (url, tag path)
        self._fifo: deque[int] = deque()  # learning phase
        self._buckets: dict[int, deque[int]] = {}  # ranking phase: group (-1 = unknown) -> link ids
        self._heap: list[tuple[float, int]] = []  # (-benefit, group) of groups that may hold links
        self._in_heap: set[int] = set()
        self._frozen: np.ndarray | None = None  # unit-norm centroids of the learnt groups
        self._priority: np.ndarray | None = None
        self._group_of_path: dict[str, int] = {}
        self._pages = 0
        self._current: int | None = None
        self._current_info: tuple[str, str] | None = None
        self._current_benefit = 0

    @property
    def learning(self) -> bool:
        return self._frozen is None

    def add(self, links: Sequence[NewLink]) -> None:
        if self._current is not None and self.learning:
            self._current_benefit += sum(1 for lk in links if self._is_target(lk.url))
        for link in links:
            self._links[link.id] = (link.url, link.tag_path)
            if self.learning:
                self._fifo.append(link.id)
            else:
                self._push(link.id, link.tag_path)

    def next(self) -> int | None:
        if self.learning and self._pages >= self.learning_pages:
            self._freeze()
        link_id = self._fifo.popleft() if self.learning and self._fifo else (
            None if self.learning else self._pop())
        if link_id is None:
            return None
        self._pages += 1
        info = self._links.pop(link_id)
        if self.learning:
            self._current, self._current_info = link_id, info
            self._current_benefit = int(self._is_target(info[0]))
        return link_id

    def feedback(self, link_id: int, reward: float) -> None:
        if link_id == self._current and self._current_info is not None:
            vector = self._vectorizer.transform_one(self._current_info[1])
            group = self.groups.assign(vector)
            while len(self._benefit_sum) <= group:
                self._benefit_sum.append(0.0)
                self._benefit_n.append(0)
            self._benefit_sum[group] += self._current_benefit
            self._benefit_n[group] += 1
        self._current, self._current_info = None, None

    def __len__(self) -> int:
        return len(self._links)

    # -- ranking phase ---------------------------------------------------------------------------------
    def _freeze(self) -> None:
        n = len(self.groups)
        centroids = self.groups.centroids[:n].astype(np.float64)
        norms = np.linalg.norm(centroids, axis=1, keepdims=True)
        self._frozen = centroids / np.where(norms > 0, norms, 1.0)
        self._priority = np.array([s / c if c else 0.0 for s, c in zip(self._benefit_sum, self._benefit_n,
                                                                         strict=True)])
        pending = list(self._fifo)
        self._fifo.clear()
        for link_id in pending:  # keep the BFS order within each group
            self._push(link_id, self._links[link_id][1])

    def group_of(self, tag_path: str) -> int:
        """The learnt group a tag path belongs to, or -1 (benefit 0) when none is within theta."""
        group = self._group_of_path.get(tag_path)
        if group is None:
            assert self._frozen is not None
            group = -1
            if len(self._frozen):
                v = self._vectorizer.transform_one(tag_path).astype(np.float64)
                norm = np.linalg.norm(v)
                if norm > 0:
                    sims = self._frozen @ (v / norm)
                    best = int(np.argmax(sims))
                    if sims[best] >= self._config.theta:
                        group = best
            self._group_of_path[tag_path] = group
        return group

    def _benefit(self, group: int) -> float:
        return 0.0 if group < 0 or self._priority is None else float(self._priority[group])

    def _push(self, link_id: int, tag_path: str) -> None:
        group = self.group_of(tag_path)
        self._buckets.setdefault(group, deque()).append(link_id)
        if group not in self._in_heap:
            self._in_heap.add(group)
            # ties between equal benefits go to the older (lower-numbered) group, the unknown one last
            heapq.heappush(self._heap, (-self._benefit(group), group if group >= 0 else 1 << 62))

    def _pop(self) -> int | None:
        while self._heap:
            _, key = self._heap[0]
            group = key if key != 1 << 62 else -1
            bucket = self._buckets.get(group)
            if bucket:
                return bucket.popleft()
            heapq.heappop(self._heap)
            self._in_heap.discard(group)
        return None

    # -- checkpoints -----------------------------------------------------------------------------------
    def state(self) -> dict:
        return {
            "pages": self._pages,
            "learning_pages": self.learning_pages,
            "links": [[i, u, p] for i, (u, p) in self._links.items()],
            "fifo": list(self._fifo),
            "buckets": [[g, list(b)] for g, b in self._buckets.items()],
            "benefit_sum": self._benefit_sum,
            "benefit_n": self._benefit_n,
            "frozen": not self.learning,
        }

    def arrays(self) -> dict[str, np.ndarray]:
        return self.groups.arrays()

    def restore(self, state: dict, arrays: dict[str, np.ndarray]) -> None:
        self.__init__(self._config, self._is_target, int(state["learning_pages"]))  # type: ignore[misc]
        self.groups.restore(arrays["centroids"], arrays["sizes"])
        self._pages = int(state["pages"])
        self._benefit_sum = [float(x) for x in state["benefit_sum"]]
        self._benefit_n = [int(x) for x in state["benefit_n"]]
        self._links = {int(i): (u, p) for i, u, p in state["links"]}
        self._fifo = deque(int(i) for i in state["fifo"])
        if state["frozen"]:
            self._freeze()
            for _group, ids in state["buckets"]:
                for link_id in ids:
                    self._push(int(link_id), self._links[int(link_id)][1])

    def describe(self) -> dict:
        n = len(self._benefit_n)
        means = [s / c if c else 0.0 for s, c in zip(self._benefit_sum, self._benefit_n, strict=True)]
        order = sorted(range(n), key=lambda g: -means[g])[:10]
        return {"groups": n, "learning": self.learning, "learning_pages": self.learning_pages,
                "top_groups": [{"group": g, "mean_benefit": means[g], "pages": self._benefit_n[g]} for g in order]}


# ---------------------------------------------------------------------------------------------------------
# OMNISCIENT
# ---------------------------------------------------------------------------------------------------------
def omniscient_fetches(targets: Mapping[str, tuple[str, int]] | Iterable[tuple[str, int]]) -> list[tuple[str, int]]:
    """The fetches of the OMNISCIENT crawler: one GET per target, nothing else, as (url, size) pairs.

    It knows every target from the start, so the order does not change its request count; largest first
    would flatter its volume curve, so the site's own order is kept."""
    if isinstance(targets, Mapping):
        return [(url, int(targets[url][1])) for url in targets]
    return [(url, int(size)) for url, size in targets]


def make_tp_off(config, rng, is_target) -> TagPathOfflinePolicy:
    return TagPathOfflinePolicy(config, is_target)
