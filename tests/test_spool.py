"""The answers since the last checkpoint: a crawl killed between two checkpoints resumes without asking the
site again for what it was told (``crawler.spool``)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from airflow_sbcrawl.crawler import CrawlConfig, Crawler, LocalSink, LocalStateStore
from airflow_sbcrawl.crawler.fetch import Response
from airflow_sbcrawl.crawler.spool import ResponseSpool

PAGE = "http://site.example/a"
CONDITIONS = {"If-None-Match": '"v1"'}


def _page(body: bytes = b"<html>\x00\xff</html>", status: int = 200) -> Response:
    return Response(url=PAGE, method="GET", status=status, headers={"content-type": "text/html"},
                    mime="text/html", kind="html" if status == 200 else "unchanged", body=body, size=len(body))


def test_an_answer_comes_back_once_to_the_same_request_after_a_resume(tmp_path):
    spool = ResponseSpool(tmp_path)
    spool.begin(3)
    spool.record("GET", PAGE, CONDITIONS, _page(status=304))
    spool.record("GET", PAGE, None, _page())
    spool.close()

    resumed = ResponseSpool(tmp_path)
    assert resumed.resume(3) == 2
    assert resumed.take("GET", PAGE, {"If-None-Match": '"v2"'}) is None  # other validators: another question
    assert resumed.take("HEAD", PAGE, None) is None
    answer = resumed.take("GET", PAGE, None)
    assert answer is not None and (answer.status, answer.kind, answer.body) == (200, "html", b"<html>\x00\xff</html>")
    assert resumed.take("GET", PAGE, None) is None  # once
    assert resumed.take("GET", PAGE, dict(CONDITIONS)).status == 304
    assert resumed.replayed == 2


def test_targets_and_failures_without_an_answer_are_not_kept(tmp_path):
    spool = ResponseSpool(tmp_path)
    spool.begin(0)
    target = Response(url="http://site.example/t.csv", method="GET", status=200, kind="target",
                      path=tmp_path / "part")
    spool.record("GET", target.url, None, target)
    spool.record("GET", PAGE, None, Response(url=PAGE, method="GET", error="network: reset"))
    spool.close()
    assert ResponseSpool(tmp_path).resume(0) == 0


@pytest.mark.parametrize("tail", [
    b'{"key": "cut by the kill", "sta',  # a header torn
    b'{"key":"k","url":"u","method":"GET","status":200,"headers":{},"mime":"","kind":"html","sha256":"",'
    b'"size":9,"error":"","body":9}\n<html>',  # a body torn
    b'{"key": "x", "status": "not a number", "body": 0}\n\n',  # not one of ours
])
def test_a_torn_or_foreign_record_ends_the_reading_and_the_answers_before_it_stay(tmp_path, tail):
    spool = ResponseSpool(tmp_path)
    spool.begin(1)
    spool.record("GET", PAGE, None, _page())
    spool.close()
    (segment,) = tmp_path.iterdir()
    with segment.open("ab") as f:
        f.write(tail)
    resumed = ResponseSpool(tmp_path)
    assert resumed.resume(1) == 1
    assert resumed.take("GET", PAGE, None).body == _page().body


def test_a_resume_from_an_older_checkpoint_replays_the_later_segments_too(tmp_path):
    spool = ResponseSpool(tmp_path)
    spool.begin(1)
    spool.record("GET", "http://site.example/1", None, _page())
    spool.begin(2, keep_from=1)  # checkpoint 2 written; 1 still stored
    spool.record("GET", "http://site.example/2", None, _page())
    spool.close()

    resumed = ResponseSpool(tmp_path)  # checkpoint 2 was lost: the crawl goes on from 1
    assert resumed.resume(1) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["spool-00000001.bin"]
    assert resumed.take("GET", "http://site.example/1", None) is not None
    # Checkpoint 3 is written before the resumed crawl asked for page 2: its answer is kept on for it.
    resumed.begin(3, keep_from=3)
    resumed.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["spool-00000003.bin"]
    again = ResponseSpool(tmp_path)
    assert again.resume(3) == 1
    assert again.take("GET", "http://site.example/2", None) is not None


def test_a_fresh_start_drops_every_answer(tmp_path):
    spool = ResponseSpool(tmp_path)
    for seq in (0, 4):
        spool.begin(seq, keep_from=0)
        spool.record("GET", PAGE, None, _page())
    assert len(list(tmp_path.iterdir())) == 2
    spool.begin(0)
    spool.close()
    assert list(tmp_path.iterdir()) == []
    assert ResponseSpool(tmp_path).resume(0) == 0


# -- a real crawl, killed and resumed ----------------------------------------------------------------------
SETTINGS = {"delay": 0, "checkpoint_every_pages": 10, "concurrency": 1, "seed": 3, "max_requests": 5000,
            "early_stopping": False}


def _crawler(site, out: Path) -> Crawler:
    return Crawler(CrawlConfig(site.start_url, **SETTINGS), LocalSink(out), LocalStateStore(out / "state"),
                   progress_every=0.0)


def _manifest(out: Path) -> Counter:
    return Counter(json.loads(line)["url"] for line in (out / "manifest.jsonl").read_text().splitlines())


def test_a_crawl_killed_between_checkpoints_asks_the_site_nothing_twice(sim_server, sim_proxy_env, tmp_path,
                                                                         checkpoints_by_pages):
    srv = sim_server("tiny")
    sim_proxy_env(srv)
    _crawler(srv.site, tmp_path / "clean").run()

    out = tmp_path / "killed"
    srv.reset_log()
    killed = _crawler(srv.site, out)
    killed.on_progress = lambda p: killed.request_stop("killed") if p.pages >= 38 else None
    killed.run()
    asked_before = Counter((e.method, e.url) for e in srv.log)
    # As after a SIGKILL: the checkpoint the stop wrote is lost, the crawl goes on from page 30's (8 pages back).
    store = LocalStateStore(out / "state")
    store.delete(store.checkpoints()[-1])
    srv.reset_log()
    resumed = _crawler(srv.site, out)
    summary = resumed.run(resume=True)

    asked_again = [(e.method, e.url) for e in srv.log if (e.method, e.url) in asked_before]
    assert summary.resumed_from is not None and resumed.spool.replayed >= 5
    # Only the request the stop aborted may be asked again (one at a time).
    assert len(asked_again) <= 1, asked_again
    assert _manifest(out) == _manifest(tmp_path / "clean")


def test_a_run_that_ended_by_itself_leaves_no_answers_behind(tmp_path):
    spool = ResponseSpool(tmp_path / "spool")
    spool.begin(0)
    spool.record("GET", PAGE, None, _page())
    spool.discard()
    assert not (tmp_path / "spool").exists()
