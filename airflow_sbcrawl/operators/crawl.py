"""SBCrawlOperator: one budgeted SB-CLASSIFIER crawl of one site, targets to S3, resumable across retries.

Thin by design (the model is the amazon provider's operators): the crawl is the engine's
(``airflow_sbcrawl.crawler``), storage is ``airflow_sbcrawl.hooks.s3`` over ``S3Hook``; this module only
turns Airflow's context (templated fields, the connection, try number, map index) into those calls.
"""

from __future__ import annotations

import dataclasses
import logging
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from airflow.providers.common.compat.sdk import AirflowException, AirflowFailException, BaseOperator
from airflow.sdk import Asset, AssetAlias

from airflow_sbcrawl.crawler import ConfigError, CrawlConfig, Crawler, CrawlSummary, Progress, SinkError
from airflow_sbcrawl.crawler import memory as site_memory
from airflow_sbcrawl.hooks.s3 import S3CrawlLayout, S3Sink, S3StateStore, check_bucket_writable, s3_hook, site_key
from airflow_sbcrawl.operators import lineage
from airflow_sbcrawl.operators.links import CrawlManifestLink, CrawlReportLink
from airflow_sbcrawl.operators.params import check_public_start_url

if TYPE_CHECKING:
    from airflow.providers.amazon.aws.hooks.s3 import S3Hook
    from airflow.sdk import Context

log = logging.getLogger(__name__)

#: Alias every crawl whose manifest URI is only known at run time (templated bucket/prefix/start URL,
#: mapped tasks) emits through; ingestion DAGs can schedule on it or on the concrete Asset it resolves to.
MANIFEST_ALIAS = "sbcrawl-manifests"
#: task_state_store key holding the pointer to the crawl state in S3 (the state itself stays in S3).
STATE_POINTER_KEY = "sbcrawl_state"
#: Infix of the run id of a crawl made by a task instance whose crawl had already finished (a cleared task).
RERUN = "__rerun-"

_DEFAULTS = {f.name: f.default for f in dataclasses.fields(CrawlConfig) if f.default is not dataclasses.MISSING}
_INT_KNOBS = {"max_requests", "max_bytes", "seed"}


class SBCrawlOperator(BaseOperator):
    """Crawl one website for data files (SB-CLASSIFIER) within a budget, storing the targets in S3.

    Targets go to ``s3://<bucket>/<prefix>/<site>/objects/<sha256>`` (site = the start URL's host without
    "www."), manifest rows to ``.../runs/<run>/manifest-<seq>.jsonl``, checkpoints to
    ``.../state/<dag_id>/<run_id>/<task_id>/<map_index>/``: that key is the same for every try of a task
    instance, so a retry resumes where the previous try's last checkpoint left off instead of starting over.

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
            return S3CrawlLayout(self.bucket, self.prefix, site_key(self.start_url)).manifest_uri()
        except ValueError:
            return None  # reported with a clear message by execute(), not at parse time

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
        try:
            config = self.build_config()
        except (ConfigError, TypeError, ValueError) as exc:
            raise AirflowFailException(f"invalid crawl settings: {exc}") from exc
        if not self.bucket:
            raise AirflowFailException("bucket is empty: give the S3 bucket targets are written to")
        hook = s3_hook(self.aws_conn_id)
        layout = S3CrawlLayout(self.bucket, self.prefix or "", site_key(config.start_url))
        try:
            check_bucket_writable(hook, layout.bucket, layout.site_prefix)
        except SinkError as exc:
            raise AirflowException(str(exc)) from exc  # retryable: an endpoint can come back

        ti = context["ti"]
        dag_id, run_id, task_id = ti.dag_id, ti.run_id, ti.task_id
        map_index = getattr(ti, "map_index", -1)
        map_index = -1 if map_index is None else map_index
        if self.crawl_key:
            crawl_run = f"{dag_id}__{run_id}__{self.crawl_key}"
            state_prefix = layout.state_prefix(dag_id, run_id, self.crawl_key)
        else:
            crawl_run = f"{dag_id}__{run_id}" + (f"__{map_index}" if map_index >= 0 else "")
            state_prefix = layout.state_prefix(dag_id, run_id, task_id, map_index)
        store = S3StateStore(hook, layout.bucket, state_prefix, journal_lease=self.journal_lease)
        memory = S3StateStore(hook, layout.bucket, layout.memory_prefix())

        try_number = ti.try_number or 1
        fresh = bool(self.fresh) and try_number <= 1
        try:
            last = site_memory.load(memory, config.start_url)
        except site_memory.SiteMemoryError as exc:
            raise AirflowFailException(str(exc)) from exc
        finished = last is not None and (last.run_id == crawl_run or last.run_id.startswith(crawl_run + RERUN))
        if finished and not self.crawl_key:
            # This task instance's crawl already finished (the task was cleared after a success, or a step
            # after the crawl failed): a try is then a new incremental crawl from the memory that crawl left,
            # under its own run id, whose manifest and Asset event carry what changed since.
            self.log.info("the crawl of this task instance finished as run %s: starting a new incremental "
                          "crawl from its site memory", last.run_id)
            store.clear()
            crawl_run = crawl_run + RERUN + datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        sink = S3Sink(hook, layout, crawl_run)
        self._point_state_store(context, store, crawl_run)
        had_state = bool(store.checkpoints())
        if fresh:
            store.clear()
        self.log.info("crawl of %s (site %s, try %s): %s", config.start_url, layout.site, try_number,
                      "fresh start" if fresh else ("resuming from " + store.describe()) if had_state
                      else "no checkpoint yet, starting")

        last_log = [0.0]

        def on_progress(p: Progress) -> None:
            now = time.monotonic()
            if now - last_log[0] >= 10:
                last_log[0] = now
                self.log.info("pages %d, targets %d, requests %d/%d, frontier %d", p.pages, p.targets,
                              p.requests, p.max_requests, p.frontier)
            if self.progress_callback is not None:
                self.progress_callback(p, context)

        crawler = self._crawler = Crawler(config, sink, store, run_id=crawl_run, on_progress=on_progress,
                                          memory=memory, warm_start=bool(self.warm_start))
        try:
            # resume=True is also right on a first try: with no state it is a plain start.
            summary = self._crawler.run(resume=not fresh, fresh=fresh)
        except BaseException:
            # Whatever killed the try, record the budget it spent, so the retry does not overshoot it.
            # Manifest rows appended since the last checkpoint are not flushed: the retry re-crawls from that
            # checkpoint and writes them once (their objects are already in S3, so uploads are skipped).
            _best_effort(store.flush_journal, "budget journal")
            raise
        finally:
            self._crawler = None
        store.flush_journal()

        if self._killed:
            raise AirflowException(f"crawl stopped by on_kill after {summary.pages} pages; its checkpoint is in "
                                   f"{store.describe()} and a retry resumes from it")
        if summary.start_error and summary.pages <= 1 and summary.targets == 0:
            raise AirflowException(f"the start page {config.start_url} could not be crawled: {summary.start_error}")

        self._clean_state(store)
        manifest_keys = sink.all_manifest_keys()
        report_key = self._upload_report(hook, layout, crawl_run, crawler, summary)
        result = summary.to_dict()
        result.update(
            report_key=report_key,
            site=layout.site, bucket=layout.bucket, prefix=layout.prefix,
            objects_prefix=layout.objects_prefix(), manifest_keys=manifest_keys,
            manifest_uri=layout.manifest_uri(), state_prefix=store.describe(), try_number=try_number,
            crawl_key=self.crawl_key,
            objects_uploaded=sink.objects_uploaded, objects_skipped=sink.objects_skipped,
        )
        if self.manifest_event:
            self._emit_manifest_event(context, layout, result)
        self._lineage = lineage.operator_lineage(
            [lineage.site(config.start_url)],
            [lineage.s3(layout.bucket, layout.objects_prefix()),
             lineage.s3(layout.bucket, layout.run_prefix(crawl_run))])
        self.log.info("crawl done: %d targets, %d requests, %d pages (%s)", summary.targets, summary.requests,
                      summary.pages, summary.stop_reason)
        return result

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """OpenLineage: the site read, the S3 objects and the run's manifests written (see lineage.py)."""
        return self._lineage

    def _upload_report(self, hook: S3Hook, layout: S3CrawlLayout, crawl_run: str, crawler: Crawler,
                       summary: CrawlSummary) -> str:
        """The explainable crawl report (Markdown + plots) next to the run's manifests; a report that cannot
        be made is logged, never a reason to fail a crawl whose targets are stored."""
        from airflow_sbcrawl.report import REPORT_NAME, write_report

        run_prefix = layout.run_prefix(crawl_run).rstrip("/")
        try:
            with tempfile.TemporaryDirectory(prefix="sbcrawl-report-") as tmp:
                write_report(crawler, summary, tmp)
                for path in sorted(Path(tmp).iterdir()):
                    hook.load_file(str(path), f"{run_prefix}/{path.name}", layout.bucket, replace=True)
            return f"{run_prefix}/{REPORT_NAME}"
        except Exception as exc:  # matplotlib missing, S3 hiccup: the crawl itself succeeded
            self.log.warning("crawl report not written: %s", exc)
            return ""

    def _clean_state(self, store: S3StateStore) -> None:
        """After a success the run state is disposable: keep the last ``keep_checkpoints`` checkpoints (for
        inspection), drop the rest and the journal. The site memory is elsewhere and stays."""
        # A crawl continued by another task (crawl_key) resumes from its last checkpoint.
        keep = max(1 if self.crawl_key else 0, int(self.keep_checkpoints))
        try:
            seqs = store.checkpoints()
            for seq in seqs[: len(seqs) - keep]:
                store.delete(seq)
            store.journal_reset()
        except Exception as exc:  # leftover state costs storage, not correctness
            self.log.warning("could not clean the crawl state in %s: %s", store.describe(), exc)

    def _point_state_store(self, context: Context, store: S3StateStore, crawl_run: str) -> None:
        """Record where the state lives in the task instance's state store (Airflow >= 3.3), so the UI and
        tools can find it; the key itself is derived, so a missing store never prevents a resume."""
        tss = context.get("task_state_store")
        if tss is None:
            return
        try:
            previous = tss.get(STATE_POINTER_KEY)
            if previous:
                self.log.info("previous try left its crawl state at %s", previous.get("state"))
            tss.set(STATE_POINTER_KEY, {"state": store.describe(), "run": crawl_run})
        except Exception as exc:  # the pointer is a convenience; the crawl must not fail over it
            self.log.warning("could not update task_state_store: %s", exc)

    def _emit_manifest_event(self, context: Context, layout: S3CrawlLayout, result: dict[str, Any]) -> None:
        extra = manifest_event_extra(result)
        uri = layout.manifest_uri()
        events = context["outlet_events"]
        for outlet in self.outlets:
            if isinstance(outlet, AssetAlias):
                events[outlet].add(Asset(uri), extra=extra)
            elif isinstance(outlet, Asset) and outlet.uri == uri:
                events[outlet].extra.update(extra)

    def on_kill(self) -> None:
        # Runs in the signal handler (SIGTERM from the supervisor): only set a flag; the engine checkpoints
        # after the request in flight and run() returns, well within the supervisor's grace period.
        crawler = self._crawler
        if crawler is not None:
            self._killed = True
            crawler.request_stop("task killed (on_kill)")


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
