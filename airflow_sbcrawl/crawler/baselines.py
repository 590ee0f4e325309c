"""The paper's baselines (§4.3) as policies of the same engine: FOCUSED and TP-OFF, plus OMNISCIENT.

FOCUSED and TP-OFF do not classify links (``classifies_links = False``): like BFS, every link goes to the
frontier and a target is fetched when its turn comes. Both learn which page a link was found on without any
help from the engine: the engine adds a page's new links between handing out that page (``next``) and
reporting on it (``feedback``), so ``add`` attributes its links to the link last handed out.

OMNISCIENT is not a crawl: it knows every target URL from the start and fetches each once, so its harvest
is computed from the site's ground truth (``omniscient_fetches``) instead of being crawled.
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np
import scipy.sparse as sp
from sklearn.feature_extraction.text import HashingVectorizer
from sklearn.linear_model import LogisticRegression

from airflow_sbcrawl.crawler.actions import ActionIndex
from airflow_sbcrawl.crawler.config import CrawlConfig
from airflow_sbcrawl.crawler.policies import NewLink, Policy
from airflow_sbcrawl.crawler.tagpath import TagPathVectorizer


# ---------------------------------------------------------------------------------------------------------
# FOCUSED
# ---------------------------------------------------------------------------------------------------------
class LinkFeatures:
    """The classic focused-crawler features of a link (§4.3): its depth, the character 2-grams of its URL
    and of its anchor text, hashed (no vocabulary to grow or save) into one sparse row."""

    def __init__(self, n_features: int = 2**14) -> None:
        common = {"analyzer": "char", "ngram_range": (2, 2), "n_features": n_features, "alternate_sign": False,
                  "norm": "l2", "lowercase": False}
        self._url = HashingVectorizer(**common)
        self._anchor = HashingVectorizer(**{**common, "lowercase": True})

    def transform(self, urls: Sequence[str], anchors: Sequence[str], depths: Sequence[int]) -> sp.csr_matrix:
        # log1p keeps a 90-click-deep page from dwarfing the unit-norm n-gram blocks
        depth = sp.csr_matrix(np.log1p(np.asarray(depths, dtype=np.float64)).reshape(-1, 1))
        return sp.hstack([self._url.transform(urls), self._anchor.transform(anchors), depth], format="csr")


class FocusedPolicy(Policy):
    """FOCUSED: a priority queue ordered by a logistic regression's probability that a link leads to a
    target, retrained now and then on the links already crawled, whose labels cost no extra request.

    A crawled link is positive when its GET found a target, or when the page it reached linked to a link
    whose GET found a target: "leads to a target" within one click, which is what a focused crawler wants
    to rank high (a target-rich HTML page as much as a file). Until both classes have been seen, every link
    scores the same and the queue is first in, first out (BFS)."""

    name = "focused"
    classifies_links = False

    def __init__(self, seed: int = 0, min_new_labels: int = 100, retrain_share: float = 0.1) -> None:
        self._features = LinkFeatures()
        self._seed = seed
        # Retrain after max(min_new_labels, retrain_share * labels so far) new labels: a bounded share of
        # the crawl's CPU however long it runs (each fit is O(labels)).
        self._min_new = min_new_labels
        self._share = retrain_share
        self._model: LogisticRegression | None = None
        self._heap: list[tuple[float, int, int]] = []  # (-score, insertion order, link id)
        self._order = itertools.count()
        self._frontier: dict[int, tuple[str, str, int]] = {}  # link id -> (url, anchor, depth)
        self._parent: dict[int, int] = {}  # link id -> id of the page it was found on (crawled links only)
        self._current: int | None = None  # the link last handed out: new links were found on its page
        # Training set: features and label of every crawled link, by row.
        self._rows: dict[int, int] = {}
        self._urls: list[str] = []
        self._anchors: list[str] = []
        self._depths: list[int] = []
        self._labels: list[int] = []
        self._labels_at_fit = 0
        self.fits = 0

    # -- frontier --------------------------------------------------------------------------------------
    def add(self, links: Sequence[NewLink]) -> None:
        if not links:
            return
        scores = self._score([lk.url for lk in links], [lk.anchor for lk in links], [lk.depth for lk in links])
        for link, score in zip(links, scores, strict=True):
            self._frontier[link.id] = (link.url, link.anchor, link.depth)
            if self._current is not None:
                self._parent[link.id] = self._current
            heapq.heappush(self._heap, (-float(score), next(self._order), link.id))

    def next(self) -> int | None:
        while self._heap:
            _, _, link_id = heapq.heappop(self._heap)
            entry = self._frontier.pop(link_id, None)
            if entry is None:
                continue
            url, anchor, depth = entry
            self._rows[link_id] = len(self._labels)
            self._urls.append(url)
            self._anchors.append(anchor)
            self._depths.append(depth)
            self._labels.append(0)  # until its outcome or a child's says otherwise
            self._current = link_id
            return link_id
        return None

    def __len__(self) -> int:
        return len(self._frontier)

    # -- learning --------------------------------------------------------------------------------------
    def outcome(self, link_id: int, kind: str) -> None:
        if kind == "target":
            self._mark_positive(link_id)
            parent = self._parent.get(link_id)
            if parent is not None:
                self._mark_positive(parent)

    def _mark_positive(self, link_id: int) -> None:
        row = self._rows.get(link_id)
        if row is not None:
            self._labels[row] = 1

    def feedback(self, link_id: int, reward: float) -> None:
        self._parent.pop(link_id, None)  # its outcome is in: only its own children still need it as parent
        self._current = None
        if len(self._labels) - self._labels_at_fit >= max(self._min_new, int(self._share * len(self._labels))):
            self._fit()

    def _fit(self) -> None:
        self._labels_at_fit = len(self._labels)
        y = np.asarray(self._labels, dtype=np.int8)
        if y.min() == y.max():
            return  # one class only: nothing to rank by yet
        X = self._features.transform(self._urls, self._anchors, self._depths)
        # liblinear: exact, deterministic and quick on sparse rows (lbfgs is several times slower here)
        self._model = LogisticRegression(solver="liblinear", random_state=self._seed).fit(X, y)
        self.fits += 1
        self._rescore()

    def _rescore(self) -> None:
        """Reorder the whole frontier with the new model (insertion order breaks ties, as before)."""
        ids = list(self._frontier)
        if not ids:
            self._heap = []
            return
        entries = [self._frontier[i] for i in ids]
        scores = self._score([e[0] for e in entries], [e[1] for e in entries], [e[2] for e in entries])
        self._heap = [(-float(s), next(self._order), i) for i, s in zip(ids, scores, strict=True)]
        heapq.heapify(self._heap)

    def _score(self, urls: list[str], anchors: list[str], depths: list[int]) -> np.ndarray:
        if self._model is None:
            return np.zeros(len(urls))
        return self._model.predict_proba(self._features.transform(urls, anchors, depths))[:, 1]

    def score_links(self, links: Sequence[NewLink]) -> np.ndarray:
        """The model's probability for each link (for tests and reports)."""
        return self._score([lk.url for lk in links], [lk.anchor for lk in links], [lk.depth for lk in links])

    # -- checkpoints -----------------------------------------------------------------------------------
    def state(self) -> dict:
        return {
            "frontier": [[i, *v] for i, v in self._frontier.items()],
            "parent": [[k, v] for k, v in self._parent.items()],
            "crawled": [[i, self._urls[r], self._anchors[r], self._depths[r], self._labels[r]]
                        for i, r in self._rows.items()],
        }

    def restore(self, state: dict, arrays: dict[str, np.ndarray]) -> None:
        self.__init__(self._seed, self._min_new, self._share)  # type: ignore[misc]
        for link_id, url, anchor, depth, label in state["crawled"]:
            self._rows[int(link_id)] = len(self._labels)
            self._urls.append(url)
            self._anchors.append(anchor)
            self._depths.append(int(depth))
            self._labels.append(int(label))
        self._parent = {int(k): int(v) for k, v in state["parent"]}
        self._frontier = {int(i): (url, anchor, int(depth)) for i, url, anchor, depth in state["frontier"]}
        self._fit()  # the model is derived state: refit it rather than saving it
        if self._model is None:
            self._rescore()

    def describe(self) -> dict:
        return {"labels": len(self._labels), "positives": int(sum(self._labels)), "fits": self.fits}


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
