"""Which page the warm plan took for each listing's "next page" in a serial warm run (issue 23, round 10):
one line per listing page read, ``HEIR <known|unread> <page> -> <next page> moved <rows credited> tag <tag
path of the next page's link where it was first met>``. It wraps ``RevisitPlan._pass_on`` from outside to
read what it chose; it changes no decision.

    PYTHONPATH=<tree> python benchmarks/results/recrawl-i23-round10/next_pages.py small-sitemap 0 > out.txt
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "recrawl-i23-round7"))

import serial_warm

from airflow_sbcrawl.crawler.warm import plan as warm_plan
from sbcrawl_dev.sim.site import build_site

_pass_on, _unread = warm_plan.RevisitPlan._pass_on, warm_plan.RevisitPlan._unread_heirs
_via: list[str | None] = [None]


def _unread_seen(self, *args):
    found = _unread(self, *args)
    _via[0] = "unread" if found else _via[0]
    return found


def _pass_on_seen(self, page_id, contexts, described):
    _via[0] = "known"
    before = self._next_page.get(page_id)
    _pass_on(self, page_id, contexts, described)
    heir = self._next_page.get(page_id)
    if heir is not None and heir != before:
        moved = [rows for page, _, rows in self._moved if page == page_id]
        print("HEIR", _via[0], self.links.urls[page_id], "->", self.links.urls[heir], "moved",
              len(moved[0]) if moved else 0, "tag", self.links.tag_path(heir)[-60:])


warm_plan.RevisitPlan._pass_on, warm_plan.RevisitPlan._unread_heirs = _pass_on_seen, _unread_seen


def main(profile: str, seed: int) -> None:
    before, after = build_site(profile, seed, epoch=0), build_site(profile, seed, epoch=1)
    max_requests = int(1.5 * max(before.url_count, after.url_count))
    with tempfile.TemporaryDirectory() as tmp:
        serial_warm.crawl(before, Path(tmp), max_requests, seed)
        serial_warm.crawl(after, Path(tmp), max_requests, seed)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
