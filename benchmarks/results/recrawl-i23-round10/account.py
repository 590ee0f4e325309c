"""Requests of a serial warm run up to its 90 % point, by what they were (issue 23, round 10), from the
traces of round 8's ``traced_warm.py``: the site's truth and its sitemap tell, for each request, whether it
was a new or changed file, a page linking one, a listing page showing a row the sitemap does not list whose
page has a new or changed file (what round 9's ``sitemap_bound.py`` reads), or none of those.
Each argument is ``<column>=<trace path ending in -<seed>.txt>``; prints a Markdown table.

    PYTHONPATH=<tree> python benchmarks/results/recrawl-i23-round10/account.py small-sitemap \\
        before=trace-before-0.txt after=trace-after-0.txt
"""

from __future__ import annotations

import collections
import math
import sys

from sbcrawl_dev.sim import sitemap_docs
from sbcrawl_dev.sim.site import build_site

GROUPS = ["robots, sitemaps, home", "new or changed file", "dataset/publication page with a new or changed file",
          "listing page showing an unlisted changed row", "listing page without one",
          "dataset/publication page without (a file moved or removed)", "news items", "data home",
          "static pages (about, contact, legal-notice)", "unchanged file (304) / 410 / 301 / 404 / 500", "other"]
OWNERS = ("dataset", "publication")


def account(profile: str, seed: int, path: str) -> tuple[int, collections.Counter]:
    site = build_site(profile, seed, epoch=1)
    wanted = {u for u, s in site.changes(0).items() if s in ("new", "changed")}
    need = math.ceil(0.9 * len(wanted))
    listed = {e.url for e in sitemap_docs.entries(site)}
    with open(path) as f:
        lines = [line.split() for line in f]
    served, reach = set(), len(lines)
    for i, (_, status, _, _, url) in enumerate(lines, 1):
        if status == "200" and url in wanted and url not in served:
            served.add(url)
            if len(served) == need:
                reach = i
                break
    counts: collections.Counter = collections.Counter()
    for _, status, star, _, url in lines[:reach]:
        handler = site.route(url).handler
        if star == "*":
            group = 1
        elif handler in ("robots", "sitemap", "home"):
            group = 0
        elif status != "200" or site.kind(url) != "html":
            group = 9
        elif handler in OWNERS:
            group = 2 if any(f in wanted for f in site.links(url)) else 5
        elif handler in ("catalogue", "listing"):
            rows = [r for r in site.links(url) if site.route(r).handler in OWNERS]
            group = 3 if any(r not in listed and any(f in wanted for f in site.links(r)) for r in rows) else 4
        else:
            group = {"item": 6, "data_home": 7, "static": 8}.get(handler, 10)
        counts[group] += 1
    return reach, counts


def main(profile: str, columns: list[str]) -> None:
    table = []
    for column in columns:
        name, path = column.split("=", 1)
        seed = int(path.rsplit("-", 1)[1].split(".")[0])
        table.append((f"{name} s{seed}", *account(profile, seed, path)))
    print("| requests to 90 % by what they were | " + " | ".join(name for name, _, _ in table) + " |")
    print("|---|" + "---|" * len(table))
    for group, label in enumerate(GROUPS):
        print(f"| {label} | " + " | ".join(str(counts[group]) for _, _, counts in table) + " |")
    print("| **total (the 90 % point)** | " + " | ".join(f"**{reach}**" for _, reach, _ in table) + " |")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
