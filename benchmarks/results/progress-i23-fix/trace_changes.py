"""Successive 300-request crawls of ``small``; after each warm run, every page whose reading counted a change
of the site, and why: rows never met (links the last runs did not meet) or a link shown in a context the
memory did not keep.

    PYTHONPATH=<tree> python benchmarks/results/progress-i23-fix/trace_changes.py SEED RUNS
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from airflow_sbcrawl.crawler.warm import plan as warm_plan
from sbcrawl_dev.bench.budgeted_runs import crawl, found
from sbcrawl_dev.sim.site import build_site

CHANGES: list[tuple] = []
_page_read = warm_plan.RevisitPlan.page_read


def traced_page_read(self, url, page):
    contexts, described, _ = page
    changed_before, compared_before = self._changed, self._compared
    new_contexts = []
    for link, hashes in contexts.items():
        link_id = self.links.ids.get(link)
        if link_id is None or not (link_id in self.index.known or link_id in self.index.pages):
            continue
        kept = self.index.contexts(link_id)
        if kept and self.index.was_described(link_id) and not hashes <= kept:
            new_contexts.append((link[-40:], len(kept), len(hashes), link in described))
    out = _page_read(self, url, page)
    page_id = self.links.ids.get(url)
    if self._changed != changed_before:
        rows = self._new_rows.get(page_id, ())
        CHANGES.append((url, self._compared - compared_before, self._changed - changed_before, len(rows),
                        new_contexts[:4], sorted(rows)[:3]))
    return out


def main(seed: int, runs: int) -> None:
    warm_plan.RevisitPlan.page_read = traced_page_read
    site = build_site("small", seed)
    out = Path(tempfile.mkdtemp(prefix="trace-changes-"))
    for i in range(runs):
        CHANGES.clear()
        summary = crawl(site, out, 300, seed)
        print(f"run {i} found {found(site, out)} checks {summary['checks']}", flush=True)
        for change in CHANGES[:20]:
            print("    page", change, flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
