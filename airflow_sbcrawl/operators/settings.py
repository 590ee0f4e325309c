"""Deployment settings shared by the example DAGs, read from the environment when a DAG file is parsed.

Parse-time settings (not templated Variables) for bucket, prefix and connection, because they make up the
manifest Asset's URI, and ingestion DAGs can only schedule on an Asset whose URI is known when parsed.
Everything that differs between production and a local simulator (the delay, a proxy, the providers'
list) is configuration, never a code path:

``SBCRAWL_BUCKET`` (default ``sbcrawl``), ``SBCRAWL_PREFIX`` (``crawls``), ``SBCRAWL_AWS_CONN_ID``
(``aws_default``), ``SBCRAWL_PROVIDERS_FILE`` (``dags/providers.yaml``), ``SBCRAWL_CRAWL_OPTIONS`` (JSON
object of ``CrawlConfig`` settings applied to every crawl, e.g. ``{"delay": 0}`` for a local simulator),
``SBCRAWL_RETRIES`` (``2``) and ``SBCRAWL_RETRY_DELAY_S`` (``300``).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import yaml

from airflow_sbcrawl.crawler import ConfigError, CrawlConfig

_ID = re.compile(r"^[a-z0-9][a-z0-9_]*$")

# IPv4 literals of loopback, private, link-local, "this network" and shared (CGNAT) ranges.
_NON_PUBLIC_IPV4 = (r"(127\.\d+|10\.\d+|0\.\d+|169\.254|192\.168|172\.(1[6-9]|2\d|3[01])"
                    r"|100\.(6[4-9]|[7-9]\d|1[01]\d|12[0-7]))(\.\d+)+")
#: Start URLs a web form accepts: http(s) on a host name or a public IPv4 address. localhost, non-public
#: IPv4 literals and IPv6 literals are refused (a crawl must not become a way into the network it runs
#: in); names resolving to such addresses are refused at connection time by the crawler itself.
PUBLIC_URL_PATTERN = (
    rf"^https?://(?!{_NON_PUBLIC_IPV4}([:/?#]|$))(?!(localhost|[^\s/:?#]*\.localhost)\.?([:/?#]|$))"
    r"[^\s/:?#\[\]]+(:[0-9]{1,5})?([/?#][^\s]*)?$"
)


@dataclass(frozen=True)
class CrawlSettings:
    bucket: str = "sbcrawl"
    prefix: str = "crawls"
    aws_conn_id: str = "aws_default"
    providers_file: Path = Path(__file__).resolve().parents[2] / "dags" / "providers.yaml"
    crawl_options: dict[str, Any] = field(default_factory=dict)
    retries: int = 2
    retry_delay: timedelta = timedelta(minutes=5)

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> CrawlSettings:
        env = os.environ if env is None else env
        default = cls()
        options = json.loads(env.get("SBCRAWL_CRAWL_OPTIONS") or "{}")
        if not isinstance(options, dict):
            raise ConfigError("SBCRAWL_CRAWL_OPTIONS must be a JSON object of crawl settings")
        return cls(
            bucket=env.get("SBCRAWL_BUCKET") or default.bucket,
            prefix=env.get("SBCRAWL_PREFIX", default.prefix),
            aws_conn_id=env.get("SBCRAWL_AWS_CONN_ID") or default.aws_conn_id,
            providers_file=Path(env.get("SBCRAWL_PROVIDERS_FILE") or default.providers_file),
            crawl_options=options,
            retries=int(env.get("SBCRAWL_RETRIES") or default.retries),
            retry_delay=timedelta(seconds=float(env.get("SBCRAWL_RETRY_DELAY_S") or 300)),
        )


@dataclass(frozen=True)
class StatisticsProvider:
    """One entry of the providers' list: what to crawl, how often, with which budget and targets."""

    id: str
    start_url: str
    schedule: str | None = "@weekly"
    max_requests: int = 10_000
    max_bytes: int = 50 * 1024**3
    target_mime_types: tuple[str, ...] | None = None
    name: str = ""
    crawl_options: dict[str, Any] = field(default_factory=dict)

    def validate(self) -> None:
        if not _ID.match(self.id):
            raise ConfigError(f"provider id {self.id!r}: use lowercase letters, digits and '_' (it names a DAG)")
        try:  # the engine's own checks: a bad entry fails the DAG file's import with the provider named
            CrawlConfig.from_dict({**self.crawl_options, "start_url": self.start_url,
                                   "max_requests": self.max_requests, "max_bytes": self.max_bytes,
                                   **({"target_mime_types": self.target_mime_types}
                                      if self.target_mime_types else {})})
        except ConfigError as exc:
            raise ConfigError(f"provider {self.id!r}: {exc}") from exc


def load_providers(path: str | os.PathLike) -> list[StatisticsProvider]:
    """The providers' list (YAML: ``providers: [{id, start_url, schedule, max_requests, ...}]``)."""
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    entries = data.get("providers", []) if isinstance(data, dict) else data
    providers = []
    seen: set[str] = set()
    for entry in entries:
        entry = dict(entry)
        if entry.get("target_mime_types"):
            entry["target_mime_types"] = tuple(entry["target_mime_types"])
        try:
            provider = StatisticsProvider(**entry)
        except TypeError as exc:
            raise ConfigError(f"{path}: bad provider entry {entry!r}: {exc}") from exc
        provider.validate()
        if provider.id in seen:
            raise ConfigError(f"{path}: provider id {provider.id!r} appears twice")
        seen.add(provider.id)
        providers.append(provider)
    return providers
