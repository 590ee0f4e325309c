"""Why the crawler parses HTML with lxml: parse + link extraction per page, lxml against beautifulsoup4.

    .venv/bin/python -m sbcrawl_dev bench html-parsers [--profile small] [--pages 40] [--repeats 7]

The pages are the simulator's (profile ``small``, seed 0, breadth-first from the start page). Three
parsers do the same job as ``crawler.html.extract_links``: every a/area/iframe/frame link, resolved, with
its tag path and anchor text.

* ``lxml``: ``crawler.html.extract_links`` itself.
* ``bs4 + html.parser``: BeautifulSoup with Python's own parser (beautifulsoup4's default).
* ``bs4 + lxml``: BeautifulSoup on top of lxml's parser.

Prints the median over ``--repeats`` runs of the time per page, and checks that all three found the same
links (so the comparison is of equal work).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import deque

from airflow_sbcrawl.crawler.html import extract_links
from airflow_sbcrawl.crawler.urls import resolve
from sbcrawl_dev.sim import build_site

_LINK_ATTRS = {"a": "href", "area": "href", "iframe": "src", "frame": "src"}


def sample_pages(profile: str, n: int) -> list[tuple[str, bytes]]:
    site = build_site(profile, 0)
    seen, queue, pages = {site.start_url}, deque([site.start_url]), []
    while queue and len(pages) < n:
        url = queue.popleft()
        page = site.page(url)
        if page is None:
            continue
        pages.append((url, page.html().encode("utf-8")))
        for link in page.links:
            if link not in seen:
                seen.add(link)
                queue.append(link)
    return pages


def _bs4_label(el) -> str:
    label = el.name
    if el.get("id"):
        label += "#" + el["id"]
    return label


def bs4_links(body: bytes, page_url: str, backend: str) -> list[str]:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(body, backend)
    base_el = soup.find("base", href=True)
    base = resolve(page_url, base_el["href"]) or page_url if base_el else page_url
    out = []
    for el in soup.find_all(list(_LINK_ATTRS)):
        target = el.get(_LINK_ATTRS[el.name])
        url = resolve(base, target) if target else None
        if url is None:
            continue
        path = " ".join(reversed([_bs4_label(el)] + [_bs4_label(p) for p in el.parents if p.name != "[document]"]))
        anchor = " ".join(el.get_text().split())[:120] if el.name == "a" else ""
        out.append((url, path, anchor))
    return [u for u, _, _ in out]


def time_per_page(fn, pages: list[tuple[str, bytes]], repeats: int) -> float:
    runs = []
    for _ in range(repeats):
        began = time.perf_counter()
        for url, body in pages:
            fn(body, url)
        runs.append((time.perf_counter() - began) / len(pages))
    return statistics.median(runs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sbcrawl_dev bench html-parsers",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default="small")
    parser.add_argument("--pages", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    pages = sample_pages(args.profile, args.pages)
    size = sum(len(b) for _, b in pages) / len(pages)
    contenders = {
        "lxml (crawler.html.extract_links)": lambda body, url: [link.url for link in extract_links(body, url)],
        "bs4 + html.parser": lambda body, url: bs4_links(body, url, "html.parser"),
        "bs4 + lxml": lambda body, url: bs4_links(body, url, "lxml"),
    }
    reference = [contenders["lxml (crawler.html.extract_links)"](b, u) for u, b in pages]
    for name, fn in contenders.items():
        if [fn(b, u) for u, b in pages] != reference:
            print(f"warning: {name} found other links than lxml", file=sys.stderr)
    print(f"{len(pages)} pages of the simulator's {args.profile!r} site, {size / 1024:.1f} KiB on average, "
          f"{sum(map(len, reference)) / len(pages):.0f} links per page; median of {args.repeats} runs")
    baseline = None
    for name, fn in contenders.items():
        per_page = time_per_page(fn, pages, args.repeats)
        baseline = baseline or per_page
        print(f"  {name:36s} {per_page * 1000:7.2f} ms/page  ({per_page / baseline:4.1f}x)")
    return 0

