"""SBCrawlHook: the amazon provider's ``S3Hook``, knowing where a crawl keeps what.

The operators go through it for every S3 call: it checks the connection and the bucket before a crawl,
opens the storage of one task instance's crawl (its run id, checkpoints, budget journal, manifest sink and
the site memory; ``CrawlStorage``), and reads and writes what table detection and lake loading exchange.
Keys come from ``hooks/layout.py``, run ids from ``hooks/runs.py``, the engine's storage protocols from
``hooks/stores.py``.
"""

from __future__ import annotations

import io
import json
import logging
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from airflow.providers.amazon.aws.hooks.s3 import S3Hook
from botocore.exceptions import BotoCoreError, ClientError

from airflow_sbcrawl.crawler import memory as site_memory
from airflow_sbcrawl.crawler.sinks import SinkError
from airflow_sbcrawl.hooks.layout import S3CrawlLayout, join_key
from airflow_sbcrawl.hooks.runs import CrawlTask, rerun_id
from airflow_sbcrawl.hooks.stores import S3Sink, S3StateStore, describe_error

log = logging.getLogger(__name__)

#: Above this size, uploads go through boto3's managed (multipart, threaded) transfer.
MULTIPART_THRESHOLD = 64 * 1024 * 1024
_MISSING = ("NoSuchKey", "404", "NotFound")


@dataclass
class CrawlStorage:
    """What one task instance's crawl reads and writes in S3, opened by :meth:`SBCrawlHook.open_crawl`.

    :param layout: the keys of the crawled site.
    :param run_id: the crawl run id (``hooks/runs.py``): the run folder of the manifests and the report.
    :param sink: targets and manifest rows (the engine's ``Sink``).
    :param store: checkpoints and budget journal, under the task instance's stable state folder.
    :param memory: the site memory every warm start reads and every crawl leaves.
    :param rerun_of: the finished crawl run of this task instance this crawl starts again from, if any.
    """

    layout: S3CrawlLayout
    run_id: str
    sink: S3Sink
    store: S3StateStore
    memory: S3StateStore
    rerun_of: str | None = None

    def start(self, fresh: bool) -> str:
        """Clear the state folder for a fresh start; say how the crawl starts (for the task log)."""
        if fresh:
            self.store.clear()
            return "fresh start"
        if self.store.checkpoints():
            return "resuming from " + self.store.describe()
        return "no checkpoint yet, starting"

    def interrupt(self) -> None:
        """Stop every wait for S3 to come back (the task is being killed); thread-safe."""
        for part in (self.sink, self.store, self.memory):
            part.outages.interrupt()

    def clean(self, keep: int) -> None:
        """After a success the run state is disposable: keep the last ``keep`` checkpoints (for inspection,
        or for the task that continues the crawl), drop the others and the budget journal. The site memory
        is elsewhere and stays. A failure is logged: leftover state costs storage, not correctness."""
        try:
            seqs = self.store.checkpoints()
            for seq in seqs[: len(seqs) - keep]:
                self.store.delete(seq)
            self.store.journal_reset()
        except Exception as exc:
            log.warning("could not clean the crawl state in %s: %s", self.store.describe(), exc)


class SBCrawlHook(S3Hook):
    """``S3Hook`` for the crawl storage: ``aws_conn_id`` connections, endpoint overrides and credentials
    work as for every AWS operator, and the crawl's keys are those of :class:`S3CrawlLayout`."""

    hook_name = "SB Crawl storage (S3)"

    @classmethod
    def for_connection(cls, aws_conn_id: str | None) -> SBCrawlHook:
        """The hook of ``aws_conn_id`` after checking that the connection exists, so that a missing one is
        a clear, non-retryable error before any request rather than a credentials error deep inside boto3
        (``None``: boto3's default credential chain, nothing to check)."""
        from airflow.providers.common.compat.sdk import AirflowFailException, BaseHook

        if aws_conn_id:
            try:
                BaseHook.get_connection(aws_conn_id)
            except Exception as exc:  # AirflowNotFoundException, or the API server's "not found"
                raise AirflowFailException(
                    f"connection {aws_conn_id!r} is not defined: create it (conn_type 'aws', with "
                    "endpoint_url in its extra for a non-AWS S3) or pass aws_conn_id=None to use boto3's "
                    "default credentials") from exc
        return cls(aws_conn_id=aws_conn_id)

    # -- a crawl -------------------------------------------------------------------------------------------
    def check_writable(self, layout: S3CrawlLayout) -> None:
        """Write, read back and delete a probe object in the site's folder; ``SinkError`` saying why not.

        A write probe (not ``head_bucket`` alone) because a bucket can exist and still refuse writes, and a
        crawl must fail before its first request, not after it has spent budget on targets it cannot keep."""
        bucket = layout.bucket
        key = join_key(layout.site_prefix, f".sbcrawl-probe-{uuid.uuid4().hex}")
        try:
            # Some S3 servers (SeaweedFS) create a missing bucket on the first PUT; a typo in the bucket name
            # must fail instead of silently writing elsewhere than intended.
            self.get_conn().head_bucket(Bucket=bucket)
        except (ClientError, BotoCoreError, OSError, ValueError) as exc:
            raise SinkError(f"S3 bucket {bucket!r} does not exist or cannot be reached ({describe_error(exc)}); "
                            "check the bucket name, the connection's endpoint and its credentials") from exc
        try:
            self.load_bytes(b"probe", key=key, bucket_name=bucket, replace=True)
            self.delete_objects(bucket=bucket, keys=[key])
        except (ClientError, BotoCoreError, OSError, ValueError) as exc:
            raise SinkError(
                f"S3 bucket {bucket!r} is not writable at s3://{bucket}/{key} ({describe_error(exc)}); "
                "check the bucket name, the connection's endpoint and its credentials") from exc

    def open_crawl(self, layout: S3CrawlLayout, task: CrawlTask, start_url: str, *,
                   journal_lease: int = 10) -> CrawlStorage:
        """The storage of ``task``'s crawl of ``start_url``.

        When the site memory says this task instance's own crawl already finished (``CrawlTask.finished``),
        its leftover state is cleared and the crawl gets a rerun id: a new incremental crawl from the
        memory that crawl left, whose manifest and Asset event carry what changed since.
        ``crawler.memory.SiteMemoryError`` when the site memory cannot be read."""
        store = S3StateStore(self, layout.bucket, task.state_prefix(layout), journal_lease=journal_lease)
        memory = S3StateStore(self, layout.bucket, layout.memory_prefix())
        run_id, rerun_of = task.crawl_run, None
        last = site_memory.load(memory, start_url)
        if last is not None and task.finished(last.run_id):
            self.log.info("the crawl of this task instance finished as run %s: starting a new incremental "
                          "crawl from its site memory", last.run_id)
            store.clear()
            run_id, rerun_of = rerun_id(run_id), last.run_id
        return CrawlStorage(layout, run_id, S3Sink(self, layout, run_id), store, memory, rerun_of)

    def upload_folder(self, folder: str | Path, bucket: str, prefix: str) -> list[str]:
        """Upload every file of ``folder`` (not its subfolders) under ``prefix``; the keys written."""
        keys = []
        for path in sorted(Path(folder).iterdir()):
            if path.is_file():
                key = join_key(prefix, path.name)
                self.load_file(str(path), key, bucket, replace=True)
                keys.append(key)
        return keys

    # -- reading a crawl back (detection, lake) ------------------------------------------------------------
    def read_manifest(self, bucket: str, keys: list[str]) -> list[dict]:
        """The rows of the given manifest objects, in order."""
        rows: list[dict] = []
        for key in keys:
            buf = io.StringIO(self.read_key(key, bucket))
            rows.extend(json.loads(line) for line in buf if line.strip())
        return rows

    def stream_to_file(self, bucket: str, key: str, path: Path) -> None:
        """Stream one object to ``path`` in 1 MiB chunks, never whole in memory. A plain GET rather than
        ``download_file``: most crawled files are small, and the managed transfer's thread pool per call cost
        more than the transfer itself (measured: it dominated detection of a 180-file crawl)."""
        body = self.get_conn().get_object(Bucket=bucket, Key=key)["Body"]
        with open(path, "wb") as fh:
            for chunk in body.iter_chunks(chunk_size=1024 * 1024):
                fh.write(chunk)

    def put_file(self, bucket: str, key: str, path: Path) -> None:
        """Upload a local file: one streamed PUT when small (Parquet files of one table usually are),
        multipart above ``MULTIPART_THRESHOLD``."""
        if Path(path).stat().st_size > MULTIPART_THRESHOLD:
            self.load_file(filename=path, key=key, bucket_name=bucket, replace=True)
            return
        with open(path, "rb") as fh:
            self.get_conn().put_object(Bucket=bucket, Key=key, Body=fh)

    def read_json(self, bucket: str, key: str) -> Any | None:
        """The JSON document at ``key``, or None when there is no such object."""
        try:
            body = self.get_conn().get_object(Bucket=bucket, Key=key)["Body"].read()
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in _MISSING:
                return None
            raise
        return json.loads(body)

    def write_json(self, bucket: str, key: str, data: Any) -> None:
        """Write ``data`` as one JSON object (keys sorted, UTF-8)."""
        body = json.dumps(data, ensure_ascii=False, sort_keys=True).encode("utf-8")
        self.load_bytes(body, key=key, bucket_name=bucket, replace=True)

    def copy_within(self, bucket: str, source_key: str, dest_key: str) -> None:
        """Server-side copy inside one bucket (no bytes through the worker); a no-op onto itself, which S3
        refuses and which happens when a retry meets the markers its own first try wrote."""
        if source_key != dest_key:
            self.get_conn().copy_object(Bucket=bucket, Key=dest_key, CopySource={"Bucket": bucket, "Key": source_key})
