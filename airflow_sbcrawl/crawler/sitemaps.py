"""XML sitemaps (sitemaps.org): the pages a site lists itself, read through the crawl's own fetcher.

A site's sitemaps are named by the ``Sitemap:`` lines of its robots.txt, else looked for at the well-known
``/sitemap.xml`` (one request, a 404 on most sites without one). A sitemap is a ``<urlset>`` of pages or a
``<sitemapindex>`` of child sitemaps, either of them possibly gzipped (a ``.xml.gz`` file, or a
``Content-Encoding``). What is read is bounded as the protocol bounds it: 50,000 URLs and 50 MB
uncompressed per file; a decompression bomb, a document with a DTD (entity expansion), an index that lists
itself or an index already read, and a sitemap outside the crawl's scope are refused, each with its reason
logged. Every document is one request of the crawl's budget, through the fetcher (its per-host delay, its
retries), and robots.txt must allow it. ``<changefreq>`` and ``<priority>`` are ignored: sites set them
once and forget them.

What the crawl does with what is listed:

* cold (``SitemapLinks.enter``): the listed pages join the frontier as candidates for the policy, under a
  tag path of their own (``SITEMAP_TAG_PATH``), so the policy learns what that source is worth beside the
  links of the pages, as one more action. Sitemaps are incomplete and often stale: they add candidates,
  they never replace the links.
* warm (``apply_lastmod``): a known page whose ``<lastmod>`` is not newer than what the last run saw of it
  reads as a 304 would (it vouches for what it listed), without a request, unless it is a listing of other
  pages (a stale lastmod there would hide new rows: ``RevisitPlan.page_vouched``); a newer one is left to
  the revisits, which find what changed.
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from urllib.parse import urljoin
from xml.etree.ElementTree import ParseError, XMLPullParser

import numpy as np

from airflow_sbcrawl.crawler.fetch import Response
from airflow_sbcrawl.crawler.frontier import LinkTable
from airflow_sbcrawl.crawler.policies.base import NewLink
from airflow_sbcrawl.crawler.urls import InvalidURL, Scope, normalize, resolve

log = logging.getLogger(__name__)

#: The protocol's limits per sitemap file: URLs listed, and bytes once uncompressed.
MAX_URLS = 50_000
MAX_BYTES = 50 * 1024 * 1024
#: Sitemap documents read per site at most, and at most this share of the request budget.
MAX_DOCUMENTS = 1_000
BUDGET_SHARE = 0.05
#: Indexes of indexes are outside the protocol but exist (WordPress plugins nest them): this deep at most.
MAX_NESTING = 3
#: URLs taken from all of a site's sitemaps at most (a bound on memory, far above any budget).
MAX_ENTRIES = 1_000_000
#: The tag path under which sitemap URLs enter the frontier: one action of their own for the policy.
SITEMAP_TAG_PATH = "sitemap urlset url loc"
WELL_KNOWN = "/sitemap.xml"
_GZIP_MAGIC = b"\x1f\x8b"
_CHUNK = 1024 * 1024


class SitemapRefused(ValueError):
    """A sitemap document that is not read; the message says why."""


@dataclass(frozen=True, slots=True)
class SitemapEntry:
    """One ``<url>`` of a sitemap: its normalised URL and ``<lastmod>`` as an ISO 8601 UTC string
    (``2024-05-01T08:00:00+00:00``, comparable as text), "" when it has none or an unreadable one."""

    url: str
    lastmod: str = ""


@dataclass
class ParsedSitemap:
    """A sitemap document read: an index (``children``: the sitemaps it lists, with their lastmod) or a
    urlset (``entries``); ``dropped`` counts what was left out (over the URL limit, not a URL)."""

    index: bool
    entries: list[SitemapEntry] = field(default_factory=list)
    children: list[SitemapEntry] = field(default_factory=list)
    dropped: int = 0


def inflate(data: bytes, limit: int = MAX_BYTES) -> bytes:
    """A gzipped document's bytes (a plain one as it is), refused once it expands past ``limit``: a
    decompression bomb is stopped after ``limit`` bytes, never held whole."""
    if not data.startswith(_GZIP_MAGIC):
        if len(data) > limit:
            raise SitemapRefused(f"larger than the protocol's {limit} bytes")
        return data
    decoder = zlib.decompressobj(zlib.MAX_WBITS | 16)
    out: list[bytes] = []
    size = 0
    pending = data
    try:
        while pending and not decoder.eof:
            piece = decoder.decompress(pending, _CHUNK)
            size += len(piece)
            if size > limit:
                raise SitemapRefused(f"expands past the protocol's {limit} bytes once gunzipped "
                                     f"({len(data)} bytes compressed): a decompression bomb, or too large")
            out.append(piece)
            pending = decoder.unconsumed_tail
    except zlib.error as exc:
        raise SitemapRefused(f"does not gunzip: {exc}") from exc
    if not decoder.eof:
        raise SitemapRefused("gzip data ended early")
    return b"".join(out)


def parse_lastmod(text: str) -> str:
    """A W3C datetime (``2024``, ``2024-05``, ``2024-05-01``, ``2024-05-01T08:00+02:00``, with seconds
    and fractions) as an ISO 8601 UTC string; "" when it is none of those. A date without a time zone is
    taken as UTC."""
    text = text.strip()
    if not text:
        return ""
    if len(text) == 4 and text.isdigit():
        text += "-01-01"
    elif len(text) == 7 and text[4] == "-":
        text += "-01"
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return ""
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.astimezone(UTC).replace(microsecond=0).isoformat()


def http_date_iso(value: str) -> str:
    """An HTTP date (a Last-Modified header) as ``parse_lastmod`` gives dates; "" when unreadable."""
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return ""
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.astimezone(UTC).replace(microsecond=0).isoformat()


def parse_sitemap(data: bytes, base: str, max_urls: int = MAX_URLS) -> ParsedSitemap:
    """A sitemap document's URLs (``data`` already gunzipped), resolved against ``base``: a ``<urlset>``'s
    pages or a ``<sitemapindex>``'s children, the first ``max_urls`` of them (the rest counted in
    ``dropped``). Namespaces are not checked (many sites get them wrong). A document that declares a DTD is
    refused before parsing (a sitemap needs none, and entities are how XML bombs expand), as is one whose
    root is neither element or that does not parse."""
    head = data[:4096].lstrip(b"\xef\xbb\xbf \t\r\n")
    if b"<!DOCTYPE" in data or b"<!ENTITY" in data:
        raise SitemapRefused("declares a DTD or entities (not allowed in a sitemap: entity expansion)")
    if head[:1] != b"<":
        raise SitemapRefused("not XML (an HTML page or an error page where a sitemap was expected)")
    parser = XMLPullParser(events=("start", "end"))
    result: ParsedSitemap | None = None
    depth = 0
    loc = lastmod = ""
    try:
        for start in range(0, len(data), _CHUNK):
            parser.feed(data[start:start + _CHUNK])
            for event, element in parser.read_events():
                name = element.tag.rpartition("}")[2]
                if event == "start":
                    depth += 1
                    if depth == 1:
                        if name not in ("urlset", "sitemapindex"):
                            raise SitemapRefused(f"root element <{name}> is neither <urlset> nor <sitemapindex>")
                        result = ParsedSitemap(index=name == "sitemapindex")
                    continue
                depth -= 1
                if depth == 2 and name == "loc":
                    loc = (element.text or "").strip()
                elif depth == 2 and name == "lastmod":
                    lastmod = element.text or ""
                elif depth == 1 and name in ("url", "sitemap"):
                    assert result is not None
                    _keep(result, name == "sitemap", base, loc, lastmod, max_urls)
                    loc = lastmod = ""
                    element.clear()
        parser.close()
    except ParseError as exc:
        raise SitemapRefused(f"not well-formed XML ({exc})") from exc
    if result is None:
        raise SitemapRefused("empty document")
    return result


def _keep(result: ParsedSitemap, child: bool, base: str, loc: str, lastmod: str, max_urls: int) -> None:
    """One ``<url>`` (or index ``<sitemap>``) into ``result``, unless over the limit or not a URL."""
    listed = result.children if child else result.entries
    try:  # (not through resolve's cache: a sitemap's 50,000 URLs are each met once, and would flush it)
        url = normalize(urljoin(base, loc)) if loc else None
    except (InvalidURL, ValueError):
        url = None
    if url is None or len(listed) >= max_urls or child != result.index:
        result.dropped += 1
        return
    listed.append(SitemapEntry(url, parse_lastmod(lastmod)))


class SitemapReader:
    """Reads the sitemaps of the crawl's start host: ``fetch(url)`` makes one budgeted request (the crawl's
    fetcher, its body capped at ``max_bytes``), ``allowed(url)`` is robots.txt, ``scope`` the crawl's; a
    document is read up to ``max_urls`` URLs and ``max_bytes`` bytes uncompressed (the protocol's limits).
    ``read`` returns the listed URLs that are in scope, in the order the sitemaps give them; ``refusals``
    keeps the reason of each document not read (also logged), ``documents`` the URLs of those read."""

    def __init__(self, fetch: Callable[[str], Response], scope: Scope, allowed: Callable[[str], bool],
                 max_documents: int = MAX_DOCUMENTS, max_entries: int = MAX_ENTRIES, max_urls: int = MAX_URLS,
                 max_bytes: int = MAX_BYTES) -> None:
        self._fetch = fetch
        self.max_urls, self.max_bytes = max_urls, max_bytes
        self.scope = scope
        self.allowed = allowed
        self.max_documents = max_documents
        self.max_entries = max_entries
        self.documents: list[str] = []
        self.refusals: list[str] = []
        self.out_of_scope = 0  # listed URLs outside the crawl's scope, left out

    def read(self, start_url: str, declared: Iterable[str]) -> list[SitemapEntry]:
        """Every URL the sitemaps of ``start_url``'s site list (``declared``: its robots.txt's ``Sitemap:``
        URLs; none = the well-known ``/sitemap.xml``). Raises ``CrawlInterrupted`` as the fetcher does."""
        roots = list(declared) or [resolve(start_url, WELL_KNOWN) or start_url]
        entries: dict[str, SitemapEntry] = {}
        seen: set[str] = set()
        queue: list[tuple[str, int, str]] = [(url, 0, "robots.txt" if declared else "") for url in roots]
        while queue:
            url, nesting, parent = queue.pop(0)
            children = self._document(url, nesting, parent, seen, entries)
            queue[0:0] = [(child, nesting + 1, url) for child in children]  # depth first: an index's order
        return list(entries.values())

    def _refuse(self, url: str, reason: str, quiet: bool = False) -> list[str]:
        message = f"sitemap {url} not read: {reason}"
        self.refusals.append(message)
        (log.info if quiet else log.warning)("%s", message)
        return []

    def _document(self, url: str, nesting: int, parent: str, seen: set[str],
                  entries: dict[str, SitemapEntry]) -> list[str]:
        """Read one document: its URLs into ``entries``; returns the child sitemaps an index lists."""
        try:
            url = normalize(url)
        except InvalidURL as exc:
            return self._refuse(url, f"not a valid URL ({exc})")
        if url in seen:
            return self._refuse(url, f"listed again by {parent} (an index loop or a self-reference)")
        seen.add(url)
        if url not in self.scope:
            return self._refuse(url, "outside the crawl's scope" + (f" (listed by {parent})" if parent else ""))
        if nesting > MAX_NESTING:
            return self._refuse(url, f"nested more than {MAX_NESTING} indexes deep")
        if len(self.documents) >= self.max_documents:
            return self._refuse(url, f"the crawl reads at most {self.max_documents} sitemap documents")
        if len(entries) >= self.max_entries:
            return self._refuse(url, f"the crawl takes at most {self.max_entries} sitemap URLs")
        if not self.allowed(url):
            return self._refuse(url, "robots.txt does not allow it")
        try:
            data, final = self._get(url)
            parsed = parse_sitemap(inflate(data, self.max_bytes), final, self.max_urls)
        except SitemapRefused as exc:
            return self._refuse(url, str(exc), quiet=not parent)  # a missing /sitemap.xml is no news
        self.documents.append(url)
        if parsed.dropped:
            log.warning("sitemap %s: %d entries left out (over the protocol's %d URLs a file, or not URLs)",
                        url, parsed.dropped, self.max_urls)
        if parsed.index:
            return [child.url for child in parsed.children]
        for entry in parsed.entries:
            if entry.url not in self.scope:
                self.out_of_scope += 1
            elif len(entries) < self.max_entries:
                entries.setdefault(entry.url, entry)
        return []

    def _get(self, url: str) -> tuple[bytes, str]:
        """One document's body and final URL (one redirect followed within the scope)."""
        resp = self._fetch(url)
        if resp.kind == "redirect":
            target = resolve(url, resp.location or "")
            if not target or target not in self.scope:
                raise SitemapRefused(f"redirected out of the crawl's scope ({target or resp.location})")
            if not self.allowed(target):
                raise SitemapRefused(f"redirected to {target}, which robots.txt does not allow")
            url, resp = target, self._fetch(target)
        try:
            if resp.kind == "html":
                return resp.body, url
            if resp.kind == "target" and resp.path is not None:
                return resp.path.read_bytes(), url
        finally:
            resp.discard()
        if resp.status is not None and resp.status >= 400:
            raise SitemapRefused(f"HTTP {resp.status}")
        raise SitemapRefused(resp.error or f"{resp.kind} response ({resp.mime or 'no content type'})")


def document_budget(max_requests: int) -> int:
    """Sitemap documents a crawl of ``max_requests`` requests reads at most: a small share of its budget."""
    return max(4, min(MAX_DOCUMENTS, int(BUDGET_SHARE * max_requests)))


class SitemapLinks:
    """The sitemap URLs of a run in its frontier: ``enter`` adds those new to the crawl to the link table
    and hands them to the policy (``add``). Saved in checkpoints, as a part of the crawl (a resumed run
    does not read the sitemaps again)."""

    def __init__(self) -> None:
        self.read = False  # the start host's sitemaps were read
        self.entered = 0  # URLs they added to the frontier

    def enter(self, entries: list[SitemapEntry], links: LinkTable, allowed: Callable[[str], bool],
              add: Callable[[list[NewLink]], None]) -> int:
        """The URLs of ``entries`` new to the crawl (and allowed by robots.txt) join the frontier, as links
        at depth 1 under the sitemaps' own tag path; returns how many. A URL met as a link on a page later
        is known by then: it stays where the sitemap put it."""
        new = []
        for entry in entries:
            if entry.url in links or not allowed(entry.url):
                continue
            link_id = links.add(entry.url, 1, -1, SITEMAP_TAG_PATH)
            new.append(NewLink(link_id, entry.url, SITEMAP_TAG_PATH, "", 1))
        self.read = True
        self.entered += len(new)
        if new:
            add(new)
        return len(new)

    @staticmethod
    def listed(links: LinkTable, link_id: int) -> bool:
        """Whether a link entered the crawl from a sitemap (not met as a link on a page first)."""
        path = links.path[link_id]
        return path >= 0 and links.paths[path] == SITEMAP_TAG_PATH

    # -- checkpoints -----------------------------------------------------------------------------------
    def state(self) -> dict:
        return {"read": self.read, "entered": self.entered}

    def arrays(self) -> dict[str, np.ndarray]:
        return {}

    def restore(self, state: dict, arrays: dict[str, np.ndarray]) -> None:
        self.read = bool(state.get("read", False))
        self.entered = int(state.get("entered", 0))


def apply_lastmod(entries: Iterable[SitemapEntry], memory_pages: dict, clock: str,
                  unchanged: Callable[[str], bool]) -> tuple[int, int]:
    """A warm run's use of ``<lastmod>``: each known page (``memory_pages``: the site memory's, by URL)
    whose lastmod is not newer than what the last run knew of it (its Last-Modified then, else the site's
    ``clock`` then, an ISO date) is as it was: ``unchanged(url)`` says so, as a 304 would, without a
    request, and returns whether the page was taken as vouched for. A newer lastmod leaves the page to the
    revisits. Returns (vouched, changed)."""
    vouched = changed = 0
    for entry in entries:
        page = memory_pages.get(entry.url)
        if page is None or not entry.lastmod:
            continue
        known = http_date_iso(page.last_modified) if page.last_modified else ""
        if not known and clock:
            known = parse_lastmod(clock)
            # The site's clock is a date: a lastmod later that same day is not known to be older.
            if entry.lastmod[:10] == known[:10]:
                continue
        if not known:
            continue
        if entry.lastmod <= known:
            vouched += unchanged(entry.url)
        else:
            changed += 1
    return vouched, changed
