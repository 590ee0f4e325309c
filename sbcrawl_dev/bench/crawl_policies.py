"""``python -m sbcrawl_dev bench crawl``: the paper's comparison of crawlers (§4.5 Tables 2-3, §4.6 Table 4)
on simulated sites.

For each profile × policy × repeat, a full crawl runs against a fresh simulator server (delay 0, robots.txt
obeyed, no early stopping, at most ``--cap`` × the site's URL count requests, stopped once every target is
in), and the measures are computed from that server's own request log:

* Table 2: requests (GET + HEAD, robots.txt included) made until 90 % of the site's targets were
  retrieved, as % of the site's URLs (its reachable html, target, redirect and media URLs).
* Table 3: non-target volume (body bytes of everything but first target downloads) received until 90 % of
  the site's total target volume was, as % of the site's non-target page volume (html, redirects, errors).

``+inf`` means a run never got there within the cap. Deterministic policies (BFS, DFS, FOCUSED, TP-OFF)
run once per profile; the others once per repeat, each repeat with its own crawl seed on the same site.
"""

from __future__ import annotations

import argparse
import csv
import math
import multiprocessing
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from sbcrawl_dev.bench.metrics import (
    Harvest,
    format_cell,
    harvest,
    mean_std,
    table2_percent,
    table3_percent,
)
from sbcrawl_dev.bench.plots import harvest_figure
from sbcrawl_dev.bench.runner import DETERMINISTIC, OMNISCIENT, CrawlRun, CrawlSpec, run_crawl
from sbcrawl_dev.bench.truth import SiteTruth, site_truth
from sbcrawl_dev.sim.site import build_site

DEFAULT_PROFILES = ("tiny", "small")
DEFAULT_POLICIES = ("sb-classifier", "sb-classifier-paper", "sb-oracle", "focused", "tp-off", "bfs", "dfs", "random",
                    OMNISCIENT)
# Table 4's grid; one parameter varies while the others keep the paper's defaults.
SWEEP: tuple[tuple[str, str, float], ...] = (
    ("alpha", "α=0.1", 0.1), ("alpha", "α=2√2", 2 * math.sqrt(2)), ("alpha", "α=30", 30.0),
    ("ngram", "n=1", 1), ("ngram", "n=2", 2), ("ngram", "n=3", 3),
    ("theta", "θ=0.55", 0.55), ("theta", "θ=0.75", 0.75), ("theta", "θ=0.95", 0.95),
)
_DEFAULTS = {"alpha": 2 * math.sqrt(2), "ngram": 2, "theta": 0.75}
DEFAULT_LABEL = "defaults"


@dataclass
class RunResult:
    profile: str
    name: str
    policy: str
    repeat: int
    crawl_seed: int
    table2: float
    table3: float
    requests: int
    targets_found: int
    stop_reason: str
    cpu_s: float
    wall_s: float


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m sbcrawl_dev bench crawl", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--profiles", default=",".join(DEFAULT_PROFILES),
                   help="comma-separated simulator profiles (tiny small deep portal large hostile random-<seed>)")
    p.add_argument("--policies", default=None,
                   help=f"comma-separated policies; default {','.join(DEFAULT_POLICIES)} "
                        "(with --sweep: the policy swept, default sb-oracle as in Table 4)")
    p.add_argument("--repeats", type=int, default=2, help="runs of each non-deterministic policy")
    p.add_argument("--seed", type=int, default=0, help="site seed; repeat r crawls with seed S + r")
    p.add_argument("--cap", type=float, default=3.0, help="request cap, as a multiple of the site's URL count")
    p.add_argument("--jobs", type=int, default=2, help="crawls run in parallel (one process each)")
    p.add_argument("--sweep", action="store_true", help="Table 4: vary alpha, n and theta one at a time")
    p.add_argument("--out", type=Path, default=Path("bench-crawl"), help="folder for CSV, PNG and tables")
    args = p.parse_args(list(argv))
    args.profiles = [x for x in args.profiles.split(",") if x]
    default = ("sb-oracle",) if args.sweep else DEFAULT_POLICIES
    args.policies = [x for x in args.policies.split(",") if x] if args.policies else list(default)
    if args.repeats < 1 or args.jobs < 1 or args.cap <= 0:
        p.error("--repeats and --jobs must be >= 1, --cap > 0")
    return args


def plan(args: argparse.Namespace, truths: dict[str, SiteTruth]) -> list[CrawlSpec]:
    specs: list[CrawlSpec] = []
    variants: list[tuple[str, dict[str, Any]]] = [("", {})]
    if args.sweep:
        # The three default-valued rows of Table 4 are one and the same crawl: run it once.
        variants = [(DEFAULT_LABEL, {})] + [(label, {key: value}) for key, label, value in SWEEP
                                            if value != _DEFAULTS[key]]
    for profile in args.profiles:
        cap = max(100, math.ceil(args.cap * truths[profile].url_count))
        for policy in args.policies:
            for label, overrides in variants:
                runs = 1 if policy in DETERMINISTIC else args.repeats
                name = f"{policy} {label}".strip() if args.sweep else policy
                for r in range(runs):
                    specs.append(CrawlSpec(profile, args.seed, policy, r, args.seed + r, cap, overrides, name))
    # Biggest sites first keeps both workers busy to the end.
    specs.sort(key=lambda s: -truths[s.profile].url_count)
    return specs


def _run(spec: CrawlSpec, truth: SiteTruth) -> tuple[CrawlRun, float]:
    began = time.monotonic()
    run = run_crawl(spec, truth)
    return run, time.monotonic() - began


def execute(specs: list[CrawlSpec], truths: dict[str, SiteTruth], jobs: int) -> list[tuple[CrawlRun, float]]:
    if jobs == 1 or len(specs) == 1:
        return [_run(s, truths[s.profile]) for s in specs]
    # spawn: a forked child would inherit the parent's locks mid-state; crawls are long enough to amortise it
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
        futures = [pool.submit(_run, s, truths[s.profile]) for s in specs]
        return [f.result() for f in futures]


def evaluate(run: CrawlRun, wall: float, truth: SiteTruth) -> tuple[RunResult, Harvest]:
    h = harvest(run.log, truth.target_sizes)
    spec = run.spec
    result = RunResult(
        profile=spec.profile, name=spec.name, policy=spec.policy, repeat=spec.repeat, crawl_seed=spec.crawl_seed,
        table2=table2_percent(h, truth.targets, truth.url_count),
        table3=table3_percent(h, truth.target_volume, truth.non_target_volume),
        requests=h.requests, targets_found=int(h.targets[-1]) if h.requests else 0,
        stop_reason=str(run.summary.get("stop_reason", "")), cpu_s=float(run.summary.get("cpu_s", 0.0)),
        wall_s=round(wall, 2),
    )
    return result, h


def text_table(title: str, rows: list[str], cols: list[str], cells: dict[tuple[str, str], str]) -> str:
    width0 = max([len(title), *map(len, rows)]) + 2
    widths = [max(len(c), *(len(cells.get((r, c), "")) for r in rows)) + 2 for c in cols]
    lines = [title.ljust(width0) + "".join(c.rjust(w) for c, w in zip(cols, widths, strict=True))]
    for r in rows:
        lines.append(r.ljust(width0) + "".join(cells.get((r, c), "NA").rjust(w)
                                                for c, w in zip(cols, widths, strict=True)))
    return "\n".join(lines)


def summarise(results: list[RunResult], truths: dict[str, SiteTruth], names: list[str],
              profiles: list[str]) -> tuple[str, list[dict[str, Any]]]:
    grouped: dict[tuple[str, str], list[RunResult]] = defaultdict(list)
    for r in results:
        grouped[(r.name, r.profile)].append(r)
    t2: dict[tuple[str, str], str] = {}
    t3: dict[tuple[str, str], str] = {}
    rows: list[dict[str, Any]] = []
    for (name, profile), runs in grouped.items():
        m2, s2 = mean_std(r.table2 for r in runs)
        m3, s3 = mean_std(r.table3 for r in runs)
        t2[(name, profile)] = format_cell(m2, s2)
        t3[(name, profile)] = format_cell(m3, s3)
        rows.append({"profile": profile, "policy": name, "runs": len(runs), "table2_mean": m2, "table2_std": s2,
                     "table3_mean": m3, "table3_std": s3,
                     "url_count": truths[profile].url_count, "targets": truths[profile].targets})
    heads = [f"{p} ({truths[p].url_count:,} URLs, {truths[p].targets:,} targets)" for p in profiles]
    t2 = {(n, heads[profiles.index(p)]): v for (n, p), v in t2.items()}
    t3 = {(n, heads[profiles.index(p)]): v for (n, p), v in t3.items()}
    text = "\n\n".join([
        "Table 2 equivalent: requests to retrieve 90 % of the targets, % of the site's URLs (mean ± std)",
        text_table("policy", names, heads, t2),
        "Table 3 equivalent: non-target volume before 90 % of the target volume, % of the site's non-target "
        "page volume (mean ± std)",
        text_table("policy", names, heads, t3),
    ])
    return text, rows


def sweep_table(results: list[RunResult], policies: list[str], profiles: list[str]) -> str:
    grouped: dict[tuple[str, str], list[RunResult]] = defaultdict(list)
    for r in results:
        grouped[(r.name, r.profile)].append(r)
    cells = {}
    rows = []
    for policy in policies:
        for key, label, value in SWEEP:
            row = f"{policy} {label}"
            rows.append(row)
            run_name = f"{policy} {DEFAULT_LABEL}" if value == _DEFAULTS[key] else row
            for profile in profiles:
                runs = grouped.get((run_name, profile), [])
                if runs:
                    m2, _ = mean_std(r.table2 for r in runs)
                    m3, _ = mean_std(r.table3 for r in runs)
                    cells[(row, profile)] = f"{format_cell(m2, math.nan)} | {format_cell(m3, math.nan)}"
    return ("Table 4 equivalent: requests to 90 % of targets (% of URLs) | non-target volume before 90 % of "
            "target volume (%), means over repeats\n\n" + text_table("variant", rows, profiles, cells))


def write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    args.out.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    truths: dict[str, SiteTruth] = {}
    for profile in args.profiles:
        try:
            truths[profile] = site_truth(build_site(profile, args.seed))
        except KeyError as exc:
            print(f"python -m sbcrawl_dev bench crawl: {exc.args[0]}", file=sys.stderr)
            return 2
        t = truths[profile]
        print(f"{profile}: {t.url_count:,} URLs, {t.targets:,} targets, {t.target_volume / 1e6:.1f} MB of targets, "
              f"{t.non_target_volume / 1e6:.1f} MB of other pages", file=sys.stderr)
    specs = plan(args, truths)
    print(f"{len(specs)} crawls on {args.jobs} processes", file=sys.stderr)
    done = execute(specs, truths, args.jobs)

    results: list[RunResult] = []
    curves: dict[str, dict[str, list[Harvest]]] = defaultdict(lambda: defaultdict(list))
    for run, wall in done:
        result, h = evaluate(run, wall, truths[run.spec.profile])
        results.append(result)
        curves[result.profile][result.name].append(h)
    results.sort(key=lambda r: (args.profiles.index(r.profile), r.name, r.repeat))
    # Report rows in the order asked for (specs were reordered for load balancing).
    names = list(dict.fromkeys(s.name for s in sorted(specs, key=lambda s: args.policies.index(s.policy))))
    text, summary_rows = summarise(results, truths, names, args.profiles)
    if args.sweep:
        text = sweep_table(results, args.policies, args.profiles) + "\n\n" + text
    prefix = "sweep" if args.sweep else "crawl"
    write_csv(args.out / f"{prefix}-runs.csv", [asdict(r) for r in results])
    write_csv(args.out / f"{prefix}-summary.csv", summary_rows)
    pngs = []
    if not args.sweep:
        for profile in args.profiles:
            t = truths[profile]
            ordered = {n: curves[profile][n] for n in names if n in curves[profile]}
            pngs.append(harvest_figure(f"{profile} (seed {args.seed}): {t.url_count:,} URLs, {t.targets:,} targets",
                                       ordered, t.url_count, t.targets, args.out / f"harvest-{profile}.png"))
    command = "python -m sbcrawl_dev bench crawl " + " ".join(sys.argv[1:] if argv is None else argv)
    footer = (f"\n\ncommand: {command}\n{len(specs)} crawls in {time.monotonic() - began:.0f} s; "
              f"cap {args.cap:g} × URLs; files in {args.out}")
    (args.out / f"{prefix}-tables.txt").write_text(text + footer + "\n")
    print(text + footer)
    for png in pngs:
        print(f"  {png}")
    return 0
