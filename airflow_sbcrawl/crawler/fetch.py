"""HTTP for the crawler: one request at a time, politely, within the budget.

A request is never followed through a redirect here (the engine decides, since redirects are counted and
kept in scope). Bodies are streamed: HTML into memory up to a cap, targets to a temporary file while their
sha256 is computed, blocked MIME types cut off as soon as the headers arrive."""

from __future__ import annotations

import contextlib
import email.utils
import hashlib
import logging
import os
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import requests

from airflow_sbcrawl.crawler.budget import Budget, StopRequested
from airflow_sbcrawl.crawler.config import CrawlConfig
from airflow_sbcrawl.crawler.mimes import is_html, media_type

log = logging.getLogger(__name__)

_RETRY_STATUSES = {429, 502, 503, 504}
_CHUNK = 64 * 1024


@dataclass
class Response:
    url: str
    method: str
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    mime: str = ""
    kind: str = "error"  # html | target | redirect | unchanged (a 304) | blocked | other | error
    body: bytes = b""  # HTML pages only
    path: Path | None = None  # targets only: a temporary file the caller must move or delete
    sha256: str = ""
    size: int = 0  # decoded body bytes
    error: str = ""

    @property
    def location(self) -> str | None:
        return self.headers.get("location")

    def discard(self) -> None:
        if self.path is not None:
            self.path.unlink(missing_ok=True)
            self.path = None


class Fetcher:
    def __init__(self, config: CrawlConfig, budget: Budget, stop: threading.Event | None = None,
                 tmp_dir: str | os.PathLike | None = None) -> None:
        self.config = config
        self.budget = budget
        self.stop = stop or threading.Event()
        self.tmp_dir = tmp_dir
        self.session = requests.Session()
        # HTTP(S)_PROXY and NO_PROXY are read once, not on every request as requests' trust_env does
        # (that environment scan was a tenth of the crawler's CPU time per page).
        self.session.trust_env = False
        self._env_proxies = urllib.request.getproxies_environment()
        self._proxies_by_host: dict[str, dict[str, str]] = {}
        self.session.headers["User-Agent"] = config.user_agent
        self.session.headers["Accept-Encoding"] = "gzip, deflate"
        self._last_request: dict[str, float] = {}
        self.host_delay: dict[str, float] = {}  # per-host delays above the configured one (Crawl-delay)
        self._targets = frozenset(config.target_mime_types)
        self._watchdog = _Watchdog()

    def close(self) -> None:
        self.session.close()
        self._watchdog.shutdown()

    def _proxies(self, url: str) -> dict[str, str]:
        host = urlsplit(url).netloc
        proxies = self._proxies_by_host.get(host)
        if proxies is None:
            bypass = "no" in self._env_proxies and urllib.request.proxy_bypass_environment(host, self._env_proxies)
            proxies = {} if bypass else {k: v for k, v in self._env_proxies.items() if k in ("http", "https")}
            self._proxies_by_host[host] = proxies
        return proxies

    # -- politeness ------------------------------------------------------------------------------------
    def _wait_turn(self, host: str) -> None:
        delay = max(self.config.delay, self.host_delay.get(host, 0.0))
        last = self._last_request.get(host)
        if last is not None and delay > 0:
            remaining = last + delay - time.monotonic()
            if remaining > 0:
                self.stop.wait(remaining)
        self._last_request[host] = time.monotonic()

    def _retry_wait(self, attempt: int, headers: dict[str, str]) -> float | None:
        """Seconds to wait before the next attempt, or None when the server asks for too long a pause."""
        value = headers.get("retry-after")
        if value:
            wait: float | None
            try:
                wait = float(value)
            except ValueError:
                when = email.utils.parsedate_to_datetime(value) if value else None
                wait = when.timestamp() - time.time() if when else None
            if wait is not None:
                wait = max(wait, 0.0)
                return None if wait > self.config.max_retry_after else wait
        return self.config.backoff * (2**attempt)

    # -- requests --------------------------------------------------------------------------------------
    def fetch(self, url: str, method: str = "GET", headers: dict[str, str] | None = None) -> Response:
        """One request with retries on connection errors, 429 and 5xx-unavailable; each attempt is budgeted.
        ``headers`` are extra request headers (If-None-Match / If-Modified-Since for a conditional GET).

        Raises BudgetExhausted when the budget cannot pay for the (next) attempt, and StopRequested when
        the crawl was asked to stop (before sending, or while a body was still arriving)."""
        host = urlsplit(url).netloc
        attempt = 0
        while True:
            self._wait_turn(host)
            if self.stop.is_set():
                raise StopRequested("stop requested")
            self.budget.reserve_request()
            resp = self._attempt(url, method, headers)
            retryable = resp.status in _RETRY_STATUSES or (resp.status is None and resp.error.startswith("network"))
            if not retryable or attempt >= self.config.retries or self.stop.is_set():
                return resp
            wait = self._retry_wait(attempt, resp.headers)
            if wait is None:
                resp.error = f"server asked to retry after more than {self.config.max_retry_after}s"
                return resp
            log.debug("retrying %s in %.1fs after %s", url, wait, resp.status or resp.error)
            self.stop.wait(wait)
            attempt += 1

    def _attempt(self, url: str, method: str, headers: dict[str, str] | None = None) -> Response:
        out = Response(url=url, method=method)
        timeout = (self.config.connect_timeout, self.config.read_timeout)
        try:
            raw = self.session.request(method, url, stream=True, allow_redirects=False, timeout=timeout,
                                       proxies=self._proxies(url), headers=headers)
        except requests.RequestException as exc:
            out.error = f"network: {type(exc).__name__}: {exc}"[:500]
            return out
        with raw:
            out.status = raw.status_code
            out.headers = {k.lower(): v for k, v in raw.headers.items()}
            out.mime = media_type(raw.headers.get("Content-Type"))
            if raw.status_code == 304:  # a conditional GET: what we hold is current, and no body comes
                out.kind = "unchanged"
                return out
            if 300 <= raw.status_code < 400:
                out.kind = "redirect" if raw.headers.get("Location") else "error"
                return out
            if raw.status_code >= 400 or raw.status_code < 200:
                out.error = f"HTTP {raw.status_code}"
                return out
            if out.mime.startswith(self.config.blocked_mime_prefixes):
                out.kind = "blocked"
                return out
            if method == "HEAD":
                out.kind = self._classify_mime(out.mime)
                return out
            kind = self._classify_mime(out.mime)
            if kind == "html":
                self._read_page(raw, out)
            elif kind == "target":
                self._read_target(raw, out)
            else:
                out.kind = "other"
        return out

    def _classify_mime(self, mime: str) -> str:
        if is_html(mime):
            return "html"
        if mime in self._targets:
            return "target"
        return "other"

    def _stream(self, raw: requests.Response, cap: int, sink) -> str:
        """Copy the decoded body to ``sink`` up to ``cap`` bytes and what is left of the byte budget;
        returns an error string ("" when the whole body was read). Budgeted bytes are body bytes as
        delivered (after gzip), so a decompression bomb is cut off by the cap, not by the wire size."""
        stream = raw.raw
        deadline = time.monotonic() + self.config.response_timeout
        # A slow-drip server sends a byte at a time and never trips the read timeout: close it at the deadline.
        self._watchdog.arm(deadline, raw.close)
        size = 0
        try:
            while True:
                left = self.budget.bytes_left()
                if left <= 0:
                    return "byte budget spent"
                try:
                    chunk = stream.read1(min(_CHUNK, left, cap + 1 - size), decode_content=True)
                except Exception as exc:  # urllib3 raises several types for a dropped or bad stream
                    if time.monotonic() >= deadline:
                        return f"response slower than {self.config.response_timeout}s"
                    return f"network: {type(exc).__name__}: {exc}"[:500]
                if not chunk:
                    if time.monotonic() >= deadline:
                        return f"response slower than {self.config.response_timeout}s"
                    return ""
                self.budget.spend_bytes(len(chunk))
                size += len(chunk)
                if size > cap:
                    return f"body larger than {cap} bytes"
                sink(chunk)
                if self.stop.is_set():
                    raise StopRequested("stop requested while a response was arriving")
        finally:
            self._watchdog.disarm()

    def _read_page(self, raw: requests.Response, out: Response) -> None:
        parts: list[bytes] = []
        error = self._stream(raw, self.config.max_page_bytes, parts.append)
        if error:
            out.kind, out.error = "error", error
            return
        out.kind = "html"
        out.body = b"".join(parts)
        out.size = len(out.body)

    def _read_target(self, raw: requests.Response, out: Response) -> None:
        digest = hashlib.sha256()
        fd, name = tempfile.mkstemp(prefix="sbcrawl-", suffix=".part", dir=self.tmp_dir)
        path = Path(name)
        size = 0
        try:
            with os.fdopen(fd, "wb") as fh:
                def sink(chunk: bytes) -> None:
                    nonlocal size
                    digest.update(chunk)
                    fh.write(chunk)
                    size += len(chunk)
                error = self._stream(raw, self.config.max_target_bytes, sink)
        except BaseException:
            path.unlink(missing_ok=True)
            raise
        if error:
            path.unlink(missing_ok=True)
            out.kind, out.error = "error", error
            return
        out.kind = "target"
        out.path = path
        out.sha256 = digest.hexdigest()
        out.size = size


class _Watchdog:
    """One thread that closes the response being read when its deadline passes (a thread per response
    would cost a thread start per page)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._deadline: float | None = None
        self._action = None
        self._thread: threading.Thread | None = None
        self._closed = False

    def arm(self, deadline: float, action) -> None:
        with self._cond:
            self._deadline, self._action = deadline, action
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="sbcrawl-watchdog", daemon=True)
                self._thread.start()
            self._cond.notify()

    def disarm(self) -> None:
        with self._cond:
            self._deadline, self._action = None, None

    def shutdown(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()

    def _run(self) -> None:
        with self._cond:
            while not self._closed:
                if self._deadline is None:
                    self._cond.wait()
                    continue
                remaining = self._deadline - time.monotonic()
                if remaining > 0:
                    self._cond.wait(remaining)
                    continue
                action, self._deadline, self._action = self._action, None, None
                with contextlib.suppress(Exception):  # closing a broken connection may fail: nothing to do
                    action()
