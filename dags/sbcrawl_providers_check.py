"""The import error of the providers' list: names every bad entry of it, and nothing else fails.

``sbcrawl_providers.py`` makes one Airflow DAG per valid entry and skips the bad ones. A bad entry cannot
raise there: Airflow marks every DAG of a file with an import error as stale, so one typo would stop every
provider's schedule. It is raised here instead, in a file of its own that holds no DAG, so the UI's
"DAG Import Errors" shows exactly which entry is wrong and why while the other providers keep crawling.
"""

from __future__ import annotations

from pathlib import Path

from airflow_sbcrawl.settings import CrawlSettings, read_providers

read_providers(CrawlSettings.from_env(dags_folder=Path(__file__).parent).providers_file).raise_errors()
