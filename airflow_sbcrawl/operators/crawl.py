"""SBCrawlOperator: one budgeted SB-CLASSIFIER crawl of one site, targets to S3, resumable across retries.

Thin by design (the model is the amazon provider's operators): the crawl is the engine's
(``airflow_sbcrawl.crawler``), storage is ``SBCrawlHook`` (``airflow_sbcrawl.hooks.crawl``, an ``S3Hook``)
with its keys, run ids and rerun detection; this module only turns Airflow's context (templated fields,
the connection, try number, map index, kill signal, outlets) into those calls.
"""

from __future__ import annotations

import dataclasses
import logging
import tempfile
import time
from collections.abc import Callable, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import urlsplit

from airflow.providers.common.compat.sdk import AirflowException, AirflowFailException, BaseOperator
from airflow.sdk import Asset, AssetAlias

from airflow_sbcrawl.crawler import ConfigError, CrawlConfig, Crawler, CrawlSummary, Progress, SinkError
from airflow_sbcrawl.crawler import memory as site_memory
from airflow_sbcrawl.hooks.crawl import CrawlStorage, SBCrawlHook
from airflow_sbcrawl.hooks.layout import S3CrawlLayout, join_key
from airflow_sbcrawl.hooks.runs import CrawlTask
from airflow_sbcrawl.operators import lineage
from airflow_sbcrawl.operators.links import CrawlManifestLink, CrawlReportLink
from airflow_sbcrawl.params import check_public_start_url

if TYPE_CHECKING:
    from airflow.sdk import Context

log = logging.getLogger(__name__)

#: Alias every crawl whose manifest URI is only known at run time (templated bucket/prefix/start URL,
#: mapped tasks) emits through; ingestion DAGs can schedule on it or on the concrete Asset it resolves to.
MANIFEST_ALIAS = "sbcrawl-manifests"
#: task_state_store key holding the pointer to the crawl state in S3 (the state itself stays in S3).
STATE_POINTER_KEY = "sbcrawl_state"

_DEFAULTS = {f.name: f.default for f in dataclasses.fields(CrawlConfig) if f.default is not dataclasses.MISSING}
_INT_KNOBS = {"max_requests", "max_bytes", "seed"}


class SBCrawlOperator(BaseOperator):
    """Crawl one website for data files (SB-CLASSIFIER) within a budget, storing the targets in S3.

    Targets go to ``s3://<bucket>/<prefix>/<site>/objects/<sha256>`` (site = the start URL's host without
    "www."), manifest rows to ``.../runs/<run>/manifest-<seq>.jsonl``, checkpoints to
    ``.../state/<dag_id>/<run_id>/<task_id>/<map_index>/``: that key is the same for every try of a task
    instance, so a retry resumes where the previous try's last checkpoint left off instead of starting over.
    A task instance whose crawl already finished (cleared after a success) makes a new incremental crawl,
    run id ``<dag_id>__<run_id>__rerun-<UTC time>`` (``hooks/runs.py``). Every S3 call goes through
    :attr:`hook`, an ``SBCrawlHook``.

    :param start_url: the page the crawl starts from; its host (and subdomains) is the crawl's scope. A
        ``localhost`` or non-public IP address (loopback, private, link-local) is refused before any request.
    :param bucket: S3 bucket for targets, manifests and crawl state.
    :param prefix: key prefix inside the bucket.
    :param aws_conn_id: Airflow connection for ``S3Hook``; ``None`` uses boto3's default credential chain.
    :param max_requests: request budget (GET and HEAD, robots.txt and retries included).
    :param max_bytes: byte budget (body bytes received).
    :param target_mime_types: MIME types that count as targets (default: the engine's list of 43).
    :param policy: ``sb-classifier`` (default) or ``bfs``; the baselines ``dfs``, ``random`` and ``focused``
        are accepted for experiments.
    :param seed: random seed of the crawl (same seed, same site: same crawl).
    :param delay: seconds between two requests to the same host (politeness).
    :param crawl_options: any other ``CrawlConfig`` setting by name (validated; unknown names are errors).
    :param fresh: on the first try, discard a crawl state left under this task instance's key and start over
        (retries always resume).
    :param journal_lease: requests recorded in the S3 budget journal per write, before they are sent: a try
        killed (or cut off from S3) leaves at most that many of the budget unused and never overshoots it.
    :param warm_start: start from the site memory in S3 (``.../<site>/memory/``) when there is one: an
        incremental crawl that checks known datasets with conditional requests and stores only new or
        changed files (``False``: a cold crawl; it still leaves a memory for the next run).
    :param keep_checkpoints: checkpoints of this task instance kept after a successful crawl (older ones and
        the budget journal are deleted; the site memory always stays).
    :param crawl_key: set when several task instances continue one crawl (the rounds of a shared budget in
        ``sbcrawl_many_sites``): they share its checkpoints, budget journal and run id, under
        ``.../state/<dag_id>/<run_id>/<crawl_key>/``, and each resumes where the previous one stopped, with
        its ``max_requests`` as the crawl's cumulative cap. A cleared task then resumes that crawl too (what
        it spent stays spent) instead of starting a new incremental one, and the last checkpoint is always
        kept for the next task.
    :param manifest_event: emit the site's manifest Asset event when the crawl succeeds. ``False`` for a
        task that may not be the crawl's last (the DAG then emits one event when the crawl is over, with
        :func:`manifest_event_extra`).
    :param progress_callback: called with ``(progress, context)`` at most every 0.2 s from the crawl loop.
        For monitoring, and the documented test hook: an exception raised from it aborts the try the way a
        crash would (the retry test uses it to kill a first try after N pages).
    """

    template_fields: Sequence[str] = (
        "start_url", "bucket", "prefix", "aws_conn_id", "max_requests", "max_bytes", "target_mime_types",
        "policy", "seed", "delay", "crawl_options", "crawl_key",
    )
    template_fields_renderers: ClassVar[dict[str, str]] = {"crawl_options": "json"}
    operator_extra_links = (CrawlReportLink(), CrawlManifestLink())
    ui_color = "#d9ead3"

    def __init__(
        self,
        *,
        start_url: str,
        bucket: str,
        prefix: str = "sbcrawl",
        aws_conn_id: str | None = "aws_default",
        max_requests: int | str = _DEFAULTS["max_requests"],
        max_bytes: int | str = _DEFAULTS["max_bytes"],
        target_mime_types: Sequence[str] | str | None = None,
        policy: str = _DEFAULTS["policy"],
        seed: int | str = _DEFAULTS["seed"],
        delay: float | str = _DEFAULTS["delay"],
        crawl_options: dict[str, Any] | None = None,
        fresh: bool = False,
        warm_start: bool = True,
        keep_checkpoints: int = 1,
        journal_lease: int = 10,
        crawl_key: str | None = None,
        manifest_event: bool = True,
        progress_callback: Callable[[Progress, Context], None] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.start_url = start_url
        self.bucket = bucket
        self.prefix = prefix
        self.aws_conn_id = aws_conn_id
        self.max_requests = max_requests
        self.max_bytes = max_bytes
        self.target_mime_types = target_mime_types
        self.policy = policy
        self.seed = seed
        self.delay = delay
        self.crawl_options = crawl_options or {}
        self.fresh = fresh
        self.warm_start = warm_start
        self.keep_checkpoints = keep_checkpoints
        self.journal_lease = journal_lease
        self.crawl_key = crawl_key
        self.manifest_event = manifest_event
        self.progress_callback = progress_callback
        self._crawler: Crawler | None = None
        self._storage: CrawlStorage | None = None
        self._killed = False
        self._lineage: Any = None
        if not self.outlets and manifest_event:
            # A concrete Asset when its URI is known when the DAG is parsed (ingestion DAGs schedule on it);
            # otherwise an alias that the run resolves to the concrete Asset.
            uri = self._static_manifest_uri()
            self.outlets = [Asset(uri)] if uri else [AssetAlias(MANIFEST_ALIAS)]

    def _static_manifest_uri(self) -> str | None:
        fields = (self.start_url, self.bucket, self.prefix)
        if not all(isinstance(v, str) and v and "{{" not in v and "{%" not in v for v in fields[:2]):
            return None
        if not isinstance(self.prefix, str) or "{{" in self.prefix or "{%" in self.prefix:
            return None
        try:
            return S3CrawlLayout.for_start_url(self.bucket, self.prefix, self.start_url).manifest_uri()
        except ValueError:
            return None  # reported with a clear message by execute(), not at parse time

    @cached_property
    def hook(self) -> SBCrawlHook:
        """The crawl storage hook of ``aws_conn_id`` (a missing connection fails the task, without retries)."""
        return SBCrawlHook.for_connection(self.aws_conn_id)

    # -- validation ------------------------------------------------------------------------------------
    def build_config(self) -> CrawlConfig:
        """The engine configuration from the rendered fields; ConfigError names the bad setting."""
        options = dict(self.crawl_options or {})
        named = {
            "start_url": self.start_url, "max_requests": self.max_requests, "max_bytes": self.max_bytes,
            "policy": self.policy, "seed": self.seed, "delay": self.delay,
        }
        if self.target_mime_types:
            mimes = self.target_mime_types
            named["target_mime_types"] = [m.strip() for m in mimes.split(",")] if isinstance(mimes, str) else mimes
        for key in set(named) & set(options):
            if named[key] != _DEFAULTS.get(key) and named[key] != options[key]:
                raise ConfigError(f"{key} is given twice, as an argument and in crawl_options; keep one")
        merged = {**named, **{k: v for k, v in options.items() if k in named}}
        merged.update({k: v for k, v in options.items() if k not in named})
        # Rendered templates are strings unless the DAG renders native objects: coerce the numeric knobs.
        for key in _INT_KNOBS:
            merged[key] = _as_int(key, merged[key])
        merged["delay"] = _as_float("delay", merged["delay"])
        if isinstance(merged["start_url"], str):
            try:
                check_public_start_url(merged["start_url"])
            except ValueError as exc:
                raise ConfigError(str(exc)) from None
        return CrawlConfig.from_dict(merged)

    def execute(self, context: Context) -> dict[str, Any]:
        """Crawl (resuming the task instance's state), then store the report, clean the state and announce
        the manifest; returns the crawl's summary with where everything is (the XCom)."""
        config = self._valid_config()
        storage = self._open_storage(config, context)
        try_number = context["ti"].try_number or 1
        fresh = bool(self.fresh) and try_number <= 1
        self._point_state_store(context, storage)
        self.log.info("crawl of %s (site %s, try %s): %s", config.start_url, storage.layout.site, try_number,
                      storage.start(fresh))
        crawler, summary = self._crawl(config, storage, fresh, context)
        self._check_outcome(config, storage, summary)
        # A crawl continued by another task (crawl_key) resumes from its last checkpoint: keep it.
        storage.clean(keep=max(1 if self.crawl_key else 0, int(self.keep_checkpoints)))
        result = self._result(storage, crawler, summary, try_number)
        if self.manifest_event:
            self._emit_manifest_event(context, storage.layout, result)
        self._lineage = _lineage(config, storage)
        self.log.info("crawl done: %d targets, %d requests, %d pages (%s)", summary.targets, summary.requests,
                      summary.pages, summary.stop_reason)
        return result

    def on_kill(self) -> None:
        """Ask the running crawl to stop: it checkpoints after the request in flight, and a retry resumes."""
        # Runs in the signal handler (SIGTERM from the supervisor): only set a flag; run() returns well within
        # the supervisor's grace period.
        crawler = self._crawler
        if crawler is not None:
            self._killed = True
            crawler.request_stop("task killed (on_kill)")
        if self._storage is not None:
            self._storage.interrupt()  # a crawl waiting out an S3 outage stops now, not after the wait

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """OpenLineage: the site read, the S3 objects and the run's manifests written (see lineage.py)."""
        return self._lineage

    # -- the steps of execute() --------------------------------------------------------------------------
    def _valid_config(self) -> CrawlConfig:
        try:
            config = self.build_config()
        except (ConfigError, TypeError, ValueError) as exc:
            raise AirflowFailException(f"invalid crawl settings: {exc}") from exc
        if not self.bucket:
            raise AirflowFailException("bucket is empty: give the S3 bucket targets are written to")
        return config

    def _open_storage(self, config: CrawlConfig, context: Context) -> CrawlStorage:
        """The task instance's crawl storage, once the bucket is known to take writes (retryable when it
        does not: an endpoint can come back); an unreadable site memory fails the task."""
        layout = S3CrawlLayout.for_start_url(self.bucket, self.prefix, config.start_url)
        try:
            self.hook.check_writable(layout)
        except SinkError as exc:
            raise AirflowException(str(exc)) from exc
        try:
            return self.hook.open_crawl(layout, CrawlTask.of(context["ti"], self.crawl_key), config.start_url,
                                        journal_lease=self.journal_lease)
        except site_memory.SiteMemoryError as exc:
            raise AirflowFailException(str(exc)) from exc

    def _point_state_store(self, context: Context, storage: CrawlStorage) -> None:
        """Record where the state lives in the task instance's state store (Airflow >= 3.3), so the UI and
        tools can find it; the key itself is derived, so a missing store never prevents a resume."""
        tss = context.get("task_state_store")
        if tss is None:
            return
        try:
            previous = tss.get(STATE_POINTER_KEY)
            if previous:
                self.log.info("previous try left its crawl state at %s", previous.get("state"))
            tss.set(STATE_POINTER_KEY, {"state": storage.store.describe(), "run": storage.run_id})
        except Exception as exc:  # the pointer is a convenience; the crawl must not fail over it
            self.log.warning("could not update task_state_store: %s", exc)

    def _crawl(self, config: CrawlConfig, storage: CrawlStorage, fresh: bool,
               context: Context) -> tuple[Crawler, CrawlSummary]:
        """Run the engine until it stops; whatever kills the try, the budget it spent is saved first."""
        self._storage = storage
        crawler = self._crawler = Crawler(config, storage.sink, storage.store, run_id=storage.run_id,
                                          on_progress=self._progress_handler(context), memory=storage.memory,
                                          warm_start=bool(self.warm_start))
        try:
            # resume=True is also right on a first try: with no state it is a plain start.
            summary = crawler.run(resume=not fresh, fresh=fresh)
        except BaseException:
            # Record the budget the try spent, so the retry does not overshoot it. Manifest rows appended
            # since the last checkpoint are not flushed: the retry re-crawls from that checkpoint and writes
            # them once (their objects are already in S3, so uploads are skipped).
            _best_effort(storage.store.flush_journal, "budget journal")
            raise
        finally:
            self._crawler = self._storage = None
        storage.store.flush_journal()
        return crawler, summary

    def _progress_handler(self, context: Context) -> Callable[[Progress], None]:
        """The engine's progress callback: a log line every 10 s, and the user's ``progress_callback``."""
        last_log = [0.0]

        def on_progress(p: Progress) -> None:
            now = time.monotonic()
            if now - last_log[0] >= 10:
                last_log[0] = now
                self.log.info("pages %d, targets %d, requests %d/%d, frontier %d", p.pages, p.targets,
                              p.requests, p.max_requests, p.frontier)
            if self.progress_callback is not None:
                self.progress_callback(p, context)

        return on_progress

    def _check_outcome(self, config: CrawlConfig, storage: CrawlStorage, summary: CrawlSummary) -> None:
        """Fail the try (retryable) when the crawl was killed or could not even crawl its start page."""
        if self._killed:
            raise AirflowException(f"crawl stopped by on_kill after {summary.pages} pages; its checkpoint is in "
                                   f"{storage.store.describe()} and a retry resumes from it")
        if summary.start_error and summary.pages <= 1 and summary.targets == 0:
            raise AirflowException(f"the start page {config.start_url} could not be crawled: {summary.start_error}")

    def _result(self, storage: CrawlStorage, crawler: Crawler, summary: CrawlSummary,
                try_number: int) -> dict[str, Any]:
        """The XCom: the engine's summary, where the run's files are, and what the sink uploaded."""
        layout, sink = storage.layout, storage.sink
        manifest_keys = sink.all_manifest_keys()
        report_key = self._upload_report(storage, crawler, summary)
        result = summary.to_dict()
        result.update(
            report_key=report_key,
            site=layout.site, bucket=layout.bucket, prefix=layout.prefix,
            objects_prefix=layout.objects_prefix(), manifest_keys=manifest_keys,
            manifest_uri=layout.manifest_uri(), state_prefix=storage.store.describe(), try_number=try_number,
            crawl_key=self.crawl_key, s3_endpoint=self._s3_endpoint(),
            objects_uploaded=sink.objects_uploaded, objects_skipped=sink.objects_skipped,
        )
        return result

    def _s3_endpoint(self) -> str:
        """The S3 connection's endpoint_url ("" on AWS), without any user info: the extra links use it."""
        try:
            endpoint = str(getattr(self.hook.conn_config, "endpoint_url", None) or "")
        except Exception:
            return ""
        parts = urlsplit(endpoint)
        return parts._replace(netloc=parts.hostname + (f":{parts.port}" if parts.port else "")).geturl() \
            if parts.hostname else ""

    def _upload_report(self, storage: CrawlStorage, crawler: Crawler, summary: CrawlSummary) -> str:
        """The explainable crawl report (Markdown + plots) next to the run's manifests; a report that cannot
        be made is logged, never a reason to fail a crawl whose targets are stored."""
        from airflow_sbcrawl.report import REPORT_NAME, write_report

        run_prefix = storage.layout.run_prefix(storage.run_id)
        try:
            with tempfile.TemporaryDirectory(prefix="sbcrawl-report-") as tmp:
                write_report(crawler, summary, tmp)
                self.hook.upload_folder(tmp, storage.layout.bucket, run_prefix)
            return join_key(run_prefix, REPORT_NAME)
        except Exception as exc:  # matplotlib missing, S3 hiccup: the crawl itself succeeded
            self.log.warning("crawl report not written: %s", exc)
            return ""

    def _emit_manifest_event(self, context: Context, layout: S3CrawlLayout, result: dict[str, Any]) -> None:
        extra = manifest_event_extra(result)
        uri = layout.manifest_uri()
        events = context["outlet_events"]
        for outlet in self.outlets:
            if isinstance(outlet, AssetAlias):
                events[outlet].add(Asset(uri), extra=extra)
            elif isinstance(outlet, Asset) and outlet.uri == uri:
                events[outlet].extra.update(extra)


def manifest_event_extra(result: dict[str, Any]) -> dict[str, Any]:
    """The extra of a site's manifest Asset event, from what :meth:`SBCrawlOperator.execute` returned: what
    ingestion (``sbcrawl_ingest``) reads to find the crawl's rows and objects."""
    return {
        "run_id": result["run_id"], "site": result["site"], "start_url": result["start_url"],
        "targets": result["targets"], "manifest_keys": result["manifest_keys"],
        "objects_prefix": result["objects_prefix"], "bucket": result["bucket"],
        # Incremental crawls: new / changed / unchanged / gone datasets, and the run it started from.
        "changes": result["changes"], "warm_from": result["warm_from"],
    }


def _lineage(config: CrawlConfig, storage: CrawlStorage) -> Any:
    """OpenLineage: the site read; the site's objects and the run's folder written."""
    layout = storage.layout
    return lineage.operator_lineage(
        [lineage.site(config.start_url)],
        [lineage.s3(layout.bucket, layout.objects_prefix()),
         lineage.s3(layout.bucket, layout.run_prefix(storage.run_id))])


def _best_effort(fn: Callable[[], None], what: str) -> None:
    try:
        fn()
    except Exception as exc:
        log.warning("could not save the %s after the failure: %s", what, exc)


def _as_int(name: str, value: Any) -> int:
    if isinstance(value, bool):
        raise ConfigError(f"{name} must be a whole number, got {value!r}")
    if isinstance(value, int):
        return value
    try:
        return int(str(value).strip())
    except ValueError:
        raise ConfigError(f"{name} must be a whole number, got {value!r}") from None


def _as_float(name: str, value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a number, got {value!r}") from None
