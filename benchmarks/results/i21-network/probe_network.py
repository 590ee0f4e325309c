"""Outside probes of issue 21, items 3 and 4, against the code on PYTHONPATH (run once per tree).

retry-after: `sbcrawl crawl` (the CLI, default settings but --delay 0) of a server whose start page links
N files that all answer 429 with a given Retry-After; the server records when each request arrived. Prints
how many 429s were followed by another request to the host within min(Retry-After, 120 s).

handshake: a crawl of a public site (allow_private_start=False, as from Airflow) whose pages link names
resolving to 127.0.0.1 (the resolver is stood in for: no DNS server here); a listening socket counts the
TCP connections it could accept.
"""

from __future__ import annotations

import argparse
import http.server
import itertools
import socket
import subprocess
import sys
import tempfile
import threading
import time


def retry_after(seconds: int, links: int, wait_cap: float) -> None:
    arrivals: list[tuple[float, str, int]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def do_GET(self) -> None:
            if self.path == "/robots.txt":
                body, status, ctype, extra = b"User-agent: *\nAllow: /\n", 200, "text/plain", {}
            elif self.path == "/":
                items = "".join(f'<li><a href="/f{i}.csv">data file {i}</a></li>' for i in range(links))
                body = f"<html><body><ul>{items}</ul></body></html>".encode()
                status, ctype, extra = 200, "text/html", {}
            else:
                body, status, ctype, extra = b"slow down", 429, "text/plain", {"Retry-After": str(seconds)}
            arrivals.append((time.monotonic(), self.path, status))
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            for k, v in extra.items():
                self.send_header(k, v)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        do_HEAD = do_GET  # the classifier's first links are labelled by HEAD requests

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    with tempfile.TemporaryDirectory() as out:
        started = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "airflow_sbcrawl.cli", "crawl", url, "--out", out, "--delay",
                               "0", "--quiet", "--no-report", "--max-requests", "200"], capture_output=True,
                              text=True, timeout=3600)
        elapsed = time.monotonic() - started
    server.shutdown()
    window = min(seconds, wait_cap)
    four29 = [(t, p) for t, p, s in arrivals if s == 429]
    followed = sum(1 for t, _ in four29 if any(t < t2 < t + window for t2, _, _ in arrivals))
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(arrivals) if a[2] == 429]
    print(f"retry-after {seconds}s, {links} links: exit {proc.returncode}, {len(arrivals)} requests, "
          f"{len(four29)} answered 429; 429s followed by a request within {window:g}s: {followed}; "
          f"min gap after a 429: {min(gaps, default=float('nan')):.2f}s; crawl took {elapsed:.1f}s")
    gave_up = [line for line in proc.stderr.splitlines() if "gave up" in line or "more than" in line]
    if gave_up:
        print("  log: " + gave_up[0][:200])


def handshake() -> None:
    from airflow_sbcrawl.crawler import CrawlConfig, Crawler, LocalSink

    port = 0  # the site's port: the refused listener takes the same one (the crawl's scope includes the port)

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def do_GET(self) -> None:
            body = b"User-agent: *\nAllow: /\n" if self.path == "/robots.txt" else (
                f'<a href="http://rebind.public.example:{port}/secret">x</a>'
                f'<a href="http://data.public.example:{port}/a.csv">y</a>').encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain" if self.path == "/robots.txt" else "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    site = http.server.ThreadingHTTPServer(("127.0.0.2", 0), Handler)
    port = site.server_address[1]
    listener = socket.create_server(("127.0.0.1", port))
    listener.setblocking(False)
    threading.Thread(target=site.serve_forever, daemon=True).start()
    real = socket.getaddrinfo
    names = {"public.example": "127.0.0.2", "rebind.public.example": "127.0.0.1",
             "data.public.example": "127.0.0.1"}

    def resolver(host, *args, **kwargs):
        return real(names.get(host, host), *args, **kwargs)

    socket.getaddrinfo = resolver  # the resolver only: connections are real
    # 127.0.0.2 stands in for the public site: the guard is told it is public by allowing nothing else.
    import airflow_sbcrawl.crawler.addresses as addresses

    original = addresses.address_kind
    addresses.address_kind = lambda host: "public" if host == "127.0.0.2" else original(host)
    with tempfile.TemporaryDirectory() as out:
        summary = Crawler(CrawlConfig(f"http://public.example:{site.server_address[1]}/", delay=0, retries=0,
                                      allow_private_start=False), LocalSink(out)).run()
    accepted = 0
    while True:
        try:
            conn, _ = listener.accept()
        except BlockingIOError:
            break
        conn.close()
        accepted += 1
    site.shutdown()
    print(f"handshake: responses {dict(summary.outcomes)}; TCP handshakes to the refused address "
          f"127.0.0.1:{port}: {accepted}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("probe", choices=["retry-after", "handshake"])
    parser.add_argument("--seconds", type=int, default=3600)
    parser.add_argument("--links", type=int, default=14)
    parser.add_argument("--cap", type=float, default=120.0)
    args = parser.parse_args()
    if args.probe == "retry-after":
        retry_after(args.seconds, args.links, args.cap)
    else:
        handshake()
