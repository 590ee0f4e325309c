"""The answers a crawl received since its last checkpoint, kept on local disk: a crawl killed between two
checkpoints resumes from the older one, and without them it would ask the site again for every page and
check it had been answered since (a warm run's conditional requests, its redirects, its pages). The resume
takes those answers from here instead, so a kill costs the site no request twice and the resumed crawl
the same requests to its datasets as an uninterrupted one.

A segment per checkpoint: ``spool-<seq>.bin`` holds the answers received after checkpoint ``seq`` was
written, each a JSON header line (the request, the status, the headers, the body's length) followed by the
body's raw bytes, flushed as it arrives: a killed process loses no flushed record, and a torn last one is
skipped. Raw bodies, not base64 in JSON: escaping a page into a JSON string cost four times its write.
Targets are not kept: their bytes are in the sink, and the manifest tells a resumed crawl not to fetch
them again. Nothing here is unpickled."""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from airflow_sbcrawl.crawler.fetch import Response

log = logging.getLogger(__name__)

_PREFIX, _SUFFIX = "spool-", ".bin"
#: A header line longer than this is no header of ours (a foreign or corrupt file): reading stops there.
_MAX_HEADER = 1 << 20


class ResponseSpool:
    """Answers since a checkpoint, by request: ``record`` keeps one, ``take`` gives one back to a resumed
    crawl that asks the same (method, URL, conditional headers) again, each answer once, in the order they
    came. Thread-safe: the fetch pool's threads record and take."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self._lock = threading.Lock()
        self._seq = 0
        self._file: IO[bytes] | None = None
        # Request key -> the answers a resumed crawl may take, each with its record (to be kept on).
        self._waiting: dict[str, deque[tuple[bytes, Response]]] = {}
        self.replayed = 0
        self._broken = False  # the folder could not be written: answers are no longer kept

    # -- which segment ---------------------------------------------------------------------------------
    def begin(self, seq: int, keep_from: int | None = None) -> None:
        """Checkpoint ``seq`` was written (0: a crawl starts afresh): new answers go to its segment. Segments
        before ``keep_from`` (the oldest checkpoint still stored) are dropped; ``None`` drops every one
        and the answers waiting. Answers a resumed crawl has not taken yet stay: it checkpoints as it
        replays, and may ask for them later; they are written on into the new segment."""
        with self._lock:
            self._close()
            self._seq = seq
            if keep_from is None:
                self._waiting = {}
            for other, path in self._segments():
                if keep_from is None or (other < keep_from and other != seq):
                    path.unlink(missing_ok=True)
            for answers in self._waiting.values():
                for record, _resp in answers:
                    self._write(record)

    def resume(self, seq: int) -> int:
        """A crawl resumes from checkpoint ``seq``: the answers received after it (in its segment and any
        later one, whose checkpoints were lost) wait to be taken, and new answers join its segment, which
        then holds every answer since ``seq`` once. Returns how many answers wait."""
        with self._lock:
            self._close()
            self._seq = seq
            self._waiting = {}
            later = [(other, path) for other, path in self._segments() if other >= seq]
            records: list[bytes] = []
            for _seq, path in later:
                for key, record, resp in _read(path):
                    self._waiting.setdefault(key, deque()).append((record, resp))
                    records.append(record)
            if any(other != seq for other, _ in later):
                self._merge(seq, records, later)
            return len(records)

    def _merge(self, seq: int, records: list[bytes], segments: list[tuple[int, Path]]) -> None:
        """Rewrite ``segments`` as the one of ``seq``: a second kill then finds every answer since ``seq``
        there, once."""
        try:
            self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
            merged = self._path(seq)
            tmp = merged.with_suffix(".tmp")
            tmp.write_bytes(b"".join(records))
            tmp.replace(merged)
            for other, path in segments:
                if other != seq:
                    path.unlink(missing_ok=True)
        except OSError as exc:
            self._give_up(exc)

    # -- answers ---------------------------------------------------------------------------------------
    def take(self, method: str, url: str, headers: dict[str, str] | None) -> Response | None:
        """The answer the interrupted crawl got to this request, once; None when it got none."""
        if not self._waiting:  # every request of a crawl that is not replaying: no key to build
            return None
        key = _key(method, url, headers)
        with self._lock:
            answers = self._waiting.get(key)
            if not answers:
                return None
            _record, resp = answers.popleft()
            if not answers:
                del self._waiting[key]
            self.replayed += 1
            return resp

    def record(self, method: str, url: str, headers: dict[str, str] | None, resp: Response) -> None:
        """Keep an answer the site gave (an HTTP status; not a target, whose bytes the sink holds)."""
        if resp.status is None or resp.path is not None:
            return
        header = json.dumps({"key": _key(method, url, headers), "url": resp.url, "method": resp.method,
                             "status": resp.status, "headers": resp.headers, "mime": resp.mime, "kind": resp.kind,
                             "sha256": resp.sha256, "size": resp.size, "error": resp.error,
                             "body": len(resp.body)}, separators=(",", ":"))
        record = b"".join((header.encode(), b"\n", resp.body, b"\n"))
        with self._lock:
            self._write(record)

    def close(self) -> None:
        with self._lock:
            self._close()

    def discard(self) -> None:
        """A run that ended by itself will not be resumed: its answers and their folder go."""
        self.begin(0)
        with self._lock:
            self._close()
            with contextlib.suppress(OSError):
                self.root.rmdir()

    # -- files -----------------------------------------------------------------------------------------
    def _write(self, record: bytes) -> None:
        if self._broken:
            return
        try:
            if self._file is None:
                self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
                self._file = self._path(self._seq).open("ab")
            self._file.write(record)
            self._file.flush()
        except OSError as exc:  # a convenience for resumes, never a reason to stop the crawl
            self._give_up(exc)

    def _give_up(self, exc: OSError) -> None:
        self._broken = True
        log.warning("cannot keep answers in %s (%s): a resume will ask the site again", self.root, exc)

    def _close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def _path(self, seq: int) -> Path:
        return self.root / f"{_PREFIX}{seq:08d}{_SUFFIX}"

    def _segments(self) -> list[tuple[int, Path]]:
        found = []
        for path in self.root.glob(f"{_PREFIX}*{_SUFFIX}"):
            number = path.name[len(_PREFIX):-len(_SUFFIX)]
            if number.isdigit():
                found.append((int(number), path))
        return sorted(found)


def _key(method: str, url: str, headers: dict[str, str] | None) -> str:
    """A request as the spool knows it: what makes the site's answer differ (conditions, a Range)."""
    return json.dumps([method, url, sorted((headers or {}).items())], separators=(",", ":"))


def _read(path: Path) -> Iterator[tuple[str, bytes, Response]]:
    """A segment's sound records: (request key, the record's bytes, the answer). Reading stops at the first
    record that is torn (the kill cut its write) or not one of ours."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        log.warning("spool segment %s unreadable (%s): its answers will be asked again", path, exc)
        return
    at = 0
    while at < len(data):
        end = data.find(b"\n", at, at + _MAX_HEADER)
        try:
            if end < 0:
                raise ValueError("no header line")
            head = json.loads(data[at:end])
            body_end = end + 1 + int(head["body"])
            if data[body_end:body_end + 1] != b"\n":
                raise ValueError("body cut short")
            resp = Response(url=str(head["url"]), method=str(head["method"]), status=int(head["status"]),
                            headers={str(k): str(v) for k, v in head["headers"].items()}, mime=str(head["mime"]),
                            kind=str(head["kind"]), body=data[end + 1:body_end], sha256=str(head["sha256"]),
                            size=int(head["size"]), error=str(head["error"]))
            key = str(head["key"])
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            log.warning("spool segment %s: stopped at an unreadable answer (%s); the answers from there on "
                        "will be asked again", path.name, exc)
            return
        yield key, data[at:body_end + 1], resp
        at = body_end + 1
