"""S3 storage for the crawl engine, over the amazon provider's ``S3Hook`` (so ``aws_conn_id`` connections,
endpoint overrides and credentials work as for every other AWS operator).

Layout under ``s3://<bucket>/<prefix>/<site>/`` (site = the start URL's host without "www."):

* ``objects/<sha256>`` — each target once, content-addressed; an upload is skipped when the key exists,
  so a replay after a retry never stores a target twice.
* ``runs/<run_id>/manifest-<seq>.jsonl`` — the manifest rows of one crawl run, one object per ``flush()``
  (the engine flushes before every checkpoint, so every row a checkpoint counts is durable in S3).
* ``state/<dag_id>/<run_id>/<task_id>/<map_index>/ckpt-<seq>/<file>`` and ``.../journal`` — checkpoints
  of one task instance (a key stable across its tries) and its budget journal.

The engine's protocols (``crawler.sinks.Sink``, ``crawler.state.StateStore``) are implemented without
importing the engine's internals beyond them.
"""

from __future__ import annotations

import io
import json
import logging
import re
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from botocore.exceptions import BotoCoreError, ClientError

from airflow_sbcrawl.crawler.sinks import SinkError
from airflow_sbcrawl.crawler.urls import normalize

if TYPE_CHECKING:
    from airflow.providers.amazon.aws.hooks.s3 import S3Hook

log = logging.getLogger(__name__)

_UNSAFE = re.compile(r"[^A-Za-z0-9._=-]+")


def s3_hook(aws_conn_id: str | None) -> S3Hook:
    """The amazon provider's S3Hook, after checking that the connection exists, so that a missing one is a
    clear, non-retryable error before any request rather than a credentials error deep inside boto3."""
    from airflow.providers.amazon.aws.hooks.s3 import S3Hook
    from airflow.providers.common.compat.sdk import AirflowFailException, BaseHook

    if aws_conn_id:
        try:
            BaseHook.get_connection(aws_conn_id)
        except Exception as exc:  # AirflowNotFoundException, or the API server's "not found"
            raise AirflowFailException(
                f"connection {aws_conn_id!r} is not defined: create it (conn_type 'aws', with "
                "endpoint_url in its extra for a non-AWS S3) or pass aws_conn_id=None to use boto3's "
                "default credentials") from exc
    return S3Hook(aws_conn_id=aws_conn_id)


def site_key(start_url: str) -> str:
    """The site folder of a start URL: its host without "www.", a non-default port kept after "_"."""
    netloc = normalize(start_url).split("/", 3)[2]
    host = netloc.removeprefix("www.")
    return host.replace(":", "_")


def safe_segment(value: str) -> str:
    """One S3 key segment from an Airflow id (run ids hold ':' and '+'): readable, no '/', stable."""
    cleaned = _UNSAFE.sub("_", value).strip("_")
    return cleaned or "_"


def _join(*parts: str) -> str:
    return "/".join(p.strip("/") for p in parts if p and p.strip("/"))


@dataclass(frozen=True)
class S3CrawlLayout:
    """Every key a crawl of one site writes, in one place (operator, tests and ingestion agree on it)."""

    bucket: str
    prefix: str
    site: str

    @property
    def site_prefix(self) -> str:
        return _join(self.prefix, self.site)

    def object_key(self, sha256: str) -> str:
        return _join(self.site_prefix, "objects", sha256)

    def objects_prefix(self) -> str:
        return _join(self.site_prefix, "objects") + "/"

    def run_prefix(self, run_id: str) -> str:
        return _join(self.site_prefix, "runs", safe_segment(run_id)) + "/"

    def state_prefix(self, dag_id: str, run_id: str, task_id: str, map_index: int | None = None) -> str:
        """The crawl state of one task instance, or (no ``map_index``) of a crawl that several task instances
        continue, ``task_id`` being then its crawl key."""
        return _join(self.site_prefix, "state", safe_segment(dag_id), safe_segment(run_id),
                     safe_segment(task_id), "" if map_index is None else str(map_index)) + "/"

    def memory_prefix(self) -> str:
        """The site memory (crawler/memory.py): one per site, read by every warm start."""
        return _join(self.site_prefix, "memory") + "/"

    def manifest_uri(self) -> str:
        """The URI of the site's manifest Asset (one per site, whatever the run)."""
        return f"s3://{self.bucket}/{_join(self.site_prefix, 'manifest')}"

    def url(self, key: str) -> str:
        return f"s3://{self.bucket}/{key}"


def _describe_error(exc: Exception) -> str:
    if isinstance(exc, ClientError):
        err = exc.response.get("Error", {})
        return f"{err.get('Code', '?')}: {err.get('Message', '') or exc}"
    return f"{type(exc).__name__}: {exc}"


def check_bucket_writable(hook: S3Hook, bucket: str, prefix: str) -> None:
    """Write, read back and delete a probe object under ``prefix``; raises ``SinkError`` saying why not.

    A write probe (not ``head_bucket``) because a bucket can exist and still refuse writes, and the crawl
    must fail before it sends its first request, not after it has spent budget on targets it cannot keep."""
    key = _join(prefix, f".sbcrawl-probe-{uuid.uuid4().hex}")
    try:
        # Some S3 servers (SeaweedFS) create a missing bucket on the first PUT; a typo in the bucket name
        # must fail instead of silently writing elsewhere than intended.
        hook.get_conn().head_bucket(Bucket=bucket)
    except (ClientError, BotoCoreError, OSError, ValueError) as exc:
        raise SinkError(f"S3 bucket {bucket!r} does not exist or cannot be reached ({_describe_error(exc)}); "
                        "check the bucket name, the connection's endpoint and its credentials") from exc
    try:
        hook.load_bytes(b"probe", key=key, bucket_name=bucket, replace=True)
        hook.delete_objects(bucket=bucket, keys=[key])
    except (ClientError, BotoCoreError, OSError, ValueError) as exc:
        raise SinkError(
            f"S3 bucket {bucket!r} is not writable at s3://{bucket}/{key} ({_describe_error(exc)}); "
            "check the bucket name, the connection's endpoint and its credentials") from exc


def _list_keys(hook: S3Hook, bucket: str, prefix: str) -> list[str]:
    return list(hook.list_keys(bucket_name=bucket, prefix=prefix) or [])


class S3Sink:
    """The engine's ``Sink`` over S3. Rows are buffered in memory between flushes (a page's worth to a
    checkpoint's worth) and written as one immutable object per flush: S3 has no append, and an object
    is either whole or absent, so a kill never leaves a torn manifest."""

    def __init__(self, hook: S3Hook, layout: S3CrawlLayout, run_id: str) -> None:
        self.hook = hook
        self.layout = layout
        self.run_id = run_id
        self._run_prefix = layout.run_prefix(run_id)
        self._pending: list[dict] = []
        self._next_seq: int | None = None  # found by listing, so a retry never overwrites a previous try's rows
        self._known: set[str] = set()  # objects seen to exist: saves a HEAD when content repeats
        self.manifest_keys: list[str] = []
        self.objects_uploaded = 0
        self.objects_skipped = 0

    # -- objects ---------------------------------------------------------------------------------------
    def has_object(self, sha256: str) -> bool:
        if sha256 in self._known:
            return True
        try:
            found = self.hook.head_object(self.layout.object_key(sha256), self.layout.bucket) is not None
        except (ClientError, BotoCoreError) as exc:
            raise SinkError(f"cannot check {self.layout.url(self.layout.object_key(sha256))}: "
                            f"{_describe_error(exc)}") from exc
        if found:
            self._known.add(sha256)
        return found

    def put_object(self, sha256: str, path: Path, mime: str) -> None:
        key = self.layout.object_key(sha256)
        try:
            if self.has_object(sha256):
                self.objects_skipped += 1
                return
            # load_file hands the path to boto3's upload_file: multipart above the transfer threshold,
            # streamed from disk, so a 2 GB target never sits in memory. replace=True skips the hook's own
            # existence check, already made above.
            self.hook.load_file(filename=path, key=key, bucket_name=self.layout.bucket, replace=True)
            self._known.add(sha256)
            self.objects_uploaded += 1
        except (ClientError, BotoCoreError) as exc:
            raise SinkError(f"cannot store {self.layout.url(key)}: {_describe_error(exc)}") from exc
        finally:
            Path(path).unlink(missing_ok=True)  # the sink owns the temporary file

    # -- manifest rows ---------------------------------------------------------------------------------
    def append_rows(self, rows: list[dict]) -> None:
        self._pending.extend(rows)

    def _manifest_keys_in_s3(self) -> list[str]:
        keys = [k for k in _list_keys(self.hook, self.layout.bucket, self._run_prefix)
                if k.rsplit("/", 1)[-1].startswith("manifest-") and k.endswith(".jsonl")]
        return sorted(keys)  # zero-padded sequence numbers: lexical order is write order

    def _seq_from_key(self, key: str) -> int:
        return int(key.rsplit("/", 1)[-1][len("manifest-"):-len(".jsonl")])

    def flush(self) -> None:
        if not self._pending:
            return
        if self._next_seq is None:
            existing = self._manifest_keys_in_s3()
            self._next_seq = self._seq_from_key(existing[-1]) + 1 if existing else 1
        key = f"{self._run_prefix}manifest-{self._next_seq:06d}.jsonl"
        body = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in self._pending)
        try:
            self.hook.load_bytes(body.encode("utf-8"), key=key, bucket_name=self.layout.bucket, replace=True)
        except (ClientError, BotoCoreError) as exc:
            raise SinkError(f"cannot write the manifest {self.layout.url(key)}: {_describe_error(exc)}") from exc
        self._next_seq += 1
        self._pending.clear()
        self.manifest_keys.append(key)

    def read_rows(self) -> list[dict]:
        """Rows of this run already durable in S3, in write order (the engine's resume replays them)."""
        keys = self._manifest_keys_in_s3()
        self._next_seq = self._seq_from_key(keys[-1]) + 1 if keys else 1
        self.manifest_keys = list(keys)
        rows: list[dict] = []
        for key in keys:
            text = self.hook.read_key(key, self.layout.bucket)
            rows.extend(json.loads(line) for line in text.splitlines() if line.strip())
        return rows + list(self._pending)

    def all_manifest_keys(self) -> list[str]:
        return self._manifest_keys_in_s3()

    def describe(self) -> str:
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

    def __init__(self, hook: S3Hook, bucket: str, prefix: str, journal_lease: int = 10) -> None:
        self.hook = hook
        self.bucket = bucket
        self.prefix = prefix if prefix.endswith("/") else prefix + "/"
        self.journal_lease = journal_lease
        self._journal_line: str | None = None
        self._journal_dirty = False

    def _ckpt_prefix(self, seq: int) -> str:
        return f"{self.prefix}ckpt-{seq:08d}/"

    @property
    def journal_key(self) -> str:
        return f"{self.prefix}journal"

    def checkpoints(self) -> list[int]:
        seqs = set()
        for key in _list_keys(self.hook, self.bucket, self.prefix + "ckpt-"):
            folder, _, name = key[len(self.prefix):].partition("/")
            if name == "MANIFEST.json" and folder[5:].isdigit():
                seqs.add(int(folder[5:]))
        return sorted(seqs)

    def write(self, seq: int, files: dict[str, bytes]) -> None:
        for name, data in files.items():  # dict order: MANIFEST.json comes last
            self.hook.load_bytes(data, key=self._ckpt_prefix(seq) + name, bucket_name=self.bucket, replace=True)

    def read(self, seq: int, name: str) -> bytes:
        key = self._ckpt_prefix(seq) + name
        try:
            obj = self.hook.get_conn().get_object(Bucket=self.bucket, Key=key)
        except ClientError as exc:
            # FileNotFoundError is an OSError: the engine then treats the checkpoint as torn, not fatal.
            raise FileNotFoundError(f"s3://{self.bucket}/{key}: {_describe_error(exc)}") from exc
        return obj["Body"].read()

    def delete(self, seq: int) -> None:
        keys = _list_keys(self.hook, self.bucket, self._ckpt_prefix(seq))
        if keys:
            self.hook.delete_objects(bucket=self.bucket, keys=keys)

    # -- budget journal --------------------------------------------------------------------------------
    def journal_append(self, line: str) -> None:
        self._journal_line = line
        self._journal_dirty = True
        self.flush_journal()

    def flush_journal(self) -> None:
        if self._journal_dirty and self._journal_line is not None:
            self.hook.load_bytes((self._journal_line + "\n").encode("ascii"), key=self.journal_key,
                                 bucket_name=self.bucket, replace=True)
            self._journal_dirty = False

    def journal_lines(self) -> list[str]:
        lines = [] if self._journal_line is None else [self._journal_line]
        try:
            obj = self.hook.get_conn().get_object(Bucket=self.bucket, Key=self.journal_key)
            lines = obj["Body"].read().decode("ascii", "replace").splitlines() + lines
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") not in ("NoSuchKey", "404"):
                raise
        return lines

    def journal_reset(self) -> None:
        self._journal_line = None
        self._journal_dirty = False
        # The raw client: the hook's delete_objects logs every call, and this runs at every checkpoint.
        self.hook.get_conn().delete_object(Bucket=self.bucket, Key=self.journal_key)

    def clear(self) -> None:
        """Remove every checkpoint and the journal (a fresh start of the same task instance)."""
        keys = _list_keys(self.hook, self.bucket, self.prefix)
        for i in range(0, len(keys), 1000):
            self.hook.delete_objects(bucket=self.bucket, keys=keys[i:i + 1000])
        self._journal_line = None
        self._journal_dirty = False

    def describe(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}"


def read_manifest(hook: S3Hook, bucket: str, keys: list[str]) -> list[dict]:
    """Rows of the given manifest objects, in order (for ingestion and tests)."""
    rows: list[dict] = []
    for key in keys:
        buf = io.StringIO(hook.read_key(key, bucket))
        rows.extend(json.loads(line) for line in buf if line.strip())
    return rows
