"""S3 side of table detection and lake loading, over the amazon provider's ``S3Hook``.

Next to a crawl's folders (see ``hooks/s3.py``), detection writes under ``s3://<bucket>/<prefix>/<site>/``:

* ``tables/<run>/tables/<table_id>.parquet`` — one Parquet file per detected table (``tables.output``).
* ``tables/<run>/tables.jsonl`` — the run's table index (paths relative to ``tables/<run>/``); written
  last, so a reader that finds it finds every Parquet file it names.
* ``tables/<run>/errors.jsonl`` — one line per file or archive member that could not be read.
* ``tables/<run>/summary.json`` — the detection summary (the operator's XCom).
* ``tables/_detected/<detector_version>/<sha256>.json`` — what detecting one file gave (its index records
  and errors, and the folder holding its Parquet files): the next run that meets the same bytes with the
  same detector copies the Parquet files server-side instead of downloading and detecting them again.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from airflow_sbcrawl.hooks.s3 import S3CrawlLayout, _join, safe_segment

if TYPE_CHECKING:
    from airflow.providers.amazon.aws.hooks.s3 import S3Hook


@dataclass(frozen=True)
class CrawlRef:
    """One finished crawl run of one site: where its manifest objects are.

    Built from what the crawl publishes, either the manifest Asset event's ``extra`` (which names
    ``objects_prefix``) or ``SBCrawlOperator``'s return value (which names ``prefix``): both work.
    """

    bucket: str
    prefix: str
    site: str
    run_id: str
    manifest_keys: tuple[str, ...]

    @classmethod
    def from_mapping(cls, data: dict[str, Any]) -> CrawlRef:
        missing = [k for k in ("bucket", "site", "run_id", "manifest_keys") if k not in data]
        if missing:
            raise ValueError(f"crawl reference lacks {', '.join(missing)}: {sorted(data)}")
        site = str(data["site"])
        if "prefix" in data:
            prefix = str(data["prefix"] or "")
        else:
            # objects_prefix is "<prefix>/<site>/objects/": the prefix is what stands before the site.
            objects = str(data.get("objects_prefix", "")).strip("/")
            tail = f"{site}/objects"
            if not objects.endswith(tail):
                raise ValueError(f"cannot tell the prefix from objects_prefix {data.get('objects_prefix')!r}")
            prefix = objects[: -len(tail)].strip("/")
        keys = data["manifest_keys"]
        if isinstance(keys, str):
            keys = [keys]
        return cls(str(data["bucket"]), prefix, site, str(data["run_id"]), tuple(str(k) for k in keys))

    @property
    def layout(self) -> S3CrawlLayout:
        return S3CrawlLayout(self.bucket, self.prefix, self.site)

    @property
    def tables_prefix(self) -> str:
        return tables_prefix(self.layout, self.run_id)

    def key(self) -> tuple[str, str, str, str]:
        return (self.bucket, self.prefix, self.site, self.run_id)


def tables_prefix(layout: S3CrawlLayout, run_id: str) -> str:
    """``<prefix>/<site>/tables/<run>/`` (run id made key-safe as for the manifests)."""
    return _join(layout.site_prefix, "tables", safe_segment(run_id)) + "/"


def detected_marker_key(layout: S3CrawlLayout, detector_version: str, sha256: str) -> str:
    return _join(layout.site_prefix, "tables", "_detected", safe_segment(detector_version), f"{sha256}.json")


#: Above this size, uploads go through boto3's managed (multipart, threaded) transfer.
MULTIPART_THRESHOLD = 64 * 1024 * 1024


def download(hook: S3Hook, bucket: str, key: str, path: Path) -> None:
    """Stream one object to ``path`` in 1 MiB chunks, never whole in memory. A plain GET rather than
    ``download_file``: most crawled files are small, and the managed transfer's thread pool per call cost
    more than the transfer itself (measured: it dominated detection of a 180-file crawl)."""
    body = hook.get_conn().get_object(Bucket=bucket, Key=key)["Body"]
    with open(path, "wb") as fh:
        for chunk in body.iter_chunks(chunk_size=1024 * 1024):
            fh.write(chunk)


def upload(hook: S3Hook, bucket: str, key: str, path: Path) -> None:
    """Upload a local file: one streamed PUT when small (Parquet files of one table usually are),
    multipart above ``MULTIPART_THRESHOLD``."""
    if Path(path).stat().st_size > MULTIPART_THRESHOLD:
        hook.load_file(filename=path, key=key, bucket_name=bucket, replace=True)
        return
    with open(path, "rb") as fh:
        hook.get_conn().put_object(Bucket=bucket, Key=key, Body=fh)


def read_json(hook: S3Hook, bucket: str, key: str) -> Any | None:
    """The JSON document at ``key``, or None when there is no such object."""
    try:
        body = hook.get_conn().get_object(Bucket=bucket, Key=key)["Body"].read()
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404", "NotFound"):
            return None
        raise
    return json.loads(body)


def write_json(hook: S3Hook, bucket: str, key: str, data: Any) -> None:
    body = json.dumps(data, ensure_ascii=False, sort_keys=True).encode("utf-8")
    hook.load_bytes(body, key=key, bucket_name=bucket, replace=True)


def copy(hook: S3Hook, bucket: str, source_key: str, dest_key: str) -> None:
    """Server-side copy inside one bucket (no bytes through the worker); a no-op onto itself, which S3
    refuses and which happens when a retry meets the markers its own first try wrote."""
    if source_key != dest_key:
        hook.get_conn().copy_object(Bucket=bucket, Key=dest_key, CopySource={"Bucket": bucket, "Key": source_key})


_NOISE = re.compile(r"'[^']*'|\"[^\"]*\"|\d+")


def reason_key(error: dict[str, Any]) -> str:
    """A short, countable category of a read error: its format and the reason's head, without the
    quoted names and numbers that make every message unique ("xlsx: sheet …", "pdf: page …")."""
    reason = str(error.get("reason", "")).split(":", 1)[0]
    reason = _NOISE.sub("…", reason).strip()[:60] or "unknown"
    fmt = error.get("format") or ""
    return f"{fmt}: {reason}" if fmt else reason
