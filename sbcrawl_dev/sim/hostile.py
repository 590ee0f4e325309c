"""Endpoints of the ``hostile`` profile: what a crawler meets on the worst real websites.

All of them hang off ``http://www.stats.example/archive`` (linked from the footer), next to an ordinary
small site, so a benchmark can measure what a crawler still retrieves when it survives them:

========================================  ==========================================================
``/archive/loop-a`` ↔ ``/archive/loop-b``  302 redirect loop; ``/archive/self`` redirects to itself
``/archive/full-listing``                  50 MB HTML page, streamed in chunks (Content-Length given)
``/data/bulk-export``                      gzip bomb: ~2 MB on the wire, gigabytes once decompressed
``/live/feed``                             slow drip: one byte every ``drip_interval`` seconds
``/api/series/<k>.csv``                    429 with ``Retry-After: 1`` the first ``busy_count`` times
``/legacy/page-<k>``                       malformed HTML: unclosed tags, garbage bytes, unknown
                                           charset, a 2 MB attribute (links still inside)
``/reports/summary.csv``                   a CSV served as text/html
``/reports/annual-report.pdf``             an HTML page served as application/pdf
``/private/archive/<n>``                   endless pages, disallowed in robots.txt (a honeypot)
========================================  ==========================================================

Streams are generators: nothing big is ever held in memory, and HEAD never starts them.
"""

from __future__ import annotations

import re
import time
import zlib
from collections.abc import Iterator

from sbcrawl_dev.sim import files, seeded
from sbcrawl_dev.sim.render import Html
from sbcrawl_dev.sim.structure import SiteLayout
from sbcrawl_dev.sim.web import Response, Route, html_response, redirect

# Sizes of what every hostile site serves; the knobs a site carries (bomb_bytes, busy_count, drip_interval,
# drip_bytes) are in layout.py.
HUGE_PAGE_BYTES = 50 * 1024 * 1024
BUSY_URLS = 5
MALFORMED_PAGES = 4

DISALLOW: dict[str, tuple[str, ...]] = {"www.stats.example": ("/private/",)}

_WWW = "http://www.stats.example"
_FIXED = {
    "/archive": ("html", "hostile_hub"),
    "/archive/loop-a": ("redirect", "hostile_redirect"),
    "/archive/loop-b": ("redirect", "hostile_redirect"),
    "/archive/self": ("redirect", "hostile_redirect"),
    "/archive/full-listing": ("html", "hostile_huge"),
    "/data/bulk-export": ("html", "hostile_bomb"),
    "/live/feed": ("html", "hostile_drip"),
    "/reports/summary.csv": ("html", "hostile_csv_as_html"),  # kinds follow the served MIME type
    "/reports/annual-report.pdf": ("target", "hostile_html_as_pdf"),
}
_REDIRECTS = {"/archive/loop-a": "/archive/loop-b", "/archive/loop-b": "/archive/loop-a",
              "/archive/self": "/archive/self"}


def route(site: SiteLayout, path: str, query: str) -> Route | None:
    if query:
        return None
    if path in _FIXED:
        kind, handler = _FIXED[path]
        return Route(kind, handler, (path,))
    m = re.fullmatch(r"/api/series/(\d+)\.csv", path)
    if m and int(m.group(1)) < BUSY_URLS:
        return Route("target", "hostile_busy", (int(m.group(1)),))
    m = re.fullmatch(r"/legacy/page-(\d+)", path)
    if m and int(m.group(1)) < MALFORMED_PAGES:
        return Route("html", "hostile_malformed", (int(m.group(1)),))
    m = re.fullmatch(r"/private/archive/(\d{1,30})", path)
    if m:
        return Route("trap", "hostile_robots_trap", (int(m.group(1)),))
    return None


def robots_noise(lines: list[str]) -> list[str]:
    """Real robots.txt files carry junk: a BOM, unknown directives, an empty Disallow, a huge comment."""
    return ["\ufeff# " + "x" * 5000, "Noindex: /tmp/", "Disallow:", *lines, "Host: www.stats.example",
            "Sitemap: http://www.stats.example/sitemap.xml"]


def _sample_resources(site: SiteLayout, k: int, key: object) -> list[str]:
    dids = seeded.sample(site.total_datasets, k, site.seed, "hostile-res", key)
    return [site.resources(d)[0].url for d in dids]


def links(site: SiteLayout, route: Route) -> list[str]:
    """The links a careful crawler can extract from a hostile HTML page (the ground truth uses these)."""
    h = route.handler
    if h == "hostile_hub":
        return _hub(site).links
    if h == "hostile_huge":
        return _huge_links(site)
    if h == "hostile_malformed":
        return _malformed_links(site, route.args[0])
    if h == "hostile_robots_trap":
        n = route.args[0]
        return [f"{_WWW}/private/archive/{n * 10 + i}" for i in range(10)]
    return []


def table(site: SiteLayout, route: Route) -> files.Table | None:
    if route.handler == "hostile_busy":
        return files.make_table(site.seed, ("busy", route.args[0]), site.profile.table_rows,
                                f"API{route.args[0]:03d}")
    if route.handler == "hostile_csv_as_html":
        return files.make_table(site.seed, ("csv-as-html",), site.profile.table_rows, "SUM001")
    return None


def _hub(site: SiteLayout) -> Html:
    b = Html(_WWW)
    b.raw("<!DOCTYPE html><html><head><title>Archive</title></head><body><h1>Archive</h1>")
    with b.tag("ul", "archive-list"):
        paths = [p for p in _FIXED if p != "/archive"]
        paths += [f"/api/series/{k}.csv" for k in range(BUSY_URLS)]
        paths += [f"/legacy/page-{k}" for k in range(MALFORMED_PAGES)]
        paths.append("/private/archive/1")
        for p in paths:
            with b.tag("li"):
                b.a(_WWW + p, p.rsplit("/", 1)[-1])
    with b.tag("p"):
        b.a(site.start_url, "Home")
    b.raw("</body></html>\n")
    return b


def _huge_links(site: SiteLayout) -> list[str]:
    return [site.start_url, *_sample_resources(site, 3, "huge")]


def _malformed_links(site: SiteLayout, k: int) -> list[str]:
    return [site.start_url, site.dataset_url(seeded.randint(0, site.total_datasets - 1, site.seed, "mal", k)),
            *_sample_resources(site, 2, ("mal", k))]


def _malformed_body(site: SiteLayout, k: int) -> tuple[bytes, str]:
    """Body and Content-Type of malformed page ``k``."""
    urls = _malformed_links(site, k)
    anchors = "".join(f'<li><a href="{u}">Document {i}' for i, u in enumerate(urls))  # no </a>, no </li>
    if k == 0:  # unclosed and misnested tags
        body = (f"<html><head><title>Legacy page<body><div class=content><table><tr><td><ul>{anchors}"
                "<p>Unclosed paragraph <b><i>misnested</b></i><div><span>").encode()
        return body, "text/html; charset=utf-8"
    if k == 1:  # binary garbage between the tags
        garbage = bytes(seeded.h64(site.seed, "garbage", i) % 256 for i in range(3000))
        body = b"<html><body>" + garbage[:1500] + f"<ul>{anchors}</ul>".encode() + garbage[1500:] + b"\x00\xff"
        return body, "text/html; charset=utf-8"
    if k == 2:  # a charset nobody knows, and bytes that are not UTF-8 either
        body = (f'<html><head><meta charset="x-klingon-9"><title>Données régionales</title></head><body>'
                f"<p>Résultats détaillés, année précédente</p><ul>{anchors}</ul></body></html>").encode("cp1252")
        return body, "text/html; charset=x-klingon-9"
    payload = "A" * (2 * 1024 * 1024)  # one attribute of 2 MB
    body = f'<html><body><div data-payload="{payload}"><ul>{anchors}</ul></div></body></html>'.encode()
    return body, "text/html; charset=utf-8"


def _huge_page(site: SiteLayout) -> tuple[int, Iterator[bytes]]:
    urls = _huge_links(site)
    anchors = "".join(f'<li><a href="{u}">{u}</a></li>' for u in urls)
    head = f"<!DOCTYPE html><html><head><title>Full listing</title></head><body><ul>{anchors}</ul><pre>".encode()
    tail = b"</pre></body></html>\n"
    line = b"0000000000 record archived listing entry with no link at all ...................................\n"
    chunk = line * (65536 // len(line))
    fill = HUGE_PAGE_BYTES - len(head) - len(tail)

    def stream() -> Iterator[bytes]:
        yield head
        left = fill
        while left > 0:
            part = chunk if left >= len(chunk) else chunk[:left]
            left -= len(part)
            yield part
        yield tail

    return HUGE_PAGE_BYTES, stream()


def _gzip_bomb(total: int) -> Iterator[bytes]:
    """A gzip stream of ``total`` bytes (an HTML prefix then zeros), compressed on the fly 1 MiB at a time."""
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    prefix = b"<!DOCTYPE html><html><body><pre>"
    yield comp.compress(prefix)
    block = bytes(1 << 20)
    left = total - len(prefix)
    while left > 0:
        part = block if left >= len(block) else block[:left]
        left -= len(part)
        out = comp.compress(part)
        if out:
            yield out
    yield comp.flush()


def _drip(interval: float, n: int) -> Iterator[bytes]:
    text = b"<!DOCTYPE html><html><body><p>" + b"." * n
    for i in range(min(n, len(text))):
        if i:
            time.sleep(interval)
        yield text[i : i + 1]


def respond(site: SiteLayout, route: Route, url: str, count: bool) -> Response:
    h = route.handler
    if h == "hostile_hub":
        return html_response(_hub(site).html())
    if h == "hostile_redirect":
        return redirect(301 if route.args[0] == "/archive/self" else 302, _WWW + _REDIRECTS[route.args[0]])
    if h == "hostile_huge":
        size, stream = _huge_page(site)
        return Response(200, {"Content-Type": "text/html; charset=utf-8", "Content-Length": str(size)}, stream)
    if h == "hostile_bomb":
        return Response(200, {"Content-Type": "text/html; charset=utf-8", "Content-Encoding": "gzip",
                              "Connection": "close"}, _gzip_bomb(site.bomb_bytes))
    if h == "hostile_drip":
        return Response(200, {"Content-Type": "text/html; charset=utf-8", "Connection": "close"},
                        _drip(site.drip_interval, site.drip_bytes))
    if h == "hostile_busy":
        if site.hits(url, count) < site.busy_count:
            body = b"<html><body><h1>429 Too Many Requests</h1></body></html>\n"
            return Response(429, {"Content-Type": "text/html; charset=utf-8", "Retry-After": "1",
                                  "Content-Length": str(len(body))}, [body])
        data = files.csv_bytes(table(site, route))  # type: ignore[arg-type]
        return Response(200, {"Content-Type": "text/csv", "Content-Length": str(len(data))}, [data])
    if h == "hostile_malformed":
        body, ctype = _malformed_body(site, route.args[0])
        return Response(200, {"Content-Type": ctype, "Content-Length": str(len(body))}, [body])
    if h == "hostile_csv_as_html":
        data = files.csv_bytes(table(site, route))  # type: ignore[arg-type]
        return Response(200, {"Content-Type": "text/html", "Content-Length": str(len(data))}, [data])
    if h == "hostile_html_as_pdf":
        body = b"<!DOCTYPE html><html><body><h1>Annual report</h1><p>Moved.</p></body></html>\n"
        return Response(200, {"Content-Type": "application/pdf", "Content-Length": str(len(body))}, [body])
    if h == "hostile_robots_trap":
        b = Html(_WWW)
        b.raw("<html><body><h1>Private archive</h1><ul>")
        for u in links(site, route):
            b.raw("<li>")
            b.a(u, u.rsplit("/", 1)[1])
            b.raw("</li>")
        b.raw("</ul></body></html>\n")
        return html_response(b.html())
    raise KeyError(h)
