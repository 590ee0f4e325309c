"""Every request of a labelled warm trace (``traced_warm.py``) up to 90 % of the new and changed files, put
in one class: *necessary* (a new or changed file answering 200, or a page answering 200 that links a URL
necessary later in the trace: the chain of pages that led to it) or *waste*, by the simulator's kind of
URL, the status and the label of what asked it. The detail groups the waste by URL shape (numbers as N,
query values dropped) to read it, not to write rules from.

    PYTHONPATH=<tree> python benchmarks/results/recrawl-i23-round8/account.py deep-sitemap 0 trace.txt [top]
"""

from __future__ import annotations

import math
import re
import sys
from collections import Counter

from sbcrawl_dev.sim.site import build_site


def shape(url: str) -> str:
    url = re.sub(r"https?://", "", url)
    path, _, query = url.partition("?")
    return re.sub(r"\d+", "N", path) + ("?" + re.sub(r"=[^&]*", "=", query) if query else "")


def main(profile: str, seed: int, path: str, top: int = 20) -> None:
    site = build_site(profile, seed, epoch=1)
    wanted = {u for u, s in site.changes(0).items() if s in ("new", "changed")}
    rows = []
    with open(path) as f:
        for line in f:
            n, status, _, label, url = line.split()
            rows.append((int(n), int(status), label.split(":")[0], url))
    need, served, reach = math.ceil(0.9 * len(wanted)), set(), len(rows)
    for n, status, _, url in rows:
        if status == 200 and url in wanted and url not in served:
            served.add(url)
            if len(served) == need:
                reach = n
                break
    rows = rows[:reach]
    necessary, led_to = set(), set()
    for n, status, _, url in reversed(rows):
        if status == 200 and (url in wanted or set(site.links(url)) & led_to):
            necessary.add(n)
            led_to.add(url)
    classes: Counter[tuple[str, str, str]] = Counter()
    detail: Counter[tuple[str, int, str]] = Counter()
    for n, status, label, url in rows:
        if n in necessary:
            classes["necessary", "file" if url in wanted else "page", label] += 1
        else:
            classes["waste", f"{site.kind(url)} {status}", label] += 1
            detail[label, status, shape(url)] += 1
    print(f"{profile} seed {seed}: {reach} requests to 90 %, {len(necessary)} necessary")
    for key, count in classes.most_common():
        print(f"  {count:5d} {' '.join(key)}")
    print(" waste by URL shape:")
    for key, count in detail.most_common(top):
        print(f"  {count:5d} {key}")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3], *(int(a) for a in sys.argv[4:5]))
