"""The warm crawl's plan: what it revisits and checks of what the last runs knew, in one priority order.

Every link the plan holds sits in one tier of ``Tier``; ``next`` hands out the first link of the best tier:
in the revisit tier the page whose reading would settle the most (its *gain*, see ``_gain``), nearest the
start on a tie; in the other tiers the first filed. ``_rank`` is the one place that says where a link
stands now: links only move down (a revisit whose gain fell to nothing is a leaf; a check that a page
vouched for goes last) or drop out (handed out, or answered already). To change the order, change
``Tier`` or ``_rank``; what files links is what the crawl meets: ``seed`` (the memory's pages, datasets and
feeds), ``page_read`` (a page's rows: changed, new or gone), ``claim`` (new links placed like known ones)
and ``_follow`` (the next page of a listing that showed new rows).

Revisits and checks take at most ``RECRAWL_SHARE`` of the request budget (``allowance``), and every
``POLICY_EVERY`` of them the policy takes a turn on the new links found so far. New pages (``Tier.NEW``)
are exploration: they go first and are not counted. While a listing page is out (handed out, not read
yet), only urgent links and other listing pages go: its rows may vouch for the pages and files behind them
(the rows of a long catalogue shift from page to page as datasets are added, so which ones a page shows
is not known before it is read), and a request spent on one of those now would be a request wasted.
Links the last runs met already are held back from the policy (``claim``) until the plan is done.

Checks in proportion to change. What the memory says is unchanged (the revisits by gain, the checks of
datasets nothing vouched for, the leaves, the datasets checked "to be sure", the listings whose rows led
to no datasets, the links the last runs read already) is not asked item by item: a sample is, the best
first, sized by the change rate the site has shown (``change_rate``: its last runs and what this run saw so
far of the known pages and datasets), and a sample that finds changes raises the rate and so widens the
check. What the pages showed as new or changed
(``Tier.NEW`` to ``Tier.UNLISTED``) is always asked. What is left unasked is *estimated* unchanged;
``settled`` says how much was verified.
"""

from __future__ import annotations

import heapq
import logging
import math
from collections.abc import Callable, Iterator, Sequence
from enum import IntEnum

import numpy as np

from airflow_sbcrawl.crawler.classify import TARGET
from airflow_sbcrawl.crawler.frontier import LinkTable
from airflow_sbcrawl.crawler.memory import SiteMemory, url_key
from airflow_sbcrawl.crawler.policies.base import NewLink
from airflow_sbcrawl.crawler.warm.changes import Changes
from airflow_sbcrawl.crawler.warm.contexts import PageLinks
from airflow_sbcrawl.crawler.warm.known import MemoryIndex, add_pages, later_page
from airflow_sbcrawl.crawler.warm.observations import Observations

log = logging.getLogger(__name__)

#: Share of the request budget that revisits and checks may take; the rest explores for what is unknown.
RECRAWL_SHARE = 0.6
#: The policy takes one turn on new links after this many revisits or checks.
POLICY_EVERY = 6
_FEEDS = frozenset({"application/rss+xml", "application/atom+xml"})
#: The sample of what is checked "to be sure" is at least this many links...
MIN_SAMPLE = 12
#: ... and this many times the share the change rate predicts changed (all of them from 1 / WIDEN up).
WIDEN = 10


class Tier(IntEnum):
    """The plan's order, best first."""

    #: New rows of a listing and new pages placed like the links that led to datasets: visited before the
    #: policy's picks, outside the allowance (they explore).
    NEW = 0
    #: What is new or changed, as the pages show it: known feeds (they change whenever the site publishes),
    #: known pages in a row that changed with a date past the site's clock at the last run, and the next
    #: page of a listing that showed new rows (new items push the rows before them on).
    URGENT = 1
    #: Known pages by gain: a greedy cover of the known pages and datasets by the pages that described them.
    REVISIT = 2
    #: Known pages whose row changed without a newer date (a file removed, a text edited): nothing new or
    #: updated to find there soon.
    EDITED = 3
    #: Known datasets a page listed last time and lists no more (moved or removed), unless seen elsewhere.
    UNLISTED = 4
    #: Conditional checks of the known datasets nothing vouched for; those with a validator first (a 304).
    CHECK = 5
    #: Known pages whose links all were settled, the best-scored first.
    LEAF = 6
    #: Known datasets a page vouched for (a row as it was): checked last, to be sure.
    VOUCHED = 7
    #: Known listing pages whose rows led to no datasets last time (``MemoryIndex.barren``: a catalogue's
    #: facet pages): revisited last of all, as far as the sample goes.
    BARREN = 8


#: The tiers of what the memory says is unchanged: verified by a sample sized by the change rate.
_SAMPLED = frozenset({Tier.REVISIT, Tier.CHECK, Tier.LEAF, Tier.VOUCHED, Tier.BARREN})


class RevisitPlan:
    """The revisits and checks of a warm crawl. It is given the memory as link ids (``index``), the run's
    ``changes`` (what was answered) and ``observations`` (which links pages showed), and ``release``,
    which takes the links held back from the policy when the plan is done."""

    def __init__(self, index: MemoryIndex, changes: Changes, observations: Observations, allowance: int,
                 release: Callable[[list[NewLink]], None]) -> None:
        self.index = index
        self.links = index.links
        self.changes = changes
        self.observations = observations
        self.allowance = allowance
        self._release_to = release
        self.spent = 0  # revisits and checks handed out
        self._turns = 0  # turns taken, the policy's included
        self._heap: list[tuple[int, int, int, int]] = []  # (tier, -gain, depth or order of filing, link)
        self._filed = 0
        self._done: set[int] = set()  # links handed out (checks of a page's files included)
        self._covered: set[int] = set()  # known pages and datasets seen linked (or answered) this run
        self._reading: set[int] = set()  # listing pages (and new pages) handed out, not read yet
        self._by_page: dict[str, list[int]] = {}  # page URL -> known datasets first found there
        self._held: list[NewLink] = []  # links the last runs met, held back from the policy (``claim``)
        self._deferred: list[NewLink] = []  # the frontier the last runs left (``defer``)
        self._moves: list[NewLink] = []  # files that look moved, checked after the revisits (``moved_file``)
        self._next_page: dict[int, int] = {}  # listing page read -> its next page (``_pass_on``)
        self._new_rows: dict[int, set[str]] = {}  # listing page read -> links in rows the last runs never met
        # (listing page, its next page, the rows it showed no more): credited to the next page once, though a
        # page whose work a resume cut short is read again
        self._moved: list[tuple[int, int, list[int]]] = []
        # What this run saw of the known part of the site: items compared with the memory, and those changed.
        self._compared = self._changed = 0
        self._sure_total = -1  # links to check "to be sure" when that part began (-1: not yet)
        self._sure_spent = 0  # of those, handed out
        self._held_released = 0  # links of ``_held`` released to the policy so far
        self.over = False  # the revisits and checks are over (the allowance spent, or nothing left to ask)
        self._known_status = (0, 0, 0)  # (len(changes.status) when counted, known answered, known changed)
        self._claimed: set[int] = set()  # known pages settled by a sitemap's lastmod only (``_on_claim``)

    @classmethod
    def seeded(cls, memory: SiteMemory, links: LinkTable, changes: Changes, observations: Observations,
               allowance: int, release: Callable[[list[NewLink]], None], start_url: str) -> RevisitPlan:
        """The plan of a warm start: the memory's pages and datasets join the link table, and are filed."""
        add_pages(memory, links)
        changes.seed()
        plan = cls(MemoryIndex(memory, links, changes.known), changes, observations, allowance, release)
        plan.seed(links.ids.get(start_url))
        return plan

    @classmethod
    def for_run(cls, memory: SiteMemory, state: dict | None, links: LinkTable, changes: Changes,
                observations: Observations, allowance: int, release: Callable[[list[NewLink]], None],
                start_url: str) -> RevisitPlan:
        """A warm run's plan: restored from its checkpointed ``state`` (a resume), else ``seeded``."""
        if state is None:
            plan = cls.seeded(memory, links, changes, observations, allowance, release, start_url)
            log.info("warm start from the memory of run %s: %d datasets, %d pages", memory.run_id,
                     len(changes.known), len(memory.pages))
            return plan
        plan = cls(MemoryIndex(memory, links, changes.known), changes, observations, allowance, release)
        plan.restore(state, {})
        return plan

    def filed(self, tier: Tier) -> list[int]:
        """The links filed in a tier, in their order (those handed out or answered since included)."""
        return [entry[3] for entry in sorted(self._heap) if entry[0] == tier]

    # -- the order -------------------------------------------------------------------------------------
    def _rank(self, tier: Tier, link: int) -> tuple[Tier, int] | None:
        """Where a link filed in ``tier`` stands now: its tier and gain, or None when nothing is left to do
        for it."""
        if link in self._done:
            return None
        if tier is Tier.REVISIT:
            if link in self.index.barren:
                # Its rows led to no datasets last time: it settles nothing worth its request (on deep-sitemap
                # seed 1, 324 facet pages answering 304 were revisited as leaves before the last tenth of
                # the new and changed files).
                return Tier.BARREN, 0
            gain = self._gain(link)
            head = self.index.head_of.get(link)
            if (gain > 1 and head is not None and head not in self._done and head not in self.index.barren
                    and (ahead := self._gain(head)) > 2):
                # A listing's later page waits for its head (it ranks no higher): new items are published at
                # the head and push the rows on, and a head that shows new rows sends its next page in turn
                # (``_follow``), credited with the rows it no longer shows; a later page read first, by its
                # own gain, reads rows that shift on after (small-sitemap seed 2, one request at a time: the
                # publications' pages 4 to 10 revisited before their head, whose new rows sent the rest).
                gain = min(gain, ahead - 1)
            return (Tier.REVISIT, gain) if gain else (Tier.LEAF, 0)
        if link in self.index.known and self.changes.answered(link):
            return None
        if tier is Tier.UNLISTED and self.links.urls[link] in self.observations.contexts:
            return None  # listed on another page this run: checked with the other known files
        if tier is Tier.CHECK and link in self._covered:
            # A file without validators is compared by its listing's row: a row as it was settles it (asking
            # it again would download it whole).
            return (Tier.VOUCHED, self._on_claim(link)) if self.index.known[link].has_validator else None
        if tier is Tier.VOUCHED:
            return tier, self._on_claim(link)
        return tier, 0

    def _on_claim(self, link: int) -> int:
        """1 for a known file that only a sitemap's ``<lastmod>`` vouched for (its page's, ``page_vouched``),
        0 for one a server's answer vouched for (a row as it was on a page read, a 304). Of the files
        checked "to be sure", those with 1 go first: a sitemap plugin misses changes (on deep-sitemap a fifth
        of the lastmods are stale), a page read as it was does not, and a file that changed behind a stale
        lastmod was found only at the end of the checks (deep-sitemap seed 1, one request at a time: the
        last tenth of the new and changed files after ~770 checks answering 304)."""
        return int(any(page in self._claimed for page in self.index.described_by.get(link, ())))

    def _gain(self, page: int) -> int:
        """What reading a page would settle: the known datasets it links and the known pages it describes
        that nothing settled yet, and the datasets of those pages (a catalogue row described as before
        vouches for the dataset page's files). A page's bare links (pagers, facets) count for nothing."""
        covered, listing, described, known = self._covered, self.index.listing, self.index.described, self.index.known
        gain = 0
        for item in listing.get(page, ()):
            if item in covered:
                continue
            if (page, item) in described:
                gain += 1 + sum(sub in known and sub not in covered for sub in listing.get(item, ()))
            else:
                gain += item in known
        return gain

    def _file(self, tier: Tier, gain: int, link: int) -> None:
        order = self.links.depth[link] if tier is Tier.REVISIT else self._filed
        self._filed += 1
        heapq.heappush(self._heap, (tier, -gain, order, link))

    def _first(self, last: Tier) -> tuple[Tier, int, int] | None:
        """The first link of the tiers up to ``last`` (tier, gain, link), left in place; links that moved
        down or dropped out on the way are filed anew or let go."""
        heap = self._heap
        while heap and heap[0][0] <= last:
            tier, neg_gain, _, link = heap[0]
            now = self._rank(Tier(tier), link)
            if now == (tier, -neg_gain):
                return Tier(tier), -neg_gain, link
            heapq.heappop(heap)
            if now is not None:
                self._file(*now, link)
        return None

    def next(self, policy_has_links: bool, in_flight: int = 0) -> int | None:
        """The next revisit or check; None when it is the policy's turn, when what is left waits for the
        listing pages being read (``in_flight`` requests are out), or when the plan is done."""
        if not in_flight:
            self._reading.clear()  # nothing is out: a listing page handed out failed or was read
        if self._first(Tier.NEW) is not None:
            link = heapq.heappop(self._heap)[3]
            self._done.add(link)
            self._reading.add(link)
            return link
        if self.spent >= self.allowance:
            self.over = True
            self._release()
            return None
        self._turns += 1
        waiting = bool(self._reading)
        first = self._first(Tier.REVISIT if waiting else Tier.BARREN)
        if policy_has_links and self._turns % (POLICY_EVERY + 1) == 0 and (first is None or first[0] in _SAMPLED):
            # The policy's turn, unless what the pages showed as changed is still to ask: that is the known
            # change, a link the policy picks is a guess (small-sitemap, one request at a time: 3 / 10 / 9 of
            # its picks before the 90 % point on seeds 0 / 1 / 2, news items and previews answering 500).
            return None
        if first is None:
            if not waiting:
                self.over = True
                self._release()
            return None
        tier, gain, link = first
        if waiting and tier is Tier.REVISIT and link not in self.index.lists:
            return None
        if tier in _SAMPLED:
            if self._sure_total < 0:
                self._sure_total = len({entry[3] for entry in self._heap
                                        if entry[0] in _SAMPLED and entry[3] not in self._done})
            if self._sure_spent >= self._quota(self._sure_total):
                self.over = True
                self._release()  # the rest is estimated unchanged, unless the rate rises
                return None
            self._sure_spent += 1
        heapq.heappop(self._heap)
        if tier is Tier.REVISIT and gain == 1:
            single = [i for i in self.index.listing.get(link, ()) if i not in self._covered]
            if single[0] in self.index.known and self.index.known[single[0]].has_validator:
                # One file to learn about: its conditional GET says as much as the page, for one request
                # where the page takes two when the file changed.
                self._covered.add(single[0])
                self._file(Tier.LEAF, 0, link)
                link = single[0]
        self._done.add(link)
        self.spent += 1
        if link in self.index.lists:
            self._reading.add(link)
        return link

    def held(self) -> list[int]:
        """The new pages not handed out yet, and the links held back from the policy that the last runs did
        not read (those they read, and the files they asked, are estimated unchanged)."""
        new = [entry[3] for entry in self._heap if entry[0] == Tier.NEW and entry[3] not in self._done]
        moves = [link.id for link in self._moves if link.id not in self._done]
        return [*new, *moves, *(link.id for link in self._deferred),
                *(link.id for link in self._held if url_key(link.url) not in self.index.read
                  and self.links.predicted[link.id] != TARGET)]

    def defer(self, links: list[NewLink]) -> None:
        """The frontier the last runs left: explored once the revisits and checks are over, after what is
        new (an old frontier of a site's calendar must not take the turns that new links would)."""
        self._deferred.extend(links)

    def _release(self) -> None:
        """The links held back go to the policy: the revisits and checks are over. The last runs' frontier
        all of it; of the links they met again, as many as the change rate calls for (those the last runs
        read led to no dataset): more as it rises."""
        moves, self._moves = [link for link in self._moves if link.id not in self._done], []
        if moves:  # not asked before the allowance ran out: the policy's now
            self._release_to(moves)
        if self._deferred:
            out, self._deferred = self._deferred, []
            self._release_to(out)
        if not self._held:
            return
        wanted = self._quota(self._held_released + len(self._held)) - self._held_released
        if wanted > 0:
            out, self._held = self._held[:wanted], self._held[wanted:]
            self._held_released += len(out)
            self._release_to(out)

    # -- how much to check -----------------------------------------------------------------------------
    def change_rate(self) -> float:
        """The share of the known pages and datasets that changed, as the last runs (``history``) and this
        run so far saw them: a row read differently, a new row in a listing, a known file changed or gone,
        over those compared. With no evidence it is 1/2 (everything is checked)."""
        compared, changed = self.tally()
        for old_compared, old_changed in self.index.memory.history:
            compared += old_compared
            changed += old_changed
        return (changed + 0.5) / (compared + 1)

    def tally(self) -> tuple[int, int]:
        """(known items compared, changed) this run: kept in the next memory's history."""
        status = self.changes.status
        if self._known_status[0] != len(status):
            known = self.index.memory.datasets
            answered = [s for url, s in status.items() if url in known]
            self._known_status = (len(status), len(answered), sum(s in ("changed", "gone") for s in answered))
        return self._compared + self._known_status[1], self._changed + self._known_status[2]

    def _quota(self, total: int) -> int:
        """How many of ``total`` links to check "to be sure", at the change rate now."""
        return min(total, max(MIN_SAMPLE, math.ceil(total * min(1.0, WIDEN * self.change_rate()))))

    def settled(self) -> dict[str, int]:
        """How the known datasets were settled: ``verified`` by a request, ``vouched`` for by a page as it
        was, ``estimated`` unchanged by the change rate (neither); the ``requests`` the revisits and checks
        took, and the ``change_rate`` that sized them."""
        ids, status = self.links.ids, self.changes.status
        verified = vouched = 0
        for url in self.index.memory.datasets:
            if url in status:
                verified += 1
            elif ids.get(url) in self._covered:
                vouched += 1
        return {"verified": verified, "vouched": vouched,
                "estimated": len(self.index.memory.datasets) - verified - vouched, "requests": self.spent,
                "change_rate": round(self.change_rate(), 4)}

    # -- what the crawl meets --------------------------------------------------------------------------
    def seed(self, start_id: int | None) -> None:
        """File the memory's pages and datasets: every page that linked known items for a revisit, the
        others as leaves, every known dataset for a check, and feeds first."""
        index, known = self.index, self.index.known
        for link_id, dataset in known.items():
            self._by_page.setdefault(dataset.found_on, []).append(link_id)
        for page in index.listing:
            if page != start_id:
                self._file(Tier.REVISIT, self._gain(page), page)
        for page in sorted(index.memory.pages.values(), key=lambda p: -p.score):
            link_id = self.links.ids[page.url]
            if link_id not in index.listing and link_id != start_id:
                self._file(Tier.LEAF, 0, link_id)
        # Known datasets with a validator are cheap to check (a 304); the others cost a download.
        checks = sorted(known, key=lambda i: not known[i].has_validator)
        for link_id in checks:
            self._file(Tier.CHECK, 0, link_id)
        # A feed lists what the site published last: it changed if anything was published since. No page
        # tells of that (it is linked barely), so it is checked first.
        for link_id in checks:
            if known[link_id].mime.split(";")[0].strip() in _FEEDS:
                self._file(Tier.URGENT, 0, link_id)

    def page_read(self, url: str, page: PageLinks) -> list[int]:
        """A page was read (a 200) and showed its links so: file the known pages it shows in a new
        context; returns the known datasets to check before its links are followed (those in a new
        context, and those it listed last time but no more)."""
        contexts, described, dates = page
        index, known, ids = self.index, self.index.known, self.links.ids
        checks = []
        revisits: set[int] = set()
        page_id = ids.get(url)
        self._reading.discard(page_id)
        if page_id is not None:
            self._claimed.discard(page_id)
            self._cover(page_id, vouched=False)
        # Every context on a page never seen is new: it tells of a change only on pages like those that
        # described known items (a catalogue page the last run did not reach, not a news article).
        telling = page_id is not None and (page_id in index.pages or index.placed_like_productive(page_id))
        read_before = url_key(url) in index.read
        for link, hashes in contexts.items():
            link_id = ids.get(link)
            if link_id is None or not (link_id in known or link_id in index.pages):
                continue
            before = index.contexts(link_id)
            if before and index.was_described(link_id):
                changed = not hashes <= before
                # Evidence of the site's change rate only where the row can be compared with this page's own
                # row last time: a page read before the link was known kept no context of it (a false change
                # every few pages of an unchanged site; still a reason to look, below)
                comparable = index.listed_by(link_id, url)
            elif link in described and index.clock and dates.get(link):
                # Never described before (known from menus and sidebars only): the dates its row shows
                # against the newest Last-Modified the last run saw on the site tell whether it changed since.
                changed = dates[link] > index.clock
                comparable = True
            else:
                continue  # nothing to compare with
            if telling and read_before and comparable:  # (a page never read shows every link in a new context)
                self._compared += 1
                self._changed += changed
            if changed and telling:
                self._cover(link_id, vouched=False)  # in a new context: checked or revisited below
            elif not changed and link in described:
                # A row as it was vouches for the page it leads to as a 304 would, unless that page lists
                # other pages: a hub's row of a catalogue (its name, its count) reads the same when datasets
                # in it were updated, and the catalogue's rows are where that shows.
                self._cover(link_id, vouched=link_id not in index.lists)
            if link_id in self._done or not changed or not telling:
                continue
            if link_id in known:
                checks.append(link_id)
            elif link_id in index.pages:
                dated = link in described and index.clock and dates.get(link, "")
                if dated and dated <= index.clock:
                    self._file(Tier.EDITED, 0, link_id)
                    revisits.add(link_id)
                elif (only := index.only_file(link_id)) is not None:
                    # One known file behind the row: its conditional GET says what changed in one request,
                    # where the page and then the file take two. The page (a file added?) waits.
                    if only not in self._done:
                        self._covered.add(only)
                        checks.append(only)
                    self._file(Tier.EDITED, 0, link_id)
                else:
                    self._file(Tier.URGENT, 0, link_id)
                    revisits.add(link_id)
        if page_id is not None and telling:
            self._pass_on(page_id, contexts, described)
            if page_id in index.lists:  # its rows never met: new items, claimed when their links are read
                rows = {link for link in described if url_key(link) not in index.seen
                        and ids.get(link) not in index.pages and ids.get(link) not in known}
                met = [i for link in rows if (i := ids.get(link)) is not None and i not in self._done
                       and self.links.predicted[i] != TARGET]  # a page's files are its own work's
                self._compared += len(rows)
                self._changed += len(rows)
                if met:  # or now, if another page led to them first (a "featured" block on the home page)
                    for link_id in met:
                        self._file(Tier.NEW, 0, link_id)
                    self._follow(page_id)
                self._new_rows[page_id] = rows
        # Known files the page listed last time and no more: moved or removed, or just listed elsewhere now
        # (a catalogue's rows shift as datasets are added). Checked after the revisits, unless seen again.
        for link_id in self._by_page.pop(url, ()):
            if self.links.urls[link_id] not in contexts:
                self._file(Tier.UNLISTED, 0, link_id)
        # A file this page shows in a new context that a page revisited for the same reason describes too (a
        # catalogue row's "last modified" moved on: the dataset page says which of its files): that page
        # tells which files to check, one request for all of them.
        checks = [i for i in dict.fromkeys(checks) if not self.changes.answered(i)
                  and not any(page in revisits for page in index.described_by.get(i, ()))]
        checks = checks[: max(0, self.allowance - self.spent)]
        self._done.update(checks)
        self.spent += len(checks)
        return checks

    def page_unchanged(self, url: str) -> None:
        """A page answered its conditional GET with 304: it is as it was, and vouches for what it described."""
        if (link_id := self.links.ids.get(url)) is not None:
            self._reading.discard(link_id)
            self._cover(link_id, vouched=True)
            self._compared += 1

    def page_vouched(self, url: str) -> bool:
        """A known page its sitemap's ``<lastmod>`` says is as it was (``sitemaps.apply_lastmod``): settled
        as a 304 settles it, without the request; returns whether it was. A listing (a page that described
        other known pages) is not: sitemaps are sometimes stale, and a stale lastmod on a catalogue page
        hides its new rows, where the new datasets appear (on deep-sitemap, a fifth of the lastmods stale,
        a warm run then took 0.73 of a cold run's requests to 90 % of what changed, and missed a tenth of the
        new datasets). It stays with the revisits, where a 304 settles it for one request."""
        link_id = self.links.ids.get(url)
        if link_id is None or link_id in self.index.lists:
            return False
        self._done.add(link_id)
        self.page_unchanged(url)
        self._claimed.add(link_id)
        return True

    def asked_before(self, link: NewLink) -> bool:
        """A link to a file that the last runs met already on a page they read: new to this run's link
        table, so neither a known dataset nor a link they left unfetched (both join the table at the start);
        they asked it with that page's work and no dataset came of it (a broken link: a dataset page's
        "previous version" that answers 404 every week). It is held back like a page they met (``claim``):
        asked once the revisits and checks are over, as many of those as the change rate calls for, instead
        of with the work of the page that shows it, ahead of the new and changed files. Returns whether it
        was held so. (A page whose links a run's end left unread is not among those read: its files are new.)"""
        parent = self.links.parent[link.id]
        if (url_key(link.url) not in self.index.seen or parent < 0
                or url_key(self.links.urls[parent]) not in self.index.read):
            return False
        self._held.append(link)
        return True

    def moved_file(self, link: NewLink) -> bool:
        """A new link to a file that looks like a known file moved (it has the file name of exactly one known
        dataset not answered yet, whose URL no page read this run showed): its conditional GET, most likely a
        304, waits with the edited pages, after the revisits (``Tier.EDITED``), instead of going with the
        work of the page that showed it; a move changes nothing to fetch, and asking it first delays the new
        and changed files. A new file that only shares the name is fetched all the same, later. Returns
        whether the link was filed so; those not asked when the revisits end go to the policy."""
        old = self.changes.moved_from(link.id)
        if old is None or self.links.urls[old] in self.observations.contexts:
            return False
        self._file(Tier.EDITED, 0, link.id)
        self._moves.append(link)
        return True

    def claim(self, pages: Sequence[NewLink]) -> list[NewLink]:
        """New links a page led to that sit where links to pages listing datasets sat, or in a row of a
        listing never met before (a new row in a catalogue, a new item of the news) that the last runs did
        not read: visited before the policy's picks. Links the last runs met already (and that led to no
        dataset) wait until the revisits and checks are done. Returns the others, for the policy."""
        rest = []
        for link in pages:
            key = url_key(link.url)
            parent = self.links.parent[link.id]
            new_row = link.url in self._new_rows.get(parent, ())
            if key not in self.index.read and (new_row or self.index.placed_like_productive(link.id, link.tag_path)):
                self._file(Tier.NEW, 0, link.id)
                # New items are published at a listing's head and push the rows before them on, so its next
                # page shows new items too (or those this page no longer shows): it is revisited right away.
                # A listing is followed from its head for as long as it shows new rows.
                self._follow(parent)
            elif key in self.index.seen:
                self._held.append(link)
            else:
                rest.append(link)
        return rest

    def _follow(self, page: int) -> None:
        """A listing page showed a new row: its next page is revisited right away (see ``claim``)."""
        nxt = self._next_page.pop(page, None)
        if nxt is not None and nxt not in self._done:
            self._file(Tier.URGENT, 0, nxt)

    def _pass_on(self, page_id: int, contexts: dict[str, set[str]], described: set[str]) -> None:
        """Where a listing's rows went: its next page, the known listing page it links barely, still to
        revisit, that is a later page of the same listing (``later_page``), the nearest one ("next", not
        "last"). What the page described last time and shows no more moved on to that page (a catalogue's
        rows shift as datasets are added): it gets their credit in the revisit order."""
        index, url = self.index, self.links.urls[page_id]
        bare = list(self._bare_links(contexts, described))
        heirs = [(number, i) for link, i in bare if i in index.lists and (number := later_page(url, link)) is not None]
        if not heirs and page_id in index.lists:  # (its next page may be one the last runs never read)
            heirs = self._unread_heirs(url, contexts, described)
        if not heirs:
            # No later page: the nearest listing of listings it links barely (the start page's menu link to a
            # data portal whose rows are the catalogues) is where its new rows show whose catalogues changed:
            # followed as a next page is, not credited with the rows this page no longer shows (they did not
            # go there). Without it the catalogues waited for the revisits by gain, after the publications
            # (deep seed 0, one request at a time: 1,028 -> 1,098 requests to 90 %).
            depth = self.links.depth
            hubs = [(depth[i], i) for _, i in bare if i in index.hubs and depth[i] > depth[page_id]]
            if hubs:
                self._next_page[page_id] = min(hubs)[1]
            return
        heir = min(heirs)[1]
        self._next_page[page_id] = heir
        urls = self.links.urls
        gone = [i for i in index.listing.get(page_id, ()) if i not in self._covered and urls[i] not in contexts
                and (page_id, i) in index.described]
        if gone and all(page != page_id for page, _, _ in self._moved):
            self._moved.append((page_id, heir, gone))
            self._credit(heir, gone)
            self._file(Tier.REVISIT, self._gain(heir), heir)

    def _bare_links(self, contexts: dict[str, set[str]], described: set[str]) -> Iterator[tuple[str, int]]:
        """The links a page showed bare (not as a row it describes) to known URLs not yet revisited, as
        (URL, id), in the page's order."""
        ids = self.links.ids
        for link in contexts:
            if link not in described and (i := ids.get(link)) is not None and i not in self._done:
                yield link, i

    def _unread_heirs(self, url: str, contexts: dict[str, set[str]], described: set[str]) -> list[tuple[int, int]]:
        """A listing page's later pages (``later_page``) among its bare links that the last runs met and
        never read (its next page, when their budget or their order left it: in the link table from the
        memory's frontier), with their numbers. Without them a listing whose first page shows new rows
        stops there, and the rows pushed on to the page the last runs did not read wait for the policy,
        after the plan (deep-sitemap seed 1: a catalogue's second page, never read in the cold run, held
        the last tenth of the new datasets, found after ~5,000 requests of facet pages)."""
        index, out = self.index, []
        for link, i in self._bare_links(contexts, described):
            if (i in index.pages or i in index.known or self.links.predicted[i] == TARGET
                    or (number := later_page(url, link)) is None):
                continue
            key = url_key(link)
            if key in index.seen and key not in index.read:
                out.append((number, i))
        return out

    def _credit(self, heir: int, rows: list[int]) -> None:
        self.index.listing[heir] = [*self.index.listing.get(heir, ()), *rows]
        self.index.described.update((heir, i) for i in rows)

    def _cover(self, link_id: int, vouched: bool) -> None:
        """A known page or dataset needs no revisit for its own sake: it was read, or seen in a new context
        (then it is revisited or checked right away); ``vouched``: it is as it was (described as before, or
        a 304), which vouches for what it described last time too."""
        self._covered.add(link_id)
        if vouched:
            self._claimed.discard(link_id)  # a server's word, not only a sitemap's (``_on_claim``)
            listing = self.index.listing
            for item in listing.get(link_id, ()):
                self._covered.add(item)
                if (link_id, item) in self.index.described:  # a row as it was vouches for the page's files
                    self._claimed.discard(item)
                    self._covered.update(i for i in listing.get(item, ()) if i in self.index.known)

    # -- checkpoints -----------------------------------------------------------------------------------
    def state(self) -> dict:
        """Everything but the listing pages out (``_reading``): a checkpoint is taken with nothing in flight."""
        return {
            "spent": self.spent, "turns": self._turns, "heap": [list(entry) for entry in self._heap],
            "filed": self._filed, "done": sorted(self._done), "covered": sorted(self._covered),
            "by_page": self._by_page, "paths": sorted(self.index.paths),
            "held": [[k.id, k.url, k.tag_path, k.anchor, k.depth] for k in self._held],
            "deferred": [[k.id, k.url, k.tag_path, k.anchor, k.depth] for k in self._deferred],
            "moves": [[k.id, k.url, k.tag_path, k.anchor, k.depth] for k in self._moves],
            "next_page": {str(k): v for k, v in self._next_page.items()},
            "new_rows": {str(k): sorted(v) for k, v in self._new_rows.items()},
            "moved": [[page, heir, rows] for page, heir, rows in self._moved],
            "evidence": [self._compared, self._changed], "sure": [self._sure_total, self._sure_spent],
            "held_released": self._held_released, "claimed": sorted(self._claimed),
        }

    def arrays(self) -> dict[str, np.ndarray]:
        return {}

    def restore(self, state: dict, arrays: dict[str, np.ndarray]) -> None:
        self.spent, self._turns, self._filed = int(state["spent"]), int(state["turns"]), int(state["filed"])
        self._heap = [(int(t), int(g), int(o), int(i)) for t, g, o, i in state["heap"]]
        heapq.heapify(self._heap)
        self._done, self._covered = set(state["done"]), set(state["covered"])
        self._reading = set()
        self._by_page = {k: list(v) for k, v in state["by_page"].items()}
        self.index.paths = set(state["paths"])  # those of the memory the run started from
        self._held = [NewLink(int(i), url, tag_path, anchor, int(depth))
                      for i, url, tag_path, anchor, depth in state["held"]]
        self._moves = [NewLink(int(i), url, tag_path, anchor, int(depth))
                       for i, url, tag_path, anchor, depth in state.get("moves", ())]
        self._deferred = [NewLink(int(i), url, tag_path, anchor, int(depth))
                          for i, url, tag_path, anchor, depth in state.get("deferred", ())]
        self._next_page = {int(k): int(v) for k, v in state["next_page"].items()}
        self._new_rows = {int(k): set(v) for k, v in state["new_rows"].items()}
        self._moved = [(int(page), int(heir), [int(i) for i in rows]) for page, heir, rows in state["moved"]]
        for _, heir, rows in self._moved:
            self._credit(heir, rows)
        # (checkpoints from before the checks in proportion to change: no evidence, nothing sampled yet)
        self._compared, self._changed = (int(x) for x in state.get("evidence", (0, 0)))
        self._sure_total, self._sure_spent = (int(x) for x in state.get("sure", (-1, 0)))
        self._held_released = int(state.get("held_released", 0))
        self._claimed = {int(i) for i in state.get("claimed", ())}  # (none in checkpoints from before)


def state_from_v1(old: dict) -> dict:
    """The plan's state from a checkpoint written before issue 22 (eight queues, not one order); what it
    did not keep (the listings' next pages, the rows credited along them) starts empty."""
    queues = [(Tier.NEW, old["claimed"]), (Tier.URGENT, [*old["urgent"], *old.get("hubs", ())]),
              (Tier.EDITED, old.get("edited", ())), (Tier.UNLISTED, old["unlisted"]), (Tier.CHECK, old["checks"]),
              (Tier.LEAF, old["leaves"]), (Tier.VOUCHED, old.get("vouched", ()))]
    heap = [[tier, 0, order, int(link)] for order, (tier, link) in enumerate(
        (tier, link) for tier, links in queues for link in links)]
    heap += [[Tier.REVISIT, int(gain), int(depth), int(link)] for gain, depth, link in old.get("revisits", ())]
    return {"spent": old["spent"], "turns": old["handed"], "heap": heap, "filed": len(heap), "done": old["done"],
            "covered": old.get("covered", []), "by_page": old["by_page"], "paths": old["paths"],
            "held": old.get("stale", []), "next_page": {}, "new_rows": {}, "moved": []}
