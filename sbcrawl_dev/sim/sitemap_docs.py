"""XML sitemaps on a simulated site, as a CMS plugin publishes them: partial, and sometimes stale.

Only profiles with ``sitemap_share`` above 0 have one, on the www host: a ``<sitemapindex>`` at
``/sitemap_index.xml`` (declared by a ``Sitemap:`` line of robots.txt) or, for a profile with
``sitemap_declared`` False, at the well-known ``/sitemap.xml`` that robots.txt does not name. The index lists
children ``/sitemaps/pages-<k>.xml`` of ``sitemap_file_urls`` URLs each; a seeded ``sitemap_gzip_share`` of
them (the first always, when the share is above 0) is served gzipped as ``.xml.gz`` (``application/gzip``,
no Content-Encoding, as most servers send such files).

What is listed: a seeded ``sitemap_share`` of the HTML pages a polite crawler reaches from the start page,
on all of the site's hosts (one CMS serves them), the home page always, in the order of that walk; never
the files. Each entry's ``<lastmod>`` is the date
of the epoch in which the page's body last changed (its first state: a date before epoch 0); for a seeded
``sitemap_stale_share`` of the entries the plugin missed the last change, and the lastmod is the one
before it (stale: a changed page that claims it is not). The sitemap documents are not linked from any
page, so a site's URL count and truth are what they are without them.
"""

from __future__ import annotations

import gzip
import threading
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import TYPE_CHECKING

from sbcrawl_dev.sim import epochs, seeded
from sbcrawl_dev.sim.web import WWW, Response, Route

if TYPE_CHECKING:
    from sbcrawl_dev.sim.structure import SiteLayout

    # (a site.Site: not imported, site.py imports this module)
    Site = SiteLayout

INDEX_DECLARED = "/sitemap_index.xml"
INDEX_WELL_KNOWN = "/sitemap.xml"
_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
_XML = "application/xml; charset=utf-8"
_GZIP = "application/gzip"


@dataclass(frozen=True)
class Entry:
    url: str
    lastmod: datetime


def index_path(site: Site) -> str:
    return INDEX_DECLARED if site.profile.sitemap_declared else INDEX_WELL_KNOWN


def robots_lines(site: SiteLayout, host: str) -> list[str]:
    """The ``Sitemap:`` line of the www host's robots.txt (none when the sitemap is undeclared)."""
    p = site.profile
    if not p.sitemap_share or host != WWW or not p.sitemap_declared:
        return []
    return [f"Sitemap: http://{WWW}{INDEX_DECLARED}"]


def route(site: Site, path: str) -> Route | None:
    """The route of a sitemap document of the www host, or None."""
    if path == index_path(site):
        return Route("sitemap", "sitemap", (-1,))
    if path.startswith("/sitemaps/pages-"):
        name = path.removeprefix("/sitemaps/pages-")
        number, _, ext = name.partition(".")
        if number.isdigit() and int(number) < len(_children(site)) and ext == _ext(site, int(number)):
            return Route("sitemap", "sitemap", (int(number),))
    return None


def respond(site: Site, child: int) -> Response:
    """The index (``child`` -1) or a child sitemap, with a Last-Modified of its newest entry."""
    children = _children(site)
    if child < 0:
        rows = [f"<sitemap><loc>http://{WWW}/sitemaps/pages-{k}.{_ext(site, k)}</loc>"
                f"<lastmod>{_w3c(max(e.lastmod for e in chunk))}</lastmod></sitemap>"
                for k, chunk in enumerate(children)]
        body, mime = _document("sitemapindex", rows).encode(), _XML
        newest = max((e.lastmod for chunk in children for e in chunk), default=epochs.EPOCH0)
    else:
        chunk = children[child]
        rows = [f"<url><loc>{e.url.replace('&', '&amp;')}</loc><lastmod>{_w3c(e.lastmod)}</lastmod>"
                f"<changefreq>weekly</changefreq></url>" for e in chunk]
        body = _document("urlset", rows).encode()
        mime = _XML
        if _ext(site, child) == "xml.gz":
            body, mime = gzip.compress(body, mtime=0), _GZIP
        newest = max(e.lastmod for e in chunk)
    return Response(200, {"Content-Type": mime, "Content-Length": str(len(body)),
                          "Last-Modified": format_datetime(newest, usegmt=True)}, [body])


def entries(site: Site) -> list[Entry]:
    """Every URL the sitemap lists, with its lastmod (computed once per site)."""
    return [e for chunk in _children(site) for e in chunk]


_LOCK = threading.Lock()


def _children(site: Site) -> list[list[Entry]]:
    with _LOCK:
        cached = site.__dict__.get("_sitemap_children")
        if cached is None:
            listed = _listed(site)
            size = max(1, site.profile.sitemap_file_urls)
            cached = [listed[i:i + size] for i in range(0, len(listed), size)] or [[]]
            site.__dict__["_sitemap_children"] = cached
        return cached


def _listed(site: Site) -> list[Entry]:
    p, seed = site.profile, site.seed
    pages = [url for url in site._ground_truth().depth if site.kind(url) == "html"]
    chosen = [url for url in pages if url == site.start_url
              or seeded.chance(p.sitemap_share, seed, "sitemap-listed", url)]
    older = {e: _site_at(site, e) for e in range(site.epoch)}
    out = []
    for url in chosen:
        changes = _change_epochs(site, older, url)
        if changes and seeded.chance(p.sitemap_stale_share, seed, "sitemap-stale", url, site.epoch):
            changes = changes[:-1]  # the plugin missed the last change
        out.append(Entry(url, epochs.epoch_date(changes[-1]) if changes else _published(seed, url)))
    return out


def _site_at(site: Site, epoch: int) -> Site:
    return type(site)(site.profile, site.seed, site.crawl_delay, epoch=epoch)


def _change_epochs(site: Site, older: dict[int, Site], url: str) -> list[int]:
    """The epochs (1..site.epoch) in which the page's body changed."""
    bodies = [*(older[e].response("GET", url, count=False) for e in range(site.epoch)),
              site.response("GET", url, count=False)]
    seen = [(r.status, b"".join(r.body)) for r in bodies]
    return [e for e in range(1, len(seen)) if seen[e] != seen[e - 1]]


def _published(seed: int, url: str) -> datetime:
    """When a page unchanged since epoch 0 was last edited: over the two years before it."""
    return epochs.EPOCH0 - timedelta(days=seeded.randint(2, 730, seed, "page-published", url))


def _ext(site: Site, child: int) -> str:
    share = site.profile.sitemap_gzip_share
    gz = share > 0 and (child == 0 or seeded.chance(share, site.seed, "sitemap-gzip", child))
    return "xml.gz" if gz else "xml"


def _w3c(when: datetime) -> str:
    return when.astimezone(UTC).isoformat(timespec="seconds")


def _document(root: str, rows: list[str]) -> str:
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<{root} xmlns="{_NS}">\n' + "\n".join(rows)
            + f"\n</{root}>\n")
