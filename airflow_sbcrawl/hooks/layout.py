"""Where a crawl keeps what in S3: every key of one site's folder, computed in one place.

Pure key arithmetic (no S3 call, no Airflow import), so DAG files can compute an Asset URI when they are
parsed. Under ``s3://<bucket>/<prefix>/<site>/`` (site = the start URL's host without "www."):

* ``objects/<sha256>`` — each target once, content-addressed; an upload is skipped when the key exists,
  so a replay after a retry never stores a target twice.
* ``runs/<run>/manifest-<seq>.jsonl`` — the manifest rows of one crawl run, one object per sink flush (the
  engine flushes before every checkpoint, so every row a checkpoint counts is durable), and the run's
  crawl report next to them.
* ``runs/<run>/rows/<sha256 of the url>.json`` — a row waiting for its flush whose object cannot carry it
  (its content was stored already): kept until the flush, so that a failed try does not lose it.
* ``state/<dag_id>/<run_id>/<task_id>/<map_index>/ckpt-<seq>/<file>`` and ``.../journal`` — checkpoints
  and budget journal of one task instance (a key stable across its tries), or
  ``state/<dag_id>/<run_id>/<crawl_key>/`` for a crawl several task instances continue.
* ``memory/`` — the site memory (``crawler/memory.py``) every warm start reads.
* ``manifest`` — not an object: the URI of the site's manifest Asset.
* ``tables/<run>/`` — what table detection wrote for a run (``tables/<table_id>.parquet``, ``tables.jsonl``
  written last, ``errors.jsonl``, ``summary.json``), and ``tables/_detected/<detector_version>/<sha256>.json``,
  what detecting one file gave, so that the next run meeting the same bytes copies instead of detecting.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

from airflow_sbcrawl.crawler.urls import normalize

_UNSAFE = re.compile(r"[^A-Za-z0-9._=-]+")


def site_key(start_url: str) -> str:
    """The site folder of a start URL: its host without "www.", a non-default port kept after "_"."""
    netloc = normalize(start_url).split("/", 3)[2]
    host = netloc.removeprefix("www.")
    return host.replace(":", "_")


def safe_segment(value: str) -> str:
    """One S3 key segment from an Airflow id (run ids hold ':' and '+'): readable, no '/', stable."""
    cleaned = _UNSAFE.sub("_", value).strip("_")
    return cleaned or "_"


def join_key(*parts: str) -> str:
    """Key parts joined with one '/' each, empty parts and stray slashes dropped."""
    return "/".join(p.strip("/") for p in parts if p and p.strip("/"))


@dataclass(frozen=True)
class S3CrawlLayout:
    """Every key a crawl of one site writes (operators, tests and ingestion agree on it)."""

    bucket: str
    prefix: str
    site: str

    @classmethod
    def for_start_url(cls, bucket: str, prefix: str, start_url: str) -> S3CrawlLayout:
        """The layout of the site ``start_url`` belongs to; ValueError when it has no host."""
        return cls(bucket, prefix or "", site_key(start_url))

    @property
    def site_prefix(self) -> str:
        """``<prefix>/<site>``: the folder of everything about the site."""
        return join_key(self.prefix, self.site)

    def object_key(self, sha256: str) -> str:
        """The key of the target whose content has this SHA-256."""
        return join_key(self.site_prefix, "objects", sha256)

    def objects_prefix(self) -> str:
        """The folder of the site's targets (all runs share it)."""
        return join_key(self.site_prefix, "objects") + "/"

    def runs_prefix(self) -> str:
        """The folder of every run's manifest objects and reports."""
        return join_key(self.site_prefix, "runs") + "/"

    def run_prefix(self, run_id: str) -> str:
        """The folder of one crawl run's manifest objects and report."""
        return join_key(self.site_prefix, "runs", safe_segment(run_id)) + "/"

    def manifest_key(self, run_id: str, seq: int) -> str:
        """The ``seq``-th manifest object of a run (zero-padded: lexical order is write order)."""
        return f"{self.run_prefix(run_id)}manifest-{seq:06d}.jsonl"

    def row_records_prefix(self, run_id: str) -> str:
        """The folder of a run's rows waiting for their flush that no object carries."""
        return f"{self.run_prefix(run_id)}rows/"

    def row_record_key(self, run_id: str, url: str) -> str:
        """Where the row of ``url`` waits for its flush (one key per URL: a retry's record replaces a try's)."""
        return f"{self.row_records_prefix(run_id)}{hashlib.sha256(url.encode('utf-8')).hexdigest()}.json"

    def state_prefix(self, dag_id: str, run_id: str, task_id: str, map_index: int | None = None) -> str:
        """The crawl state of one task instance, or (no ``map_index``) of a crawl that several task instances
        continue, ``task_id`` being then its crawl key."""
        return join_key(self.site_prefix, "state", safe_segment(dag_id), safe_segment(run_id),
                        safe_segment(task_id), "" if map_index is None else str(map_index)) + "/"

    def memory_prefix(self) -> str:
        """The site memory (crawler/memory.py): one per site, read by every warm start."""
        return join_key(self.site_prefix, "memory") + "/"

    def manifest_uri(self) -> str:
        """The URI of the site's manifest Asset (one per site, whatever the run)."""
        return f"s3://{self.bucket}/{join_key(self.site_prefix, 'manifest')}"

    def tables_prefix(self, run_id: str) -> str:
        """``<prefix>/<site>/tables/<run>/``: the tables detected in one run's files."""
        return join_key(self.site_prefix, "tables", safe_segment(run_id)) + "/"

    def detected_marker_key(self, detector_version: str, sha256: str) -> str:
        """What detecting one file with one detector version gave (its records, errors, Parquet folder)."""
        return join_key(self.site_prefix, "tables", "_detected", safe_segment(detector_version), f"{sha256}.json")

    def url(self, key: str) -> str:
        """``s3://<bucket>/<key>``, for messages."""
        return f"s3://{self.bucket}/{key}"


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
        """The reference in an event extra or a crawl result; ValueError naming what is missing."""
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
        """The layout of the run's site."""
        return S3CrawlLayout(self.bucket, self.prefix, self.site)

    @property
    def tables_prefix(self) -> str:
        """Where the tables detected in this run's files go."""
        return self.layout.tables_prefix(self.run_id)

    def key(self) -> tuple[str, str, str, str]:
        """What identifies the run (two references to one run are one)."""
        return (self.bucket, self.prefix, self.site, self.run_id)
