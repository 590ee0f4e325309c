"""The example DAGs in dags/: they import, generate one DAG per provider, validate Params, and the mapped
DAG crawls three simulated sites in parallel into S3."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _bag(monkeypatch, providers_file: Path | None = None, **env: str):
    from airflow.dag_processing.dagbag import DagBag

    if providers_file is not None:
        monkeypatch.setenv("SBCRAWL_PROVIDERS_FILE", str(providers_file))
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    bag = DagBag(dag_folder=str(REPO / "dags"))
    assert bag.import_errors == {}
    return bag


def test_one_dag_per_provider_with_its_manifest_asset(monkeypatch):
    from airflow_sbcrawl.operators.settings import load_providers

    bag = _bag(monkeypatch, SBCRAWL_BUCKET="lake-raw", SBCRAWL_PREFIX="web")
    providers = load_providers(REPO / "dags" / "providers.yaml")
    assert {f"sbcrawl_{p.id}" for p in providers} <= set(bag.dag_ids)
    insee = bag.dags["sbcrawl_insee"]
    assert [o.uri for o in insee.get_task("crawl").outlets] == ["s3://lake-raw/web/insee.fr/manifest"]
    assert {"sbcrawl_adhoc", "sbcrawl_many_sites"} <= set(bag.dag_ids)


def test_bad_provider_entry_is_a_clear_import_error(tmp_path):
    from airflow_sbcrawl.crawler import ConfigError
    from airflow_sbcrawl.operators.settings import load_providers

    bad = tmp_path / "p.yaml"
    bad.write_text(json.dumps({"providers": [{"id": "x", "start_url": "https://x.example/", "max_requests": 0}]}))
    with pytest.raises(ConfigError, match="provider 'x': max_requests"):
        load_providers(bad)


def test_ui_params_are_validated(monkeypatch):
    from airflow.sdk.definitions.param import ParamsDict

    dag = _bag(monkeypatch).dags["sbcrawl_adhoc"]
    params: ParamsDict = dag.params
    params.validate()  # the defaults are valid
    for key, bad in [("start_url", "ftp://x"), ("max_requests", 0), ("max_requests", 10**9),
                     ("target_mime_types", ["image/png"]), ("target_mime_types", [])]:
        with pytest.raises(Exception, match=key):
            ParamsDict({**{k: params.get_param(k) for k in params}, key: params.get_param(key).__class__(
                bad, **params.get_param(key).schema)}).validate()
    assert "examples" in params.get_param("target_mime_types").schema  # rendered as a multi-select


@pytest.mark.slow
def test_mapped_dag_crawls_three_sites(sim_server, sim_proxy_env, airflow_s3_conn, seaweed, seaweed_bucket,
                                       airflow_db, monkeypatch):
    """dags/sbcrawl_many_sites.py over three hosts of one simulated portal (through one HTTP proxy): the
    main site, its data catalogue and its publications host, each its own mapped task and S3 folder."""
    srv = sim_server("tiny", seed=0)
    sim_proxy_env(srv)
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.setenv(name, "127.0.0.1,localhost")
    options = {"delay": 0, "es_window": 100, "es_patience": 3, "es_decay": 0.5}
    bag = _bag(monkeypatch, SBCRAWL_BUCKET=seaweed_bucket, SBCRAWL_PREFIX="many", SBCRAWL_AWS_CONN_ID=airflow_s3_conn,
               SBCRAWL_CRAWL_OPTIONS=json.dumps(options), SBCRAWL_RETRY_DELAY_S="0")
    dag = bag.dags["sbcrawl_many_sites"]
    urls = ["http://www.stats.example/", "http://data.stats.example/", "http://pub.stats.example/publications"]
    dag_run = dag.test(run_conf={"start_urls": urls, "max_requests": 300})

    from tests.plugins.airflow import DagResult

    result = DagResult(dag_run)
    assert result.state == "success"
    tis = result.task_instances("crawl")
    assert [ti.map_index for ti in tis] == [0, 1, 2]
    client = seaweed.boto3_client()
    total_requests = 0
    lines = []
    for ti in tis:
        summary = result.xcom("crawl", ti.map_index)
        site = summary["site"]
        keys = [o["Key"] for p in client.get_paginator("list_objects_v2").paginate(
            Bucket=seaweed_bucket, Prefix=f"many/{site}/objects/") for o in p.get("Contents", [])]
        assert summary["targets"] > 0 and len(keys) > 0
        assert len(keys) <= summary["targets"]  # content-addressed: equal files stored once
        assert summary["requests"] <= 300
        total_requests += summary["requests"]
        lines.append(f"{site}: {summary['targets']} targets, {summary['requests']} requests, {len(keys)} objects, "
                     f"{len(summary['manifest_keys'])} manifest objects, stop: {summary['stop_reason']}")
    sites = [result.xcom("crawl", i)["site"] for i in range(3)]
    assert sites == ["stats.example", "data.stats.example", "pub.stats.example"]
    # every request the three crawls counted reached the simulator, and nothing else did
    assert total_requests == len(srv.log)
    # the data catalogue crawl stays on its host: all its targets are there
    data_rows = result.xcom("crawl", 1)["targets"]
    assert data_rows >= sum(1 for url in srv.site.targets if url.startswith("http://data.stats.example/"))
    listing = sorted({k.split("/")[1] + "/" + k.split("/")[2] for p in client.get_paginator("list_objects_v2")
                      .paginate(Bucket=seaweed_bucket) for k in (o["Key"] for o in p.get("Contents", []))})
    assert listing == sorted(f"{s}/{part}" for s in sites for part in ("memory", "objects", "runs", "state"))
    print("\nmapped DAG:\n  " + "\n  ".join(lines) + f"\n  S3 listing: {listing}; simulator saw {len(srv.log)}")
