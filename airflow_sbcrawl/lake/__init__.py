"""Detected statistics tables into Apache Iceberg through a REST catalog (pyiceberg). No Airflow import."""

from airflow_sbcrawl.lake.catalog import CatalogConfig, LakeError, connect
from airflow_sbcrawl.lake.load import LoadResult, load_tables, mark_gone
from airflow_sbcrawl.lake.query import SERIES_SQL, query, sample, scan, series
from airflow_sbcrawl.lake.schema import OBSERVATIONS, TABLES, ensure_tables

__all__ = [
    "OBSERVATIONS",
    "SERIES_SQL",
    "TABLES",
    "CatalogConfig",
    "LakeError",
    "LoadResult",
    "connect",
    "ensure_tables",
    "load_tables",
    "mark_gone",
    "query",
    "sample",
    "scan",
    "series",
]
