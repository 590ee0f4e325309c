"""A crawl of any site, triggered from the Airflow UI with validated Params.

The trigger form checks the start URL (http/https), the budgets (bounds) and offers the engine's target
MIME types as a multi-select; the operator validates again before any request (Params can be bypassed
through the API with ``conf``).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from airflow.sdk import DAG, Param

from airflow_sbcrawl.crawler.mimes import TARGET_MIME_TYPES
from airflow_sbcrawl.operators.crawl import SBCrawlOperator
from airflow_sbcrawl.operators.settings import CrawlSettings

settings = CrawlSettings.from_env(dags_folder=Path(__file__).parent)

with DAG(
    dag_id="sbcrawl_adhoc",
    description="Crawl one website for data files, with the budget and targets chosen in the trigger form",
    schedule=None,
    start_date=datetime(2025, 1, 1),
    catchup=False,
    tags=["sbcrawl"],
    render_template_as_native_obj=True,  # budgets stay ints and the MIME list a list
    params={
        "start_url": Param(
            "https://www.example.org/",
            type="string",
            pattern=r"^https?://[^\s/:?#]+(:[0-9]{1,5})?(/[^\s]*)?$",
            title="Start URL",
            description="Page the crawl starts from; its host and subdomains are the crawl's scope.",
        ),
        "max_requests": Param(2000, type="integer", minimum=1, maximum=1_000_000, title="Request budget",
                              description="GET and HEAD requests, robots.txt and retries included."),
        "max_megabytes": Param(1024, type="integer", minimum=1, maximum=1_000_000, title="Byte budget (MB)"),
        "target_mime_types": Param(
            list(TARGET_MIME_TYPES),
            type="array",
            items={"type": "string", "enum": list(TARGET_MIME_TYPES)},
            examples=list(TARGET_MIME_TYPES),  # 'examples' on an array makes the form a multi-select
            minItems=1,
            uniqueItems=True,
            title="Target MIME types",
        ),
        "policy": Param("sb-classifier", type="string", enum=["sb-classifier", "bfs", "dfs", "random"]),
    },
) as dag:
    SBCrawlOperator(
        task_id="crawl",
        start_url="{{ params.start_url }}",
        bucket=settings.bucket,
        prefix=settings.prefix,
        aws_conn_id=settings.aws_conn_id,
        max_requests="{{ params.max_requests }}",
        max_bytes="{{ params.max_megabytes * 1024 * 1024 }}",
        target_mime_types="{{ params.target_mime_types }}",
        policy="{{ params.policy }}",
        crawl_options=settings.crawl_options,
        retries=settings.retries,
        retry_delay=settings.retry_delay,
    )
