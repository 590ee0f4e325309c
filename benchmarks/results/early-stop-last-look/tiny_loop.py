"""Crawl the tiny simulated site cold N times at C requests in flight (default 8) against one simulator
server; for a run that misses a target, print whether its link was known, what the URL classifier
predicted for it and whether it still waited in the frontier when early stopping ended the crawl.

    PYTHONPATH=<tree> python tiny_loop.py N [C]
"""

import json
import os
import sys
import tempfile
from pathlib import Path

from airflow_sbcrawl.crawler import CrawlConfig, Crawler, LocalSink, LocalStateStore
from sbcrawl_dev.sim.server import SimServer
from sbcrawl_dev.sim.site import build_site

# The settings of tests/test_engine.py's small-site completeness test.
FAST = {"delay": 0.0, "es_window": 50, "es_patience": 4, "checkpoint_every_pages": 25}
FACET_PAGE = "http://data.stats.example/dataset/eco00015"  # the dataset page the first misses waited behind


def describe(crawler: Crawler, url: str) -> str:
    link_id = crawler.links.ids.get(url)
    if link_id is None:
        return "never met"
    waiting = link_id in set(crawler.scheduler.waiting())
    return (f"id={link_id} predicted={crawler.links.predicted[link_id]} waiting={waiting} "
            f"found_on={crawler.links.found_on(link_id)}")


def main(runs: int, concurrency: int) -> None:
    site = build_site("tiny", 0)
    server = SimServer(site).start()
    for name in ("HTTP_PROXY", "http_proxy"):
        os.environ[name] = server.proxy_url
    wanted = set(site.targets) - {url for url in site.targets if site.disallowed(url)}
    missing_runs = 0
    for run in range(runs):
        server.reset_log()
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp)
            config = CrawlConfig(site.start_url, **{**FAST, "max_requests": 2000, "concurrency": concurrency})
            crawler = Crawler(config, LocalSink(out), LocalStateStore(out / "state"))
            summary = crawler.run()
            rows = [json.loads(line) for line in (out / "manifest.jsonl").read_text().splitlines()]
            missed = wanted - {row["url"] for row in rows}
        if not missed:
            print(f"run {run}: ok requests={summary.requests} {summary.stop_reason[:60]}", flush=True)
            continue
        missing_runs += 1
        for url in sorted(missed):
            print(f"   link: {describe(crawler, url)}; page {FACET_PAGE}: {describe(crawler, FACET_PAGE)}")
            print(f"run {run}: MISS {url} requests={summary.requests} reason={summary.stop_reason[:150]}", flush=True)
    print("miss runs", missing_runs, "of", runs)
    server.stop()


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 8)
