"""The crawl budget: requests (GET and HEAD alike) and body bytes, checked before every request."""

from __future__ import annotations

import threading
from typing import Protocol


class CrawlInterrupted(Exception):
    """The crawl must stop before the next request; whatever was not done yet is parked for a resume."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class BudgetExhausted(CrawlInterrupted):
    """The request or byte budget is spent."""

    pass


class StopRequested(CrawlInterrupted):
    """A stop was requested (``Crawler.request_stop``: a signal, Airflow's on_kill, a benchmark)."""

    pass


class Journal(Protocol):
    """Write-ahead record of spending, so that a crawl killed between checkpoints still knows what it spent."""

    def record(self, requests: int, nbytes: int) -> None:
        """Add this much spending to the record, durably, before it happens."""
        ...

    def restore(self, requests: int, nbytes: int) -> None:
        """Go on from these totals (a resumed crawl)."""
        ...


#: Bytes recorded in the journal ahead of their arrival, so that a body is not a journal line per chunk.
BYTE_LEASE = 1024 * 1024


class Budget:
    """Spending is written to the journal before it happens (requests ``request_lease`` at a time, before
    the first of them is sent; bytes a lease ahead of their arrival), so a crawl killed at any moment, or
    whose journal cannot be written, resumes with at least what it spent: the budget can be left partly
    unused by a kill, never overshot. Requests fetched concurrently share one budget: every change is
    made under a lock, and bytes are reserved before a read and what the read did not use is given back."""

    def __init__(self, max_requests: int, max_bytes: int, journal: Journal | None = None,
                 request_lease: int = 1) -> None:
        self.max_requests = max_requests
        self.max_bytes = max_bytes
        self.requests = 0
        self.bytes = 0
        self.journal = journal
        self.request_lease = max(request_lease, 1)
        self._journal_requests = 0  # requests already recorded in the journal (>= self.requests)
        self._journal_bytes = 0  # bytes already recorded in the journal (>= self.bytes)
        self._lock = threading.Lock()

    def restore(self, requests: int, nbytes: int) -> None:
        """Totals of a resumed crawl; the journal goes on from them."""
        with self._lock:
            self.requests, self.bytes = requests, nbytes
            self._journal_requests, self._journal_bytes = requests, nbytes
            if self.journal is not None:
                self.journal.restore(requests, nbytes)

    def raise_if_spent(self) -> None:
        """``BudgetExhausted`` when the requests or the bytes are all spent."""
        if self.requests >= self.max_requests:
            raise BudgetExhausted("request budget spent")
        if self.bytes >= self.max_bytes:
            raise BudgetExhausted("byte budget spent")

    def reserve_request(self) -> None:
        """Count one request before it is sent; raise if it would exceed the budget."""
        with self._lock:
            if self.requests >= self.max_requests:
                raise BudgetExhausted("request budget spent")
            if self.bytes >= self.max_bytes:
                raise BudgetExhausted("byte budget spent")
            if self.journal is not None and self.requests + 1 > self._journal_requests:
                # Recorded before it is counted and sent: if the journal cannot be written, nothing is sent.
                lease = min(self.requests + self.request_lease, self.max_requests)
                self.journal.record(lease - self._journal_requests, 0)
                self._journal_requests = lease
            self.requests += 1

    def reserve_bytes(self, wanted: int) -> int:
        """Count up to ``wanted`` bytes before reading them; returns how many may be read (0: none left).
        What the read did not use goes back with ``refund_bytes``."""
        with self._lock:
            granted = max(min(wanted, self.max_bytes - self.bytes), 0)
            self.bytes += granted
            if self.journal is not None and self.bytes > self._journal_bytes:
                lease = max(min(self.bytes + BYTE_LEASE, self.max_bytes), self.bytes)
                self.journal.record(0, lease - self._journal_bytes)
                self._journal_bytes = lease
            return granted

    def refund_bytes(self, nbytes: int) -> None:
        """Bytes reserved but not read: the journal keeps its (higher) record, which only grows."""
        if nbytes > 0:
            with self._lock:
                self.bytes -= nbytes

    @property
    def request_share(self) -> float:
        return self.requests / self.max_requests
