"""Requests a warm run of a changed site does not spend twice: a page the plan and the policy both hold (the
plan files a new row of a listing that another page had already led the policy to) is read once. Against the
simulator over HTTP, counted on the server's own log."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from urllib.parse import urljoin

from airflow_sbcrawl.crawler import CrawlConfig, Crawler, LocalSink, LocalStateStore
from sbcrawl_dev.sim import build_site, get_profile

# A small site with a sitemap, where more happens between two epochs than on real sites: new datasets in the
# catalogues' heads and in the news, files updated, moved (the old URL answers 301) and removed.
CHANGING = get_profile("tiny").with_(name="tiny-warm-requests", datasets_per_section=(10, 14), new_dataset_share=0.2,
                                     update_share=0.25, remove_share=0.05, move_share=0.15, sitemap_share=0.6)


def links_on(site, page: str) -> set[str]:
    body = b"".join(site.response("GET", page, count=False).body)
    return {urljoin(page, href.decode()) for href in re.findall(rb'href="([^"]+)"', body)}


def crawl(site, out: Path):
    config = CrawlConfig(site.start_url, delay=0.0, concurrency=1, seed=3, early_stopping=False,
                         checkpoint_every_pages=10**6, max_requests=800)
    return Crawler(config, LocalSink(out), LocalStateStore(out / "state"), memory=LocalStateStore(out / "memory"),
                   tmp_dir=str(out)).run()


def cold_then_warm(sim_server, sim_proxy_env, profile, seed: int, out: Path):
    """Crawl the profile's first epoch, then its second warm from the first's memory: the two servers, the
    second epoch's site and the warm run's summary, checked to have found every new and changed file."""
    before, after = build_site(profile, seed, epoch=0), build_site(profile, seed, epoch=1)
    first = sim_server(before)
    sim_proxy_env(first)
    crawl(before, out)
    second = sim_server(after)
    sim_proxy_env(second)
    summary = crawl(after, out)
    assert summary.warm_from
    truth = after.changes(0)
    assert summary.changes["new"] == sum(s == "new" for s in truth.values())
    assert summary.changes["changed"] == sum(s == "changed" for s in truth.values())
    return first, second, after, summary


def test_a_warm_run_reads_no_page_twice(sim_server, sim_proxy_env, tmp_path):
    twice: Counter[str] = Counter()
    for seed in (0, 1):
        _, second, after, _ = cold_then_warm(sim_server, sim_proxy_env, CHANGING, seed, tmp_path / str(seed))
        log = [e for e in second.log if e.method == "GET"]
        pages = Counter(e.url for e in log if e.status == 200 and after.kind(e.url) == "html")
        twice.update({url: n for url, n in pages.items() if n > 1})
        # nothing lost: every file that moved asked at its new place (new and changed: cold_then_warm)
        assert {u for u, s in after.changes(0).items() if s == "moved"} <= {e.url for e in log}
    assert not twice


def test_a_warm_run_asks_a_broken_link_it_asked_before_after_what_changed(sim_server, sim_proxy_env, tmp_path):
    """A dataset page that changed still shows its "previous version" link, which answered 404 in the last
    run: the warm run asks it (if at all) after the new and changed files, not with the page's work."""
    profile = CHANGING.with_(name="tiny-warm-broken", broken_link_share=0.6)
    early = shown = 0
    for seed in (0, 1):
        first, second, after, _ = cold_then_warm(sim_server, sim_proxy_env, profile, seed, tmp_path / str(seed))
        broken = {e.url for e in first.log if e.method == "GET" and e.status == 404}
        truth = after.changes(0)
        log = [e for e in second.log if e.method == "GET"]
        wanted = {u for u, s in truth.items() if s in ("new", "changed")}
        last = max(i for i, e in enumerate(log) if e.status == 200 and e.url in wanted)
        early += sum(e.url in broken for e in log[:last])
        # not vacuous: pages read this run showed links the last run had found broken
        pages = {e.url for e in log if e.status == 200 and after.kind(e.url) == "html"}
        shown += sum(bool(links_on(after, page) & broken) for page in pages)
    assert shown
    assert early == 0
