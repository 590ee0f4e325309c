"""The README's main job on embedded defaults: crawl a simulated statistics site with Airflow into S3.

``python -m airflow_sbcrawl.demo`` (what ``scripts/demo.sh`` runs):

1. ``prepare_airflow``  — an AIRFLOW_HOME on SQLite under ``./var/demo/airflow`` (``airflow db migrate``).
2. ``start_services``   — SeaweedFS (S3) on free 127.0.0.1 ports and the site simulator (profile ``small``).
3. ``configure``        — a providers' list naming the simulated site, the S3 connection and the crawl
                          options, all through the environment the example DAGs read (nothing hard-coded).
4. ``run_provider_dag`` — the provider DAG generated from ``dags/sbcrawl_providers.py``, run end to end with
                          ``dag.test()`` (a real task run: retries, XCom, the manifest Asset event).
5. ``report``           — where the targets landed (bucket, prefix, count, a few keys) and the summary.

Later steps (table detection, the Iceberg lake) slot in after step 4 and reuse ``DemoContext``.
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
BUCKET = "sbcrawl-demo"
PREFIX = "crawls"


@dataclass
class DemoContext:
    workdir: Path
    profile: str = "small"
    seed: int = 0
    max_requests: int = 2000
    started: float = field(default_factory=time.monotonic)
    seaweed: Any = None
    sim: Any = None
    summary: dict[str, Any] = field(default_factory=dict)
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
    print(f"[1/5] Airflow home {home} (SQLite): airflow db migrate", flush=True)
    airflow = Path(sys.executable).with_name("airflow")
    proc = subprocess.run([str(airflow), "db", "migrate"], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"airflow db migrate failed:\n{proc.stderr[-2000:]}")
    _step(ctx, "airflow db migrate", began)


def start_services(ctx: DemoContext) -> None:
    from airflow_sbcrawl.infra import SeaweedFS
    from airflow_sbcrawl.sim import SimServer, build_site

    began = time.monotonic()
    print("[2/5] starting SeaweedFS (S3) and a simulated statistics site", flush=True)
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
    """Everything the example DAGs read, as a deployment would set it (see operators/settings.py)."""
    print("[3/5] configuring the provider DAG through the environment", flush=True)
    providers = ctx.workdir / "providers.yaml"
    providers.write_text(json.dumps({"providers": [{  # JSON is YAML
        "id": PROVIDER_ID, "name": "Simulated statistics office", "start_url": ctx.sim.site.start_url,
        "schedule": None, "max_requests": ctx.max_requests,
    }]}, indent=2))
    os.environ.update({
        **ctx.seaweed.airflow_env(CONN_ID),
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
    print(f"[4/5] running DAG {ctx.dag_id} with dag.test()", flush=True)
    from airflow.dag_processing.dagbag import DagBag
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    bag = DagBag(dag_folder=str(REPO / "dags" / "sbcrawl_providers.py"))
    if ctx.dag_id not in bag.dags:
        raise RuntimeError(f"{ctx.dag_id} not generated; import errors: {bag.import_errors}")
    dag = bag.dags[ctx.dag_id]
    dag_run = dag.test()
    with create_session() as session:
        row = session.query(XComModel).filter_by(dag_id=ctx.dag_id, run_id=dag_run.run_id, task_id="crawl",
                                                 key="return_value").one_or_none()
        ctx.summary = XComModel.deserialize_value(row) if row is not None else {}
    if str(dag_run.state) != "success" or not ctx.summary:
        raise RuntimeError(f"DAG run {dag_run.run_id} ended {dag_run.state}; set SBCRAWL_DEMO_LOG_LEVEL=INFO "
                           "to see the task log")
    _step(ctx, "provider DAG", began)


def report(ctx: DemoContext) -> None:
    s = ctx.summary
    client = ctx.seaweed.boto3_client()
    keys: list[str] = []
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=s["objects_prefix"]):
        keys.extend(o["Key"] for o in page.get("Contents", []))
    site_targets = len(ctx.sim.site.targets)
    print("[5/5] where the targets landed", flush=True)
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
    print(f"total wall time {time.monotonic() - ctx.started:.1f} s")


def stop_services(ctx: DemoContext) -> None:
    if ctx.sim is not None:
        ctx.sim.stop()
    if ctx.seaweed is not None:
        ctx.seaweed.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m airflow_sbcrawl.demo", description=__doc__.split("\n")[0])
    parser.add_argument("--workdir", default="var/demo", help="where Airflow's home and SeaweedFS's data go")
    parser.add_argument("--profile", default="small", help="simulated site profile (tiny, small, deep, ...)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-requests", type=int, default=2000)
    args = parser.parse_args(argv)
    ctx = DemoContext(Path(args.workdir).resolve(), args.profile, args.seed, args.max_requests)
    ctx.workdir.mkdir(parents=True, exist_ok=True)
    try:
        prepare_airflow(ctx)
        start_services(ctx)
        configure(ctx)
        run_provider_dag(ctx)
        report(ctx)
    finally:
        stop_services(ctx)
    return 0


if __name__ == "__main__":
    sys.exit(main())
