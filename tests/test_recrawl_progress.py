"""Scheduled crawls that make progress: a run cut short by its budget leaves its frontier in the site memory
and the next run goes on from there; an unchanged site's next run checks a sample of what nothing vouched
for, not every item. Against the simulator on 127.0.0.1, counting on the server's own log."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from airflow_sbcrawl import cli
from airflow_sbcrawl.crawler import CrawlConfig, Crawler, LocalSink, LocalStateStore
from airflow_sbcrawl.crawler import memory as site_memory
from airflow_sbcrawl.crawler.scheduler import LAST_LOOK
from airflow_sbcrawl.crawler.warm.contexts import link_contexts
from airflow_sbcrawl.crawler.warm.plan import MIN_SAMPLE
from sbcrawl_dev.sim import build_site

FAST = {"delay": 0.0, "early_stopping": False, "checkpoint_every_pages": 25}


def crawler(site, out: Path, max_requests: int, **options) -> Crawler:
    config = CrawlConfig(site.start_url, **{**FAST, "max_requests": max_requests, **options})
    return Crawler(config, LocalSink(out), LocalStateStore(out / "state"), memory=LocalStateStore(out / "memory"),
                   tmp_dir=str(out))


def found(site, out: Path) -> set[str]:
    rows = [json.loads(line) for line in (out / "manifest.jsonl").read_text().splitlines()]
    return {r["url"] for r in rows} & set(site.targets)


def test_memory_frontier_round_trips_and_an_old_memory_still_loads(tmp_path):
    store = LocalStateStore(tmp_path)
    waiting = [site_memory.FrontierLink("http://www.stats.example/news?page=7", parent="http://www.stats.example/news",
                                        depth=2, tag_path="html/body/nav/a", label=0),
               site_memory.FrontierLink("http://www.stats.example/x", depth=1)]
    memory = site_memory.SiteMemory(start_url="http://www.stats.example/", run_id="r1", frontier=waiting,
                                    history=[[40, 2], [35, 0]], drought=7)
    site_memory.save(store, memory)
    loaded = site_memory.load(store, memory.start_url)
    assert loaded.frontier == waiting and loaded.history == [[40, 2], [35, 0]] and loaded.drought == 7
    # A memory written before the frontier was kept: no such file, not in its manifest.
    generation = tmp_path / "ckpt-00000001"
    (generation / "frontier.jsonl.gz").unlink()
    manifest = json.loads((generation / "MANIFEST.json").read_text())
    del manifest["frontier.jsonl.gz"]
    (generation / "MANIFEST.json").write_text(json.dumps(manifest))
    old = site_memory.load(store, memory.start_url)
    assert old is not None and old.run_id == "r1" and old.frontier == []
    # but a frontier file its manifest lists must match its checksum: a torn one is not taken for empty
    site_memory.save(store, memory)
    (tmp_path / "ckpt-00000002" / "frontier.jsonl.gz").write_bytes(b"torn")
    assert site_memory.load(store, memory.start_url).frontier == []  # generation 1, the intact one


def test_successive_budgeted_runs_go_on_where_the_last_stopped(sim_server, sim_proxy_env, tmp_path):
    server = sim_server(build_site("tiny"))
    sim_proxy_env(server)
    site, out = server.site, tmp_path / "runs"
    first = crawler(site, out, 50).run()
    assert first.stop_reason == "request budget spent" and first.frontier > 0
    memory = site_memory.load(LocalStateStore(out / "memory"), site.start_url)
    assert len(memory.frontier) == first.frontier
    assert not {link.url for link in memory.frontier} & set(memory.datasets)
    after = [found(site, out)]
    requested_first = {e.url for e in server.log if e.method == "GET"}
    server.reset_log()
    second = crawler(site, out, 50).run()
    after.append(found(site, out))
    # the second run explored links the first met and never fetched
    frontier_urls = {link.url for link in memory.frontier}
    assert {e.url for e in server.log} & frontier_urls
    assert second.changes["new"] > 0 and len(after[1]) > len(after[0])
    # and downloaded no file of the first run again that a conditional GET could ask (a 304 each)
    validated = {u for u in requested_first & set(site.targets)
                 if {"ETag", "Last-Modified"} & set(site.response("HEAD", u, count=False).headers)}
    assert not {e.url for e in server.log if e.status == 200} & validated
    for _ in range(2):
        crawler(site, out, 50).run()
        after.append(found(site, out))
    assert len(after[3]) > len(after[1])


def test_an_unchanged_sites_next_run_checks_a_sample(sim_server, sim_proxy_env, tmp_path):
    server = sim_server(build_site("tiny"))
    sim_proxy_env(server)
    site = server.site
    # as scheduled crawls run: early stopping on (the site's calendar and facets never end)
    first = crawler(site, tmp_path, 3 * site.url_count, early_stopping=True, concurrency=1).run()
    server.reset_log()
    second = crawler(site, tmp_path, 3 * site.url_count, early_stopping=True).run()
    assert second.warm_from == first.run_id
    assert second.changes["new"] == second.changes["changed"] == second.changes["gone"] == 0
    checks = second.checks
    assert checks["verified"] + checks["vouched"] + checks["estimated"] == first.changes["new"]
    asked = [e for e in server.log if e.url in site.targets]
    assert checks["vouched"] > 0 and checks["verified"] == len(asked)
    # no file a conditional GET could ask downloaded again (the feed has no validator), and a sample of the
    # known files asked, not each
    assert not [e.url for e in asked if e.status == 200
                and {"ETag", "Last-Modified"} & set(site.response("HEAD", e.url, count=False).headers)]
    assert len(asked) <= MIN_SAMPLE < first.changes["new"]
    assert checks["change_rate"] < 0.05  # what this run compared changed nothing
    memory = site_memory.load(LocalStateStore(tmp_path / "memory"), site.start_url)
    assert memory.history and memory.history[-1][0] > 0 and memory.history[-1][1] == 0


def test_cli_says_how_much_of_the_frontier_is_left(tiny_server, sim_proxy_env, tmp_path, capsys):
    sim_proxy_env(tiny_server)
    base = ["crawl", tiny_server.site.start_url, "--out", str(tmp_path), "--delay", "0", "--quiet",
            "--max-requests", "40"]
    assert cli.main(base) == 0
    out = capsys.readouterr().out
    assert "request budget spent" in out and "(kept: the next run goes on from there)" in out
    report = next(tmp_path.glob("**/*report*.md")).read_text()
    assert "the next run of the site goes on exploring from there" in report


# Seed 3: the last run's frontier promised just under es_expected, the same links a little over it when
# judged again, and the next run toured them (before the stop's promise and last look were handed on).
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_an_unchanged_sites_next_run_goes_on_from_the_drought_the_last_one_ended_in(
        sim_server, sim_proxy_env, tmp_path, seed):
    server = sim_server(build_site("tiny"))
    sim_proxy_env(server)
    site = server.site
    # A scheduled crawl's settings: early stopping on, a budget the site fits in; the run ends in its
    # calendar and facets, long after its last dataset, and leaves them as its frontier.
    first = crawler(site, tmp_path, 3 * site.url_count, early_stopping=True, concurrency=1, seed=seed).run()
    memory = site_memory.load(LocalStateStore(tmp_path / "memory"), site.start_url)
    assert memory.frontier and memory.drought >= 50  # at least the drought rule's smallest window
    server.reset_log()
    # One request at a time, both runs: with 8 in flight, where the first run's drought ended, and how many
    # requests the second sent before the first answer judged it, moved with the machine's load
    second = crawler(site, tmp_path, 3 * site.url_count, early_stopping=True, concurrency=1, seed=seed).run()
    assert second.warm_from == first.run_id and second.changes["new"] == 0
    assert "at the end of the last run" in second.stop_reason
    # Nothing new: the revisits and checks, the start page and robots.txt files, not a tour of the old
    # frontier (before, ten windows of the drought rule: hundreds of requests on this site).
    frontier = {link.url for link in memory.frontier}
    toured = [e.url for e in server.log if e.url in frontier]
    # at most the one request in flight as the frontier was released, before its answer judged the drought
    assert len(toured) <= 1, toured
    # robots.txt, sitemap and feed requests, and the drought's one last look at the best links waiting
    assert second.requests <= second.checks["requests"] + 10 + LAST_LOOK
    # and it hands the drought on, grown by what it read
    assert site_memory.load(LocalStateStore(tmp_path / "memory"), site.start_url).drought >= memory.drought



def test_what_a_run_did_not_ask_keeps_its_validators_and_every_link_shown_counts_as_met(
        sim_server, sim_proxy_env, tmp_path):
    """A budgeted warm run estimates most known pages unchanged without asking them: their validators must
    outlive it (dropped, the next run reads each page whole). And the links a page showed are met, those the
    crawl does not follow included (another host, refused by robots.txt): else every later reading of a
    listing takes them for new rows, a change, and the checks "to be sure" widen on a site that never
    changes (a quarter of the budget of later runs on ``small``)."""
    server = sim_server(build_site("tiny"))
    sim_proxy_env(server)
    site, out = server.site, tmp_path / "runs"
    crawler(site, out, 80).run()
    store = LocalStateStore(out / "memory")
    before = site_memory.load(store, site.start_url)
    validated = {url for url, page in before.pages.items() if page.etag or page.last_modified}
    assert len(validated) > 5
    pages_read = [e.url for e in server.log if e.method == "GET" and e.status == 200
                  and site.response("HEAD", e.url, count=False).headers.get("Content-Type", "").startswith("text/html")]
    shown = {link for url in pages_read for link in link_contexts(site.body(url), url).contexts}
    off_site = {link for link in shown if urlsplit(link).hostname not in {urlsplit(site.start_url).hostname}}
    assert off_site  # the site's pages link other hosts (social media, partners)
    assert set(map(site_memory.url_key, shown)) <= set(before.seen_urls.tolist())
    server.reset_log()
    crawler(site, out, 3).run()  # asks almost nothing
    after = site_memory.load(store, site.start_url)
    asked = {e.url for e in server.log}
    kept = {url for url in validated - asked if after.pages.get(url) and (after.pages[url].etag
                                                                            or after.pages[url].last_modified)}
    assert kept == {url for url in validated - asked if url in after.pages}


def test_budgeted_runs_of_an_unchanged_site_see_no_change(sim_server, sim_proxy_env, tmp_path):
    """What a run neither read nor asked keeps what the memory knew of it: its validators (else the next run
    reads the page whole), and the rows it showed count as met, those leading off the site included (else
    every reading of the page takes them for new rows, a change, and the checks "to be sure" widen)."""
    server = sim_server(build_site("tiny"))
    sim_proxy_env(server)
    site, out = server.site, tmp_path / "runs"
    crawler(site, out, 60).run()
    store = LocalStateStore(out / "memory")
    for _ in range(3):
        before = site_memory.load(store, site.start_url)
        crawler(site, out, 60).run()
        after = site_memory.load(store, site.start_url)
        assert after.history[-1][1] == 0, after.history  # nothing changed, nothing was taken for a change
        lost = [url for url, page in before.pages.items()
                if (page.etag or page.last_modified) and url in after.pages
                and not (after.pages[url].etag or after.pages[url].last_modified)]
        assert not lost
