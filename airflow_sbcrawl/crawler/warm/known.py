"""The site memory in terms of this run's link ids: what the warm crawl's plan reads of the last runs.

Which links are known pages and datasets, which known page described (or first linked) which, the pages
that described other pages (listings, catalogues), the site's clock at the last run, the tag paths of links
that led to productive pages, and the keys of the URLs the last runs met and read."""

from __future__ import annotations

import email.utils
import re
from collections import Counter
from collections.abc import Callable
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from airflow_sbcrawl.crawler.frontier import LinkTable
from airflow_sbcrawl.crawler.memory import KnownDataset, SiteMemory
from airflow_sbcrawl.crawler.policies.base import NewLink

# Tag paths with ids and numbers left out: links placed alike whatever the item they lead to.
ID = re.compile(r"#[^ .]*|\d+")
# A new link placed as at least this many known pages were (a new row of a catalogue) is visited early.
_PATH_SUPPORT = 2
# A listing's page number in its path (WordPress and others: /news/page/3/).
_PATH_PAGE = re.compile(r"^(.*)/page/(\d+)/?$")


def add_pages(memory: SiteMemory, links: LinkTable) -> None:
    """Put the memory's pages into the link table, parents before children."""
    for page in sorted(memory.pages.values(), key=lambda p: p.depth):
        if page.url not in links:
            links.add(page.url, page.depth, links.ids.get(page.parent, -1), page.tag_path or None)


def add_frontier(memory: SiteMemory, links: LinkTable, allowed: Callable[[str], bool]) -> list[NewLink]:
    """Put the links the last runs met and never fetched into the link table, with the label they had;
    returns them as new links for the policy. Those already in the table or no longer ``allowed`` (out of
    scope, refused by today's robots.txt) are left out."""
    fresh = []
    for waiting in memory.frontier:
        if waiting.url in links or not allowed(waiting.url):
            continue
        parent = links.ids.get(waiting.parent, -1)
        if parent < 0 and waiting.parent:
            # (a page read by an earlier run: in the table so the new pages' chains reach the start)
            parent = links.add(waiting.parent, max(0, waiting.depth - 1), -1, None)
        link_id = links.add(waiting.url, waiting.depth, parent, waiting.tag_path or None)
        links.predicted[link_id] = waiting.label
        fresh.append(NewLink(link_id, waiting.url, waiting.tag_path, "", waiting.depth))
    return fresh


class MemoryIndex:
    """``listing``: known page -> the known pages and datasets it described (else, for those no page
    described, was the first to link: a pager's "next"); ``described``: the (page, item) pairs of those it
    described; ``lists``: the known pages that described other known pages. ``known`` is shared with the
    run's ``Changes``."""

    def __init__(self, memory: SiteMemory, links: LinkTable, known: dict[int, KnownDataset]) -> None:
        self.memory = memory
        self.links = links
        self.known = known
        ids = links.ids
        self.pages = {ids[url] for url in memory.pages if url in ids}
        self.describers_kept = any(d.listed_on for d in memory.datasets.values()) or any(
            p.listed_on for p in memory.pages.values())
        self.listing, self.described = self._listing()
        self.described_by: dict[int, list[int]] = {}
        for page, item in self.described:
            self.described_by.setdefault(item, []).append(page)
        self.lists = {page for page, item in self.described if item in self.pages}
        self.barren = self._barren()
        # listings of listings: pages that described at least two listing pages (a data portal's catalogues)
        self.hubs = {page for page, n in Counter(page for page, item in self.described if item in self.lists).items()
                     if n >= 2}
        self.head_of = self._heads()
        self.clock = _site_clock(memory)
        self.paths = _productive_paths(memory)
        self.seen = set(memory.seen_urls.tolist())  # keys of the URLs the last runs met
        self.read = set(memory.read_urls.tolist())  # and of the pages they read

    def _listing(self) -> tuple[dict[int, list[int]], set[tuple[int, int]]]:
        memory, ids = self.memory, self.links.ids
        out: dict[int, list[int]] = {}
        described: set[tuple[int, int]] = set()
        items = [*((d.url, d.listed_on, d.found_on) for d in memory.datasets.values()),
                 *((p.url, p.listed_on, p.parent) for p in memory.pages.values())]
        for url, listers, first in items:
            item = ids.get(url)
            for lister in listers or [first]:
                page = ids.get(lister)
                if item is not None and page is not None and lister in memory.pages:
                    out.setdefault(page, []).append(item)
                    if listers or not self.describers_kept:  # a memory from before describers were kept
                        described.add((page, item))
        return out, described

    def _barren(self) -> set[int]:
        """The listing pages whose rows led to no datasets last time: fewer than half the pages they
        described lead to a known dataset, through the rows of those pages in turn (a catalogue's facet
        pages, whose rows are other facet pages; a listing of news articles). A row back to a page on the
        way to this one (a breadcrumb to the home page) does not count: it says nothing of what the listing
        holds; nor does a row that another page describes too (a facet's search results repeat the
        catalogue's rows: the catalogue holds them; a page with no row of its own is left where its gain
        puts it). Told by what the rows led to, not by the URL: revisiting these pages settles nothing and
        finds nothing, so the plan revisits them last (``Tier.BARREN``)."""
        if not self.known:  # (a memory without datasets tells no listing from another)
            return set()
        productive = {page for page, items in self.listing.items() if any(i in self.known for i in items)}
        todo = list(productive)
        while todo:  # the pages from which a known dataset is reached, walking the rows back
            for page in self.described_by.get(todo.pop(), ()):
                if page not in productive:
                    productive.add(page)
                    todo.append(page)
        parent, barren = self.links.parent, set()
        for page in self.lists:
            above, at = set(), parent[page]
            while at >= 0 and at not in above:
                above.add(at)
                at = parent[at]
            rows = [i for i in self.listing.get(page, ()) if (page, i) in self.described and i not in above
                    and len(self.described_by[i]) == 1]
            if 2 * sum(i in self.known or i in productive for i in rows) < len(rows):
                barren.add(page)
        return barren

    def _heads(self) -> dict[int, int]:
        """Known listing page -> the known first page of its listing, when it is a later page of it
        (``later_page``): the URL without its page number (``?page=3`` -> no ``page``, ``/page/3/`` -> none)."""
        ids, out = self.links.ids, {}
        for page in self.lists:
            url = self.links.urls[page]
            parts = urlsplit(url)
            query = urlencode([(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if not v.isdigit()])
            path = match.group(1) if (match := _PATH_PAGE.match(parts.path)) else parts.path
            head = urlunsplit((parts.scheme, parts.netloc, path, query, ""))
            if head != url and (i := ids.get(head)) in self.pages and later_page(head, url) is not None:
                out[page] = i
        return out

    def contexts(self, link_id: int) -> set[str]:
        """Hashes of the contexts the last runs saw a known page or dataset in."""
        known = self.known.get(link_id)
        if known is not None:
            return set(known.contexts)
        page = self.memory.pages.get(self.links.urls[link_id])
        return set(page.contexts) if page is not None else set()

    def was_described(self, link_id: int) -> bool:
        """Whether a page described the known page or dataset last time (memories from before describers
        were kept know only that it had contexts)."""
        if not self.describers_kept:
            return True
        known = self.known.get(link_id)
        if known is not None:
            return bool(known.listed_on)
        page = self.memory.pages.get(self.links.urls[link_id])
        return page is not None and bool(page.listed_on)

    def listed_by(self, link_id: int, page_url: str) -> bool:
        """Whether ``page_url`` described the known page or dataset last time: only there can its row be
        compared with what it was (a link first known after a page showed it has no context from that page).
        Memories from before describers were kept cannot tell: they say yes."""
        if not self.describers_kept:
            return True
        known = self.known.get(link_id)
        if known is not None:
            return page_url in known.listed_on
        page = self.memory.pages.get(self.links.urls[link_id])
        return page is not None and page_url in page.listed_on

    def only_file(self, page: int) -> int | None:
        """The one known dataset a page linked last time, if it linked one only and is no listing of pages. A
        page that described one other page is no listing (a publication's "related dataset": that page's own
        row says whether it changed); it shows no new rows of pages, so its one file's conditional GET says
        what its changed row meant, for one request instead of two (small-sitemap: most publication pages)."""
        if sum(i in self.pages and (page, i) in self.described for i in self.listing.get(page, ())) >= 2:
            return None
        files = [i for i in self.listing.get(page, ()) if i in self.known]
        return files[0] if len(files) == 1 else None

    def placed_like_productive(self, link_id: int, tag_path: str | None = None) -> bool:
        """Whether a link sits where links to pages listing datasets sat (its tag path, ids left out)."""
        path = self.links.tag_path(link_id) if tag_path is None else tag_path
        return ID.sub("", path) in self.paths


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


def _productive_paths(memory: SiteMemory) -> set[str]:
    """Tag paths (ids and numbers left out) of the links to pages that link datasets themselves (not to
    hubs: those include pagers and facets, endless on some sites), where several such links were."""
    parents = {p.parent for p in memory.pages.values()}
    counts = Counter(ID.sub("", p.tag_path) for p in memory.pages.values() if p.tag_path and p.url not in parents)
    return {path for path, n in counts.items() if n >= _PATH_SUPPORT}


def later_page(page: str, link: str) -> int | None:
    """The number of ``link`` when it is a later page of the listing ``page`` shows (the page a pager's
    "next" leads to), else None: the same host and path with the same query but for one parameter whose
    value is a larger number (``?page=2``, ``?start=20``; none on the first page), or the same query with
    ``/page/<larger number>`` in the path. A listing's next page is told so, not by where its link sits:
    the links that led from one known listing page to another included a site's menus and footers (a home
    page and a data portal's home are listings too), and in a warm run those made the footer's "about" page
    the "next page" of most catalogues, revisited first and credited with the rows they no longer showed."""
    a, b = urlsplit(page), urlsplit(link)
    if (a.scheme, a.netloc.lower()) != (b.scheme, b.netloc.lower()):
        return None
    if a.path == b.path:
        mine, theirs = (dict(parse_qsl(q, keep_blank_values=True)) for q in (a.query, b.query))
        differ = [k for k in mine.keys() | theirs.keys() if mine.get(k) != theirs.get(k)]
        if len(differ) != 1 or not theirs.get(differ[0], "").isdigit():
            return None
        number, before = int(theirs[differ[0]]), mine.get(differ[0], "0")
        return number if before.isdigit() and number > int(before) else None
    if a.query != b.query or (there := _PATH_PAGE.match(b.path)) is None:
        return None
    here = _PATH_PAGE.match(a.path)
    base, before = (here.group(1), int(here.group(2))) if here else (a.path.rstrip("/"), 0)
    number = int(there.group(2))
    return number if there.group(1) == base and number > before else None
