"""Requests on their way out: queued per host until the fetch pool has room, then in flight.

The downloader decides nothing about what to fetch or in which order: the engine queues the requests of
pages already read, offers the scheduler's next link when the pool has room for it, and takes completed
requests back. Politeness (per-host delays, Crawl-delay, Retry-After) is the fetcher's, which every
request goes through; a host with a delay gets one request at a time."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from airflow_sbcrawl.crawler.fetch import Fetcher, Response
from airflow_sbcrawl.crawler.pool import FetchPool
from airflow_sbcrawl.crawler.work import Job


class Downloader:
    """Per host, the requests waiting for room in the pool (``queue``); one link from the scheduler waiting
    for its host (``offer``); the pool's requests in flight (``wait`` gives them back as they complete)."""

    def __init__(self, fetcher: Fetcher, concurrency: int) -> None:
        self.fetcher = fetcher
        self.concurrency = concurrency
        self.pool: FetchPool[Job, Response] = FetchPool(self._fetch, concurrency, self._host_limit)
        self._queue: dict[str, deque[Job]] = {}
        self._held: Job | None = None
        self._last_host: str | None = None

    @property
    def in_flight(self) -> int:
        """Requests sent and not taken back yet."""
        return self.pool.in_flight

    def queue(self, job: Job, first: bool = False) -> None:
        """A request of work under way (a page's checks and targets, a redirect's next hop: ``first``)."""
        jobs = self._queue.setdefault(job.host, deque())
        if first:
            jobs.appendleft(job)
        else:
            jobs.append(job)

    def pump(self, dispatch: Callable[[Job], None]) -> None:
        """Hand ``dispatch`` what can go now: queued requests whose host has room, then the held link."""
        for host in list(self._queue):
            jobs = self._queue[host]
            while jobs and self.pool.can_send(host):
                dispatch(jobs.popleft())
            if not jobs:
                del self._queue[host]
        if self._held is not None and self.pool.can_send(self._held.host):
            job, self._held = self._held, None
            dispatch(job)

    def has_room(self) -> bool:
        """Whether a new link may be taken now: nothing held, and room in the pool and at the last link's
        host (so the scheduler decides as late as the pool allows)."""
        return (self._held is None and self.pool.in_flight < self.pool.size
                and (self._last_host is None or self.pool.can_send(self._last_host)))

    def offer(self, job: Job, dispatch: Callable[[Job], None]) -> None:
        """A link from the scheduler: sent now if its host has room, else held until it has."""
        self._last_host = job.host
        if self.pool.can_send(job.host):
            dispatch(job)
        else:
            self._held = job

    def send(self, job: Job) -> None:
        """Send a request now (``pump`` and ``offer`` call back ``dispatch``, which decides, then sends)."""
        self.pool.send(job.host, job)

    def wait(self, timeout: float) -> tuple[Job, Response | BaseException] | None:
        """The next completed request (its job and response, or the exception it raised), or None when
        none completed within ``timeout`` seconds."""
        return self.pool.wait(timeout)

    def unsent(self) -> list[int]:
        """The links of every request not sent yet, forgotten here (an interruption parks them)."""
        origins = [job.origin for jobs in self._queue.values() for job in jobs]
        if self._held is not None:
            origins.append(self._held.origin)
        self._queue, self._held = {}, None
        return origins

    def close(self) -> None:
        """End the pool's threads (requests still running are aborted)."""
        if self.pool.in_flight:  # an error left requests running: nothing will read their answers
            self.fetcher.abort_in_flight()
        self.pool.close()

    def _fetch(self, job: Job) -> Response:
        """Runs on a pool thread: the request only; what it means is decided back in the engine."""
        return self.fetcher.fetch(job.url, headers=job.conditions)

    def _host_limit(self, host: str) -> int:
        return 1 if self.fetcher.delay_of(host) > 0 else self.concurrency
