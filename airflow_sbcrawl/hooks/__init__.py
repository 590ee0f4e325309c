"""Airflow-side storage for the crawl engine: an S3 sink and an S3 state store over the amazon provider's S3Hook."""

from airflow_sbcrawl.hooks.s3 import S3CrawlLayout, S3Sink, S3StateStore, check_bucket_writable, site_key

__all__ = ["S3CrawlLayout", "S3Sink", "S3StateStore", "check_bucket_writable", "site_key"]
