"""Where a warm run's requests go before it reaches 90 % of the new and changed files (``bench recrawl``'s
measure), on one simulated profile and seed: the epoch before crawled cold, then the site's epoch 1 warm,
as ``bench recrawl`` crawls them. Each request up to that point is counted by what it asked: a page (new to
the site or known; its body changed since the last run or not; what the sitemap's lastmod said of it; whether
it links a new or changed file), a file (new, changed, moved, unchanged; 200 or 304), an error, a sitemap.

    PYTHONPATH=<tree> python benchmarks/results/recrawl-sitemaps/where_requests_go.py small-sitemap 0

With TAG in the environment (issue 23, round 5) it also writes the requests in their order to
``seq-<profile>-<seed>-<TAG>.txt``: how the double reads and the early checks of moved files were found.
"""

from __future__ import annotations

import collections
import math
import os
import re
import sys
import tempfile
from pathlib import Path
from urllib.parse import urljoin, urlsplit

from sbcrawl_dev.bench.warm_vs_cold import REACH, crawl
from sbcrawl_dev.sim import sitemap_docs
from sbcrawl_dev.sim.site import Site, build_site

SEQ: list[str] = []  # one line per request up to the 90 % point: index, files served so far, what it asked
TAG = os.environ.get("TAG", "")
_HREF = re.compile(rb'href="([^"]+)"')


def _body(site: Site, url: str) -> tuple[int, bytes]:
    response = site.response("GET", url, count=False)
    return response.status, b"".join(response.body)


def _links(site: Site, url: str) -> set[str]:
    return {urljoin(url, h.decode()) for h in _HREF.findall(_body(site, url)[1])}


def main(profile: str, seed: int) -> None:
    before, after = build_site(profile, seed, epoch=0), build_site(profile, seed, epoch=1)
    truth = after.changes(0)
    wanted = {u for u, s in truth.items() if s in ("new", "changed")}
    listed = before.profile.sitemap_share > 0
    lastmod_now = {e.url: e.lastmod for e in sitemap_docs.entries(after)} if listed else {}
    lastmod_then = {e.url: e.lastmod for e in sitemap_docs.entries(before)} if listed else {}
    known = set(before._ground_truth().depth)
    max_requests = int(1.5 * max(before.url_count, after.url_count))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp, "warm")
        crawl(before, out, max_requests, warm=True, seed=seed)
        log, _ = crawl(after, out, max_requests, warm=True, seed=seed)
    need, served = math.ceil(REACH * len(wanted)), set()
    counts: collections.Counter[str] = collections.Counter()
    seen: set[str] = set()
    reach = 0
    for reach, entry in enumerate(log, 1):
        url = entry.url
        if entry.method == "GET" and entry.status == 200 and url in wanted:
            served.add(url)
        kind = "sitemap" if "sitemap" in urlsplit(url).path else after.kind(url)
        again = " (again)" if url in seen else ""
        seen.add(url)
        if kind == "html":
            host = urlsplit(url).netloc.split(".")[0]
            section = urlsplit(url).path.split("/")[1] if urlsplit(url).path.count("/") else ""
            lastmod = ("lastmod newer" if lastmod_now[url] != lastmod_then.get(url) else "lastmod same"
                       ) if url in lastmod_now else "not in the sitemap"
            body = "changed" if url not in known or _body(before, url) != _body(after, url) else "unchanged"
            leads = "links new/changed files" if _links(after, url) & wanted else "links none"
            what = (f"page {entry.status} {host}/{section} {'known' if url in known else 'new'}, body {body}, "
                   f"{lastmod}, {leads}{again}")
        elif kind in ("target", "error", "redirect"):
            what = f"{kind} {entry.status} {truth.get(url, '-')}{again}"
        else:
            what = f"{kind} {entry.status}{again}"
        counts[what] += 1
        SEQ.append(f"{reach:4d} {len(served):4d} {entry.status} {kind:8s} {url}  | " + what)
        if len(served) >= need:
            break
    if TAG:
        Path(f"seq-{profile}-{seed}-{TAG}.txt").write_text("\n".join(SEQ))
    print(f"{profile} seed {seed}: {reach} requests to {REACH:.0%} of the {len(wanted)} new and changed files")
    for what, n in counts.most_common():
        print(f"{n:6d}  {what}")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
