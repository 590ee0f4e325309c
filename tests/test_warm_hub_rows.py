"""A data portal's page of catalogues (a listing of listings) in a warm run (issue 23, round 10): a row of
a catalogue read as before does not vouch for the catalogue's datasets, and the start page's new rows send
the portal page next when it shows no later page of its own."""

from __future__ import annotations

import numpy as np

from airflow_sbcrawl.crawler import CrawlConfig, Crawler, LocalSink
from airflow_sbcrawl.crawler.memory import KnownDataset, KnownPage, SiteMemory, url_key
from airflow_sbcrawl.crawler.policies import NewLink
from airflow_sbcrawl.crawler.warm import RECRAWL_SHARE, Changes, Observations, RevisitPlan, link_contexts

SITE = "http://stats.test/"
PORTAL = SITE + "data/"
PUBS = SITE + "publications"
CATS = {SITE + "data/cat/a": (1, 2), SITE + "data/cat/b": (3, 4)}  # catalogue -> the dataset pages it described


def _rows(rows: dict[str, str]) -> bytes:
    items = "".join(f"<li><a href='{url}'>{url.rsplit('/', 1)[-1]}</a> {text}</li>" for url, text in rows.items())
    menu = f"<nav><ul><li><a href='{PORTAL}'>Data</a></li><li><a href='{SITE}about'>About</a></li></ul></nav>"
    return f"<html><body>{menu}<ul>{items}</ul></body></html>".encode()


PORTAL_BODY = _rows({cat: "12 datasets" for cat in CATS})
HOME_ROWS = {SITE + "news/1": "2025-01-02 figures out"}
PUB_ROWS = {SITE + f"p/{i}": f"report {i}, 2025-01-02" for i in (1, 2, 3)}


def _contexts(body: bytes, page: str, url: str) -> list[str]:
    return sorted(link_contexts(body, page).contexts[url])


def _plan(tmp_path) -> tuple[Crawler, RevisitPlan]:
    """The start page described a news item and links the portal from its menu; the portal described two
    catalogues, each two dataset pages with one file each; the publications listing described three
    publications with one file each (it settles more than the portal)."""
    def page(url: str, parent: str, depth: int, listed_on: list[str], contexts: list[str]) -> KnownPage:
        return KnownPage(url=url, parent=parent, depth=depth, tag_path="html body ul li a", score=1,
                         listed_on=listed_on, contexts=contexts)

    home = _rows(HOME_ROWS)
    pages = {SITE: page(SITE, "", 0, [], []),
             PORTAL: page(PORTAL, SITE, 1, [], []),
             PUBS: page(PUBS, SITE, 1, [], []),
             SITE + "news/1": page(SITE + "news/1", SITE, 1, [SITE], _contexts(home, SITE, SITE + "news/1"))}
    datasets = {}
    for url in PUB_ROWS:
        pages[url] = page(url, PUBS, 2, [PUBS], _contexts(_rows(PUB_ROWS), PUBS, url))
        datasets[url + ".pdf"] = KnownDataset(url=url + ".pdf", sha256=url, found_on=url, listed_on=[url])
    for cat, ds in CATS.items():
        pages[cat] = page(cat, PORTAL, 2, [PORTAL], _contexts(PORTAL_BODY, PORTAL, cat))
        for d in ds:
            url, file = SITE + f"d/{d}", SITE + f"f/{d}.csv"
            pages[url] = page(url, cat, 3, [cat], [f"row-{d}"])
            datasets[file] = KnownDataset(url=file, sha256=str(d), etag=f'"{d}"', found_on=url, listed_on=[url],
                                          last_modified="Thu, 02 Jan 2025 08:00:00 GMT", contexts=[f"file-{d}"])
    memory = SiteMemory(start_url=SITE, run_id="r0", pages=pages, datasets=datasets,
                        seen_urls=np.array([url_key(u) for u in pages], dtype=np.uint64),
                        read_urls=np.array([url_key(u) for u in (SITE, PORTAL, PUBS, *CATS)], dtype=np.uint64))
    crawler = Crawler(CrawlConfig(SITE, delay=0.0, max_requests=100), LocalSink(tmp_path))
    plan = RevisitPlan.seeded(memory, crawler.links, Changes(crawler.links, memory), Observations(),
                              int(RECRAWL_SHARE * 100), crawler.policy.add, SITE)
    return crawler, plan


def _read(plan: RevisitPlan, url: str, body: bytes) -> None:
    page = link_contexts(body, url)
    plan.observations.page_links(url, page)
    plan.page_read(url, page)


def test_a_catalogues_row_as_before_does_not_vouch_for_its_datasets(tmp_path):
    _, plan = _plan(tmp_path)
    _read(plan, PORTAL, PORTAL_BODY)  # both catalogues' rows as they were (their names, their counts)
    # the datasets in them may have been updated all the same: the catalogues' own rows tell, not the portal
    assert plan.settled()["vouched"] == 0  # before: all four files, vouched for by the portal's two rows


def test_the_start_pages_new_rows_send_the_portal_of_catalogues_next(tmp_path):
    crawler, plan = _plan(tmp_path)
    _read(plan, SITE, _rows({SITE + "news/2": "2026-02-01 new figures", **HOME_ROWS}))
    link_id = crawler.links.add(SITE + "news/2", 1, crawler.links.ids[SITE], "html body ul li a")
    assert plan.claim([NewLink(link_id, SITE + "news/2", "html body ul li a", "", 1)]) == []
    handed = [crawler.links.urls[plan.next(policy_has_links=False)] for _ in range(2)]
    # the portal shows which catalogues the new items went to; the publications (which settle more) wait
    assert handed == [SITE + "news/2", PORTAL]
