"""The warm run of ``serial_warm.py`` (round 7: one request at a time, so a figure repeats exactly), each
request labelled by what asked it: the plan's tier and gain when it was handed out (``REVISIT:3``,
``LEAF:0``, ``VOUCHED:1``...; ``:single`` when a page of one file to learn about sent that file instead),
``PAGECHECK`` for the known files a page read sent to check, ``other`` for the policy, the pages' own work
(their new files) and the sitemaps. Lines: ``<n> <status> <*|-> <label> <url>`` (``*`` = a new or changed
file). It patches the plan's methods from outside to read what they hand out; it changes no decision.

    PYTHONPATH=<tree> python benchmarks/results/recrawl-i23-round8/traced_warm.py deep-sitemap 0 trace.txt
"""

from __future__ import annotations

import math
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "recrawl-i23-round7"))

import serial_warm

from airflow_sbcrawl.crawler.warm import plan as warm_plan
from sbcrawl_dev.bench.warm_vs_cold import REACH
from sbcrawl_dev.sim.site import build_site

LABELS: dict[str, str] = {}
_first, _next, _read = warm_plan.RevisitPlan._first, warm_plan.RevisitPlan.next, warm_plan.RevisitPlan.page_read


def _first_seen(self, last):
    self._traced = _first(self, last)
    return self._traced


def _next_labelled(self, *args, **kwargs):
    self._traced = None
    link = _next(self, *args, **kwargs)
    if link is not None and self._traced:
        tier, gain, first = self._traced
        LABELS.setdefault(self.links.urls[link], f"{tier.name}:{gain}" + ("" if first == link else ":single"))
    return link


def _read_labelled(self, url, page):
    checks = _read(self, url, page)
    for link in checks:
        LABELS.setdefault(self.links.urls[link], "PAGECHECK")
    return checks


warm_plan.RevisitPlan._first = _first_seen
warm_plan.RevisitPlan.next = _next_labelled
warm_plan.RevisitPlan.page_read = _read_labelled


def main(profile: str, seed: int, out: str) -> None:
    before, after = build_site(profile, seed, epoch=0), build_site(profile, seed, epoch=1)
    wanted = {u for u, s in after.changes(0).items() if s in ("new", "changed")}
    max_requests = int(1.5 * max(before.url_count, after.url_count))
    with tempfile.TemporaryDirectory() as tmp:
        serial_warm.crawl(before, Path(tmp), max_requests, seed)
        LABELS.clear()
        log = serial_warm.crawl(after, Path(tmp), max_requests, seed)
    need, served, reach = math.ceil(REACH * len(wanted)), set(), None
    for i, entry in enumerate(log, 1):
        if entry.status == 200 and entry.url in wanted and entry.url not in served:
            served.add(entry.url)
            if len(served) == need:
                reach = i
    with open(out, "w") as f:
        for i, entry in enumerate(log, 1):
            f.write(f"{i} {entry.status} {'*' if entry.url in wanted else '-'} {LABELS.get(entry.url, 'other')} "
                    f"{entry.url}\n")
    print(f"{profile} seed {seed}: {reach} requests to 90% of {len(wanted)} new and changed files, found "
          f"{len(served)} in {len(log)} requests")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
