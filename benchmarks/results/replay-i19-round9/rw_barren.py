"""Which pages a replayed crawl of rw fetched before 90 % revealed no new target, and what the goal pages
say beside each such indicator (its status). Reads the server log written by
``replay/evaluate_replay.py --log`` and the extracted site (~/.cache/sbcrawl-replay/rw).

    python3 rw_barren.py LOG.jsonl REQUESTS_TO_90
"""

from __future__ import annotations

import html
import json
import os
import re
import sys
from collections import Counter
from urllib.parse import urljoin

ROOT = os.path.expanduser("~/.cache/sbcrawl-replay/rw/")
SITE = "http://sustainabledevelopment-rwanda.github.io/sdg-site-rwanda/"
HREF = re.compile(r"""href=['"]([^'"]+)['"]""")


def page_file(url: str) -> str:
    path = ROOT + url.split(".github.io/", 1)[1]
    return path + "index.html" if path.endswith("/") else path


def links(url: str) -> set[str]:
    with open(page_file(url), errors="ignore") as f:
        text = f.read()
    # The site links its files by https; the replay serves them by http.
    return {urljoin(url, html.unescape(h).replace("https:", "http:", 1)) for h in HREF.findall(text)}


def statuses() -> dict[str, str]:
    """Indicator slug -> the status its goal page shows beside its link."""
    out = {}
    for goal in range(1, 18):
        with open(page_file(f"{SITE}{goal}/"), errors="ignore") as f:
            text = f.read()
        pattern = r"href=['\"][^'\"]*/(\d+-\w+-\d+)/['\"].*?status-inner\">\s*([^<]+?)\s*<"
        for slug, status in re.findall(pattern, text, re.S):
            out.setdefault(slug, " ".join(status.split()))
    return out


def main() -> None:
    with open(sys.argv[1]) as f:
        log = [json.loads(line) for line in f]
    n90 = int(sys.argv[2])
    targets = {r["url"] for r in log if r["kind"] == "target"}
    status = statuses()
    known: set[str] = set()
    barren = []
    for r in log[:n90]:
        if r["kind"] != "html" or r["method"] != "GET":
            continue
        found = links(r["url"]) & targets
        if not found - known:
            slug = r["url"].removeprefix(SITE).strip("/")
            barren.append((r["seq"], slug, status.get(slug, "(not an indicator)")))
        known |= found
    for row in barren:
        print(*row, sep="\t")
    print(len(barren), "pages revealing no new target;", Counter(s for _, _, s in barren))


if __name__ == "__main__":
    main()
