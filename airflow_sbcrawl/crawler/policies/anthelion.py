"""Anthelion (Meusel, Mika and Blanco, "Focused crawling for structured data", CIKM 2014) adapted to
dataset retrieval, as a baseline for the benchmark.

What is Anthelion's own logic, kept (§3):
- An online classifier of links, updated after every page with the page's label: naive Bayes over URL
  tokens hashed into 10k features (tokens shorter than 3 characters dropped, numbers made one token) plus
  parent features (whether the page the link was found on was relevant).
- A bandit over groups of links (Algorithm 1): with probability ``lambda_t = lambda * m / (t + m)`` a random
  group holding links, otherwise the group with the best score; within the chosen group, the link the
  classifier rates highest (scored once, when the link is found). The score is the paper's best one, the
  "success rate" ``(good + 1) / (bad + 1)`` of the group's crawled pages, with a decaying lambda = 0.5.

Departures (also in the README):
- Groups: Anthelion's arms are hosts across the Web; we crawl one site, so an arm is a site section, the
  host plus the first path segment (``stats.example/census``), which plays the host's part inside a site.
- Targets: a page is relevant (the bandit's reward and the classifier's label) when it yielded at least one
  dataset, or was one. Like our TRES adaptation, links are labelled by the engine's URL classifier
  (``classifies_links = True``) and predicted targets are fetched at once; only predicted pages reach
  Anthelion's queues.
- Context features: the anchor's tokens join the URL's (the paper's "context" of a link; siblings, which
  hurt in the paper, are left out). A page's links are held until its label is known, as that label is
  their parent feature. ``m`` is 1000 instead of 10k, our crawls being ~1000 times shorter.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Sequence
from urllib.parse import urlsplit

import numpy as np

from airflow_sbcrawl.crawler.policies.base import NewLink, Policy
from airflow_sbcrawl.crawler.policies.online import HashedNaiveBayes, hashed, tokens

_DIM = 10_000


def section(url: str) -> str:
    """The site section a URL belongs to: its host and first directory ("" for pages at the root)."""
    parts = urlsplit(url)
    first = parts.path.lstrip("/").split("/", 1)[0]
    return f"{parts.netloc}/{first}" if "/" in parts.path.lstrip("/") else f"{parts.netloc}/"


def link_features(url: str, anchor: str, parent_relevant: bool) -> list[int]:
    words = hashed(tokens(url), _DIM, "u:") + hashed(tokens(anchor), _DIM, "a:")
    words += hashed(["relevant" if parent_relevant else "irrelevant"], _DIM, "p:")
    return sorted(set(words))


class AnthelionPolicy(Policy):
    """Anthelion adapted to dataset retrieval (see the module docstring for what is kept and what departs)."""

    name = "anthelion"
    classifies_links = True

    def __init__(self, rng: np.random.Generator, lam: float = 0.5, m: float = 1000.0) -> None:
        self._rng = rng
        self.lam, self.m = lam, m
        self.classifier = HashedNaiveBayes(_DIM)
        self._sections: list[str] = []
        self._index: dict[str, int] = {}
        self._queues: list[list[tuple[float, int, int]]] = []  # section -> heap of (-score, order, link id)
        self._good: list[int] = []
        self._bad: list[int] = []
        self._links: dict[int, tuple[str, str, bool]] = {}  # frontier link id -> url, anchor, parent relevant
        self._order = itertools.count()
        self._size = 0
        self._t = 0
        self._current: int | None = None
        self._current_info: tuple[str, str, bool] | None = None
        self._current_section = -1
        self._current_target = False
        self._held: list[NewLink] = []  # links of the page in flight, waiting for its label

    # -- frontier --------------------------------------------------------------------------------------
    def add(self, links: Sequence[NewLink]) -> None:
        if self._current is not None:
            self._held.extend(links)  # their parent feature is the label of the page in flight
            return
        for link in links:
            self._push(link.id, link.url, link.anchor, False)

    def _push(self, link_id: int, url: str, anchor: str, parent_relevant: bool, order: int | None = None) -> None:
        key = section(url)
        s = self._index.get(key)
        if s is None:
            s = self._index[key] = len(self._sections)
            self._sections.append(key)
            self._queues.append([])
            self._good.append(0)
            self._bad.append(0)
        score = self.classifier.log_odds(link_features(url, anchor, parent_relevant))
        heapq.heappush(self._queues[s], (-score, next(self._order) if order is None else order, link_id))
        self._links[link_id] = (url, anchor, parent_relevant)
        self._size += 1

    def next(self) -> int | None:
        if self._current is not None:  # no feedback came for the last page: take it as irrelevant
            self.feedback(self._current, 0.0)
        if self._size == 0:
            return None
        open_ = np.flatnonzero(np.fromiter((len(q) > 0 for q in self._queues), dtype=bool,
                                           count=len(self._queues)))
        lam_t = self.lam * self.m / (self._t + self.m)
        if self._rng.random() < lam_t:
            s = int(open_[self._rng.integers(len(open_))])
        else:
            rate = (np.asarray(self._good)[open_] + 1.0) / (np.asarray(self._bad)[open_] + 1.0)
            s = int(open_[int(np.argmax(rate))])
        _, _, link_id = heapq.heappop(self._queues[s])
        self._size -= 1
        self._t += 1
        self._current, self._current_section = link_id, s
        self._current_info = self._links.pop(link_id)
        self._current_target = False
        return link_id

    def __len__(self) -> int:
        return self._size + len(self._held)

    # -- learning --------------------------------------------------------------------------------------
    def outcome(self, link_id: int, kind: str) -> None:
        if link_id == self._current and kind == "target":
            self._current_target = True

    def feedback(self, link_id: int, reward: float) -> None:
        if link_id != self._current or self._current_info is None:
            return
        relevant = reward > 0 or self._current_target
        url, anchor, parent_relevant = self._current_info
        self.classifier.learn(link_features(url, anchor, parent_relevant), int(relevant))
        if relevant:
            self._good[self._current_section] += 1
        else:
            self._bad[self._current_section] += 1
        self._current, self._current_info = None, None
        held, self._held = self._held, []
        for link in held:
            self._push(link.id, link.url, link.anchor, relevant)

    # -- checkpoints -----------------------------------------------------------------------------------
    def state(self) -> dict:
        return {
            "t": self._t, "sections": self._sections, "good": self._good, "bad": self._bad,
            "queues": [[[score, order, link_id] for score, order, link_id in q] for q in self._queues],
            "links": [[i, u, a, p] for i, (u, a, p) in self._links.items()],
            "order": next(self._order),
            "held": [[lk.id, lk.url, lk.tag_path, lk.anchor, lk.depth] for lk in self._held],
            "current": None if self._current is None else [self._current, self._current_section,
                                                            list(self._current_info or ()), self._current_target],
        }

    def arrays(self) -> dict[str, np.ndarray]:
        return {"nb_counts": self.classifier.counts, "nb_totals": self.classifier.totals}

    def restore(self, state: dict, arrays: dict[str, np.ndarray]) -> None:
        self.__init__(self._rng, self.lam, self.m)  # type: ignore[misc]
        self._t = int(state["t"])
        self._sections = list(state["sections"])
        self._index = {key: i for i, key in enumerate(self._sections)}
        self._good = [int(x) for x in state["good"]]
        self._bad = [int(x) for x in state["bad"]]
        # heaps saved in heap order stay heaps; scores are kept as they were given (Anthelion scores once)
        self._queues = [[(float(s), int(o), int(i)) for s, o, i in q] for q in state["queues"]]
        self._links = {int(i): (u, a, bool(p)) for i, u, a, p in state["links"]}
        self._size = len(self._links)
        self._order = itertools.count(int(state["order"]))
        self._held = [NewLink(int(i), u, p, a, int(d)) for i, u, p, a, d in state["held"]]
        self.classifier.counts = arrays["nb_counts"].astype(np.float64)
        self.classifier.totals = arrays["nb_totals"].astype(np.float64)
        if state["current"] is not None:
            link_id, s, info, target = state["current"]
            self._current, self._current_section = int(link_id), int(s)
            self._current_info = (info[0], info[1], bool(info[2]))
            self._current_target = bool(target)

    def describe(self) -> dict:
        rates = [(g + 1) / (b + 1) for g, b in zip(self._good, self._bad, strict=True)]
        top = sorted(range(len(rates)), key=lambda s: -rates[s])[:10]
        return {"sections": len(self._sections), "pages": self._t,
                "top_sections": [{"section": self._sections[s], "good": self._good[s], "bad": self._bad[s]}
                                 for s in top]}


def make(config, rng, is_target=None) -> AnthelionPolicy:
    return AnthelionPolicy(rng)
