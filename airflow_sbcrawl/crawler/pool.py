"""Requests on worker threads, a bounded number at once and per host, handed back in order of completion.

The pool decides nothing about what to fetch or in which order: the engine sends a request when
``can_send`` says the pool and the request's host have room, and takes completed ones back with
``wait``. Politeness (the per-host delay, Crawl-delay, Retry-After) is the fetcher's, which every
request goes through; a host with a delay gets one request at a time, so its requests are also never
sent before the previous one is answered."""

from __future__ import annotations

import queue
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Generic, TypeVar

J = TypeVar("J")
R = TypeVar("R")


class FetchPool(Generic[J, R]):
    """``work(job)`` runs on one of ``size`` threads; an exception it raises is handed back as the result.
    Bookkeeping (what is in flight, per host) is done by the one thread that sends and waits."""

    def __init__(self, work: Callable[[J], R], size: int, host_limit: Callable[[str], int]) -> None:
        if size < 1:
            raise ValueError(f"a fetch pool needs at least one connection, got {size}")
        self.size = size
        self._work = work
        self._host_limit = host_limit
        self._todo: queue.SimpleQueue[tuple[str, J] | None] = queue.SimpleQueue()
        self._done: queue.SimpleQueue[tuple[str, J, R | BaseException]] = queue.SimpleQueue()
        self._busy: Counter[str] = Counter()
        self.in_flight = 0
        self._threads: list[threading.Thread] = []
        self._cpu: list[float] = []  # CPU seconds of each thread (each writes only its own)

    def can_send(self, host: str) -> bool:
        return self.in_flight < self.size and self._busy[host] < max(self._host_limit(host), 1)

    def send(self, host: str, job: J) -> None:
        if len(self._threads) < min(self.size, self.in_flight + 1):  # threads start as they are needed
            self._cpu.append(0.0)
            thread = threading.Thread(target=self._run, args=(len(self._threads),),
                                      name=f"sbcrawl-fetch-{len(self._threads)}", daemon=True)
            thread.start()
            self._threads.append(thread)
        self._busy[host] += 1
        self.in_flight += 1
        self._todo.put((host, job))

    def wait(self, timeout: float) -> tuple[J, R | BaseException] | None:
        """The next completed request (its job and response, or the exception it raised), or None when
        none completed within ``timeout`` seconds."""
        try:
            host, job, result = self._done.get(timeout=timeout)
        except queue.Empty:
            return None
        self._busy[host] -= 1
        if not self._busy[host]:
            del self._busy[host]
        self.in_flight -= 1
        return job, result

    @property
    def cpu_seconds(self) -> float:
        """CPU time the pool's threads spent on requests (the process's CPU would include servers of tests
        and benchmarks running in the same process)."""
        return sum(self._cpu)

    def close(self, timeout: float = 5.0) -> None:
        """Let the threads end once their request is done (within ``timeout`` seconds in all)."""
        for _ in self._threads:
            self._todo.put(None)
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(timeout=max(deadline - time.monotonic(), 0.0))
        self._threads = []

    def _run(self, slot: int) -> None:
        while (item := self._todo.get()) is not None:
            host, job = item
            began = time.thread_time()
            try:
                result: R | BaseException = self._work(job)
            except BaseException as exc:  # handed to the engine, which decides (a stop, the budget, a bug)
                result = exc
            self._cpu[slot] += time.thread_time() - began
            self._done.put((host, job, result))
