"""A sample crawl report: SB-CLASSIFIER on the simulator's `small` profile, judged against the truth.

    .venv/bin/python benchmarks/report_sample.py [OUT_DIR]
"""

from __future__ import annotations

import os
import sys
import tempfile

from airflow_sbcrawl.crawler import CrawlConfig, Crawler, LocalSink
from airflow_sbcrawl.report import write_report
from airflow_sbcrawl.sim import SimServer, build_site


def main() -> None:
    out = sys.argv[1] if len(sys.argv) > 1 else "benchmarks/results/report-small"
    site = build_site("small", seed=0)
    with SimServer(site) as server, tempfile.TemporaryDirectory() as targets:
        os.environ["HTTP_PROXY"] = os.environ["http_proxy"] = server.proxy_url
        crawler = Crawler(CrawlConfig(site.start_url, delay=0, max_requests=3000), LocalSink(targets))
        summary = crawler.run()
        print(write_report(crawler, summary, out, truth=site.kind))


if __name__ == "__main__":
    main()
