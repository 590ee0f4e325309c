"""Cold crawls of one site repeated, as ``bench progress`` runs its cold crawl of k x the budget (early stopping
off): datasets found, requests, stop reason and frontier left per run. Looks for the rare stalls.

    PYTHONPATH=<tree> python benchmarks/results/recrawl-i23-round5/cold_repeats.py small 2 1200 40
"""
import sys
import tempfile
import time
from pathlib import Path

from sbcrawl_dev.bench.budgeted_runs import crawl, found
from sbcrawl_dev.sim.site import build_site

profile, seed, budget, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
site = build_site(profile, seed)
for i in range(n):
    with tempfile.TemporaryDirectory() as tmp:
        t = time.time()
        s = crawl(site, Path(tmp, "c"), budget, seed)
        print(i, "found", found(site, Path(tmp, "c")), "requests", s["requests"], "targets", s["targets"],
              "stop", s["stop_reason"][:80], "frontier", s["frontier_left"], f"{time.time()-t:.0f}s", flush=True)
