"""SBCrawlOperator with real parts: SeaweedFS as S3, the site simulator over HTTP, Airflow's dag.test() on
SQLite with real retries."""

from __future__ import annotations

import collections
import json
from datetime import datetime, timedelta

import pytest

from airflow_sbcrawl.crawler import ConfigError

pytestmark = pytest.mark.slow

# Settings that make the tiny simulated site finish on its own (early stopping once every target is in,
# instead of wandering its calendar trap until the budget is spent): the crawl's end then does not depend
# on how many requests a crash wasted, which is what lets an interrupted run be compared with a clean one.
TINY = {"delay": 0, "checkpoint_every_pages": 25, "es_window": 100, "es_patience": 3, "es_decay": 0.5}


@pytest.fixture
def crawl_env(sim_server, sim_proxy_env, airflow_s3_conn, monkeypatch):
    """A started tiny simulated site reached through HTTP_PROXY, S3 reached directly (NO_PROXY)."""
    srv = sim_server("tiny", seed=0)
    sim_proxy_env(srv)
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.setenv(name, "127.0.0.1,localhost")
    return srv


def _dag(dag_id: str):
    from airflow.sdk import DAG

    return DAG(dag_id, schedule=None, start_date=datetime(2025, 1, 1), catchup=False)


def _keys(seaweed, bucket: str, prefix: str) -> list[str]:
    client = seaweed.boto3_client()
    keys: list[str] = []
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        keys.extend(o["Key"] for o in page.get("Contents", []))
    return keys


def _rows(seaweed, bucket: str, keys: list[str]) -> list[dict]:
    client = seaweed.boto3_client()
    rows: list[dict] = []
    for key in keys:
        body = client.get_object(Bucket=bucket, Key=key)["Body"].read().decode()
        rows.extend(json.loads(line) for line in body.splitlines() if line)
    return rows


# -- validation, no Airflow run needed ---------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"start_url": "ftp://stats.example/"}, "start_url"),
        ({"start_url": "not a url"}, "start_url"),
        ({"max_requests": 0}, "max_requests"),
        ({"max_requests": "zero"}, "max_requests"),
        ({"crawl_options": {"no_such_knob": 1}}, "no_such_knob"),
        ({"target_mime_types": ["csv"]}, "target_mime_types"),
    ],
)
def test_bad_settings_are_refused_with_the_setting_named(kwargs, message):
    from airflow_sbcrawl.operators.crawl import SBCrawlOperator

    args = {"task_id": "t", "start_url": "http://www.stats.example/", "bucket": "b", **kwargs}
    with pytest.raises(ConfigError, match=message):
        SBCrawlOperator(**args).build_config()


def test_engine_defaults_and_templated_strings():
    from airflow_sbcrawl.crawler import CrawlConfig
    from airflow_sbcrawl.operators.crawl import SBCrawlOperator

    op = SBCrawlOperator(task_id="t", start_url="http://www.stats.example/", bucket="b")
    assert op.build_config() == CrawlConfig(start_url="http://www.stats.example/")
    op = SBCrawlOperator(task_id="t", start_url="http://www.stats.example/", bucket="b", max_requests="150",
                         target_mime_types="text/csv, application/zip", crawl_options={"theta": 0.5})
    config = op.build_config()
    assert (config.max_requests, config.target_mime_types, config.theta) == (150, ("text/csv", "application/zip"), 0.5)
    # the manifest Asset is concrete when its URI is known at parse time, an alias when templated
    assert [o.uri for o in op.outlets] == ["s3://b/sbcrawl/stats.example/manifest"]
    templated = SBCrawlOperator(task_id="t", start_url="{{ params.url }}", bucket="b")
    assert [type(o).__name__ for o in templated.outlets] == ["AssetAlias"]


# -- real runs ------------------------------------------------------------------------------------------
def test_bad_input_fails_before_any_request(crawl_env, seaweed, seaweed_bucket, airflow_s3_conn, run_dag):
    from airflow_sbcrawl.operators.crawl import SBCrawlOperator

    srv = crawl_env
    url = srv.site.start_url
    # small budget, no delay: should a check fail to stop a task, the test fails fast rather than crawl long
    small = {"crawl_options": TINY, "max_requests": 20}
    with _dag("sbcrawl_test_bad_input") as dag:
        SBCrawlOperator(task_id="missing_conn", start_url=url, bucket=seaweed_bucket, aws_conn_id="no_such_conn",
                        **small)
        SBCrawlOperator(task_id="missing_bucket", start_url=url, bucket=seaweed_bucket + "-absent",
                        aws_conn_id=airflow_s3_conn, **small)
        SBCrawlOperator(task_id="zero_budget", start_url=url, bucket=seaweed_bucket, aws_conn_id=airflow_s3_conn,
                        crawl_options=TINY, max_requests=0)
        SBCrawlOperator(task_id="bad_url", start_url="http:///nohost", bucket=seaweed_bucket,
                        aws_conn_id=airflow_s3_conn, **small)
    result = run_dag(dag)
    for task_id in ("missing_conn", "missing_bucket", "zero_budget", "bad_url"):
        (ti,) = result.task_instances(task_id)
        assert str(ti.state) == "failed", task_id
    assert srv.log == []  # not one request reached the site
    assert _keys(seaweed, seaweed_bucket, "") == []
    assert seaweed_bucket + "-absent" not in {b["Name"] for b in seaweed.boto3_client().list_buckets()["Buckets"]}


def _links(dag_run, task_id: str) -> dict[str, str]:
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        rows = session.query(XComModel).filter(XComModel.dag_id == dag_run.dag_id, XComModel.run_id == dag_run.run_id,
                                               XComModel.task_id == task_id, XComModel.key.like("_link_%")).all()
        return {row.key: XComModel.deserialize_value(row) for row in rows}


def test_retry_resumes_and_matches_an_uninterrupted_run(crawl_env, seaweed, seaweed_bucket, airflow_s3_conn,
                                                        run_dag, monkeypatch):
    """The first try of ``crashy`` dies after 80 pages (an exception from the documented progress hook);
    Airflow retries it; the second try resumes from the last checkpoint. Its objects and manifest rows must
    equal those of ``clean``, an uninterrupted crawl of the same site and seed: no target lost, none twice."""
    from airflow_sbcrawl.operators.crawl import SBCrawlOperator

    monkeypatch.setenv("AIRFLOW__SBCRAWL__OBJECT_URL_TEMPLATE", "http://s3ui/{bucket}/{key}")
    crashes: list[int] = []

    def crash_once(progress, context):
        # 80 pages: past three checkpoints and before a crawl of the tiny site may stop early (at 150, some
        # crawls had stopped first and the task was never retried).
        if context["ti"].try_number == 1 and progress.pages >= 80:
            crashes.append(progress.pages)
            raise RuntimeError(f"injected crash after {progress.pages} pages")

    # One request at a time: the two crawls must stop at the same point for their rows to be compared, and
    # with 8 in flight the order in which answers arrive moved the early stop under load (6 rows apart)
    common = {"start_url": crawl_env.site.start_url, "bucket": seaweed_bucket, "aws_conn_id": airflow_s3_conn,
              "max_requests": 5000, "crawl_options": {**TINY, "concurrency": 1}, "retries": 1,
              "retry_delay": timedelta(0)}
    with _dag("sbcrawl_test_retry") as dag:
        SBCrawlOperator(task_id="clean", prefix="clean", **common)
        SBCrawlOperator(task_id="crashy", prefix="crashy", progress_callback=crash_once, **common)
    result = run_dag(dag)
    assert result.state == "success"

    clean, crashy = result.xcom("clean"), result.xcom("crashy")
    (clean_ti,), (crashy_ti,) = result.task_instances("clean"), result.task_instances("crashy")
    assert clean_ti.try_number == 1 and crashy_ti.try_number == 2
    assert len(crashes) == 1 and crashy["try_number"] == 2
    assert crashy["resumed_from"] is not None, "the second try started over instead of resuming"
    # Both stop early, after their last dataset (not for lack of budget).
    for summary in (clean, crashy):
        assert summary["stop_reason"].startswith("early stopping: no new target"), summary["stop_reason"]

    def objects(prefix):
        return sorted(k.rsplit("/", 1)[1] for k in _keys(seaweed, seaweed_bucket, f"{prefix}/stats.example/objects/"))

    clean_rows = _rows(seaweed, seaweed_bucket, clean["manifest_keys"])
    crashy_rows = _rows(seaweed, seaweed_bucket, crashy["manifest_keys"])

    def identity(rows):
        return collections.Counter((r["url"], r["final_url"], r["sha256"], r["mime"], r["size"]) for r in rows)

    # nothing twice: one manifest row per URL, and each object stored once (content-addressed keys)
    assert max(collections.Counter(r["url"] for r in crashy_rows).values()) == 1
    assert identity(crashy_rows) == identity(clean_rows)
    assert objects("crashy") == objects("clean") == sorted({r["sha256"] for r in clean_rows})
    # every target of the site was found, and the manifest agrees with the bucket
    assert {r["url"] for r in clean_rows} >= set(crawl_env.site.targets)
    assert clean["targets"] == len(clean_rows) and crashy["targets"] == len(crashy_rows)
    # the explainable crawl report sits next to the run's manifests
    assert clean["report_key"].endswith("/report.md")
    assert clean["report_key"] in _keys(seaweed, seaweed_bucket, "clean/")
    # and the task's extra links (computed when the task finished) point at it and at the manifest folder
    links = _links(result.dag_run, "clean")
    assert clean["s3_endpoint"] == seaweed.s3_endpoint.rstrip("/")  # what links use without a template
    assert links["_link_CrawlReportLink"] == f"http://s3ui/{seaweed_bucket}/{clean['report_key']}"
    assert links["_link_CrawlManifestLink"] == (f"http://s3ui/{seaweed_bucket}/"
                                                f"{clean['manifest_keys'][0].rsplit('/', 1)[0]}/")
    print(f"\nretry test: crash after {crashes[0]} pages, resumed from checkpoint {crashy['resumed_from']}; "
          f"clean {len(clean_rows)} rows / {len(objects('clean'))} objects / {clean['requests']} requests, "
          f"resumed {len(crashy_rows)} rows / {len(objects('crashy'))} objects / {crashy['requests']} requests")
