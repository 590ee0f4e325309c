"""The policy interface the engine drives, and the new-link record it hands to policies.

A policy is a frontier that learns: ``add`` the new links of a page, ``next`` gives the link to crawl,
``feedback`` tells the policy what that page was worth, ``len`` is the frontier size, and
``state``/``arrays`` plus ``restore`` carry it through checkpoints. Links are int ids into the crawl's
``LinkTable``. A policy declares what it needs of the engine with class attributes (``classifies_links``,
``sequential``, ``extension_prior``, ``labels_by_truth``); the engine never asks for a policy by name."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np


@dataclass(slots=True)
class NewLink:
    """A link met for the first time, as the policy gets it: its id, URL, the tag path of the ``<a>``
    element, its anchor text, its depth (clicks from the start page), its ``title`` and the text of the
    row around it (``row``, without the anchor)."""

    id: int
    url: str
    tag_path: str
    anchor: str
    depth: int
    title: str = ""
    row: str = ""


class Policy:
    """The order in which a crawl visits the pages it found, learned as it goes (Algorithms 3 and 4)."""

    name = "policy"
    #: True when the engine should label new links (HEAD, classifier or oracle) and fetch targets at once.
    classifies_links = False
    #: True for a policy that learns from "the current page" (the last one handed out): the engine then
    #: hands out the next link only after the last one's feedback, whatever the fetch concurrency. Policies
    #: that key what they wait for by link id can have several pages out at once.
    sequential = True
    #: For a policy that is not ``sequential``: how many pages handed out by ``next`` may await their
    #: feedback at once (None: as many as the fetch pool has room for). A page's links reach the frontier
    #: only with its feedback, so each page out is a decision taken without the links it will reveal; the
    #: work of the pages (their files) is fetched with the pool's full concurrency either way.
    pages_at_once: int | None = None
    #: For a policy that classifies links: True when the URL classifier calls a URL with a dataset file
    #: extension a target whatever its model says; False when it learns from the crawl's labels alone.
    extension_prior = True
    #: For a policy that classifies links: True when the site's truth (``is_target``, known only for
    #: simulated sites) labels them instead of the URL classifier.
    labels_by_truth = False
    #: True when the policy reads the text of the row around each link (``NewLink.row``): the engine
    #: works it out only for such policies.
    reads_rows = False
    #: The parts of a link (``linktext.GROUPS``) whose words the policy learns from; its URL classifier
    #: reads the same ones beside the URL.
    link_groups: tuple[str, ...] = ()

    def add(self, links: Sequence[NewLink]) -> None:
        """New links of a page, into the frontier (each link is added once, ever)."""
        raise NotImplementedError

    def next(self) -> int | None:
        """Take the link to crawl next out of the frontier; None when the frontier is empty."""
        raise NotImplementedError

    def feedback(self, link_id: int, reward: float) -> None:
        """What the page of a link handed out by ``next`` was worth: the new targets its work retrieved
        (its known datasets checked, its predicted targets fetched). Every link handed out gets one
        feedback, after its page's links were ``add``-ed; a policy with ``sequential`` False may have
        several pages out at once, and gets their feedback in any order."""

    def credit_late(self, page_id: int, reward: float) -> None:
        """A link of page ``page_id`` (handed out by ``next`` and fed back earlier) turned out to be a target
        the engine did not fetch with the page (the classifier called it a page then): ``reward`` more for
        that page. Policies that do not learn from pages' rewards ignore it."""

    def outcome(self, link_id: int, kind: str) -> None:
        """What the GET of a link handed out by ``next`` found (html, target, redirect, blocked, other,
        error), before ``feedback``: a free label for policies that learn from it (FOCUSED)."""

    #: Whether ``relinked`` is wanted: the engine then notes which known links each page links again.
    counts_relinks: ClassVar[bool] = False

    def relinked(self, link_ids: list[int]) -> None:
        """Links the crawl knew already that a page just read links again (its own URL left out), for
        policies with ``counts_relinks``: how often a page's links are also found elsewhere."""

    def promising(self) -> bool:
        """Whether the page last fed back was worth more than the crawl's average page to the policy even
        without a target on it (it revealed links the policy rates highly): the crawl is on a path to
        datasets, not in a drought. Policies without such a notion say no."""
        return False

    def drought(self, dryness: float) -> None:
        """How deep the crawl is in a drought of new targets after the page last done with, from 0 (a target
        just found) to 1 (early stopping may soon end the crawl; ``DroughtStop.dryness``). Policies that
        rank links lower while the crawl is finding targets elsewhere rank them fully again as it rises."""

    def last_look(self, limit: int) -> list[int]:
        """Up to ``limit`` links taken out of the frontier, the most promising by what the policy learnt,
        crawled before early stopping ends a drought. Policies without such a notion give none."""
        return []

    def expected_targets(self) -> float:
        """How many targets the links waiting in the frontier should still lead to, judged by what links
        of their kind led to so far. Policies that cannot say give 0."""
        return 0.0

    def __len__(self) -> int:
        """Links waiting in the frontier."""
        raise NotImplementedError

    def waiting(self) -> list[int]:
        """The links waiting in the frontier, left in it: what a run that ends leaves for the next run of the
        site to explore. Policies that cannot list them give none (their next run starts from the revisits)."""
        return []

    def state(self) -> dict:
        """What the policy learned and holds, as JSON-ready values (its big tables go in ``arrays``)."""
        return {}

    def arrays(self) -> dict[str, np.ndarray]:
        """The numeric part of the policy's state (saved without pickling)."""
        return {}

    def restore(self, state: dict, arrays: dict[str, np.ndarray]) -> None:
        """Take back a ``state()`` and ``arrays()`` saved by a policy made with the same settings: from a
        checkpoint (the frontier included), or from a site memory's ``model_arrays`` (its frontier empty)."""
        raise NotImplementedError

    #: Arrays of ``arrays()`` that hold the frontier (link ids of this run's link table), each emptied
    #: ("ids") or zeroed ("counts") in ``model_arrays``. A policy that keeps its frontier elsewhere leaves
    #: it empty, and then cannot carry what it learned into the next run of the site.
    frontier_arrays: ClassVar[dict[str, str]] = {}

    @property
    def warm_startable(self) -> bool:
        """Whether what it learned can go into the site memory for the next run: only a policy that names
        its ``frontier_arrays`` can be saved without this run's frontier."""
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
