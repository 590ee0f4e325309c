"""XML sitemaps: read through the crawl's own fetcher (robots.txt, budget, scope) from real HTTP servers on
127.0.0.1, bounded and refused as the protocol and safety say; their pages join a cold crawl's frontier, and
an unchanged lastmod spares a warm crawl its revisit. Requests are counted on the servers' own logs."""

from __future__ import annotations

import gzip
import http.server
import logging
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from airflow_sbcrawl.crawler import CrawlConfig, Crawler, LocalSink, LocalStateStore
from airflow_sbcrawl.crawler import memory as site_memory
from airflow_sbcrawl.crawler.budget import Budget, BudgetExhausted
from airflow_sbcrawl.crawler.fetch import Fetcher
from airflow_sbcrawl.crawler.robots import RobotsRules, robots_txt_reader
from airflow_sbcrawl.crawler.sitemaps import (
    MAX_BYTES,
    MAX_URLS,
    SitemapReader,
    SitemapRefused,
    inflate,
    parse_lastmod,
    parse_sitemap,
)
from airflow_sbcrawl.crawler.urls import Scope
from sbcrawl_dev.sim import build_site, epochs, get_profile
from sbcrawl_dev.sim import sitemap_docs as sim_sitemaps

_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"


def urlset(urls: list[str], lastmod: str = "") -> bytes:
    mod = f"<lastmod>{lastmod}</lastmod>" if lastmod else ""
    rows = "".join(f"<url><loc>{u}</loc>{mod}<changefreq>daily</changefreq></url>" for u in urls)
    return f'<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="{_NS}">{rows}</urlset>'.encode()


def index(children: list[str]) -> bytes:
    rows = "".join(f"<sitemap><loc>{u}</loc></sitemap>" for u in children)
    return f'<?xml version="1.0"?><sitemapindex xmlns="{_NS}">{rows}</sitemapindex>'.encode()


class Documents:
    """A real HTTP server on 127.0.0.1 serving fixed documents by path, logging every request it gets."""

    def __init__(self) -> None:
        self.files: dict[str, tuple[bytes, dict[str, str]]] = {}
        self.log: list[str] = []
        docs = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:
                docs.log.append(self.path)
                body, headers = docs.files.get(self.path, (b"not found", {"Content-Type": "text/plain"}))
                self.send_response(200 if self.path in docs.files else 404)
                for name, value in {**headers, "Content-Length": str(len(body))}.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def add(self, path: str, body: bytes, mime: str = "application/xml", **headers: str) -> str:
        self.files[path] = (body, {"Content-Type": mime, **headers})
        return self.base + path


@pytest.fixture
def docs() -> Iterator[Documents]:
    served = Documents()
    yield served
    served.server.shutdown()
    served.server.server_close()


def read_sitemaps(docs: Documents, max_requests: int = 100, max_urls: int = MAX_URLS,
                  max_bytes: int = MAX_BYTES) -> tuple[SitemapReader, list, Budget]:
    """The reader as the crawl makes it: its fetcher, its budget, its robots.txt, its scope."""
    config = CrawlConfig(docs.base + "/", delay=0.0, max_requests=max_requests)
    budget = Budget(config.max_requests, config.max_bytes)
    fetcher = Fetcher(config, budget)
    scope = Scope(config.start_url)
    robots = RobotsRules(config.user_agent, robots_txt_reader(fetcher, scope, Counter()))
    reader = SitemapReader(lambda url: fetcher.fetch(url, max_body=max_bytes), scope, robots.allowed,
                           max_urls=max_urls, max_bytes=max_bytes)
    try:
        robots.allowed(config.start_url)  # reads robots.txt, as the crawl does first
        return reader, reader.read(config.start_url, robots.sitemaps(config.start_url)), budget
    finally:
        fetcher.close()


def test_an_index_of_plain_and_gzipped_children_declared_in_robots_txt_is_read(docs):
    base = docs.base
    docs.add("/robots.txt", f"User-agent: *\nDisallow: /private/\nSitemap: {base}/sitemap_index.xml\n".encode(),
             "text/plain")
    docs.add("/sitemap_index.xml", index([f"{base}/s/pages.xml", f"{base}/s/news.xml.gz", f"{base}/s/data.xml"]))
    docs.add("/s/pages.xml", urlset([f"{base}/a", f"{base}/b?x=1&amp;y=2", f"{base}/private/c"],
                                    "2024-05-01T10:00:00+02:00"))
    docs.add("/s/news.xml.gz", gzip.compress(urlset([f"{base}/news/1", f"{base}/news/2"], "2024-06")),
             "application/gzip")
    # A child gzipped in transit (Content-Encoding), as servers compress XML on the fly.
    docs.add("/s/data.xml", gzip.compress(urlset([f"{base}/data/1"], "2024-07-02"), mtime=0),
             "application/xml", **{"Content-Encoding": "gzip"})
    reader, entries, budget = read_sitemaps(docs)
    by_url = {e.url: e.lastmod for e in entries}
    assert by_url == {f"{base}/a": "2024-05-01T08:00:00+00:00", f"{base}/b?x=1&y=2": "2024-05-01T08:00:00+00:00",
                      f"{base}/private/c": "2024-05-01T08:00:00+00:00",
                      f"{base}/news/1": "2024-06-01T00:00:00+00:00", f"{base}/news/2": "2024-06-01T00:00:00+00:00",
                      f"{base}/data/1": "2024-07-02T00:00:00+00:00"}
    assert reader.refusals == [] and len(reader.documents) == 4
    # robots.txt, the index, three children: every one a request of the budget, none asked twice.
    assert sorted(docs.log) == sorted(["/robots.txt", "/sitemap_index.xml", "/s/pages.xml", "/s/news.xml.gz",
                                       "/s/data.xml"])
    assert budget.requests == len(docs.log)


def test_without_a_sitemap_line_the_well_known_url_is_probed_once(docs):
    docs.add("/robots.txt", b"User-agent: *\nDisallow:\n", "text/plain")
    reader, entries, budget = read_sitemaps(docs)
    assert entries == [] and docs.log == ["/robots.txt", "/sitemap.xml"] and budget.requests == 2
    assert reader.refusals == [f"sitemap {docs.base}/sitemap.xml not read: HTTP 404"]


def test_bombs_loops_overlong_files_and_foreign_sitemaps_are_refused_with_their_reason(docs, caplog):
    base = docs.base
    docs.add("/robots.txt", f"User-agent: *\nDisallow: /secret\nSitemap: {base}/sitemap.xml\n".encode(),
             "text/plain")
    docs.add("/sitemap.xml", index([f"{base}/sitemap.xml", f"{base}/bomb.xml.gz", f"{base}/laughs.xml",
                                    "http://sitemaps.elsewhere.example/sitemap.xml", f"{base}/secret.xml",
                                    f"{base}/inner.xml", f"{base}/big.xml"]))
    docs.add("/inner.xml", index([f"{base}/sitemap.xml"]))  # a loop back to the top
    # 6 MB of whitespace gzipped to a few KB: stopped past the limit (the protocol's 50 MB; 5 MB here, to keep
    # the test quick), never held whole.
    bomb = gzip.compress(b"<urlset>" + b" " * (6 * 1024 * 1024) + b"</urlset>")
    docs.add("/bomb.xml.gz", bomb, "application/gzip")
    laughs = (b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;">]>'
              b'<urlset xmlns="' + _NS.encode() + b'"><url><loc>&lol2;</loc></url></urlset>')
    docs.add("/laughs.xml", laughs)
    docs.add("/secret.xml", urlset([f"{base}/hidden"]))
    # Over the limit of URLs a file (the protocol's 50,000; 1,000 here, to keep the test quick).
    docs.add("/big.xml", urlset([f"{base}/p/{i}" for i in range(1005)]))
    with caplog.at_level(logging.INFO, logger="airflow_sbcrawl.crawler.sitemaps"):
        reader, entries, budget = read_sitemaps(docs, max_urls=1000, max_bytes=5 * 1024 * 1024)
    reasons = "\n".join(reader.refusals)
    assert f"{base}/sitemap.xml not read: listed again by {base}/sitemap.xml" in reasons  # self-reference
    assert f"{base}/sitemap.xml not read: listed again by {base}/inner.xml" in reasons  # a loop
    assert f"{base}/bomb.xml.gz not read: expands past" in reasons
    assert f"{base}/laughs.xml not read: declares a DTD" in reasons
    assert "http://sitemaps.elsewhere.example/sitemap.xml not read: outside the crawl's scope" in reasons
    assert f"{base}/secret.xml not read: robots.txt does not allow it" in reasons
    assert len(reader.refusals) == 6
    # The file over the limit: its first 1,000 URLs taken, the rest left out and said so.
    assert len(entries) == 1000 and entries[-1].url == f"{base}/p/999"
    assert f"sitemap {base}/big.xml: 5 entries left out (over the protocol's 1000 URLs" in caplog.text
    assert all(r in caplog.text for r in reader.refusals)
    # Refused before a request: the foreign host, the robots-disallowed file, the loops.
    assert sorted(docs.log) == sorted(["/robots.txt", "/sitemap.xml", "/bomb.xml.gz", "/laughs.xml", "/inner.xml",
                                       "/big.xml"])
    assert budget.requests == len(docs.log)


def test_sitemap_requests_are_paid_from_the_budget(docs):
    base = docs.base
    docs.add("/robots.txt", f"Sitemap: {base}/i.xml\n".encode(), "text/plain")
    docs.add("/i.xml", index([f"{base}/c{k}.xml" for k in range(5)]))
    for k in range(5):
        docs.add(f"/c{k}.xml", urlset([f"{base}/page/{k}"]))
    with pytest.raises(BudgetExhausted):
        read_sitemaps(docs, max_requests=4)
    assert len(docs.log) == 4  # robots.txt, the index, two children: then the budget is spent


def test_documents_are_parsed_strictly_and_dates_read_as_w3c_datetimes():
    with pytest.raises(SitemapRefused, match="not XML"):
        parse_sitemap(b"oops, a text page", "http://a.example/")
    with pytest.raises(SitemapRefused, match="neither"):
        parse_sitemap(b"<html><body>soft 404</body></html>", "http://a.example/")
    with pytest.raises(SitemapRefused, match="does not gunzip"):
        inflate(b"\x1f\x8bnot gzip at all")
    parsed = parse_sitemap(urlset(["/relative", "http://a.example/x", ""]), "http://a.example/s.xml")
    assert [e.url for e in parsed.entries] == ["http://a.example/relative", "http://a.example/x"]
    assert parsed.dropped == 1
    assert parse_lastmod("2024") == "2024-01-01T00:00:00+00:00"
    assert parse_lastmod("2024-05-01T23:30:00-01:00") == "2024-05-02T00:30:00+00:00"
    assert parse_lastmod("2024-05-01T10:00:00.25Z") == "2024-05-01T10:00:00+00:00"
    assert parse_lastmod("yesterday") == ""


# -- crawls of the simulator with sitemaps ---------------------------------------------------------------
DEEP = get_profile("deep").with_(name="deep-sitemap-test", datasets_per_section=(20, 30), news=60, publications=30,
                                 sitemap_share=0.6, sitemap_declared=False, sitemap_gzip_share=1.0,
                                 sitemap_file_urls=100)
TINY = get_profile("tiny").with_(name="tiny-sitemap-test", datasets_per_section=(6, 10), new_dataset_share=0.2,
                                 update_share=0.25, sitemap_share=0.7, sitemap_file_urls=40,
                                 sitemap_gzip_share=0.5)


def crawl(site, out: Path, **options):
    config = CrawlConfig(site.start_url, **{"delay": 0.0, "concurrency": 1, "seed": 3, "early_stopping": False,
                                            "checkpoint_every_pages": 10**6, **options})
    return Crawler(config, LocalSink(out), LocalStateStore(out / "state"), memory=LocalStateStore(out / "memory"),
                   tmp_dir=str(out)).run()


def test_a_cold_crawl_with_the_sitemap_reaches_deep_pages_sooner(sim_server, sim_proxy_env, tmp_path):
    site = build_site(DEEP, 1)
    listed = {e.url for e in sim_sitemaps.entries(site)}  # (built before the server: the first request is quick)
    deep = {u for u in listed if (site.depth(u) or 0) >= 6}
    assert deep
    first_deep = {}
    for sitemaps in (True, False):
        srv = sim_server(site)
        sim_proxy_env(srv)
        summary = crawl(site, tmp_path / str(sitemaps), max_requests=400, sitemaps=sitemaps)
        log = srv.log
        assert summary.requests == len(log)  # the sitemap documents are requests of the budget
        documents = [e.url for e in log if site.kind(e.url) == "sitemap"]
        assert len(documents) == (1 + len(sim_sitemaps._children(site)) if sitemaps else 0)
        depths = [site.depth(e.url) or 0 for e in log if e.method == "GET" and site.kind(e.url) == "html"]
        first_deep[sitemaps] = next((i for i, d in enumerate(depths) if d >= 6), len(depths))
    assert first_deep[True] < first_deep[False]
    assert (tmp_path / "True" / "objects").exists()


def test_a_warm_crawl_skips_the_revisits_an_unchanged_lastmod_vouches_for(sim_server, sim_proxy_env, tmp_path):
    before, after = build_site(TINY, 2, epoch=0), build_site(TINY, 2, epoch=1)
    entries = {e.url: e.lastmod for e in sim_sitemaps.entries(after)}
    requested, known = {}, {}
    for sitemaps in (True, False):
        out = tmp_path / str(sitemaps)
        first = sim_server(before)
        sim_proxy_env(first)
        crawl(before, out, max_requests=500, sitemaps=sitemaps)
        memory = site_memory.load(LocalStateStore(out / "memory"), before.start_url)
        assert memory is not None
        known[sitemaps] = set(memory.pages)
        second = sim_server(after)
        sim_proxy_env(second)
        summary = crawl(after, out, max_requests=500, sitemaps=sitemaps)
        assert summary.warm_from
        requested[sitemaps] = {e.url for e in second.log if e.method == "GET"}
    # Known pages the sitemap says did not change since the first run: the run without the sitemap revisits
    # them; the run with it fewer.
    unchanged = {u for u, mod in entries.items() if u in known[True] & known[False] and mod < epochs.EPOCH0}
    assert unchanged
    assert len(unchanged & requested[True]) < len(unchanged & requested[False])


def test_a_stale_lastmod_does_not_hide_a_listings_new_rows(sim_server, sim_proxy_env, tmp_path):
    # Every page listed, every lastmod stale: each page that changed claims it did not (a plugin that
    # missed the edits). The catalogue pages' new rows are where the new datasets are.
    stale = TINY.with_(name="tiny-stale-sitemap-test", sitemap_share=1.0, sitemap_stale_share=1.0)
    before, after = build_site(stale, 2, epoch=0), build_site(stale, 2, epoch=1)
    truth = after.changes(0)
    new = {u for u, s in truth.items() if s == "new"}
    assert new
    first = sim_server(before)
    sim_proxy_env(first)
    crawl(before, tmp_path, max_requests=500)
    memory = site_memory.load(LocalStateStore(tmp_path / "memory"), before.start_url)
    second = sim_server(after)
    sim_proxy_env(second)
    summary = crawl(after, tmp_path, max_requests=500)
    assert summary.warm_from
    requested = {e.url for e in second.log if e.method == "GET"}
    # The known pages whose body changed while their lastmod says not, and that link a new dataset: read
    # again all the same, and every new dataset found.
    lastmods = {e.url: e.lastmod for e in sim_sitemaps.entries(after)}
    old_lastmods = {e.url: e.lastmod for e in sim_sitemaps.entries(before)}

    def body(site, url):
        return b"".join(site.response("GET", url, count=False).body)

    def links_new(page: bytes) -> bool:  # an absolute link, or one by its path
        return any(url.encode() in page or url.split("/", 3)[-1].encode() in page for url in new)

    hiding = {u for u in memory.pages if lastmods.get(u) == old_lastmods.get(u) and body(before, u) != body(after, u)
              and links_new(body(after, u))}
    assert hiding and hiding <= requested
    assert summary.changes["new"] == len(new)
