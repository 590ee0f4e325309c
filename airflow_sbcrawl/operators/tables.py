"""DetectTablesOperator: the statistics tables inside one crawl run's files, from S3 back to S3 as Parquet.

Thin by design: reading files and finding tables is ``airflow_sbcrawl.tables`` (``detect_to_dir``), keys
are ``hooks/layout.py`` (where the output layout is described) and transfers ``SBCrawlHook``
(``hooks/crawl.py``, an ``S3Hook``); this module turns the Airflow context (the triggering Asset events or
a templated list of crawls, the connection) into those calls.
"""

from __future__ import annotations

import collections
import json
import re
import shutil
import tempfile
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from airflow.providers.common.compat.sdk import AirflowException, AirflowFailException, BaseOperator
from botocore.exceptions import BotoCoreError, ClientError

from airflow_sbcrawl.hooks.crawl import SBCrawlHook
from airflow_sbcrawl.hooks.layout import CrawlRef
from airflow_sbcrawl.operators import lineage
from airflow_sbcrawl.progress import ProgressLines
from airflow_sbcrawl.tables import DETECTOR_VERSION, InputFile, detect_to_dir
from airflow_sbcrawl.tables.output import ERRORS_NAME, INDEX_NAME

if TYPE_CHECKING:
    from airflow.sdk import Context

#: The detection summary of a run, next to its index (the operator's XCom for that run).
SUMMARY_NAME = "summary.json"
_NOISE = re.compile(r"'[^']*'|\"[^\"]*\"|\d+")


def crawls_from_context(context: Context) -> list[CrawlRef]:
    """The crawl runs behind an Asset-triggered DAG run: one per distinct manifest event (an event that
    came through the ``sbcrawl-manifests`` alias is listed under the alias and its Asset: counted once)."""
    events = context.get("triggering_asset_events") or {}
    refs: dict[tuple, CrawlRef] = {}
    for key in events:
        for event in events[key]:
            extra = dict(getattr(event, "extra", None) or {})
            if "manifest_keys" not in extra:
                continue  # some other producer's event on the same Asset: nothing to ingest
            ref = CrawlRef.from_mapping(extra)
            refs.setdefault(ref.key(), ref)
    return list(refs.values())


def parse_crawls(value: Any) -> list[CrawlRef]:
    """``crawls`` as given to the operator: one mapping, a list of them, or their JSON text."""
    if value is None or value == "" or value == "None":
        return []
    if isinstance(value, str):
        value = json.loads(value)
    if isinstance(value, dict):
        value = [value]
    refs: dict[tuple, CrawlRef] = {}
    for item in value:
        ref = CrawlRef.from_mapping(dict(item))
        refs.setdefault(ref.key(), ref)
    return list(refs.values())


class DetectTablesOperator(BaseOperator):
    """Find the statistics tables in the files of one or more crawl runs; Parquet + index back to S3.

    For each crawl run: read its manifest rows, and for each distinct file (sha256) download the object
    to a temporary directory (streamed, one file at a time: disk use is one file plus its tables), run
    ``tables.detect_to_dir`` on it and upload the Parquet files to ``<prefix>/<site>/tables/<run>/tables/``;
    the run's ``tables.jsonl`` index, ``errors.jsonl`` and ``summary.json`` follow when every file is done.

    A file that cannot be read (bad bytes, too large, gone from S3) is a line in ``errors.jsonl``, never a
    task failure. S3 being unreachable is a failure (retryable).

    Already-detected files are not read again: after a file is done a marker
    ``tables/_detected/<detector_version>/<sha256>.json`` records its index records and errors; a later
    run meeting the same bytes with the same detector version copies the Parquet files server-side and
    reuses the records (with this run's source URL and run id). A new detector version re-reads everything.

    :param crawls: the crawl runs to process: a mapping or list of mappings as the crawl publishes them
        (the manifest Asset event's ``extra`` or ``SBCrawlOperator``'s return value: bucket, site, run_id,
        manifest_keys, and prefix or objects_prefix), or their JSON. Empty/None: the runs behind the
        triggering Asset events of an Asset-scheduled DAG run.
    :param aws_conn_id: Airflow connection for ``S3Hook``; ``None`` uses boto3's default credential chain.
    :param max_file_bytes: files larger than this (by their manifest size) are recorded as errors, unread.
    :param reuse_detected: skip files already detected by the same detector version (see above).
    """

    template_fields: Sequence[str] = ("crawls", "aws_conn_id", "max_file_bytes")
    template_fields_renderers: ClassVar[dict[str, str]] = {"crawls": "json"}
    ui_color = "#fce5cd"

    def __init__(
        self,
        *,
        crawls: Any = None,
        aws_conn_id: str | None = "aws_default",
        max_file_bytes: int | str = 512 * 1024 * 1024,
        reuse_detected: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.crawls = crawls
        self.aws_conn_id = aws_conn_id
        self.max_file_bytes = max_file_bytes
        self.reuse_detected = reuse_detected
        self._lineage: Any = None

    def execute(self, context: Context) -> dict[str, Any]:
        """Detect the tables of every crawl run; each run's summary and the totals over them (the XCom)."""
        try:
            refs = parse_crawls(self.crawls) or crawls_from_context(context)
            max_bytes = int(self.max_file_bytes)
        except (TypeError, ValueError) as exc:
            raise AirflowFailException(f"invalid crawls/max_file_bytes: {exc}") from exc
        if not refs:
            raise AirflowFailException("no crawl run to process: pass crawls=… or schedule the DAG on the crawl's "
                                       "manifest Asset (or the sbcrawl-manifests alias)")
        results = []
        for ref in refs:
            try:
                results.append(self._detect_run(ref, max_bytes))
            except (ClientError, BotoCoreError) as exc:
                raise AirflowException(f"S3 failed while detecting tables of {ref.site} run {ref.run_id}: {exc}") \
                    from exc
        totals = collections.Counter()
        reasons: collections.Counter[str] = collections.Counter()
        no_table: collections.Counter[str] = collections.Counter()
        for r in results:
            totals.update({k: r[k] for k in ("files", "files_reused", "files_with_tables", "tables",
                                             "observations", "errors", "no_table_found")})
            reasons.update(r["errors_by_reason"])
            no_table.update(r["no_table_reasons"])
        self._lineage = lineage.operator_lineage([lineage.s3(r.bucket, r.layout.objects_prefix()) for r in refs],
                                                 [lineage.s3(r["bucket"], r["tables_prefix"]) for r in results])
        return {"crawls": results, **totals, "errors_by_reason": dict(reasons), "no_table_reasons": dict(no_table),
                "detector_version": DETECTOR_VERSION}

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """OpenLineage: the crawled objects read, the Parquet tables written (see lineage.py)."""
        return self._lineage

    @cached_property
    def hook(self) -> SBCrawlHook:
        """The crawl storage hook of ``aws_conn_id`` (a missing connection fails the task, without retries)."""
        return SBCrawlHook.for_connection(self.aws_conn_id)

    # -- one crawl run ---------------------------------------------------------------------------------
    def _detect_run(self, ref: CrawlRef, max_bytes: int) -> dict[str, Any]:
        hook, out = self.hook, ref.tables_prefix
        rows = hook.read_manifest(ref.bucket, list(ref.manifest_keys))
        # An incremental crawl lists every dataset it checked; only new and changed files carry new content
        # (rows of crawls before recrawls have no status: all new). Gone ones are reported, never deleted.
        gone = sorted(r["url"] for r in rows if r.get("status") == "gone")
        rows = [r for r in rows if r.get("status", "new") in ("new", "changed")]
        files = list({r["sha256"]: r for r in reversed(rows)}.values())[::-1]  # first row of each sha wins
        self.log.info("%s run %s: %d manifest rows, %d distinct files -> s3://%s/%s", ref.site, ref.run_id,
                      len(rows), len(files), ref.bucket, out)
        summary: dict[str, Any] = {
            "site": ref.site, "bucket": ref.bucket, "prefix": ref.prefix, "run_id": ref.run_id,
            "tables_prefix": out, "index_key": out + INDEX_NAME, "files": 0, "files_reused": 0,
            "files_with_tables": 0, "tables": 0, "observations": 0, "errors": 0, "no_table_found": 0,
            "seconds": 0.0, "gone_urls": gone,
        }
        reasons: collections.Counter[str] = collections.Counter()
        no_table: collections.Counter[str] = collections.Counter()
        with tempfile.TemporaryDirectory(prefix="sbcrawl-detect-") as tmp:
            index_path, errors_path = Path(tmp) / INDEX_NAME, Path(tmp) / ERRORS_NAME
            with index_path.open("w", encoding="utf-8") as index, errors_path.open("w", encoding="utf-8") as errs, \
                    ProgressLines(f"{ref.site} run {ref.run_id}: table detection", self.log.info) as progress:
                for number, row in enumerate(files):
                    progress.status = (f"{number:,}/{len(files):,} files, {summary['tables']:,} tables, "
                                       f"{summary['files_reused']:,} files reused")
                    records, errors, no_tables, reused, seconds = self._one_file(ref, row, Path(tmp), max_bytes)
                    for rec in records:
                        index.write(json.dumps(rec, ensure_ascii=False) + "\n")
                    for err in errors:
                        errs.write(json.dumps(err, ensure_ascii=False) + "\n")
                        reasons[reason_key(err)] += 1
                    summary["files"] += 1
                    summary["files_reused"] += reused
                    summary["files_with_tables"] += bool(records)
                    summary["tables"] += len(records)
                    summary["observations"] += sum(r.get("n_observations", 0) for r in records)
                    summary["errors"] += len(errors)
                    summary["no_table_found"] += sum(no_tables.values())
                    no_table.update(no_tables)
                    summary["seconds"] += seconds
            summary["seconds"] = round(summary["seconds"], 3)
            summary["errors_by_reason"] = dict(reasons)
            summary["no_table_reasons"] = dict(no_table)
            # The index goes last: whoever finds it finds every Parquet file it names.
            if summary["errors"]:
                hook.put_file(ref.bucket, out + ERRORS_NAME, errors_path)
            hook.write_json(ref.bucket, out + SUMMARY_NAME, summary)
            hook.put_file(ref.bucket, out + INDEX_NAME, index_path)
        self.log.info("%s run %s: %d files (%d reused), %d tables, %d observations, %d errors %s, "
                      "%d sheets or parts without a table %s", ref.site, ref.run_id, summary["files"],
                      summary["files_reused"], summary["tables"], summary["observations"], summary["errors"],
                      dict(reasons) or "", summary["no_table_found"], dict(no_table) or "")
        return summary

    def _one_file(self, ref: CrawlRef, row: dict[str, Any], tmp: Path,
                  max_bytes: int) -> tuple[list[dict], list[dict], dict[str, int], bool, float]:
        """(index records, errors, sheets without a table by reason, reused?, seconds) of one manifest file;
        never raises for bad content."""
        sha, url = row["sha256"], row.get("url", "")
        hook, out = self.hook, ref.tables_prefix
        marker_key = ref.layout.detected_marker_key(DETECTOR_VERSION, sha)

        def error(reason: str) -> dict:
            return {"source_url": url, "sha256": sha, "member": "", "reason": reason, "format": ""}

        if self.reuse_detected:
            marker = hook.read_json(ref.bucket, marker_key)
            if marker and marker.get("detector_version") == DETECTOR_VERSION:
                records = []
                for rec in marker["records"]:
                    hook.copy_within(ref.bucket, marker["tables_prefix"] + rec["path"], out + rec["path"])
                    prov = {**rec["provenance"], "source_url": url, "crawl_run": ref.run_id}
                    records.append({**rec, "provenance": prov})
                errors = [{**e, "source_url": url} for e in marker.get("errors", [])]
                return records, errors, marker.get("no_table_reasons", {}), True, 0.0

        size = int(row.get("size") or 0)
        if size > max_bytes:
            return [], [error(f"too large: {size} bytes > max_file_bytes {max_bytes}")], {}, False, 0.0
        obj, work = tmp / "object", tmp / "work"
        try:
            try:
                hook.stream_to_file(ref.bucket, ref.layout.object_key(sha), obj)
            except ClientError as exc:
                code = exc.response.get("Error", {}).get("Code", "")
                if code in ("404", "NoSuchKey", "NotFound"):
                    return [], [error("object missing in S3")], {}, False, 0.0
                raise
            name = row.get("filename") or ""
            result = detect_to_dir([InputFile(obj, mime=row.get("mime"), source_url=url, crawl_run=ref.run_id,
                                              name=name)], work)
            records = _read_lines(work / INDEX_NAME)
            errors = _read_lines(work / ERRORS_NAME)
            for rec in records:
                hook.put_file(ref.bucket, out + rec["path"], work / rec["path"])
            # Written after its Parquet files: a marker never points at a file that is not there.
            no_tables = result["no_table_reasons"]
            hook.write_json(ref.bucket, marker_key, {"detector_version": DETECTOR_VERSION, "sha256": sha,
                                                      "tables_prefix": out, "records": records, "errors": errors,
                                                      "no_table_reasons": no_tables})
            return records, errors, no_tables, False, float(result.get("seconds", 0.0))
        finally:
            obj.unlink(missing_ok=True)
            shutil.rmtree(work, ignore_errors=True)


def reason_key(error: dict[str, Any]) -> str:
    """A short, countable category of a read error: its format and the reason's head, without the
    quoted names and numbers that make every message unique ("xlsx: sheet …", "pdf: page …")."""
    reason = str(error.get("reason", "")).split(":", 1)[0]
    reason = _NOISE.sub("…", reason).strip()[:60] or "unknown"
    fmt = error.get("format") or ""
    return f"{fmt}: {reason}" if fmt else reason


def _read_lines(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]

