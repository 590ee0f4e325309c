"""Site memory: what one crawl of a site leaves for the next one (see DESIGN.md, "Site memory vs run state").

Run state (checkpoints) belongs to one run and is disposable once it succeeded; the site memory belongs to
the site and outlives runs: the learned model (the policy's and the URL classifier's own ``state()`` and
``arrays()``), the datasets known so far with their validators, and the pages that led to them.

It is stored through the same ``StateStore`` interface as checkpoints, in a store of its own (a folder or
prefix next to the run state): each generation is a numbered set of files, ``memory.json``,
``model.npz``, ``datasets.jsonl.gz``, ``pages.jsonl.gz`` and ``frontier.jsonl.gz`` (the links a run met
and never fetched; a memory written before it was kept has none), followed by ``MANIFEST.json`` with their
sha256, so a torn write is detected and the previous generation used. JSON, numpy without pickle, gzip.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import logging
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime

import numpy as np

from airflow_sbcrawl.crawler.state import CheckpointError, StateStore, read_npz, read_verified

log = logging.getLogger(__name__)

FORMAT = "sbcrawl-site-memory"
VERSION = 1
FILES = ("memory.json", "model.npz", "datasets.jsonl.gz", "pages.jsonl.gz")
# Files a generation may lack (written by an older version): read when its manifest lists them.
OPTIONAL_FILES = ("frontier.jsonl.gz",)
#: Links of the frontier a memory keeps at most (the first the run's policy would have handed out are not
#: known: a policy's frontier is unordered), so that a site of millions of URLs keeps a bounded memory.
MAX_FRONTIER = 500_000
KEEP = 2


class SiteMemoryError(RuntimeError):
    """A site memory that cannot be used (another format, version or site); never silently replaced."""


@dataclass
class KnownDataset:
    """A target as the last run that saw it left it."""

    url: str
    final_url: str = ""
    sha256: str = ""
    etag: str = ""
    last_modified: str = ""
    mime: str = ""
    size: int = 0
    first_seen: str = ""
    last_seen: str = ""
    found_on: str = ""
    tag_path: str = ""
    depth: int = 0
    filename: str = ""  # from Content-Disposition
    contexts: list[str] = field(default_factory=list)  # hashes of the text around links to it (warm/contexts.py)
    listed_on: list[str] = field(default_factory=list)  # pages that linked it, over the last runs

    @property
    def has_validator(self) -> bool:
        """Whether a conditional GET can ask for it (an ETag or a Last-Modified is known)."""
        return bool(self.etag or self.last_modified)


@dataclass
class KnownPage:
    """A page on the way to known datasets or listing them; ``score`` is how many known datasets lie below it
    or it lists."""

    url: str
    parent: str = ""
    depth: int = 0
    tag_path: str = ""
    score: int = 0
    etag: str = ""
    last_modified: str = ""
    contexts: list[str] = field(default_factory=list)
    listed_on: list[str] = field(default_factory=list)


@dataclass
class FrontierLink:
    """A link a run met and never fetched (its budget ran out first), as the policy knew it: where it was
    found, its depth, the tag path of its ``<a>`` and what the URL classifier called it (``classify.HTML``
    or ``classify.TARGET``; -1 when it was not asked)."""

    url: str
    parent: str = ""
    depth: int = 0
    tag_path: str = ""
    label: int = -1


@dataclass
class SiteMemory:
    """What a finished run leaves for the next runs of the site: the datasets it knows, the pages that led to
    them, the URLs met, and the model learned (see ``warm.observations.build_memory``)."""

    start_url: str
    run_id: str = ""  # the run that wrote it: a run state of that run is a finished one
    written_at: str = ""
    runs: int = 0
    # Settings the model was learned with; a crawl with other ones starts its model afresh.
    model_config: dict = field(default_factory=dict)
    model_state: dict = field(default_factory=dict)  # {"policy": policy.state(), "classifier": ...}
    model_arrays: dict[str, np.ndarray] = field(default_factory=dict)  # "policy.<name>", "classifier.<name>"
    datasets: dict[str, KnownDataset] = field(default_factory=dict)
    pages: dict[str, KnownPage] = field(default_factory=dict)
    # Keys (``url_key``) of every URL the runs so far met, productive or not (what a link new to the site is
    # not), and of the pages they read. Stored in model.npz as SEEN_ARRAYS (a memory without them knows none).
    seen_urls: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.uint64))
    read_urls: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.uint64))
    # The links the runs so far met and never fetched: where the next run goes on exploring.
    frontier: list[FrontierLink] = field(default_factory=list)
    # Per warm run, newest last: [known pages and datasets compared with the memory, of those changed]; the
    # change rate the site has shown, which sizes the next runs' checks (``warm.plan``).
    history: list[list[int]] = field(default_factory=list)
    # Pages the last run read after its last new target: a run that ended in a drought (a frontier of
    # calendars and facets) hands it on, and the next run's exploration of that frontier continues it.
    drought: int = 0
    # When early stopping ended the last run: the targets its frontier still promised then (under
    # ``es_expected``). The next run reopens that frontier only for more (``Scheduler.ends_crawl``).
    promise: float | None = None


SEEN_ARRAYS = ("seen.urls", "read.urls")


def url_key(url: str) -> int:
    """A URL's 64-bit key in ``SiteMemory.seen_urls``."""
    return int.from_bytes(hashlib.blake2b(url.encode(), digest_size=8).digest(), "little")


def encode(memory: SiteMemory) -> dict[str, bytes]:
    head = {"format": FORMAT, "version": VERSION, "start_url": memory.start_url, "run_id": memory.run_id,
            "written_at": memory.written_at or datetime.now(UTC).isoformat(timespec="seconds"),
            "runs": memory.runs, "model_config": memory.model_config, "model_state": memory.model_state,
            "datasets": len(memory.datasets), "pages": len(memory.pages), "frontier": len(memory.frontier),
            "history": memory.history, "drought": memory.drought, "promise": memory.promise}
    buf = io.BytesIO()
    seen = dict(zip(SEEN_ARRAYS, (memory.seen_urls.astype(np.uint64), memory.read_urls.astype(np.uint64)),
                    strict=True))
    np.savez(buf, **memory.model_arrays, **seen)
    files = {
        "memory.json": json.dumps(head, sort_keys=True).encode(),
        "model.npz": buf.getvalue(),
        "datasets.jsonl.gz": _jsonl([asdict(d) for d in memory.datasets.values()]),
        "pages.jsonl.gz": _jsonl([asdict(p) for p in memory.pages.values()]),
        "frontier.jsonl.gz": _jsonl([asdict(link) for link in memory.frontier[:MAX_FRONTIER]]),
    }
    files["MANIFEST.json"] = json.dumps({n: hashlib.sha256(d).hexdigest() for n, d in files.items()}).encode()
    return files


def decode(files: dict[str, bytes]) -> SiteMemory:
    head = json.loads(files["memory.json"])
    if head.get("format") != FORMAT:
        raise SiteMemoryError(f"not an airflow-sbcrawl site memory (format {head.get('format')!r})")
    if head.get("version") != VERSION:
        raise SiteMemoryError(f"site memory version {head.get('version')} is not supported (expects {VERSION})")
    arrays = read_npz(files["model.npz"])
    seen, read = (arrays.pop(name, np.zeros(0, dtype=np.uint64)).astype(np.uint64) for name in SEEN_ARRAYS)
    return SiteMemory(
        start_url=head["start_url"], run_id=head["run_id"], written_at=head["written_at"], runs=int(head["runs"]),
        model_config=head["model_config"], model_state=head["model_state"], model_arrays=arrays,
        datasets={d.url: d for d in _read_jsonl(files["datasets.jsonl.gz"], KnownDataset)},
        pages={p.url: p for p in _read_jsonl(files["pages.jsonl.gz"], KnownPage)},
        seen_urls=seen, read_urls=read,
        frontier=_read_jsonl(files["frontier.jsonl.gz"], FrontierLink) if "frontier.jsonl.gz" in files else [],
        history=[[int(n) for n in run] for run in head.get("history", [])],
        drought=int(head.get("drought", 0)),
        promise=float(head["promise"]) if head.get("promise") is not None else None,
    )


def save(store: StateStore, memory: SiteMemory) -> int:
    """Write a new generation atomically (the store's ``write``), keep the last ``KEEP``; returns its number."""
    seq = (store.checkpoints() or [0])[-1] + 1
    store.write(seq, encode(memory))
    for old in store.checkpoints()[:-KEEP]:
        store.delete(old)
    return seq


def load(store: StateStore, start_url: str) -> SiteMemory | None:
    """The newest intact generation, None when there is none; a memory of another site is an error."""
    problems = []
    for seq in reversed(store.checkpoints()):
        try:
            memory = decode(read_verified(store, seq, FILES + _optional(store, seq)))
        except SiteMemoryError as exc:
            raise SiteMemoryError(f"site memory {seq} in {store.describe()}: {exc}") from exc
        except (CheckpointError, OSError, ValueError, KeyError, TypeError, EOFError, gzip.BadGzipFile) as exc:
            problems.append(f"generation {seq}: {type(exc).__name__}: {exc}")
            log.warning("skipping site memory %s", problems[-1])
            continue
        if memory.start_url != start_url:
            raise SiteMemoryError(f"the site memory in {store.describe()} is of {memory.start_url}, not {start_url}")
        return memory
    if problems:
        log.warning("no intact site memory in %s (%s): crawling cold", store.describe(), "; ".join(problems))
    return None


def _optional(store: StateStore, seq: int) -> tuple[str, ...]:
    """The optional files a generation's manifest lists (an unreadable manifest fails in ``read_verified``)."""
    try:
        manifest = json.loads(store.read(seq, "MANIFEST.json"))
    except (OSError, KeyError, ValueError):
        return ()
    return tuple(name for name in OPTIONAL_FILES if isinstance(manifest, dict) and name in manifest)


def _jsonl(rows: list[dict]) -> bytes:
    text = "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in rows)
    return gzip.compress(text.encode(), compresslevel=6, mtime=0)


def _read_jsonl(data: bytes, cls: type) -> list:
    known = {f.name for f in fields(cls)}
    out = []
    for line in gzip.decompress(data).decode().splitlines():
        if line.strip():
            row = json.loads(line)
            out.append(cls(**{k: v for k, v in row.items() if k in known}))
    return out


def load_for_run(store: StateStore, start_url: str, *, discard_unusable: bool = False) -> SiteMemory | None:
    """The site memory a run of ``start_url`` starts from, as ``load``. One that cannot be used (another
    site's, another format) raises ``SiteMemoryError``, unless ``discard_unusable`` (a fresh start): then it
    is deleted, as a fresh start deletes the run state, and the run starts without a memory."""
    try:
        return load(store, start_url)
    except SiteMemoryError as exc:
        if not discard_unusable:
            raise
        log.warning("%s: discarded (a fresh start)", exc)
        for seq in store.checkpoints():
            store.delete(seq)
        return None
