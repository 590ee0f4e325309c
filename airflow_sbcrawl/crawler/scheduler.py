"""The order of a crawl's work: which link is crawled next, and when early stopping ends the crawl.

The engine asks ``next`` whenever the fetch pool has room; what it gets, in this order:

1. links *parked* by an interruption (a stop, the budget): crawled first on resume, the best last-look
   link first; the policy never hands them out again;
2. in a warm crawl, the plan's revisits and checks (``warm.plan``), which give the policy a turn every few
   links and hold it back while a listing page is out;
3. the policy's pick;
4. links *deferred* when they were found (``defer``: copies of pages in another language that have revealed
   nothing so far), handed to the policy once it has nothing else.

``ends_crawl`` is early stopping: a drought of new targets first gets one *last look* (the links the policy
rates best, parked so they go next), and ends the crawl only if it lasts and the frontier promises little.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from airflow_sbcrawl.crawler.earlystop import DroughtStop, EarlyStopping
from airflow_sbcrawl.crawler.frontier import LinkTable
from airflow_sbcrawl.crawler.policies.base import NewLink, Policy
from airflow_sbcrawl.crawler.warm.plan import RevisitPlan

# Links crawled as a drought's last look before early stopping ends the crawl.
LAST_LOOK = 30


class Scheduler:
    """Hands out links (ids into the crawl's link table) from the parked ones, the warm crawl's ``plan``
    (None in a cold crawl) and the ``policy``; ``stopper`` is the early-stopping rule, asked only when
    ``early_stopping`` is on. Saves its own state (the parked links and the stopper's)."""

    def __init__(self, policy: Policy, stopper: DroughtStop | EarlyStopping, *, early_stopping: bool,
                 es_expected: float, defer: Callable[[str], bool] | None = None) -> None:
        self.policy = policy
        self.stopper = stopper
        self.plan: RevisitPlan | None = None
        self.early_stopping = early_stopping
        self.es_expected = es_expected
        self._parked: list[int] = []
        self.defer = defer
        self._later: list[NewLink] = []  # deferred links, for the policy once it has nothing else
        self._later_ids: list[int] = []  # restored, until the link table is (``restore_later``)
        # Links of a drought's last look not sent yet (they are parked): no stop while there are some.
        # Not saved: a resumed crawl may stop before it sends them.
        self._last_look: set[int] = set()
        # Links handed out this run: a page both the plan and the policy hold (the plan files a new row that
        # another page had led the policy to) is read once. Not saved: a resumed run may read one again.
        self._handed: set[int] = set()
        self._again: int | None = None
        # What the frontier promised when early stopping ended the last run (a warm run; None otherwise).
        self.prior_promise: float | None = None

    def next(self, in_flight: int) -> int | None:
        """The link to crawl next, or None when there is none now (``in_flight`` requests are out: the plan
        may wait for a listing page among them)."""
        if self._parked:
            link_id = self._parked.pop()
            self._last_look.discard(link_id)
            self._handed.add(link_id)
            return link_id
        link_id = self.plan.next(len(self.policy) > 0, in_flight) if self.plan is not None else None
        if link_id is None and self._later and not len(self.policy):
            self.policy.add(self._later)
            self._later = []
        if link_id is None:
            link_id = self.policy.next()
        if link_id is not None:
            self._again = link_id if link_id in self._handed else None
            self._handed.add(link_id)
        return link_id

    def handed_before(self, link_id: int) -> bool:
        """Whether ``link_id``, just handed out by ``next``, was handed out earlier in this run (and not
        parked since): asking it again would read the same page twice."""
        return self._again == link_id

    def park(self, link_id: int) -> None:
        """A link taken but not crawled (an interruption): it goes first, now or on resume."""
        self._handed.discard(link_id)
        self._parked.append(link_id)

    def unpark(self, link_id: int | None) -> None:
        """Forget a parked link (the start page of a crawl that starts over)."""
        self._parked = [i for i in self._parked if i != link_id]

    def waiting(self) -> list[int]:
        """The links left to crawl: parked, held back by the plan, in the policy's frontier."""
        held = self.plan.held() if self.plan is not None else []
        return list(dict.fromkeys([*reversed(self._parked), *held, *self.policy.waiting()]))

    def claim(self, pages: Sequence[NewLink]) -> list[NewLink]:
        """New page links a page led to: the warm crawl's plan keeps those it visits itself (and those it
        holds back until it is done); returns the others, for the policy once the page's reward is known."""
        return self.plan.claim(pages) if self.plan is not None else list(pages)

    def add(self, links: Sequence[NewLink]) -> None:
        """A page's new links, for the policy (those to defer once it has nothing else)."""
        if self.defer is not None and links:
            later = [link for link in links if self.defer(link.url)]
            if later:
                self._later.extend(later)
                links = [link for link in links if link not in later]
        self.policy.add(links)

    def page_done(self, pages: int, targets: int, listed: bool = False) -> None:
        """One more page done with: the early-stopping rule's tally. A page a sitemap ``listed`` (not a link
        the crawl followed) is no step on a path towards datasets: what it revealed is not progress."""
        self.stopper.update(pages, targets, self.policy.promising() and not listed)
        self.policy.drought(self.stopper.dryness())

    def ends_crawl(self) -> bool:
        """Whether early stopping ends the crawl now. A drought gets one look first, as soon as it is long
        for the crawl's rate: the links the policy rates best among those left are crawled. It ends the
        crawl only once it is also long against the whole crawl, and if the frontier does not promise
        ``es_expected`` targets more by what links of its kinds gave so far: the crawl's history is
        dominated by the section that paid first, while thousands of news articles waiting, of which one
        in fifty listed files, still hold datasets."""
        if not self.early_stopping or self._last_look:
            return False  # a look's links are still to be sent
        if self.plan is not None and not self.plan.over:
            # The warm crawl's revisits and checks settle what the site holds: never cut short. A drought
            # (counted from the start: an unchanged site's revisits find nothing new) ends the crawl after.
            return False
        if self.stopper.stale_promise:
            return True  # a warm run's drought that the last runs' model kept calling promising
        # A drought that promising pages kept short of a rate window ends when the pages since the last
        # target outnumber those before it (``promise_spent``): it gets its look first too, one per target,
        # or the crawl ends with what the policy ranks best unread (the tiny site's last five datasets, met
        # first in a facet search, waited among its links).
        if ((self.stopper.should_look and not self.stopper.looked())
                or (self.stopper.should_stop and not self.stopper.looked_since_target())):
            self.stopper.note_look()
            links = self.policy.last_look(LAST_LOOK)
            self._last_look = set(links)
            self._parked.extend(reversed(links))  # the best first
            if links:
                return False
        if not self.stopper.should_stop:
            return False
        return self.policy.expected_targets() < self._promise_wanted()

    def inherit_stop(self, promise: float | None) -> None:
        """A warm run starts where early stopping ended the last run, its frontier then promising ``promise``
        targets (None: the last run did not end so). The drought goes on (``DroughtStop.prior``) and has had
        its one last look: the same links looked at again would be a tour of the old frontier."""
        self.prior_promise = promise
        if promise is not None and self.stopper.inherited_drought:
            self.stopper.note_look()

    def _promise_wanted(self) -> float:
        """The targets the links left must promise for a drought to go on: ``es_expected``, and in a warm run
        still in the drought the last run ended in, one more than that run's frontier promised when it
        stopped. The same links judged again by the same model come out a little above or below the line
        (a tiny site's facet pages: 30.0 at the last run's stop, then 45 of them crawled by the next); only
        what the revisits taught (new links, pages that paid) reopens them."""
        if self.prior_promise is None or not self.stopper.inherited_drought:
            return self.es_expected
        return max(self.es_expected, self.prior_promise + 1.0)

    def end_reason(self) -> str:
        """Why early stopping ended the crawl (after ``ends_crawl`` said so)."""
        waiting = self.policy.expected_targets()
        return self.stopper.reason + (f"; the links left promise {waiting:.1f} targets" if waiting else "")

    # -- checkpoints -----------------------------------------------------------------------------------
    def state(self) -> dict:
        """The parked links and the early-stopping rule's state (the plan and the policy save their own)."""
        return {"parked": self._parked, "early_stopping": self.stopper.state(), "prior_promise": self.prior_promise}

    def arrays(self) -> dict[str, np.ndarray]:
        """The deferred links' ids (their URLs, depths and tag paths are in the link table)."""
        return {"later": np.array([link.id for link in self._later], dtype=np.int64)} if self._later else {}

    def restore(self, state: dict, arrays: dict[str, np.ndarray]) -> None:
        self._parked = [int(x) for x in state["parked"]]
        self.stopper.restore(state["early_stopping"])
        self.prior_promise = state.get("prior_promise")
        self._later_ids = [int(x) for x in arrays.get("later", [])]

    def restore_later(self, links: LinkTable) -> None:
        """After ``restore``: the deferred links back from the link table (restored by then)."""
        self._later = [NewLink(i, links.urls[i], links.tag_path(i), "", links.depth[i])
                       for i in self._later_ids]
        self._later_ids = []
