"""``sbcrawl``: the crawler, the simulator, the benchmarks and the table tools without Airflow."""

from __future__ import annotations

import argparse
import json
import logging
import re
import signal
import sys
import time
from pathlib import Path

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?i?b?)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}


def parse_size(text: str) -> int:
    """'500MB' / '2G' / '1024' -> bytes (binary multiples)."""
    match = _SIZE.match(text)
    if not match:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size like 500MB or 2G")
    unit = (match.group(2) or "").lower()[:1]
    return int(float(match.group(1)) * _UNITS[unit])


def _crawl_parser(sub: argparse._SubParsersAction) -> None:
    from airflow_sbcrawl.crawler.config import NEEDS_TRUTH, POLICIES

    p = sub.add_parser("crawl", help="crawl one site for its data files into a local folder")
    p.add_argument("url", help="start URL of the site")
    p.add_argument("--out", required=True, type=Path, help="folder for objects/, manifest.jsonl and state/")
    p.add_argument("--max-requests", type=int, default=10_000, help="budget of GET and HEAD requests")
    p.add_argument("--max-bytes", type=parse_size, default=parse_size("50G"), help="budget of body bytes")
    p.add_argument("--delay", type=float, default=1.0, help="minimum seconds between requests to one host")
    p.add_argument("--policy", choices=[x for x in POLICIES if x not in NEEDS_TRUTH], default="sb-classifier")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--target-type", action="append", dest="target_types", metavar="MIME",
                   help="target MIME type (repeat); default: the 38 types of the paper and a few more")
    p.add_argument("--theta", type=float, default=0.75)
    p.add_argument("--alpha", type=float, default=2 * 2**0.5)
    p.add_argument("--no-robots", action="store_true", help="ignore robots.txt (only for sites you own)")
    p.add_argument("--no-early-stopping", action="store_true")
    p.add_argument("--checkpoint-every", type=int, default=200, metavar="PAGES")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--resume", action="store_true", help="continue the unfinished crawl saved in --out")
    group.add_argument("--fresh", action="store_true", help="discard a saved crawl state (stored targets stay)")
    p.add_argument("--cold", action="store_true",
                   help="ignore the site memory of earlier crawls in --out (by default a crawl of a folder "
                        "holding a finished crawl is incremental: it revisits what it knows first and "
                        "downloads only new or changed files)")
    p.add_argument("--no-report", action="store_true", help="don't write report.md and its plots into --out")
    p.add_argument("--quiet", action="store_true", help="no progress line")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")


def _progress_printer(quiet: bool):
    if quiet:
        return None
    tty = sys.stderr.isatty()
    last = [0.0]

    def show(p) -> None:
        now = time.monotonic()
        if not tty and now - last[0] < 10:
            return
        last[0] = now
        line = (f"targets {p.targets:,} | requests {p.requests:,}/{p.max_requests:,} "
                f"({100 * p.requests / p.max_requests:.1f}% of budget) | pages {p.pages:,} | "
                f"frontier {p.frontier:,} | actions {p.actions:,} | {p.elapsed:.0f}s")
        sys.stderr.write(("\r" + line + "\x1b[K") if tty else line + "\n")
        sys.stderr.flush()

    return show


def cmd_crawl(args: argparse.Namespace) -> int:
    from airflow_sbcrawl.crawler import (
        CheckpointError,
        ConfigError,
        CrawlConfig,
        Crawler,
        LocalSink,
        LocalStateStore,
        SinkError,
        StateExists,
    )
    from airflow_sbcrawl.crawler.memory import SiteMemoryError

    try:
        options = {}
        if args.target_types:
            options["target_mime_types"] = tuple(args.target_types)
        config = CrawlConfig(
            start_url=args.url, max_requests=args.max_requests, max_bytes=args.max_bytes, delay=args.delay,
            policy=args.policy, seed=args.seed, theta=args.theta, alpha=args.alpha,
            respect_robots=not args.no_robots, early_stopping=not args.no_early_stopping,
            checkpoint_every_pages=args.checkpoint_every, **options,
        )
        sink = LocalSink(args.out)
        store = LocalStateStore(args.out / "state")
        memory = LocalStateStore(args.out / "memory")
        (args.out / "tmp").mkdir(exist_ok=True)
        crawler = Crawler(config, sink, store, on_progress=_progress_printer(args.quiet), tmp_dir=str(args.out / "tmp"),
                          memory=memory, warm_start=not args.cold)
    except (ConfigError, SinkError, OSError) as exc:
        print(f"sbcrawl crawl: {exc}", file=sys.stderr)
        return 2

    def on_signal(signum, _frame) -> None:
        crawler.request_stop(f"interrupted by {signal.Signals(signum).name}: state saved, resume with --resume")

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        summary = crawler.run(resume=args.resume, fresh=args.fresh)
    except (StateExists, CheckpointError, SiteMemoryError) as exc:
        print(f"sbcrawl crawl: {exc}", file=sys.stderr)
        print("  use --resume to continue it or --fresh to start over", file=sys.stderr)
        return 2
    except SinkError as exc:
        print(f"sbcrawl crawl: {exc}", file=sys.stderr)
        return 1
    if not args.quiet and sys.stderr.isatty():
        sys.stderr.write("\n")
    if args.json:
        print(json.dumps(summary.to_dict(), indent=2))
    else:
        print(format_summary(summary))
    if not args.no_report:
        from airflow_sbcrawl.report import write_report

        report = write_report(crawler, summary, args.out)
        if not args.json:
            print(f"  report             {report}")
    if summary.start_error and summary.targets == 0:
        print(f"sbcrawl crawl: the start page could not be used: {summary.start_error}", file=sys.stderr)
        return 1
    return 0


def format_summary(s) -> str:
    lines = [
        f"crawl of {s.start_url} ({s.policy}) stopped: {s.stop_reason}",
        f"  targets retrieved  {s.targets:,}",
        f"  requests           {s.requests:,} ({s.head_requests:,} HEAD)",
        f"  body bytes         {s.bytes:,}",
        f"  pages crawled      {s.pages:,}; frontier left {s.frontier:,}; actions {s.actions:,}",
        f"  time               {s.elapsed_s:.1f}s wall, {s.cpu_s:.1f}s CPU",
        f"  stored in          {s.sink}",
    ]
    if s.resumed_from is not None:
        lines.append(f"  resumed from checkpoint {s.resumed_from}")
    if s.warm_from:
        lines.append(f"  incremental, from the site memory of run {s.warm_from}")
    if s.changes:
        lines.append("  datasets           " + ", ".join(f"{k}: {v:,}" for k, v in s.changes.items()))
    if s.outcomes:
        lines.append("  responses          " + ", ".join(f"{k}: {v}" for k, v in sorted(s.outcomes.items())))
    return "\n".join(lines)


def cmd_serve_sim(args: argparse.Namespace) -> int:
    from airflow_sbcrawl.sim import serve_forever

    if args.epoch < 0:
        print(f"sbcrawl serve-sim: --epoch must be 0 or more, not {args.epoch}", file=sys.stderr)
        return 2
    serve_forever(args.profile, seed=args.seed, port=args.port, epoch=args.epoch)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sbcrawl", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true")
    sub = parser.add_subparsers(dest="command", required=True)
    _crawl_parser(sub)
    p = sub.add_parser("serve-sim", help="serve a simulated statistics website on 127.0.0.1")
    p.add_argument("profile", help="tiny, small, deep, portal, large, hostile or random-<seed>")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--port", type=int, default=8900)
    p.add_argument("--epoch", type=int, default=0,
                   help="serve the site as it is this many periods later (new, updated, removed, moved files)")
    p = sub.add_parser("bench", help="benchmarks: crawl policies, recrawls, or table detection")
    p.add_argument("what", choices=["crawl", "tables", "cost", "recrawl"])
    p.add_argument("rest", nargs=argparse.REMAINDER, help="options of that benchmark (see --help there)")
    return parser


def cmd_bench(args: argparse.Namespace) -> int:
    if args.what == "tables":
        from airflow_sbcrawl.tables.bench import main as bench_main
    elif args.what == "crawl":
        from airflow_sbcrawl.bench.crawl import main as bench_main
    elif args.what == "recrawl":
        from airflow_sbcrawl.bench.recrawl import main as bench_main
    else:
        from airflow_sbcrawl.bench.cost import main as bench_main
    return bench_main(args.rest)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    handlers = {"crawl": cmd_crawl, "serve-sim": cmd_serve_sim, "bench": cmd_bench}
    return handlers[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
