"""Crawl several sites in parallel: one mapped SBCrawlOperator task instance per start URL.

``.partial().expand()`` is how crawls spread over the workers of a CeleryExecutor or KubernetesExecutor:
each site is its own task instance (own retries, own checkpoint key with its map index, own S3 folder).
The sites come from the trigger's ``start_urls`` (default: every provider of the providers' list).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from airflow.sdk import DAG, AssetAlias, task

from airflow_sbcrawl.operators.crawl import MANIFEST_ALIAS, SBCrawlOperator
from airflow_sbcrawl.operators.params import site_list_params
from airflow_sbcrawl.operators.settings import CrawlSettings, load_providers

settings = CrawlSettings.from_env(dags_folder=Path(__file__).parent)
default_sites = [p.start_url for p in load_providers(settings.providers_file)]

with DAG(
    dag_id="sbcrawl_many_sites",
    description="Crawl many statistics sites in parallel (dynamic task mapping)",
    schedule=None,
    start_date=datetime(2025, 1, 1),
    catchup=False,
    tags=["sbcrawl"],
    params=site_list_params(default_sites),
) as dag:

    @task
    def sites(**context) -> list[str]:
        urls = list(dict.fromkeys(context["params"]["start_urls"]))  # one task per site, not per duplicate
        if not urls:
            raise ValueError("start_urls is empty")
        return urls

    SBCrawlOperator.partial(
        task_id="crawl",
        bucket=settings.bucket,
        prefix=settings.prefix,
        aws_conn_id=settings.aws_conn_id,
        max_requests="{{ params.max_requests }}",
        crawl_options=settings.crawl_options,
        retries=settings.retries,
        retry_delay=settings.retry_delay,
        outlets=[AssetAlias(MANIFEST_ALIAS)],  # each mapped crawl resolves it to its own site's manifest
        map_index_template="{{ task.start_url }}",
    ).expand(start_url=sites())
