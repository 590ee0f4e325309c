"""A real HTTP server for a simulated site: forward proxy and virtual host at once, with its own request log.

A crawler reaches the fake host names either through ``HTTP_PROXY=http://127.0.0.1:PORT`` (requests then
sends absolute-form request lines, ``GET http://www.stats.example/x HTTP/1.1``) or by connecting to the port
with a ``Host:`` header.  The log is what benchmarks count: requests as the server saw them, not as the
crawler believes it made them.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from sbcrawl_dev.sim.profiles import get_profile
from sbcrawl_dev.sim.site import Site, build_site
from sbcrawl_dev.sim.web import WWW


@dataclass(frozen=True)
class LogEntry:
    method: str
    url: str
    status: int
    bytes_sent: int  # body bytes actually written (less than the body if the client hung up)
    time: float  # time.monotonic() when the response started (when it ended, for cut or streamed bodies)
    arrived: float = 0.0  # time.monotonic() when the request was read, before the server's latency


class RequestLog:
    """Thread-safe append-only list of LogEntry."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: list[LogEntry] = []

    def add(self, entry: LogEntry) -> int:
        with self._lock:
            self._entries.append(entry)
            return len(self._entries) - 1

    def replace(self, index: int, old: LogEntry, new: LogEntry) -> None:
        """Correct an entry in place (unless the log was reset meanwhile)."""
        with self._lock:
            if index < len(self._entries) and self._entries[index] is old:
                self._entries[index] = new

    def entries(self) -> list[LogEntry]:
        with self._lock:
            return list(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"  # keep-alive: a 50k-page crawl must not open 50k connections
    disable_nagle_algorithm = True  # headers and body go out in separate writes: avoid the 40 ms ACK stall

    def log_message(self, format: str, *args: Any) -> None:  # quiet by default
        if self.server.verbose:
            super().log_message(format, *args)

    def do_GET(self) -> None:
        self._serve("GET")

    def do_HEAD(self) -> None:
        self._serve("HEAD")

    def _absolute_url(self) -> str:
        if self.path.startswith(("http://", "https://")):
            return self.path  # proxy mode: absolute-form request line
        host = (self.headers.get("Host") or WWW).split(":")[0].lower()
        if host in ("127.0.0.1", "localhost", ""):
            host = WWW  # direct browsing of the port lands on the main host
        return f"http://{host}{self.path}"

    def _serve(self, method: str) -> None:
        arrived = time.monotonic()
        url = self._absolute_url()
        site = self.server.site
        if self.server.latency:
            time.sleep(self.server.latency)
        try:
            conditions = {k: v for k in ("If-None-Match", "If-Modified-Since") if (v := self.headers.get(k))}
            status, headers, body = site.response(method, url, conditions=conditions)
        except Exception:  # a simulator bug must show up as a 500 in the log, not as a hung client
            status, headers, body = 500, {"Content-Type": "text/plain", "Content-Length": "0"}, []
        sent = 0
        close = "Content-Length" not in headers or headers.get("Connection") == "close"
        # Log before the client can see the response, so that a client which checks the log right after
        # its request finds it there; the byte count is corrected afterwards if the transfer differed.
        expected = int(headers.get("Content-Length", 0)) if method != "HEAD" else 0
        entry = LogEntry(method, url, status, expected, time.monotonic(), arrived)
        index = self.server.log.add(entry)
        try:
            self.send_response(status)
            for k, v in headers.items():
                if k != "Connection":
                    self.send_header(k, v)
            if close:
                self.send_header("Connection", "close")
            self.end_headers()
            if method != "HEAD":
                for chunk in body:
                    self.wfile.write(chunk)
                    sent += len(chunk)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, TimeoutError):
            close = True  # the client hung up, as a crawler capping a download should
        finally:
            if close:
                self.close_connection = True
            with contextlib.suppress(Exception):
                body.close()  # type: ignore[union-attr]  # stop generators of streamed bodies
            if sent != expected:
                self.server.log.replace(index, entry, LogEntry(method, url, status, sent, time.monotonic(), arrived))


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # stop() must not wait for a slow-drip response to finish

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A crawler hanging up on a kept-alive connection (it cut off a blocked download) is normal.
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)
    allow_reuse_address = True

    def __init__(self, addr: tuple[str, int], site: Site, log: RequestLog, verbose: bool,
                 latency: float = 0.0) -> None:
        self.latency = latency
        self.site = site
        self.log = log
        self.verbose = verbose
        super().__init__(addr, _Handler)


class SimServer:
    """Serve ``site`` on 127.0.0.1; usable as a context manager.

    >>> with SimServer(build_site("tiny")) as srv:  # doctest: +SKIP
    ...     requests.get(srv.site.start_url, proxies={"http": srv.proxy_url})
    """

    def __init__(self, site: Site, port: int = 0, host: str = "127.0.0.1", verbose: bool = False,
                 latency: float = 0.0) -> None:
        """``latency``: seconds every response waits before it starts (a remote server's round trip)."""
        self.site = site
        self.latency = latency
        self._addr = (host, port)
        self._verbose = verbose
        self._log = RequestLog()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> SimServer:
        if self._server is None:
            self._server = _Server(self._addr, self.site, self._log, self._verbose, self.latency)
            self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.1},
                                            name=f"sim-{self.site.profile.name}", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            if self._thread is not None:
                self._thread.join(timeout=5)
            self._server = None
            self._thread = None

    def __enter__(self) -> SimServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("server not started")
        return self._server.server_address[1]

    @property
    def proxy_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """The port itself, answering as the main host (Host-header mode for clients without a proxy)."""
        return f"http://127.0.0.1:{self.port}/"

    @property
    def log(self) -> list[LogEntry]:
        """A snapshot of every request served since start (or the last reset_log)."""
        return self._log.entries()

    def reset_log(self) -> None:
        """Forget the log and the per-URL state (429 counters), e.g. between two crawls of a benchmark."""
        self._log.clear()
        self.site.reset_state()

    def summary(self) -> dict[str, Any]:
        entries = self._log.entries()
        # Never trigger the ground-truth walk from here: on the large profile it takes a while.
        targets = self.site.targets if self.site.has_ground_truth else None
        served_targets = {
            e.url for e in entries
            if e.method == "GET" and e.status == 200 and self.site.kind(e.url) == "target"
        }
        return {
            "requests": len(entries),
            "by_method": dict(Counter(e.method for e in entries)),
            "by_status": dict(Counter(e.status for e in entries)),
            "bytes_sent": sum(e.bytes_sent for e in entries),
            "targets_served": len(served_targets),
            "targets_total": len(targets) if targets is not None else None,
            "out_of_scope_requests": sum(1 for e in entries if not self.site.in_scope(e.url)),
        }


def serve_forever(profile: str = "small", seed: int = 0, port: int = 8765, crawl_delay: float | None = None,
                  verbose: bool = False, epoch: int = 0, latency: float = 0.0) -> None:
    """Serve a site until interrupted (the ``python -m sbcrawl_dev serve-sim PROFILE`` command)."""
    site = build_site(profile, seed, crawl_delay, epoch)
    srv = SimServer(site, port=port, verbose=verbose, latency=latency).start()
    print(f"Serving site {profile!r} (seed {seed}, epoch {epoch})", flush=True)
    print(f"  proxy:     HTTP_PROXY={srv.proxy_url}", flush=True)
    print(f"  start URL: {site.start_url}", flush=True)
    # No "direct" URL: the site spans several host names that only the proxy answers for, so a crawl or a
    # browser pointed at 127.0.0.1 would see the www host alone (4 of 182 files for "small").
    print("  crawl and browse through the proxy (the site's links span several host names)", flush=True)
    serve_until_interrupted(srv.stop)


def serve_until_interrupted(stop: Callable[[], None]) -> None:
    """Block the command's thread (the servers run on their own) until Ctrl-C, then ``stop`` them."""
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        stop()


def main(argv: list[str] | None = None) -> int:
    """``python -m sbcrawl_dev serve-sim PROFILE``: exit 2 on bad options, 1 if the port is taken."""
    prog = "python -m sbcrawl_dev serve-sim"
    p = argparse.ArgumentParser(prog=prog, description="Serve a simulated statistics website on 127.0.0.1.")
    p.add_argument("profile", help="tiny, small, deep, portal, large, hostile or random-<seed>")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--port", type=int, default=8900)
    p.add_argument("--epoch", type=int, default=0,
                   help="serve the site as it is this many periods later (new, updated, removed, moved files)")
    p.add_argument("--latency-ms", type=float, default=0.0,
                   help="wait this long before every response, like a remote server")
    args = p.parse_args(argv)
    if not 0 <= args.port <= 65535:
        print(f"{prog}: --port must be from 0 (any free port) to 65535, not {args.port}", file=sys.stderr)
        return 2
    if args.epoch < 0:
        print(f"{prog}: --epoch must be 0 or more, not {args.epoch}", file=sys.stderr)
        return 2
    if not args.latency_ms >= 0:
        print(f"{prog}: --latency-ms must be 0 or more, not {args.latency_ms}", file=sys.stderr)
        return 2
    try:
        get_profile(args.profile)
    except KeyError as exc:
        print(f"{prog}: {exc.args[0]}", file=sys.stderr)
        return 2
    try:
        serve_forever(args.profile, seed=args.seed, port=args.port, epoch=args.epoch,
                      latency=args.latency_ms / 1000)
    except OSError as exc:
        print(f"{prog}: cannot listen on 127.0.0.1:{args.port}: {exc.strerror or exc}"
              " (is another server using it? choose one with --port)", file=sys.stderr)
        return 1
    return 0
