"""``python -m sbcrawl_dev bench replay``: the CLI crawler on real websites replayed offline, scored from the
server side.

Each site x policy x run is one run of the shared harness's ``replay/evaluate_replay.py``: a real built
website (every page and file of a static site's repository, byte for byte) served by the harness's own
origin server and proxy, with ``sbcrawl crawl`` as the command under test. BFS comes from the harness's graph
baselines, TREE-ORACLE from its ``oracle_tree.py``; nothing the crawler reports is used. Sites are the
harness's (its ``sites.json``) and the project's (``replay_sites.json``, see :mod:`.replay_sites`), by name or
group: ``--sites dev`` (policy work may look at them) or ``--sites held-out`` (measured only). The sites' data
is extracted beforehand: ``python -m sbcrawl_dev bench replay-extract --site NAME --mirror-root ROOT``.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import statistics
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from sbcrawl_dev.bench import replay_sites
from sbcrawl_dev.bench.harness import (
    SERIAL_HELP,
    SMALL_BUDGET_SHARE,
    crawl_args,
    crawl_command,
    default_eval_dir,
    found_within,
    gap_closed,
    small_budget_line,
    write_results,
)

DEFAULT_POLICIES = "default,sb-classifier-paper,focused,tres,anthelion"


@dataclass
class ReplayRun:
    """One crawl of one replayed site, as the harness's server counted it."""

    site: str
    policy: str
    run: int
    total_urls: int
    targets: int
    budget: int
    pct_to_90: float  # requests to 90 % of the targets, % of the site's URLs; inf when never reached
    bfs_pct: float
    tree_pct: float
    requests: int
    targets_retrieved: int
    missing_from_outputs: int
    redirects_to_known: int  # up to the 90 % point
    pages_revealing_nothing: int  # HTML pages up to the 90 % point that revealed no new target link
    exit_code: int
    wall_s: float
    found_in_small_budget: float = math.nan  # share of the targets retrieved within SMALL_BUDGET_SHARE x URLs
    bfs_found_in_small_budget: float = math.nan


def _pct(requests: float | str | None, total: int) -> float:
    # The harness's JSON writes a count never reached as "inf" (or null).
    requests = math.inf if requests is None else float(requests)
    return requests if math.isinf(requests) else 100.0 * requests / total


def run_one(eval_dir: Path, site: str, policy: str, run: int, workdir: Path, extra_args: str = "",
            timeout: float = 1800, data_dir: Path | None = None,
            sites_json: Path = replay_sites.SITES_JSON, keep: Path | None = None) -> ReplayRun:
    """Crawl ``site`` once with ``policy`` under the replay harness and read its scoring."""
    name = f"{site}-{policy}-{run}"
    outdir = workdir / name
    result_json = workdir / f"{name}.json"
    cmd = [sys.executable, "-m", "sbcrawl_dev.bench.replay_launcher", str(eval_dir), "--sites-json", str(sites_json),
           "--site", site,
           "--cmd", crawl_command(policy, extra_args), "--timeout", str(timeout), "--outdir", str(outdir),
           "--verify-glob", f"{outdir}/objects/*", "--json", str(result_json), "--grace", "0.2"]
    if data_dir is not None:
        cmd += ["--data-dir", str(data_dir)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, cwd=eval_dir)
    data = json.loads(result_json.read_text())
    if keep is not None:  # the harness's whole account of the run: its command, curve and waste counts
        keep.mkdir(parents=True, exist_ok=True)
        shutil.copy(result_json, keep / result_json.name)
    total = int(data["site"]["total_urls"])
    crawler, waste = data["crawler"], data["waste"] or {}
    small_budget, n_targets = math.ceil(SMALL_BUDGET_SHARE * total), max(1, int(data["site"]["targets"]))
    bfs_curve = data["baselines"]["BFS"].get("curve")
    return ReplayRun(
        site=site, policy=policy, run=run, total_urls=total, targets=int(data["site"]["targets"]),
        budget=int(data["budget"]), pct_to_90=_pct(crawler["requests_to_90"], total),
        bfs_pct=_pct(data["baselines"]["BFS"]["requests_to_90"], total),
        tree_pct=_pct(data["tree_oracle"]["requests_to_share"], total),
        requests=int(crawler["requests"]), targets_retrieved=int(crawler["targets_retrieved"]),
        missing_from_outputs=int(data["verification"]["targets_missing_from_outputs"]),
        redirects_to_known=int(waste.get("redirects_to_known_url", 0)),
        pages_revealing_nothing=int(waste.get("html_revealing_nothing_new", 0)),
        exit_code=int(data["run"]["exit_code"]), wall_s=float(data["run"]["wall_seconds"]),
        found_in_small_budget=found_within(crawler["curve"], small_budget) / n_targets,
        bfs_found_in_small_budget=found_within(bfs_curve, small_budget) / n_targets if bfs_curve else math.nan)


def _cell(runs: list[ReplayRun], bfs: float, tree: float, budget_pct: float) -> tuple[str, float | None]:
    """'a / b (gap a / gap b)' for the runs of one policy on one site, and the mean gap over them."""
    if not runs:
        return "–", None
    # A crawl that never got to 90 % is charged its whole budget, so the mean stays finite.
    pcts = [r.pct_to_90 if math.isfinite(r.pct_to_90) else budget_pct for r in runs]
    gaps = [gap_closed(bfs, p, tree) for p in pcts]
    never = ["" if math.isfinite(r.pct_to_90) else "*" for r in runs]
    text = " / ".join(f"{p:.1f}{n}" for p, n in zip(pcts, never, strict=True))
    text += " (" + " / ".join(f"{g:.2f}" for g in gaps) + ")"
    return text, statistics.mean(gaps)


def summarise(runs: list[ReplayRun], policies: list[str]) -> str:
    """The real-site table: per site BFS, TREE-ORACLE and each policy's runs with their gaps closed."""
    sites = list(dict.fromkeys(r.site for r in runs))
    lines = ["| site | URLs | targets | BFS | TREE | " + " | ".join(policies) + " |",
             "|---" * (5 + len(policies)) + "|"]
    means: dict[str, list[float]] = {p: [] for p in policies}
    for site in sites:
        mine = [r for r in runs if r.site == site]
        first = mine[0]
        cells = []
        for policy in policies:
            text, gap = _cell([r for r in mine if r.policy == policy], first.bfs_pct, first.tree_pct,
                              100.0 * first.budget / first.total_urls)
            cells.append(text)
            if gap is not None:
                means[policy].append(gap)
        lines.append(f"| {site} | {first.total_urls} | {first.targets} | {first.bfs_pct:.1f} | "
                     f"{first.tree_pct:.1f} | " + " | ".join(cells) + " |")
    lines.append("| **mean gap** | | | | | " + " | ".join(
        f"**{statistics.mean(g):.2f}**" if g else "–" for g in means.values()) + " |")
    lines += ["", "Requests to 90 % of the site's targets, % of its URLs, per run (gap closed = (BFS - run) / "
              "(BFS - TREE) in brackets); * = never reached 90 % (charged its whole budget)."]
    checks = [f"{r.site} {r.policy} run {r.run}: " + why for r in runs for why in (
        [f"{r.requests} requests over a budget of {r.budget}"] if r.requests > r.budget else []) + (
        [f"{r.missing_from_outputs} served targets not in the outputs"] if r.missing_from_outputs else []) + (
        [f"exit code {r.exit_code}"] if r.exit_code else [])]
    lines.append("checks: " + ("; ".join(checks) if checks else
                               f"all {len(runs)} runs within budget, every served target in the outputs, exit 0"))
    waste = []
    for site in sites:
        for policy in policies:
            mine = [r for r in runs if r.site == site and r.policy == policy]
            if mine:
                waste.append(f"{site}/{policy} {statistics.median(r.redirects_to_known for r in mine):.0f} / "
                             f"{statistics.median(r.pages_revealing_nothing for r in mine):.0f}")
    lines.append("before 90 %, redirects to a known URL / pages revealing no new target (median): "
                 + "; ".join(waste))
    lines.append(small_budget_line(runs, "site", policies))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m sbcrawl_dev bench replay", description=__doc__.split("\n\n")[0])
    ap.add_argument("--eval-dir", type=Path, default=default_eval_dir())
    ap.add_argument("--data-dir", type=Path, default=None,
                    help="extracted sites (default: the harness's, ~/.cache/sbcrawl-replay or $REPLAY_DATA)")
    ap.add_argument("--sites", default="dev",
                    help="comma-separated site names and groups: 'dev' (the harness's sites and the project's "
                         "development sites), 'held-out' (measured only, never tuned against), 'all'")
    ap.add_argument("--runs", type=int, default=2, help="crawls per site and policy")
    ap.add_argument("--policies", default=DEFAULT_POLICIES, help="'default' is the CLI without --policy")
    ap.add_argument("--extra-args", default="", help="more `sbcrawl crawl` options for every run")
    ap.add_argument("--serial", action="store_true", help=SERIAL_HELP)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--out", type=Path, default=None, help="folder for runs.jsonl and table.md")
    ap.add_argument("--keep-json", type=Path, default=None,
                    help="folder to keep each run's full harness result (its crawl command included) in")
    ap.add_argument("--sites-json", type=Path, default=replay_sites.SITES_JSON, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    eval_dir = args.eval_dir.resolve()
    if not (eval_dir / "replay" / "evaluate_replay.py").exists():
        print(f"{ap.prog}: no replay/evaluate_replay.py in {eval_dir} (set --eval-dir)", file=sys.stderr)
        return 2
    try:
        sites = replay_sites.select(args.sites, eval_dir, args.sites_json)
    except replay_sites.SiteListError as exc:
        print(f"{ap.prog}: {exc}", file=sys.stderr)
        return 2
    missing = replay_sites.manifest_missing(sites, args.data_dir, eval_dir)
    if missing:
        where = f" --data-dir {args.data_dir}" if args.data_dir else ""
        print(f"{ap.prog}: not extracted yet: {', '.join(missing)}; run python -m sbcrawl_dev bench replay-extract "
              f"--site {','.join(missing)} --mirror-root ROOT{where}", file=sys.stderr)
        return 2
    policies = [p for p in args.policies.split(",") if p]
    combos = [(s, p, r) for s in sites for p in policies for r in range(1, args.runs + 1)]
    runs: list[ReplayRun] = []
    with tempfile.TemporaryDirectory(prefix="sbcrawl-replay-") as tmp, ThreadPoolExecutor(args.jobs) as pool:
        futures = [pool.submit(run_one, eval_dir, s, p, r, Path(tmp), crawl_args(args.extra_args, args.serial),
                               args.timeout, args.data_dir, args.sites_json, args.keep_json)
                   for s, p, r in combos]
        for fut in futures:
            run = fut.result()
            runs.append(run)
            print(f"{run.site} {run.policy} #{run.run}: {run.pct_to_90:.1f} % (BFS {run.bfs_pct:.1f}, "
                  f"TREE {run.tree_pct:.1f}), {run.requests} requests, {run.wall_s:.0f}s", flush=True)
    table = summarise(runs, policies)
    print(table)
    if args.out:
        write_results(args.out, runs, table)
    return 0
