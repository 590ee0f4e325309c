"""The Airflow side of storage: hooks over the amazon provider's S3Hook and over the Iceberg catalog.

* ``crawl`` — ``SBCrawlHook`` (an ``S3Hook``): every S3 call the operators make, and ``CrawlStorage``, what
  one task instance's crawl reads and writes.
* ``layout`` — ``S3CrawlLayout``: every key of a site's folder (no S3 call; DAG files use it when parsed).
* ``runs`` — ``CrawlTask``: the crawl run id of a task instance, its state folder, rerun detection.
* ``stores`` — ``S3Sink`` and ``S3StateStore``: the engine's storage protocols over S3.
* ``lake`` — ``IcebergCatalogHook``: the lake's catalog from an Airflow connection.

Only the Airflow-free names are re-exported here, so that importing the layout stays cheap.
"""

from airflow_sbcrawl.hooks.layout import CrawlRef, S3CrawlLayout, site_key
from airflow_sbcrawl.hooks.stores import S3Sink, S3StateStore

__all__ = ["CrawlRef", "S3CrawlLayout", "S3Sink", "S3StateStore", "site_key"]
