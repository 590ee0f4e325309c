"""A listing's next page is a later page of the same listing, told by its URL (issue 23, round 10).

Before, the warm plan took for a listing's next page any listing page (or page the last runs met and never
read) it linked barely, farther from the start, or placed as links between known listing pages were: on
the sitemap profiles those included the site's main menu and footer (a home page and a data portal's home
are listings too), so the footer's "about", "contact" and "legal-notice" pages, a catalogue's facet search
and a dataset page's "next dataset" became the next page of most catalogues: followed right away when the
catalogue showed new rows, and credited with the rows it no longer showed."""

from __future__ import annotations

import numpy as np

from airflow_sbcrawl.crawler import CrawlConfig, Crawler, LocalSink
from airflow_sbcrawl.crawler.memory import FrontierLink, KnownPage, SiteMemory, url_key
from airflow_sbcrawl.crawler.policies import NewLink
from airflow_sbcrawl.crawler.warm import RECRAWL_SHARE, Changes, Observations, RevisitPlan, link_contexts
from airflow_sbcrawl.crawler.warm.known import add_frontier, later_page

SITE = "http://stats.test/"
CAT = SITE + "catalogue"
ABOUT = SITE + "about"
MENU = "html body nav a"


def test_later_pages_of_a_listing_are_told_by_their_url():
    assert later_page(CAT, CAT + "?page=2") == 2
    assert later_page(CAT + "?page=2", CAT + "?page=3") == 3
    assert later_page(CAT + "?sort=new", CAT + "?sort=new&page=1") == 1  # Drupal counts from 0
    assert later_page(SITE + "news/", SITE + "news/page/2/") == 2
    assert later_page(SITE + "news/page/2/", SITE + "news/page/3/") == 3
    assert later_page(CAT + "?page=3", CAT + "?page=2") is None  # "previous"
    assert later_page(CAT, CAT + "?format=csv") is None  # a facet
    assert later_page(CAT, CAT + "?sort=new&page=2") is None  # another order
    assert later_page(CAT, ABOUT) is None
    assert later_page(SITE + "dataset/12", SITE + "dataset/13") is None  # the next item, not a next page
    assert later_page(CAT, "http://other.test/catalogue?page=2") is None


def _warm(tmp_path) -> tuple[Crawler, RevisitPlan]:
    """A memory where the home page described the catalogue (a link of its main menu), which described d/1
    and d/2; the footer's "about" page was met (in the menu too) and never read (the last run's frontier)."""
    pages = {SITE: KnownPage(url=SITE, parent="", depth=0, tag_path="", score=2),
             CAT: KnownPage(url=CAT, parent=SITE, depth=1, tag_path=MENU, score=2, listed_on=[SITE],
                            contexts=sorted(link_contexts(b"<ul><li><a href='/catalogue'>Data</a> 2 datasets</li></ul>",
                                                          SITE).contexts[CAT]))}
    for d in (1, 2):
        url = SITE + f"d/{d}"
        contexts = sorted(link_contexts(_row(d, "2025-01-02").encode(), CAT).contexts[url])
        pages[url] = KnownPage(url=url, parent=CAT, depth=2, tag_path="html body ul li a", score=1,
                               listed_on=[CAT], contexts=contexts)
    memory = SiteMemory(start_url=SITE, run_id="r0", pages=pages,
                        seen_urls=np.array([url_key(u) for u in [*pages, ABOUT]], dtype=np.uint64),
                        read_urls=np.array([url_key(u) for u in (SITE, CAT)], dtype=np.uint64),
                        frontier=[FrontierLink(ABOUT, SITE, 1, MENU)])
    crawler = Crawler(CrawlConfig(SITE, delay=0.0, max_requests=100), LocalSink(tmp_path))
    plan = RevisitPlan.seeded(memory, crawler.links, Changes(crawler.links, memory), Observations(),
                              int(RECRAWL_SHARE * 100), crawler.policy.add, SITE)
    plan.defer(add_frontier(memory, crawler.links, lambda url: True))
    return crawler, plan


def _row(d: int, when: str) -> str:
    return f"<li><a href='/d/{d}'>D{d}</a> 2 files, last modified {when}</li>"


def test_a_footer_page_never_read_is_not_a_catalogues_next_page(tmp_path):
    crawler, plan = _warm(tmp_path)
    assert crawler.links.urls[plan.next(policy_has_links=False)] == CAT
    # the catalogue shows a new row at its head, d/1, and no pager: d/2 went on to a page it does not link
    body = (f"<html><body><ul>{_row(9, '2026-02-01')}{_row(1, '2025-01-02')}</ul>"
            "<ul><li><a href='/about'>About</a></li></ul></body></html>").encode()
    page = link_contexts(body, CAT)
    plan.observations.page_links(CAT, page)
    plan.page_read(CAT, page)
    link_id = crawler.links.add(SITE + "d/9", 2, crawler.links.ids[CAT], "html body ul li a")
    assert plan.claim([NewLink(link_id, SITE + "d/9", "html body ul li a", "", 2)]) == []
    handed = [crawler.links.urls[plan.next(policy_has_links=False)] for _ in range(2)]
    assert handed[0] == SITE + "d/9"
    assert ABOUT not in handed  # before: "about" came next, as the catalogue's next page
