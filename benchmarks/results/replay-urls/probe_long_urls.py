"""Peak RSS and state/ size of a 45-request crawl of pages linking 60 kB URLs (issue 21 item 2 probe).

Usage: ``python probe_long_urls.py TREE`` (TREE: the checkout whose ``airflow_sbcrawl`` is crawled with)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[3]))  # for the test server only
from tests.test_hostile import HostileServer


def main() -> None:
    tree = sys.argv[1]
    srv = HostileServer()
    srv.links = ["/chain/0", "/long-redirect"]
    out = pathlib.Path(tempfile.mkdtemp())
    env = {k: v for k, v in os.environ.items() if k.lower() not in ("http_proxy", "https_proxy", "all_proxy")}
    env["PYTHONPATH"] = tree
    proc = subprocess.run(["/usr/bin/time", "-f", "MAXRSS_KB %M", sys.executable, "-m", "airflow_sbcrawl.cli",
                           "crawl", srv.url, "--out", str(out), "--delay", "0", "--quiet", "--no-report",
                           "--no-early-stopping", "--max-requests", "45"],
                          env=env, capture_output=True, text=True, check=False)
    rss = [line for line in proc.stderr.splitlines() if line.startswith("MAXRSS_KB")]
    state = sum(f.stat().st_size for f in (out / "state").rglob("*") if f.is_file())
    summary = [line for line in proc.stdout.splitlines() if "responses" in line or "requests" in line]
    print(tree, "exit", proc.returncode, rss, "state bytes", state, summary)
    srv.shutdown()


if __name__ == "__main__":
    main()
