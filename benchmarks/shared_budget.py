"""One request budget over 4 simulated sites of different richness: the bandit of
``airflow_sbcrawl.crawler.shared_budget`` against equal shares (issue 13, item 3).

    .venv/bin/python benchmarks/shared_budget.py [--total 4000] [--round 800] [--chunk 50] [--seed 0]

Each site is the simulator's "small" profile with fewer or more datasets per catalogue section, served on
127.0.0.1. Equal shares: one crawl per site with total/4 requests. Bandit: rounds; before each, the allocator
reads every site's (requests, datasets) so far and gives caps; each site's crawl resumes from its checkpoint
up to its cap, as a DAG would run it. Crawls use the default policy and settings (early stopping on), with
no delay between requests. Prints the datasets retrieved per site under each allocation."""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
from pathlib import Path

from airflow_sbcrawl.bench.runner import proxied
from airflow_sbcrawl.crawler.config import CrawlConfig
from airflow_sbcrawl.crawler.engine import Crawler
from airflow_sbcrawl.crawler.shared_budget import equal_caps, next_caps
from airflow_sbcrawl.crawler.sinks import LocalSink
from airflow_sbcrawl.crawler.state import LocalStateStore
from airflow_sbcrawl.sim import SimServer
from airflow_sbcrawl.sim.profiles import get_profile
from airflow_sbcrawl.sim.site import Site

# datasets per catalogue section, from a site that publishes little to a data portal
RICHNESS = {"poor": (1, 2), "modest": (3, 6), "rich": (12, 30), "richest": (30, 60)}


def sites(seed: int) -> dict[str, Site]:
    base = get_profile("small")
    return {name: Site(dataclasses.replace(base, name=f"small-{name}", datasets_per_section=per_section), seed)
            for name, per_section in RICHNESS.items()}


def crawl_to(site: Site, cap: int, work: Path, seed: int) -> tuple[int, int, bool]:
    """Crawl (or resume) ``site`` up to ``cap`` requests in all; returns requests, datasets, finished."""
    config = CrawlConfig(start_url=site.start_url, max_requests=cap, delay=0.0, seed=seed)
    store = LocalStateStore(work / "state")
    with SimServer(site) as server, proxied(server):
        summary = Crawler(config, LocalSink(work), store, tmp_dir=str(work)).run(resume=bool(store.checkpoints()))
    return summary.requests, summary.targets, summary.stop_reason != "request budget spent"


def run_equal(all_sites: dict[str, Site], total: int, work: Path, seed: int) -> dict[str, tuple[int, int]]:
    out = {}
    for name, cap in equal_caps(total, list(all_sites)).items():
        requests, datasets, _ = crawl_to(all_sites[name], cap, work / f"equal-{name}", seed)
        out[name] = (requests, datasets)
    return out


def run_bandit(all_sites: dict[str, Site], total: int, round_requests: int, chunk: int, work: Path,
               seed: int) -> tuple[dict[str, tuple[int, int]], list[dict[str, int]]]:
    history: dict[str, list[tuple[int, int]]] = {name: [] for name in all_sites}
    finished: set[str] = set()
    plans = []
    while caps := next_caps(total, history, finished, round_requests, chunk):
        plans.append(caps)
        for name, cap in caps.items():
            requests, datasets, done = crawl_to(all_sites[name], cap, work / f"bandit-{name}", seed)
            history[name].append((requests, datasets))
            if done:
                finished.add(name)
    return {name: rounds[-1] if rounds else (0, 0) for name, rounds in history.items()}, plans


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--total", type=int, default=4000)
    parser.add_argument("--round", type=int, default=800)
    parser.add_argument("--chunk", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None, help="also write the table to this file")
    args = parser.parse_args()
    all_sites = sites(args.seed)
    with tempfile.TemporaryDirectory(prefix="sbcrawl-shared-budget-") as tmp:
        equal = run_equal(all_sites, args.total, Path(tmp), args.seed)
        bandit, plans = run_bandit(all_sites, args.total, args.round, args.chunk, Path(tmp), args.seed)
    lines = [f"Shared budget of {args.total} requests over 4 sites (rounds of {args.round}, chunks of "
             f"{args.chunk}, site seed {args.seed})", "",
             "| site | datasets on site | equal: requests | equal: datasets | bandit: requests | bandit: datasets |",
             "|---|---|---|---|---|---|"]
    for name, site in all_sites.items():
        lines.append(f"| {name} | {len(site.targets)} | {equal[name][0]} | {equal[name][1]} | {bandit[name][0]} | "
                     f"{bandit[name][1]} |")
    lines.append(f"| **total** | {sum(len(s.targets) for s in all_sites.values())} | "
                 f"{sum(v[0] for v in equal.values())} | {sum(v[1] for v in equal.values())} | "
                 f"{sum(v[0] for v in bandit.values())} | {sum(v[1] for v in bandit.values())} |")
    lines += ["", "Bandit caps per round (cumulative requests per site):"]
    lines += [f"  round {i + 1}: {plan}" for i, plan in enumerate(plans)]
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
