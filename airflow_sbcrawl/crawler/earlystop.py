"""Early stopping: when a crawl has stopped finding targets, end it instead of spending the budget.

``DroughtStop`` (the default) judges a crawl against its own history; ``EarlyStopping`` is the paper's rule
(§4.8), kept for the paper's variant. Both are asked once per page (``update``) and say why they stopped."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from airflow_sbcrawl.crawler.config import CrawlConfig


class EarlyStopping:
    """Every ``window`` pages the slope of the target count is folded into an exponential moving average;
    ``patience`` averages in a row below ``epsilon`` stop the crawl. The average starts at the first slope
    (starting it at zero would stop a crawl that steadily finds targets at a rate below 2·epsilon)."""

    def __init__(self, window: int = 1000, epsilon: float = 0.2, decay: float = 0.05, patience: int = 15) -> None:
        self.window = window
        self.epsilon = epsilon
        self.decay = decay
        self.patience = patience
        self.mean: float | None = None
        self.low_streak = 0
        self._last_pages = 0
        self._last_targets = 0

    def update(self, pages: int, targets: int, promising: bool = False) -> None:
        """The crawl's totals after one more page (``promising`` is not used by this rule)."""
        if pages - self._last_pages < self.window:
            return
        slope = (targets - self._last_targets) / (pages - self._last_pages)
        self._last_pages, self._last_targets = pages, targets
        self.mean = slope if self.mean is None else self.decay * slope + (1 - self.decay) * self.mean
        self.low_streak = self.low_streak + 1 if self.mean < self.epsilon else 0

    @property
    def should_stop(self) -> bool:
        """Whether the crawl should end now."""
        return self.low_streak >= self.patience

    @property
    def reason(self) -> str:
        """Why the crawl ended, for the summary."""
        return (f"early stopping: the moving average of new targets per page stayed below {self.epsilon} for "
                f"{self.patience} windows of {self.window} pages")

    def looked(self) -> bool:
        """The paper's rule stops when it says so: no last look (see DroughtStop)."""
        return True

    @property
    def should_look(self) -> bool:
        """Whether the drought is long enough for a last look (see DroughtStop)."""
        return False

    def looked_since_target(self) -> bool:
        """The paper's rule takes no look (see DroughtStop)."""
        return True

    def note_look(self) -> None:
        """The last look of this drought was taken."""

    def dryness(self) -> float:
        """How deep the crawl is in a drought, 0 to 1 (see DroughtStop): the paper's rule has no measure of
        one short of its windows, so never."""
        return 0.0

    @property
    def stale_promise(self) -> bool:
        """The paper's rule has no warm bound (see DroughtStop)."""
        return False

    def prior(self, targets: int, pages: int, drought: int = 0) -> None:
        """What the last runs found (see DroughtStop): the paper's rule judges by slopes of this run only."""

    def drought(self) -> int:
        """The paper's rule hands no drought on to the next run (see DroughtStop)."""
        return 0

    @property
    def inherited_drought(self) -> bool:
        """No drought goes on from the last run under the paper's rule (see DroughtStop)."""
        return False

    def state(self) -> dict:
        """What a checkpoint keeps of the rule (``restore`` takes it back)."""
        return {"mean": self.mean, "low_streak": self.low_streak, "last_pages": self._last_pages,
                "last_targets": self._last_targets}

    def restore(self, state: dict) -> None:
        """Take back a ``state()``."""
        self.mean = state["mean"]
        self.low_streak = state["low_streak"]
        self._last_pages = state["last_pages"]
        self._last_targets = state["last_targets"]


#: In a warm run, pages found promising without a new target extend a drought by this many windows at most.
PROMISE_WINDOWS = 10


class DroughtStop:
    """Stops after ``window`` pages in a row without progress, where the window is relative to the crawl's
    own rate so far: ``max(min_pages, expected / rate)``, ``rate`` being targets per page up to the last one.
    Progress is a new target, or a page the policy found promising (one that revealed links it rates above
    its average page: a category tree or a listing chain walked towards datasets).
    At its own average rate the crawl would have found ``expected`` targets in that many pages, so a crawl
    that still finds targets as it used to — however sparse the site — is never stopped, while a crawl
    stuck in a calendar or a faceted search stops within a few hundred pages of its last target.
    An absolute threshold cannot do both: 0.2 targets a page is a drought on a data portal and a good run
    on a site where 2 % of the URLs are datasets.

    The window is also at least ``share`` of the pages crawled up to the last progress. The average rate is
    set by the part of the site that paid first: once a rich section (a downloads list, a table tree) is
    exhausted, the datasets left may be sparse (files linked from one news article in twenty), and a
    window sized for the rich section ends the crawl with half of them never seen. A drought as long as
    half the crawl before it is evidence whatever the site's layout; a finished crawl pays for it with at
    most that share of the requests it already spent.

    Once a drought is as long as the window without that share (``should_look``), the engine takes one
    look per drought (``looked`` / ``note_look``): the best links still waiting in the parts of the site
    that paid before. A crawl that wandered into news pagers and tag archives while a leaf category's
    "page 2" waited finds its way back after a few hundred pages, not after half the crawl; one that is
    done spends a few dozen requests more.

    Promising pages renew a drought, but not for ever: once the pages since the last *target* are a rate
    window and as many as the pages up to it, the crawl ends whatever the policy finds promising, if the
    frontier does not promise ``es_expected`` targets more (``Scheduler.ends_crawl``; in a warm run, after
    ``PROMISE_WINDOWS`` windows, whatever it promises). The
    policy's promise is learnt credit, and trap pages (a calendar, a facet search) that reveal pages of
    their own kind are credited by those very links: on the tiny simulated site one crawl in three kept
    finding its calendar promising and spent its whole budget after the last dataset."""

    def __init__(self, min_pages: int = 50, expected: float = 30.0, share: float = 0.5) -> None:
        self.min_pages = min_pages
        self.expected = expected
        self.share = share
        self._last_targets = 0
        self._pages_at_last_target = 0
        self._pages_at_last_progress = 0
        self._pages = 0
        self._targets = 0
        self._looked_at: int | None = None  # the drought (by the page of its last progress) that had its last look
        self._prior = (0, 0)  # (targets, pages) of the last runs, for a warm run (``prior``)

    def looked(self) -> bool:
        return self._looked_at == self._pages_at_last_progress

    def looked_since_target(self) -> bool:
        """Whether a look was taken since the last new target (in this drought or one a promising page
        ended since)."""
        return self._looked_at is not None and self._looked_at >= self._pages_at_last_target

    def prior(self, targets: int, pages: int, drought: int = 0) -> None:
        """What the last runs of the site found (``targets`` in ``pages`` read): a warm run's rate starts
        from theirs. Without it a warm run of an unchanged site, which finds no new target, would have no
        rate to judge a drought by, and would spend its budget on the traps the last run left waiting.

        ``drought``: the pages the last run read after its last new target. This run's drought goes on from
        there (its pages count from 0, the last target was ``drought`` pages before), as if the runs were one
        crawl: the frontier it leaves is what that drought was spent on, and a warm run that finds nothing
        new in its revisits does not explore it afresh for ten windows. A new target ends it as ever."""
        self._prior = (targets, pages)
        if drought > 0 and self._pages == 0 and self._last_targets == 0:
            self._pages_at_last_target = self._pages_at_last_progress = -drought

    @property
    def inherited_drought(self) -> bool:
        """Whether this run is still in the drought the last run ended in (no new target since)."""
        return self._pages_at_last_target < 0

    def drought(self) -> int:
        """The pages read since the last new target (or, with none yet, since the one a ``prior`` drought
        counts from): what this run hands on to the next."""
        return max(0, self._pages - self._pages_at_last_target)

    def note_look(self) -> None:
        self._looked_at = self._pages_at_last_progress

    def dryness(self) -> float:
        """How deep the crawl is in a drought of new targets: 0 up to half the rate window since the last
        one (``min_pages`` while the crawl has no rate), rising to 1 at a whole window, by when a drought
        without promising pages has its last look. Pages the policy found promising do not count against
        it: a policy that ranks some links below others because the crawl would meet their pages anyway
        (``CreditedBanditPolicy``'s hubs reached around) must rank them fully again before this rule ends
        the crawl, or a drought spent elsewhere ends it with those pages never read. It starts at half a
        window so that the gaps between targets of a crawl still finding them leave the policy as it is:
        rising from the last target, it gave the hubs of the simulated dev-multilingual profile (whose other
        languages' pages hold few new targets) their bonus mid-crawl, 0.53 of the gap against 0.68 on
        main over four runs; full at half a window, it left the tiny site's first run (seed 1) with a
        frontier promising just under ``es_expected``, and the warm-run drought test's next run toured it."""
        window = self._rate_window()
        if window == sys.maxsize:
            window = self.min_pages
        return min(1.0, max(0.0, 2.0 * (self._pages - self._pages_at_last_target) / window - 1.0))

    def update(self, pages: int, targets: int, promising: bool = False) -> None:
        self._pages, self._targets = pages, targets
        if targets > self._last_targets:
            self._last_targets, self._pages_at_last_target = targets, pages
            self._pages_at_last_progress = pages
        elif promising:
            self._pages_at_last_progress = pages

    def _rate_window(self) -> int:
        prior_targets, prior_pages = self._prior
        if self._targets + prior_targets == 0:
            # No history to judge by: a site whose datasets sit behind one hard-to-find page (a download
            # page linked from a few old posts) gives nothing for thousands of pages, then everything.
            # Only the budget ends such a crawl.
            return sys.maxsize
        # A rate is measured over ``min_pages`` pages at least: a crawl whose first pages held two files
        # (tj: the home page's downloads) and then none for fifty had a "rate" of a file a page, a window of
        # fifty pages, and ended before its first indicator page with data (tj, 2 of 142 targets).
        rate = (self._targets + prior_targets) / max(max(self._pages_at_last_target, 0) + prior_pages,
                                                     self.min_pages)
        return max(self.min_pages, int(self.expected / rate))

    def window(self) -> int:
        return max(self._rate_window(), int(self.share * self._pages_at_last_progress))

    @property
    def should_look(self) -> bool:
        return self._pages - self._pages_at_last_progress >= self._rate_window()

    @property
    def should_stop(self) -> bool:
        return (self._pages - self._pages_at_last_progress >= self.window() or self.promise_spent
                or self.stale_promise)

    def _since_target_over(self, windows: int, share: float) -> bool:
        return self._pages - self._pages_at_last_target >= max(windows * self._rate_window(),
                                                               int(share * self._pages_at_last_target))

    @property
    def promise_spent(self) -> bool:
        """Whether a cold run went a rate window, and as many pages as it read up to its last target, without
        a new target: promising pages renew a drought that far at most (see the class; ``stale_promise``
        bounds a warm run)."""
        return not self._prior[0] and self._since_target_over(1, 1.0)

    @property
    def stale_promise(self) -> bool:
        """Whether a warm run went ``PROMISE_WINDOWS`` windows without a new target. Its promise is judged
        by a model the last runs taught: its templates' old credit stays above this run's average, which
        falls towards nothing when the site has nothing new, so every page of a template that once paid
        looks promising, and the links left promise what those templates gave the last runs. Such a
        drought ends the crawl whatever the frontier promises (an unchanged site's run went through its
        whole calendar)."""
        return bool(self._prior[0]) and self._since_target_over(PROMISE_WINDOWS, self.share)

    @property
    def reason(self) -> str:
        rate = self._targets / max(self._pages_at_last_target, 1)

        def last(start: int) -> str:  # the part of a drought the last run handed on (``prior``)
            return f" ({-start} of them at the end of the last run)" if start < 0 else ""

        if self._pages - self._pages_at_last_progress < self.window():
            if self.stale_promise:
                return (f"early stopping: no new target in the last {self._pages - self._pages_at_last_target} "
                        f"pages of a warm run{last(self._pages_at_last_target)}, {PROMISE_WINDOWS} times the window "
                        "of the site's rate over its runs (pages promising by the last runs' model extend a drought "
                        "that far at most)")
            return (f"early stopping: no new target in the last {self._pages - self._pages_at_last_target} "
                    f"pages, as many as the crawl read up to its last target (pages found promising since did not "
                    "lead to one)")
        return (f"early stopping: no new target and no promising page in the last "
                f"{self._pages - self._pages_at_last_progress} pages{last(self._pages_at_last_progress)}, where the "
                f"crawl's own rate ({rate:.3g} targets per page up to its last target) would have found "
                f"{self.expected:g} targets, and at least {self.share:g} of the pages crawled before")

    def state(self) -> dict:
        return {"last_targets": self._last_targets, "pages_at_last_target": self._pages_at_last_target,
                "pages_at_last_progress": self._pages_at_last_progress, "pages": self._pages,
                "targets": self._targets, "looked_at": self._looked_at, "prior": list(self._prior)}

    def restore(self, state: dict) -> None:
        self._last_targets = state["last_targets"]
        self._pages_at_last_target = state["pages_at_last_target"]
        self._pages_at_last_progress = state["pages_at_last_progress"]
        self._pages = state["pages"]
        self._targets = state["targets"]
        self._looked_at = state.get("looked_at")
        self._prior = tuple(int(n) for n in state.get("prior", (0, 0)))


def make_stopper(rule: str, config: CrawlConfig) -> EarlyStopping | DroughtStop:
    """The early-stopping rule ``rule`` ("paper" or "drought") with the config's settings."""
    if rule == "paper":
        return EarlyStopping(config.es_window, config.es_epsilon, config.es_decay, config.es_patience)
    return DroughtStop(config.es_min_pages, config.es_expected, config.es_share)
