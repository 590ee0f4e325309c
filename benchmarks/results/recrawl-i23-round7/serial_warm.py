"""A warm run's requests to 90 % (and to all) of the new and changed files, with the crawl sending one
request at a time (``concurrency=1``) in both runs, the cold one that leaves the memory and the warm one:
the same code gives the same figure every time, so two versions of the revisit order can be told apart by
a few requests, where ``bench recrawl`` (8 requests at a time) moves by ±20 from run to run (issue 23,
round 7). With SEQ=<prefix> it writes the warm run's requests in order to <prefix>-<profile>-<seed>.txt.
It measures an order, not the bench's figure: the concurrent crawls read a little differently.

    PYTHONPATH=<tree> python benchmarks/results/recrawl-i23-round7/serial_warm.py small-sitemap 0 1 2
"""

from __future__ import annotations

import math
import os
import sys
import tempfile
from pathlib import Path

from airflow_sbcrawl.crawler import CrawlConfig, Crawler, LocalSink, LocalStateStore
from sbcrawl_dev.bench.runner import proxied
from sbcrawl_dev.bench.warm_vs_cold import REACH
from sbcrawl_dev.sim.server import SimServer
from sbcrawl_dev.sim.site import Site, build_site


def crawl(site: Site, out: Path, max_requests: int, seed: int) -> list:
    config = CrawlConfig(start_url=site.start_url, seed=seed, delay=0.0, max_requests=max_requests,
                         early_stopping=False, checkpoint_every_pages=10**9, concurrency=1)
    with SimServer(site) as server, proxied(server):
        Crawler(config, LocalSink(out), LocalStateStore(out / "state"), tmp_dir=str(out),
                memory=LocalStateStore(out / "memory"), warm_start=True).run()
        return server.log


def main(profile: str, seeds: list[int]) -> None:
    for seed in seeds:
        before, after = build_site(profile, seed, epoch=0), build_site(profile, seed, epoch=1)
        wanted = {u for u, s in after.changes(0).items() if s in ("new", "changed")}
        max_requests = int(1.5 * max(before.url_count, after.url_count))
        with tempfile.TemporaryDirectory() as tmp:
            crawl(before, Path(tmp), max_requests, seed)
            log = crawl(after, Path(tmp), max_requests, seed)
        need, served, reach = math.ceil(REACH * len(wanted)), set(), math.inf
        for i, entry in enumerate(log, 1):
            if entry.status == 200 and entry.url in wanted and entry.url not in served:
                served.add(entry.url)
                if len(served) == need:
                    reach = i
        if os.environ.get("SEQ"):  # the warm run's requests in their order, the new and changed files marked
            with open(f"{os.environ['SEQ']}-{profile}-{seed}.txt", "w") as f:
                for i, entry in enumerate(log, 1):
                    f.write(f"{i} {entry.status} {'*' if entry.url in wanted else ' '} {entry.url}\n")
        print(f"{profile} seed {seed}: {reach} requests to 90% of {len(wanted)} new and changed files, "
              f"found {len(served)} in {len(log)} requests", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], [int(s) for s in sys.argv[2:]])
