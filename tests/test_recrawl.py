"""Scheduled recrawls: a crawl of a site it has seen before starts from the site memory, checks what it
knows with conditional requests, and stores only what is new or changed; checked against the simulator's
truth between two epochs, counting requests on the server's own log."""

from __future__ import annotations

import http.server
import io
import json
import math
import tarfile
import threading
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from airflow_sbcrawl import cli
from airflow_sbcrawl.crawler import CrawlConfig, Crawler, LocalSink, LocalStateStore, StateExists
from airflow_sbcrawl.crawler import memory as site_memory
from airflow_sbcrawl.crawler.budget import Budget
from airflow_sbcrawl.crawler.fetch import Fetcher
from sbcrawl_dev.bench.warm_vs_cold import RecrawlRun, format_ratio, ratio
from sbcrawl_dev.sim import build_site, get_profile

# The tiny site with more happening between two epochs than real sites see: every kind of change occurs.
CHANGING = get_profile("tiny").with_(name="tiny-changing", datasets_per_section=(6, 10), new_dataset_share=0.2,
                                     update_share=0.25, remove_share=0.08, move_share=0.08)

FAST = {"delay": 0.0, "early_stopping": False, "checkpoint_every_pages": 25}


def crawler(site, out: Path, warm: bool = True, **options) -> Crawler:
    # Enough for every reachable URL of these sites (~200) and a little of their endless calendar and facets.
    config = CrawlConfig(site.start_url, **{**FAST, "max_requests": 500, **options})
    return Crawler(config, LocalSink(out), LocalStateStore(out / "state"), memory=LocalStateStore(out / "memory"),
                   warm_start=warm, tmp_dir=str(out))


def rows_of(out: Path, run_id: str) -> list[dict]:
    rows = [json.loads(line) for line in (out / "manifest.jsonl").read_text().splitlines()]
    return [r for r in rows if r["run_id"] == run_id]


@pytest.fixture
def two_epochs(sim_server, sim_proxy_env, tmp_path):
    """The site crawled at epoch 0 into tmp_path; returns (folder, first summary, epoch-1 server)."""
    before = sim_server(build_site(CHANGING, epoch=0))
    sim_proxy_env(before)
    first = crawler(before.site, tmp_path).run()
    after = sim_server(build_site(CHANGING, epoch=1))
    assert all(Counter(after.site.changes(0).values())[s] for s in ("new", "changed", "moved", "gone"))
    sim_proxy_env(after)
    return tmp_path, first, after


def test_first_crawl_leaves_a_memory_of_every_dataset(two_epochs):
    out, first, _ = two_epochs
    assert first.warm_from == "" and first.changes["new"] == first.targets > 0
    memory = site_memory.load(LocalStateStore(out / "memory"), first.start_url)
    assert memory is not None and memory.run_id == first.run_id
    assert set(memory.datasets) == {r["url"] for r in rows_of(out, first.run_id)}
    assert sum(bool(d.etag or d.last_modified) for d in memory.datasets.values()) > 0.7 * len(memory.datasets)
    assert memory.pages and all(p.score > 0 for p in memory.pages.values())
    assert memory.model_state["policy"] and "policy.centroids" in memory.model_arrays


def test_warm_recrawl_stores_exactly_what_is_new_or_changed(two_epochs):
    out, first, server = two_epochs
    site = server.site
    truth = site.changes(0)
    objects_before = {p.name for p in (out / "objects").iterdir()}
    summary = crawler(site, out).run()  # same folder, no flag: incremental
    assert summary.warm_from == first.run_id and summary.resumed_from is None
    rows = rows_of(out, summary.run_id)
    twice = [r for r in rows if sum(o["url"] == r["url"] for o in rows) > 1]
    assert twice == [], "a URL stored twice in one run"
    by_url = {**{r["final_url"]: r for r in rows}, **{r["url"]: r for r in rows}}  # a moved file: either URL
    for url, status in truth.items():
        if status in ("new", "changed"):
            assert by_url[url]["status"] == status, url
        elif status == "gone":
            assert by_url[url]["status"] == "gone", url
        elif status == "unchanged" and url in by_url:
            assert by_url[url]["status"] == "unchanged", url
    moved = {url for url, status in truth.items() if status == "moved"}
    assert moved <= {r["final_url"] for r in rows if r["status"] == "unchanged"}
    # An unchanged file without validators whose listing row reads as before is settled by that row (asking
    # it would download it whole): no row; every other unchanged file was asked (a 304 or a download).
    def has_validator(url: str) -> bool:
        return bool({"ETag", "Last-Modified"} & set(site.response("HEAD", url, count=False).headers))

    by_row = {url for url, status in truth.items() if status == "unchanged" and url not in by_url}
    assert not [url for url in by_row if has_validator(url)]
    assert summary.checks["vouched"] >= len(by_row)
    counts = Counter(truth.values())
    assert summary.changes == {"new": counts["new"], "changed": counts["changed"],
                               "unchanged": counts["unchanged"] - len(by_row) + counts["moved"],
                               "gone": counts["gone"]}
    # Only new and changed bytes were stored.
    added = {p.name for p in (out / "objects").iterdir()} - objects_before
    assert added == {r["sha256"] for r in rows if r["status"] in ("new", "changed")}
    # No unchanged file whose server gives a validator was downloaded again: a 304 each.
    log = server.log
    validated = {u for u, s in truth.items() if s in ("unchanged", "moved")
                 and {"ETag", "Last-Modified"} & set(site.response("HEAD", u, count=False).headers)}
    again = [e.url for e in log if e.method == "GET" and e.status == 200 and e.url in validated]
    assert again == []
    assert sum(e.status == 304 for e in log) >= len(validated)


def test_warm_recrawl_finds_what_changed_with_fewer_requests_than_a_cold_one(two_epochs, tmp_path_factory):
    out, _, server = two_epochs
    truth = server.site.changes(0)
    wanted = {u for u, s in truth.items() if s in ("new", "changed")}

    def requests_to_find_all(log) -> int:
        seen: set[str] = set()
        for i, e in enumerate(log, 1):
            if e.status == 200 and e.url in wanted:
                seen.add(e.url)
                if seen == wanted:
                    return i
        return 10**9

    crawler(server.site, out).run()
    warm = requests_to_find_all(server.log)
    server.reset_log()
    crawler(server.site, tmp_path_factory.mktemp("cold")).run()
    cold = requests_to_find_all(server.log)
    assert warm < 0.8 * cold < 10**9


def test_memory_survives_a_second_incremental_run_and_cold_opts_out(sim_server, sim_proxy_env, tmp_path):
    srv = sim_server(build_site("tiny", epoch=1))
    sim_proxy_env(srv)
    first = crawler(srv.site, tmp_path).run()
    second = crawler(srv.site, tmp_path).run()  # nothing changed in between
    assert second.warm_from == first.run_id
    assert second.changes["new"] == second.changes["changed"] == second.changes["gone"] == 0
    # every known dataset settled: asked (a 304), vouched for by a page as it was, or estimated unchanged
    # by the change rate (checks in proportion to change: an unchanged site is not checked item by item)
    checks = second.checks
    assert checks["verified"] + checks["vouched"] + checks["estimated"] == first.changes["new"]
    assert second.changes["unchanged"] == second.checks["verified"] < first.changes["new"]
    cold = crawler(srv.site, tmp_path, warm=False).run()
    assert cold.warm_from == "" and cold.changes["unchanged"] == 0
    # a cold run ignores the memory but does not lose it: the next warm run still knows every dataset
    memory = site_memory.load(LocalStateStore(tmp_path / "memory"), srv.site.start_url)
    assert memory.run_id == cold.run_id and len(memory.datasets) == first.changes["new"]


def test_an_interrupted_warm_run_resumes_with_its_recrawl_state(two_epochs):
    out, _, server = two_epochs
    site = server.site
    truth = site.changes(0)
    c = crawler(site, out)
    c.on_progress = lambda p: c.request_stop("test stop") if p.requests >= 40 else None
    stopped = c.run()
    assert stopped.stop_reason == "test stop" and stopped.warm_from
    with pytest.raises(StateExists):  # unfinished (no memory of it): not silently restarted
        crawler(site, out).run()
    resumed = crawler(site, out).run(resume=True)
    assert resumed.run_id == stopped.run_id and resumed.warm_from == stopped.warm_from
    rows = rows_of(out, resumed.run_id)
    assert len({r["url"] for r in rows}) == len(rows)  # nothing listed twice across the resume
    statuses = {**{r["final_url"]: r["status"] for r in rows}, **{r["url"]: r["status"] for r in rows}}
    for url, status in truth.items():
        if status in ("new", "changed", "gone"):
            assert statuses.get(url) == status, url


def test_a_warm_run_checkpointed_by_version_1_resumes(sim_server, sim_proxy_env, tmp_path):
    # The fixture is the run state, site memory and manifest of a warm crawl of CHANGING (epoch 0 crawled
    # first, epoch 1 stopped after 40 requests) by the code from before issue 22, whose checkpoints were of
    # version 1 (the warm crawl's plan as eight queues). Resumed with one connection by both codes, it sent
    # the same 455 requests in the same order.
    with tarfile.open(Path(__file__).parent / "data" / "checkpoint-v1-warm.tar.gz") as archive:
        archive.extractall(tmp_path, filter="data")
    state = json.loads(next((tmp_path / "state").glob("ckpt-*/state.json")).read_text())
    assert state["version"] == 1 and state["recrawl"]["warm"]
    server = sim_server(build_site(CHANGING, epoch=1))
    sim_proxy_env(server)
    resumed = crawler(server.site, tmp_path).run(resume=True)
    assert resumed.resumed_from == 1 and resumed.run_id == state["run_id"] and resumed.warm_from
    assert resumed.requests == 500 and resumed.requests - state["requests"] == len(server.log)
    rows = rows_of(tmp_path, resumed.run_id)
    assert len({r["url"] for r in rows}) == len(rows)
    statuses = {**{r["final_url"]: r["status"] for r in rows}, **{r["url"]: r["status"] for r in rows}}
    for url, status in server.site.changes(0).items():
        if status in ("new", "changed", "gone"):
            assert statuses.get(url) == status, url


def test_fetcher_sends_validators_and_reads_a_304_as_unchanged(sim_server, sim_proxy_env):
    srv = sim_server(build_site("tiny", epoch=1))
    sim_proxy_env(srv)
    url = next(u for u in srv.site.targets if "ETag" in srv.site.response("HEAD", u).headers)
    config = CrawlConfig(srv.site.start_url, delay=0.0)
    fetcher = Fetcher(config, Budget(10, 10**9))
    try:
        full = fetcher.fetch(url)
        again = fetcher.fetch(url, headers={"If-None-Match": full.headers["etag"]})
    finally:
        fetcher.close()
        full.discard()
    assert full.kind == "target" and again.kind == "unchanged" and again.path is None and again.size == 0
    assert srv.log[-1].status == 304 and srv.log[-1].bytes_sent == 0


def test_site_memory_is_checked_and_never_unpickled(tmp_path):
    store = LocalStateStore(tmp_path)
    known = site_memory.KnownDataset("http://x/a.csv", sha256="ab")
    memory = site_memory.SiteMemory(start_url="http://www.stats.example/", run_id="r1",
                                    datasets={known.url: known})
    assert site_memory.save(store, memory) == 1
    assert site_memory.save(store, memory) == 2
    loaded = site_memory.load(store, "http://www.stats.example/")
    assert loaded is not None and loaded.datasets["http://x/a.csv"].sha256 == "ab"
    # A torn newest generation: the previous one is used.
    (tmp_path / "ckpt-00000002" / "datasets.jsonl.gz").write_bytes(b"torn")
    assert site_memory.load(store, "http://www.stats.example/").run_id == "r1"
    with pytest.raises(site_memory.SiteMemoryError, match=r"not http://www\.other\.example/"):
        site_memory.load(store, "http://www.other.example/")
    # An object array (what np.load would need pickle for) is refused, not loaded.
    files = site_memory.encode(memory)
    buf = io.BytesIO()
    np.savez(buf, evil=np.array([{"a": 1}], dtype=object))
    files["model.npz"] = buf.getvalue()
    with pytest.raises(ValueError):
        site_memory.decode(files)


def test_cli_crawls_a_finished_folder_incrementally(tiny_server, sim_proxy_env, tmp_path, capsys):
    sim_proxy_env(tiny_server)
    base = ["crawl", tiny_server.site.start_url, "--out", str(tmp_path), "--delay", "0", "--quiet", "--no-report",
            "--max-requests", "400"]
    assert cli.main(base) == 0
    first = capsys.readouterr().out
    assert "incremental" not in first and "datasets           new:" in first
    assert cli.main(base) == 0
    second = capsys.readouterr().out
    assert "incremental, from the site memory of run" in second and "new: 0, changed: 0" in second
    assert "known datasets     verified: " in second and "the site's change rate " in second
    assert cli.main([*base, "--cold"]) == 0
    assert "incremental" not in capsys.readouterr().out


def test_bench_ratio_is_a_bound_when_the_cold_run_never_got_there():
    def run(reach: float, requests: int) -> RecrawlRun:
        return RecrawlRun(requests, reach, 0, 0, 0, 0, 0, {})

    # the cold run never served 90 %: it would have needed more than its 240 requests
    result = {"ratio": ratio(run(30, 200), run(math.inf, 240)), "cold": {"requests_to_reach": math.inf}}
    assert result["ratio"] == 30 / 240 and format_ratio(result) == "≤0.12"
    assert ratio(run(math.inf, 240), run(100, 240)) == math.inf
    assert ratio(run(30, 240), run(120, 240)) == 0.25


class _MovingFile(http.server.BaseHTTPRequestHandler):
    """A site whose one file moves between two crawls: at epoch 1 its old URL answers 301 to a new URL that
    another page links. The answers are held so that two requests for the file are in flight at once,
    whatever the machine's speed: page 2 waits until the old URL's redirect was followed to the new URL,
    and that first conditional GET of the new URL waits for a second one, page 2's (each wait has a
    deadline: a crawler that never asks twice only makes it slow). Page 2 used to wait only until the old
    URL was asked; when its link then came in before the 301, the crawler rightly took the redirect's hop
    for a request already out and asked once (about one loaded run in ten)."""

    epoch = 0
    asked_new = threading.Event()
    asked_twice = threading.Event()
    conditional_gets = 0
    lock = threading.Lock()
    BODY = b"year,value\n2020,1\n2021,2\n"
    ETAG = '"v1"'

    def do_GET(self) -> None:
        path, epoch, cls = self.path, type(self).epoch, type(self)
        if path == "/":
            self._page(b'<a href="/p1">one</a>' + (b' <a href="/p2">two</a>' if epoch else b""))
        elif path == "/p1":
            self._page(b'<a href="/old/data.csv">data</a>')
        elif path == "/p2" and epoch:
            cls.asked_new.wait(10)
            self._page(b'<a href="/new/data.csv">data</a>')
        elif path == "/old/data.csv" and not epoch:
            self._file()
        elif path == "/old/data.csv":
            self._answer(301, {"Location": "/new/data.csv"})
        elif path == "/new/data.csv" and epoch:
            cls.asked_new.set()
            if self.headers.get("If-None-Match") != self.ETAG:
                self._file()
                return
            with cls.lock:
                cls.conditional_gets += 1
                first = cls.conditional_gets == 1
            if first:
                cls.asked_twice.wait(10)
            else:
                cls.asked_twice.set()
            self._answer(304, {"ETag": self.ETAG})
        else:
            self._answer(404, {})

    def _page(self, body: bytes) -> None:
        self._answer(200, {"Content-Type": "text/html"}, b"<html><body>" + body + b"</body></html>")

    def _file(self) -> None:
        self._answer(200, {"Content-Type": "text/csv", "ETag": self.ETAG}, self.BODY)

    def _answer(self, status: int, headers: dict[str, str], body: bytes = b"") -> None:
        self.send_response(status)
        for name, value in {**headers, "Content-Length": str(len(body))}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args) -> None:
        pass


def test_a_moved_file_asked_twice_at_once_gets_one_row(tmp_path, monkeypatch):
    """The known file's old URL (301) and its new URL (sent the file's validators, same name) asked at once
    by two pages: one row for the file in the run, not one per answer."""
    for name in ("HTTP_PROXY", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _MovingFile)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        config = CrawlConfig(f"http://127.0.0.1:{server.server_port}/", delay=0.0, early_stopping=False,
                             max_requests=40, respect_robots=False, policy="bfs")
        first = Crawler(config, LocalSink(tmp_path), LocalStateStore(tmp_path / "state"),
                        memory=LocalStateStore(tmp_path / "memory"), tmp_dir=str(tmp_path)).run()
        assert first.targets == 1
        _MovingFile.epoch = 1
        second = Crawler(config, LocalSink(tmp_path), LocalStateStore(tmp_path / "state"),
                         memory=LocalStateStore(tmp_path / "memory"), tmp_dir=str(tmp_path)).run()
        assert _MovingFile.asked_twice.is_set()  # the file was asked twice at once
        rows = rows_of(tmp_path, second.run_id)
        assert [(r["url"].split("/", 3)[3], r["final_url"].split("/", 3)[3], r["status"]) for r in rows] == [
            ("old/data.csv", "new/data.csv", "unchanged")]
        assert second.changes == {"new": 0, "changed": 0, "unchanged": 1, "gone": 0}
    finally:
        server.shutdown()
        server.server_close()
