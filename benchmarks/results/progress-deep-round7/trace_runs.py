"""Successive budgeted runs of one simulated profile and seed, as ``bench progress`` runs them: datasets found
after each run and what each window of 250 requests went to (kind and URL prefix) (issue 23, round 7).

    PYTHONPATH=<tree> python benchmarks/results/progress-deep-round7/trace_runs.py deep 1 1000 4
"""

import collections
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

from airflow_sbcrawl.crawler import CrawlConfig, Crawler, LocalSink, LocalStateStore
from sbcrawl_dev.bench.budgeted_runs import found
from sbcrawl_dev.bench.runner import proxied
from sbcrawl_dev.sim.server import SimServer
from sbcrawl_dev.sim.site import build_site

profile, seed, budget, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
site = build_site(profile, seed)
def key(url):
    p = urlsplit(url)
    return f"{site.kind(url)}:{p.netloc.split('.')[0]}{'/'.join(p.path.split('/')[:2])}{'?' if p.query else ''}"
with tempfile.TemporaryDirectory() as tmp:
    out = Path(tmp)
    for r in range(runs):
        config = CrawlConfig(start_url=site.start_url, seed=seed, delay=0.0, max_requests=budget,
                             early_stopping=False, checkpoint_every_pages=10**9)
        with SimServer(site) as server, proxied(server):
            s = Crawler(config, LocalSink(out), LocalStateStore(out / "state"), tmp_dir=tmp,
                        memory=LocalStateStore(out / "memory")).run()
            log = list(server.log)
        print(f"run {r+1}: found {found(site, out)} frontier {s.frontier} stop {s.stop_reason}")
        for start in range(0, len(log), 250):
            win = log[start:start + 250]
            c = collections.Counter(key(e.url) for e in win)
            print("  ", start + len(win), dict(c.most_common(7)))
