"""How crawls of one simulated site end: the same crawl run many times, with concurrency's own variation
in the order responses come back, and the requests each sent and why it stopped.

A crawl that finishes a site should end by early stopping soon after its last dataset. One that runs to its
budget instead (``request budget spent``) wandered in a trap the stop rule took for progress; the CI test
``test_crawl_retrieves_every_target_of_a_small_site`` failed on such a run once in three at seed 4.

    python -m sbcrawl_dev bench stops --profile tiny --seed 4 --concurrency 8 --runs 40
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from pathlib import Path

from airflow_sbcrawl.crawler import CrawlConfig, Crawler, LocalSink, LocalStateStore
from sbcrawl_dev.sim import SimServer, build_site

# The CI test's settings: no delay, checkpoints every 25 pages.
_FAST = {"delay": 0.0, "checkpoint_every_pages": 25}


def run(profile: str, seed: int, concurrency: int, runs: int, budget: int, latency: float) -> list[tuple[int, str]]:
    """(requests, stop reason) of ``runs`` crawls of the site, each into a fresh folder."""
    site = build_site(profile, 0, None)
    server = SimServer(site, latency=latency).start()
    saved = {name: os.environ.get(name) for name in ("HTTP_PROXY", "http_proxy")}
    os.environ["HTTP_PROXY"] = os.environ["http_proxy"] = server.proxy_url
    results = []
    try:
        for i in range(runs):
            with tempfile.TemporaryDirectory() as tmp:
                out = Path(tmp)
                config = CrawlConfig(site.start_url, policy="sb-classifier", max_requests=budget, seed=seed,
                                     concurrency=concurrency, **_FAST)
                summary = Crawler(config, LocalSink(out), LocalStateStore(out / "state")).run()
            results.append((summary.requests, summary.stop_reason))
            print(f"run {i + 1:>3}: {summary.requests:>5} requests, {summary.stop_reason[:90]}", flush=True)
    finally:
        server.stop()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return results


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m sbcrawl_dev bench stops", description=__doc__.split("\n\n")[0])
    p.add_argument("--profile", default="tiny")
    p.add_argument("--seed", type=int, default=4, help="the crawler's seed")
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--runs", type=int, default=40)
    p.add_argument("--budget", type=int, default=2000)
    p.add_argument("--latency", type=float, default=0.001, help="the simulator's seconds per response")
    args = p.parse_args(argv)
    results = run(args.profile, args.seed, args.concurrency, args.runs, args.budget, args.latency)
    requests = sorted(n for n, _ in results)
    spent = sum(reason.startswith("request budget spent") for _, reason in results)
    print(f"{args.runs} crawls of {args.profile}: median {statistics.median(requests):.0f} requests, "
          f"max {requests[-1]}; {spent} spent the budget of {args.budget}")
    return 0


if __name__ == "__main__":  # by its path, to measure the tree first on PYTHONPATH (an older one)
    raise SystemExit(main())
