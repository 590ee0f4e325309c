"""What a sitemap profile's site publishes for a warm run, and how few requests a warm run that reads only
what it must could take to 90 % of the new and changed files (issue 23, round 9).

It reads the simulated site the way the crawler may (its pages, its sitemap's <lastmod>, what the last
run saw), uses the simulator's truth only to count, and prints:

* the sitemap's entries by kind of page and by whether their lastmod is after the last run (fresh);
* the new and changed files by the route a crawler has to them: their page listed fresh (a crawler can go
  straight to it), listed with an old lastmod (stale: the sitemap vouches for a page that changed), or
  unlisted (only a listing's row, or the page itself, tells);
* an optimistic bound (a run that knew more than it can): the sitemaps and robots.txt; every page listed
  fresh *whose files changed* and those files (the fresh pages whose files did not change cost nothing:
  ``--all-fresh`` charges them, as a run that trusts the lastmod alone pays them); then the listings
  (catalogues, the publications) read only on their pages that show a row the sitemap does not list (a
  run does not know before reading which pages those are, rows shift), the listing with the most changed
  files per request first (a run does not know that either), each changed or new page behind a row read
  (its one known file asked directly when it had one), until 90 % of the new and changed files. It
  leaves out what a real run cannot avoid (pages whose rows moved, checks "to be sure", feeds, the
  frontier): a warm run cannot do better than it on that site, whatever its order.

    PYTHONPATH=<tree> python benchmarks/results/recrawl-i23-round9/sitemap_bound.py deep-sitemap 0 1 2
"""

from __future__ import annotations

import collections
import math
import sys
from urllib.parse import urlsplit

from sbcrawl_dev.sim import epochs, sitemap_docs
from sbcrawl_dev.sim.site import build_site

ALL_FRESH = "--all-fresh" in sys.argv
OWNERS = ("dataset", "publication")  # pages that link the files
LISTINGS = ("catalogue", "listing")  # pages whose rows link those pages


def main(profile: str, seed: int) -> None:
    before, site = build_site(profile, seed, epoch=0), build_site(profile, seed, epoch=1)
    fresh_from = epochs.epoch_date(1)
    status = site.changes(0)
    wanted = {u for u, s in status.items() if s in ("new", "changed")}
    need = math.ceil(0.9 * len(wanted))
    lastmod = {e.url: e.lastmod for e in sitemap_docs.entries(site)}
    pages = [u for u in site._ground_truth().depth if site.kind(u) == "html"]
    old_pages = {u for u in before._ground_truth().depth if before.kind(u) == "html"}
    handler = {u: site.route(u).handler for u in pages}
    links = {u: site.links(u) for u in pages}
    print(f"{profile} seed {seed}: {len(wanted)} new and changed files, 90 % = {need}; "
          f"sitemap {len(lastmod)} of {len(pages)} pages")
    kinds = collections.Counter((handler.get(u, "?"), lastmod[u] >= fresh_from) for u in lastmod)
    print("  sitemap entries (kind: fresh / old lastmod):",
          ", ".join(f"{k} {kinds[k, True]}/{kinds[k, False]}" for k in sorted({k for k, _ in kinds})))
    owner_files: dict[str, set[str]] = collections.defaultdict(set)
    for u in pages:
        if handler[u] in OWNERS:
            owner_files[u] = {f for f in links[u] if f in wanted}
    def route(u: str) -> str:
        if u not in lastmod:
            return "unlisted"
        return "fresh" if lastmod[u] >= fresh_from else "stale"
    routes = collections.Counter()
    for u, files in owner_files.items():
        if files:
            routes[route(u), "new page" if u not in old_pages else "old page"] += len(files)
    print("  new and changed files by their page's sitemap entry:",
          ", ".join(f"{r} {n}" for r, n in sorted(routes.items())))
    # Fresh pages: read them all (a crawler cannot tell which of them changed a file).
    fresh = [u for u in owner_files if route(u) == "fresh" and (ALL_FRESH or owner_files[u])]
    fresh_files = sum(len(owner_files[u]) for u in fresh)
    cost = 3 + 1 + sitemap_documents(site)  # robots.txt of the three hosts, the home page
    cost += len(fresh) + fresh_files
    found = fresh_files
    # Listings: read the pages with a row the sitemap does not vouch for (unlisted); what they show.
    listing_pages: dict[str, list[str]] = collections.defaultdict(list)
    for u in pages:
        if handler[u] in LISTINGS and "filter" not in u:
            parts = urlsplit(u)
            listing_pages[parts.netloc + parts.path].append(u)
    options = []
    for name, members in listing_pages.items():
        read, gained, extra = 0, 0, 0
        for page in members:
            rows = [r for r in links[page] if handler.get(r) in OWNERS]
            if not any(route(r) == "unlisted" for r in rows):
                continue
            read += 1
            for r in rows:
                if route(r) != "fresh" and owner_files[r]:
                    gained += len(owner_files[r])
                    old_files = [f for f in before.links(r) if site.kind(f) != "html"] if r in old_pages else []
                    extra += len(owner_files[r]) + (0 if len(old_files) == 1 and r in old_pages else 1)
        if gained:
            options.append((gained / (read + extra), name, read, extra, gained))
    options.sort(reverse=True)
    for _, _name, read, extra, gained in options:
        if found >= need:
            break
        take = min(1.0, (need - found) / gained)
        cost += take * (read + extra)
        found += take * gained
    print(f"  bound: {round(cost)} requests to {need} files ({len(fresh)} fresh pages read for {fresh_files} files, "
          f"then {len(options)} listings by yield){'' if found >= need else ' (never reached)'}")


def sitemap_documents(site) -> int:
    return 1 + len(sitemap_docs._children(site))


if __name__ == "__main__":
    for s in [a for a in sys.argv[2:] if a.isdigit()]:
        main(sys.argv[1], int(s))
