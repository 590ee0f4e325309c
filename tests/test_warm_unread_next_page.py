"""A listing whose new rows push its old ones on to a page the last runs never read: the warm plan follows
it there (issue 23, round 9). On deep-sitemap seed 1 the cold run had left a catalogue's second page in its
frontier; the warm run read the first page's new rows, stopped there, and found the datasets pushed on to
the second page only after ~5,000 requests of the policy's facet pages."""

from __future__ import annotations

import numpy as np

from airflow_sbcrawl.crawler import CrawlConfig, Crawler, LocalSink
from airflow_sbcrawl.crawler.memory import FrontierLink, KnownPage, SiteMemory, url_key
from airflow_sbcrawl.crawler.policies import NewLink
from airflow_sbcrawl.crawler.warm import RECRAWL_SHARE, Changes, Observations, RevisitPlan, link_contexts
from airflow_sbcrawl.crawler.warm.known import add_frontier

SITE = "http://stats.test/"
CAT = [SITE + f"catalogue?page={n}" for n in (1, 2, 3)]
PAGER = "html body ul li a"


def _row(d: int, when: str) -> str:
    return f"<li><a href='/d/{d}'>D{d}</a> 2 files, last modified {when}</li>"


def _page(rows: str, next_url: str) -> bytes:
    return f"<html><body><ul>{rows}</ul><ul><li><a href='{next_url}'>Next</a></li></ul></body></html>".encode()


def _warm(tmp_path, with_next_page_read: bool) -> tuple[Crawler, RevisitPlan]:
    """A memory of a catalogue whose page 1 described d/1, d/2 and page 2 d/3, d/4 (page 2 found through
    page 1's pager); page 3, met on page 2, was never read (the last run's frontier) unless
    ``with_next_page_read``. Other known pages: d/1..d/6, d/5 and d/6 described by page 3 when it was read."""
    listed = {1: CAT[0], 2: CAT[0], 3: CAT[1], 4: CAT[1], 5: CAT[2], 6: CAT[2]}
    pages = {CAT[0]: KnownPage(url=CAT[0], parent=SITE, depth=1, tag_path="html body nav a", score=2),
             CAT[1]: KnownPage(url=CAT[1], parent=CAT[0], depth=2, tag_path=PAGER, score=2)}
    if with_next_page_read:
        pages[CAT[2]] = KnownPage(url=CAT[2], parent=CAT[1], depth=3, tag_path=PAGER, score=2)
    for d, cat in listed.items():
        if cat not in pages:
            continue
        url = SITE + f"d/{d}"
        contexts = sorted(link_contexts(_row(d, "2025-01-02").encode(), cat).contexts[url])
        pages[url] = KnownPage(url=url, parent=cat, depth=pages[cat].depth + 1, tag_path="html body ul li a",
                               score=1, listed_on=[cat], contexts=contexts)
    frontier = [] if with_next_page_read else [FrontierLink(CAT[2], CAT[1], 3, PAGER)]
    memory = SiteMemory(start_url=SITE, run_id="r0", pages=pages,
                        seen_urls=np.array([url_key(u) for u in [*pages, CAT[2]]], dtype=np.uint64),
                        read_urls=np.array([url_key(u) for u in pages if "catalogue" in u], dtype=np.uint64),
                        frontier=frontier)
    crawler = Crawler(CrawlConfig(SITE, delay=0.0, max_requests=100), LocalSink(tmp_path))
    plan = RevisitPlan.seeded(memory, crawler.links, Changes(crawler.links, memory), Observations(),
                              int(RECRAWL_SHARE * 100), crawler.policy.add, SITE)
    plan.defer(add_frontier(memory, crawler.links, lambda url: True))
    return crawler, plan


def _read_with_new_row(crawler: Crawler, plan: RevisitPlan, page: int, new: int, shown: list[int]) -> None:
    """Catalogue page ``page`` read showing a new row d/``new`` at its head and the known rows ``shown``."""
    url = CAT[page - 1]
    rows = _row(new, "2026-02-01") + "".join(_row(d, "2025-01-02") for d in shown)
    body = _page(rows, CAT[page]) if page < len(CAT) else _page(rows, SITE)
    links_on_page = link_contexts(body, url)
    plan.observations.page_links(url, links_on_page)
    plan.page_read(url, links_on_page)
    link_id = crawler.links.add(SITE + f"d/{new}", page + 1, crawler.links.ids[url], "html body ul li a")
    assert plan.claim([NewLink(link_id, SITE + f"d/{new}", "html body ul li a", "", page + 1)]) == []


def _handed(plan: RevisitPlan, n: int) -> list[str]:
    return [plan.links.urls[plan.next(policy_has_links=False)] for _ in range(n)]


def test_a_listing_with_new_rows_is_followed_to_a_next_page_the_last_runs_never_read(tmp_path):
    crawler, plan = _warm(tmp_path, with_next_page_read=False)
    assert _handed(plan, 1) == [CAT[0]]
    _read_with_new_row(crawler, plan, 1, new=9, shown=[1])
    assert _handed(plan, 2) == [SITE + "d/9", CAT[1]]
    _read_with_new_row(crawler, plan, 2, new=8, shown=[2, 3])
    # page 2 showed new rows too: the rows it showed last time went on to page 3, which the last run met
    # (its frontier) and never read; it comes next, not after the plan
    assert _handed(plan, 2) == [SITE + "d/8", CAT[2]]


def test_a_next_page_the_last_runs_read_is_followed_as_before(tmp_path):
    crawler, plan = _warm(tmp_path, with_next_page_read=True)
    assert _handed(plan, 1) == [CAT[0]]
    _read_with_new_row(crawler, plan, 1, new=9, shown=[1])
    assert _handed(plan, 2) == [SITE + "d/9", CAT[1]]
    _read_with_new_row(crawler, plan, 2, new=8, shown=[2, 3])
    assert _handed(plan, 2) == [SITE + "d/8", CAT[2]]
