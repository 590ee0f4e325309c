"""``python -m sbcrawl_dev``: the simulator, the benchmarks, the demo and the local deployments.

Each command is a module's ``main(argv)``; the tables below are the one place that names them. The runtime
commands (crawl, tables, lake) are ``sbcrawl``'s, which never imports this package.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

PROG = "python -m sbcrawl_dev"

#: command -> (module whose ``main(argv)`` runs it, what it does)
COMMANDS: dict[str, tuple[str, str]] = {
    "serve-sim": ("sbcrawl_dev.sim.server", "serve a simulated statistics website on 127.0.0.1"),
    "serve-lake": ("sbcrawl_dev.infra.serve_lake", "a local S3 and Iceberg catalog (SeaweedFS) for lake load, DAGs"),
    "bench": ("", "run a benchmark (see 'bench --help')"),
    "demo": ("sbcrawl_dev.demo", "the README's main job: a simulated site crawled with Airflow into S3 and Iceberg"),
    "multiworker": ("sbcrawl_dev.infra.multiworker",
                    "Airflow's CeleryExecutor on this machine, a worker killed mid-crawl"),
}

#: benchmark -> (module whose ``main(argv)`` runs it, what it measures)
BENCHES: dict[str, tuple[str, str]] = {
    "crawl": ("sbcrawl_dev.bench.crawl_policies", "crawl policies compared on simulated sites (paper Tables 2-4)"),
    "harness": ("sbcrawl_dev.bench.harness", "the CLI crawler scored by the shared evaluation harness"),
    "replay": ("sbcrawl_dev.bench.replay", "the CLI crawler on real websites replayed offline, scored by the harness"),
    "replay-extract": ("sbcrawl_dev.bench.replay_sites",
                       "extract replayed real sites (the harness's and the project's) from git mirrors"),
    "request-order": ("sbcrawl_dev.bench.request_order",
                      "the requests deterministic crawls send, in order: two trees compared after a refactoring"),
    "cost": ("sbcrawl_dev.bench.cost", "what the engine costs at scale: page path, frontier, long crawls"),
    "recrawl": ("sbcrawl_dev.bench.warm_vs_cold", "a warm (incremental) crawl against a cold one, a site changed"),
    "progress": ("sbcrawl_dev.bench.budgeted_runs",
                 "successive budgeted crawls of a site against one long one; an unchanged site's second run"),
    "stops": ("sbcrawl_dev.bench.stops", "how repeated crawls of one simulated site end: requests and stop reasons"),
    "shared-budget": ("sbcrawl_dev.bench.bandit_vs_equal",
                      "one request budget over 4 sites, bandit against equal shares"),
    "throughput": ("sbcrawl_dev.bench.throughput", "requests per second and CPU per request, against Scrapy"),
    "big-page": ("sbcrawl_dev.bench.big_page", "CPU and peak memory of a crawl of one 10 MB page of 319k links"),
    "html-parsers": ("sbcrawl_dev.bench.html_parsers", "lxml against beautifulsoup4 on the simulator's pages"),
    "report-sample": ("sbcrawl_dev.bench.report_sample", "a sample crawl report (Markdown + plots)"),
    "tables": ("sbcrawl_dev.bench.tables_detection", "table detection: line classes, tables, real and hostile files"),
    "tables-pdf": ("sbcrawl_dev.bench.tables_pdf", "PDF reader speed on a generated statistics PDF"),
    "tables-corpora": ("sbcrawl_dev.bench.tables_corpora",
                       "annotated sheets for table regions (SAUS, FUSTE, real files) fetched into a cache"),
    "tables-observations": ("sbcrawl_dev.bench.tables_observations",
                            "keyed observations and numbers true to the text, on real statistics files"),
}


def _listing(title: str, table: dict[str, tuple[str, str]]) -> str:
    width = max(map(len, table)) + 2
    return f"{title}:\n" + "\n".join(f"  {name:<{width}}{what}" for name, (_, what) in table.items())


def _parser(prog: str, description: str, title: str, table: dict[str, tuple[str, str]]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description=description, epilog=_listing(title, table),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=table, metavar=title.rstrip("s"))
    # Everything after the name is the command's own (its --help included).
    parser.add_argument("args", nargs=argparse.REMAINDER, help="its options (see its --help)")
    return parser


def _run(module: str, argv: list[str]) -> int:
    return importlib.import_module(module).main(argv) or 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run one development command: ``main(["bench", "crawl", "--profiles", "tiny"])``."""
    parser = _parser(PROG, __doc__.split("\n\n")[0], "commands", COMMANDS)
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(sys.argv[1:] if argv is None else list(argv))
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.command != "bench":
        return _run(COMMANDS[args.command][0], args.args)
    bench = _parser(f"{PROG} bench", "Benchmarks: each prints its figures (some also write them: --out).",
                    "benchmarks", BENCHES).parse_args(args.args)
    return _run(BENCHES[bench.command][0], bench.args)


if __name__ == "__main__":
    sys.exit(main())
