"""The lean page path gives the results of the plain one, on real pages of the simulator.

Each fast part of the page path (link extraction with tag paths, URL resolution, scope and extension
checks, URL features, action assignment) is compared with a plain reference written here the obvious way
(the way the crawler did it before it was made faster), on the pages of several simulated sites and
on odd documents."""

from __future__ import annotations

from itertools import pairwise
from urllib.parse import urljoin, urlsplit

import lxml.html
import numpy as np
import pytest
from protego import Protego

from airflow_sbcrawl.crawler.actions import ActionIndex
from airflow_sbcrawl.crawler.classify import _ALPHABET, _FIRST, _LAST, url_features
from airflow_sbcrawl.crawler.frontier import LeveledQueue
from airflow_sbcrawl.crawler.html import PageLink, extract_links
from airflow_sbcrawl.crawler.robots import RobotsRules
from airflow_sbcrawl.crawler.tagpath import TagPathVectorizer
from airflow_sbcrawl.crawler.urls import _SKIPPED_SCHEMES, InvalidURL, Scope, extension, host_of, normalize, resolve
from sbcrawl_dev.bench.pagecost import SavedSite, capture_sources

_PROFILES = ["sim:portal", "sim:large", "sim:deep"]


@pytest.fixture(scope="module")
def saved_sites(tmp_path_factory) -> list[SavedSite]:
    return capture_sources(_PROFILES, 25, tmp_path_factory.mktemp("pages"), eval_dir=None)


def _pages(sites: list[SavedSite]) -> list[tuple[str, bytes]]:
    return [(url, (site.folder / name).read_bytes()) for site in sites for url, name in site.pages]


# -- references: the plain way -------------------------------------------------------------------------
def _reference_resolve(base: str, href: str) -> str | None:
    href = href.strip()
    if not href or href.lower().startswith(_SKIPPED_SCHEMES):
        return None
    try:
        return normalize(urljoin(base, href))
    except (InvalidURL, ValueError):
        return None


def _reference_label(el) -> str:
    label = (el.tag if isinstance(el.tag, str) else "?").lower()
    ident = el.get("id")
    if ident and ident.count("-") + ident.count("_") < 3 and len(ident) <= 24:  # else made from content
        label += "#" + ident.strip()[:64].replace(" ", "")
    if el.get("class"):
        label += "".join("." + c[:64] for c in el.get("class").split())
    return label


def _reference_links(body: bytes, page_url: str, max_links: int | None = None) -> list[PageLink]:
    attrs = {"a": "href", "area": "href", "iframe": "src", "frame": "src"}
    if not body.strip():
        return []
    try:
        root = lxml.html.document_fromstring(body, parser=lxml.html.HTMLParser(recover=True, no_network=True))
    except (lxml.etree.ParserError, ValueError, LookupError, lxml.etree.XMLSyntaxError):
        return []
    base = page_url
    for base_el in root.iter("base"):
        if base_el.get("href"):
            base = _reference_resolve(page_url, base_el.get("href")) or page_url
        break
    links = []
    for seen, el in enumerate(root.iter(*attrs)):
        if max_links is not None and seen >= max_links:
            break
        target = el.get(attrs[el.tag])
        url = _reference_resolve(base, target) if target else None
        if url is None:
            continue
        path = " ".join(_reference_label(e) for e in [*reversed(list(el.iterancestors())), el])
        anchor = " ".join(el.text_content().split())[:120] if el.tag == "a" else ""
        title = (el.get("title") or "")[:120]
        links.append(PageLink(url, path, anchor, title))
    return links


# -- the comparisons -----------------------------------------------------------------------------------
def test_links_tag_paths_and_anchors_are_those_of_the_plain_ancestor_walk(saved_sites):
    pages = _pages(saved_sites)
    assert len(pages) == 25 * len(_PROFILES)
    total = 0
    for url, body in pages:
        expected = _reference_links(body, url)
        assert extract_links(body, url, rows=False) == expected, url  # rows: tests/test_link_text.py
        assert extract_links(body, url, max_links=7, rows=False) == _reference_links(body, url, max_links=7), url
        total += len(expected)
    assert total > 20 * len(pages)  # real pages, with their menus and lists


def test_links_of_odd_documents_match_too():
    odd = [
        b"<a href='/x'>top-level link</a>",
        b"<html><head><base href='https://other.example/dir/'></head><body><a href='y'>y</a></body></html>",
        b"<!-- only a comment -->",
        b"<p><a href='/a'>one <b>bold</b> <!-- c --> two</a><area href='/m'><iframe src='/f'></iframe>",
        b"<div id='main  x' class='a  b'><a href='mailto:x@y'>m</a><a href=' /s p '>s</a><a href=''>e</a></div>",
        b"<a href='http://[::1'>bad</a><a href='//cdn.example/x'>cdn</a><a href='?q=1#f'>q</a>",
        "<a href='/é'>é</a>".encode("latin-1"),
    ]
    for body in odd:
        assert extract_links(body, "http://www.site.example/p/q", rows=False) == \
            _reference_links(body, "http://www.site.example/p/q")


def test_resolution_scope_and_extension_match_the_url_parsing_ones(saved_sites):
    hrefs = {(url, el.get("href") or "") for url, body in _pages(saved_sites)
             for el in lxml.html.document_fromstring(body).iter("a")}
    hrefs |= {("http://www.stats.example/a/b", h) for h in (
        "HTTP://WWW.Stats.Example:80/x", "https://stats.example:443/y?b=1", "http://data.stats.example:8080/z",
        "https://evil.example/", "http://stats.example.evil.example/", "http://www.stats.example/a.b/c",
        "http://www.stats.example/f.CSV?x=1", "http://www.stats.example/.hidden", "http://user@stats.example/q")}
    scope = Scope("http://www.stats.example/")
    checked = 0
    for base, href in sorted(hrefs):
        url = resolve(base, href)
        assert url == _reference_resolve(base, href)
        if url is None:
            continue
        parts = urlsplit(url)
        host = (parts.hostname or "").lower().removeprefix("www.")
        port = parts.port or {"http": 80, "https": 443}[parts.scheme]
        in_scope = (host == "stats.example" or host.endswith(".stats.example")) and \
            (parts.scheme, port) in {("http", 80), ("https", 443)}
        assert (url in scope) == in_scope, url
        segment = parts.path.rsplit("/", 1)[-1]
        assert extension(url) == (segment.rsplit(".", 1)[-1].lower() if "." in segment else ""), url
        assert host_of(url) == parts.netloc, url
        checked += 1
    assert checked > 500


def _reference_features(url: str) -> dict[int, float]:
    codes = [ord(c) - _FIRST if _FIRST <= ord(c) <= _LAST else _ALPHABET - 1 for c in url]
    counts: dict[int, int] = {}
    for a, b in pairwise(codes):
        counts[a * _ALPHABET + b] = counts.get(a * _ALPHABET + b, 0) + 1
    norm = np.sqrt(sum(c * c for c in counts.values())) or 1.0
    return {g: c / norm for g, c in counts.items()}


def test_url_features_of_a_page_at_once_match_url_by_url(saved_sites):
    urls = sorted({link.url for url, body in _pages(saved_sites)[:40] for link in extract_links(body, url)})
    urls += ["", "h", "http://x.example/ünïcode/ß?q=€", "http://x.example/aaaa"]
    indptr, indices, values = url_features(urls)
    assert len(indptr) == len(urls) + 1
    for i, url in enumerate(urls):
        lo, hi = indptr[i], indptr[i + 1]
        got = dict(zip(indices[lo:hi].tolist(), values[lo:hi].tolist(), strict=True))
        expected = _reference_features(url)
        assert got.keys() == expected.keys(), url
        assert all(abs(got[g] - expected[g]) < 1e-12 for g in got), url


def test_exact_action_assignment_matches_the_hnsw_one(saved_sites):
    vectorizer = TagPathVectorizer()
    paths = [link.tag_path for url, body in _pages(saved_sites) for link in extract_links(body, url)]
    for theta in (0.55, 0.75, 0.95):
        exact = ActionIndex(vectorizer.dim, theta, exact_below=10**9)
        switching = ActionIndex(vectorizer.dim, theta, exact_below=8)  # exact, then HNSW from its 8th action
        indexed = ActionIndex(vectorizer.dim, theta, exact_below=0)
        got = [exact.assign(vectorizer.transform_one(p), 1, key=p) for p in paths]
        expected = [indexed.assign(vectorizer.transform_one(p), 1, key=p) for p in paths]
        assert got == expected
        assert [switching.assign(vectorizer.transform_one(p), 1, key=p) for p in paths] == expected
        assert switching._index is not None and exact._index is None
        assert 10 < len(exact) < len(set(paths))
        assert np.array_equal(exact.sizes, indexed.sizes)


def test_robots_rules_found_by_url_prefix_are_those_of_the_url_origin(saved_sites):
    texts = {"http://www.stats.example": "User-agent: *\nDisallow: /search\nDisallow: /*?sort=\n",
             "http://data.stats.example": "User-agent: *\nDisallow: /\n"}
    fetched: list[str] = []

    def fetch_text(url: str) -> tuple[int | None, str, str]:
        fetched.append(url)
        origin = url.removesuffix("/robots.txt")
        return (200, texts[origin], "") if origin in texts else (404, "", "")

    robots = RobotsRules("sbcrawl/1.0", fetch_text)
    urls = [link.url for url, body in _pages(saved_sites)[:30] for link in extract_links(body, url)]
    urls += ["http://www.stats.example/search?q=1", "http://data.stats.example/x", "HTTP://data.stats.example/x",
             "http://www.stats.example/list?sort=asc", "http://other.example/search"]
    for url in urls:
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        expected = Protego.parse(texts.get(origin, "")).can_fetch(url, "sbcrawl")
        assert robots.allowed(url) == expected, url
    assert not robots.allowed("http://data.stats.example/x") and robots.allowed("http://www.stats.example/")
    assert len(fetched) == len(set(fetched))  # each robots.txt read once


def test_a_restored_queue_is_the_queue_built_link_by_link():
    rng = np.random.default_rng(3)
    ids, levels = rng.integers(0, 10**6, 500), rng.integers(0, 6, 500).astype(np.int16)
    plain = LeveledQueue()
    for item, level in zip(ids.tolist(), levels.tolist(), strict=True):
        plain.add(item, level)
    restored = LeveledQueue.from_arrays(*plain.to_arrays())
    assert all(np.array_equal(a, b) for a, b in zip(restored.to_arrays(), plain.to_arrays(), strict=True))
    assert len(restored) == len(plain) == 500
    r1, r2 = np.random.default_rng(5), np.random.default_rng(5)
    assert [restored.pop(r1) for _ in range(500)] == [plain.pop(r2) for _ in range(500)]
    assert len(LeveledQueue.from_arrays(np.zeros(0, np.int64), np.zeros(0, np.int16))) == 0


def test_extension_by_position_is_that_of_the_parsed_path():
    urls = ["http://h.example?x=/a.csv", "http://h.example#f/x.pdf", "http://h.example/a#b?c.pdf",
            "http://h.example/a?b#c.zip", "https://", "http://h.example", "http://h.example/", "http://h.example/a.b/",
            "http://h.example/d/f.CSV?x=1.xls", "http://h.example/.hidden", "http://h.example/f.tar.gz#top",
            "HTTP://h.example/x.CSV", "http://h.example/x.csv\t", "ftp://h.example/x.csv", "x.csv", "",
            "http://u:p@h.example:8080/r/report.2024.PDF"]
    for url in urls:
        segment = urlsplit(url).path.rsplit("/", 1)[-1]
        assert extension(url) == (segment.rsplit(".", 1)[-1].lower() if "." in segment else ""), url


def test_cached_charset_is_the_email_package_reading():
    from airflow_sbcrawl.crawler.html import charset_of

    plain = charset_of.__wrapped__  # the reading itself, without the cache

    types = [None, "", "text/html", "text/html; charset=utf-8", "text/html;charset=\"ISO-8859-1\"",
             "TEXT/HTML; Charset=Windows-1252; q=1", "text/html; charset*=utf-8''latin-1", "text/html; charset=",
             "garbage;;;=", "text/html; charset=utf-8; charset=latin-1"]
    for content_type in types * 2:  # the second time from the cache
        assert charset_of(content_type) == plain(content_type), content_type
    assert charset_of("text/html; charset=utf-8") == "utf-8"
    assert charset_of('text/html;charset="ISO-8859-1"') == "ISO-8859-1"  # quotes dropped
    assert charset_of("TEXT/HTML; Charset=Windows-1252; q=1") == "Windows-1252"  # parameter names any case
    assert charset_of("text/html") is None and charset_of("") is None and charset_of(None) is None
    assert charset_of.cache_info().hits >= len(types)


def test_action_norms_are_numpys_to_the_bit(saved_sites):
    from airflow_sbcrawl.crawler.actions import _norm

    vectorizer = TagPathVectorizer()
    vectors = [vectorizer.transform_one(link.tag_path) for url, body in _pages(saved_sites)[:20]
               for link in extract_links(body, url)]
    rng = np.random.default_rng(1)
    vectors += [rng.random(vectorizer.dim, dtype=np.float32) * 7, np.zeros(vectorizer.dim, np.float32),
                rng.random(33)]  # a float64 one too
    for vector in vectors:
        got, expected = _norm(vector), np.linalg.norm(vector)
        assert got.dtype == expected.dtype and got.tobytes() == expected.tobytes()


def test_links_to_known_urls_are_left_out_and_nothing_else(saved_sites):
    known: set[str] = set()
    left_out = 0
    for url, body in _pages(saved_sites):  # in crawl order: each page's links are known on the next pages
        every = extract_links(body, url)
        got = extract_links(body, url, known=known)
        assert got == [link for link in every if link.url not in known], url
        assert extract_links(body, url, max_links=7, known=known) == \
            [link for link in extract_links(body, url, max_links=7) if link.url not in known], url
        left_out += len(every) - len(got)
        known.update(link.url for link in every)
    assert left_out > 10 * len(saved_sites) * 25  # menus: most links of most pages are known
