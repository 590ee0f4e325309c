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
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp
from sklearn.feature_extraction.text import HashingVectorizer
from sklearn.linear_model import LogisticRegression

from airflow_sbcrawl.crawler.policies.base import NewLink, Policy


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




def make(config, rng, is_target=None) -> FocusedPolicy:
    return FocusedPolicy(seed=config.seed)
