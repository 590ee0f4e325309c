"""What a warm crawl revisits first, and what the pages it reads tell it: link contexts (the list item
around a link, whether it describes the link, the dates it shows), the greedy cover of known datasets by
the pages that described them, and the memory of URLs already met. Narrow units of the warm crawl's plan
on a real Crawler's link table and policy, no network; the whole warm crawl against the simulator is in
test_recrawl.py."""

from __future__ import annotations

import json

import numpy as np

from airflow_sbcrawl.crawler import CrawlConfig, Crawler, LocalSink, LocalStateStore
from airflow_sbcrawl.crawler import memory as site_memory
from airflow_sbcrawl.crawler.memory import KnownDataset, KnownPage, SiteMemory, url_key
from airflow_sbcrawl.crawler.policies import NewLink
from airflow_sbcrawl.crawler.warm import (
    RECRAWL_SHARE,
    Changes,
    MemoryIndex,
    Observations,
    RevisitPlan,
    Tier,
    link_contexts,
    newest_date,
)

SITE = "http://stats.test/"
CATALOGUE = SITE + "catalogue"
FILTER = SITE + "filter?format=csv"


def _dataset_page(files: dict[str, str], related: list[str]) -> bytes:
    rows = "".join(f'<li><a href="{url}">{url.rsplit("/", 1)[-1]}</a><span>Last modified {when}</span></li>'
                   for url, when in files.items())
    sidebar = "".join(f'<li><a href="{url}">{url.rsplit("/", 1)[-1]}</a></li>' for url in related)
    return (f'<html><body><main><article class="dataset"><h1>Dataset</h1><ul class="files">{rows}</ul>'
            f'</article></main><aside><ul>{sidebar}</ul></aside></body></html>').encode()


def test_a_links_context_is_its_list_item_not_the_pages_one_article():
    files = {SITE + "f/a.csv": "2025-01-02", SITE + "f/b.csv": "2025-03-04"}
    before = link_contexts(_dataset_page(files, [SITE + "d/2"]), SITE + "d/1")
    after = link_contexts(_dataset_page({**files, SITE + "f/b.csv": "2026-02-01"}, [SITE + "d/2"]), SITE + "d/1")
    # one file updated: only its row reads differently, not every file of the article
    assert before.contexts[SITE + "f/a.csv"] == after.contexts[SITE + "f/a.csv"]
    assert before.contexts[SITE + "f/b.csv"] != after.contexts[SITE + "f/b.csv"]
    # a row with a date describes its file; a sidebar of bare titles describes nothing
    assert {SITE + "f/a.csv", SITE + "f/b.csv"} <= after.described and SITE + "d/2" not in after.described
    assert after.dates[SITE + "f/b.csv"] == "2026-02-01" and SITE + "d/2" not in after.dates


def test_newest_date_reads_iso_and_written_dates():
    assert newest_date("2 files · last modified 2024-05-02, first 2019-01-31") == "2024-05-02"
    assert newest_date("Updated 12 May 2025 (was March 3, 2026)") == "2026-03-03"
    assert newest_date("Release 2025 of table 12") == ""


def _memory() -> SiteMemory:
    """A catalogue page describing two dataset pages (two files each), and a facet page that was the first
    to link a third dataset page without describing it."""
    def page(url: str, parent: str, listed_on: list[str], contexts: list[str], depth: int) -> KnownPage:
        return KnownPage(url=url, parent=parent, depth=depth, tag_path="html body a", score=1, etag='"e"',
                         listed_on=listed_on, contexts=contexts)

    pages = {
        CATALOGUE: page(CATALOGUE, SITE, [SITE], ["home-row"], 1),
        FILTER: page(FILTER, SITE, [], ["facet"], 1),
        **{SITE + f"d/{i}": page(SITE + f"d/{i}", CATALOGUE, [CATALOGUE], [f"row-{i}"], 2) for i in (1, 2)},
        SITE + "d/3": page(SITE + "d/3", FILTER, [], ["bare"], 2),
    }
    datasets = {}
    for i in (1, 2, 3):
        for name in ("a", "b"):
            url = SITE + f"f/{i}{name}.csv"
            datasets[url] = KnownDataset(url=url, sha256=f"{i}{name}", etag=f'"{i}{name}"',
                                         last_modified="Thu, 02 Jan 2025 08:00:00 GMT", found_on=SITE + f"d/{i}",
                                         listed_on=[SITE + f"d/{i}"], contexts=[f"file-{i}{name}"])
    return SiteMemory(start_url=SITE, run_id="r0", datasets=datasets, pages=pages,
                      seen_urls=np.array([url_key(SITE + "old-news")], dtype=np.uint64),
                      read_urls=np.array([url_key(SITE + "old-news")], dtype=np.uint64))


def _plan(crawler: Crawler, memory: SiteMemory) -> RevisitPlan:
    """The plan of a warm start of ``crawler`` from ``memory`` (a budget of 100 requests)."""
    return RevisitPlan.seeded(memory, crawler.links, Changes(crawler.links, memory), Observations(),
                              int(RECRAWL_SHARE * 100), crawler.policy.add, SITE)


def _warm(tmp_path) -> tuple[Crawler, RevisitPlan]:
    crawler = Crawler(CrawlConfig(SITE, delay=0.0, max_requests=100), LocalSink(tmp_path))
    return crawler, _plan(crawler, _memory())


def _url(plan: RevisitPlan, link_id: int) -> str:
    return plan.links.urls[link_id]


def _read(plan: RevisitPlan, url: str, body: bytes) -> list[int]:
    """A page read as the crawl reads it: its links' contexts kept, then the plan told."""
    page = link_contexts(body, url)
    plan.observations.page_links(url, page)
    return plan.page_read(url, page)


def _urgent(plan: RevisitPlan) -> list[str]:
    return [_url(plan, i) for i in plan.filed(Tier.URGENT)]


def _revisits(plan: RevisitPlan) -> list[str]:
    out = []
    while (link_id := plan.next(policy_has_links=False)) is not None:
        out.append(_url(plan, link_id))
    return out


def test_the_page_describing_most_unsettled_datasets_is_revisited_first(tmp_path):
    _, plan = _warm(tmp_path)
    order = _revisits(plan)
    # the catalogue vouches for two dataset pages and their four files; the dataset pages come next; the
    # facet page's bare link to d/3 counts for nothing (only d/3 itself tells of its files): it is revisited
    # last, after the checks of files nothing vouched for
    assert order[0] == CATALOGUE
    assert set(order[1:4]) == {SITE + f"d/{i}" for i in (1, 2, 3)}
    assert order[-1] == FILTER and len(order) == 5 + 6


def test_rows_as_they_were_vouch_for_the_pages_files_and_a_changed_row_sends_its_page_first(tmp_path):
    _, plan = _warm(tmp_path)
    assert plan.next(policy_has_links=False) == plan.links.ids[CATALOGUE]
    d1, d2 = SITE + "d/1", SITE + "d/2"
    unchanged = "<li><a href='/d/1'>One</a> 2 files, last modified 2025-01-02</li>"
    # the memory's context of d/1 is the row as it reads now; d/2's row reads differently (a file changed)
    plan.index.memory.pages[d1].contexts = sorted(
        link_contexts(f"<html><body><ul>{unchanged}</ul></body></html>".encode(), CATALOGUE).contexts[d1])
    body = (f"<html><body><ul>{unchanged}<li><a href='/d/2'>Two</a> 2 files, last modified 2026-02-01 "
            "<a href='/f/2a.csv'>CSV</a><a href='/f/2b.csv'>CSV</a></li></ul></body></html>").encode()
    checks = _read(plan, CATALOGUE, body)
    assert checks == []  # no file of d/2 is checked on its own: its page, revisited first, tells which
    order = _revisits(plan)
    # d/1 and its files were vouched for: revisited and checked only after the files nothing vouched for
    assert order[0] == d2 and order.index(d1) > order.index(SITE + "f/3b.csv")
    assert order.index(SITE + "f/1a.csv") > order.index(SITE + "f/3b.csv")


def _catalogue_of(n: int, history: list[list[int]]) -> SiteMemory:
    """A catalogue of ``n`` pages that described ``n`` dataset pages, a file each; ``history``: the last
    runs' [known items compared, of those changed]."""
    pages, datasets = {}, {}
    for i in range(n):
        listing, page, url = SITE + f"catalogue?page={i}", SITE + f"d/{i}", SITE + f"f/{i}.csv"
        pages[listing] = KnownPage(url=listing, parent=SITE, depth=1, score=1, listed_on=[SITE])
        pages[page] = KnownPage(url=page, parent=listing, depth=2, score=1, listed_on=[listing],
                                contexts=[f"row-{i}"])
        datasets[url] = KnownDataset(url=url, etag=f'"{i}"', found_on=page, listed_on=[page])
    return SiteMemory(start_url=SITE, run_id="r0", datasets=datasets, pages=pages, history=history)


def test_what_the_memory_says_is_unchanged_is_verified_by_a_sample_sized_by_the_change_rate(tmp_path):
    def handed_out(history: list[list[int]]) -> int:
        crawler = Crawler(CrawlConfig(SITE, delay=0.0, max_requests=1000), LocalSink(tmp_path))
        memory = _catalogue_of(100, history)
        plan = RevisitPlan.seeded(memory, crawler.links, Changes(crawler.links, memory), Observations(), 600,
                                  crawler.policy.add, SITE)
        return len(_revisits(plan))

    # the last runs saw 1 change in 5,000 known items: a sample (MIN_SAMPLE at least) of the 300 revisits and
    # checks, not each; a site that changed a tenth of its items is checked item by item
    assert 12 <= handed_out([[5000, 1]]) <= 20
    assert handed_out([[5000, 500]]) == 300
    assert handed_out([]) == 300  # no history: everything


def test_a_file_without_validators_is_settled_by_its_row_not_downloaded_again(tmp_path):
    crawler = Crawler(CrawlConfig(SITE, delay=0.0, max_requests=100), LocalSink(tmp_path))
    memory = _memory()
    bare = memory.datasets[SITE + "f/1a.csv"]
    bare.etag = bare.last_modified = ""
    plan = _plan(crawler, memory)
    assert plan.next(policy_has_links=False) == plan.links.ids[CATALOGUE]
    d1 = SITE + "d/1"
    row = "<li><a href='/d/1'>One</a> 2 files, last modified 2025-01-02</li>"
    plan.index.memory.pages[d1].contexts = sorted(
        link_contexts(f"<html><body><ul>{row}</ul></body></html>".encode(), CATALOGUE).contexts[d1])
    _read(plan, CATALOGUE, f"<html><body><ul>{row}</ul></body></html>".encode())
    order = _revisits(plan)
    # d/1's row reads as before: it vouches for both files; the one with a validator is still asked last (a
    # 304), the one without is not downloaded again
    assert SITE + "f/1b.csv" in order and SITE + "f/1a.csv" not in order
    assert plan.settled()["vouched"] >= 1


def test_a_row_never_described_before_is_judged_by_its_dates(tmp_path):
    _, plan = _warm(tmp_path)
    body = (b"<html><body><ul><li><a href='/d/3'>Three</a> last modified 2026-02-01</li></ul></body></html>")
    _read(plan, SITE + "new-listing", body)  # not telling: a page never seen
    assert SITE + "d/3" not in _urgent(plan)
    _read(plan, CATALOGUE, body)  # newer than the site's clock (2025-01-02)
    assert _urgent(plan) == [SITE + "d/3"]
    _, plan = _warm(tmp_path)
    _read(plan, CATALOGUE, body.replace(b"2026-02-01", b"2024-11-30"))
    assert not _urgent(plan) and SITE + "d/3" not in _revisits(plan)[:2]


def test_links_met_before_wait_for_the_revisits_and_unread_pages_placed_like_productive_ones_go_first(tmp_path):
    crawler, plan = _warm(tmp_path)
    links = crawler.links

    def new(url: str, tag_path: str) -> NewLink:
        return NewLink(links.add(url, 2, links.ids[CATALOGUE], tag_path), url, tag_path, "", 2)

    old, fresh, row = new(SITE + "old-news", "html body p a"), new(SITE + "news/9", "html body p a"), \
        new(SITE + "d/4", "html body a")
    plan.index.paths = {"html body a"}
    assert plan.claim([old, fresh, row]) == [fresh]  # only the link never met goes to the policy now
    assert plan.next(policy_has_links=True) == row.id  # the new row of the catalogue, before anything
    _revisits(plan)  # revisits and checks done: the held-back link joins the policy's frontier
    assert len(crawler.policy) == 1 and crawler.policy.next() == old.id


def test_site_memory_keeps_describers_and_the_urls_met(tmp_path):
    store = LocalStateStore(tmp_path)
    site_memory.save(store, _memory())
    loaded = site_memory.load(store, SITE)
    assert loaded.pages[SITE + "d/1"].listed_on == [CATALOGUE]
    assert loaded.datasets[SITE + "f/1a.csv"].listed_on == [SITE + "d/1"]
    assert loaded.seen_urls.tolist() == [url_key(SITE + "old-news")] == loaded.read_urls.tolist()
    assert "seen.urls" not in loaded.model_arrays


def test_rows_a_catalogue_page_no_longer_shows_credit_its_next_page(tmp_path):
    """Datasets added at the head of a catalogue push its rows onto the next pages: the page they moved to
    is revisited before pages that describe more but were not pushed anything."""
    def page(url: str, listed_on: list[str], depth: int) -> KnownPage:
        return KnownPage(url=url, parent=SITE, depth=depth, score=1, listed_on=listed_on, contexts=[url])

    cat = [CATALOGUE + f"?page={n}" for n in (1, 2, 3)]
    described = {1: [1, 2], 2: [5], 3: [6, 7]}  # catalogue page -> the dataset pages it described
    pages = {url: page(url, [], n) for n, url in enumerate(cat, 1)}  # each found on the one before
    pages.update({SITE + f"d/{d}": page(SITE + f"d/{d}", [cat[n - 1]], 4) for n, ds in described.items()
                  for d in ds})
    memory = SiteMemory(start_url=SITE, pages=pages)
    crawler = Crawler(CrawlConfig(SITE, delay=0.0, max_requests=100), LocalSink(tmp_path))
    plan = _plan(crawler, memory)
    assert _url(plan, plan.next(policy_has_links=False)) == cat[0]
    body = (f"<html><body><ul><li><a href='/d/9'>Nine</a> new, 2026-02-01</li></ul>"
            f"<ul class='pager'><li><a href='{cat[1]}'>Next</a></li></ul></body></html>").encode()
    _read(plan, cat[0], body)
    assert _url(plan, plan.next(policy_has_links=False)) == cat[1]


def test_two_crawls_started_within_a_second_have_distinct_run_ids(tmp_path):
    # a warm run sharing its id with the run whose memory it starts from takes that run's manifest rows for
    # its own and never checks the known files (seen on the tiny site, crawled in under a second)
    config = CrawlConfig(SITE, delay=0.0, max_requests=10)
    first, second = Crawler(config, LocalSink(tmp_path)), Crawler(config, LocalSink(tmp_path))
    assert first.run_id != second.run_id


def test_other_revisits_wait_while_a_listing_page_is_out(tmp_path):
    _, plan = _warm(tmp_path)
    assert plan.next(policy_has_links=False, in_flight=0) == plan.links.ids[CATALOGUE]
    # the catalogue's rows may vouch for the dataset pages: none of them goes while it is out
    assert plan.next(policy_has_links=False, in_flight=1) is None
    _read(plan, CATALOGUE, b"<html><body><p>moved</p></body></html>")
    assert _url(plan, plan.next(policy_has_links=False, in_flight=1)).startswith(SITE + "d/")
    # a listing page that never comes back holds nothing once nothing is out
    _, plan = _warm(tmp_path)
    plan.next(policy_has_links=False, in_flight=0)
    assert plan.next(policy_has_links=False, in_flight=0) is not None


def _chain(tmp_path) -> tuple[Crawler, RevisitPlan, list[str]]:
    """A catalogue of three pages, each found on the one before, describing dataset pages d/1, d/2 (page
    1), d/5 (page 2), d/6, d/7 (page 3), with rows as they read now."""
    cat = [CATALOGUE + f"?page={n}" for n in (1, 2, 3)]
    described = {1: [1, 2], 2: [5], 3: [6, 7]}
    pages = {url: KnownPage(url=url, parent=SITE, depth=n, score=1, contexts=[url]) for n, url in enumerate(cat, 1)}
    for n, ds in described.items():
        for d in ds:
            url = SITE + f"d/{d}"
            row = f"<html><body><ul><li><a href='/d/{d}'>D{d}</a> 2 files, last modified 2025-01-02</li></ul>"
            contexts = sorted(link_contexts(row.encode(), cat[n - 1]).contexts[url])
            pages[url] = KnownPage(url=url, parent=cat[n - 1], depth=4, score=1, listed_on=[cat[n - 1]],
                                   contexts=contexts)
    crawler = Crawler(CrawlConfig(SITE, delay=0.0, max_requests=100), LocalSink(tmp_path))
    plan = _plan(crawler, SiteMemory(start_url=SITE, pages=pages))
    plan.index.paths = {"html body a"}
    assert _url(plan, plan.next(policy_has_links=False)) == cat[0]
    return crawler, plan, cat


def _first_page(new_row: bool, cat: list[str]) -> bytes:
    rows = "<li><a href='/d/9'>D9</a> 1 file, last modified 2026-02-01</li>" if new_row else ""
    rows += "".join(f"<li><a href='/d/{d}'>D{d}</a> 2 files, last modified 2025-01-02</li>" for d in (1, 2))
    # a pager that links the last page before the next one: the next page is the nearest farther one
    return (f"<html><body><ul>{rows}</ul><ul class='pager'><li><a href='{cat[2]}'>Last</a></li>"
            f"<li><a href='{cat[1]}'>Next</a></li></ul></body></html>").encode()


def test_a_new_row_on_a_listing_sends_its_next_page_first(tmp_path):
    crawler, plan, cat = _chain(tmp_path)
    _read(plan, cat[0], _first_page(True, cat))
    links = crawler.links
    row = NewLink(links.add(SITE + "d/9", 2, links.ids[cat[0]], "html body a"), SITE + "d/9", "html body a", "", 2)
    assert plan.claim([row]) == []
    # the new dataset page, then the catalogue's next page (new items push rows on), before page 3, which
    # settles more (two rows to one)
    assert [_url(plan, plan.next(policy_has_links=False)) for _ in range(2)] == [SITE + "d/9", cat[1]]


def test_without_new_rows_a_listing_is_revisited_by_what_its_pages_settle(tmp_path):
    _, plan, cat = _chain(tmp_path)
    _read(plan, cat[0], _first_page(False, cat))
    assert plan.claim([]) == [] and not _urgent(plan)
    assert _url(plan, plan.next(policy_has_links=False)) == cat[2]


def test_a_row_changed_without_a_newer_date_waits_for_the_revisits(tmp_path):
    def first_revisit(date: str) -> str:
        _, plan = _warm(tmp_path)
        plan.next(policy_has_links=False)
        # d/2's row reads differently (a file updated, or removed)
        body = f"<html><body><ul><li><a href='/d/2'>Two</a> 1 file, last modified {date}</li></ul></body></html>"
        _read(plan, CATALOGUE, body.encode())
        return _url(plan, plan.next(policy_has_links=False))

    assert first_revisit("2026-02-01") == SITE + "d/2"  # past the site's clock (2025-01-02): updated
    assert first_revisit("2024-12-01") == SITE + "d/1"  # not: no sooner than the greedy order has it


def test_a_changed_row_of_a_page_with_one_known_file_checks_that_file_first(tmp_path):
    crawler = Crawler(CrawlConfig(SITE, delay=0.0, max_requests=100), LocalSink(tmp_path))
    memory = _memory()
    del memory.datasets[SITE + "f/2b.csv"]  # d/2 had one file
    plan = _plan(crawler, memory)
    plan.next(policy_has_links=False)
    body = b"<html><body><ul><li><a href='/d/2'>Two</a> 1 file, last modified 2026-02-01</li></ul></body></html>"
    checks = _read(plan, CATALOGUE, body)
    # the file's conditional GET tells what changed; the page (a file added?) is revisited after the others
    assert [_url(plan, i) for i in checks] == [SITE + "f/2a.csv"]
    order = _revisits(plan)
    assert order[0] != SITE + "d/2" and order.index(SITE + "d/2") > order.index(SITE + "d/3")


def test_a_known_feed_is_checked_first(tmp_path):
    crawler = Crawler(CrawlConfig(SITE, delay=0.0, max_requests=100), LocalSink(tmp_path))
    memory = _memory()
    feed = SITE + "news/rss.xml"
    memory.datasets[feed] = KnownDataset(url=feed, sha256="feed", mime="application/rss+xml; charset=utf-8",
                                         found_on=SITE)
    plan = _plan(crawler, memory)
    assert _url(plan, plan.next(policy_has_links=False)) == feed
    assert _url(plan, plan.next(policy_has_links=False)) == CATALOGUE


def test_a_new_row_met_first_elsewhere_is_claimed_when_a_listing_shows_it(tmp_path):
    crawler, plan, cat = _chain(tmp_path)
    links = crawler.links
    # the new dataset page was linked bare from the home page first (a "featured" block): the policy's
    link = NewLink(links.add(SITE + "d/9", 1, -1, "html body nav a"), SITE + "d/9", "html body nav a",
                   "", 1)
    assert plan.claim([link]) == [link]
    _read(plan, cat[0], _first_page(True, cat))
    # a row of the catalogue never met before: visited now, and the catalogue's next page after it
    assert [_url(plan, plan.next(policy_has_links=True)) for _ in range(2)] == [SITE + "d/9", cat[1]]


def _resumed(crawler: Crawler, plan: RevisitPlan, release=None) -> RevisitPlan:
    """The plan as a resumed crawl takes it back: its state through JSON (a checkpoint), into a plan made
    afresh from the memory and the crawl's link table."""
    twin = RevisitPlan(MemoryIndex(plan.index.memory, crawler.links, plan.changes.known), plan.changes,
                       plan.observations, plan.allowance, release or crawler.policy.add)
    twin.restore(json.loads(json.dumps(plan.state())), {})
    return twin


def test_a_resumed_warm_crawl_keeps_which_listing_page_follows_which(tmp_path):
    # a checkpoint between the reading of a listing page and the claim of its links: the new row and the
    # listing's next page are still known after the resume (they were lost before issue 22)
    crawler, plan, cat = _chain(tmp_path)
    plan.index.paths = set()  # the new row is claimed for being one, not for where its link sits
    _read(plan, cat[0], _first_page(True, cat))
    plan = _resumed(crawler, plan)
    links = crawler.links
    row = NewLink(links.add(SITE + "d/9", 2, links.ids[cat[0]], "html body a"), SITE + "d/9", "html body a", "", 2)
    assert plan.claim([row]) == []
    assert [_url(plan, plan.next(policy_has_links=False)) for _ in range(2)] == [SITE + "d/9", cat[1]]


def test_a_plan_taken_back_from_its_state_hands_out_what_the_saved_one_would(tmp_path):
    body = (b"<html><body><ul><li><a href='/d/2'>Two</a> 1 file, last modified 2026-02-01</li>"
            b"<li><a href='/d/1'>One</a> 2 files, last modified 2025-01-02</li></ul></body></html>")
    for steps in (0, 1, 2, 4, 7):  # a checkpoint after so many revisits and checks (the catalogue's first)
        crawler, plan = _warm(tmp_path / str(steps))
        handed = [plan.next(policy_has_links=False) for _ in range(steps)]
        if steps:
            _read(plan, CATALOGUE, body)  # a row that changed, one as it was: a checked file, a page moved on
        twin = _resumed(crawler, plan, release=lambda links: None)
        assert _revisits(twin) == _revisits(plan), handed


def test_rows_a_page_passed_on_are_credited_once_when_a_resume_reads_it_again(tmp_path):
    # a page whose work a resume cut short is read again: the rows it no longer shows (d/2, pushed on to
    # the next page) credit that page once, as in a crawl read in one go
    crawler, plan, cat = _chain(tmp_path)
    body = (f"<html><body><ul><li><a href='/d/1'>D1</a> 2 files, last modified 2025-01-02</li></ul>"
            f"<ul class='pager'><li><a href='{cat[1]}'>Next</a></li></ul></body></html>").encode()
    _read(plan, cat[0], body)
    listing = plan.index.listing[plan.links.ids[cat[1]]]
    assert [_url(plan, i) for i in listing] == [SITE + "d/5", SITE + "d/2"]
    plan = _resumed(crawler, plan)
    _read(plan, cat[0], body)
    assert plan.index.listing[plan.links.ids[cat[1]]] == listing


def test_a_file_that_looks_moved_is_checked_after_the_revisits(tmp_path):
    crawler, plan = _warm(tmp_path)
    links = crawler.links
    assert _url(plan, plan.next(policy_has_links=False)) == CATALOGUE
    # d/1 now shows its file 1a under another URL (the site moved it), 1b where it was
    moved, copy, new = SITE + "moved/1/1a.csv", SITE + "mirror/1b.csv", SITE + "f/1c.csv"
    _read(plan, SITE + "d/1", _dataset_page({moved: "2025-01-02", SITE + "f/1b.csv": "2025-01-02"}, []))

    def link(url: str) -> NewLink:
        return NewLink(links.add(url, 3, links.ids[SITE + "d/1"], "html body a"), url, "html body a", "", 3)

    assert plan.moved_file(link(moved))
    # a file of a name no known file has, or whose known namesake is still shown where it was: new, fetched now
    assert not plan.moved_file(link(new)) and not plan.moved_file(link(copy))
    order = _revisits(plan)
    # the move's conditional GET (a 304 most likely) waits until the pages that may show what changed are read
    assert order.count(moved) == 1
    assert order.index(moved) > max(order.index(SITE + f"d/{i}") for i in (2, 3))


def _sure_checks(plan: RevisitPlan) -> list[str]:
    """The files of d/1 and d/2 in the order the plan checks them from here on (every page as it was
    meanwhile; d/3's, which nothing vouched for, are checked before them)."""
    return [url for url in _revisits(plan) if url.startswith((SITE + "f/1", SITE + "f/2"))]


def test_files_only_a_sitemaps_lastmod_vouched_for_are_checked_first_of_those_checked_to_be_sure(tmp_path):
    # d/2 settled by its sitemap's <lastmod> (a plugin's claim, stale a fifth of the time on deep-sitemap),
    # d/1 by its own 304 (the server's word): of their files, checked "to be sure", d/2's go first
    _, plan = _warm(tmp_path)
    assert plan.page_vouched(SITE + "d/2")
    plan.page_unchanged(SITE + "d/1")
    assert _sure_checks(plan) == [SITE + "f/2a.csv", SITE + "f/2b.csv", SITE + "f/1a.csv", SITE + "f/1b.csv"]
    # a page read as it was takes the claim's place: the server vouched for it since
    _, plan = _warm(tmp_path / "read")
    assert plan.page_vouched(SITE + "d/2")
    plan.page_unchanged(SITE + "d/2")
    plan.page_unchanged(SITE + "d/1")
    assert _sure_checks(plan)[:2] == [SITE + "f/1a.csv", SITE + "f/1b.csv"]


def test_a_resumed_warm_crawl_keeps_which_pages_only_a_lastmod_vouched_for(tmp_path):
    crawler, plan = _warm(tmp_path)
    assert plan.page_vouched(SITE + "d/2")
    plan.page_unchanged(SITE + "d/1")
    twin = _resumed(crawler, plan, release=lambda links: None)
    assert _sure_checks(twin)[:2] == [SITE + "f/2a.csv", SITE + "f/2b.csv"]
