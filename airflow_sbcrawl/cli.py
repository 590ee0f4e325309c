"""``sbcrawl``: the crawler, the table detector and the lake loader without Airflow.

Only what the runtime wheel holds; the simulator, the benchmarks and the demo are ``python -m sbcrawl_dev``
(a source checkout)."""

from __future__ import annotations

import argparse
import json
import logging
import re
import signal
import sys
import time
from pathlib import Path

from airflow_sbcrawl.progress import ProgressLines

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
    from airflow_sbcrawl.crawler.linktext import SCOPES as LINK_TEXT_SCOPES
    from airflow_sbcrawl.crawler.policies.registry import DEFAULT_POLICY, WITHOUT_TRUTH

    p = sub.add_parser("crawl", help="crawl one site for its data files into a local folder", epilog=(
        "exit status: 0 the crawl ended (budget spent, early stopping or every page crawled); 1 the start page "
        "or the output failed; 2 bad options or a state to resume or discard first; 130 stopped by SIGINT "
        "(Ctrl-C) and 143 by SIGTERM, with the state saved: --resume goes on"))
    p.add_argument("url", help="start URL of the site")
    p.add_argument("--out", required=True, type=Path, help="folder for objects/, manifest.jsonl and state/")
    p.add_argument("--max-requests", type=int, default=10_000, help="budget of GET and HEAD requests")
    p.add_argument("--max-bytes", type=parse_size, default=parse_size("50G"), help="budget of body bytes")
    p.add_argument("--delay", type=float, default=1.0,
                   help="seconds between two requests to the same host (which then gets one at a time)")
    p.add_argument("--delay-per-host-name", action="store_true",
                   help="keep the delay per host name (default: per IP address, so two names of one site on "
                        "one server share it)")
    p.add_argument("--concurrency", type=int, default=8,
                   help="requests in flight at once (a host with a delay still gets one at a time)")
    p.add_argument("--policy", choices=WITHOUT_TRUTH, default=DEFAULT_POLICY,
                   help=f"how the next link is chosen (default {DEFAULT_POLICY}; sb-classifier-paper is the paper's "
                        "algorithm unchanged; focused, dfs and random are baselines)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--target-type", action="append", dest="target_types", metavar="MIME",
                   help="target MIME type (repeat); default: the 38 types of the paper and a few more")
    p.add_argument("--target-host", action="append", dest="target_hosts", metavar="HOST", default=[],
                   help="another host (host or host:port, subdomains included) whose files the site's pages link, "
                        "e.g. a data portal or a CDN: its files are fetched, its pages never crawled (repeatable)")
    p.add_argument("--theta", type=float, default=0.75)
    p.add_argument("--alpha", type=float, default=2 * 2**0.5)
    p.add_argument("--link-context", metavar="PARTS",
                   help="comma-separated parts of a link whose words the default policy learns from to order "
                        "links (anchor, title, row, url; default all of them; 'none' for none)")
    p.add_argument("--link-text-scope", choices=LINK_TEXT_SCOPES, default=None,
                   help="where the link words order links: within the URL template the bandits chose, or "
                        "also across the templates of an action none of which has paid yet")
    p.add_argument("--no-robots", action="store_true", help="ignore robots.txt (only for sites you own)")
    p.add_argument("--no-early-stopping", action="store_true")
    p.add_argument("--no-sitemaps", action="store_true",
                   help="do not read the site's XML sitemaps (robots.txt Sitemap: lines, /sitemap.xml)")
    p.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS",
                   help="deadline of one response (connect, headers and body; extended while a body arrives "
                        "at a useful rate)")
    p.add_argument("--max-crawl-delay", type=float, default=60.0, metavar="SECONDS",
                   help="cap on a robots.txt Crawl-delay")
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
        if args.target_hosts:
            options["target_hosts"] = tuple(args.target_hosts)
        if args.link_context is not None:
            parts = [] if args.link_context == "none" else args.link_context.split(",")
            options["link_context"] = tuple(part.strip() for part in parts if part.strip())
        if args.link_text_scope is not None:
            options["link_text_scope"] = args.link_text_scope
        config = CrawlConfig(
            start_url=args.url, max_requests=args.max_requests, max_bytes=args.max_bytes, delay=args.delay,
            concurrency=args.concurrency, polite_per_address=not args.delay_per_host_name,
            response_timeout=args.timeout, max_crawl_delay=args.max_crawl_delay,
            policy=args.policy, seed=args.seed, theta=args.theta, alpha=args.alpha,
            respect_robots=not args.no_robots, early_stopping=not args.no_early_stopping,
            sitemaps=not args.no_sitemaps,
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

    stopped_by: list[int] = []

    def on_signal(signum, _frame) -> None:
        stopped_by.append(signum)
        crawler.request_stop(f"interrupted by {signal.Signals(signum).name}: state saved, resume with --resume")

    # Only while the crawl runs: main() called in-process (tests, scripts) must get its own handlers back.
    previous = {signum: signal.signal(signum, on_signal) for signum in (signal.SIGTERM, signal.SIGINT)}
    if args.resume and not store.checkpoints() and not store.journal_lines():
        print(f"sbcrawl crawl: --resume: no crawl state in {store.describe()}: starting a new crawl",
              file=sys.stderr)
    try:
        summary = crawler.run(resume=args.resume, fresh=args.fresh)
    except (StateExists, CheckpointError, SiteMemoryError) as exc:
        print(f"sbcrawl crawl: {exc}", file=sys.stderr)
        if isinstance(exc, StateExists):
            print("  use --resume to continue it or --fresh to start over", file=sys.stderr)
        else:  # another site's crawl (or an unusable one) is in --out: resuming it cannot work
            print(f"  use another --out for {config.start_url}, or --fresh to discard the crawl state and site "
                  f"memory in {args.out} (the files and manifest rows stored there stay)", file=sys.stderr)
        return 2
    except SinkError as exc:
        print(f"sbcrawl crawl: {exc}", file=sys.stderr)
        return 1
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
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
    if stopped_by:  # unfinished: a script must not take it for a finished crawl (128 + n, as a shell reports)
        return 128 + stopped_by[0]
    if summary.start_error and summary.targets == 0:
        print(f"sbcrawl crawl: the start page could not be used: {summary.start_error}", file=sys.stderr)
        return 1
    return 0


def format_summary(s) -> str:
    # The start page's error is printed once, on its own line after the summary, not here again.
    reason = "the start page could not be used" if s.start_error and s.start_error in s.stop_reason else s.stop_reason
    lines = [
        f"crawl of {s.start_url} ({s.policy}) stopped: {reason}",
        f"  targets retrieved  {s.targets:,}",
        f"  requests           {s.requests:,} ({s.head_requests:,} HEAD)",
        f"  body bytes         {s.bytes:,}",
        f"  pages crawled      {s.pages:,}; frontier left {s.frontier:,}"
        + (" (kept: the next run goes on from there)" if s.frontier and "budget" in s.stop_reason else "")
        + f"; actions {s.actions:,}",
        f"  time               {s.elapsed_s:.1f}s wall, {s.cpu_s:.1f}s CPU",
        f"  stored in          {s.sink}",
    ]
    if s.resumed_from is not None:
        lines.append(f"  resumed from checkpoint {s.resumed_from}")
    if s.warm_from:
        lines.append(f"  incremental, from the site memory of run {s.warm_from}")
    if s.changes:
        lines.append("  datasets           " + ", ".join(f"{k}: {v:,}" for k, v in s.changes.items()))
    if s.checks:
        c = s.checks
        lines.append(f"  known datasets     verified: {c['verified']:,}, vouched: {c['vouched']:,}, estimated: "
                     f"{c['estimated']:,} ({c['requests']:,} requests of revisits and checks; the site's change "
                     f"rate {100 * c.get('change_rate', 0.5):.1f} %)")
    if s.outcomes:
        lines.append("  responses          " + ", ".join(f"{k}: {v}" for k, v in sorted(s.outcomes.items())))
    return "\n".join(lines)


# -- table tools: the ingestion pipeline without Airflow ------------------------------------------------------
def _tables_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tables", help="find statistics tables in files (Parquet + index, as the Airflow operator)")
    tsub = p.add_subparsers(dest="tables_command", required=True)
    d = tsub.add_parser("detect", help="detect the tables in files, folders or a folder made by 'sbcrawl crawl'")
    d.add_argument("paths", nargs="+", type=Path, metavar="PATH",
                   help="a file, a folder (every file in it, recursively) or an 'sbcrawl crawl --out' folder "
                        "(its manifest gives each object's URL and MIME type)")
    d.add_argument("--out", required=True, type=Path, help="new or empty folder for tables/*.parquet, "
                                                           "tables.jsonl (the index) and errors.jsonl")
    d.add_argument("--json", action="store_true", help="print the summary as JSON")


def _lake_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("lake", help="load detected tables into the Iceberg lake")
    lsub = p.add_subparsers(dest="lake_command", required=True)
    ld = lsub.add_parser("load", help="load a 'sbcrawl tables detect' folder into an Iceberg REST catalog")
    ld.add_argument("dir", type=Path, help="folder holding tables.jsonl and tables/")
    ld.add_argument("--catalog", required=True, metavar="JSON|FILE",
                    help="the pyiceberg catalog properties (as the sbcrawl_iceberg connection's extra): a JSON "
                         "object, or a file holding one; 'namespace' in it sets the namespace")
    ld.add_argument("--namespace", help="Iceberg namespace (default: the catalog's 'namespace', else sbcrawl)")
    ld.add_argument("--site", help="the site the tables come from (default: the host of their source URLs)")
    ld.add_argument("--crawl-run", default=None, help="crawl run id recorded with the tables")
    ld.add_argument("--json", action="store_true", help="print the result as JSON")


def _detect_inputs(paths: list[Path]) -> list:
    """InputFiles for the given paths; a crawl folder's objects carry their manifest's URL and MIME type."""
    from airflow_sbcrawl.tables import InputFile

    inputs = []
    for path in paths:
        if not path.exists():
            raise ValueError(f"{path}: no such file or folder")
        manifest = path / "manifest.jsonl"
        if path.is_dir() and manifest.is_file() and (path / "objects").is_dir():
            rows = _manifest_rows(manifest)
            for row in {r["sha256"]: r for r in reversed(rows)}.values():  # first row of each file wins
                obj = path / "objects" / row["sha256"]
                if obj.is_file():
                    text = {k: v if isinstance(v := row.get(k), str) else "" for k in ("mime", "url", "run_id",
                                                                                         "filename")}
                    inputs.append(InputFile(obj, mime=text["mime"] or None, source_url=text["url"],
                                            crawl_run=text["run_id"], name=text["filename"]))
        elif path.is_dir():
            inputs.extend(InputFile(f, source_url=str(f)) for f in sorted(path.rglob("*")) if f.is_file())
        else:
            inputs.append(InputFile(path, source_url=str(path)))
    return inputs


_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def _stderr_line(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _manifest_rows(manifest: Path) -> list[dict]:
    """The rows of a crawl folder's manifest that name a stored object; a line that is not such a row (not
    JSON, not an object, no sha256) is skipped with one warning line naming it, as the crawl's own rows
    are never like that and a hand-edited manifest must not stop the other files."""
    rows = []
    for number, line in enumerate(manifest.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            problem = f"not JSON ({exc.msg})"
        else:
            if not isinstance(row, dict):
                problem = f"a JSON {type(row).__name__}, not an object"
            elif not isinstance(row.get("sha256"), str) or not _SHA256.match(row["sha256"]):
                problem = "no sha256 of a stored object"
            else:
                rows.append(row)
                continue
        print(f"sbcrawl tables detect: {manifest} line {number} skipped: {problem}", file=sys.stderr)
    return rows


def cmd_tables(args: argparse.Namespace) -> int:
    from airflow_sbcrawl.tables import detect_to_dir
    from airflow_sbcrawl.tables.output import INDEX_NAME

    out: Path = args.out
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        print(f"sbcrawl tables detect: --out {out} is not an empty folder (an index there would be appended to)",
              file=sys.stderr)
        return 2
    try:
        inputs = _detect_inputs(args.paths)
    except (ValueError, OSError, KeyError) as exc:
        print(f"sbcrawl tables detect: {exc}", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    total = len(inputs)
    with ProgressLines("sbcrawl tables detect", _stderr_line) as progress:
        progress.status = f"0/{total:,} files"

        def on_file(so_far: dict) -> None:
            progress.status = (f"{so_far['files']:,}/{total:,} files, {so_far['tables']:,} tables in "
                               f"{so_far['files_with_tables']:,} of them")

        summary = detect_to_dir(inputs, out, on_file=on_file)
    summary["index"] = str(out / INDEX_NAME)
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(f"{summary['files']} files: {summary['tables']} tables ({summary['observations']:,} observations) in "
              f"{summary['files_with_tables']} files, {summary['errors']} unreadable parts")
        print(f"  index  {summary['index']}")
    return 0


def _catalog_properties(text: str) -> dict:
    source = Path(text)
    try:
        raw = source.read_text(encoding="utf-8") if not text.lstrip().startswith("{") and source.is_file() else text
        props = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"--catalog is neither a JSON object nor a file holding one ({exc.msg})") from None
    if not isinstance(props, dict):
        raise ValueError("--catalog must be a JSON object of pyiceberg catalog properties")
    return props


def _common_site(hosts: set[str]) -> str:
    """The site of crawled tables: the domain their hosts share (``www.stats.example`` and
    ``data.stats.example`` -> ``stats.example``), as a crawl's scope takes in subdomains."""
    labels = [h.removeprefix("www.").split(".") for h in hosts]
    if not labels or not all(all(parts) for parts in labels):
        raise ValueError("the tables come from local files, not crawled URLs: give --site")
    common: list[str] = []
    for group in zip(*(reversed(parts) for parts in labels), strict=False):
        if len(set(group)) > 1:
            break
        common.insert(0, group[0])
    if len(common) < 2:
        raise ValueError(f"the tables come from unrelated sites ({', '.join(sorted(hosts))}): give --site")
    return ".".join(common)


def cmd_lake(args: argparse.Namespace) -> int:
    from urllib.parse import urlsplit

    from airflow_sbcrawl.lake import CatalogConfig, LakeError, load_tables
    from airflow_sbcrawl.lake.catalog import DEFAULT_NAMESPACE
    from airflow_sbcrawl.tables import read_tables
    from airflow_sbcrawl.tables.output import INDEX_NAME

    index = args.dir / INDEX_NAME
    if not index.is_file():
        print(f"sbcrawl lake load: {index} not found: give a folder made by 'sbcrawl tables detect'", file=sys.stderr)
        return 2
    with ProgressLines("sbcrawl lake load", _stderr_line) as progress:
        progress.status = f"reading {index}"
        try:  # bad input (exit 2) is told apart from a catalog that fails (exit 1)
            props = _catalog_properties(args.catalog)
            namespace = args.namespace or props.pop("namespace", None) or DEFAULT_NAMESPACE
            props.pop("namespace", None)
            config = CatalogConfig.from_properties(props, namespace=namespace)
            tables = read_tables(index)
            site = args.site or _common_site({urlsplit(t.provenance.source_url).hostname or "" for t in tables})
        except (ValueError, OSError, LakeError) as exc:
            progress.status = "refused"
            print(f"sbcrawl lake load: {exc}", file=sys.stderr)
            return 2

        def on_step(text: str) -> None:
            progress.status = text

        try:
            result = load_tables(config, tables, site=site, crawl_run=args.crawl_run, on_step=on_step)
        except LakeError as exc:
            progress.status = "failed"
            print(f"sbcrawl lake load: {exc}", file=sys.stderr)
            return 1
        progress.status = f"{result.tables:,} tables loaded"
    if args.json:
        print(json.dumps({**result.as_dict(), "namespace": namespace}, indent=2))
    else:
        print(f"loaded {result.tables} tables and {result.observations:,} observations of {result.sources} source "
              f"files into {namespace} (site {site}; replaced {result.replaced_tables} tables, "
              f"{result.replaced_observations:,} observations of earlier loads)")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sbcrawl", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true")
    sub = parser.add_subparsers(dest="command", required=True)
    _crawl_parser(sub)
    _tables_parser(sub)
    _lake_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    handlers = {"crawl": cmd_crawl, "tables": cmd_tables, "lake": cmd_lake}
    return handlers[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
