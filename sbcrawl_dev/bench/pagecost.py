"""CPU per page of the crawler's page path against a floor, on saved pages served over HTTP (issue 14).

Pages: the first ``--pages`` HTML pages (breadth-first from the start URL) of simulated sites — this
package's simulator profiles and, when its folder is there, the evaluation harness's sites, whose CMS-like
themes make real-looking pages — are saved as files in the run's folder with their sites' robots.txt, and
served from those files by a plain HTTP server on 127.0.0.1 in another process (it answers absolute-form
requests, as a proxy does, so the pages keep their own URLs).

Two page paths are timed on the same pages, interleaved, several times; CPU is this thread's
(``time.thread_time``), so the server's is not counted:

* **floor**: receive the page with urllib3 (a pooled connection), parse it with lxml, iterate its links
  (``iterlinks``);
* **crawler**: the page through a fresh crawler, in crawl order: its fetcher's GET, then the engine's page
  handling (link extraction with tag paths, URL resolution and normalisation, the known-URL, scope,
  extension and robots.txt checks, the link table, the URL classifier's prediction, and the policy's
  ``add`` with its action assignment). Predicted targets are not fetched: each is a request of its own,
  not page processing. The classifier is trained first on the saved pages' URLs and their file links,
  so that it predicts (no HEAD requests) as after the first batch of a crawl.

Both are split into receive and processing, so that the processing alone can be set against the parse
floor too. Reported: medians over the repeats, per source and over all pages, and their ratios.
"""

from __future__ import annotations

import json
import multiprocessing
import statistics
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urldefrag, urljoin, urlsplit

import lxml.html
import urllib3

from airflow_sbcrawl.crawler import CrawlConfig, Crawler, LocalSink
from airflow_sbcrawl.crawler.classify import HTML, TARGET
from airflow_sbcrawl.crawler.fetch import Response
from airflow_sbcrawl.crawler.policies import DEFAULT_POLICY
from airflow_sbcrawl.crawler.work import PageWork

_TRAINING_LABELS = 60  # per class, at most


# -- capture -------------------------------------------------------------------------------------------
@dataclass
class SavedSite:
    """Pages of one site saved as files: ``pages`` are (url, file name) in breadth-first order."""

    name: str
    start_url: str
    folder: Path
    pages: list[tuple[str, str]]
    robots: dict[str, str]  # origin -> robots.txt text (absent: the server answers 404)
    files: list[str]  # URLs that answered with a file (labels for the classifier)

    def save_index(self) -> None:
        index = {"name": self.name, "start_url": self.start_url, "pages": self.pages, "robots": self.robots,
                 "files": self.files}
        (self.folder / "index.json").write_text(json.dumps(index))

    @classmethod
    def load(cls, folder: Path) -> SavedSite:
        index = json.loads((folder / "index.json").read_text())
        return cls(index["name"], index["start_url"], folder, [tuple(p) for p in index["pages"]],
                   index["robots"], index["files"])


def _in_site(url: str, domain: str) -> bool:
    host = urlsplit(url).hostname or ""
    return host == domain or host.endswith("." + domain)


def _enqueue(url: str, domain: str, seen: set[str], queue: deque[str]) -> None:
    url = urldefrag(url)[0]
    if url.startswith("http") and _in_site(url, domain) and url not in seen:
        seen.add(url)
        queue.append(url)


def capture(name: str, start_url: str, proxy_url: str, count: int, folder: Path) -> SavedSite:
    """The first ``count`` HTML pages of a served site, breadth-first, saved under ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    domain = (urlsplit(start_url).hostname or "").removeprefix("www.")
    http = urllib3.ProxyManager(proxy_url, retries=False, timeout=30)
    queue, seen = deque([start_url]), {start_url}
    pages: list[tuple[str, str]] = []
    files: list[str] = []
    origins: set[str] = set()
    requests = 0
    # Past ``count`` pages, only until enough files answered to train the classifier on.
    while queue and (len(pages) < count or (len(files) < _TRAINING_LABELS and requests < 20 * count)):
        url = queue.popleft()
        requests += 1
        resp = http.request("GET", url, preload_content=False, redirect=False)
        kind = resp.headers.get("content-type", "")
        if resp.status != 200 or "html" not in kind:
            location = resp.headers.get("location")
            if 300 <= resp.status < 400 and location:
                _enqueue(urljoin(url, location), domain, seen, queue)
            elif resp.status == 200 and len(files) < _TRAINING_LABELS and not kind.startswith(("image/", "video/")):
                files.append(url)  # a file: a label for the classifier
            resp.drain_conn()
            resp.release_conn()
            continue
        body = resp.read()
        resp.release_conn()
        if len(pages) < count:
            file_name = f"{len(pages):05d}.html"
            (folder / file_name).write_bytes(body)
            pages.append((url, file_name))
            parts = urlsplit(url)
            origins.add(f"{parts.scheme}://{parts.netloc}")
        for _el, _attr, link, _pos in lxml.html.document_fromstring(body).iterlinks():
            _enqueue(urljoin(url, link.strip()), domain, seen, queue)
    robots = {}
    for origin in sorted(origins):
        resp = http.request("GET", origin + "/robots.txt", redirect=False)
        if resp.status == 200:
            robots[origin] = resp.data.decode("utf-8", "replace")
    http.clear()
    site = SavedSite(name, start_url, folder, pages, robots, files)
    site.save_index()
    return site


def _capture_sim(profile: str, seed: int, count: int, folder: Path) -> SavedSite:
    from sbcrawl_dev.sim.server import SimServer
    from sbcrawl_dev.sim.site import build_site

    with SimServer(build_site(profile, seed)) as server:
        return capture(f"sim:{profile}", server.site.start_url, server.proxy_url, count, folder)


def _capture_eval(eval_dir: Path, profile: str, seed: int, count: int, folder: Path) -> SavedSite:
    if str(eval_dir) not in sys.path:
        sys.path.insert(0, str(eval_dir))
    # The evaluation harness's own modules: called, never copied.
    import simserver
    import sitegen

    site = sitegen.generate(profile, seed, 1.0)
    server = simserver.SimServer([site]).start()
    try:
        return capture(f"eval:{profile}", site.start_url, server.proxy_url, count, folder)
    finally:
        server.stop()


def capture_sources(sources: list[str], count: int, work: Path, eval_dir: Path | None,
                    seed: int = 0) -> list[SavedSite]:
    """``sources`` are "sim:PROFILE" or "eval:PROFILE" (skipped, with a note, without ``eval_dir``)."""
    sites = []
    for source in sources:
        kind, _, profile = source.partition(":")
        folder = work / "pages" / source.replace(":", "-")
        if kind == "sim":
            sites.append(_capture_sim(profile, seed, count, folder))
        elif kind == "eval":
            if eval_dir is None or not (eval_dir / "sitegen.py").exists():
                print(f"  {source}: no evaluation harness at {eval_dir}: skipped", file=sys.stderr)
                continue
            sites.append(_capture_eval(eval_dir, profile, seed, count, folder))
        else:
            raise ValueError(f"page source {source!r} is neither sim:PROFILE nor eval:PROFILE")
    return sites


# -- serving saved pages -------------------------------------------------------------------------------
class _SavedPagesHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _SavedPagesServer

    def do_GET(self) -> None:
        body, kind = self.server.bodies.get(self.path, (b"not found", "text/plain"))
        self.send_response(200 if self.path in self.server.bodies else 404)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


class _SavedPagesServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, bodies: dict[str, tuple[bytes, str]]) -> None:
        self.bodies = bodies
        super().__init__(("127.0.0.1", 0), _SavedPagesHandler)


def _serve_saved(folders: list[str], port_queue: Any, stop: Any) -> None:
    bodies: dict[str, tuple[bytes, str]] = {}
    for folder in folders:
        site = SavedSite.load(Path(folder))
        for url, file_name in site.pages:
            bodies[url] = ((site.folder / file_name).read_bytes(), "text/html; charset=utf-8")
        for origin, text in site.robots.items():
            bodies[origin + "/robots.txt"] = (text.encode(), "text/plain; charset=utf-8")
    server = _SavedPagesServer(bodies)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
    port_queue.put(server.server_address[1])
    stop.wait()
    server.shutdown()


# -- the two page paths --------------------------------------------------------------------------------
@dataclass
class PassTimes:
    pages: int
    receive_s: float
    process_s: float
    links: int = 0  # URLs the crawler's link table holds at the end (a check that the path did its work)

    @property
    def total_s(self) -> float:
        return self.receive_s + self.process_s


def floor_pass(site: SavedSite, http: urllib3.PoolManager) -> PassTimes:
    receive = process = 0.0
    for url, _ in site.pages:
        t0 = time.thread_time()
        body = http.request("GET", url, redirect=False).data
        t1 = time.thread_time()
        for _link in lxml.html.document_fromstring(body).iterlinks():
            pass
        t2 = time.thread_time()
        receive += t1 - t0
        process += t2 - t1
    return PassTimes(len(site.pages), receive, process)


def _process_page(crawler: Crawler, page_id: int, resp: Response) -> None:
    """The engine's reading of a page: its links extracted, labelled and handed to the policy; the
    targets it predicts are queued, not fetched (requests of their own), and dropped here."""
    work = PageWork(page_id, resp, 0, None, None)
    crawler.reader.read_links(work)
    crawler.policy.add(work.links)
    crawler.downloader.unsent()


def _fresh_crawler(site: SavedSite, out: Path, policy: str) -> Crawler:
    config = CrawlConfig(start_url=site.start_url, policy=policy, seed=0, delay=0.0, max_requests=10**9,
                         early_stopping=False, checkpoint_every_pages=10**9)
    crawler = Crawler(config, LocalSink(out), tmp_dir=str(out))
    pages = [url for url, _ in site.pages][:_TRAINING_LABELS]
    files = site.files[:_TRAINING_LABELS]
    for i in range(max(len(pages), len(files))):  # interleaved, as a crawl meets them
        if i < len(pages):
            crawler.classifier.observe(pages[i], HTML)
        if i < len(files):
            crawler.classifier.observe(files[i], TARGET)
    return crawler


def crawler_pass(site: SavedSite, out: Path, policy: str = DEFAULT_POLICY) -> PassTimes:
    crawler = _fresh_crawler(site, out, policy)
    links = crawler.links
    receive = process = 0.0
    try:
        for url, _ in site.pages:
            t0 = time.thread_time()
            page_id = links.ids.get(url)
            if page_id is None:
                page_id = links.add(url, 0, -1, None)
            resp = crawler.fetcher.fetch(url)
            t1 = time.thread_time()
            if resp.kind == "html":
                _process_page(crawler, page_id, resp)
            t2 = time.thread_time()
            receive += t1 - t0
            process += t2 - t1
    finally:
        crawler.fetcher.close()
    return PassTimes(len(site.pages), receive, process, len(links))


@dataclass
class PageCost:
    source: str
    pages: int
    floor_ms: float  # medians over the repeats, per page
    floor_parse_ms: float
    crawler_ms: float
    crawler_process_ms: float
    links: int = 0

    @property
    def ratio(self) -> float:
        return self.crawler_ms / self.floor_ms

    @property
    def process_ratio(self) -> float:
        return self.crawler_process_ms / self.floor_parse_ms


def _median_ms(passes: list[PassTimes], part: str) -> float:
    return 1000 * statistics.median(getattr(p, part) / p.pages for p in passes)


@dataclass
class _Proxy:
    proxy_url: str


def page_cost(sites: list[SavedSite], repeats: int, out: Path, policy: str = DEFAULT_POLICY) -> list[PageCost]:
    """Floor and crawler passes over every site, interleaved (floor, crawler, floor, ...) ``repeats`` times."""
    from sbcrawl_dev.bench.runner import proxied

    ctx = multiprocessing.get_context("spawn")
    ports, stop = ctx.Queue(), ctx.Event()
    server = ctx.Process(target=_serve_saved, args=([str(s.folder) for s in sites], ports, stop), daemon=True)
    server.start()
    floors: dict[str, list[PassTimes]] = {s.name: [] for s in sites}
    crawls: dict[str, list[PassTimes]] = {s.name: [] for s in sites}
    try:
        proxy_url = f"http://127.0.0.1:{ports.get(timeout=120)}"
        http = urllib3.ProxyManager(proxy_url, retries=False, timeout=30)
        with proxied(_Proxy(proxy_url)):  # type: ignore[arg-type]
            for site in sites:  # warm-up: imports, caches of the server, connections
                floor_pass(site, http)
                crawler_pass(site, out / "warm-up", policy)
            for r in range(repeats):
                for site in sites:
                    floors[site.name].append(floor_pass(site, http))
                    crawls[site.name].append(crawler_pass(site, out / f"crawl-{r}", policy))
                print(f"  repeat {r + 1}/{repeats} done", file=sys.stderr, flush=True)
    finally:
        stop.set()
        server.join(timeout=10)
        if server.is_alive():
            server.terminate()
    results = [PageCost(s.name, len(s.pages), _median_ms(floors[s.name], "total_s"),
                        _median_ms(floors[s.name], "process_s"), _median_ms(crawls[s.name], "total_s"),
                        _median_ms(crawls[s.name], "process_s"), crawls[s.name][0].links) for s in sites]
    # All pages: per repeat, the sums over the sites, then the median.
    def total(passes: dict[str, list[PassTimes]], r: int) -> PassTimes:
        parts = [passes[s.name][r] for s in sites]
        return PassTimes(sum(p.pages for p in parts), sum(p.receive_s for p in parts),
                         sum(p.process_s for p in parts))

    all_floor = [total(floors, r) for r in range(repeats)]
    all_crawl = [total(crawls, r) for r in range(repeats)]
    results.append(PageCost("all", all_floor[0].pages, _median_ms(all_floor, "total_s"),
                            _median_ms(all_floor, "process_s"), _median_ms(all_crawl, "total_s"),
                            _median_ms(all_crawl, "process_s"), sum(r.links for r in results)))
    return results


def format_page_cost(results: list[PageCost], repeats: int) -> Iterator[str]:
    yield (f"Page path against the floor (CPU ms per page, medians of {repeats} interleaved repeats; floor = "
           "urllib3 receive + lxml parse + iterlinks)")
    yield ""
    yield (f"{'pages of':>22} {'pages':>6} {'floor':>7} {'crawler':>8} {'ratio':>6} {'parse floor':>12} "
           f"{'processing':>11} {'ratio':>6}")
    for r in results:
        yield (f"{r.source:>22} {r.pages:>6} {r.floor_ms:>7.3f} {r.crawler_ms:>8.3f} {r.ratio:>6.2f} "
               f"{r.floor_parse_ms:>12.3f} {r.crawler_process_ms:>11.3f} {r.process_ratio:>6.2f}")
