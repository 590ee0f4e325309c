"""Outside probe of issue 21, item 5, against the code on PYTHONPATH (run once per tree).

A crawl of a simulated site (through its proxy) into a real SeaweedFS S3 (sink and state store, as the
Airflow operator uses them) through a TCP relay that is cut three times mid-crawl and restored once the
crawl has knocked on it. When a try fails, the relay is restored and the crawl resumed (what an Airflow
retry does), up to 10 tries. Prints the target downloads, the distinct targets, the manifest rows, and the
objects in S3 without a row.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit


class _CuttableRelay:
    """A TCP relay in front of S3 that can be cut (open connections shut, new ones turned away)."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.up = True
        self.turned_away = threading.Event()
        self._conns: list[socket.socket] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if not self.up:
                client.close()
                self.turned_away.set()
                continue
            upstream = socket.create_connection(self.target)
            self._conns += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                dst.sendall(data)
        for s in (src, dst):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        self.up = False
        for conn in self._conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        self._conns.clear()

    def close(self) -> None:
        self.cut()
        self._listener.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--profile", default="small")
    parser.add_argument("--max-requests", type=int, default=600)
    args = parser.parse_args()

    from airflow_sbcrawl.crawler import CrawlConfig, Crawler
    from airflow_sbcrawl.hooks.crawl import SBCrawlHook
    from airflow_sbcrawl.hooks.layout import S3CrawlLayout
    from airflow_sbcrawl.hooks.stores import S3Sink, S3StateStore
    from sbcrawl_dev.infra.seaweedfs import SeaweedFS
    from sbcrawl_dev.sim import SimServer, build_site

    site = build_site(args.profile, 0)
    srv = SimServer(site).start()
    for name in ("HTTP_PROXY", "http_proxy"):
        os.environ[name] = srv.proxy_url
    os.environ["NO_PROXY"] = os.environ["no_proxy"] = "127.0.0.1"
    with tempfile.TemporaryDirectory() as tmp:
        weed = SeaweedFS(Path(tmp) / "sw")
        weed.start()
        try:
            client = weed.boto3_client()
            client.create_bucket(Bucket="probe")
            endpoint = urlsplit(weed.s3_endpoint)
            relay = _CuttableRelay((endpoint.hostname, endpoint.port))
            conn = json.loads(weed.airflow_conn_json())
            conn["extra"].update(endpoint_url=f"http://127.0.0.1:{relay.port}",
                                 config_kwargs={"retries": {"total_max_attempts": 1}, "connect_timeout": 2,
                                                "read_timeout": 5})
            os.environ["AIRFLOW_CONN_SBCRAWL_PROBE"] = json.dumps(conn)
            hook = SBCrawlHook.for_connection("sbcrawl_probe")
            layout = S3CrawlLayout.for_start_url("probe", "crawls", site.start_url)
            config = CrawlConfig(site.start_url, delay=0.0, max_requests=args.max_requests, early_stopping=False,
                                 checkpoint_every_pages=20)
            cuts: list[int] = []

            def cut_three_times() -> None:
                for share in (0.25, 0.5, 0.75):
                    while len(srv.log) < share * args.max_requests:
                        time.sleep(0.005)
                    relay.turned_away.clear()
                    relay.cut()
                    cuts.append(len(srv.log))
                    relay.turned_away.wait(60)
                    time.sleep(1.0)  # an outage of a second or more, not a blip
                    relay.up = True

            threading.Thread(target=cut_three_times, daemon=True).start()
            tries = 0
            summary = None
            while tries < 10:
                tries += 1
                sink = S3Sink(hook, layout, "run-1")
                store = S3StateStore(hook, "probe", "state/probe/")
                try:
                    summary = Crawler(config, sink, store, run_id="run-1").run(resume=True)
                    break
                except Exception as exc:  # what fails an Airflow try
                    print(f"try {tries} failed: {type(exc).__name__}: {str(exc)[:120]}")
                    while not relay.up:
                        time.sleep(0.05)
            rows = S3Sink(hook, layout, "run-1").read_rows()
            pages = client.get_paginator("list_objects_v2").paginate(Bucket="probe", Prefix=layout.objects_prefix())
            objects = {o["Key"].rsplit("/", 1)[-1] for page in pages for o in page.get("Contents", [])}
            relay.close()
        finally:
            weed.stop()
    srv.stop()
    targets = set(site.targets)
    downloads = [e.url for e in srv.log if e.method == "GET" and e.url in targets]
    rowed = {r["sha256"] for r in rows}
    print(f"profile {args.profile}, budget {args.max_requests}: cuts after {cuts} requests, {tries} tries, "
          f"stop: {summary.stop_reason if summary else 'never finished'}")
    print(f"target downloads {len(downloads)} for {len(set(downloads))} distinct files "
          f"({len(downloads) - len(set(downloads))} repeated); manifest rows {len(rows)}; objects in S3 "
          f"{len(objects)}, without a row {len(objects - rowed)}")


if __name__ == "__main__":
    main()
