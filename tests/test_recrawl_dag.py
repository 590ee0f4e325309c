"""Scheduled recrawls in Airflow with real parts: the provider DAG of dags/ run twice against the simulator
at epochs 0 and 1 (SeaweedFS as S3, dag.test() on SQLite), then its crawl task cleared and run again."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime

import pytest

from tests.test_ingest import LAKE_CONN_ID, PROVIDER, _bag, _providers
from tests.test_recrawl import CHANGING

pytestmark = pytest.mark.slow


def _event_extra(uri: str) -> dict:
    from airflow.models.asset import AssetEvent, AssetModel
    from airflow.utils.session import create_session

    with create_session() as session:
        asset = session.query(AssetModel).filter_by(uri=uri).one()
        event = session.query(AssetEvent).filter_by(asset_id=asset.id).order_by(AssetEvent.id.desc()).first()
        return dict(event.extra)


def _keys(seaweed, bucket: str, prefix: str) -> list[str]:
    pages = seaweed.boto3_client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
    return [o["Key"] for p in pages for o in p.get("Contents", [])]


def test_second_scheduled_run_is_incremental_and_a_cleared_task_recrawls(
        tmp_path, monkeypatch, sim_server, sim_proxy_env, seaweed, seaweed_bucket, airflow_s3_conn, lake_config,
        airflow_db):
    from airflow_sbcrawl.hooks.lake import catalog_connection
    from sbcrawl_dev.sim import build_site
    from tests.plugins.airflow import DagResult

    first_site = sim_server(build_site(CHANGING, epoch=0))
    sim_proxy_env(first_site)
    providers = _providers(tmp_path, {"id": PROVIDER, "start_url": first_site.site.start_url, "schedule": None,
                                      "max_requests": 500})
    bag = _bag(monkeypatch, SBCRAWL_PROVIDERS_FILE=str(providers), SBCRAWL_BUCKET=seaweed_bucket,
               SBCRAWL_PREFIX="crawls", SBCRAWL_AWS_CONN_ID=airflow_s3_conn, SBCRAWL_RETRY_DELAY_S="0",
               SBCRAWL_RETRIES="0", SBCRAWL_CRAWL_OPTIONS=json.dumps({"delay": 0, "early_stopping": False}),
               SBCRAWL_LAKE_CONN_ID=LAKE_CONN_ID, NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost",
               **{f"AIRFLOW_CONN_{LAKE_CONN_ID.upper()}": catalog_connection(seaweed.pyiceberg_properties(),
                                                                             namespace=lake_config.namespace)})
    dag = bag.dags[f"sbcrawl_{PROVIDER}"]

    # 1. the first scheduled run: a cold crawl, every dataset new; it leaves the site memory in S3
    first = DagResult(dag.test(logical_date=datetime(2026, 1, 1, tzinfo=UTC)))
    assert first.state == "success"
    one = first.xcom("crawl")
    assert one["warm_from"] == "" and one["changes"]["new"] == one["targets"] > 0
    first_extra = _event_extra(f"s3://{seaweed_bucket}/crawls/{one['site']}/manifest")
    assert DagResult(bag.dags["sbcrawl_ingest"].test(run_conf={"crawls": [first_extra]})).state == "success"
    memory_prefix = f"crawls/{one['site']}/memory/"
    assert any(k.endswith("MANIFEST.json") for k in _keys(seaweed, seaweed_bucket, memory_prefix))

    # 2. a period later the site changed; the next scheduled run starts warm from that memory
    later = sim_server(build_site(CHANGING, epoch=1))
    sim_proxy_env(later)
    for name in ("NO_PROXY", "no_proxy"):  # S3 stays direct
        monkeypatch.setenv(name, "127.0.0.1,localhost")
    truth = Counter(later.site.changes(0).values())
    feb = {"logical_date": datetime(2026, 2, 1, tzinfo=UTC), "run_after": datetime(2026, 2, 1, tzinfo=UTC)}
    second = DagResult(dag.test(**feb))
    assert second.state == "success"
    two = second.xcom("crawl")
    # every known file asked has its row (an unchanged file without validators whose listing row reads as
    # before is settled by that row instead: see below)
    expected = {"new": truth["new"], "changed": truth["changed"], "unchanged": two["changes"]["unchanged"],
                "gone": truth["gone"]}
    assert two["warm_from"] == one["run_id"]
    assert two["changes"] == expected and 0 < expected["unchanged"] <= truth["unchanged"] + truth["moved"]
    extra = _event_extra(f"s3://{seaweed_bucket}/crawls/{two['site']}/manifest")
    assert extra["run_id"] == two["run_id"] and extra["changes"] == expected
    # its run state is cleaned after the success: one checkpoint kept, no journal; the memory stays
    run_state = _keys(seaweed, seaweed_bucket, two["state_prefix"].split(f"s3://{seaweed_bucket}/", 1)[1])
    assert len({k.split("/ckpt-")[1].split("/")[0] for k in run_state if "/ckpt-" in k}) == 1
    assert not [k for k in run_state if k.endswith("/journal")]
    # the warm crawl sent conditional requests and downloaded no unchanged file that has a validator
    assert any(e.status == 304 for e in later.log)

    # 3. ingestion of that run reads only the new and changed files, and reports the gone ones
    ingest = DagResult(bag.dags["sbcrawl_ingest"].test(run_conf={"crawls": [extra]}))
    assert ingest.state == "success"
    detected = ingest.xcom("detect_tables")["crawls"][0]
    rows = [json.loads(line) for key in two["manifest_keys"] for line in seaweed.boto3_client().get_object(
        Bucket=seaweed_bucket, Key=key)["Body"].read().decode().splitlines() if line]
    fresh = {r["sha256"] for r in rows if r["status"] in ("new", "changed")}
    listed = {u for r in rows for u in (r["url"], r["final_url"])}
    by_row = [u for u, st in later.site.changes(0).items() if st == "unchanged" and u not in listed]
    validators = {"ETag", "Last-Modified"}
    assert not [u for u in by_row if validators & set(later.site.response("HEAD", u, count=False).headers)]
    assert len(by_row) <= two["checks"]["vouched"]
    assert detected["files"] == len(fresh)
    assert len(detected["gone_urls"]) == truth["gone"]
    # "what changed since the last run" is one query on the lake (docs/recrawl.md's)
    from airflow_sbcrawl.lake import query

    changed = query(lake_config, f"""
        SELECT source_url, crawl_run FROM tables WHERE site = '{two['site']}'
          AND crawl_run = (SELECT max_by(crawl_run, loaded_at) FROM tables WHERE site = '{two['site']}')""").to_pylist()
    assert len(changed) == detected["tables"] > 0
    assert {r["crawl_run"] for r in changed} == {two["run_id"]}
    fresh_urls = {u for r in rows if r["status"] in ("new", "changed") for u in (r["url"], r["final_url"])}
    assert {r["source_url"] for r in changed} <= fresh_urls
    # gone datasets: their tables (loaded by the first run) are marked, not deleted
    gone = {u for u, st in later.site.changes(0).items() if st == "gone"}
    marked = query(lake_config, f"SELECT source_url FROM tables WHERE site = '{two['site']}' "
                                "AND gone_at IS NOT NULL").to_pylist()
    first_tables = query(lake_config, f"SELECT source_url FROM tables WHERE crawl_run = '{one['run_id']}'").to_pylist()
    assert marked and {r["source_url"] for r in marked} == gone & {r["source_url"] for r in first_tables}
    assert ingest.xcom("load_to_lake")["loads"][0]["marked_gone"] == len(marked)

    # 4. clearing the successful crawl task (dag.test of the same run clears its task instances and runs them
    #    again): a new incremental crawl from the memory the cleared crawl left, under its own run id;
    #    nothing changed on the site since
    later.reset_log()
    again = DagResult(dag.test(**feb))
    assert again.state == "success" and again.dag_run.run_id == second.dag_run.run_id
    three = again.xcom("crawl")
    assert three["run_id"].startswith(two["run_id"] + "__rerun-") and three["warm_from"] == two["run_id"]
    assert three["changes"]["new"] == three["changes"]["changed"] == three["changes"]["gone"] == 0
    assert three["changes"]["unchanged"] > 0 and three["requests"] > 0
    assert _event_extra(f"s3://{seaweed_bucket}/crawls/{two['site']}/manifest")["run_id"] == three["run_id"]
