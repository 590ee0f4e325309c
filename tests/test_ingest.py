"""Crawl -> tables -> Iceberg with real parts: the simulator over HTTP, SeaweedFS (S3 + Iceberg REST catalog),
Airflow's dag.test() on SQLite, the DAGs of dags/ as a deployment parses them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LAKE_CONN_ID = "sbcrawl_test_lake"
PROVIDER = "simstats"


def _providers(tmp_path: Path, *entries: dict) -> Path:
    path = tmp_path / "providers.yaml"
    path.write_text(json.dumps({"providers": list(entries)}))  # JSON is YAML
    return path


def _bag(monkeypatch, **env: str):
    from airflow.dag_processing.dagbag import DagBag

    for key, value in env.items():
        monkeypatch.setenv(key, value)
    bag = DagBag(dag_folder=str(REPO / "dags"))
    assert bag.import_errors == {}
    return bag


# -- no infrastructure -------------------------------------------------------------------------------------
def test_ingest_dag_is_scheduled_on_every_provider_manifest_and_the_alias(tmp_path, monkeypatch):
    from airflow.sdk import Asset, AssetAlias, AssetAny

    providers = _providers(
        tmp_path,
        {"id": "one", "start_url": "https://www.one.example/", "schedule": None},
        {"id": "two", "start_url": "http://stats.two.example:8080/en/", "schedule": "@daily"},
    )
    bag = _bag(monkeypatch, SBCRAWL_PROVIDERS_FILE=str(providers), SBCRAWL_BUCKET="raw", SBCRAWL_PREFIX="web")
    ingest = bag.dags["sbcrawl_ingest"]
    condition = ingest.timetable.asset_condition
    assert isinstance(condition, AssetAny)  # any one crawl finishing starts a run, not all of them
    # exactly the Assets the provider DAGs' crawl tasks emit, plus the alias of templated/mapped crawls
    crawl_outlets = {o.uri for d in ("sbcrawl_one", "sbcrawl_two") for o in bag.dags[d].get_task("crawl").outlets}
    assert crawl_outlets == {"s3://raw/web/one.example/manifest", "s3://raw/web/stats.two.example_8080/manifest"}
    assert {o.uri for o in condition.objects if isinstance(o, Asset)} == crawl_outlets
    assert [o.name for o in condition.objects if isinstance(o, AssetAlias)] == ["sbcrawl-manifests"]
    assert [t.task_id for t in ingest.topological_sort()] == ["detect_tables", "load_to_lake"]
    assert ingest.max_active_runs == 1


def test_crawl_references_from_event_extra_and_from_return_value_agree():
    from airflow_sbcrawl.hooks.layout import CrawlRef
    from airflow_sbcrawl.operators.tables import parse_crawls

    extra = {"run_id": "r1", "site": "stats.example", "bucket": "b", "manifest_keys": ["k/1.jsonl"],
             "objects_prefix": "crawls/x/stats.example/objects/", "targets": 3}
    returned = {"run_id": "r1", "site": "stats.example", "bucket": "b", "manifest_keys": ["k/1.jsonl"],
                "prefix": "crawls/x"}
    (a,), (b,) = parse_crawls(extra), parse_crawls(json.dumps([returned, returned]))
    assert a == b == CrawlRef("b", "crawls/x", "stats.example", "r1", ("k/1.jsonl",))
    assert a.tables_prefix == "crawls/x/stats.example/tables/r1/"
    with pytest.raises(ValueError, match="manifest_keys"):
        parse_crawls({"run_id": "r", "site": "s", "bucket": "b", "prefix": ""})


def test_batches_never_split_a_source_file():
    from airflow_sbcrawl.operators.lake import batches

    recs = [{"provenance": {"sha256": s}, "n_observations": n} for s, n in
            [("a", 60), ("b", 30), ("a", 50), ("c", 10), ("d", 200)]]
    out = list(batches(recs, 100))
    assert [[r["provenance"]["sha256"] for r in b] for b in out] == [["a", "a"], ["b", "c"], ["d"]]


# -- end to end -----------------------------------------------------------------------------------------------
@pytest.fixture
def deployment(tmp_path, monkeypatch, sim_server, sim_proxy_env, seaweed, seaweed_bucket, airflow_s3_conn,
               lake_config, airflow_db):
    """A tiny simulated provider in the providers' list, S3 and catalog connections, all through the
    environment the DAG files read (as the demo and a deployment set it)."""
    from airflow_sbcrawl.hooks.lake import catalog_connection

    srv = sim_server("tiny", seed=0)
    sim_proxy_env(srv)
    providers = _providers(tmp_path, {"id": PROVIDER, "start_url": srv.site.start_url, "schedule": None,
                                      "max_requests": 400})
    env = {
        "SBCRAWL_PROVIDERS_FILE": str(providers), "SBCRAWL_BUCKET": seaweed_bucket, "SBCRAWL_PREFIX": "crawls",
        "SBCRAWL_AWS_CONN_ID": airflow_s3_conn, "SBCRAWL_RETRY_DELAY_S": "0", "SBCRAWL_RETRIES": "0",
        "SBCRAWL_CRAWL_OPTIONS": json.dumps({"delay": 0, "es_window": 100, "es_patience": 3, "es_decay": 0.5}),
        "SBCRAWL_LAKE_CONN_ID": LAKE_CONN_ID,
        f"AIRFLOW_CONN_{LAKE_CONN_ID.upper()}": catalog_connection(seaweed.pyiceberg_properties(),
                                                                   namespace=lake_config.namespace),
        "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
    }
    return srv, _bag(monkeypatch, **env)


@pytest.fixture
def openlineage_events(tmp_path, monkeypatch):
    """OpenLineage events of the tasks run in this test, through the provider's file transport:
    ``events() -> {task_id: (inputs, outputs)}`` of each task's last COMPLETE event, datasets as
    ``(namespace, name)``. The provider reads its configuration once and registers its listener when the
    plugins load (not at all when no transport is configured, as in the rest of the suite), so the caches are
    cleared and a listener is registered for the test's duration."""
    from airflow.listeners.listener import get_listener_manager as core_listeners
    from airflow.providers.openlineage import conf as ol_conf
    from airflow.providers.openlineage.plugins import listener as ol_listener
    from airflow.sdk.listener import get_listener_manager as task_listeners

    def reset() -> None:
        for fn in vars(ol_conf).values():
            if hasattr(fn, "cache_clear"):
                fn.cache_clear()
        ol_listener._get_process_adapter.cache_clear()

    path = tmp_path / "openlineage.jsonl"
    monkeypatch.setenv("AIRFLOW__OPENLINEAGE__TRANSPORT",
                       json.dumps({"type": "file", "log_file_path": str(path), "append": True}))
    reset()
    listener = ol_listener.OpenLineageListener()
    managers = [core_listeners(), task_listeners()]
    for manager in managers:
        manager.add_listener(listener)

    def events() -> dict[str, tuple[list, list]]:
        out = {}
        for line in path.read_text().splitlines() if path.exists() else []:
            event = json.loads(line)
            if event["eventType"] == "COMPLETE" and "." in event["job"]["name"]:
                out[event["job"]["name"].rsplit(".", 1)[1]] = tuple(
                    [(d["namespace"], d["name"]) for d in event.get(kind, [])] for kind in ("inputs", "outputs"))
        return out

    yield events
    for manager in managers:
        manager.pm.unregister(listener)
    monkeypatch.delenv("AIRFLOW__OPENLINEAGE__TRANSPORT")
    reset()


def _unpause(bag, dag_id: str) -> None:
    """Write the DAGs to the metadata database and switch ``dag_id`` on, as a user does in the UI: the
    scheduler (and the Asset manager that queues runs for it) ignores paused DAGs, and new DAGs start paused."""
    from airflow.dag_processing.bundles.manager import DagBundlesManager
    from airflow.dag_processing.dagbag import sync_bag_to_db
    from airflow.models.dag import DagModel
    from airflow.utils.session import create_session

    DagBundlesManager().sync_bundles_to_db()
    sync_bag_to_db(bag, "dags-folder", None)
    with create_session() as session:
        assert session.query(DagModel).filter_by(dag_id=dag_id).update({"is_paused": False}) == 1


def _counts(config) -> dict[str, int]:
    from airflow_sbcrawl.lake import query

    sql = """SELECT (SELECT count(*) FROM tables) AS tables, (SELECT count(DISTINCT table_id) FROM tables)
                    AS table_ids, (SELECT count(*) FROM observations) AS observations,
                    (SELECT count(*) FROM (SELECT DISTINCT table_id, "row", col FROM observations)) AS cells"""
    return query(config, sql).to_pylist()[0]


@pytest.mark.slow
def test_crawl_flows_into_the_lake_and_a_reload_changes_nothing(deployment, seaweed, seaweed_bucket, lake_config,
                                                                openlineage_events):
    from airflow.models.asset import AssetDagRunQueue, AssetEvent, AssetModel
    from airflow.utils.session import create_session

    from airflow_sbcrawl.lake import query
    from tests.plugins.airflow import DagResult

    srv, bag = deployment
    _unpause(bag, "sbcrawl_ingest")
    # 1. the provider's crawl DAG, as its schedule would run it
    crawl = DagResult(bag.dags[f"sbcrawl_{PROVIDER}"].test())
    assert crawl.state == "success"
    summary = crawl.xcom("crawl")
    assert summary["targets"] > 0

    # 2. the crawl's Asset event, and the ingestion DAG queued on it: what the scheduler turns into a run
    uri = f"s3://{seaweed_bucket}/crawls/{summary['site']}/manifest"
    with create_session() as session:
        asset = session.query(AssetModel).filter_by(uri=uri).one()
        event = session.query(AssetEvent).filter_by(asset_id=asset.id).order_by(AssetEvent.id.desc()).first()
        queued = {q.target_dag_id for q in session.query(AssetDagRunQueue).filter_by(asset_id=asset.id)}
        extra = dict(event.extra)
    assert "sbcrawl_ingest" in queued
    assert extra["run_id"] == summary["run_id"] and extra["manifest_keys"] == summary["manifest_keys"]

    # 3. the ingestion run with the triggering event's data (dag.test() makes manual runs, so the event's
    #    extra goes in as conf, the path a hand-triggered run takes too)
    ingest = bag.dags["sbcrawl_ingest"]
    first = DagResult(ingest.test(run_conf={"crawls": [extra]}))
    assert first.state == "success"
    detected, loaded = first.xcom("detect_tables"), first.xcom("load_to_lake")
    assert detected["files"] > 0 and detected["tables"] > 0 and detected["files_reused"] == 0
    assert loaded["tables"] == detected["tables"] and loaded["observations"] == detected["observations"]
    before = _counts(lake_config)
    assert before["tables"] == before["table_ids"] == detected["tables"]
    assert before["observations"] == before["cells"] == detected["observations"]
    keys = [o["Key"] for p in seaweed.boto3_client().get_paginator("list_objects_v2").paginate(
        Bucket=seaweed_bucket, Prefix=detected["crawls"][0]["tables_prefix"]) for o in p.get("Contents", [])]
    assert sum(k.endswith(".parquet") for k in keys) == detected["tables"]
    # OpenLineage: site -> S3 objects -> Parquet tables -> Iceberg tables, as each task's COMPLETE event says
    lineage, s3 = openlineage_events(), f"s3://{seaweed_bucket}"
    objects = (s3, f"crawls/{summary['site']}/objects")
    tables_prefix = (s3, detected["crawls"][0]["tables_prefix"].rstrip("/"))
    assert lineage["crawl"][0] == [("http://www.stats.example", "/")]
    assert objects in lineage["crawl"][1] and len(lineage["crawl"][1]) == 2  # and the run's manifest folder
    assert lineage["detect_tables"] == ([objects], [tables_prefix])
    catalog = seaweed.pyiceberg_properties()["uri"]
    assert lineage["load_to_lake"] == ([tables_prefix], [(catalog, f"{lake_config.namespace}.tables"),
                                                         (catalog, f"{lake_config.namespace}.observations")])

    # 4. the same crawl run again: files reused, not re-read; rows replaced, not added
    second = DagResult(ingest.test(run_conf={"crawls": [extra]}))
    assert second.state == "success"
    again, reloaded = second.xcom("detect_tables"), second.xcom("load_to_lake")
    assert again["files_reused"] == again["files"] == detected["files"]
    assert (again["tables"], again["observations"]) == (detected["tables"], detected["observations"])
    assert reloaded["replaced_tables"] == loaded["tables"]
    assert reloaded["replaced_observations"] == loaded["observations"]
    after = _counts(lake_config)
    assert after == before

    # 5. a number the simulator published in a CSV, found in the lake by the file's sha256 and its labels
    rows = [json.loads(line) for key in summary["manifest_keys"] for line in seaweed.boto3_client().get_object(
        Bucket=seaweed_bucket, Key=key)["Body"].read().decode().splitlines() if line]
    csv = next(r for r in sorted(rows, key=lambda r: r["url"]) if r["mime"].startswith("text/csv"))
    table = srv.site.table(csv["final_url"])
    row_label, column = table.rows[1][0], table.header[3]
    expected = table.value(row_label, column)
    found = query(lake_config, """
        SELECT o.value, o.raw_value, t.title, t.source_url FROM observations o JOIN tables t USING (table_id)
        WHERE o.source_sha256 = $sha AND list_contains(o.row_labels, $row) AND list_contains(o.column_path, $col)
    """, {"sha": csv["sha256"], "row": row_label, "col": column}).to_pylist()
    assert [f["value"] for f in found] == [expected], found
    print(f"\ningest: {detected['files']} files, {detected['tables']} tables, {detected['observations']} "
          f"observations, errors {detected['errors_by_reason']}; lake before reload {before}, after {after}; "
          f"{csv['url']} [{row_label!r}, {column!r}] = {expected} in CSV, lake: {found[0]}")


def test_an_asset_triggered_run_reads_its_crawls_from_the_triggering_events():
    """The path a scheduler-made run takes (no conf): ``triggering_asset_events`` as the Task SDK builds it.
    An event emitted through the ``sbcrawl-manifests`` alias is listed under the alias and its Asset, and
    must be processed once; another producer's event on the same Asset (no manifest keys) is ignored."""
    from datetime import UTC, datetime

    from airflow.sdk.api.datamodels._generated import (
        AssetAliasReferenceAssetEventDagRun,
        AssetReferenceAssetEventDagRun,
    )
    from airflow.sdk.execution_time.comms import AssetEventDagRunReferenceResult
    from airflow.sdk.execution_time.context import TriggeringAssetEventsAccessor

    from airflow_sbcrawl.hooks.layout import CrawlRef
    from airflow_sbcrawl.operators.tables import crawls_from_context

    def event(uri, extra, aliases=()):
        return AssetEventDagRunReferenceResult(
            asset=AssetReferenceAssetEventDagRun(name=uri, uri=uri, extra={}), extra=extra, source_task_id="crawl",
            source_dag_id="d", source_run_id="r", source_map_index=-1, timestamp=datetime.now(UTC),
            source_aliases=[AssetAliasReferenceAssetEventDagRun(name=a) for a in aliases])

    a = {"run_id": "ra", "site": "a.example", "bucket": "b", "manifest_keys": ["x"],
         "objects_prefix": "crawls/a.example/objects/"}
    c = {**a, "run_id": "rc", "site": "c.example", "objects_prefix": "crawls/c.example/objects/"}
    events = TriggeringAssetEventsAccessor.build([
        event("s3://b/crawls/a.example/manifest", a),
        event("s3://b/crawls/c.example/manifest", c, aliases=["sbcrawl-manifests"]),
        event("s3://b/crawls/a.example/manifest", {"note": "someone else's event"}),
    ])
    refs = crawls_from_context({"triggering_asset_events": events})
    assert sorted(r.run_id for r in refs) == ["ra", "rc"]
    assert CrawlRef("b", "crawls", "c.example", "rc", ("x",)) in refs
