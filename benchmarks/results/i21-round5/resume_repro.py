"""An uninterrupted crawl of the tiny simulated site beside one that crashes after N pages and resumes, one
request at a time with the operator retry test's settings (issue 21, round 5).

    PYTHONPATH=<tree> python resume_repro.py SEED [CRASH_AT]

Prints one JSON line: pages, targets and requests of each, the resumed crawl's stop reason and checkpoint,
the URLs only one of them stored; the early-stop state of each on stderr."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from airflow_sbcrawl.crawler import CrawlConfig, Crawler, LocalSink, LocalStateStore
from sbcrawl_dev.sim.server import SimServer
from sbcrawl_dev.sim.site import build_site

TINY = {"delay": 0, "checkpoint_every_pages": 25, "es_window": 100, "es_patience": 3, "es_decay": 0.5}


class Crash(Exception):
    pass


def crawl(site, out: Path, seed: int, crash_at: int | None = None):
    config = CrawlConfig(start_url=site.start_url, max_requests=5000, concurrency=1, seed=seed, **TINY)

    def progress(p) -> None:
        if crash_at is not None and p.pages >= crash_at:
            raise Crash(p.pages)

    crawler = Crawler(config, LocalSink(out), LocalStateStore(out / "state"), on_progress=progress)
    try:
        summary = crawler.run(resume=True)
    except Crash as exc:
        return ["crash", exc.args[0]]
    print(out.name, crawler.scheduler.stopper.state(), file=sys.stderr)
    return summary


def stored(out: Path) -> set[str]:
    return {json.loads(line)["url"] for line in (out / "manifest.jsonl").read_text().splitlines()}


def main() -> None:
    seed = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    crash_at = int(sys.argv[2]) if len(sys.argv) > 2 else 80
    site = build_site("tiny", 0)
    server = SimServer(site).start()
    os.environ["HTTP_PROXY"] = os.environ["http_proxy"] = server.proxy_url
    base = Path(tempfile.mkdtemp())
    try:
        clean = crawl(site, base / "clean", seed)
        first_try = crawl(site, base / "crashy", seed, crash_at)
        resumed = crawl(site, base / "crashy", seed)
        a, b = stored(base / "clean"), stored(base / "crashy")
        print(json.dumps({
            "seed": seed, "clean": [clean.pages, clean.targets, clean.requests], "first_try": first_try,
            "resumed": [resumed.pages, resumed.targets, resumed.requests], "resumed_from": resumed.resumed_from,
            "resumed_stop": resumed.stop_reason, "only_clean": sorted(a - b), "only_resumed": sorted(b - a)}))
    finally:
        server.stop()
        shutil.rmtree(base)


if __name__ == "__main__":
    main()
