"""CPU and peak memory of `sbcrawl crawl` on one 10 MB page holding 319,000 links (issue 9, item 8).

    .venv/bin/python -m sbcrawl_dev bench big-page [--links 319000] [--max-requests 30]

Serves the page on 127.0.0.1 from this process and runs the CLI crawler as a child under /usr/bin/time -v
(Linux), so the figures are the crawler's own: user + system CPU seconds and maximum resident set size."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sbcrawl_dev bench big-page",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--links", type=int, default=319_000)
    parser.add_argument("--max-requests", type=int, default=30)
    args = parser.parse_args(argv)
    page = ("<html><body>" + "".join(f'<a href="/p/{i}">{i}</a>' for i in range(args.links))
            + "</body></html>").encode()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_: object) -> None:
            pass

        def do_GET(self) -> None:
            if self.path == "/":
                self._send(b'<html><body><a href="/big">all records</a></body></html>')
            elif self.path == "/big":
                self._send(page)
            else:
                self.send_error(404)

        def do_HEAD(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()

        def _send(self, body: bytes) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    with tempfile.TemporaryDirectory() as out:
        cmd = ["/usr/bin/time", "-v", sys.executable, "-m", "airflow_sbcrawl.cli", "crawl",
               f"http://127.0.0.1:{server.server_address[1]}/", "--out", out, "--delay", "0", "--quiet",
               "--no-report", "--max-requests", str(args.max_requests)]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    server.shutdown()
    cpu = sum(float(x) for x in re.findall(r"(?:User|System) time \(seconds\): ([\d.]+)", proc.stderr))
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr).group(1))
    dropped = re.search(r"has (\d+) more links than the (\d+) read per page", proc.stderr)
    print(f"page {len(page) / 1e6:.1f} MB, {args.links:,} links: exit {proc.returncode}, CPU {cpu:.1f} s, "
          f"peak RSS {rss / 1024:.0f} MB" + (f", {int(dropped[1]):,} links dropped" if dropped else ""))
    return 0
