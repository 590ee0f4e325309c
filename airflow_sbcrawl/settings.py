"""Deployment settings of the example DAGs, read when a DAG file is parsed, and the providers' list.

Parse-time settings (not templated Variables) for bucket, prefix and connection, because they make up the
manifest Asset's URI, and ingestion DAGs can only schedule on an Asset whose URI is known when parsed.
Everything that differs between production and a local simulator (the delay, a proxy, the providers'
list) is configuration, never a code path.

Each setting is an option of the ``[sbcrawl]`` section of the Airflow configuration (``airflow.cfg`` or
``AIRFLOW__SBCRAWL__<OPTION>``; declared in the provider info) and can be overridden per process by a short
``SBCRAWL_<OPTION>`` environment variable (what tests and the demo use):

``bucket`` (default ``sbcrawl``), ``prefix`` (``crawls``), ``aws_conn_id`` (``aws_default``),
``providers_file`` (``providers.yaml`` next to the DAG files), ``crawl_options`` (JSON object of
``CrawlConfig`` settings applied to every crawl, e.g. ``{"delay": 0}`` for a local simulator), ``retries``
(``2``), ``retry_delay_s`` (``300``), ``lake_conn_id`` (``sbcrawl_lake``) and ``lake_namespace`` (the
connection's ``namespace`` extra, else ``sbcrawl``). ``object_url_template`` is read by the extra links
(``operators/links.py``).

``CrawlSettings.default_args`` hands the storage settings and the retry policy to a DAG's
``default_args``, so a DAG file states them once whatever its number of tasks; Airflow gives each task
the ones its operator accepts.

A bad value is a ``ConfigError`` that names the variable it came from.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import yaml

from airflow_sbcrawl.crawler import ConfigError, CrawlConfig
from airflow_sbcrawl.crawler.addresses import start_url_problem

_ID = re.compile(r"^[a-z0-9][a-z0-9_]*$")
#: The file name of the providers' list looked for next to the DAG files.
PROVIDERS_FILE_NAME = "providers.yaml"
SECTION = "sbcrawl"
#: The schedule presets Airflow takes besides cron expressions (and None: triggered by hand only).
SCHEDULE_PRESETS = ("@once", "@continuous", "@hourly", "@daily", "@weekly", "@monthly", "@quarterly", "@yearly")


def airflow_option(option: str) -> str | None:
    """``[sbcrawl] <option>`` of the Airflow configuration, or None where unset (or outside Airflow)."""
    try:
        from airflow.providers.common.compat.sdk import conf
    except ImportError:  # the engine and the CLI run without Airflow
        return None
    value = conf.get(SECTION, option, fallback=None)
    return value if value not in (None, "") else None


def _setting(env: dict[str, str] | os._Environ, option: str, use_airflow_config: bool) -> tuple[str | None, str]:
    """(raw value, the name to blame for it): ``SBCRAWL_<OPTION>`` first, then ``[sbcrawl] <option>``."""
    var = f"SBCRAWL_{option.upper()}"
    if env.get(var) not in (None, ""):
        return env[var], var
    if use_airflow_config:
        value = airflow_option(option)
        if value is not None:
            return value, f"[{SECTION}] {option} (AIRFLOW__{SECTION.upper()}__{option.upper()})"
    return None, var


def parse_crawl_options(text: str, source: str = "SBCRAWL_CRAWL_OPTIONS") -> dict[str, Any]:
    """A JSON object of ``CrawlConfig`` settings; every error names ``source`` and the bad setting."""
    try:
        options = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{source} is not valid JSON ({exc.msg} at character {exc.pos}): {text[:80]!r}") from None
    if not isinstance(options, dict):
        raise ConfigError(f"{source} must be a JSON object of crawl settings like {{\"delay\": 0}}, "
                          f"got {type(options).__name__}")
    known = {f.name for f in dataclasses.fields(CrawlConfig)}
    unknown = sorted(set(options) - known)
    if unknown:
        raise ConfigError(f"{source}: unknown crawl settings {', '.join(unknown)}")
    return options


@dataclass(frozen=True)
class CrawlSettings:
    """The ``[sbcrawl]`` options of this process, each overridden by its ``SBCRAWL_<OPTION>`` variable
    (see the module docstring; build with :meth:`from_env`)."""

    bucket: str = "sbcrawl"
    prefix: str = "crawls"
    aws_conn_id: str = "aws_default"
    providers_file: Path = Path(PROVIDERS_FILE_NAME)
    crawl_options: dict[str, Any] = field(default_factory=dict)
    retries: int = 2
    retry_delay: timedelta = timedelta(minutes=5)
    lake_conn_id: str = "sbcrawl_lake"
    lake_namespace: str | None = None

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None, *, dags_folder: str | os.PathLike | None = None,
                 use_airflow_config: bool = True) -> CrawlSettings:
        """The settings of this process. ``dags_folder`` is where the calling DAG file lives (pass
        ``Path(__file__).parent``): the providers' list is looked for there unless configured, so DAG files
        copied next to their ``providers.yaml`` work the same from a checkout and from an installed wheel."""
        env = os.environ if env is None else env
        default = cls()

        def get(option: str) -> tuple[str | None, str]:
            return _setting(env, option, use_airflow_config)

        options_text, options_source = get("crawl_options")
        providers, _ = get("providers_file")
        folder = Path(dags_folder) if dags_folder is not None else Path.cwd()
        prefix_var = "SBCRAWL_PREFIX"  # may be set to "" on purpose: objects at the bucket's root
        prefix = env[prefix_var] if prefix_var in env else (get("prefix")[0] or default.prefix)
        return cls(
            bucket=get("bucket")[0] or default.bucket,
            prefix=prefix,
            aws_conn_id=get("aws_conn_id")[0] or default.aws_conn_id,
            providers_file=Path(providers) if providers else folder / PROVIDERS_FILE_NAME,
            crawl_options=parse_crawl_options(options_text, options_source) if options_text else {},
            retries=_number(int, *get("retries"), default.retries, minimum=0),
            retry_delay=timedelta(seconds=_number(float, *get("retry_delay_s"), 300.0, minimum=0)),
            lake_conn_id=get("lake_conn_id")[0] or default.lake_conn_id,
            lake_namespace=get("lake_namespace")[0] or None,
        )

    @property
    def default_args(self) -> dict[str, Any]:
        """A DAG's ``default_args``: where crawls store (bucket, prefix, connection) and how tasks retry.

        Operators take the keys their signature has (``DetectTablesOperator`` only ``aws_conn_id``), and
        ``retries``/``retry_delay`` go to every task of the DAG."""
        return {"bucket": self.bucket, "prefix": self.prefix, "aws_conn_id": self.aws_conn_id,
                "retries": self.retries, "retry_delay": self.retry_delay}


def _number(kind: type, text: str | None, source: str, default: Any, *, minimum: float) -> Any:
    if text is None:
        return default
    try:
        value = kind(text.strip())
    except ValueError:
        raise ConfigError(f"{source} must be a {'whole ' if kind is int else ''}number, got {text!r}") from None
    if value < minimum:
        raise ConfigError(f"{source} must be >= {minimum}, got {text!r}")
    return value


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
    # Other hosts whose files the site's pages link (a data portal, a CDN): fetched, never crawled as pages.
    target_hosts: tuple[str, ...] = ()
    crawl_options: dict[str, Any] = field(default_factory=dict)

    def options(self) -> dict[str, Any]:
        """The provider's own ``CrawlConfig`` settings beyond the budgets and targets: its
        ``crawl_options``, and its ``target_hosts``."""
        return {**self.crawl_options, **({"target_hosts": list(self.target_hosts)} if self.target_hosts else {})}

    def validate(self) -> None:
        """``ConfigError`` naming the provider when its id cannot name a DAG or its crawl settings are bad."""
        if not isinstance(self.id, str) or not _ID.match(self.id):
            raise ConfigError(f"provider id {self.id!r}: use lowercase letters, digits and '_' (it names a DAG)")
        if problem := schedule_problem(self.schedule):
            raise ConfigError(f"provider {self.id!r}: schedule {self.schedule!r}: {problem}")
        # The operator refuses such a start URL at every run; refused here, the entry is named once, at parse.
        if isinstance(self.start_url, str) and (problem := start_url_problem(self.start_url.strip())):
            raise ConfigError(f"provider {self.id!r}: start_url {self.start_url!r}: {problem}")
        try:  # the engine's own checks, with the provider named
            CrawlConfig.from_dict({**self.options(), "start_url": self.start_url,
                                   "max_requests": self.max_requests, "max_bytes": self.max_bytes,
                                   **({"target_mime_types": self.target_mime_types}
                                      if self.target_mime_types else {})})
        except ConfigError as exc:
            raise ConfigError(f"provider {self.id!r}: {exc}") from exc


def schedule_problem(schedule: Any) -> str:
    """Why Airflow would refuse ``schedule`` as a DAG's schedule ("" when it takes it): None, one of
    ``SCHEDULE_PRESETS`` or a cron expression. Airflow itself finds a bad one only when it validates the
    parsed DAGs, and then fails the whole file; checked here, only that entry's DAG is lost."""
    if schedule is None or schedule in SCHEDULE_PRESETS:
        return ""
    if not isinstance(schedule, str):
        return f"expected a cron expression, a preset or null, got a {type(schedule).__name__}"
    try:
        from croniter import croniter
    except ImportError:  # no Airflow installed: no DAG is made from the list, nothing to check against
        return ""
    try:
        croniter(schedule)  # what Airflow checks a schedule with
    except (ValueError, KeyError) as exc:  # croniter's errors are ValueErrors
        return (f"not a cron expression or preset ({exc}); e.g. \"0 3 * * 2\" runs every Tuesday at 03:00, "
                f"or use one of {', '.join(SCHEDULE_PRESETS)} or null")
    return ""


@dataclass(frozen=True)
class ProvidersList:
    """The providers' list as read: the valid entries, and one line per entry that is not (naming it)."""

    path: Path
    providers: list[StatisticsProvider]
    errors: list[str]

    def raise_errors(self) -> None:
        """One ``ConfigError`` listing every bad entry (the import error of ``sbcrawl_providers_check.py``)."""
        if self.errors:
            raise ConfigError(f"{self.path}: {len(self.errors)} bad provider entr"
                              f"{'y' if len(self.errors) == 1 else 'ies'} (their DAGs are not created): "
                              + "; ".join(self.errors))


def read_providers(path: str | os.PathLike) -> ProvidersList:
    """The providers' list (YAML: ``providers: [{id, start_url, schedule, max_requests, ...}]``), entry by
    entry: a bad entry is reported and skipped, so it takes down only its own DAG. A file that cannot be
    read or parsed at all is a ``ConfigError`` (there is no entry to keep)."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except OSError as exc:
        raise ConfigError(f"providers' list {path}: {exc.strerror or exc}; set SBCRAWL_PROVIDERS_FILE (or "
                          f"[{SECTION}] providers_file) or put {PROVIDERS_FILE_NAME} next to the DAG files") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"providers' list {path} is not valid YAML: {str(exc).splitlines()[0]}") from None
    entries = data.get("providers", []) if isinstance(data, dict) else data
    if not isinstance(entries, list):
        raise ConfigError(f"providers' list {path}: expected a list under 'providers', got {type(entries).__name__}")
    providers: list[StatisticsProvider] = []
    errors: list[str] = []
    seen: set[str] = set()
    for number, entry in enumerate(entries, start=1):
        label = f"entry {number}"
        try:
            provider = _provider(entry)
        except ConfigError as exc:
            errors.append(f"{label}: {exc}")
            continue
        if provider.id in seen:
            errors.append(f"{label}: provider id {provider.id!r} appears twice")
            continue
        seen.add(provider.id)
        providers.append(provider)
    return ProvidersList(path, providers, errors)


def _provider(entry: Any) -> StatisticsProvider:
    if not isinstance(entry, dict):
        raise ConfigError(f"expected a mapping with id and start_url, got {entry!r}")
    entry = dict(entry)
    for key in ("target_mime_types", "target_hosts"):
        if isinstance(entry.get(key), str):
            entry[key] = [entry[key]]
        if entry.get(key):
            if not isinstance(entry[key], list | tuple):
                raise ConfigError(f"provider {entry.get('id')!r}: {key} must be a list, got {entry[key]!r}")
            entry[key] = tuple(entry[key])
    try:
        provider = StatisticsProvider(**entry)
    except TypeError as exc:
        raise ConfigError(f"provider {entry.get('id')!r}: {exc}") from None
    provider.validate()
    return provider


def load_providers(path: str | os.PathLike) -> list[StatisticsProvider]:
    """The valid entries of the providers' list (see ``read_providers``; bad ones are left out)."""
    return read_providers(path).providers
