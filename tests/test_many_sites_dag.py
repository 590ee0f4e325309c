"""dags/sbcrawl_many_sites.py with one request budget for three simulated sites of different richness, run by
Airflow (dag.test() on SQLite, SeaweedFS as S3, the sites behind one simulator proxy that counts requests per
site): the bandit gives the richest site the most, a crawl killed mid-round is retried, and the servers
never see more requests than the budget."""

from __future__ import annotations

import dataclasses
import json

import pytest

from tests.test_dags import _bag

pytestmark = pytest.mark.slow

TOTAL = 360
RICHNESS = {"poor": (1, 1), "modest": (3, 4), "rich": (8, 12)}  # datasets per catalogue section


@pytest.fixture
def three_sites(monkeypatch):
    from sbcrawl_dev.sim.multisite import MultiSiteServer
    from sbcrawl_dev.sim.profiles import get_profile
    from sbcrawl_dev.sim.site import Site

    tiny = get_profile("tiny")
    sites = [Site(dataclasses.replace(tiny, name=f"tiny-{name}", datasets_per_section=per_section), seed=0)
             for name, per_section in RICHNESS.items()]
    srv = MultiSiteServer(sites).start()
    for name in ("HTTP_PROXY", "http_proxy"):
        monkeypatch.setenv(name, srv.proxy_url)
    for name in ("NO_PROXY", "no_proxy"):  # S3 stays direct
        monkeypatch.setenv(name, "127.0.0.1,localhost")
    yield srv
    srv.stop()


def test_shared_budget_goes_to_the_richer_site_and_is_never_exceeded(
        three_sites, seaweed, seaweed_bucket, airflow_s3_conn, airflow_db, monkeypatch):
    from airflow.models.asset import AssetEvent, AssetModel
    from airflow.utils.session import create_session

    from airflow_sbcrawl.operators.crawl import SBCrawlOperator
    from tests.plugins.airflow import DagResult

    srv = three_sites
    poor, modest, rich = srv.start_urls
    # The rich site's crawl of round 2 dies after its first page (an exception from the documented progress
    # hook, as a crash would); Airflow retries it and the retry resumes from the site's checkpoint.
    crashes: list[int] = []
    execute = SBCrawlOperator.execute

    def crash_once(progress, context):
        if context["ti"].try_number == 1 and not crashes:
            crashes.append(progress.requests)
            raise RuntimeError(f"injected crash at {progress.requests} requests")

    def execute_with_crash(self, context):
        if self.task_id == "round_2.crawl" and self.start_url == rich:
            self.progress_callback = crash_once
        return execute(self, context)

    monkeypatch.setattr(SBCrawlOperator, "execute", execute_with_crash)
    # One request at a time: with 40 requests a round, the order in which concurrent responses arrive can
    # swap the yields of the poor and the modest site; this test is about the allocation, not about that.
    bag = _bag(monkeypatch, SBCRAWL_BUCKET=seaweed_bucket, SBCRAWL_PREFIX="shared",
               SBCRAWL_AWS_CONN_ID=airflow_s3_conn, SBCRAWL_CRAWL_OPTIONS=json.dumps({"delay": 0, "concurrency": 1}),
               SBCRAWL_RETRIES="1", SBCRAWL_RETRY_DELAY_S="0")
    dag = bag.dags["sbcrawl_many_sites"]
    result = DagResult(dag.test(run_conf={"start_urls": srv.start_urls, "total_budget": TOTAL, "rounds": 3}))
    assert result.state == "success"
    summary = result.xcom("report")
    sites = summary["sites"]
    served = {url: srv.requests(i) for i, url in enumerate(srv.start_urls)}

    # the budget holds as the servers counted it, and as the crawls did (a crawl's count includes the
    # requests its killed try had recorded in the budget journal but not sent: left unused, never overshot)
    assert sum(served.values()) <= TOTAL
    assert summary["requests"] == sum(row["requests"] for row in sites.values()) <= TOTAL
    for url, row in sites.items():
        assert served[url] <= row["requests"] <= row["caps"][-1]
    assert served[poor] == sites[poor]["requests"] and served[modest] == sites[modest]["requests"]

    # round 1 is an equal warm-up; then the richer the site, the more of the budget it got
    assert len({row["caps"][0] for row in sites.values()}) == 1
    assert summary["rounds"] >= 2
    assert served[rich] > served[modest] > served[poor]
    assert sites[rich]["datasets"] > sites[poor]["datasets"]
    assert len(crashes) == 1
    (crashed,) = [ti for ti in result.task_instances("round_2.crawl") if ti.rendered_map_index == rich]
    assert crashed.try_number == 2 and str(crashed.state) == "success"

    # the round after the last plans nothing, its crawl and the rounds after it are skipped
    last = summary["rounds"]
    assert result.xcom(f"round_{last + 1}.allocate") == []
    assert [str(ti.state) for ti in result.task_instances(f"round_{last + 1}.crawl")] == ["skipped"]
    if last + 2 <= 8:
        assert [str(ti.state) for ti in result.task_instances(f"round_{last + 2}.allocate")] == ["skipped"]
    # the run announces each site's manifest once
    with create_session() as session:
        for url, row in sites.items():
            uri = f"s3://{seaweed_bucket}/shared/{row['site']}/manifest"
            asset = session.query(AssetModel).filter_by(uri=uri).one()
            events = session.query(AssetEvent).filter_by(asset_id=asset.id, source_run_id=result.dag_run.run_id).all()
            assert len(events) == 1 and events[0].extra["targets"] == row["datasets"], url
    print("\nshared budget DAG: " + "; ".join(
        f"{url}: caps {row['caps']}, {served[url]} requests served, {row['datasets']} datasets"
        for url, row in sites.items()))


def test_a_site_whose_crawl_fails_counts_at_its_cap_and_the_others_go_on(
        three_sites, seaweed, seaweed_bucket, airflow_s3_conn, airflow_db, monkeypatch):
    """No retries: the modest site's first crawl dies. Its whole cap counts as spent, it gets nothing more,
    the other two share the rest of the budget, and the run fails at the end naming it."""
    from airflow_sbcrawl.operators.crawl import SBCrawlOperator
    from tests.plugins.airflow import DagResult

    srv = three_sites
    poor, modest, rich = srv.start_urls
    execute = SBCrawlOperator.execute

    def crash(progress, context):
        raise RuntimeError("injected crash")

    def execute_with_crash(self, context):
        if self.start_url == modest:
            self.progress_callback = crash
        return execute(self, context)

    monkeypatch.setattr(SBCrawlOperator, "execute", execute_with_crash)
    bag = _bag(monkeypatch, SBCRAWL_BUCKET=seaweed_bucket, SBCRAWL_PREFIX="failing",
               SBCRAWL_AWS_CONN_ID=airflow_s3_conn, SBCRAWL_CRAWL_OPTIONS=json.dumps({"delay": 0}),
               SBCRAWL_RETRIES="0", SBCRAWL_RETRY_DELAY_S="0")
    total = 240
    result = DagResult(bag.dags["sbcrawl_many_sites"].test(
        run_conf={"start_urls": srv.start_urls, "total_budget": total, "rounds": 2}))
    assert result.state == "failed"
    assert [str(ti.state) for ti in result.task_instances("check")] == ["failed"]
    summary = result.xcom("report")
    assert summary["failed"] == [modest]
    assert summary["caps_per_round"][0] == dict.fromkeys(srv.start_urls, 40)  # half the budget, equal warm-up
    assert modest not in summary["caps_per_round"][1]
    # the others had the rest: the budget less their first round and the failed site's whole cap
    second = summary["caps_per_round"][1]
    assert sum(second[url] - summary["caps_per_round"][0][url] for url in second) == total - 3 * 40
    served = [srv.requests(i) for i in range(3)]
    assert served[1] <= 40 and sum(served) <= total
    assert served[0] + served[2] == summary["sites"][poor]["requests"] + summary["sites"][rich]["requests"]


def test_a_failed_allocation_fails_the_run(seaweed_bucket, airflow_s3_conn, airflow_db, monkeypatch):
    """Skipped rounds are the normal end of a run; a round whose allocation failed must not pass for one."""
    from airflow_sbcrawl.crawler import shared_budget
    from tests.plugins.airflow import DagResult

    def broken(*args, **kwargs):
        raise RuntimeError("injected allocation failure")

    monkeypatch.setattr(shared_budget, "plan_round", broken)  # before the DAG file imports it
    bag = _bag(monkeypatch, SBCRAWL_BUCKET=seaweed_bucket, SBCRAWL_PREFIX="broken",
               SBCRAWL_AWS_CONN_ID=airflow_s3_conn, SBCRAWL_RETRIES="0")
    result = DagResult(bag.dags["sbcrawl_many_sites"].test(
        run_conf={"start_urls": ["http://www.site0.example/"], "total_budget": 10}))
    assert result.state == "failed"
    assert [str(ti.state) for ti in result.task_instances("round_1.allocate")] == ["failed"]
    assert [str(ti.state) for ti in result.task_instances("round_2.allocate")] == ["skipped"]
    assert [str(ti.state) for ti in result.task_instances("check")] == ["upstream_failed"]
