"""Unchanged (or moved) files a traced warm run (round 8's ``traced_warm.py``) downloaded again, each with
the plan's label that sent it and whether the file answers with a validator (what ``bench recrawl`` counts
as "unchanged downloaded again"), for the whole run (issue 23, round 11).

    PYTHONPATH=<tree> python benchmarks/results/recrawl-i23-round11/redownloads.py small-sitemap 0 trace-0.txt
"""

from __future__ import annotations

import sys

from sbcrawl_dev.sim.site import build_site


def main(profile: str, seed: int, path: str) -> None:
    site = build_site(profile, seed, epoch=1)
    truth = site.changes(0)
    total = 0
    with open(path) as f:
        for line in f:
            n, status, _, label, url = line.split()
            if status == "200" and truth.get(url) in ("unchanged", "moved"):
                headers = site.response("HEAD", url, count=False).headers
                validated = bool({"ETag", "Last-Modified"} & set(headers))
                total += 1
                print(n, label, truth[url], "validator" if validated else "no validator", url)
    print(f"{profile} seed {seed}: {total} unchanged or moved files downloaded again")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
