"""The explainable crawl report on a tiny simulated crawl."""

from __future__ import annotations

import subprocess
import sys

import pytest

from airflow_sbcrawl.crawler import state as ckpt
from airflow_sbcrawl.report import write_report
from sbcrawl_dev.bench.runner import CrawlSpec, make_crawler, proxied
from sbcrawl_dev.bench.truth import site_truth
from sbcrawl_dev.sim import SimServer, build_site


def _crawl(tmp_path, policy: str):
    site = build_site("tiny", 0)
    truth = site_truth(site)
    with SimServer(site) as server, proxied(server):
        crawler = make_crawler(site, truth, CrawlSpec("tiny", 0, policy, 0, 0, 400), str(tmp_path))
        summary = crawler.run()
    return site, crawler, summary


def test_report_of_a_tiny_crawl_has_its_sections_and_pictures(tmp_path):
    site, crawler, summary = _crawl(tmp_path, "sb-classifier")
    path = write_report(crawler, summary, tmp_path, truth=site.kind)
    text = path.read_text()
    for heading in ("## Overview", "## Why the crawl stopped", "## Harvest",
                    "## Where the targets were: top tag-path groups by mean reward", "## URL classifier"):
        assert heading in text
    assert summary.stop_reason in text
    assert "against the truth" in text and "| Target |" in text
    assert f"{summary.actions:,} actions in all" in text
    assert "http://" in text.split("top tag-path groups")[1]  # example links
    for png in ("report-harvest.png", "report-groups.png"):
        assert f"]({png})" in text
        assert (tmp_path / png).read_bytes()[:4] == b"\x89PNG"


def test_report_without_truth_judges_the_classifier_on_get_outcomes(tmp_path):
    _, crawler, summary = _crawl(tmp_path, "sb-classifier")
    text = write_report(crawler, summary, tmp_path / "r").read_text()
    assert "against what the GET found" in text


def test_report_of_a_policy_without_groups_says_so(tmp_path):
    _, crawler, summary = _crawl(tmp_path, "bfs")
    text = write_report(crawler, summary, tmp_path / "r").read_text()
    assert "does not group links by tag path" in text
    assert "does not classify links" in text


class Killed(Exception):
    pass


def test_report_after_resumes_tells_one_history(sim_server, sim_proxy_env, tmp_path, checkpoints_by_pages):
    """A crawl killed between two checkpoints and resumed twice: the report's totals, its harvest curve and
    its history agree."""
    from airflow_sbcrawl.crawler import CrawlConfig, Crawler, LocalSink, LocalStateStore

    srv = sim_server("tiny")
    sim_proxy_env(srv)

    def run(max_requests: int, resume: bool, kill_at: int = 0):
        config = CrawlConfig(srv.site.start_url, delay=0.0, checkpoint_every_pages=4, max_requests=max_requests)

        def kill(progress) -> None:  # as a SIGKILL would: before the page's checkpoint, none at the end
            if kill_at and progress.requests >= kill_at:
                raise Killed

        crawler = Crawler(config, LocalSink(tmp_path), LocalStateStore(tmp_path / "state"), on_progress=kill,
                          progress_every=0.0)
        return crawler, crawler.run(resume=resume)

    with pytest.raises(Killed):
        run(200, resume=False, kill_at=60)
    # The segment after the last checkpoint is "lost"; the budget journal holds what it spent (a request the
    # kill cut before it reached the server included).
    spent = ckpt.BudgetJournal.last_totals(LocalStateStore(tmp_path / "state"))[0]
    run(90, resume=True)
    crawler, summary = run(120, resume=True)
    assert [r["from_checkpoint"] is not None for r in crawler.run_state.resumes] == [True, True]
    lost = crawler.run_state.resumes[0]
    assert lost["lost_requests"] > 0 and lost["at_page"] is not None
    # The curve joins the lost segment's end (the requests the killed run spent) and never goes back.
    # (the server saw them all but the ones the kill cut on their way: at most the 8 in flight)
    assert summary.requests == 120 and 120 - 8 <= len(srv.log) <= 120
    assert spent >= 60 and spent in crawler.run_state.harvest_requests
    assert list(crawler.run_state.harvest_requests) == sorted(crawler.run_state.harvest_requests)
    assert list(crawler.run_state.harvest_targets) == sorted(crawler.run_state.harvest_targets)
    assert crawler.run_state.harvest_targets[-1] <= summary.targets
    text = write_report(crawler, summary, tmp_path / "r").read_text()
    assert "The crawl was resumed 2 times" in text
    assert f"{lost['lost_requests']:,} requests and" in text


def test_matplotlib_is_imported_only_when_a_report_is_drawn():
    code = ("import sys, airflow_sbcrawl.cli, airflow_sbcrawl.crawler, airflow_sbcrawl.report; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'matplotlib'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
