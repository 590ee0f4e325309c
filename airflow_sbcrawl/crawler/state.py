"""Checkpoints of a whole crawl, in a safe, versioned format (JSON, numpy arrays, gzip text; never pickle).

A checkpoint is a numbered set of files — ``state.json``, ``arrays.npz``, ``links.txt.gz`` — followed by
``MANIFEST.json`` with their sha256, written last: a checkpoint whose manifest is missing or disagrees
with its files is torn, and the previous one is used. The budget journal records spending between
checkpoints, so a crawl killed at any moment still knows what it spent."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import logging
import os
import shutil
import time
from pathlib import Path
from typing import Protocol

import numpy as np

log = logging.getLogger(__name__)

FORMAT = "sbcrawl-checkpoint"
# 2: each part of the crawl saves its own state under its name (issue 22). Version 1 is still read.
VERSION = 2
READABLE = (1, 2)
FILES = ("state.json", "arrays.npz", "links.txt.gz")
KEEP = 2


class CheckpointError(RuntimeError):
    """No usable checkpoint, or one that belongs to another crawl; the message says which and why."""


class ForeignCheckpoint(CheckpointError):
    """A checkpoint of another format, version or crawl: never silently replaced."""


class StateExists(RuntimeError):
    """A crawl state is already there and neither resume nor a fresh start was asked for."""


class StateStore(Protocol):
    """Where a crawl keeps its run state (checkpoints and the budget journal) or a site its memory: numbered
    generations of named files, and one append-only journal. ``LocalStateStore`` keeps them in a folder;
    the Airflow layer has one on S3."""

    def checkpoints(self) -> list[int]:
        """The numbers of the generations stored, ascending (complete or not: readers check)."""
        ...

    def write(self, seq: int, files: dict[str, bytes]) -> None:
        """Store generation ``seq``: its files in the order given (MANIFEST.json last), as atomically as
        the storage allows."""
        ...

    def read(self, seq: int, name: str) -> bytes:
        """One file of generation ``seq`` (raises OSError, or KeyError, when it is missing)."""
        ...

    def delete(self, seq: int) -> None:
        """Remove generation ``seq`` (nothing when it is not there)."""
        ...

    def journal_append(self, line: str) -> None:
        """Add a line to the journal, durably before returning (the budget is spent after it is written)."""
        ...

    def journal_lines(self) -> list[str]:
        """The journal's lines, oldest first (a torn last line may be among them)."""
        ...

    def journal_reset(self) -> None:
        """Empty the journal (a fresh start)."""
        ...

    def describe(self) -> str:
        """Where the store is, for messages (a path, an s3:// URL)."""
        ...


class Saved(Protocol):
    """A part of a crawl whose state a checkpoint holds: it gives its state as JSON-ready values and numpy
    arrays, and takes them back in place."""

    def state(self) -> dict:
        """The part's state as JSON-ready values."""
        ...

    def arrays(self) -> dict[str, np.ndarray]:
        """The numeric part of its state (saved as .npz, never pickled)."""
        ...

    def restore(self, state: dict, arrays: dict[str, np.ndarray]) -> None:
        """Take back what ``state`` and ``arrays`` gave (in place: the other parts keep their references)."""
        ...


class LocalStateStore:
    """A ``StateStore`` in a local folder: one subfolder per generation, written to a temporary name and
    renamed into place; the journal a file appended to and flushed line by line."""

    #: The journal is rewritten as its last line once it has this many (only the last one counts).
    JOURNAL_COMPACT_LINES = 10_000

    def __init__(self, root: str | os.PathLike) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self._journal = None
        self._journal_count = 0

    @property
    def spool_root(self) -> Path:
        """Where a crawl keeps the answers since its last checkpoint (``spool.ResponseSpool``): on local disk
        beside the checkpoints. A store without it (S3) has them asked again after a kill."""
        return self.root / "spool"

    def _dir(self, seq: int) -> Path:
        return self.root / f"ckpt-{seq:08d}"

    def checkpoints(self) -> list[int]:
        seqs = []
        for p in self.root.glob("ckpt-*"):
            if p.is_dir() and p.name[5:].isdigit():
                seqs.append(int(p.name[5:]))
        return sorted(seqs)

    def write(self, seq: int, files: dict[str, bytes]) -> None:
        tmp = self.root / f".tmp-{seq:08d}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        for name, data in files.items():  # dict order: MANIFEST.json comes last
            with (tmp / name).open("wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, self._dir(seq))

    def read(self, seq: int, name: str) -> bytes:
        return (self._dir(seq) / name).read_bytes()

    def delete(self, seq: int) -> None:
        shutil.rmtree(self._dir(seq), ignore_errors=True)

    def journal_append(self, line: str) -> None:
        if self._journal_count >= self.JOURNAL_COMPACT_LINES:
            # Replace the journal by its last line in one rename: at no moment is it empty or lower.
            if self._journal is not None:
                self._journal.close()
            tmp = self.root / "journal.log.tmp"
            tmp.write_text(line + "\n", encoding="ascii")
            os.replace(tmp, self.root / "journal.log")
            self._journal = None
            self._journal_count = 1
            return
        if self._journal is None:
            self._journal = (self.root / "journal.log").open("a", encoding="ascii")
        self._journal.write(line + "\n")
        self._journal.flush()
        self._journal_count += 1

    def journal_lines(self) -> list[str]:
        path = self.root / "journal.log"
        if not path.exists():
            return []
        return path.read_text(encoding="ascii", errors="replace").splitlines()

    def journal_reset(self) -> None:
        if self._journal is not None:
            self._journal.close()
            self._journal = None
        self._journal_count = 0
        (self.root / "journal.log").unlink(missing_ok=True)

    def describe(self) -> str:
        return str(self.root)


class BudgetJournal:
    """Cumulative totals, one line per change: the last complete line is what was spent (the budget's
    write-ahead record; see ``budget.Budget``)."""

    def __init__(self, store: StateStore) -> None:
        self.store = store
        self.requests = 0
        self.bytes = 0

    def record(self, requests: int, nbytes: int) -> None:
        """Append the new totals (``requests`` and ``nbytes`` more)."""
        self.requests += requests
        self.bytes += nbytes
        self.store.journal_append(f"{self.requests} {self.bytes}")

    def restore(self, requests: int, nbytes: int) -> None:
        """Go on from these totals."""
        self.requests, self.bytes = requests, nbytes

    @staticmethod
    def last_totals(store: StateStore) -> tuple[int, int]:
        """The highest (requests, bytes) the store's journal records ((0, 0) for none)."""
        best = (0, 0)
        for line in store.journal_lines():
            parts = line.split()
            if len(parts) == 2 and parts[0].isdigit() and parts[1].isdigit():
                best = max(best, (int(parts[0]), int(parts[1])))
        return best


def encode(state: dict, arrays: dict[str, np.ndarray], urls: list[str]) -> dict[str, bytes]:
    """The files of one checkpoint (MANIFEST.json last): ``state`` as JSON, ``arrays`` as .npz, ``urls`` (the
    link table's, the bulk of a checkpoint) as gzipped lines."""
    state = {"format": FORMAT, "version": VERSION, **state}
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    files = {
        "state.json": json.dumps(state, sort_keys=True).encode(),
        "arrays.npz": buf.getvalue(),
        # mtime=0 keeps equal states byte-identical; level 1 because checkpoints sit on the crawl's path.
        "links.txt.gz": gzip.compress("\n".join(urls).encode(), compresslevel=1, mtime=0),
    }
    files["MANIFEST.json"] = json.dumps({n: hashlib.sha256(d).hexdigest() for n, d in files.items()}).encode()
    return files


def read_verified(store: StateStore, seq: int, names: tuple[str, ...]) -> dict[str, bytes]:
    """The files of one saved generation, each checked against the sha256 its MANIFEST.json (written last)
    records: CheckpointError when the manifest or a file does not match (a torn or foreign write)."""
    manifest = json.loads(store.read(seq, "MANIFEST.json"))
    if not isinstance(manifest, dict):
        raise CheckpointError("MANIFEST.json is not a JSON object")
    files = {}
    for name in names:
        data = store.read(seq, name)
        if hashlib.sha256(data).hexdigest() != manifest.get(name):
            raise CheckpointError(f"{name} does not match its checksum")
        files[name] = data
    return files


def read_npz(data: bytes) -> dict[str, np.ndarray]:
    """The arrays of an .npz read back from storage: numbers only, never a pickled object."""
    with np.load(io.BytesIO(data), allow_pickle=False) as npz:
        return {k: npz[k] for k in npz.files}


def decode(files: dict[str, bytes]) -> tuple[dict, dict[str, np.ndarray], list[str]]:
    """``encode`` undone: (state, arrays, urls); ForeignCheckpoint for another format or an unknown version."""
    state = json.loads(files["state.json"])
    if not isinstance(state, dict):
        raise CheckpointError("state.json is not a JSON object")
    if state.get("format") != FORMAT:
        raise ForeignCheckpoint(f"not an airflow-sbcrawl checkpoint (format {state.get('format')!r})")
    if state.get("version") not in READABLE:
        raise ForeignCheckpoint(f"checkpoint version {state.get('version')} is not supported (this version of "
                                f"airflow-sbcrawl reads {', '.join(map(str, READABLE))}): resume it with the "
                                "version that wrote it, or start afresh")
    arrays = read_npz(files["arrays.npz"])
    text = gzip.decompress(files["links.txt.gz"]).decode()
    return state, arrays, text.split("\n") if text else []


def save(store: StateStore, seq: int, files: dict[str, bytes], valid: int | None = None) -> None:
    """Write generation ``seq`` and drop the older ones. ``valid`` is the newest generation known to be
    sound before this one (the one a resume fell back to, or the last saved): it is kept, and every other
    one dropped, so a corrupt generation skipped by a fallback never outlives the last valid one. Without
    ``valid``, the last ``KEEP`` generations are kept."""
    store.write(seq, files)
    seqs = store.checkpoints()
    keep = set(seqs[-KEEP:]) if valid is None else {seq, valid}
    for old in seqs:
        if old not in keep and old < seq:
            store.delete(old)


def load_latest(store: StateStore) -> tuple[int, dict, dict[str, np.ndarray], list[str]] | None:
    """The newest checkpoint whose files match its manifest; None when there is none at all."""
    problems = []
    seqs = store.checkpoints()
    for seq in reversed(seqs):
        try:
            state, arrays, urls = decode(read_verified(store, seq, FILES))
            return seq, state, arrays, urls
        except ForeignCheckpoint as exc:
            raise ForeignCheckpoint(f"checkpoint {seq} in {store.describe()}: {exc}") from exc
        except CheckpointError as exc:
            problems.append(f"checkpoint {seq}: {exc}")
        except (OSError, ValueError, KeyError, EOFError, gzip.BadGzipFile) as exc:
            problems.append(f"checkpoint {seq}: unreadable ({type(exc).__name__}: {exc})")
        log.warning("skipping %s", problems[-1])
    if seqs:
        raise CheckpointError(f"no valid checkpoint in {store.describe()}: " + "; ".join(problems))
    return None


def disposable(store: StateStore, finished_run_id: str) -> bool:
    """Whether the run state in ``store`` need not be resumed: that of the run ``finished_run_id`` (which
    finished and left its site memory), or of a run that crawled no page (its start host was not reached).
    An unreadable or missing checkpoint is not disposable: the caller says what to do with it."""
    try:
        loaded = load_latest(store)
    except CheckpointError:
        return False
    if loaded is None:
        return False
    run = loaded[1].get("run") or loaded[1]  # (version 1 kept the run's fields at the top level)
    if run.get("pages") == 0 and run.get("targets") == 0:
        return True
    return bool(finished_run_id) and run.get("run_id") == finished_run_id


class CheckpointTimer:
    """When a crawl's next checkpoint is due: every ``every_pages`` pages or ``every_seconds`` seconds, but
    never sooner than ``SHARE`` times the last save took. Saving grows with the frontier; spacing saves by
    that multiple of their duration keeps their share of the crawl's time under 5 % however large it gets."""

    SHARE = 20

    def __init__(self, every_pages: int, every_seconds: float) -> None:
        self.every_pages, self.every_seconds = every_pages, every_seconds
        self.due = False
        self._pages_at = 0
        self._last = time.monotonic()
        self._cost = 0.0

    def page_done(self, pages: int, now: float) -> None:
        """A page is done (``pages`` in all, at monotonic time ``now``): is a checkpoint due?"""
        since = now - self._last
        if (pages - self._pages_at >= self.every_pages or since >= self.every_seconds) and (
                since >= self.SHARE * self._cost):
            self.due = True

    def saved(self, pages: int, began: float) -> None:
        """A checkpoint of ``pages`` pages was saved (or restored), its save begun at monotonic ``began``."""
        self._pages_at = pages
        self._last = time.monotonic()
        self._cost = self._last - began
        self.due = False
