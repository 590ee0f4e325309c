"""The explainable crawl report on a tiny simulated crawl."""

from __future__ import annotations

from airflow_sbcrawl.bench.runner import CrawlSpec, make_crawler, proxied
from airflow_sbcrawl.bench.truth import site_truth
from airflow_sbcrawl.report import write_report
from airflow_sbcrawl.sim import SimServer, build_site


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
