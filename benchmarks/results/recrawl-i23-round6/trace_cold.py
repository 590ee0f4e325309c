"""A cold crawl of one simulated profile and seed, as ``bench progress`` runs it (early stopping off): the
targets found and the kinds of URL asked, per window of 250 requests; the request log is written to
the temporary directory (``cold-<profile>-<seed>.log``) (issue 23, round 6: looking for the deep seed 1 stall).

    PYTHONPATH=<tree> python benchmarks/results/recrawl-i23-round6/trace_cold.py deep 1 4000
"""

from __future__ import annotations

import collections
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

from airflow_sbcrawl.crawler import CrawlConfig, Crawler, LocalSink, LocalStateStore
from sbcrawl_dev.bench.runner import proxied
from sbcrawl_dev.sim.server import SimServer
from sbcrawl_dev.sim.site import build_site

profile, seed, budget = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
site = build_site(profile, seed)
with tempfile.TemporaryDirectory() as tmp, SimServer(site) as server, proxied(server):
    config = CrawlConfig(start_url=site.start_url, seed=seed, delay=0.0, max_requests=budget,
                         early_stopping=False, checkpoint_every_pages=10**9)
    s = Crawler(config, LocalSink(Path(tmp)), LocalStateStore(Path(tmp) / "state"), tmp_dir=tmp,
                memory=LocalStateStore(Path(tmp) / "memory")).run()
    log = [e for e in server.log]
print(f"{profile} seed {seed}: targets {s.targets}, frontier {s.frontier}, stop {s.stop_reason}")
got = 0
for start in range(0, len(log), 250):
    win = log[start:start + 250]
    kinds = collections.Counter()
    for e in win:
        k = site.kind(e.url)
        if k == "target" and e.status == 200:
            got += 1
        p = urlsplit(e.url)
        kinds[f"{k}:{p.netloc.split('.')[0]}{'/'.join(p.path.split('/')[:2])}{'?' if p.query else ''}"] += 1
    print(start + len(win), got, dict(kinds.most_common(6)))
Path(tempfile.gettempdir(), f"cold-{profile}-{seed}.log").write_text("\n".join(f"{e.status} {e.url}" for e in log))
