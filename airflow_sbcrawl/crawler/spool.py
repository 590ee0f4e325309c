"""The answers a crawl received since its last checkpoint, kept on local disk: a crawl killed between two
checkpoints resumes from the older one, and without them it would ask the site again for every page and
check it had been answered since (a warm run's conditional requests, its redirects, its pages). The resume
takes those answers from here instead, so a kill costs the site no request twice and the resumed crawl
the same requests to its datasets as an uninterrupted one.

A segment per checkpoint: ``spool-<seq>.jsonl`` holds the answers received after checkpoint ``seq`` was
written, one JSON line each, flushed as it arrives (a killed process loses no flushed line; a torn last
line is skipped). Targets are not kept: their bytes are in the sink, and the manifest tells a resumed
crawl not to fetch them again. Nothing here is unpickled: lines are JSON, bodies base64."""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import logging
import threading
from collections import deque
from pathlib import Path
from typing import IO

from airflow_sbcrawl.crawler.fetch import Response

log = logging.getLogger(__name__)

_PREFIX, _SUFFIX = "spool-", ".jsonl"


class ResponseSpool:
    """Answers since a checkpoint, by request: ``record`` keeps one, ``take`` gives one back to a resumed
    crawl that asks the same (method, URL, conditional headers) again, each answer once, in the order they
    came. Thread-safe: the fetch pool's threads record and take."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self._lock = threading.Lock()
        self._seq = 0
        self._file: IO[str] | None = None
        # Request key -> the answers a resumed crawl may take (each with its line, to be kept on).
        self._waiting: dict[str, deque[tuple[str, Response]]] = {}
        self.replayed = 0
        self._broken = False  # the folder could not be written: answers are no longer kept

    # -- which segment ---------------------------------------------------------------------------------
    def begin(self, seq: int, keep_from: int | None = None) -> None:
        """Checkpoint ``seq`` was written (0: a crawl starts afresh): new answers go to its segment. Segments
        before ``keep_from`` (the oldest checkpoint still stored) are dropped; ``None`` drops every other
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
                for line, _resp in answers:
                    self._write(line)

    def resume(self, seq: int) -> int:
        """A crawl resumes from checkpoint ``seq``: the answers received after it (in its segment and any
        later one, whose checkpoints were lost) wait to be taken, and new answers join its segment, which
        then holds every answer since ``seq`` once. Returns how many answers wait."""
        with self._lock:
            self._close()
            self._seq = seq
            self._waiting = {}
            lines: list[str] = []
            later = [(other, path) for other, path in self._segments() if other >= seq]
            for _seq, path in later:
                lines.extend(_sound_lines(path))
            waiting = 0
            for line in lines:
                entry = _decode(line)
                if entry is not None:
                    key, resp = entry
                    self._waiting.setdefault(key, deque()).append((line, resp))
                    waiting += 1
            if any(other != seq for other, _ in later):
                self._merge(seq, lines, later)
            return waiting

    def _merge(self, seq: int, lines: list[str], segments: list[tuple[int, Path]]) -> None:
        """Rewrite ``segments`` as the one of ``seq``: a second kill then finds every answer since ``seq``
        there, once."""
        try:
            self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
            merged = self._path(seq)
            tmp = merged.with_suffix(".tmp")
            tmp.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
            tmp.replace(merged)
            for other, path in segments:
                if other != seq:
                    path.unlink(missing_ok=True)
        except OSError as exc:
            self._broken = True
            log.warning("cannot keep answers in %s (%s): a resume will ask the site again", self.root, exc)

    # -- answers ---------------------------------------------------------------------------------------
    def take(self, method: str, url: str, headers: dict[str, str] | None) -> Response | None:
        """The answer the interrupted crawl got to this request, once; None when it got none."""
        key = _key(method, url, headers)
        with self._lock:
            answers = self._waiting.get(key)
            if not answers:
                return None
            _line, resp = answers.popleft()
            if not answers:
                del self._waiting[key]
            self.replayed += 1
            return resp

    def record(self, method: str, url: str, headers: dict[str, str] | None, resp: Response) -> None:
        """Keep an answer the site gave (an HTTP status; not a target, whose bytes the sink holds)."""
        if resp.status is None or resp.path is not None:
            return
        line = json.dumps({"key": _key(method, url, headers), "status": resp.status, "headers": resp.headers,
                           "mime": resp.mime, "kind": resp.kind, "sha256": resp.sha256, "size": resp.size,
                           "error": resp.error, "url": resp.url, "method": resp.method,
                           "body": base64.b64encode(resp.body).decode("ascii")}, separators=(",", ":"))
        with self._lock:
            self._write(line)

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
    def _write(self, line: str) -> None:
        if self._broken:
            return
        try:
            if self._file is None:
                self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
                self._file = self._path(self._seq).open("a", encoding="utf-8")
            self._file.write(line + "\n")
            self._file.flush()
        except OSError as exc:  # a convenience for resumes, never a reason to stop the crawl
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


def _sound_lines(path: Path) -> list[str]:
    """A segment's complete lines (the last one may be torn by the kill)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        log.warning("spool segment %s unreadable (%s): its answers will be asked again", path, exc)
        return []
    lines = text.split("\n")
    return [line for line in lines[:-1] if line]  # the part after the last newline was never finished


def _decode(line: str) -> tuple[str, Response] | None:
    try:
        entry = json.loads(line)
        resp = Response(url=str(entry["url"]), method=str(entry["method"]), status=int(entry["status"]),
                        headers={str(k): str(v) for k, v in entry["headers"].items()}, mime=str(entry["mime"]),
                        kind=str(entry["kind"]), body=base64.b64decode(entry["body"], validate=True),
                        sha256=str(entry["sha256"]), size=int(entry["size"]), error=str(entry["error"]))
        return str(entry["key"]), resp
    except (ValueError, KeyError, TypeError, AttributeError, binascii.Error) as exc:
        log.warning("skipped an unreadable spooled answer (%s): it will be asked again", exc)
        return None
