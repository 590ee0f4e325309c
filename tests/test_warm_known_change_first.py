"""A warm run asks what the pages showed as changed before the policy's guesses, takes one file's
conditional GET for a page that is no listing, and never downloads again a file without validators to learn
whether a page changed (issue 23, round 11)."""

from __future__ import annotations

import numpy as np

from airflow_sbcrawl.crawler import CrawlConfig, Crawler, LocalSink
from airflow_sbcrawl.crawler.memory import KnownDataset, KnownPage, SiteMemory, url_key
from airflow_sbcrawl.crawler.warm import RECRAWL_SHARE, Changes, Observations, RevisitPlan, link_contexts

SITE = "http://stats.test/"
CAT = SITE + "data/cat"
PUBS = SITE + "publications"
OLD = "2025-01-02"
MODIFIED = "Thu, 02 Jan 2025 08:00:00 GMT"  # the site's clock at the last run: 2025-01-02


def _rows(rows: dict[str, str]) -> bytes:
    items = "".join(f"<li><a href='{url}'>{url.rsplit('/', 1)[-1]}</a> updated {day}</li>" for url, day in rows.items())
    return f"<html><body><ul>{items}</ul></body></html>".encode()


def _page(url: str, parent: str, listed_on: list[str], contexts: list[str]) -> KnownPage:
    return KnownPage(url=url, parent=parent, depth=url.count("/") - 2, tag_path="html body ul li a", score=1,
                     listed_on=listed_on, contexts=contexts)


def _file(url: str, page: str, validated: bool = True) -> KnownDataset:
    return KnownDataset(url=url, sha256=url, found_on=page, listed_on=[page], contexts=[f"file {url}"],
                        etag=f'"{url}"' if validated else "", last_modified=MODIFIED if validated else "")


def _plan(tmp_path, pages: dict[str, KnownPage], datasets: dict[str, KnownDataset]) -> tuple[Crawler, RevisitPlan]:
    pages = {SITE: _page(SITE, "", [], []), **pages}
    memory = SiteMemory(start_url=SITE, run_id="r0", pages=pages, datasets=datasets,
                        seen_urls=np.array([url_key(u) for u in pages], dtype=np.uint64),
                        read_urls=np.array([url_key(u) for u in pages], dtype=np.uint64))
    crawler = Crawler(CrawlConfig(SITE, delay=0.0, max_requests=1000), LocalSink(tmp_path))
    plan = RevisitPlan.seeded(memory, crawler.links, Changes(crawler.links, memory), Observations(),
                              int(RECRAWL_SHARE * 1000), crawler.policy.add, SITE)
    return crawler, plan


def _catalogue(rows: dict[str, str]) -> tuple[dict[str, KnownPage], dict[str, KnownDataset]]:
    """A catalogue that described its dataset pages (each with two files), as ``rows`` showed them."""
    body = _rows(rows)
    contexts = link_contexts(body, CAT).contexts
    pages = {CAT: _page(CAT, SITE, [SITE], [])}
    datasets = {}
    for url in rows:
        pages[url] = _page(url, CAT, [CAT], sorted(contexts[url]))
        for n in (1, 2):
            datasets[f"{url}/{n}.csv"] = _file(f"{url}/{n}.csv", url)
    return pages, datasets


def test_the_pages_shown_changed_go_before_the_policys_turn(tmp_path):
    rows = {SITE + f"d/{i}": OLD for i in range(8)}
    crawler, plan = _plan(tmp_path, *_catalogue(rows))
    body = _rows({url: "2026-03-01" for url in rows})  # every row dated after the last run
    plan.page_read(CAT, link_contexts(body, CAT))
    handed = [plan.next(policy_has_links=True) for _ in range(8)]
    # before: the seventh turn was the policy's, a guess, while six pages shown changed waited for it
    assert None not in handed
    assert [crawler.links.urls[i] for i in handed] == list(rows)


def test_a_page_with_one_related_page_is_no_listing_its_one_file_is_asked(tmp_path):
    pub, related = SITE + "p/1", SITE + "d/9"
    listing = _rows({pub: OLD})
    pages = {PUBS: _page(PUBS, SITE, [SITE], []),
             pub: _page(pub, PUBS, [PUBS], sorted(link_contexts(listing, PUBS).contexts[pub])),
             related: _page(related, pub, [pub], ["related"])}
    datasets = {pub + ".pdf": _file(pub + ".pdf", pub), related + "/1.csv": _file(related + "/1.csv", related)}
    crawler, plan = _plan(tmp_path, pages, datasets)
    checks = plan.page_read(PUBS, link_contexts(_rows({pub: "2026-03-01"}), PUBS))
    # its row moved on: the one file's conditional GET says what changed (before: the page, then the file)
    assert [crawler.links.urls[i] for i in checks] == [pub + ".pdf"]


def test_a_file_without_validators_is_not_downloaded_in_place_of_its_page(tmp_path):
    pub = SITE + "p/1"
    crawler, plan = _plan(tmp_path, {pub: _page(pub, SITE, [SITE], ["row"])},
                          {pub + ".pdf": _file(pub + ".pdf", pub, validated=False)})
    handed = crawler.links.urls[plan.next(policy_has_links=False)]
    # the page answers a conditional GET (a 304 vouches for its file); the file would be downloaded whole
    assert handed == pub


def test_a_listings_head_is_revisited_before_its_later_pages(tmp_path):
    later = PUBS + "?page=2"
    pages = {PUBS: _page(PUBS, SITE, [SITE], []), later: _page(later, PUBS, [PUBS], [])}
    datasets = {}
    for n, listing in ((1, PUBS), (2, PUBS), (3, PUBS), *((n, later) for n in range(4, 10))):
        url = SITE + f"p/{n}"
        pages[url] = _page(url, listing, [listing], [f"row {n}"])
        datasets[url + ".pdf"] = _file(url + ".pdf", url)
    crawler, plan = _plan(tmp_path, pages, datasets)
    # the second page settles more (six rows against three), but new items are published at the head and
    # push the rows on to it: the head first, and its new rows (if any) send the second page next
    assert crawler.links.urls[plan.next(policy_has_links=False)] == PUBS
