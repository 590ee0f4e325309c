"""Progress lines for long work: every few seconds while it runs, a line saying where it is, and one when
it ends. Plain lines, so they read the same on a terminal, in a file and in an Airflow task log; a
background thread writes them, so a single long step (one big file, one Iceberg commit) is not silent
either. Work shorter than the interval prints nothing (its result line is enough)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from types import TracebackType

#: Seconds between two lines while the work runs.
EVERY_S = 10.0


class ProgressLines:
    """``with ProgressLines("tables detect", print_line) as progress: ... progress.status = "12/738 files"``:
    while the block runs, ``emit`` gets "<what>: <status> (<n> s)" every ``every_s`` seconds (``EVERY_S``
    by default); once it ends after at least that long, "<what>: <status>, <n> s in all" (or "stopped
    after <n> s" when it raised)."""

    def __init__(self, what: str, emit: Callable[[str], None], every_s: float | None = None) -> None:
        self.what = what
        self.emit = emit
        self.every_s = EVERY_S if every_s is None else every_s
        self.status = "starting"
        self._started = time.monotonic()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._tick, name=f"progress: {what}", daemon=True)

    def __enter__(self) -> ProgressLines:
        self._started = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._done.set()
        self._thread.join()
        elapsed = self.elapsed()
        if elapsed >= self.every_s:
            ended = f"{elapsed:.0f} s in all" if kind is None else f"stopped after {elapsed:.0f} s"
            self.emit(f"{self.what}: {self.status}, {ended}")

    def elapsed(self) -> float:
        """Seconds since the work started."""
        return time.monotonic() - self._started

    def _tick(self) -> None:
        while not self._done.wait(self.every_s):
            self.emit(f"{self.what}: {self.status} ({self.elapsed():.0f} s)")
