"""A crawl of any site, triggered from the Airflow UI with validated Params.

The trigger form (``airflow_sbcrawl.params.crawl_params``) asks for a start URL (required, empty,
the providers' start URLs offered as suggestions), the request and download budgets with their bounds, the
kinds of files to collect (CSV, spreadsheets, PDF, JSON, XML/SDMX, archives, …, each mapped to its MIME
types) and the strategy (SB-CLASSIFIER or breadth-first). The operator validates again before any request
(Params can be bypassed through the API with ``conf``), and refuses non-public start addresses.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from airflow.sdk import DAG

from airflow_sbcrawl.operators.crawl import SBCrawlOperator
from airflow_sbcrawl.params import crawl_params, mime_types_for
from airflow_sbcrawl.settings import CrawlSettings, load_providers

settings = CrawlSettings.from_env(dags_folder=Path(__file__).parent)

with DAG(
    dag_id="sbcrawl_adhoc",
    description="Crawl one website for data files, with the budget and targets chosen in the trigger form",
    schedule=None,
    start_date=datetime(2025, 1, 1),
    catchup=False,
    tags=["sbcrawl"],
    render_template_as_native_obj=True,  # budgets stay ints and the MIME list a list
    user_defined_macros={"mime_types_for": mime_types_for},
    params=crawl_params(p.start_url for p in load_providers(settings.providers_file)),
    default_args=settings.default_args,  # bucket, prefix, connection, retries
) as dag:
    SBCrawlOperator(
        task_id="crawl",
        start_url="{{ params.start_url }}",
        max_requests="{{ params.max_requests }}",
        max_bytes="{{ params.max_megabytes * 1024 * 1024 }}",
        target_mime_types="{{ mime_types_for(params.target_families) }}",
        policy="{{ params.policy }}",
        # Refuses start URLs on non-public addresses again (Params can be bypassed with conf), and a public
        # name resolving to one is refused when connecting.
        crawl_options={**settings.crawl_options, "allow_private_start": False,
                       "target_hosts": "{{ params.target_hosts }}"},
    )
