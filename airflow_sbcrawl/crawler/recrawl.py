"""Incremental recrawl: what a crawl does differently when it starts from a site memory.

A warm crawl knows the datasets of the last run (with their validators), the pages that led to them or
*described* them (a link in a context that says more than the link: a catalogue row with its date, a file
row; not a menu, pager or sidebar of bare titles), hashes of those contexts, and the keys of every URL the
last runs met. It then spends its requests in this order:

0. **What is new**: known feeds (RSS, Atom) are checked first, as they change whenever the site publishes.
   Rows of a listing (a page that described known pages) that the last runs never met are new items: their
   pages are visited before anything else, and so is the listing's next page (the nearest page it links
   that lies farther from the start), since items are published at a listing's head and push the rows
   before them on: a listing is followed from its head for as long as it shows new rows.
1. **What changed, as the pages show it**: a known page or dataset shown in a context the memory does not
   know (a catalogue row whose "last modified" moved on) is revisited or checked right away; a file whose
   page is revisited for the same reason waits for that page, which says which of its files changed (a
   page with one known file: that file is checked instead, and the page waits). A row the memory never
   saw described is judged by its dates against the site's clock at the last run (the newest
   Last-Modified it saw); a row that changed with no date past that clock (a file removed, a text edited)
   shows nothing new or updated, and its page waits until after the revisits. Known files a page listed
   last time and lists no more are checked too (moved or removed). Checks are conditional GETs
   (If-None-Match / If-Modified-Since; a 304 is one request and no body), done before the page's new
   links, so a file that moved is recognised at its old URL by its validators.
2. **Revisits, most unsettled first**: a greedy cover of the known pages and datasets by the pages that
   described them: the page whose rows would settle the most (a catalogue page: its rows' dataset pages
   and their files) comes next. A row as it was, or a 304, vouches for what it describes. Rows a page no
   longer shows (shifted as datasets were added) credit its next page. While a listing page is being
   read, only listing pages and rows that changed go: its rows may vouch for what the other revisits and
   checks would ask (which rows a shifted page shows is not known before it is read), so those wait.
3. **The rest, to be sure**: the pages whose rows changed without a newer date, conditional checks of the
   datasets nothing vouched for (those whose server gives no validator last, as they cost a download),
   then the pages whose links all were settled, then the datasets that were vouched for.
4. **Exploration** by the policy, restored with its learned model, of the links that are new: unread
   links placed like those to pages that described datasets (a new catalogue row) go first; links the
   last runs met already wait until the revisits and checks are done.

Revisits and checks take at most ``RECRAWL_SHARE`` of the request budget; every few of them the policy
takes a turn on the new links found so far. Each known dataset ends the run ``new``, ``changed``,
``unchanged`` or ``gone`` (404/410); those not reached within the share stay as they were in the memory.
"""

from __future__ import annotations

import email.utils
import hashlib
import heapq
import logging
import re
from collections import Counter, deque
from datetime import UTC, datetime
from typing import TYPE_CHECKING, NamedTuple

import lxml.etree
import lxml.html
import numpy as np

from airflow_sbcrawl.crawler.classify import TARGET
from airflow_sbcrawl.crawler.memory import KnownDataset, KnownPage, SiteMemory, url_key
from airflow_sbcrawl.crawler.policies.base import NewLink
from airflow_sbcrawl.crawler.urls import resolve

if TYPE_CHECKING:
    from airflow_sbcrawl.crawler.engine import Crawler
    from airflow_sbcrawl.crawler.fetch import Response
    from airflow_sbcrawl.crawler.policies import Policy

log = logging.getLogger(__name__)

STATUSES = ("new", "changed", "unchanged", "gone")
#: Share of the request budget that revisits and checks may take; the rest explores for what is unknown.
RECRAWL_SHARE = 0.6
# The policy takes one turn on new links after this many revisits or checks.
_POLICY_EVERY = 6
# Contexts of a link kept per known page or dataset (the places it is listed, over the last runs).
_MAX_CONTEXTS = 8
# Pages remembered per known page or dataset as the ones that link it.
_MAX_LISTERS = 4
# The element whose text and links are a link's context: the outermost item of a list around it (a
# catalogue row, not the file badge inside it), else the smallest element that says more than the link.
# List items, table rows and definitions are items by their markup; an article only among articles (a
# page's one main article holds every file of a dataset: a context that wide makes one updated file look
# like all of them changed).
_ITEMS = frozenset({"li", "tr", "dd"})
# A new link placed as at least this many known pages were (a new row of a catalogue) is visited early.
_PATH_SUPPORT = 2
_ID = re.compile(r"#[^ .]*|\d+")
# Settings the learned model depends on: another value and the model is learned afresh.
MODEL_KEYS = ("policy", "ngram", "dim_log2", "hash_width", "hash_prime", "theta", "tagpath_ignore_digits",
              "batch_size")
_GONE = (404, 410)
_FEEDS = frozenset({"application/rss+xml", "application/atom+xml"})
_WAIT = -1  # from the revisit order: the next revisit waits for the listing pages being read
_NO_PAGE = KnownPage(url="")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class PageLinks(NamedTuple):
    contexts: dict[str, set[str]]  # link URL -> hashes of its contexts
    described: set[str]  # links in a context that says more than the link itself
    dates: dict[str, str]  # link URL -> the newest date (ISO) its contexts show, if any


_MONTHS = {m: i for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov",
                                       "dec"), 1)}
_ISO_DATE = re.compile(r"\b((?:19|20)\d\d)-(\d\d)-(\d\d)\b")
_DAY_MONTH = re.compile(r"\b(\d{1,2}) ([A-Za-z]{3})[a-z]*\.? ((?:19|20)\d\d)\b")
_MONTH_DAY = re.compile(r"\b([A-Za-z]{3})[a-z]*\.? (\d{1,2}),? ((?:19|20)\d\d)\b")


def newest_date(text: str) -> str:
    """The newest date written in a text (2025-05-12, 12 May 2025, May 12, 2025) as ISO, or ""."""
    found = [f"{y}-{m}-{d}" for y, m, d in _ISO_DATE.findall(text)]
    for day, month, year in _DAY_MONTH.findall(text):
        if (m := _MONTHS.get(month.lower())) and 1 <= int(day) <= 31:
            found.append(f"{year}-{m:02d}-{int(day):02d}")
    for month, day, year in _MONTH_DAY.findall(text):
        if (m := _MONTHS.get(month.lower())) and 1 <= int(day) <= 31:
            found.append(f"{year}-{m:02d}-{int(day):02d}")
    return max(found, default="")


def link_contexts(body: bytes, page_url: str, encoding: str | None = None, max_links: int = 10_000) -> PageLinks:
    """Link URL → hashes of its contexts on the page: the text and link targets of the list item, table
    row or article around it (a catalogue row with its date and file links), else of its parent element;
    and the links the page *describes*: in a context that says more than the link's own text (a row with a
    date, a teaser), unlike a menu or a sidebar of bare titles, which shows nothing of a change.
    Also the newest date each link's contexts show (a row's "last modified"). Only the first ``max_links``
    links are read, as for link extraction; each element's text length is measured once, so a page of many
    links under one parent costs linear, not quadratic, time."""
    if not body.strip():
        return PageLinks({}, set(), {})
    try:
        root = lxml.html.document_fromstring(body, parser=lxml.html.HTMLParser(encoding=encoding, recover=True,
                                                                              no_network=True))
    except (lxml.etree.ParserError, ValueError, LookupError, lxml.etree.XMLSyntaxError):
        return PageLinks({}, set(), {})
    hashes: dict[lxml.etree._Element, str] = {}
    lengths: dict[lxml.etree._Element, int] = {}

    def text_length(element: lxml.etree._Element) -> int:
        n = lengths.get(element)
        if n is None:
            n = lengths[element] = len(element.text_content().strip())
        return n

    items: dict[lxml.etree._Element, bool] = {}

    def is_item(element: lxml.etree._Element) -> bool:  # one of several of its tag under its parent
        known = items.get(element)
        if known is None:
            parent = element.getparent()
            known = items[element] = parent is not None and len(parent.findall(element.tag)) > 1
        return known

    out: dict[str, set[str]] = {}
    described: set[str] = set()
    dates: dict[str, str] = {}
    box_dates: dict[lxml.etree._Element, str] = {}
    for i, el in enumerate(root.iter("a")):
        if i >= max_links:
            break
        href = el.get("href")
        url = resolve(page_url, href) if href else None
        if url is None:
            continue
        own = text_length(el)
        box = None
        for anc in el.iterancestors():
            if anc.tag in _ITEMS or (anc.tag == "article" and is_item(anc)):
                box = anc
        if box is None:  # the smallest element around the link that says more than the link itself
            box = el
            while box.getparent() is not None and text_length(box) <= own:
                box = box.getparent()
        h = hashes.get(box)
        if h is None:
            text = " ".join(box.text_content().split())
            targets = " ".join(sorted(a.get("href", "") for a in box.iter("a")))
            h = hashes[box] = hashlib.blake2b(f"{text}\n{targets}".encode(), digest_size=6).hexdigest()
            box_dates[box] = newest_date(text)
        out.setdefault(url, set()).add(h)
        if text_length(box) > own:
            described.add(url)
            if box_dates[box] > dates.get(url, ""):
                dates[url] = box_dates[box]
    return PageLinks(out, described, dates)


class Recrawl:
    """The memory side of one crawl: seeds a warm start, orders revisits and checks, answers which
    validators to send, classifies what the known datasets turned out to be, and builds the memory the
    run leaves behind."""

    def __init__(self, memory: SiteMemory | None, max_requests: int, share: float = RECRAWL_SHARE,
                 previous: SiteMemory | None = None, max_links: int = 10_000) -> None:
        self.memory = memory  # None: a cold crawl (it still leaves a memory behind)
        # What the memory this run leaves builds on: the warm start's, or the one a cold run ignored.
        self.previous = memory if memory is not None else previous
        self.allowance = int(share * max_requests)
        self.max_links = max_links  # links read per page for their contexts, as for link extraction
        self.spent = 0  # revisits and checks handed out
        self.known: dict[int, KnownDataset] = {}  # link id -> what the memory knows of that dataset
        self.status: dict[str, str] = {}  # dataset URL (as the memory names it) -> status this run
        self.page_validators: dict[str, tuple[str, str]] = {}
        self.unchanged_pages: set[str] = set()
        self.contexts: dict[str, set[str]] = {}  # link URL -> contexts seen this run
        self.listers: dict[str, list[str]] = {}  # link URL -> pages that linked it this run
        self._known_sha: set[str] = set()
        self._by_page: dict[str, list[int]] = {}  # page URL -> known datasets first found there
        self._memory_pages: set[int] = set()
        self._urgent: deque[int] = deque()
        self._edited: deque[int] = deque()  # pages whose rows changed with no newer date: after the revisits
        self._claimed: deque[int] = deque()
        self._unlisted: deque[int] = deque()
        self._paths: set[str] = set()
        # Pages to revisit, most uncovered known links first (see ``_next_revisit``): (-links, depth, id).
        self._revisits: list[tuple[int, int, int]] = []
        self._listing: dict[int, list[int]] = {}  # memory page -> the known pages and datasets it linked
        self._described: set[tuple[int, int]] = set()  # (page, item) of those the page described
        self._described_by: dict[int, list[int]] = {}  # item -> the pages that described it
        self._lists: set[int] = set()  # memory pages that described other pages (catalogues, listings)
        self._describers_kept = True
        self._clock = ""  # the site's newest Last-Modified (ISO date) the last run saw
        self._covered: set[int] = set()  # known pages and datasets seen linked (or answered) this run
        self._leaves: deque[int] = deque()
        self._checks: deque[int] = deque()
        self._vouched: deque[int] = deque()  # checks of datasets a page vouched for, deferred
        self._done: set[int] = set()
        self._by_name: dict[str, list[int]] = {}  # file name -> known datasets of that name
        self._borrowed: dict[int, int] = {}  # new link id -> the known dataset whose validators it was sent
        self._handed = 0
        self._links = None
        self._policy: Policy | None = None
        self._seen: set[int] = set()  # keys of the URLs the last runs met
        self._read: set[int] = set()  # and of the pages they read
        self._stale: list[NewLink] = []  # links to some of those, held back from the policy (``claim``)
        self._next_page: dict[int, int] = {}  # listing page read -> its next page (``_pass_on``)
        self._new_rows: dict[int, set[str]] = {}  # listing page read -> links in rows the last runs never met
        self._reading: set[int] = set()  # listing pages (and claimed pages) handed out, not read yet

    @property
    def warm(self) -> bool:
        return self.memory is not None

    # -- start -----------------------------------------------------------------------------------------
    def seed(self, crawler: Crawler) -> None:
        """Put the memory's pages and datasets into the crawl's link table and queue their revisits."""
        self._links, self._policy = crawler.links, crawler.policy
        if self.memory is None:
            return
        mem, links = self.memory, crawler.links
        self._seen, self._read = set(mem.seen_urls.tolist()), set(mem.read_urls.tolist())
        self._restore_model(crawler)
        for page in sorted(mem.pages.values(), key=lambda p: p.depth):  # parents before children
            if page.url not in links:
                links.add(page.url, page.depth, links.ids.get(page.parent, -1), page.tag_path or None)
        for d in mem.datasets.values():
            if d.url in links:
                continue
            link_id = links.add(d.url, d.depth, links.ids.get(d.found_on, -1), d.tag_path or None)
            self.known[link_id] = d
            self._by_page.setdefault(d.found_on, []).append(link_id)
            self._known_sha.add(d.sha256)
            for name in {_basename(d.url), _basename(d.final_url), d.filename} - {""}:
                self._by_name.setdefault(name, []).append(link_id)
        self._memory_pages = {links.ids[url] for url in mem.pages}
        self._paths = _productive_paths(mem)
        self._listing, self._described = _listing(mem, links.ids)
        self._described_by = _inverse(self._described)
        self._describers_kept = _describers_kept(mem)
        self._clock = _site_clock(mem)
        start = links.ids.get(crawler.config.start_url)
        self._lists = {page for page, item in self._described if item in self._memory_pages}
        self._revisits = [(-self._gain(page), links.depth[page], page) for page in self._listing if page != start]
        heapq.heapify(self._revisits)
        self._leaves = deque(links.ids[p.url] for p in sorted(mem.pages.values(), key=lambda p: -p.score)
                             if links.ids[p.url] not in self._listing and links.ids[p.url] != start)
        # Known datasets with a validator are cheap to check (a 304); the others cost a download.
        self._checks = deque(sorted(self.known, key=lambda i: not self.known[i].has_validator))
        # A feed lists what the site published last: it changed if anything was published since. No page
        # tells of that (it is linked barely), so it is checked first.
        self._urgent.extend(i for i in self._checks if self.known[i].mime.split(";")[0].strip() in _FEEDS)
        log.info("warm start from the memory of run %s: %d datasets, %d pages", mem.run_id, len(self.known),
                 len(mem.pages))

    def _restore_model(self, crawler: Crawler) -> None:
        mem = self.memory
        assert mem is not None
        config = crawler.config.to_dict()
        mine = {k: config[k] for k in MODEL_KEYS}
        if mem.model_config != mine or not mem.model_state:
            log.info("site memory model was learned with other settings: learning afresh")
            return
        if crawler.policy.warm_startable:
            policy_arrays = {k.split(".", 1)[1]: v for k, v in mem.model_arrays.items() if k.startswith("policy.")}
            crawler.policy.restore(mem.model_state["policy"], policy_arrays)
        crawler.classifier.restore(mem.model_state["classifier"], mem.model_arrays.get("classifier.classifier_coef"))

    # -- during the crawl ------------------------------------------------------------------------------
    def next(self, policy_has_links: bool, in_flight: int = 0) -> int | None:
        """The next revisit or check, or None when it is the policy's turn (or nothing is left, or what is
        left waits for the listing pages being read: ``in_flight`` requests are out)."""
        if not in_flight:
            self._reading.clear()  # nothing is out: a listing page handed out failed or was read
        while self._claimed:  # new pages placed like known ones: exploration, outside the allowance
            link_id = self._claimed.popleft()
            if link_id not in self._done:
                self._done.add(link_id)
                self._reading.add(link_id)
                return link_id
        if self.spent >= self.allowance:
            self._release()
            return None
        self._handed += 1
        if policy_has_links and self._handed % (_POLICY_EVERY + 1) == 0:
            return None
        # While a listing page is out, only what cannot wait for it goes: a row that changed (urgent) and
        # other listing pages. Its rows may vouch for the pages and files behind them (the rows of a long
        # catalogue shift from page to page as datasets are added, so which ones it shows is not known
        # before it is read), and a request spent on one of those now is a request wasted.
        waiting = bool(self._reading)
        for queue in (self._urgent, None, self._edited, self._unlisted, self._checks, self._leaves, self._vouched):
            if queue is None:
                link_id = self._next_revisit(lists_only=waiting)
            elif waiting and queue is not self._urgent:
                return None
            else:
                link_id = self._take(queue)
            if link_id == _WAIT:
                return None
            if link_id is not None:
                self._done.add(link_id)
                self.spent += 1
                if link_id in self._lists:
                    self._reading.add(link_id)
                return link_id
        self._release()
        return None

    def _take(self, queue: deque[int]) -> int | None:
        while queue:
            link_id = queue.popleft()
            if link_id in self._done or (link_id in self.known and self._url(link_id) in self.status):
                continue
            if queue is self._unlisted and self._url(link_id) in self.contexts:
                continue  # listed on another page this run: checked with the other known files
            if queue is self._checks and link_id in self._covered:
                self._vouched.append(link_id)  # a page vouched for it: checked last, to be sure
                continue
            return link_id
        return None

    def _next_revisit(self, lists_only: bool = False) -> int | None:
        """The memory page whose links show most of what this run has not seen yet: a greedy cover of the
        known pages and datasets by the pages that linked them (a catalogue page shows a dozen datasets'
        rows, a dataset page its files). Pages whose links were all seen go to the leaves. ``lists_only``:
        ``_WAIT`` when the next one is not a listing page."""
        heap = self._revisits
        while heap:
            gain, depth, page = heap[0]
            if page in self._done:
                heapq.heappop(heap)
                continue
            now = self._gain(page)
            if now and now == -gain:
                if lists_only and page not in self._lists:
                    return _WAIT
                heapq.heappop(heap)
                single = [i for i in self._listing.get(page, ()) if i not in self._covered]
                if now == 1 and single[0] in self.known:
                    # One file to learn about: its conditional GET says as much as the page, for one request
                    # where the page takes two when the file changed.
                    self._covered.add(single[0])
                    self._leaves.append(page)
                    return single[0]
                return page
            if now:
                heapq.heapreplace(heap, (-now, depth, page))
            else:
                heapq.heappop(heap)
                self._leaves.append(page)
        return None

    def _gain(self, page: int) -> int:
        """What reading a page would settle: the known datasets it links and the known pages it describes
        that nothing settled yet, and the datasets of those pages (a catalogue row described as before
        vouches for the dataset page's files). A page's bare links (pagers, facets) count for nothing."""
        covered, listing, described, known = self._covered, self._listing, self._described, self.known
        gain = 0
        for item in listing.get(page, ()):
            if item in covered:
                continue
            if (page, item) in described:
                gain += 1 + sum(sub in known and sub not in covered for sub in listing.get(item, ()))
            else:
                gain += item in known
        return gain

    def _cover(self, link_id: int, vouched: bool) -> None:
        """A known page or dataset needs no revisit for its own sake: it was read, or seen in a new context
        (then it is revisited or checked right away); ``vouched``: it is as it was (described as before, or
        a 304), which vouches for what it described last time too."""
        self._covered.add(link_id)
        if vouched:
            for item in self._listing.get(link_id, ()):
                self._covered.add(item)
                if (link_id, item) in self._described:  # a row as it was vouches for the page's files
                    self._covered.update(i for i in self._listing.get(item, ()) if i in self.known)

    def page_read(self, url: str, body: bytes, encoding: str | None, headers: dict[str, str],
                  record: bool) -> list[int]:
        """A page was read (a 200): remember its validators and link contexts (``record``: a memory will be
        written), queue the known pages it shows in a new context; returns the known datasets to check
        before its links are followed (those in a new context, and those it listed last time but no more)."""
        if record:
            etag, modified = headers.get("etag", ""), headers.get("last-modified", "")
            if etag or modified:
                self.page_validators[url] = (etag, modified)
        if not (record or self.warm):
            return []
        contexts, described, dates = link_contexts(body, url, encoding, self.max_links)
        if record:
            for link, hashes in contexts.items():
                self.contexts.setdefault(link, set()).update(hashes)
            for link in described:
                listers = self.listers.setdefault(link, [])
                if len(listers) < _MAX_LISTERS and url not in listers:
                    listers.append(url)
        if not self.warm:
            return []
        checks = []
        revisits: set[int] = set()
        ids = self._links.ids
        page_id = ids.get(url)
        self._reading.discard(page_id)
        if page_id is not None:
            self._cover(page_id, vouched=False)
        # Every context on a page never seen is new: it tells of a change only on pages like those that
        # described known items (a catalogue page the last run did not reach, not a news article).
        telling = page_id is not None and (page_id in self._memory_pages
                                           or _ID.sub("", self._links.tag_path(page_id)) in self._paths)
        for link, hashes in contexts.items():
            link_id = ids.get(link)
            if link_id is None or not (link_id in self.known or link_id in self._memory_pages):
                continue
            before = self._memory_contexts(link_id)
            if before and self._was_described(link_id):
                changed = not hashes <= before
            elif link in described and self._clock and dates.get(link):
                # Never described before (known from menus and sidebars only): the dates its row shows
                # against the newest Last-Modified the last run saw on the site tell whether it changed since.
                changed = dates[link] > self._clock
            else:
                continue  # nothing to compare with
            if changed and telling:
                self._cover(link_id, vouched=False)  # in a new context: checked or revisited below
            elif not changed and link in described:
                self._cover(link_id, vouched=True)
            if link_id in self._done or not changed or not telling:
                continue
            if link_id in self.known:
                checks.append(link_id)
            elif link_id in self._memory_pages:
                dated = link in described and self._clock and dates.get(link, "")
                if dated and dated <= self._clock:
                    # A row dated no later than the site's clock at the last run changed otherwise (a file
                    # removed, a text edited): nothing new or updated to find there, the page can wait.
                    self._edited.append(link_id)
                    revisits.add(link_id)
                elif (only := self._only_file(link_id)) is not None:
                    # One known file behind the row: its conditional GET says what changed in one request,
                    # where the page and then the file take two. The page (a file added?) waits.
                    if only not in self._done:
                        self._covered.add(only)
                        checks.append(only)
                    self._edited.append(link_id)
                else:
                    self._urgent.append(link_id)
                    revisits.add(link_id)
        if page_id is not None and telling:
            self._pass_on(page_id, contexts, described)
            if page_id in self._lists:  # its rows never met: new items, claimed when their links are read
                rows = {link for link in described if url_key(link) not in self._seen
                        and ids.get(link) not in self._memory_pages and ids.get(link) not in self.known}
                met = [i for link in rows if (i := ids.get(link)) is not None and i not in self._done
                       and self._links.predicted[i] != TARGET]  # a page's files are its own work's
                if met:  # or now, if another page led to them first (a "featured" block on the home page)
                    self._claimed.extend(met)
                    self._follow(page_id)
                self._new_rows[page_id] = rows
        # Known files the page listed last time and no more: moved or removed, or just listed elsewhere now
        # (a catalogue's rows shift as datasets are added). Checked after the hubs, unless seen linked again.
        self._unlisted.extend(i for i in self._by_page.pop(url, ()) if self._url(i) not in contexts)
        # A file this page shows in a new context that a page revisited for the same reason describes too (a
        # catalogue row's "last modified" moved on: the dataset page says which of its files): that page
        # tells which files to check, one request for all of them.
        checks = [i for i in dict.fromkeys(checks) if self._url(i) not in self.status
                  and not any(page in revisits for page in self._described_by.get(i, ()))]
        checks = checks[: max(0, self.allowance - self.spent)]
        self._done.update(checks)
        self.spent += len(checks)
        return checks

    def claim(self, pages: list[NewLink]) -> list[NewLink]:
        """New links a page led to that sit where links to pages listing datasets sat, or in a row of a
        listing (a page that described known pages) never met before: a new row in a catalogue, a new item
        of the news, that the last runs did not read: visited before the policy's picks. Links the last runs
        met already (and that led to no dataset) wait until the revisits and checks are done. Returns the
        others, for the policy."""
        if not self.warm:
            return pages
        rest = []
        for link in pages:
            key = url_key(link.url)
            parent = self._links.parent[link.id]
            new_row = link.url in self._new_rows.get(parent, ())
            if key not in self._read and (new_row or _ID.sub("", link.tag_path) in self._paths):
                self._claimed.append(link.id)
                # A new row on a listing page: new items are published at a listing's head and push the
                # rows before them on, so its next page shows new items too (or those this page no longer
                # shows). It is revisited right away: a listing is followed from its head for as long as
                # it shows new rows, before the deep pages of long archives.
                self._follow(parent)
            elif key in self._seen:
                self._stale.append(link)
            else:
                rest.append(link)
        return rest

    def _follow(self, page: int) -> None:
        """A listing page showed a new row: its next page is revisited right away (see ``claim``)."""
        nxt = self._next_page.pop(page, None)
        if nxt is not None and nxt not in self._done:
            self._urgent.append(nxt)

    def _release(self) -> None:
        """The links held back go to the policy: the revisits and checks are over."""
        if self._stale and self._policy is not None:
            self._policy.add(self._stale)
            self._stale = []

    def _only_file(self, page: int) -> int | None:
        """The one known dataset a page that lists no pages linked last time, if it linked one only."""
        if page in self._lists:
            return None
        files = [i for i in self._listing.get(page, ()) if i in self.known]
        return files[0] if len(files) == 1 else None

    def _memory_contexts(self, link_id: int) -> set[str]:
        known = self.known.get(link_id)
        if known is not None:
            return set(known.contexts)
        page = self.memory.pages.get(self._url(link_id)) if self.memory is not None else None
        return set(page.contexts) if page is not None else set()

    def _pass_on(self, page_id: int, contexts: dict[str, set[str]], described: set[str]) -> None:
        """Where a listing's rows went: its next page, the first page it links barely among those that
        describe pages too, are still to revisit and lie farther from the start ("next", not "previous").
        What the page described last time and shows no more moved on to that page (a catalogue's rows shift
        as datasets are added): it gets their credit in the revisit order. It is also the page revisited
        right away if this one shows new rows (see ``claim``)."""
        ids, depth = self._links.ids, self._links.depth
        heirs = [i for link in contexts if link not in described and (i := ids.get(link)) is not None
                 and i in self._lists and i not in self._done and depth[i] > depth[page_id]]
        if not heirs:
            return
        heir = min(heirs, key=lambda i: depth[i])  # the nearest; the first on the page among those
        self._next_page[page_id] = heir
        urls = self._links.urls
        gone = [i for i in self._listing.get(page_id, ()) if i not in self._covered and urls[i] not in contexts
                and (page_id, i) in self._described]
        if gone:
            self._listing[heir] = [*self._listing.get(heir, ()), *gone]
            self._described.update((heir, i) for i in gone)
            heapq.heappush(self._revisits, (-self._gain(heir), depth[heir], heir))

    def _was_described(self, link_id: int) -> bool:
        """Whether a page described the known page or dataset last time (memories from before describers
        were kept know only that it had contexts)."""
        if not self._describers_kept:
            return True
        known = self.known.get(link_id)
        if known is not None:
            return bool(known.listed_on)
        page = self.memory.pages.get(self._url(link_id)) if self.memory is not None else None
        return page is not None and bool(page.listed_on)

    def is_known(self, link_id: int) -> bool:
        return link_id in self.known

    def conditions(self, link_id: int) -> dict[str, str] | None:
        """Validators to send with the GET of a link (None for an unconditional GET)."""
        if self.memory is None:
            return None
        known = self.known.get(link_id)
        page = self.memory.pages.get(self._url(link_id)) if known is None else None
        if known is None and page is None:
            # A new URL with the file name of one known dataset not checked yet: that file may have moved
            # here; its validators make the answer a 304 if so (and a download otherwise).
            same = [i for i in self._by_name.get(_basename(self._url(link_id)), ())
                    if self._url(i) not in self.status]
            if len(same) != 1:
                return None
            self._borrowed[link_id] = same[0]
            known = self.known[same[0]]
        if known is not None:
            etag, modified = known.etag, known.last_modified
        else:
            etag, modified = page.etag, page.last_modified
        headers = {}
        if etag:
            headers["If-None-Match"] = etag
        if modified:
            headers["If-Modified-Since"] = modified
        return headers or None

    def known_for(self, link_id: int) -> int | None:
        """The known dataset a 304 to this link speaks for: itself, or the one whose validators it was sent."""
        if link_id in self.known:
            return link_id
        return self._borrowed.get(link_id)

    def page_unchanged(self, url: str) -> None:
        self.unchanged_pages.add(url)
        if (link_id := self._links.ids.get(url)) is not None:
            self._reading.discard(link_id)
            self._cover(link_id, vouched=True)

    def classify(self, link_id: int, resp: Response) -> str:
        """new / changed / unchanged for a target response (a 304 is unchanged); records it."""
        known = self.known.get(link_id)
        if resp.kind == "unchanged":
            status = "unchanged"
        elif known is not None:
            status = "unchanged" if resp.sha256 == known.sha256 else "changed"
        else:
            # A URL the memory does not know, with bytes it does: a file that moved, not a new one.
            status = "unchanged" if resp.sha256 in self._known_sha else "new"
        self.status[self._url(link_id)] = status
        return status

    def gone(self, link_id: int, resp: Response) -> bool:
        """Whether a known dataset's answer says it was removed (404 or 410); records it."""
        if link_id not in self.known or resp.status not in _GONE:
            return False
        self.status[self._url(link_id)] = "gone"
        return True

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(STATUSES, 0)
        for status in self.status.values():
            out[status] += 1
        return out

    def _url(self, link_id: int) -> str:
        return self._links.urls[link_id]

    # -- checkpoints -----------------------------------------------------------------------------------
    def state(self) -> dict:
        return {
            "spent": self.spent, "handed": self._handed, "status": self.status,
            "page_validators": self.page_validators, "unchanged_pages": sorted(self.unchanged_pages),
            "contexts": {k: sorted(v) for k, v in self.contexts.items()},
            "urgent": list(self._urgent), "edited": list(self._edited), "claimed": list(self._claimed),
            "unlisted": list(self._unlisted),
            "paths": sorted(self._paths), "listers": self.listers,
            "revisits": [list(entry) for entry in self._revisits], "covered": sorted(self._covered),
            "leaves": list(self._leaves), "checks": list(self._checks), "vouched": list(self._vouched),
            "done": sorted(self._done), "by_page": self._by_page,
            "stale": [[k.id, k.url, k.tag_path, k.anchor, k.depth] for k in self._stale],
            "by_name": self._by_name, "borrowed": {str(k): v for k, v in self._borrowed.items()},
        }

    def restore(self, crawler: Crawler, state: dict) -> None:
        """After a resume: the link table is the checkpoint's, which already holds the memory's links."""
        self._links, self._policy = crawler.links, crawler.policy
        if self.memory is not None:
            self._seen, self._read = set(self.memory.seen_urls.tolist()), set(self.memory.read_urls.tolist())
            ids = crawler.links.ids
            self.known = {ids[d.url]: d for d in self.memory.datasets.values() if d.url in ids}
            self._known_sha = {d.sha256 for d in self.memory.datasets.values()}
            self._memory_pages = {ids[url] for url in self.memory.pages if url in ids}
            self._listing, self._described = _listing(self.memory, ids)
            self._lists = {page for page, item in self._described if item in self._memory_pages}
            self._described_by = _inverse(self._described)
            self._describers_kept = _describers_kept(self.memory)
            self._clock = _site_clock(self.memory)
        self.spent, self._handed = int(state["spent"]), int(state["handed"])
        self.status = dict(state["status"])
        self.page_validators = {k: (v[0], v[1]) for k, v in state["page_validators"].items()}
        self.unchanged_pages = set(state["unchanged_pages"])
        self.contexts = {k: set(v) for k, v in state["contexts"].items()}
        # (a checkpoint of a warm run from before the greedy revisits has its hubs instead: revisited first)
        self.listers = {k: list(v) for k, v in state.get("listers", {}).items()}
        self._urgent = deque([*state["urgent"], *state.get("hubs", ())])
        self._edited = deque(state.get("edited", ()))
        self._revisits = [(int(g), int(d), int(i)) for g, d, i in state.get("revisits", ())]
        heapq.heapify(self._revisits)
        self._covered = set(state.get("covered", ()))
        self._claimed, self._paths = deque(state["claimed"]), set(state["paths"])
        self._unlisted = deque(state["unlisted"])
        self._leaves, self._checks = deque(state["leaves"]), deque(state["checks"])
        self._vouched = deque(state.get("vouched", ()))
        self._stale = [NewLink(int(i), url, tag_path, anchor, int(depth))
                       for i, url, tag_path, anchor, depth in state.get("stale", ())]
        self._done = set(state["done"])
        self._by_page = {k: list(v) for k, v in state["by_page"].items()}
        self._by_name = {k: list(v) for k, v in state["by_name"].items()}
        self._borrowed = {int(k): int(v) for k, v in state["borrowed"].items()}

    # -- end -------------------------------------------------------------------------------------------
    def build_memory(self, crawler: Crawler, rows: list[dict]) -> SiteMemory:
        """The memory this run leaves: the previous one updated with this run's manifest ``rows``."""
        now = _now()
        previous = self.previous.datasets if self.previous is not None else {}
        datasets = {url: d for url, d in previous.items() if self.status.get(url) != "gone"}
        for row in rows:
            status = row.get("status", "new")
            if status == "gone":
                continue
            url, final = row["url"], row.get("final_url") or row["url"]
            old = previous.get(url)
            # A known file that now answers from elsewhere (it moved) is remembered where it is now.
            key = final if old is not None and final != url else url
            if key != url:
                datasets.pop(url, None)
            datasets[key] = KnownDataset(
                url=key, final_url=final, sha256=row.get("sha256", ""), etag=row.get("etag", ""),
                last_modified=row.get("last_modified", ""), mime=row.get("mime", ""), size=int(row.get("size", 0)),
                first_seen=old.first_seen if old is not None else row.get("fetched_at", now),
                last_seen=row.get("fetched_at", now), found_on=row.get("found_on", "") or (old.found_on if old else ""),
                tag_path=row.get("tag_path", "") or (old.tag_path if old else ""), depth=int(row.get("depth", 0)),
                filename=row.get("filename", "") or (old.filename if old else ""),
                contexts=old.contexts if old is not None else [], listed_on=old.listed_on if old is not None else [])
        for d in datasets.values():
            d.contexts = self._merged_contexts(d.url, d.contexts)
            d.listed_on = self._merged_listers(d.url, d.listed_on)
        pages = self._pages(crawler, datasets)
        config = crawler.config.to_dict()
        policy_arrays = crawler.policy.model_arrays()  # without this run's frontier (ids of its links)
        arrays = {**{f"policy.{k}": v for k, v in policy_arrays.items()},
                  **{f"classifier.{k}": v for k, v in crawler.classifier.arrays().items()}}
        return SiteMemory(
            start_url=crawler.config.start_url, run_id=crawler.run_id, written_at=now,
            runs=(self.previous.runs if self.previous is not None else 0) + 1,
            model_config={k: config[k] for k in MODEL_KEYS},
            model_state={"policy": crawler.policy.state(), "classifier": crawler.classifier.state()},
            model_arrays=arrays, datasets=datasets, pages=pages, **self._seen_urls(crawler))

    def _seen_urls(self, crawler: Crawler) -> dict[str, np.ndarray]:
        """The URLs met and the pages read (those links were found on), over this run and the last ones."""
        links, prev = crawler.links, self.previous
        read = {links.urls[i] for i in set(links.parent) if i >= 0}
        out = {}
        for name, urls in (("seen_urls", links.urls), ("read_urls", read)):
            mine = np.fromiter((url_key(url) for url in urls), dtype=np.uint64)
            out[name] = np.union1d(getattr(prev, name), mine) if prev is not None else np.unique(mine)
        return out

    def _merged_contexts(self, url: str, old: list[str]) -> list[str]:
        seen = sorted(self.contexts.get(url, ()))
        return list(dict.fromkeys([*seen, *old]))[:_MAX_CONTEXTS]

    def _merged_listers(self, url: str, old: list[str]) -> list[str]:
        return list(dict.fromkeys([*self.listers.get(url, ()), *old]))[:_MAX_LISTERS]

    def _pages(self, crawler: Crawler, datasets: dict[str, KnownDataset]) -> dict[str, KnownPage]:
        """Every page on the way from the start page to a known dataset, scored by the datasets below it, and
        every page that links known datasets (a dataset page whose files were first met on a catalogue),
        scored by those it links: each with the pages that link it, for the next run's revisits."""
        links = crawler.links
        previous_pages = self.previous.pages if self.previous is not None else {}
        score: dict[int, int] = {}
        for d in datasets.values():
            link_id = links.ids.get(d.url, links.ids.get(d.final_url, -1))
            parent = links.parent[link_id] if link_id >= 0 else links.ids.get(d.found_on, -1)
            seen = set()
            while parent >= 0 and parent not in seen:  # parents of redirect hops can loop back
                seen.add(parent)
                score[parent] = score.get(parent, 0) + 1
                parent = links.parent[parent]
        listed = Counter(links.ids[url] for d in datasets.values() for url in d.listed_on if url in links.ids)
        # and pages that describe several of those pages (a catalogue page of dataset pages whose files were
        # first met elsewhere), scored as the datasets those list
        below = {links.urls[i]: n for i, n in score.items()} | {links.urls[i]: n for i, n in listed.items()}
        catalogues: Counter[int] = Counter()
        for url in below:
            for lister in self._merged_listers(url, previous_pages.get(url, _NO_PAGE).listed_on):
                if lister in links.ids:
                    catalogues[links.ids[lister]] += 1
        for link_id, n in catalogues.items():
            if n >= _PATH_SUPPORT:
                listed[link_id] = max(listed[link_id], n)
        for link_id, n in listed.items():
            score[link_id] = max(score.get(link_id, 0), n)
        previous = self.previous.pages if self.previous is not None else {}
        pages = {}
        for link_id, n in score.items():
            url = links.urls[link_id]
            old = previous.get(url)
            if url in self.page_validators:
                etag, modified = self.page_validators[url]
            elif url in self.unchanged_pages and old is not None:
                etag, modified = old.etag, old.last_modified
            else:
                etag, modified = "", ""
            parent = links.parent[link_id]
            pages[url] = KnownPage(url=url, parent=links.urls[parent] if parent >= 0 else "",
                                   depth=links.depth[link_id], tag_path=links.tag_path(link_id), score=n,
                                   etag=etag, last_modified=modified,
                                   contexts=self._merged_contexts(url, old.contexts if old is not None else []),
                                   listed_on=self._merged_listers(url, old.listed_on if old is not None else []))
        return pages


def _listing(memory: SiteMemory, ids: dict[str, int]) -> tuple[dict[int, list[int]], set[tuple[int, int]]]:
    """Memory page -> the known pages and datasets it described (else, for those no page described, was
    the first to link: a pager's "next"); and the (page, item) pairs of those it described (all of them
    for a memory from before describers were kept)."""
    out: dict[int, list[int]] = {}
    described: set[tuple[int, int]] = set()
    kept = _describers_kept(memory)
    items = [*((d.url, d.listed_on, d.found_on) for d in memory.datasets.values()),
             *((p.url, p.listed_on, p.parent) for p in memory.pages.values())]
    for url, listers, first in items:
        item = ids.get(url)
        for lister in listers or [first]:
            page = ids.get(lister)
            if item is not None and page is not None and lister in memory.pages:
                out.setdefault(page, []).append(item)
                if listers or not kept:
                    described.add((page, item))
    return out, described


def _site_clock(memory: SiteMemory) -> str:
    """The newest Last-Modified among the known datasets, as an ISO date ("" when none gave one): the
    site's own clock at the last run, which a row's date is compared with."""
    newest = ""
    for d in memory.datasets.values():
        if d.last_modified:
            try:
                newest = max(newest, email.utils.parsedate_to_datetime(d.last_modified).date().isoformat())
            except (TypeError, ValueError):
                continue
    return newest


def _describers_kept(memory: SiteMemory) -> bool:
    return any(d.listed_on for d in memory.datasets.values()) or any(p.listed_on for p in memory.pages.values())


def _inverse(described: set[tuple[int, int]]) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for page, item in described:
        out.setdefault(item, []).append(page)
    return out


def _productive_paths(memory: SiteMemory) -> set[str]:
    """Tag paths (ids and numbers left out) of the links to pages that link datasets themselves (not to
    hubs: those include pagers and facets, endless on some sites), where several such links were."""
    parents = {p.parent for p in memory.pages.values()}
    counts = Counter(_ID.sub("", p.tag_path) for p in memory.pages.values() if p.tag_path and p.url not in parents)
    return {path for path, n in counts.items() if n >= _PATH_SUPPORT}


def _basename(url: str) -> str:
    """The last path segment of a URL when it names a file (has an extension), else ""."""
    name = url.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]
    return name if "." in name else ""
