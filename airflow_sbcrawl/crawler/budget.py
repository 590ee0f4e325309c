"""The crawl budget: requests (GET and HEAD alike) and body bytes, checked before every request."""

from __future__ import annotations

from typing import Protocol


class CrawlInterrupted(Exception):
    """The crawl must stop before the next request; whatever was not done yet is parked for a resume."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class BudgetExhausted(CrawlInterrupted):
    pass


class StopRequested(CrawlInterrupted):
    pass


class Journal(Protocol):
    """Write-ahead record of spending, so that a crawl killed between checkpoints still knows what it spent."""

    def record(self, requests: int, nbytes: int) -> None: ...


class Budget:
    def __init__(self, max_requests: int, max_bytes: int, journal: Journal | None = None) -> None:
        self.max_requests = max_requests
        self.max_bytes = max_bytes
        self.requests = 0
        self.bytes = 0
        self.journal = journal

    def reserve_request(self) -> None:
        """Count one request before it is sent; raise if it would exceed the budget."""
        if self.requests >= self.max_requests:
            raise BudgetExhausted("request budget spent")
        if self.bytes >= self.max_bytes:
            raise BudgetExhausted("byte budget spent")
        self.requests += 1
        if self.journal is not None:
            self.journal.record(1, 0)

    def bytes_left(self) -> int:
        return max(self.max_bytes - self.bytes, 0)

    def spend_bytes(self, nbytes: int) -> None:
        if nbytes:
            self.bytes += nbytes
            if self.journal is not None:
                self.journal.record(0, nbytes)

    @property
    def request_share(self) -> float:
        return self.requests / self.max_requests
