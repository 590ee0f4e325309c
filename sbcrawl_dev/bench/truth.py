"""What the benchmark knows of a simulated site that no crawler does: its URLs, targets and volumes.

Only the simulator's public API is used (``url_count``, ``targets``, ``depth``, ``links``, ``kind``,
``location``, ``response``), so the denominators of the measures are the simulator's own ground truth."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from sbcrawl_dev.sim.site import Site

# Non-target kinds whose volume is the denominator of Table 3. Media files are left out: every crawler
# here cuts them off at the headers (blocked MIME types), and counting their full size would make every
# ratio look small.
PAGE_KINDS = frozenset({"html", "redirect", "error"})


@dataclass(frozen=True)
class SiteTruth:
    profile: str
    seed: int
    start_url: str
    url_count: int  # the paper's "#Available": reachable html, target, redirect and media URLs
    target_sizes: dict[str, int]  # every reachable target URL -> its body size in bytes
    non_target_volume: int  # body bytes of every reachable non-target page (PAGE_KINDS)

    @property
    def targets(self) -> int:
        return len(self.target_sizes)

    @property
    def target_volume(self) -> int:
        return sum(self.target_sizes.values())


def site_truth(site: Site) -> SiteTruth:
    """Walk the reachable part of the site (the simulator's ``depth`` says what a polite crawler reaches)
    and add up the body sizes of its targets and of its other pages."""
    targets = site.targets
    target_sizes = {url: int(targets[url][1]) for url in targets}
    seen = {site.start_url}
    queue = deque([site.start_url])
    volume = 0
    while queue:
        url = queue.popleft()
        kind = site.kind(url)
        if kind in PAGE_KINDS:
            volume += _body_size(site, url)
        nexts: list[str] = []
        if kind == "html":
            nexts = site.links(url)
        elif kind == "redirect":
            loc = site.location(url)
            nexts = [loc] if loc else []
        for link in nexts:
            if link not in seen and site.depth(link) is not None:
                seen.add(link)
                queue.append(link)
    return SiteTruth(site.profile.name, site.seed, site.start_url, site.url_count, target_sizes, volume)


def _body_size(site: Site, url: str) -> int:
    resp = site.response("GET", url, count=False)
    length = resp.headers.get("Content-Length")
    if length is not None:
        return int(length)
    return sum(len(chunk) for chunk in resp.body)
