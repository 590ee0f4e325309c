"""The policy interface the engine drives, and the new-link record it hands to policies.

Like Scrapy's scheduler: ``add`` the new links of a page, ``next`` gives the link to crawl, ``feedback``
tells the policy what that page was worth, ``len`` is the frontier size, and ``state``/``arrays`` plus
``restore`` carry it through checkpoints. Links are int ids into the engine's LinkTable."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np


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
    #: True for a policy that learns from "the current page" (the last one handed out): the engine then
    #: hands out the next link only after the last one's feedback, whatever the fetch concurrency. Policies
    #: that key what they wait for by link id can have several pages out at once.
    sequential = True

    def add(self, links: Sequence[NewLink]) -> None:
        raise NotImplementedError

    def next(self) -> int | None:
        raise NotImplementedError

    def feedback(self, link_id: int, reward: float) -> None:
        pass

    def credit_late(self, page_id: int, reward: float) -> None:
        """A link of page ``page_id`` (handed out by ``next`` and fed back earlier) turned out to be a target
        the engine did not fetch with the page (the classifier called it a page then): ``reward`` more for
        that page. Policies that do not learn from pages' rewards ignore it."""

    def outcome(self, link_id: int, kind: str) -> None:
        """What the GET of a link handed out by ``next`` found (html, target, redirect, blocked, other,
        error), before ``feedback``: a free label for policies that learn from it (FOCUSED)."""

    def promising(self) -> bool:
        """Whether the page last fed back was worth more than the crawl's average page to the policy even
        without a target on it (it revealed links the policy rates highly): the crawl is on a path to
        datasets, not in a drought. Policies without such a notion say no."""
        return False

    def last_look(self, limit: int) -> list[int]:
        """Up to ``limit`` links taken out of the frontier, the most promising by what the policy learnt,
        crawled before early stopping ends a drought. Policies without such a notion give none."""
        return []

    def expected_targets(self) -> float:
        """How many targets the links waiting in the frontier should still lead to, judged by what links
        of their kind led to so far. Policies that cannot say give 0."""
        return 0.0

    def __len__(self) -> int:
        raise NotImplementedError

    def state(self) -> dict:
        return {}

    def arrays(self) -> dict[str, np.ndarray]:
        return {}

    def restore(self, state: dict, arrays: dict[str, np.ndarray]) -> None:
        raise NotImplementedError

    #: Arrays of ``arrays()`` that hold the frontier (link ids of this run's link table), each emptied
    #: ("ids") or zeroed ("counts") in ``model_arrays``. A policy that keeps its frontier elsewhere leaves
    #: it empty, and then cannot carry what it learned into the next run of the site.
    frontier_arrays: ClassVar[dict[str, str]] = {}

    @property
    def warm_startable(self) -> bool:
        return bool(self.frontier_arrays)

    def model_arrays(self) -> dict[str, np.ndarray]:
        """``arrays()`` without the frontier: what the policy learned, for the next run of the site (whose
        link table starts empty), restored with ``restore(state(), model_arrays())``."""
        out = dict(self.arrays())
        for name, kind in self.frontier_arrays.items():
            out[name] = np.zeros(0 if kind == "ids" else len(out[name]), dtype=out[name].dtype)
        return out

    def describe(self) -> dict:
        """Figures for reports: whatever the policy can say about what it learnt."""
        return {}
