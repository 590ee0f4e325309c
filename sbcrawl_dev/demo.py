"""The README's main job on embedded defaults: crawl a simulated statistics site with Airflow into S3.

``python -m sbcrawl_dev demo`` (what ``scripts/demo.sh`` runs):

1. ``prepare_airflow``  — an AIRFLOW_HOME on SQLite under ``./var/demo/airflow`` (``airflow db migrate``).
2. ``start_services``   — SeaweedFS (S3) on free 127.0.0.1 ports and the site simulator (profile ``small``).
3. ``configure``        — a providers' list naming the simulated site, the S3 connection and the crawl
                          options, all through the environment the example DAGs read (nothing hard-coded).
4. ``run_provider_dag`` — the provider DAG generated from ``dags/sbcrawl_providers.py``, run end to end with
                          ``dag.test()`` (a real task run: retries, XCom, the manifest Asset event).
5. ``report``           — where the targets landed (bucket, prefix, count, a few keys) and the summary.
6. ``run_ingest_dag``   — ``dags/sbcrawl_ingest.py``, which the crawl's manifest Asset event queued: tables
                          detected in the crawled files (Parquet + index on S3), then loaded into Iceberg
                          through SeaweedFS's REST catalog (the connection is the pyiceberg properties).
7. ``show_lake``        — DuckDB over the Iceberg tables: a few tables with title and shape, one observation.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
PROVIDER_ID = "statsdemo"
CONN_ID = "sbcrawl_demo_s3"
LAKE_CONN_ID = "sbcrawl_demo_lake"
NAMESPACE = "sbcrawl_demo"
INGEST_DAG_ID = "sbcrawl_ingest"
BUCKET = "sbcrawl-demo"
PREFIX = "crawls"


@dataclass
class DemoContext:
    workdir: Path
    profile: str = "small"
    seed: int = 0
    max_requests: int = 300
    started: float = field(default_factory=time.monotonic)
    seaweed: Any = None
    sim: Any = None
    summary: dict[str, Any] = field(default_factory=dict)
    ingest: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def dag_id(self) -> str:
        return f"sbcrawl_{PROVIDER_ID}"


def _step(ctx: DemoContext, name: str, began: float) -> None:
    ctx.timings[name] = round(time.monotonic() - began, 1)
    print(f"  … {name} done in {ctx.timings[name]} s", flush=True)


def prepare_airflow(ctx: DemoContext) -> None:
    """Point Airflow at ``workdir/airflow`` (before Airflow is imported: it reads its config once)."""
    began = time.monotonic()
    home = ctx.workdir / "airflow"
    home.mkdir(parents=True, exist_ok=True)
    os.environ.update({
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home}/airflow.db",
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
        "AIRFLOW__CORE__PARALLELISM": "4",
        "AIRFLOW__LOGGING__LOGGING_LEVEL": os.environ.get("SBCRAWL_DEMO_LOG_LEVEL", "WARNING"),
    })
    if "airflow" in sys.modules:
        raise RuntimeError("Airflow was imported before the demo set AIRFLOW_HOME; run the demo in its own process")
    print(f"[1/7] Airflow home {home} (SQLite): airflow db migrate", flush=True)
    airflow = Path(sys.executable).with_name("airflow")
    proc = subprocess.run([str(airflow), "db", "migrate"], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"airflow db migrate failed:\n{proc.stderr[-2000:]}")
    _step(ctx, "airflow db migrate", began)


def start_services(ctx: DemoContext) -> None:
    from sbcrawl_dev.infra import SeaweedFS
    from sbcrawl_dev.sim import SimServer, build_site

    began = time.monotonic()
    print("[2/7] starting SeaweedFS (S3) and a simulated statistics site", flush=True)
    sw_dir = ctx.workdir / "sw"  # short: weed's Unix sockets live inside it
    shutil.rmtree(sw_dir, ignore_errors=True)  # a fresh bucket, so the counts below are this run's
    ctx.seaweed = SeaweedFS(sw_dir).start()
    ctx.seaweed.boto3_client().create_bucket(Bucket=BUCKET)
    site = build_site(ctx.profile, ctx.seed)
    ctx.sim = SimServer(site).start()
    print(f"      S3 {ctx.seaweed.s3_endpoint}, site {site.start_url} (profile {ctx.profile}, seed {ctx.seed}) "
          f"via proxy {ctx.sim.proxy_url}", flush=True)
    _step(ctx, "services", began)


def configure(ctx: DemoContext) -> None:
    """Everything the example DAGs read, as a deployment would set it (see airflow_sbcrawl/settings.py)."""
    print("[3/7] configuring the provider DAG through the environment", flush=True)
    providers = ctx.workdir / "providers.yaml"
    providers.write_text(json.dumps({"providers": [{  # JSON is YAML
        "id": PROVIDER_ID, "name": "Simulated statistics office", "start_url": ctx.sim.site.start_url,
        "schedule": None, "max_requests": ctx.max_requests,
    }]}, indent=2))
    from airflow_sbcrawl.hooks.lake import catalog_connection

    os.environ.update({
        **ctx.seaweed.airflow_env(CONN_ID),
        # The Iceberg catalog: a connection whose extra is the pyiceberg properties (AWS S3 Tables shape).
        f"AIRFLOW_CONN_{LAKE_CONN_ID.upper()}": catalog_connection(ctx.seaweed.pyiceberg_properties(),
                                                                   namespace=NAMESPACE),
        "SBCRAWL_LAKE_CONN_ID": LAKE_CONN_ID,
        "SBCRAWL_PROVIDERS_FILE": str(providers),
        "SBCRAWL_BUCKET": BUCKET,
        "SBCRAWL_PREFIX": PREFIX,
        "SBCRAWL_AWS_CONN_ID": CONN_ID,
        # A local simulator needs no politeness delay; a real site keeps the engine's default (1 s).
        "SBCRAWL_CRAWL_OPTIONS": json.dumps({"delay": 0}),
        "SBCRAWL_RETRY_DELAY_S": "0",
        # The simulated hosts are reached through the simulator acting as an HTTP proxy; S3 directly.
        "HTTP_PROXY": ctx.sim.proxy_url, "http_proxy": ctx.sim.proxy_url,
        "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
    })


def run_provider_dag(ctx: DemoContext) -> None:
    began = time.monotonic()
    print(f"[4/7] running DAG {ctx.dag_id} with dag.test()", flush=True)
    from airflow.dag_processing.dagbag import DagBag
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    bag = DagBag(dag_folder=str(REPO / "dags" / "sbcrawl_providers.py"))
    if ctx.dag_id not in bag.dags:
        raise RuntimeError(f"{ctx.dag_id} not generated; import errors: {bag.import_errors}")
    dag = bag.dags[ctx.dag_id]
    _switch_on_ingestion()
    dag_run = dag.test()
    with create_session() as session:
        row = session.query(XComModel).filter_by(dag_id=ctx.dag_id, run_id=dag_run.run_id, task_id="crawl",
                                                 key="return_value").one_or_none()
        ctx.summary = XComModel.deserialize_value(row) if row is not None else {}
    if str(dag_run.state) != "success" or not ctx.summary:
        raise RuntimeError(f"DAG run {dag_run.run_id} ended {dag_run.state}; set SBCRAWL_DEMO_LOG_LEVEL=INFO "
                           "to see the task log")
    _step(ctx, "provider DAG", began)


def _switch_on_ingestion() -> None:
    """Write the DAGs to the metadata database and switch the ingestion DAG on, as a user would in the UI:
    the Asset manager only queues runs of DAGs that are not paused, and new DAGs start paused."""
    from airflow.dag_processing.bundles.manager import DagBundlesManager
    from airflow.dag_processing.dagbag import DagBag, sync_bag_to_db
    from airflow.models.dag import DagModel
    from airflow.utils.session import create_session

    DagBundlesManager().sync_bundles_to_db()
    bag = DagBag(dag_folder=str(REPO / "dags"))
    if INGEST_DAG_ID not in bag.dags:
        raise RuntimeError(f"{INGEST_DAG_ID} not found; import errors: {bag.import_errors}")
    sync_bag_to_db(bag, "dags-folder", None)
    with create_session() as session:
        session.query(DagModel).filter_by(dag_id=INGEST_DAG_ID).update({"is_paused": False})


def report(ctx: DemoContext) -> None:
    s = ctx.summary
    client = ctx.seaweed.boto3_client()
    keys: list[str] = []
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=s["objects_prefix"]):
        keys.extend(o["Key"] for o in page.get("Contents", []))
    site_targets = len(ctx.sim.site.targets)
    print("[5/7] where the targets landed", flush=True)
    print(f"      bucket       s3://{BUCKET}  (endpoint {ctx.seaweed.s3_endpoint})")
    print(f"      prefix       {s['objects_prefix']}")
    print(f"      objects      {len(keys)} distinct files for {s['targets']} targets "
          f"(the site has {site_targets} targets, {ctx.sim.site.url_count} URLs)")
    for key in keys[:3]:
        print(f"                   s3://{BUCKET}/{key}")
    print(f"      manifest     {len(s['manifest_keys'])} objects, e.g. s3://{BUCKET}/{s['manifest_keys'][-1]}"
          if s["manifest_keys"] else "      manifest     (none)")
    print(f"      Asset        {s['manifest_uri']}")
    print(f"      summary      {s['pages']} pages, {s['requests']} requests ({s['head_requests']} HEAD), "
          f"{s['bytes'] / 1e6:.1f} MB, stop: {s['stop_reason']}; crawl {s['elapsed_s']} s, CPU {s['cpu_s']} s")
    print(f"      server saw   {len(ctx.sim.log)} requests")


def run_ingest_dag(ctx: DemoContext) -> None:
    """Play the scheduler's part: the crawl's Asset event queued the ingestion DAG; run it with dag.test(),
    handing it the event's data as conf (dag.test() makes manual runs, which carry no triggering events)."""
    began = time.monotonic()
    from airflow.dag_processing.dagbag import DagBag
    from airflow.models.asset import AssetDagRunQueue, AssetEvent, AssetModel
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    uri = ctx.summary["manifest_uri"]
    with create_session() as session:
        asset = session.query(AssetModel).filter_by(uri=uri).one()
        event = session.query(AssetEvent).filter_by(asset_id=asset.id).order_by(AssetEvent.id.desc()).first()
        queued = sorted(q.target_dag_id for q in session.query(AssetDagRunQueue).filter_by(asset_id=asset.id))
        extra = dict(event.extra)
    print(f"[6/7] Asset event on {uri} queued {queued or 'nothing'}; running {INGEST_DAG_ID} with dag.test()",
          flush=True)
    bag = DagBag(dag_folder=str(REPO / "dags" / "sbcrawl_ingest.py"))
    dag_run = bag.dags[INGEST_DAG_ID].test(run_conf={"crawls": [extra]})
    with create_session() as session:
        for task_id in ("detect_tables", "load_to_lake"):
            row = session.query(XComModel).filter_by(dag_id=INGEST_DAG_ID, run_id=dag_run.run_id, task_id=task_id,
                                                     key="return_value").one_or_none()
            ctx.ingest[task_id] = XComModel.deserialize_value(row) if row is not None else {}
    if str(dag_run.state) != "success":
        raise RuntimeError(f"{INGEST_DAG_ID} run {dag_run.run_id} ended {dag_run.state}; set "
                           "SBCRAWL_DEMO_LOG_LEVEL=INFO to see the task logs")
    d, loaded = ctx.ingest["detect_tables"], ctx.ingest["load_to_lake"]
    run = d["crawls"][0]
    print(f"      detect       {d['files']} files -> {d['tables']} tables, {d['observations']} observations; "
          f"{d['errors']} unreadable parts {d['errors_by_reason'] or ''}")
    print(f"      tables on S3 s3://{run['bucket']}/{run['tables_prefix']}  (tables.jsonl + tables/*.parquet)")
    print(f"      lake         {loaded['tables']} tables, {loaded['observations']} observations from "
          f"{loaded['sources']} files into Iceberg namespace {loaded['namespace']!r} "
          f"(catalog {ctx.seaweed.catalog_uri})")
    _step(ctx, "ingestion DAG", began)


def show_lake(ctx: DemoContext) -> None:
    began = time.monotonic()
    from airflow_sbcrawl.lake import CatalogConfig, query, series

    config = CatalogConfig.from_seaweed(ctx.seaweed, namespace=NAMESPACE)
    print("[7/7] the lake: DuckDB over the Iceberg tables `tables` and `observations`", flush=True)
    tables = query(config, """
        SELECT title, n_rows, n_cols, n_observations, sheet, source_url FROM tables
        ORDER BY source_url, table_index LIMIT 3""").to_pylist()
    for t in tables:
        where = t["source_url"] + (f" [{t['sheet']}]" if t["sheet"] else "")
        print(f"      table        {t['title'][:70]!r}: {t['n_rows']} x {t['n_cols']}, "
              f"{t['n_observations']} observations, {where}")
    obs = query(config, """
        SELECT t.title, o.row_labels, o.column_path, o.raw_value, o.value, o.status, t.source_url
        FROM observations o JOIN tables t USING (table_id)
        WHERE o.status = 'ok' ORDER BY t.source_url, o."row", o.col LIMIT 1""").to_pylist()
    for o in obs:
        print(f"      observation  {' / '.join(o['row_labels'])} x {' / '.join(o['column_path'])} = {o['raw_value']} "
              f"(value {o['value']}, {o['status']}) in {o['title'][:60]!r}")
        # the same row as a series, selected by its labels (docs/tables.md): one value per column
        rows = series(config, o["row_labels"])
        shown = ", ".join(f"{' / '.join(r['column_path'])} {r['raw_value']}" for r in rows[:4])
        print(f"      series       labels {list(o['row_labels'])}: {len(rows)} values ({shown}, ...)")
    keys = query(config, """
        SELECT count(*) AS shared FROM (SELECT 1 FROM observations GROUP BY table_id, row_labels, column_path
                                        HAVING count(*) > 1)""").to_pylist()[0]
    print(f"      keys         {keys['shared']} keys (row labels + column path) shared by two observations")
    counts = query(config, "SELECT (SELECT count(*) FROM tables) AS t, (SELECT count(*) FROM observations) AS o")
    c = counts.to_pylist()[0]
    print(f"      totals       {c['t']} rows in tables, {c['o']} rows in observations")
    _step(ctx, "lake query", began)
    print("      step times   " + ", ".join(f"{k} {v} s" for k, v in ctx.timings.items()))
    print(f"total wall time {time.monotonic() - ctx.started:.1f} s")


def stop_services(ctx: DemoContext) -> None:
    if ctx.sim is not None:
        ctx.sim.stop()
    if ctx.seaweed is not None:
        ctx.seaweed.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sbcrawl_dev demo", description=__doc__.split("\n")[0])
    parser.add_argument("--workdir", default="var/demo", help="where Airflow's home and SeaweedFS's data go")
    parser.add_argument("--profile", default="small", help="simulated site profile (tiny, small, deep, ...)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-requests", type=int, default=300,
                        help="request budget of the crawl (the ingestion after it takes ~0.3 s per file found)")
    args = parser.parse_args(argv)
    ctx = DemoContext(Path(args.workdir).resolve(), args.profile, args.seed, args.max_requests)
    ctx.workdir.mkdir(parents=True, exist_ok=True)
    try:
        prepare_airflow(ctx)
        start_services(ctx)
        configure(ctx)
        run_provider_dag(ctx)
        report(ctx)
        run_ingest_dag(ctx)
        show_lake(ctx)
    finally:
        stop_services(ctx)
    return 0

