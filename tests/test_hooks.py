"""The storage keys and crawl run ids the hooks compute (pure functions: the S3 side runs in test_operator.py,
test_recrawl_dag.py and test_many_sites_dag.py against SeaweedFS)."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace

import pytest


def test_layout_keys_of_one_site():
    from airflow_sbcrawl.hooks.layout import S3CrawlLayout

    layout = S3CrawlLayout.for_start_url("b", "crawls/", "https://www.stats.example:8443/en/data")
    assert layout.site == "stats.example_8443"
    assert layout.object_key("ab12") == "crawls/stats.example_8443/objects/ab12"
    assert layout.manifest_key("dag__manual:2025-01-01T00:00+00:00", 7) == (
        "crawls/stats.example_8443/runs/dag__manual_2025-01-01T00_00_00_00/manifest-000007.jsonl")
    assert layout.state_prefix("dag", "r 1", "crawl", 3) == "crawls/stats.example_8443/state/dag/r_1/crawl/3/"
    assert layout.state_prefix("dag", "r1", "site-001") == "crawls/stats.example_8443/state/dag/r1/site-001/"
    assert layout.memory_prefix() == "crawls/stats.example_8443/memory/"
    assert layout.manifest_uri() == "s3://b/crawls/stats.example_8443/manifest"
    assert layout.tables_prefix("r/1") == "crawls/stats.example_8443/tables/r_1/"
    assert layout.detected_marker_key("v2", "ab12") == "crawls/stats.example_8443/tables/_detected/v2/ab12.json"
    # an empty prefix puts the sites at the bucket's root
    assert S3CrawlLayout.for_start_url("b", "", "http://stats.example/").objects_prefix() == "stats.example/objects/"
    with pytest.raises(ValueError):
        S3CrawlLayout.for_start_url("b", "p", "not a url")


def test_crawl_run_ids_and_state_folders_of_task_instances():
    from airflow_sbcrawl.hooks.layout import S3CrawlLayout
    from airflow_sbcrawl.hooks.runs import CrawlTask

    layout = S3CrawlLayout("b", "p", "s")
    ti = SimpleNamespace(dag_id="d", run_id="r", task_id="crawl", map_index=-1)
    plain = CrawlTask.of(ti)
    assert (plain.crawl_run, plain.state_prefix(layout)) == ("d__r", "p/s/state/d/r/crawl/-1/")
    mapped = CrawlTask.of(SimpleNamespace(dag_id="d", run_id="r", task_id="round_1.crawl", map_index=2))
    assert (mapped.crawl_run, mapped.state_prefix(layout)) == ("d__r__2", "p/s/state/d/r/round_1.crawl/2/")
    # every round of a shared crawl: one run id and one state folder, whatever the task and map index
    for round_ti in (SimpleNamespace(dag_id="d", run_id="r", task_id=f"round_{n}.crawl", map_index=n) for n in (1, 2)):
        shared = CrawlTask.of(round_ti, crawl_key="site-000")
        assert (shared.crawl_run, shared.state_prefix(layout)) == ("d__r__site-000", "p/s/state/d/r/site-000/")
    assert CrawlTask.of(SimpleNamespace(dag_id="d", run_id="r", task_id="t", map_index=None), crawl_key="").crawl_run \
        == "d__r"


def test_rerun_detection_from_the_run_that_left_the_site_memory():
    from airflow_sbcrawl.hooks.runs import CrawlTask, rerun_id

    task = CrawlTask("d", "r", "crawl")
    again = rerun_id(task.crawl_run, datetime(2025, 3, 4, 5, 6, 7, tzinfo=UTC))
    assert again == "d__r__rerun-20250304T050607Z"
    # its own crawl, or a rerun of it, finished: the next try reruns
    assert task.finished("d__r") and task.finished(again)
    # another DAG run's crawl, another map index's, or no memory: resume (or start) this one
    assert not task.finished("d__r2") and not task.finished("d__r__0") and not task.finished(None)
    # a crawl continued under a crawl key always resumes, even when the memory is its own
    shared = CrawlTask("d", "r", "round_2.crawl", 0, crawl_key="site-000")
    assert not shared.finished(shared.crawl_run)


def test_default_args_of_the_dags_come_from_the_settings():
    from datetime import timedelta

    from airflow_sbcrawl.settings import CrawlSettings

    env = {"SBCRAWL_BUCKET": "raw", "SBCRAWL_PREFIX": "", "SBCRAWL_AWS_CONN_ID": "s3", "SBCRAWL_RETRIES": "4",
           "SBCRAWL_RETRY_DELAY_S": "30"}
    settings = CrawlSettings.from_env(env, use_airflow_config=False)
    assert settings.default_args == {"bucket": "raw", "prefix": "", "aws_conn_id": "s3", "retries": 4,
                                     "retry_delay": timedelta(seconds=30)}
