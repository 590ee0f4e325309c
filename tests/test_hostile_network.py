"""Hostile input, round two (issue 21): servers asking for long pauses, names resolving to refused
addresses, one site behind two names, corrupt checkpoints, bad manifest rows, storage outages. Real HTTP
servers on 127.0.0.1 throughout; only the resolver is stood in for where a name must resolve to a given
address (no DNS server in a test)."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time

import pytest

from airflow_sbcrawl import cli
from airflow_sbcrawl.crawler import state as ckpt
from tests.test_hostile import FAST, HostileServer, _Handler, relayed_s3


class _Recording(HostileServer):
    """A server that answers every request with ``answer(path)`` and records when each one arrived."""

    def __init__(self, answer) -> None:
        self.times: list[tuple[float, str]] = []
        self.answer = answer
        super().__init__()

    def route(self, h: _Handler, target: str) -> None:
        self.times.append((time.monotonic(), target))
        self.answer(h, target)


@pytest.fixture
def hostile(monkeypatch):
    """``hostile(answer=None)``: a started server (a ``_Recording`` one when ``answer`` is given), direct."""
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    servers: list[HostileServer] = []

    def start(answer=None) -> HostileServer:
        servers.append(HostileServer() if answer is None else _Recording(answer))
        return servers[-1]

    yield start
    for srv in servers:
        srv.shutdown()
        srv.server_close()


def _fetcher(start_url: str, **settings):
    from airflow_sbcrawl.crawler.budget import Budget
    from airflow_sbcrawl.crawler.config import CrawlConfig
    from airflow_sbcrawl.crawler.fetch import Fetcher

    config = CrawlConfig(start_url, **{"delay": 0.0, "backoff": 0.0, **settings})
    return Fetcher(config, Budget(config.max_requests, config.max_bytes))


# -- 3. Retry-After -------------------------------------------------------------------------------------
def test_retry_after_above_the_cap_holds_then_gives_up_the_host(hostile):
    """A 429 asking for an hour (above the 1 s cap set here) holds the host for the cap, is not retried at
    once, and a second such answer gives the host up for the run: no request within the cap, ever."""
    srv = hostile(lambda h, _t: h.send("429 Too Many Requests", b"slow down", extra="Retry-After: 3600\r\n"))
    fetcher = _fetcher(srv.url, max_retry_after=1.0, retries=3)
    try:
        first = fetcher.fetch(srv.url + "a")
        second = fetcher.fetch(srv.url + "b")
        third = fetcher.fetch(srv.url + "c")
    finally:
        fetcher.close()
    arrivals = [t for t, _ in srv.times]
    assert [p for _, p in srv.times] == ["/a", "/b"]  # no retry of a too-long pause, nothing once given up
    assert arrivals[1] - arrivals[0] >= 1.0 * 0.95
    assert first.status == 429 and "more than 1s" in first.error
    assert second.status == 429 and third.status is None and "gave up" in third.error


def test_the_last_429_of_a_request_holds_the_host(hostile):
    """Retries spent, the last 429's Retry-After still holds the host: the next request waits for it."""
    srv = hostile(lambda h, _t: h.send("429 Too Many Requests", b"", extra="Retry-After: 1\r\n"))
    fetcher = _fetcher(srv.url, max_retry_after=5.0, retries=1)
    try:
        fetcher.fetch(srv.url + "a")
        fetcher.fetch(srv.url + "b")
    finally:
        fetcher.close()
    arrivals = [t for t, _ in srv.times]
    assert [p for _, p in srv.times] == ["/a", "/a", "/b", "/b"]
    gaps = [b - a for a, b in itertools.pairwise(arrivals)]
    assert min(gaps) >= 1.0 * 0.95, gaps


# -- 6. checkpoint retention ----------------------------------------------------------------------------
def test_retention_after_a_fallback_keeps_the_last_valid_checkpoint(tiny_server, sim_proxy_env, tmp_path, capsys,
                                                                   checkpoints_by_pages):
    """The newest checkpoint is corrupt, a resume falls back to the older one and saves one new checkpoint:
    the older valid one must survive (not the corrupt one), so losing the newest still leaves a crawl."""
    sim_proxy_env(tiny_server)
    base = ["crawl", tiny_server.site.start_url, "--out", str(tmp_path), *FAST]
    assert cli.main([*base, "--max-requests", "40", "--checkpoint-every", "3"]) == 0
    state = tmp_path / "state"
    newest = max(state.glob("ckpt-*"))
    (newest / "arrays.npz").write_bytes(b"torn")
    # One checkpoint only in the resumed run: its final one.
    assert cli.main([*base, "--resume", "--max-requests", "50", "--checkpoint-every", "10000"]) == 0
    assert newest.name not in {p.name for p in state.glob("ckpt-*")}  # the corrupt one is gone
    shutil.rmtree(max(state.glob("ckpt-*")))  # the newest is lost
    seq, *_ = ckpt.load_latest(ckpt.LocalStateStore(state))
    assert seq < int(newest.name[5:])
    capsys.readouterr()



# -- 4. addresses checked before connecting -------------------------------------------------------------
def _resolve(monkeypatch, names: dict[str, str]) -> None:
    """Make ``names`` resolve to the given addresses (the resolver only: connections stay real)."""
    real = socket.getaddrinfo

    def resolver(host, *args, **kwargs):
        return real(names.get(host, host), *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolver)


def test_a_name_resolving_to_a_refused_address_gets_no_tcp_handshake(monkeypatch):
    """A name resolving to loopback, in a crawl of a public site: refused before the connection, so the
    listening socket never has a connection to accept."""
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    listener = socket.create_server(("127.0.0.1", 0))
    listener.setblocking(False)
    port = listener.getsockname()[1]
    _resolve(monkeypatch, {"rebind.public.example": "127.0.0.1"})
    fetcher = _fetcher("http://www.public.example/", allow_private_start=False, retries=0)
    try:
        resp = fetcher.fetch(f"http://rebind.public.example:{port}/secret")
    finally:
        fetcher.close()
    accepted = 0
    while True:
        try:
            conn, _ = listener.accept()
        except BlockingIOError:
            break
        conn.close()
        accepted += 1
    listener.close()
    assert resp.kind == "refused" and "127.0.0.1" in resp.error
    assert accepted == 0


def test_link_local_and_metadata_addresses_are_never_reached(monkeypatch, tmp_path, capsys):
    from airflow_sbcrawl.crawler.addresses import AddressGuard, AddressRefused
    from airflow_sbcrawl.crawler.transport import checked_addresses

    # Even a crawl that starts on loopback (allowed, with the warning) may not reach link-local space.
    guard = AddressGuard("http://127.0.0.1:8000/")
    _resolve(monkeypatch, {"meta.example": "169.254.169.254", "wire.example": "168.63.129.16"})
    for name in ("meta.example", "wire.example"):
        with pytest.raises(AddressRefused, match=r"link-local|cloud-metadata"):
            checked_addresses(guard, name, 80)
    # A start name resolving to the metadata address is not taken for the crawl's own kind of address.
    start = AddressGuard("http://meta.example/")
    with pytest.raises(AddressRefused):
        start.check("meta.example", "169.254.169.254")
    # The command line refuses such start URLs, before any request; loopback stays allowed there.
    for url in ("http://169.254.169.254/latest/meta-data/", "http://2852039166/", "http://[fd00:ec2::254]/"):
        assert cli.main(["crawl", url, "--out", str(tmp_path / "x"), *FAST]) == 2
        err = capsys.readouterr().err
        assert "no crawl may reach it" in err and "Traceback" not in err


def test_numeric_forms_of_private_addresses_are_refused_up_front():
    from airflow.sdk import Param
    from airflow.sdk.exceptions import ParamValidationError

    from airflow_sbcrawl.crawler.addresses import address_kind
    from airflow_sbcrawl.params import PUBLIC_URL_SCHEMA, check_public_start_url

    numeric = {"2852039166": "cloud-metadata", "0x7f000001": "loopback", "127.1": "loopback", "0": "private",
               "0177.0.0.1": "loopback", "10.1": "private"}
    for host, kind in numeric.items():
        assert address_kind(host) == kind, host
        url = f"http://{host}/"
        with pytest.raises(ValueError, match="address"):
            check_public_start_url(url)
        with pytest.raises(ParamValidationError):
            Param(url, type="string", **PUBLIC_URL_SCHEMA).resolve()
    for url in ("http://8.8.8.8/", "http://1.example.com/", "http://0xdead.example/", "https://www.insee.fr/"):
        check_public_start_url(url)
        assert Param(url, type="string", **PUBLIC_URL_SCHEMA).resolve() == url
    assert address_kind("1.example.com") is None


# -- 8. politeness per IP address -----------------------------------------------------------------------
def test_two_names_on_one_address_share_one_delay(hostile, monkeypatch):
    srv = hostile(lambda h, _t: h.send("200 OK", b"<html></html>"))
    port = srv.server_address[1]
    _resolve(monkeypatch, {"www.site.example": "127.0.0.1", "data.site.example": "127.0.0.1"})

    def arrivals(names: list[str], **settings) -> list[float]:
        srv.times.clear()
        fetcher = _fetcher(f"http://www.site.example:{port}/", **settings)
        try:
            for i, name in enumerate(names):
                assert fetcher.fetch(f"http://{name}.site.example:{port}/{i}").kind == "html"
        finally:
            fetcher.close()
        return [t for t, _ in srv.times]

    shared = arrivals(["www", "data", "www", "data"], delay=0.5)
    assert min(b - a for a, b in itertools.pairwise(shared)) >= 0.5 * 0.95  # one delay for both names
    # Turned off, each name keeps its own delay: the second name's first request does not wait.
    separate = arrivals(["www", "data"], delay=30.0, polite_per_address=False)
    assert separate[1] - separate[0] < 30.0


# -- 7. bad rows, bad settings, one error message --------------------------------------------------------
def test_manifest_rows_of_the_wrong_types_are_skipped_and_counted(tiny_server, sim_proxy_env, tmp_path, capsys,
                                                                  caplog):
    sim_proxy_env(tiny_server)
    base = ["crawl", tiny_server.site.start_url, "--out", str(tmp_path), *FAST, "--checkpoint-every", "5"]
    assert cli.main([*base, "--max-requests", "30"]) == 0
    manifest = tmp_path / "manifest.jsonl"
    good = json.loads(manifest.read_text().splitlines()[0])
    bad = [{**good, "depth": "abc"}, {**good, "url": [good["url"], "x"]}, {**good, "status": {"a": 1}}]
    manifest.write_text(manifest.read_text() + "".join(json.dumps(row) + "\n" for row in bad))
    capsys.readouterr()
    assert cli.main([*base, "--resume", "--max-requests", "60"]) == 0
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert "skipped 3 manifest rows with values of the wrong type (first, row" in caplog.text
    assert "depth is 'abc'" in caplog.text


def test_an_unknown_target_type_is_refused(tmp_path, capsys):
    code = cli.main(["crawl", "http://www.stats.example/", "--out", str(tmp_path), *FAST,
                     "--target-type", "text/csv", "--target-type", "text/bogus"])
    err = capsys.readouterr().err
    assert code == 2 and "'text/bogus' is not a known MIME type" in err
    assert not (tmp_path / "state").exists()
    from airflow_sbcrawl.crawler import CrawlConfig

    for mime in ("application/vnd.sdmx.genericdata+xml", "application/x-stata", "text/tab-separated-values",
                 "application/geo+json"):
        CrawlConfig("http://www.stats.example/", target_mime_types=(mime,))


def test_an_unreachable_host_prints_its_error_once(tmp_path):
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    listener.close()  # nothing listens there now: connections are refused
    env = {k: v for k, v in os.environ.items() if k.lower() not in ("http_proxy", "https_proxy", "all_proxy")}
    proc = subprocess.run([sys.executable, "-m", "airflow_sbcrawl.cli", "crawl", f"http://127.0.0.1:{port}/",
                           "--out", str(tmp_path), "--delay", "0", "--no-report", "--quiet"],
                          capture_output=True, text=True, env=env, timeout=120)
    both = proc.stdout + proc.stderr
    assert proc.returncode == 1 and "Traceback" not in both
    assert both.count("Connection refused") == 1, both
    assert "the start page could not be used" in both


# -- 10. an --out folder of another site; a crawl that reached nothing ---------------------------------
def test_an_out_folder_of_another_site_is_recovered_with_fresh(hostile, tmp_path, capsys):
    first, second = hostile(), hostile()
    first.links = second.links = ["/data-1.csv"]
    out = ["--out", str(tmp_path), *FAST]
    assert cli.main(["crawl", first.url, *out]) == 0
    capsys.readouterr()
    for extra in ([], ["--resume"], ["--cold"]):
        assert cli.main(["crawl", second.url, *out, *extra]) == 2
        err = capsys.readouterr().err
        assert f"is of {first.url}" in err and "--fresh to discard" in err and "use --resume" not in err
    assert not [p for _, p in second.seen]
    assert cli.main(["crawl", second.url, *out, "--fresh"]) == 0
    assert "targets retrieved  1" in capsys.readouterr().out
    assert ("GET", "/data-1.csv") in second.seen


def test_a_crawl_that_reached_nothing_leaves_no_site_memory(hostile, tmp_path, capsys):
    srv = hostile()
    srv.links = ["/data-1.csv"]
    srv.robots_failures = 1000  # robots.txt answers 500: the site cannot be crawled this time
    assert cli.main(["crawl", srv.url, "--out", str(tmp_path), *FAST]) == 1
    assert not list((tmp_path / "memory").glob("ckpt-*"))
    capsys.readouterr()
    srv.robots_failures = 0
    assert cli.main(["crawl", srv.url, "--out", str(tmp_path), *FAST]) == 0
    out = capsys.readouterr().out
    assert "incremental" not in out and "targets retrieved  1" in out


# -- 5. storage outages ---------------------------------------------------------------------------------
def test_s3_cut_three_times_loses_no_row_and_downloads_nothing_twice(seaweed, seaweed_bucket, sim_server,
                                                                     sim_proxy_env, monkeypatch):
    """S3 (objects, manifest rows, checkpoints, the budget journal) goes away three times mid-crawl and comes
    back once the crawl has knocked on it: the crawl waits for it, every stored object has its manifest row,
    and no target is downloaded twice."""

    from airflow_sbcrawl.crawler import CrawlConfig, Crawler
    from airflow_sbcrawl.hooks.crawl import SBCrawlHook
    from airflow_sbcrawl.hooks.layout import S3CrawlLayout
    from airflow_sbcrawl.hooks.stores import S3Sink, S3StateStore

    srv = sim_server("tiny")
    sim_proxy_env(srv)
    relay = relayed_s3(seaweed, monkeypatch, "sbcrawl_cuts", {"total_max_attempts": 1})
    hook = SBCrawlHook.for_connection("sbcrawl_cuts")
    layout = S3CrawlLayout.for_start_url(seaweed_bucket, "crawls", srv.site.start_url)
    sink = S3Sink(hook, layout, "run-1", outage_wait=60)
    store = S3StateStore(hook, seaweed_bucket, "state/cuts/", outage_wait=60)
    config = CrawlConfig(srv.site.start_url, delay=0.0, max_requests=150, checkpoint_every_pages=4,
                         early_stopping=False)
    cuts: list[int] = []

    def cut_three_times() -> None:
        for at in (25, 60, 95):
            while len(srv.log) < at:
                time.sleep(0.002)
            relay.turned_away.clear()
            relay.cut()
            cuts.append(len(srv.log))
            relay.turned_away.wait(30)  # the crawl knocked on S3 while it was away
            relay.up = True

    watcher = threading.Thread(target=cut_three_times, daemon=True)
    try:
        watcher.start()
        summary = Crawler(config, sink, store).run()
        watcher.join(5)
        rows = sink.read_rows()
    finally:
        relay.close()
    assert len(cuts) == 3, f"the crawl ended after {len(srv.log)} requests, before the third cut"
    assert sink.outages.outages + store.outages.outages >= 3
    client = seaweed.boto3_client()
    objects = {k.rsplit("/", 1)[-1] for k in _keys(client, seaweed_bucket, layout.objects_prefix())}
    assert objects and objects == {r["sha256"] for r in rows if r["status"] in ("new", "changed")}
    downloads: dict[str, int] = {}
    for entry in list(srv.log):
        if entry.method == "GET":
            downloads[entry.url] = downloads.get(entry.url, 0) + 1
    target_urls = {r["final_url"] for r in rows}
    assert all(downloads.get(url) == 1 for url in target_urls), {u: downloads.get(u) for u in target_urls}
    assert summary.targets == len(rows)


def test_a_row_kept_in_object_metadata_fits_s3s_limit_and_is_read_back_only_when_it_is_a_row():
    import hashlib

    from airflow_sbcrawl.hooks.stores import metadata_row, record_row, row_metadata

    row = {"url": "http://www.stats.example/a.csv", "final_url": "http://www.stats.example/a.csv", "sha256": "ab",
           "mime": "text/csv", "depth": 2, "run_id": "run-1", "status": "new", "found_on": "http://x/", "size": 3}
    assert metadata_row(row_metadata(row)) == row
    ids = (hashlib.sha256(str(i).encode()).hexdigest()[:12] for i in range(300))
    long_path = {**row, "tag_path": "/".join(f"div#{i}" for i in ids)}  # 5 kB of ids: does not compress
    kept = metadata_row(row_metadata(long_path))
    assert kept is not None and "tag_path" not in kept and kept["url"] == row["url"]
    assert sum(len(k) + len(v) for k, v in row_metadata(long_path).items()) <= 2048  # S3's metadata limit
    assert row_metadata({**row, "url": "http://x/" + "".join(chr(0x4E00 + i) for i in range(3000))}) == {}
    for junk in ({}, {"sbcrawl-row": "%%%"}, {"sbcrawl-row": "aGVsbG8="},
                 row_metadata({**row, "depth": "abc"})):  # a row of the wrong types is not a row
        assert metadata_row(junk) is None
    # A row kept on its own (its object carries another URL's row) is its JSON, read back on the same terms.
    assert record_row(json.dumps(row)) == row
    for junk in ("", "{", "[1]", json.dumps({**row, "url": ["a"]})):
        assert record_row(junk) is None


def test_an_outage_longer_than_the_wait_fails_the_try_and_its_retry_downloads_nothing_twice(
        seaweed, seaweed_bucket, sim_server, sim_proxy_env, monkeypatch):
    """S3 stays away longer than the crawl waits for it: the try fails with the rows of objects it stored still
    waiting for their flush. The retry (a resume once S3 is back) finds those rows in the objects' metadata:
    every object has its row, and no target is downloaded twice."""

    from airflow_sbcrawl.crawler import CrawlConfig, Crawler
    from airflow_sbcrawl.hooks.crawl import SBCrawlHook
    from airflow_sbcrawl.hooks.layout import S3CrawlLayout
    from airflow_sbcrawl.hooks.stores import S3Sink, S3StateStore

    srv = sim_server("tiny")
    sim_proxy_env(srv)
    relay = relayed_s3(seaweed, monkeypatch, "sbcrawl_long", {"total_max_attempts": 1})
    hook = SBCrawlHook.for_connection("sbcrawl_long")
    layout = S3CrawlLayout.for_start_url(seaweed_bucket, "crawls", srv.site.start_url)
    # No checkpoint before the end: every row of the first try waits for a flush that the outage prevents.
    config = CrawlConfig(srv.site.start_url, delay=0.0, max_requests=150, checkpoint_every_pages=10_000,
                         early_stopping=False)

    def crawler() -> tuple[Crawler, S3Sink]:
        sink = S3Sink(hook, layout, "run-1", outage_wait=0.5)
        store = S3StateStore(hook, seaweed_bucket, "state/long/", outage_wait=0.5)
        return Crawler(config, sink, store, run_id="run-1"), sink  # the operator's tries share their run id

    first, first_sink = crawler()
    waiting: list[int] = []

    def cut_with_stored_rows_waiting() -> None:
        while first_sink.objects_uploaded < 3:
            time.sleep(0.002)
        relay.cut()
        waiting.append(first_sink.objects_uploaded)

    watcher = threading.Thread(target=cut_with_stored_rows_waiting, daemon=True)
    try:
        watcher.start()
        with pytest.raises(Exception):  # noqa: B017  (botocore's errors, or SinkError: whichever call met S3 first)
            first.run(resume=True)
        watcher.join(5)
        assert waiting and not first_sink.manifest_keys, "the first try flushed rows before the cut"
        client = seaweed.boto3_client()  # directly, not through the relay
        stored_by_first = {k.rsplit("/", 1)[-1] for k in _keys(client, seaweed_bucket, layout.objects_prefix())}
        relay.up = True
        retry, sink = crawler()
        summary = retry.run(resume=True)
        rows = sink.read_rows()
    finally:
        relay.close()
    objects = {k.rsplit("/", 1)[-1] for k in _keys(client, seaweed_bucket, layout.objects_prefix())}
    assert len(stored_by_first) >= waiting[0]
    assert objects == {r["sha256"] for r in rows if r["status"] in ("new", "changed")}
    downloads: dict[str, int] = {}
    for entry in list(srv.log):
        if entry.method == "GET":
            downloads[entry.url] = downloads.get(entry.url, 0) + 1
    # A file downloaded while S3 was away and never stored is downloaded again, as it must be; one stored is not.
    again = {r["final_url"]: downloads.get(r["final_url"]) for r in rows if r["sha256"] in stored_by_first}
    assert all(count == 1 for count in again.values()), again
    assert summary.targets == len(rows)


def _same_bytes_site(hostile) -> tuple[HostileServer, list[str]]:
    """A site whose start page links 40 files serving the same bytes and 8 files of their own (interleaved),
    no validators: a server that started, with its links."""
    same, own = [f"/same-{i}.csv" for i in range(40)], [f"/own-{i}.csv" for i in range(8)]
    links = [link for pair in itertools.zip_longest(same, own) for link in pair if link]

    def answer(h: _Handler, target: str) -> None:
        path = target.partition("?")[0]
        if path == "/":
            items = "".join(f'<li><a href="{u}">{u}</a></li>' for u in links)
            h.send("200 OK", f"<html><body><ul>{items}</ul></body></html>".encode())
        elif path.startswith("/same-"):
            h.send("200 OK", b"year,value\n2020,1\n2021,2\n", "text/csv")
        elif path.startswith("/own-"):
            h.send("200 OK", f"year,value\n2020,{path}\n".encode(), "text/csv")
        else:
            h.send("404 Not Found", b"")

    return hostile(answer), links


def _fail_a_try(relay, crawler, sink, ready) -> set[str]:
    """Run ``crawler`` (a try with ``sink``) and cut S3 for good once ``ready()``; the try fails. S3 comes
    back; returns the URLs of the targets whose rows the failed try made."""
    cut: list[bool] = []

    def cut_when_ready() -> None:
        while not ready():
            time.sleep(0.002)
        relay.cut()
        cut.append(True)

    watcher = threading.Thread(target=cut_when_ready, daemon=True)
    watcher.start()
    with pytest.raises(Exception):  # noqa: B017  (botocore's errors, or SinkError: whichever call met S3 first)
        crawler.run(resume=True)
    watcher.join(5)
    assert cut and not sink.manifest_keys, "the try flushed rows before the cut"
    relay.up = True
    return set(crawler.manifest.rows_of_run)


def _downloads(srv: HostileServer) -> dict[str, int]:
    counts: dict[str, int] = {}
    for method, path in list(srv.seen):
        if method == "GET":
            counts[srv.url + path[1:]] = counts.get(srv.url + path[1:], 0) + 1
    return counts


def test_an_outage_longer_than_the_wait_loses_no_row_of_a_target_whose_content_was_stored_already(
        hostile, seaweed, seaweed_bucket, monkeypatch):
    """Many URLs of a site serve the same bytes: the first is uploaded, the others' uploads are skipped, so no
    object carries their rows. S3 then stays away longer than the crawl waits: the retry must still find the
    row of every target the failed try met, and download none of them again, duplicates included."""

    from airflow_sbcrawl.crawler import CrawlConfig, Crawler
    from airflow_sbcrawl.hooks.crawl import SBCrawlHook
    from airflow_sbcrawl.hooks.layout import S3CrawlLayout
    from airflow_sbcrawl.hooks.stores import S3Sink, S3StateStore

    srv, links = _same_bytes_site(hostile)
    relay = relayed_s3(seaweed, monkeypatch, "sbcrawl_dupes", {"total_max_attempts": 1})
    hook = SBCrawlHook.for_connection("sbcrawl_dupes")
    layout = S3CrawlLayout.for_start_url(seaweed_bucket, "crawls", srv.url)
    config = CrawlConfig(srv.url, delay=0.0, max_requests=200, checkpoint_every_pages=10_000, early_stopping=False)

    def crawler() -> tuple[Crawler, S3Sink]:
        sink = S3Sink(hook, layout, "run-1", outage_wait=0.5)
        store = S3StateStore(hook, seaweed_bucket, "state/dupes/", outage_wait=0.5)
        return Crawler(config, sink, store, run_id="run-1"), sink

    try:
        first, first_sink = crawler()
        # 4 uploads skipped: the rows of 3 targets whose content was stored already are made.
        met_by_first = _fail_a_try(relay, first, first_sink, lambda: first_sink.objects_skipped >= 4)
        retry, sink = crawler()
        summary = retry.run(resume=True)
        rows = sink.read_rows()
    finally:
        relay.close()
    client = seaweed.boto3_client()
    assert sum(url.rsplit("/", 1)[-1].startswith("same-") for url in met_by_first) >= 3
    assert sorted(r["url"] for r in rows) == sorted(srv.url + link[1:] for link in links)  # one row per target
    objects = {k.rsplit("/", 1)[-1] for k in _keys(client, seaweed_bucket, layout.objects_prefix())}
    assert objects == {r["sha256"] for r in rows} and len(objects) == 1 + 8
    downloads = _downloads(srv)
    again = {url: downloads.get(url) for url in met_by_first if downloads.get(url) != 1}
    assert not again, f"downloaded again after the retry: {again}"
    assert not _keys(client, seaweed_bucket, layout.row_records_prefix("run-1"))  # kept rows removed once written
    assert summary.targets == len(rows)


def test_an_outage_longer_than_the_wait_in_a_warm_run_downloads_no_unchanged_file_twice(
        hostile, seaweed, seaweed_bucket, monkeypatch):
    """A warm run downloads the known files again (their server gives no validator) and finds them unchanged:
    nothing to upload, so no object carries those rows either. S3 stays away longer than the wait: the retry
    downloads none of the files whose rows the failed try made."""

    from airflow_sbcrawl.crawler import CrawlConfig, Crawler
    from airflow_sbcrawl.hooks.crawl import SBCrawlHook
    from airflow_sbcrawl.hooks.layout import S3CrawlLayout
    from airflow_sbcrawl.hooks.stores import S3Sink, S3StateStore

    srv, links = _same_bytes_site(hostile)
    relay = relayed_s3(seaweed, monkeypatch, "sbcrawl_warm", {"total_max_attempts": 1})
    hook = SBCrawlHook.for_connection("sbcrawl_warm")
    layout = S3CrawlLayout.for_start_url(seaweed_bucket, "crawls", srv.url)
    config = CrawlConfig(srv.url, delay=0.0, max_requests=300, checkpoint_every_pages=10_000, early_stopping=False)

    def crawler(run_id: str) -> tuple[Crawler, S3Sink]:
        sink = S3Sink(hook, layout, run_id, outage_wait=0.5)
        store = S3StateStore(hook, seaweed_bucket, f"state/{run_id}/", outage_wait=0.5)
        memory = S3StateStore(hook, seaweed_bucket, "memory/warm/", outage_wait=0.5)
        return Crawler(config, sink, store, run_id=run_id, memory=memory), sink

    try:
        cold, _ = crawler("run-1")
        assert cold.run().targets == len(links)
        srv.seen.clear()
        first, first_sink = crawler("run-2")
        met_by_first = _fail_a_try(relay, first, first_sink, lambda: len(first.manifest.rows_of_run) >= 3)
        retry, sink = crawler("run-2")
        summary = retry.run(resume=True)
        rows = [r for r in sink.read_rows() if r["run_id"] == "run-2"]
    finally:
        relay.close()
    assert summary.warm_from == "run-1" and len(met_by_first) >= 3
    assert {r["status"] for r in rows} == {"unchanged"} and len(rows) == len({r["url"] for r in rows})
    downloads = _downloads(srv)
    again = {url: downloads.get(url) for url in met_by_first if downloads.get(url) != 1}
    assert not again, f"downloaded again after the retry: {again}"
    client = seaweed.boto3_client()
    assert not _keys(client, seaweed_bucket, layout.row_records_prefix("run-2"))


def test_a_row_no_object_can_carry_is_kept_until_its_flush_and_recovered_after_a_failed_try(
        seaweed, seaweed_bucket, tmp_path, monkeypatch):
    """A row too long for S3's metadata, and a row whose content is stored already, are kept in records of their
    own: a retry's ``recover_rows`` writes them to the manifest and removes the records; a flush removes the
    records of the rows it wrote."""
    import hashlib

    from airflow_sbcrawl.hooks.crawl import SBCrawlHook
    from airflow_sbcrawl.hooks.layout import S3CrawlLayout
    from airflow_sbcrawl.hooks.stores import S3Sink

    monkeypatch.setenv("AIRFLOW_CONN_SBCRAWL_KEPT", seaweed.airflow_conn_json())
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    hook = SBCrawlHook.for_connection("sbcrawl_kept")
    layout = S3CrawlLayout.for_start_url(seaweed_bucket, "crawls", "http://www.kept.example/")
    client = seaweed.boto3_client()
    body = b"year,value\n2020,1\n"
    sha = hashlib.sha256(body).hexdigest()

    def put(sink: S3Sink, url: str) -> dict:
        path = tmp_path / "download"
        path.write_bytes(body)
        row = {"url": url, "final_url": url, "sha256": sha, "mime": "text/csv", "size": len(body), "depth": 1,
               "run_id": "run-1", "status": "new"}
        sink.put_object(sha, path, "text/csv", row)
        sink.append_rows([row])
        return row

    long_url = "http://www.kept.example/" + "".join(chr(0x4E00 + i) for i in range(3000))  # no 2 KB fits it
    first = S3Sink(hook, layout, "run-1")
    put(first, long_url)
    put(first, "http://www.kept.example/copy.csv")  # the same bytes: the upload is skipped
    assert first.objects_uploaded == 1 and first.objects_skipped == 1
    assert len(_keys(client, seaweed_bucket, layout.row_records_prefix("run-1"))) == 2
    # The try fails here, before its flush; the retry finds both rows.
    retry = S3Sink(hook, layout, "run-1")
    assert retry.recover_rows("run-1") == 2
    assert sorted(r["url"] for r in retry.read_rows()) == sorted([long_url, "http://www.kept.example/copy.csv"])
    assert not _keys(client, seaweed_bucket, layout.row_records_prefix("run-1"))
    # A flush writes the kept rows and removes their records.
    put(retry, "http://www.kept.example/another-copy.csv")
    assert len(_keys(client, seaweed_bucket, layout.row_records_prefix("run-1"))) == 1
    retry.flush()
    assert not _keys(client, seaweed_bucket, layout.row_records_prefix("run-1"))
    assert len(retry.read_rows()) == 3 and S3Sink(hook, layout, "run-1").recover_rows("run-1") == 0


def test_a_task_killed_during_an_s3_outage_stops_without_waiting_it_out(seaweed, seaweed_bucket, sim_server,
                                                                       sim_proxy_env, monkeypatch):
    """S3 goes away for good mid-crawl; the operator's on_kill (what Airflow's supervisor calls on SIGTERM)
    ends the crawl's 300 s wait for S3 at once with a reason, and no request is sent after it."""

    from airflow_sbcrawl.crawler import CrawlConfig, Crawler, SinkError
    from airflow_sbcrawl.hooks.crawl import CrawlStorage, SBCrawlHook
    from airflow_sbcrawl.hooks.layout import S3CrawlLayout
    from airflow_sbcrawl.hooks.stores import OUTAGE_WAIT, S3Sink, S3StateStore
    from airflow_sbcrawl.operators.crawl import SBCrawlOperator

    srv = sim_server("tiny")
    sim_proxy_env(srv)
    relay = relayed_s3(seaweed, monkeypatch, "sbcrawl_killed", {"total_max_attempts": 1})
    hook = SBCrawlHook.for_connection("sbcrawl_killed")
    layout = S3CrawlLayout.for_start_url(seaweed_bucket, "crawls", srv.site.start_url)
    storage = CrawlStorage(layout, "run-1", S3Sink(hook, layout, "run-1"),
                           S3StateStore(hook, seaweed_bucket, "state/killed/"),
                           S3StateStore(hook, seaweed_bucket, "memory/killed/"))
    assert storage.sink.outages.wait == OUTAGE_WAIT >= 300
    config = CrawlConfig(srv.site.start_url, delay=0.0, max_requests=150, checkpoint_every_pages=4,
                         early_stopping=False)
    op = SBCrawlOperator(task_id="t", start_url=srv.site.start_url, bucket=seaweed_bucket)
    op._crawler, op._storage = Crawler(config, storage.sink, storage.store), storage
    outcome: list[BaseException | object] = []

    def crawl() -> None:
        try:
            outcome.append(op._crawler.run())
        except BaseException as exc:
            outcome.append(exc)

    worker = threading.Thread(target=crawl, daemon=True)
    try:
        worker.start()
        while len(srv.log) < 25 and worker.is_alive():
            time.sleep(0.002)
        relay.cut()
        assert relay.turned_away.wait(60), "the crawl never knocked on S3 while it was away"
        # The crawl's thread waits for S3 and sends nothing; requests already sent may still be on their way
        # through the proxy and reach the server after the kill.
        sent_before = op._crawler.downloader.in_flight
        op.on_kill()
        seen = len(srv.log)
        worker.join(60)  # far below the 300 s the wait would otherwise last
        assert not worker.is_alive(), "the crawl kept waiting for S3 after on_kill"
    finally:
        relay.close()
    (result,) = outcome
    assert isinstance(result, SinkError) and "stopped while S3 was unreachable" in str(result), result
    assert len(srv.log) - seen <= sent_before, "requests were sent after on_kill"


def _keys(client, bucket: str, prefix: str) -> list[str]:
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
    return [obj["Key"] for page in pages for obj in page.get("Contents", [])]
