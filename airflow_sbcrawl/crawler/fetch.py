"""HTTP for the crawler: politely, within the budget, from any number of threads at once.

A request is never followed through a redirect here (the engine decides, since redirects are counted and
kept in scope). Bodies are streamed: HTML into memory up to a cap, targets to a temporary file while their
sha256 is computed, blocked MIME types cut off as soon as the headers arrive.

Every response has one deadline for connect, headers and body together (a server trickling its headers a
byte a second must not hold the crawl), extended only while the body arrives at a useful rate; a stop
request aborts the requests in flight. Bodies are decompressed here, with their expansion bounded, and the
byte budget counts bytes as they came over the wire."""

from __future__ import annotations

import contextlib
import email.utils
import hashlib
import logging
import os
import socket
import tempfile
import threading
import time
import urllib.request
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol
from urllib.parse import urlsplit

import urllib3

from airflow_sbcrawl.crawler.addresses import AddressGuard, AddressRefused
from airflow_sbcrawl.crawler.budget import Budget, StopRequested
from airflow_sbcrawl.crawler.config import CrawlConfig
from airflow_sbcrawl.crawler.mimes import is_html, media_type
from airflow_sbcrawl.crawler.transport import Connections, InFlight, refusal

log = logging.getLogger(__name__)

_RETRY_STATUSES = {429, 502, 503, 504}
_CHUNK = 64 * 1024
# Below this many decoded bytes the compression ratio is not judged (small, repetitive pages compress well).
_RATIO_FLOOR = 1024 * 1024
PART_PREFIX, PART_SUFFIX = "sbcrawl-", ".part"


@dataclass
class Response:
    """What one request found. ``kind`` says what it is to the crawl; an HTML page's ``body`` is in memory,
    a target's content in a temporary file (``path``) that the caller moves (stores) or deletes."""

    url: str
    method: str
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    mime: str = ""
    kind: str = "error"  # html | target | redirect | unchanged (a 304) | blocked | other | refused | error
    body: bytes = b""  # HTML pages only
    path: Path | None = None  # targets only: a temporary file the caller must move or delete
    sha256: str = ""
    size: int = 0  # decoded body bytes
    timed_out: bool = False
    error: str = ""

    @property
    def location(self) -> str | None:
        """A redirect's Location header (unresolved)."""
        return self.headers.get("location")

    def discard(self) -> None:
        """Delete a target's temporary file (a content not to be stored)."""
        if self.path is not None:
            self.path.unlink(missing_ok=True)
            self.path = None


class Spool(Protocol):
    """Where the answers since the last checkpoint are kept for a resume (``spool.ResponseSpool``)."""

    def take(self, method: str, url: str, headers: dict[str, str] | None) -> Response | None: ...

    def record(self, method: str, url: str, headers: dict[str, str] | None, resp: Response) -> None: ...


class Fetcher:
    """Makes one request at a time per call (``fetch``), thread-safe: the budget counted before it is sent,
    the per-host delay and Retry-After kept, retries with back-off, bodies bounded by size, time and
    compression ratio, addresses the crawl may not reach refused. Never raises for what a site does: the
    ``Response`` says it; raises ``CrawlInterrupted`` when the budget is spent or a stop was requested."""

    def __init__(self, config: CrawlConfig, budget: Budget, stop: threading.Event | None = None,
                 tmp_dir: str | os.PathLike | None = None) -> None:
        self.config = config
        self.budget = budget
        self.stop = stop or threading.Event()
        self.tmp_dir = tmp_dir
        self.guard = AddressGuard(config.start_url, config.allow_private_start)
        self._in_flight = InFlight()
        self._calls: dict[int, _Call] = {}  # thread -> the request it is making
        self._connections = Connections(self._in_flight, self.guard, config.concurrency)
        self._timeout = urllib3.Timeout(connect=config.connect_timeout, read=config.read_timeout)
        # HTTP(S)_PROXY and NO_PROXY are read once, not on every request (that environment scan was a tenth
        # of the crawler's CPU time per page when requests did it).
        self._env_proxies = urllib.request.getproxies_environment()
        self._proxies_by_host: dict[str, str | None] = {}
        self._headers = {"User-Agent": config.user_agent, "Accept-Encoding": "gzip, deflate", "Accept": "*/*"}
        self._free_at: dict[str, float] = {}  # server (address or host) -> when its next request may be sent
        self._servers: dict[str, str] = {}  # host name -> its server for politeness (see _server)
        self._turns = threading.Lock()
        self.host_delay: dict[str, float] = {}  # per-host delays above the configured one (Crawl-delay)
        self._targets = frozenset(config.target_mime_types)
        self._watchdog = _Watchdog(self.stop)
        self._slow: dict[str, int] = {}  # host -> responses in a row that missed their deadline
        self._slow_lock = threading.Lock()
        self.given_up: dict[str, str] = {}  # host -> why no more requests go to it
        self._long_pauses: dict[str, int] = {}  # host -> Retry-After answers above the cap
        self.spool: Spool | None = None  # answers since the last checkpoint (set by the engine)

    def close(self) -> None:
        """Close the connections and the watchdog thread."""
        self._connections.clear()
        self._watchdog.shutdown()

    @staticmethod
    def retries_itself(status: int | None, error: str) -> bool:
        """Failures the fetcher retries itself, with back-off: the caller need not try again at once."""
        return status in _RETRY_STATUSES or (status is None and error.startswith("network"))

    @staticmethod
    def clean_partial_files(tmp_dir: str | os.PathLike) -> int:
        """Remove the half-written downloads a killed crawl left in ``tmp_dir``; returns how many."""
        removed = 0
        for path in Path(tmp_dir).glob(f"{PART_PREFIX}*{PART_SUFFIX}"):
            with contextlib.suppress(OSError):
                path.unlink()
                removed += 1
        return removed

    def abort_in_flight(self, reason: str = "stop") -> None:
        """End the requests in progress now (from a signal handler or another thread)."""
        for call in self._calls.copy().values():
            call.abort_reason = call.abort_reason or reason
        self._in_flight.abort()

    def delay_of(self, host: str) -> float:
        """Seconds between two requests to ``host``: the configured delay, or its Crawl-delay if longer."""
        return max(self.config.delay, self.host_delay.get(host, 0.0))

    def _proxy(self, url: str) -> str | None:
        """The proxy a request for ``url`` goes through (HTTP_PROXY / HTTPS_PROXY, unless NO_PROXY)."""
        end = url.find("/", url.find("//") + 2)
        key = url if end < 0 else url[:end]  # scheme://host, without parsing the URL again
        if key not in self._proxies_by_host:
            parts = urlsplit(url)
            bypass = "no" in self._env_proxies and urllib.request.proxy_bypass_environment(parts.netloc,
                                                                                          self._env_proxies)
            self._proxies_by_host[key] = None if bypass else self._env_proxies.get(parts.scheme)
        return self._proxies_by_host[key]

    # -- politeness ------------------------------------------------------------------------------------
    def _server(self, url: str, hostname: str) -> str:
        """What the delay is kept for: the host's IP address (``polite_per_address``: two names of one
        site on one machine share one delay, as in Heritrix and Nutch), else the host name. Names reached
        through a proxy, or that do not resolve, count as their own server."""
        if not self.config.polite_per_address or self._proxy(url):
            return hostname
        server = self._servers.get(hostname)
        if server is None:
            try:
                infos = socket.getaddrinfo(hostname, None, type=socket.SOCK_STREAM)
                server = "ip:" + min(str(info[4][0]) for info in infos)
            except (OSError, UnicodeError, ValueError):
                server = hostname
            self._servers[hostname] = server
        return server

    def _wait_turn(self, server: str, host: str) -> None:
        """Wait until a request to ``host`` on ``server`` may be sent: the turns of concurrent requests are
        handed out in order, each ``delay`` after the previous one, none before a pause the server asked
        for ends."""
        with self._turns:
            now = time.monotonic()
            turn = max(now, self._free_at.get(server, now))
            self._free_at[server] = turn + self.delay_of(host)
        if turn > now:
            self.stop.wait(turn - now)

    def _mark_sent(self, server: str, host: str) -> None:
        """The next turn of ``server`` counts from when this request really goes: its journal write may have
        taken a while since its turn came, and the server must see the delay between arrivals, not between
        turns handed out here."""
        self._pause(server, self.delay_of(host))

    def _pause(self, server: str, seconds: float) -> None:
        """No request to ``server`` from any thread for ``seconds`` (a Retry-After holds the whole host)."""
        with self._turns:
            self._free_at[server] = max(self._free_at.get(server, 0.0), time.monotonic() + seconds)

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
    def fetch(self, url: str, method: str = "GET", headers: dict[str, str] | None = None,
              max_body: int | None = None) -> Response:
        """One request with retries on connection errors, 429 and 5xx-unavailable; each attempt is budgeted.
        ``headers`` are extra request headers (If-None-Match / If-Modified-Since for a conditional GET);
        ``max_body`` caps the decoded body below the configured page and target caps (a sitemap's 50 MB).

        Raises BudgetExhausted when the budget cannot pay for the (next) attempt, and StopRequested when
        the crawl was asked to stop (before sending, or while a body was still arriving).

        A resumed crawl takes the answer from ``spool`` when the interrupted crawl received it after the
        checkpoint it resumes from (no request, no budget spent); the site's answers are kept there."""
        if self.spool is not None:
            spooled = self.spool.take(method, url, headers)
            if spooled is not None:
                return spooled
        resp = self._fetch_from_site(url, method, headers, max_body)
        if self.spool is not None:
            self.spool.record(method, url, headers, resp)
        return resp

    def _fetch_from_site(self, url: str, method: str, headers: dict[str, str] | None,
                         max_body: int | None) -> Response:
        parts = urlsplit(url)
        host = parts.netloc
        if host in self.given_up:
            return Response(url=url, method=method, error=self.given_up[host])
        try:
            self.guard.check(parts.hostname or "")  # IP literals and loopback names, proxy or not
        except AddressRefused as exc:
            log.warning("%s (%s)", exc, url)
            return Response(url=url, method=method, kind="refused", error=f"refused: {exc}")
        server = self._server(url, parts.hostname or host)
        attempt = 0
        while True:
            self._wait_turn(server, host)
            if self.stop.is_set():
                raise StopRequested("stop requested")
            if host in self.given_up:  # given up while this request waited for its turn
                return Response(url=url, method=method, error=self.given_up[host])
            self.budget.reserve_request()
            self._mark_sent(server, host)
            resp = self._attempt(url, method, headers, max_body)
            if resp.kind == "refused":
                log.warning("%s (%s)", resp.error, url)
                return resp
            self._note_deadline(host, resp)
            if not self.retries_itself(resp.status, resp.error) or self.stop.is_set():
                return resp
            wait = self._retry_wait(attempt, resp.headers)
            if wait is None:
                self._pause_too_long(server, host, resp)
                return resp
            last = attempt >= self.config.retries
            if not last or resp.status is not None:
                # The server's pause holds the whole host, also after the last attempt: the next request
                # to it (another URL, from any thread) must not arrive before it ends.
                self._pause(server, wait)
            if last:
                return resp
            log.debug("retrying %s in %.1fs after %s", url, wait, resp.status or resp.error)
            attempt += 1

    def _pause_too_long(self, server: str, host: str, resp: Response) -> None:
        """A server asking for a pause above ``max_retry_after``: the host is held for that cap, and given up
        for the run when it asks again after it (its requests would only be turned away)."""
        cap = self.config.max_retry_after
        resp.error = f"server asked to retry after more than {cap:g}s"
        with self._slow_lock:
            again = self._long_pauses.get(host, 0) + 1
            self._long_pauses[host] = again
            if again >= 2 and host not in self.given_up:
                self.given_up[host] = (f"host gave up: it asked {again} times for a pause longer than "
                                       f"{cap:g}s (Retry-After {resp.headers.get('retry-after', '')!r})")
                log.warning("%s: %s", host, self.given_up[host])
            elif again == 1:
                log.warning("%s: %s; no request to it for %gs", host, resp.error, cap)
        self._pause(server, cap)

    def _note_deadline(self, host: str, resp: Response) -> None:
        """Give up on a host whose responses keep missing their deadline (each costs a whole timeout)."""
        with self._slow_lock:
            if not resp.timed_out:
                self._slow.pop(host, None)
                return
            log.warning("%s: %s", resp.url, resp.error)
            self._slow[host] = self._slow.get(host, 0) + 1
            if self._slow[host] >= self.config.max_host_timeouts:
                self.given_up[host] = (f"host gave up: {self._slow[host]} responses in a row slower than "
                                       f"{self.config.response_timeout:g}s")
                log.warning("%s: %s", host, self.given_up[host])

    def _attempt(self, url: str, method: str, headers: dict[str, str] | None = None,
                 max_body: int | None = None) -> Response:
        out = Response(url=url, method=method)
        # One deadline from before the connection to the end of the body; the watchdog aborts the request
        # when it passes, whatever stage the request is in.
        call = _Call(threading.get_ident(), time.monotonic())
        self._calls[call.thread] = call
        self._watchdog.arm(call.thread, call.started + self.config.response_timeout, lambda: self._on_deadline(call))
        try:
            return self._request(url, method, out, headers, call, max_body)
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            refused = refusal(exc)
            if refused is not None:
                out.kind, out.error = "refused", f"refused: {refused}"
            elif not self._interrupted(out, call):
                out.error = f"network: {type(exc).__name__}: {exc}"[:500]
            return out
        finally:
            self._watchdog.disarm(call.thread)
            self._calls.pop(call.thread, None)
            self._in_flight.detach()

    def _on_deadline(self, call: _Call) -> None:
        call.abort_reason = call.abort_reason or ("stop" if self.stop.is_set() else "deadline")
        self._in_flight.abort(call.thread)

    def _deadline_passed(self, call: _Call) -> bool:
        """After a failed or short read: True when the deadline aborted it; raises when a stop did."""
        if call.abort_reason == "deadline":
            return True
        if call.abort_reason or self.stop.is_set():
            raise StopRequested("stop requested while a response was arriving")
        return False

    def _interrupted(self, out: Response, call: _Call) -> bool:
        if not self._deadline_passed(call):
            return False
        out.kind, out.timed_out = "error", True
        out.error = f"response slower than {self.config.response_timeout:g}s"
        return True

    def _request(self, url: str, method: str, out: Response, headers: dict[str, str] | None,
                 call: _Call, max_body: int | None = None) -> Response:
        raw = self._connections.manager(self._proxy(url)).urlopen(
            method, url, headers={**self._headers, **headers} if headers else self._headers, redirect=False,
            retries=False, preload_content=False, decode_content=False, timeout=self._timeout)
        try:
            if self._interrupted(out, call):  # the headers were complete just as the deadline passed
                return out
            status = out.status = raw.status
            out.headers = {k.lower(): v for k, v in raw.headers.items()}
            out.mime = media_type(out.headers.get("content-type"))
            if status == 304:  # a conditional GET: what we hold is current, and no body comes
                out.kind = "unchanged"
                return out
            if 300 <= status < 400:
                out.kind = "redirect" if out.headers.get("location") else "error"
                return out
            if status >= 400 or status < 200:
                out.error = f"HTTP {status}"
                return out
            if out.mime.startswith(self.config.blocked_mime_prefixes):
                out.kind = "blocked"
                return out
            if method == "HEAD":
                out.kind = self._classify_mime(out.mime)
                return out
            kind = self._classify_mime(out.mime)
            if kind == "html":
                self._read_page(raw, out, call, min(self.config.max_page_bytes, max_body or self.config.max_page_bytes))
            elif kind == "target":
                self._read_target(raw, out, call,
                                  min(self.config.max_target_bytes, max_body or self.config.max_target_bytes))
            else:
                out.kind = "other"
            return out
        finally:
            # A body read to its end left its connection in the pool already; one cut short (a redirect's,
            # a blocked file's, an error page's) closes it rather than reading what nobody wants.
            raw.close()
            raw.release_conn()

    def _classify_mime(self, mime: str) -> str:
        if is_html(mime):
            return "html"
        if mime in self._targets:
            return "target"
        return "other"

    def _stream(self, raw: urllib3.BaseHTTPResponse, cap: int, sink, call: _Call) -> str:
        """Copy the decoded body to ``sink`` up to ``cap`` bytes; returns an error string ("" when the whole
        body was read). The byte budget is charged with wire bytes; a body that expands more than
        ``max_compression_ratio`` times (a decompression bomb) is cut off."""
        stream = raw
        decoder = _Decoder(raw.headers.get("Content-Encoding", ""))
        if decoder.error:
            return decoder.error
        config = self.config
        wire = size = 0
        while True:
            granted = self.budget.reserve_bytes(_CHUNK)  # before the read: concurrent bodies share the budget
            if not granted:
                return "byte budget spent"
            try:
                chunk = stream.read1(granted, decode_content=False)
            except Exception as exc:  # urllib3 raises several types for a dropped or bad stream
                self.budget.refund_bytes(granted)
                if self._deadline_passed(call):
                    return f"response slower than {config.response_timeout:g}s"
                return f"network: {type(exc).__name__}: {exc}"[:500]
            self.budget.refund_bytes(granted - len(chunk))
            if not chunk:
                if self._deadline_passed(call):
                    return f"response slower than {config.response_timeout:g}s"
                return decoder.finish()
            wire += len(chunk)
            # A body arriving at a useful rate may take longer than the deadline: a 2 GB file is no drip.
            self._watchdog.extend(call.thread, call.started + config.response_timeout + wire / config.min_transfer_rate)
            for part in decoder.feed(chunk):
                size += len(part)
                if size > cap:
                    return f"body larger than {cap} bytes"
                if size > _RATIO_FLOOR and size > config.max_compression_ratio * wire:
                    error = (f"decompression bomb: body expands more than {config.max_compression_ratio:g} "
                             f"times ({wire} bytes on the wire), cut off")
                    log.warning("%s: %s", raw.url, error)
                    return error
                sink(part)
            if decoder.error:
                return decoder.error
            if self.stop.is_set():
                raise StopRequested("stop requested while a response was arriving")

    def _read_page(self, raw: urllib3.BaseHTTPResponse, out: Response, call: _Call, cap: int) -> None:
        parts: list[bytes] = []
        error = self._stream(raw, cap, parts.append, call)
        if error:
            out.kind, out.error, out.timed_out = "error", error, error.startswith("response slower")
            return
        out.kind = "html"
        out.body = b"".join(parts)
        out.size = len(out.body)

    def _read_target(self, raw: urllib3.BaseHTTPResponse, out: Response, call: _Call, cap: int) -> None:
        digest = hashlib.sha256()
        fd, name = tempfile.mkstemp(prefix=PART_PREFIX, suffix=PART_SUFFIX, dir=self.tmp_dir)
        path = Path(name)
        size = 0
        try:
            with os.fdopen(fd, "wb") as fh:
                def sink(chunk: bytes) -> None:
                    nonlocal size
                    digest.update(chunk)
                    fh.write(chunk)
                    size += len(chunk)
                error = self._stream(raw, cap, sink, call)
        except BaseException:
            path.unlink(missing_ok=True)
            raise
        if error:
            path.unlink(missing_ok=True)
            out.kind, out.error, out.timed_out = "error", error, error.startswith("response slower")
            return
        out.kind = "target"
        out.path = path
        out.sha256 = digest.hexdigest()
        out.size = size


@dataclass(slots=True)
class _Call:
    """One request being made: the thread making it, when it started, and why it was aborted, if it was."""

    thread: int
    started: float
    abort_reason: str = ""


class _Decoder:
    """Content-Encoding undone chunk by chunk, each output piece at most _CHUNK bytes (so a bomb is seen
    after a few pieces, never held whole). gzip and deflate are what the fetcher asks for."""

    def __init__(self, encoding: str) -> None:
        codings = [c.strip().lower() for c in encoding.split(",") if c.strip()]
        self.error = ""
        self._zlib: zlib._Decompress | None = None
        self._raw_deflate_tried = False
        self._fed = False
        if not codings or codings == ["identity"]:
            return
        if len(codings) == 1 and codings[0] in ("gzip", "x-gzip", "deflate"):
            self._zlib = zlib.decompressobj(zlib.MAX_WBITS | 32)  # gzip or zlib header, detected
            return
        self.error = f"unsupported Content-Encoding {encoding!r}"

    def feed(self, data: bytes):
        if self._zlib is None:
            yield data
            return
        self._fed = self._fed or bool(data)
        while data:
            try:
                out = self._zlib.decompress(data, _CHUNK)
            except zlib.error as exc:
                if not self._raw_deflate_tried and not self._zlib.eof:  # "deflate" without zlib header
                    self._raw_deflate_tried = True
                    self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)
                    continue
                self.error = f"body does not decompress: {exc}"
                return
            self._raw_deflate_tried = True
            if out:
                yield out
            if self._zlib.eof:
                rest = self._zlib.unused_data
                if not rest.strip(b"\0"):
                    return
                self._zlib = zlib.decompressobj(zlib.MAX_WBITS | 32)  # concatenated gzip members
                data = rest
            else:
                data = self._zlib.unconsumed_tail

    def finish(self) -> str:
        if self._zlib is not None and self._fed and not self._zlib.eof and not self.error:
            return "compressed body ended early"  # a truncated body is not what the server meant to send
        return self.error


class _Watchdog:
    """One thread that aborts a request when its deadline passes or a stop is requested (a thread per
    response would cost a thread start per page). It looks every quarter second, and is woken only for a
    deadline nearer than that: arming a request costs no wake-up. A signal arriving just before a
    request's socket was known could not abort it; the next look does."""

    _STOP_POLL = 0.25

    def __init__(self, stop: threading.Event) -> None:
        self._stop = stop
        self._cond = threading.Condition()
        self._armed: dict[int, tuple[float, Callable[[], None]]] = {}  # thread -> (deadline, action)
        self._wake_at = 0.0
        self._thread: threading.Thread | None = None
        self._closed = False

    def arm(self, thread: int, deadline: float, action: Callable[[], None]) -> None:
        with self._cond:
            self._armed[thread] = (deadline, action)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="sbcrawl-watchdog", daemon=True)
                self._thread.start()
            if deadline < self._wake_at:
                self._cond.notify()

    def extend(self, thread: int, deadline: float) -> None:
        """Move a deadline later (no wake-up needed: the thread looks again when the old one passes)."""
        with self._cond:
            armed = self._armed.get(thread)
            if armed is not None and deadline > armed[0]:
                self._armed[thread] = (deadline, armed[1])

    def disarm(self, thread: int) -> None:
        with self._cond:
            self._armed.pop(thread, None)

    def shutdown(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()

    def _run(self) -> None:
        with self._cond:
            while not self._closed:
                now = time.monotonic()
                stopping = self._stop.is_set()
                due = [t for t, (deadline, _) in self._armed.items() if stopping or deadline <= now]
                for thread in due:
                    _, action = self._armed.pop(thread)
                    with contextlib.suppress(Exception):  # closing a broken connection may fail: nothing to do
                        action()
                nearest = min((deadline for deadline, _ in self._armed.values()), default=now + self._STOP_POLL)
                self._wake_at = min(nearest, now + self._STOP_POLL)
                self._cond.wait(max(self._wake_at - now, 0.001))
