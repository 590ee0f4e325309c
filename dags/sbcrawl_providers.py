"""One Airflow DAG per statistics provider of the providers' list (dags/providers.yaml by default).

Each DAG runs one SBCrawlOperator; its manifest Asset (s3://<bucket>/<prefix>/<site>/manifest) is what
ingestion DAGs schedule on. Bucket, prefix, connection, retries and global crawl options come from the
``[sbcrawl]`` settings (see airflow_sbcrawl.settings; the first four as the DAGs' ``default_args``), so
the same file serves production and a local simulator.
The list is ``providers.yaml`` next to this file unless configured. A bad entry gets no DAG, and
``sbcrawl_providers_check.py`` reports it as an import error; the other entries' DAGs are unaffected.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from airflow.sdk import DAG

from airflow_sbcrawl.operators.crawl import SBCrawlOperator
from airflow_sbcrawl.settings import CrawlSettings, load_providers

settings = CrawlSettings.from_env(dags_folder=Path(__file__).parent)

for provider in load_providers(settings.providers_file):
    with DAG(
        dag_id=f"sbcrawl_{provider.id}",
        description=f"Budgeted crawl of {provider.name or provider.start_url} for data files",
        schedule=provider.schedule,
        start_date=datetime(2025, 1, 1),
        catchup=False,
        max_active_runs=1,  # two runs of one site would share its politeness budget and fight over it
        tags=["sbcrawl", "statistics-provider"],
        default_args=settings.default_args,
    ) as dag:
        SBCrawlOperator(
            task_id="crawl",
            start_url=provider.start_url,
            max_requests=provider.max_requests,
            max_bytes=provider.max_bytes,
            target_mime_types=list(provider.target_mime_types) if provider.target_mime_types else None,
            crawl_options={**settings.crawl_options, **provider.options()},
        )
    globals()[dag.dag_id] = dag
