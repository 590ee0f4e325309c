"""The crawl engine's storage protocols over S3: ``S3Sink`` (``crawler.sinks.Sink``: targets and manifest
rows) and ``S3StateStore`` (``crawler.state.StateStore``: checkpoints and the budget journal).

Both write through the amazon provider's ``S3Hook`` (in practice ``hooks.crawl.SBCrawlHook``, which builds
them), so ``aws_conn_id`` connections, endpoint overrides and credentials work as for every other AWS
operator; where their keys go is ``hooks/layout.py``. The engine is imported for its protocols' error type
only.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import os
import threading
import time
import zlib
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from boto3.exceptions import S3UploadFailedError
from botocore.exceptions import BotoCoreError, ClientError, HTTPClientError
from botocore.exceptions import ConnectionError as EndpointError

from airflow_sbcrawl.crawler.manifest import row_problem
from airflow_sbcrawl.crawler.sinks import SinkError

if TYPE_CHECKING:
    from airflow.providers.amazon.aws.hooks.s3 import S3Hook

    from airflow_sbcrawl.hooks.layout import S3CrawlLayout


log = logging.getLogger(__name__)
T = TypeVar("T")

#: Seconds a store waits for S3 to come back before it fails (a restarted S3 server, a network blip).
OUTAGE_WAIT = 300.0


def transient(exc: BaseException) -> bool:
    """Whether an S3 failure may pass: S3 unreachable, a connection dropped, a 5xx answer."""
    if isinstance(exc, EndpointError | HTTPClientError | S3UploadFailedError):
        return True
    if isinstance(exc, ClientError):
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0
        return status >= 500 or exc.response.get("Error", {}).get("Code") in ("SlowDown", "ServiceUnavailable")
    return False


class Outages:
    """Rides out S3 outages: a call failing for a reason that may pass is made again, backing off, for up
    to ``wait`` seconds. A crawl cut off from its storage then pauses instead of failing, so what it
    downloaded is stored with its manifest row when S3 is back, and nothing is downloaded twice because a
    failed try lost the rows it had not written yet.

    ``interrupt()`` ends a wait at once with a ``SinkError`` (and every later one): a task killed during an
    outage must stop within the supervisor's grace period, not sleep through the rest of ``wait``."""

    def __init__(self, wait: float = OUTAGE_WAIT) -> None:
        self.wait = wait
        self.outages = 0  # outages ridden out (a call failed, then succeeded)
        self._interrupted = threading.Event()

    def interrupt(self) -> None:
        """Stop waiting for S3 (thread-safe; a signal handler may call it)."""
        self._interrupted.set()

    def call(self, what: str, fn: Callable[..., T], *args, **kwargs) -> T:
        """``fn(*args, **kwargs)``, made again while it fails transiently (``what`` names it in the log)."""
        deadline = 0.0
        pause = 0.25
        while True:
            try:
                result = fn(*args, **kwargs)
            except Exception as exc:
                now = time.monotonic()
                if not transient(exc) or (deadline and now >= deadline) or self.wait <= 0:
                    raise
                if not deadline:
                    deadline = now + self.wait
                    log.warning("S3 unreachable while trying to %s (%s): waiting up to %gs for it to come back",
                                what, describe_error(exc), self.wait)
                if self._interrupted.wait(min(pause, max(deadline - now, 0.0))):
                    raise SinkError(f"stopped while S3 was unreachable, trying to {what}: "
                                    f"{describe_error(exc)}") from exc
                pause = min(pause * 2, 5.0)
                continue
            if deadline:
                self.outages += 1
                log.warning("S3 is back: %s done", what)
            return result


def describe_error(exc: Exception) -> str:
    """An S3 failure in one line: the error code and message of a ``ClientError``, else type and text."""
    if isinstance(exc, ClientError):
        err = exc.response.get("Error", {})
        return f"{err.get('Code', '?')}: {err.get('Message', '') or exc}"
    return f"{type(exc).__name__}: {exc}"


#: S3 keeps at most 2 KB of user metadata with an object: a row longer than this, once compressed, loses
#: its free-text fields, and if it is still too long it is not kept with the object.
_ROW_METADATA_LIMIT = 1800
_ROW_KEY = "sbcrawl-row"
#: Object and manifest times come from the same S3 server; the slack covers its clock's resolution.
_CLOCK_SLACK = timedelta(seconds=5)


def row_metadata(row: dict) -> dict[str, str]:
    """A manifest row as S3 user metadata (ASCII: zlib-compressed JSON in base64); {} when it cannot fit."""
    for dropped in ((), ("found_on", "tag_path", "filename", "etag", "last_modified")):
        kept = {k: v for k, v in row.items() if k not in dropped}
        text = base64.b64encode(zlib.compress(json.dumps(kept, sort_keys=True).encode("utf-8"))).decode("ascii")
        if len(text) <= _ROW_METADATA_LIMIT:
            return {_ROW_KEY: text}
    return {}


def metadata_row(metadata: dict[str, str]) -> dict | None:
    """The manifest row an object's metadata holds, or None (none, or not a row: storage is not trusted)."""
    text = metadata.get(_ROW_KEY)
    if not text:
        return None
    try:
        return record_row(zlib.decompress(base64.b64decode(text, validate=True)).decode("utf-8"))
    except (ValueError, zlib.error):
        return None


def record_row(text: str) -> dict | None:
    """The manifest row a kept row's JSON holds, or None when it is not one (storage is not trusted)."""
    try:
        row = json.loads(text)
    except ValueError:
        return None
    return row if isinstance(row, dict) and not row_problem(row) else None


def list_keys(hook: S3Hook, bucket: str, prefix: str) -> list[str]:
    """Every key under ``prefix`` (the hook pages through the listing)."""
    return list(hook.list_keys(bucket_name=bucket, prefix=prefix) or [])


class S3Sink:
    """The engine's ``Sink`` over S3. Rows are buffered in memory between flushes (a page's worth to a
    checkpoint's worth) and written as one immutable object per flush: S3 has no append, and an object
    is either whole or absent, so a kill never leaves a torn manifest.

    A buffered row is durable all the same, so that a try failing before its flush loses no download: its
    object carries it in its metadata, or, when the object cannot (its content was stored already, by another
    URL or an earlier run; a row too long for S3's metadata), a small record of its own keeps it
    (``layout.row_record_key``) until the flush that writes it. ``recover_rows`` reads both back."""

    def __init__(self, hook: S3Hook, layout: S3CrawlLayout, run_id: str, outage_wait: float = OUTAGE_WAIT) -> None:
        self.hook = hook
        self.layout = layout
        self.run_id = run_id
        self.outages = Outages(outage_wait)
        self._run_prefix = layout.run_prefix(run_id)
        self._pending: list[dict] = []
        self._next_seq: int | None = None  # found by listing, so a retry never overwrites a previous try's rows
        self._known: set[str] = set()  # objects seen to exist: saves a HEAD when content repeats
        self._records: list[str] = []  # keys of the kept rows waiting for the next flush
        self.manifest_keys: list[str] = []
        self.objects_uploaded = 0
        self.objects_skipped = 0

    # -- objects ---------------------------------------------------------------------------------------
    def has_object(self, sha256: str) -> bool:
        """Whether the site already holds this content (a HEAD, remembered once seen)."""
        if sha256 in self._known:
            return True
        try:
            found = self.outages.call("check an object", self.hook.head_object, self.layout.object_key(sha256),
                                      self.layout.bucket) is not None
        except (ClientError, BotoCoreError, S3UploadFailedError) as exc:
            raise SinkError(f"cannot check {self.layout.url(self.layout.object_key(sha256))}: "
                            f"{describe_error(exc)}") from exc
        if found:
            self._known.add(sha256)
        return found

    def put_object(self, sha256: str, path: Path, mime: str, row: dict) -> None:
        """Upload the file at ``path`` under its sha256 unless the site holds it already; deletes ``path``.
        ``row`` waits in memory for the next flush, durable meanwhile where ``recover_rows`` finds it after a
        failed try: in the object's metadata, else (content stored already) in a record of its own."""
        key = self.layout.object_key(sha256)
        try:
            if self.has_object(sha256):
                self.objects_skipped += 1
                self._keep_row(row)
                return
            metadata = row_metadata(row)
            # boto3's upload_file (what the hook's load_file calls, which cannot set metadata): multipart above
            # the transfer threshold, streamed from disk, so a 2 GB target never sits in memory.
            extra = {**self.hook.extra_args, "ContentType": mime, "Metadata": metadata}
            self.outages.call("store an object", self.hook.get_conn().upload_file, str(path), self.layout.bucket,
                              key, ExtraArgs=extra, Config=self.hook.transfer_config)
            self._known.add(sha256)
            self.objects_uploaded += 1
            if not metadata:
                self._keep_row(row)
        except (ClientError, BotoCoreError, S3UploadFailedError) as exc:
            raise SinkError(f"cannot store {self.layout.url(key)}: {describe_error(exc)}") from exc
        finally:
            Path(path).unlink(missing_ok=True)  # the sink owns the temporary file

    def _keep_row(self, row: dict) -> None:
        """Write ``row`` as a record of its own until the flush that writes it (no object carries it)."""
        key = self.layout.row_record_key(self.run_id, row["url"])
        body = json.dumps(row, ensure_ascii=False, sort_keys=True).encode("utf-8")
        try:
            self.outages.call("keep a manifest row", self.hook.load_bytes, body, key=key,
                              bucket_name=self.layout.bucket, replace=True)
        except (ClientError, BotoCoreError) as exc:
            raise SinkError(f"cannot keep the manifest row of {row['url']} in {self.layout.url(key)}: "
                            f"{describe_error(exc)}") from exc
        self._records.append(key)

    def _drop_records(self, keys: list[str]) -> None:
        """Remove kept rows a manifest object now holds. A failure only leaves them behind (a row read back
        from them is skipped when its URL has a row already), so it is logged, not raised."""
        client = self.hook.get_conn()
        try:
            for i in range(0, len(keys), 1000):  # DeleteObjects takes at most 1000 keys
                batch = {"Objects": [{"Key": key} for key in keys[i:i + 1000]], "Quiet": True}
                self.outages.call("remove kept manifest rows", client.delete_objects, Bucket=self.layout.bucket,
                                  Delete=batch)
        except (ClientError, BotoCoreError) as exc:
            log.warning("could not remove %d kept manifest rows, written to the manifest since (%s): the next "
                        "resume removes them", len(keys), describe_error(exc))

    # -- manifest rows ---------------------------------------------------------------------------------
    def append_rows(self, rows: list[dict]) -> None:
        """Buffer manifest rows until the next ``flush``."""
        self._pending.extend(rows)

    def _manifest_keys_in_s3(self) -> list[str]:
        keys = [k for k in self.outages.call("list the manifest", list_keys, self.hook, self.layout.bucket,
                                             self._run_prefix)
                if k.rsplit("/", 1)[-1].startswith("manifest-") and k.endswith(".jsonl")]
        return sorted(keys)  # zero-padded sequence numbers: lexical order is write order

    def _seq_from_key(self, key: str) -> int:
        return int(key.rsplit("/", 1)[-1][len("manifest-"):-len(".jsonl")])

    def flush(self) -> None:
        """Write the buffered rows as the run's next manifest object (none when nothing is buffered)."""
        if not self._pending:
            return
        if self._next_seq is None:
            existing = self._manifest_keys_in_s3()
            self._next_seq = self._seq_from_key(existing[-1]) + 1 if existing else 1
        key = self.layout.manifest_key(self.run_id, self._next_seq)
        body = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in self._pending)
        try:
            self.outages.call("write manifest rows", self.hook.load_bytes, body.encode("utf-8"), key=key,
                              bucket_name=self.layout.bucket, replace=True)
        except (ClientError, BotoCoreError) as exc:
            raise SinkError(f"cannot write the manifest {self.layout.url(key)}: {describe_error(exc)}") from exc
        self._next_seq += 1
        self._pending.clear()
        self.manifest_keys.append(key)
        if self._records:
            self._drop_records(self._records)
            self._records = []

    def read_rows(self) -> list[dict]:
        """Rows of this run already durable in S3, in write order (the engine's resume replays them)."""
        keys = self._manifest_keys_in_s3()
        self._next_seq = self._seq_from_key(keys[-1]) + 1 if keys else 1
        self.manifest_keys = list(keys)
        rows: list[dict] = []
        for key in keys:
            text = self.outages.call("read the manifest", self.hook.read_key, key, self.layout.bucket)
            rows.extend(json.loads(line) for line in text.splitlines() if line.strip())
        return rows + list(self._pending)

    def recover_rows(self, run_id: str) -> int:
        """Rows of ``run_id`` that a try which failed before its flush left durable outside the manifest
        become the run's next manifest object: those of its objects' metadata (only objects written after the
        site's newest manifest object can hold one: every earlier try and run flushed its rows before it
        ended) and its kept rows, which are then removed."""
        rows = self.read_rows()
        have = {row.get("url") for row in rows if row.get("run_id") == run_id}
        recovered = []

        def take(row: dict | None) -> None:
            if row is not None and row.get("run_id") == run_id and row.get("url") not in have:
                recovered.append(row)
                have.add(row.get("url"))

        since = self._newest_manifest_time()
        for key, modified in self._objects_with_times():
            if since is None or modified >= since - _CLOCK_SLACK:
                head = self.outages.call("check an object", self.hook.get_conn().head_object,
                                         Bucket=self.layout.bucket, Key=key)
                take(metadata_row(head.get("Metadata", {})))
        records = self.outages.call("list kept manifest rows", list_keys, self.hook, self.layout.bucket,
                                    self.layout.row_records_prefix(self.run_id))
        for key in records:
            take(record_row(self.outages.call("read a kept manifest row", self.hook.read_key, key,
                                              self.layout.bucket)))
        if recovered:
            log.warning("recovered %d manifest rows of targets stored by an interrupted try", len(recovered))
            self.append_rows(recovered)
            self.flush()
        if records:
            self._drop_records(records)
        return len(recovered)

    def _listing(self, prefix: str) -> list[dict]:
        """The objects under ``prefix`` with their times (the hook's list_keys gives keys only)."""
        def pages() -> list[dict]:
            paginator = self.hook.get_conn().get_paginator("list_objects_v2")
            return [obj for page in paginator.paginate(Bucket=self.layout.bucket, Prefix=prefix)
                    for obj in page.get("Contents", [])]
        return self.outages.call("list objects", pages)

    def _newest_manifest_time(self) -> datetime | None:
        times = [obj["LastModified"] for obj in self._listing(self.layout.runs_prefix())
                 if obj["Key"].rsplit("/", 1)[-1].startswith("manifest-")]
        return max(times, default=None)

    def _objects_with_times(self) -> list[tuple[str, datetime]]:
        return [(obj["Key"], obj["LastModified"]) for obj in self._listing(self.layout.objects_prefix())]

    def all_manifest_keys(self) -> list[str]:
        """Every manifest object of the run in S3, every try's, in write order."""
        return self._manifest_keys_in_s3()

    def describe(self) -> str:
        """The site's folder, for logs."""
        return f"s3://{self.layout.bucket}/{self.layout.site_prefix}"


class S3StateStore:
    """The engine's ``StateStore`` over S3, under one task instance's stable prefix.

    Checkpoint files are uploaded in the order given (``MANIFEST.json`` last) and a checkpoint is listed
    only once its ``MANIFEST.json`` exists, the S3 counterpart of the local store's atomic rename.

    The budget journal holds cumulative totals, so only its last line matters: it is one small object,
    written before the spending it records. The engine's budget records requests ``journal_lease`` at a
    time (and bytes a MiB ahead), so this is one PUT per ``journal_lease`` requests; when S3 cannot be
    written, no request is sent. A try killed at any moment, or cut off from S3, therefore leaves at most
    ``journal_lease`` requests of the budget unused, and never lets the retry overshoot it."""

    def __init__(self, hook: S3Hook, bucket: str, prefix: str, journal_lease: int = 10,
                 outage_wait: float = OUTAGE_WAIT) -> None:
        self.hook = hook
        self.bucket = bucket
        self.prefix = prefix if prefix.endswith("/") else prefix + "/"
        self.journal_lease = journal_lease
        self.outages = Outages(outage_wait)
        self._journal_line: str | None = None
        self._journal_dirty = False

    def _ckpt_prefix(self, seq: int) -> str:
        return f"{self.prefix}ckpt-{seq:08d}/"

    @property
    def spool_root(self) -> Path:
        """Where the crawl keeps the answers since its last checkpoint (``crawler.spool``): on this worker's
        disk, not in S3 (a PUT per answer would double the requests). A retry on the same worker replays
        them; one on another worker asks the site again, as without them."""
        cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        name = hashlib.sha256(f"{self.bucket}/{self.prefix}".encode()).hexdigest()[:24]
        return cache / "airflow-sbcrawl" / "spool" / name

    @property
    def journal_key(self) -> str:
        """The key of the budget journal (one object: its last line)."""
        return f"{self.prefix}journal"

    def checkpoints(self) -> list[int]:
        """Sequence numbers of the complete checkpoints (those whose ``MANIFEST.json`` exists), oldest first."""
        seqs = set()
        for key in self.outages.call("list checkpoints", list_keys, self.hook, self.bucket, self.prefix + "ckpt-"):
            folder, _, name = key[len(self.prefix):].partition("/")
            if name == "MANIFEST.json" and folder[5:].isdigit():
                seqs.add(int(folder[5:]))
        return sorted(seqs)

    def write(self, seq: int, files: dict[str, bytes]) -> None:
        """Upload one checkpoint's files in the order given (``MANIFEST.json`` last: it makes it complete)."""
        for name, data in files.items():  # dict order: MANIFEST.json comes last
            self.outages.call("write a checkpoint", self.hook.load_bytes, data, key=self._ckpt_prefix(seq) + name,
                              bucket_name=self.bucket, replace=True)

    def read(self, seq: int, name: str) -> bytes:
        """One file of a checkpoint; ``FileNotFoundError`` when it cannot be read."""
        key = self._ckpt_prefix(seq) + name
        try:
            obj = self.outages.call("read a checkpoint", self.hook.get_conn().get_object, Bucket=self.bucket, Key=key)
        except ClientError as exc:
            # FileNotFoundError is an OSError: the engine then treats the checkpoint as torn, not fatal.
            raise FileNotFoundError(f"s3://{self.bucket}/{key}: {describe_error(exc)}") from exc
        return obj["Body"].read()

    def delete(self, seq: int) -> None:
        """Remove one checkpoint's files."""
        keys = self.outages.call("list a checkpoint", list_keys, self.hook, self.bucket, self._ckpt_prefix(seq))
        if keys:
            self.outages.call("delete a checkpoint", self.hook.delete_objects, bucket=self.bucket, keys=keys)

    # -- budget journal --------------------------------------------------------------------------------
    def journal_append(self, line: str) -> None:
        """Record the budget's new totals, written before the spending they cover."""
        self._journal_line = line
        self._journal_dirty = True
        self.flush_journal()

    def flush_journal(self) -> None:
        """Write the last journal line if it is not in S3 yet (a killed try calls it on its way out)."""
        if self._journal_dirty and self._journal_line is not None:
            self.outages.call("write the budget journal", self.hook.load_bytes,
                              (self._journal_line + "\n").encode("ascii"), key=self.journal_key,
                              bucket_name=self.bucket, replace=True)
            self._journal_dirty = False

    def journal_lines(self) -> list[str]:
        """The journal's lines in S3, then the one not written yet (only the last one counts)."""
        lines = [] if self._journal_line is None else [self._journal_line]
        try:
            obj = self.outages.call("read the budget journal", self.hook.get_conn().get_object, Bucket=self.bucket,
                                    Key=self.journal_key)
            lines = obj["Body"].read().decode("ascii", "replace").splitlines() + lines
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") not in ("NoSuchKey", "404"):
                raise
        return lines

    def journal_reset(self) -> None:
        """Forget the journal (a checkpoint now holds what it recorded)."""
        self._journal_line = None
        self._journal_dirty = False
        # The raw client: the hook's delete_objects logs every call, and this runs at every checkpoint.
        self.outages.call("reset the budget journal", self.hook.get_conn().delete_object, Bucket=self.bucket,
                          Key=self.journal_key)

    def clear(self) -> None:
        """Remove every checkpoint and the journal (a fresh start of the same task instance)."""
        keys = list_keys(self.hook, self.bucket, self.prefix)
        for i in range(0, len(keys), 1000):
            self.hook.delete_objects(bucket=self.bucket, keys=keys[i:i + 1000])
        self._journal_line = None
        self._journal_dirty = False

    def describe(self) -> str:
        """The state folder, for logs and the crawl's result."""
        return f"s3://{self.bucket}/{self.prefix}"

