"""A resumed crawl is judged by the early stop as its uninterrupted twin: the targets the lost segment (the
pages after the checkpoint it resumed from) stored count as found when the re-crawl meets them again."""

from __future__ import annotations

import json
from pathlib import Path

from airflow_sbcrawl.crawler import CrawlConfig, Crawler, LocalSink, LocalStateStore

# The operator retry test's settings: one request at a time, so an uninterrupted crawl is deterministic.
TINY = {"delay": 0, "checkpoint_every_pages": 25, "es_window": 100, "es_patience": 3, "es_decay": 0.5,
        "concurrency": 1, "seed": 1, "max_requests": 5000}


class Crash(Exception):
    pass


def _crawler(site, out: Path, crash_at: int | None = None) -> Crawler:
    def crash(progress) -> None:
        if crash_at is not None and progress.pages >= crash_at:
            raise Crash(progress.pages)

    # progress after every page: at the default five times a second an idle machine crawled the pages after
    # the 100th in less than one interval, and the crawl ended before its crash
    return Crawler(CrawlConfig(site.start_url, **TINY), LocalSink(out), LocalStateStore(out / "state"),
                   on_progress=crash, progress_every=0.0)


def _urls(out: Path) -> set[str]:
    return {json.loads(line)["url"] for line in (out / "manifest.jsonl").read_text().splitlines()}


def _page_of_last_target(crawler: Crawler) -> int:
    curve = list(crawler.run_state.harvest_targets)
    return curve.index(curve[-1]) + 1


def test_a_resume_from_an_old_checkpoint_stops_no_sooner_than_its_uninterrupted_twin(
        sim_server, sim_proxy_env, tmp_path, checkpoints_by_pages):
    srv = sim_server("tiny")
    sim_proxy_env(srv)
    clean_crawler = _crawler(srv.site, tmp_path / "clean")
    clean = clean_crawler.run()
    last_target_page = _page_of_last_target(clean_crawler)

    crashy = tmp_path / "crashy"
    try:
        _crawler(srv.site, crashy, crash_at=100).run()
    except Crash:
        pass
    else:
        raise AssertionError("the crawl ended before its injected crash")
    # The kill lost every checkpoint but the first (page 25): the rows of ~70 pages are in the manifest,
    # their pages are to be crawled again.
    store = LocalStateStore(crashy / "state")
    first, *later = store.checkpoints()
    for seq in later:
        store.delete(seq)
    resumed = _crawler(srv.site, crashy).run(resume=True)

    assert resumed.resumed_from == first
    assert clean.stop_reason.startswith("early stopping") and resumed.stop_reason.startswith("early stopping")
    # Counted all at once at page 25, the lost segment's targets read as a rate no crawl of this site has:
    # the resumed crawl ended "no new target in the last 50 pages" at page 76, its twin's last target
    # (the RSS feed) unfound.
    assert resumed.pages >= last_target_page, (resumed.pages, last_target_page, resumed.stop_reason)
    assert _urls(crashy) == _urls(tmp_path / "clean")


def test_a_replayed_target_counts_once_met_by_either_url_and_an_older_checkpoint_restores():
    import numpy as np

    from airflow_sbcrawl.crawler.runstate import RunState

    run = RunState("r", np.random.default_rng(0), targets=3)
    run.replayed("http://s/a.csv", "http://s/files/a.csv")  # a row whose final URL differs
    run.replayed("http://s/b.csv", "http://s/b.csv")
    assert run.targets_met() == 1
    run.remet("http://s/files/a.csv")  # met by its final URL: the row counts once, its other URL is let go
    assert run.targets_met() == 2 and "http://s/a.csv" not in run.replayed_unmet
    run.remet("http://s/a.csv")
    assert run.targets_met() == 2
    # a checkpoint written before the field existed restores, the field empty
    saved = run.state()
    del saved["replayed_unmet"]
    back = RunState("r", np.random.default_rng(0))
    back.restore(saved, run.arrays())
    assert back.replayed_unmet == {} and back.targets == 3 and back.targets_met() == 3
