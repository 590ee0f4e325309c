"""The engine end to end against simulated sites over real HTTP; counts come from the server's own log."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from airflow_sbcrawl.crawler import CrawlConfig, Crawler, LocalSink, LocalStateStore, StateExists
from airflow_sbcrawl.crawler.mimes import BLOCKED_EXTENSIONS
from airflow_sbcrawl.crawler.urls import extension

# Early stopping scaled down to the test sites' size (the paper's v=1000, kappa=15 suit 10^4+ pages).
FAST = {"delay": 0.0, "es_window": 50, "es_patience": 4, "checkpoint_every_pages": 25}


def crawl(site, out: Path, **options) -> tuple[Crawler, object]:
    config = CrawlConfig(site.start_url, **{**FAST, **options})
    crawler = Crawler(config, LocalSink(out), LocalStateStore(out / "state"))
    return crawler, crawler.run()


def manifest(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "manifest.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("policy", ["sb-classifier", "bfs"])
def test_crawl_retrieves_every_target_of_a_small_site(policy, sim_server, sim_proxy_env, tmp_path):
    srv = sim_server("tiny")
    sim_proxy_env(srv)
    site = srv.site
    # one request at a time: with 8 in flight the arrival order moves the early stop, which about once in
    # thirty loaded runs came one target short (ea55915 and later alike)
    _, summary = crawl(site, tmp_path, policy=policy, max_requests=2000, concurrency=1)
    rows = manifest(tmp_path)
    assert {r["url"] for r in rows} >= set(site.targets) - {u for u in site.targets if site.disallowed(u)}
    assert len({r["url"] for r in rows}) == len(rows)  # each target listed once
    for row in rows:  # stored once, content-addressed, byte for byte what the server sent
        data = (tmp_path / "objects" / row["sha256"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == row["sha256"] and len(data) == row["size"]
        assert data == site.body(row["final_url"])
    log = srv.log
    assert len(log) == summary.requests <= 2000  # the budget holds, counted by the server
    assert summary.stop_reason.startswith(("early stopping", "frontier exhausted"))


def test_politeness_scope_and_blocklists(sim_server, sim_proxy_env, tmp_path):
    srv = sim_server("small")
    sim_proxy_env(srv)
    site = srv.site
    _, summary = crawl(site, tmp_path, max_requests=400)
    log = srv.log
    assert len(log) == 400 == summary.requests
    assert all(site.in_scope(e.url) for e in log), "a request left the site's scope"
    assert not [e.url for e in log if site.disallowed(e.url)], "robots.txt was not respected"
    assert not [e.url for e in log if extension(e.url) in BLOCKED_EXTENSIONS], "a blocked extension was fetched"
    # Media served without an extension are cut off at the headers: only a first chunk at most goes out.
    media = [e for e in log if site.kind(e.url) == "media"]
    assert all(e.bytes_sent < 512 * 1024 for e in media)
    assert any(e.url.endswith("/robots.txt") for e in log)


def test_request_budget_is_exact_and_resume_raises_it(sim_server, sim_proxy_env, tmp_path):
    srv = sim_server("tiny")
    sim_proxy_env(srv)
    site = srv.site
    _, first = crawl(site, tmp_path, max_requests=60)
    assert first.stop_reason == "request budget spent" and len(srv.log) == 60
    config = CrawlConfig(site.start_url, **{**FAST, "max_requests": 2000})
    with pytest.raises(StateExists):
        Crawler(config, LocalSink(tmp_path), LocalStateStore(tmp_path / "state")).run()
    second = Crawler(config, LocalSink(tmp_path), LocalStateStore(tmp_path / "state")).run(resume=True)
    assert second.resumed_from is not None
    rows = manifest(tmp_path)
    assert len({r["url"] for r in rows}) == len(rows)
    assert {r["url"] for r in rows} >= set(site.targets) - {u for u in site.targets if site.disallowed(u)}
    assert len(srv.log) == second.requests <= 2000


def test_byte_budget_is_never_overshot(sim_server, sim_proxy_env, tmp_path):
    srv = sim_server("tiny")
    sim_proxy_env(srv)
    _, summary = crawl(srv.site, tmp_path, max_bytes=200_000, max_requests=5000)
    assert summary.stop_reason == "byte budget spent"
    assert summary.bytes <= 200_000


def test_hostile_site_is_survived(sim_server, sim_proxy_env, tmp_path):
    srv = sim_server("hostile")
    sim_proxy_env(srv)
    site = srv.site
    started = time.monotonic()
    crawler, summary = crawl(site, tmp_path, max_requests=1500, response_timeout=4.0, max_page_bytes=5 * 1024**2,
                             backoff=0.2, max_retry_after=5.0)
    elapsed = time.monotonic() - started
    assert elapsed < 120
    log = srv.log
    urls = [e.url for e in log]
    # The redirect loop is cut (each URL of it fetched once), the honeypot never entered.
    for loop in ("http://www.stats.example/archive/loop-a", "http://www.stats.example/archive/self"):
        assert urls.count(loop) <= 1
    assert not [u for u in urls if "/private/" in u]
    errors = " ".join(summary.outcomes)
    assert "body larger than" in errors  # the 50 MB page and the gzip bomb are cut off at the cap
    assert summary.bytes < 60 * 1024**2
    # 429 storms are retried after Retry-After, and their CSVs end up retrieved.
    busy = {e.url for e in log if e.status == 429}
    # A Retry-After holds the whole host, not only the request that got it: during the 1 s pause the host
    # only sees requests that were already on their way when the 429 went out, at most one per other
    # thread (a loaded 2-core machine can hold a sent request in the proxy for over half a second). Without
    # the host-wide pause the other threads go on sending within milliseconds, through the whole second.
    on_their_way = crawler.config.concurrency - 1
    for told in (e for e in log if e.status == 429):
        host = urlsplit(told.url).netloc
        early = [e.url for e in log if urlsplit(e.url).netloc == host and told.time + 0.2 < e.arrived < told.time + 0.9]
        assert len(early) <= on_their_way, f"requests during a Retry-After pause of {host}: {early[:3]}"
    rows = manifest(tmp_path)
    got = {r["url"] for r in rows}
    assert busy and busy <= got
    ordinary = {u for u in site.targets if not site.disallowed(u)}
    assert len(got & ordinary) >= 0.9 * len(ordinary)


def test_a_target_the_classifier_missed_is_credited_to_the_page_that_listed_it(
        sim_server, sim_proxy_env, tmp_path, monkeypatch):
    from airflow_sbcrawl.crawler.classify import UrlClassifier
    from airflow_sbcrawl.crawler.policies.sb import CreditedBanditPolicy

    # A classifier that calls every link a page: every target reaches the frontier and is found by a GET.
    monkeypatch.setattr(UrlClassifier, "predict", lambda self, urls, contexts=None: [0] * len(urls))
    calls: list[tuple[int, float]] = []
    credit_late = CreditedBanditPolicy.credit_late
    monkeypatch.setattr(CreditedBanditPolicy, "credit_late",
                        lambda self, page, reward: (calls.append((page, reward)), credit_late(self, page, reward)))
    srv = sim_server("tiny")
    sim_proxy_env(srv)
    site = srv.site
    crawler, summary = crawl(site, tmp_path, max_requests=2000)
    # Every target found by a GET of a frontier link, except those listed by the start page (no pull to
    # credit) and those the first HEAD requests labelled (fetched with their page).
    assert summary.targets > 10 and summary.targets / 2 <= len(calls) <= summary.targets
    for page, reward in calls:
        assert reward == 1
        page_url = crawler.links.urls[page]
        assert site.kind(page_url) == "html"
        assert any(site.kind(u) in ("target", "redirect") for u in site.links(page_url))
