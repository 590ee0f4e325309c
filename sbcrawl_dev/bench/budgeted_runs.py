"""``python -m sbcrawl_dev bench progress``: whether scheduled, budgeted crawls of a site get anywhere.

Per profile and seed, on the site as it is (no change between the runs):

* **successive runs**: ``--runs`` k crawls of ``--budget`` requests each, one after the other in one
  output folder (each warm from the memory the last one left); after each, the datasets found so far (the
  site's true targets among the URLs the crawls stored), against one cold crawl of k x the budget;
* **an unchanged site's second run**: a cold crawl of the whole site (1.5 x its URL count, the default
  settings: early stopping on), then a warm one of the same site unchanged: its requests over the cold run's.

The lines end with ``progress <share>`` (what the k runs found over what the one long run found) and
``second/cold <ratio>``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import tempfile
from pathlib import Path

from airflow_sbcrawl.crawler import CrawlConfig, Crawler, LocalSink, LocalStateStore
from sbcrawl_dev.bench.runner import proxied
from sbcrawl_dev.sim.server import SimServer
from sbcrawl_dev.sim.site import Site, build_site

DEFAULT_PROFILES = ("small", "deep")
DEFAULT_BUDGETS = {"small": 300, "deep": 1000}


def crawl(site: Site, out: Path, max_requests: int, seed: int, early_stopping: bool = False) -> dict:
    """One crawl of ``site`` into ``out`` (warm when ``out`` holds a memory); its summary as a dict."""
    config = CrawlConfig(start_url=site.start_url, seed=seed, delay=0.0, max_requests=max_requests,
                         early_stopping=early_stopping, checkpoint_every_pages=10**9)
    with SimServer(site) as server, proxied(server):
        crawler = Crawler(config, LocalSink(out), LocalStateStore(out / "state"), tmp_dir=str(out),
                          memory=LocalStateStore(out / "memory"))
        summary = crawler.run()
    return {"requests": summary.requests, "targets": summary.targets, "stop_reason": summary.stop_reason,
            "changes": summary.changes, "frontier_left": summary.frontier,
            "checks": getattr(summary, "checks", {})}


def found(site: Site, out: Path) -> int:
    """The site's true targets among what the crawls into ``out`` stored."""
    targets = site.targets
    urls = {row.get("url") for row in LocalSink(out).read_rows() if row.get("status", "new") != "gone"}
    return sum(url in targets for url in urls)


def bench_profile(profile: str, seed: int, budget: int, runs: int, parts: tuple[str, ...] = ("runs", "second")
                  ) -> dict:
    site = build_site(profile, seed)
    steps: list[dict] = []
    cold = full = second = {"requests": 0, "found": 0}
    with tempfile.TemporaryDirectory(prefix="sbcrawl-progress-") as tmp:
        out = Path(tmp, "successive")
        for _ in range(runs if "runs" in parts else 0):
            summary = crawl(site, out, budget, seed)
            steps.append({**summary, "found": found(site, out)})
        if "runs" in parts:
            cold_dir = Path(tmp, "cold")
            cold = crawl(site, cold_dir, budget * runs, seed)
            cold["found"] = found(site, cold_dir)
        if "second" in parts:
            # As a scheduled crawl runs: the default settings (early stopping on), a budget the site fits in.
            full_dir = Path(tmp, "full")
            full = crawl(site, full_dir, int(1.5 * site.url_count), seed, early_stopping=True)
            full["found"] = found(site, full_dir)
            second = crawl(site, full_dir, int(1.5 * site.url_count), seed, early_stopping=True)
            second["found"] = found(site, full_dir)
    return {"profile": profile, "seed": seed, "budget": budget, "runs": steps, "cold": cold,
            "progress": steps[-1]["found"] / max(1, cold["found"]) if steps else 0.0, "full": full, "second": second,
            "second_ratio": second["requests"] / max(1, full["requests"]), "targets": len(site.targets)}


def format_line(r: dict) -> str:
    after = " ".join(f"{s['found']}" for s in r["runs"])
    left = [s.get("frontier_left") for s in r["runs"]]
    plan = [(s.get("checks") or {}).get("requests", 0) for s in r["runs"]]
    k = len(r["runs"])
    return (f"{r['profile']:>6} seed {r['seed']}: {k} x {r['budget']} requests, datasets after each run {after} "
            f"(frontier left {left}; revisits and checks {plan}) | "
            f"one cold run of {k * r['budget']}: {r['cold']['found']} | "
            f"progress {r['progress']:.2f} | unchanged site: cold {r['full']['requests']} requests "
            f"({r['full']['found']} datasets), second run {r['second']['requests']} "
            f"(known datasets {r['second'].get('checks')}) | second/cold {r['second_ratio']:.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sbcrawl_dev bench progress", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profiles", nargs="+", default=list(DEFAULT_PROFILES))
    parser.add_argument("--seed", type=int, nargs="+", default=[0])
    parser.add_argument("--runs", type=int, default=4, help="successive budgeted runs")
    parser.add_argument("--budget", type=int, help="requests per run (default: small 300, deep 1000, else 500)")
    parser.add_argument("--only", choices=("runs", "second"), help="measure only the successive runs, or only "
                        "the unchanged site's second run")
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    args = parser.parse_args(argv)
    results = []
    for profile in args.profiles:
        mine = []
        budget = args.budget or DEFAULT_BUDGETS.get(profile, 500)
        for seed in args.seed:
            with contextlib.redirect_stdout(sys.stderr):
                mine.append(bench_profile(profile, seed, budget, args.runs,
                                          (args.only,) if args.only else ("runs", "second")))
            print(format_line(mine[-1]), flush=True)
        if len(mine) > 1:
            print(f"{profile:>6}: median progress {statistics.median(r['progress'] for r in mine):.2f}, "
                  f"median second/cold {statistics.median(r['second_ratio'] for r in mine):.2f}", flush=True)
        results.extend(mine)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str))
    return 0
