"""A sample crawl report: SB-CLASSIFIER on the simulator's `small` profile, judged against the truth.

    .venv/bin/python -m sbcrawl_dev bench report-sample [OUT_DIR]
"""

from __future__ import annotations

import argparse
import os
import tempfile

from airflow_sbcrawl.crawler import CrawlConfig, Crawler, LocalSink
from airflow_sbcrawl.report import write_report
from sbcrawl_dev.sim import SimServer, build_site


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sbcrawl_dev bench report-sample",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", default="benchmarks/results/report-small",
                        help="folder for report.md and its plots")
    out = parser.parse_args(argv).out
    site = build_site("small", seed=0)
    with SimServer(site) as server, tempfile.TemporaryDirectory() as targets:
        os.environ["HTTP_PROXY"] = os.environ["http_proxy"] = server.proxy_url
        crawler = Crawler(CrawlConfig(site.start_url, delay=0, max_requests=3000), LocalSink(targets))
        summary = crawler.run()
        print(write_report(crawler, summary, out, truth=site.kind))
    return 0
