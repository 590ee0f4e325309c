"""The crawl engine (SB-CLASSIFIER and baselines). Pure Python: no Airflow import anywhere below here."""

from airflow_sbcrawl.crawler.config import POLICIES, ConfigError, CrawlConfig
from airflow_sbcrawl.crawler.engine import Crawler, CrawlSummary, Progress, StateExists
from airflow_sbcrawl.crawler.sinks import LocalSink, Sink, SinkError
from airflow_sbcrawl.crawler.state import CheckpointError, ForeignCheckpoint, LocalStateStore, StateStore

__all__ = [
    "POLICIES",
    "CheckpointError",
    "ConfigError",
    "CrawlConfig",
    "CrawlSummary",
    "Crawler",
    "ForeignCheckpoint",
    "LocalSink",
    "LocalStateStore",
    "Progress",
    "Sink",
    "SinkError",
    "StateExists",
    "StateStore",
]
