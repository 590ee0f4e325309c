"""One benchmark crawl: a fresh simulator server, a full crawl through it, and the server's log."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from airflow_sbcrawl.crawler import CrawlConfig, Crawler, CrawlSummary, LocalSink
from airflow_sbcrawl.crawler.policies.oracles import TagPathOfflinePolicy, omniscient_fetches
from sbcrawl_dev.bench.metrics import LogRow
from sbcrawl_dev.bench.truth import SiteTruth
from sbcrawl_dev.sim.server import SimServer
from sbcrawl_dev.sim.site import Site, build_site

OMNISCIENT = "omniscient"
# Policies whose crawl does not depend on the seed: one run is their exact mean (as in the paper, §4.5).
DETERMINISTIC = frozenset({"bfs", "dfs", "tp-off", "focused", OMNISCIENT})
# TP-OFF learns on the first pages of a BFS: the paper's 3k pages were 0.3-70 % of its sites; here a
# fixed 10 % of the site's URLs, so that the learning phase means the same on every profile.
TP_OFF_SHARE = 0.10


@dataclass
class CrawlSpec:
    profile: str
    site_seed: int
    policy: str
    repeat: int
    crawl_seed: int
    max_requests: int
    overrides: dict[str, Any] = field(default_factory=dict)  # CrawlConfig settings (the sweep's alpha, n, theta)
    label: str = ""  # the name this run is reported under (defaults to the policy)

    @property
    def name(self) -> str:
        return self.label or self.policy


@dataclass
class CrawlRun:
    spec: CrawlSpec
    log: list[LogRow]
    summary: dict[str, Any]


@contextlib.contextmanager
def proxied(server: SimServer) -> Iterator[None]:
    """Route this process's HTTP through the simulator (requests honours HTTP_PROXY)."""
    names = ("HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy")
    saved = {k: os.environ.get(k) for k in names}
    for k in names:
        os.environ.pop(k, None)
    os.environ["HTTP_PROXY"] = os.environ["http_proxy"] = server.proxy_url
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def make_crawler(site: Site, truth: SiteTruth, spec: CrawlSpec, out_dir: str) -> Crawler:
    """A crawler as the benchmark runs it: no delay, robots.txt obeyed, no early stopping (it is measured
    apart in the paper), a request cap, and a stop as soon as every target is in."""
    config = CrawlConfig(start_url=site.start_url, policy=spec.policy, seed=spec.crawl_seed, delay=0.0,
                         max_requests=spec.max_requests, early_stopping=False, respect_robots=True,
                         checkpoint_every_pages=10**9, **spec.overrides)
    target_set = truth.target_sizes

    def is_target(url: str) -> bool:
        return url in target_set

    crawler = Crawler(config, LocalSink(out_dir), is_target=is_target, tmp_dir=out_dir)
    if isinstance(crawler.policy, TagPathOfflinePolicy):
        crawler.policy.learning_pages = max(1, round(TP_OFF_SHARE * truth.url_count))

    def stop_when_complete(progress: Any) -> None:
        if progress.targets >= truth.targets:
            crawler.request_stop("every target retrieved (benchmark stop)")

    crawler.on_progress = stop_when_complete
    return crawler


def run_crawl(spec: CrawlSpec, truth: SiteTruth, keep_dir: str | None = None) -> CrawlRun:
    """Crawl ``spec``'s site through a fresh server; counts come from that server's log only."""
    if spec.policy == OMNISCIENT:
        rows = [("GET", url, 200, size) for url, size in omniscient_fetches(truth.target_sizes.items())]
        return CrawlRun(spec, rows, {"stop_reason": "one request per known target", "requests": len(rows)})
    site = build_site(spec.profile, spec.site_seed)
    with contextlib.ExitStack() as stack:
        out = keep_dir or stack.enter_context(tempfile.TemporaryDirectory(prefix="sbcrawl-bench-"))
        server = stack.enter_context(SimServer(site))
        stack.enter_context(proxied(server))
        crawler = make_crawler(site, truth, spec, out)
        summary: CrawlSummary = crawler.run()
        rows = [(e.method, e.url, e.status, e.bytes_sent) for e in server.log]
    info = summary.to_dict()
    info["policy_describe"] = crawler.policy.describe()
    return CrawlRun(spec, rows, info)
