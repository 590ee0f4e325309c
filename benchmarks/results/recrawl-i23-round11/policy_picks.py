"""The policy's picks (pages labelled ``other`` by round 8's ``traced_warm.py``: not the plan's, not a
page's own files) before a warm run's 90 % point, by the simulator's page kind (issue 23, round 11).

    PYTHONPATH=<tree> python benchmarks/results/recrawl-i23-round11/policy_picks.py small-sitemap 0 trace-0.txt
"""

from __future__ import annotations

import collections
import math
import sys

from sbcrawl_dev.sim.site import build_site


def main(profile: str, seed: int, path: str) -> None:
    site = build_site(profile, seed, epoch=1)
    wanted = {u for u, s in site.changes(0).items() if s in ("new", "changed")}
    need = math.ceil(0.9 * len(wanted))
    with open(path) as f:
        lines = [line.split() for line in f]
    served, reach = set(), len(lines)
    for i, (_, status, _, _, url) in enumerate(lines, 1):
        if status == "200" and url in wanted and url not in served:
            served.add(url)
            if len(served) == need:
                reach = i
                break
    picks = collections.Counter()
    for _, status, star, label, url in lines[7:reach]:  # after robots, sitemaps and the start page
        handler = site.route(url).handler
        if label == "other" and handler not in ("resource", "file"):
            picks[f"{handler} {status}{' (new/changed)' if star == '*' else ''}"] += 1
    print(f"{profile} seed {seed}: 90 % point {reach}; the policy's picks before it: {sum(picks.values())} "
          f"{dict(picks)}")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
