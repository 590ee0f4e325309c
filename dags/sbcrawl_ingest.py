"""Lake ingestion: every finished crawl flows into Iceberg by itself (detect tables -> load).

Scheduled on the crawl's Assets: the manifest Asset of each provider DAG of the providers' list
(``s3://<bucket>/<prefix>/<site>/manifest``, known when this file is parsed) OR the ``sbcrawl-manifests``
alias that ad-hoc and mapped crawls emit through. Any one of them updated starts a run; the run's
triggering Asset events name the crawl runs (bucket, site, run id, manifest keys) and DetectTablesOperator
reads them from there.

A run can also be started by hand (or from a test) with the same data as ``conf``:
``{"crawls": [<SBCrawlOperator return value or manifest event extra>, ...]}``.

Settings (parse time, as for the crawl DAGs; see airflow_sbcrawl/settings.py): bucket, prefix, aws_conn_id,
retries (the DAG's ``default_args``), providers_file, and lake_conn_id (default ``sbcrawl_lake``: the Iceberg
catalog connection, see hooks/lake.py), lake_namespace (default: the connection's ``namespace`` extra, else
``sbcrawl``).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from airflow.sdk import DAG, Asset, AssetAlias, AssetAny

from airflow_sbcrawl.hooks.layout import S3CrawlLayout
from airflow_sbcrawl.operators.crawl import MANIFEST_ALIAS
from airflow_sbcrawl.operators.lake import LoadToLakeOperator
from airflow_sbcrawl.operators.tables import DetectTablesOperator
from airflow_sbcrawl.settings import CrawlSettings, load_providers

settings = CrawlSettings.from_env(dags_folder=Path(__file__).parent)
# The same URIs SBCrawlOperator gives its outlet in dags/sbcrawl_providers.py (one per site).
manifests = {S3CrawlLayout.for_start_url(settings.bucket, settings.prefix, p.start_url).manifest_uri()
             for p in load_providers(settings.providers_file)}

with DAG(
    dag_id="sbcrawl_ingest",
    description="Tables in crawled files -> Parquet on S3 -> Iceberg, after every crawl",
    schedule=AssetAny(*(Asset(uri) for uri in sorted(manifests)), AssetAlias(MANIFEST_ALIAS)),
    start_date=datetime(2025, 1, 1),
    catchup=False,
    # One run at a time: two runs committing to the same Iceberg tables would race (optimistic commits);
    # events arriving meanwhile are queued and picked up by the next run.
    max_active_runs=1,
    render_template_as_native_obj=True,  # conf's list of crawls stays a list (None when not given)
    tags=["sbcrawl", "lake"],
    default_args=settings.default_args,  # the connection and retries (the tasks take no bucket or prefix)
) as dag:
    detect = DetectTablesOperator(
        task_id="detect_tables",
        crawls="{{ dag_run.conf.get('crawls') if dag_run.conf else None }}",
    )
    LoadToLakeOperator(
        task_id="load_to_lake",
        detected=detect.output,
        catalog_conn_id=settings.lake_conn_id,
        namespace=settings.lake_namespace,
    )
