"""``python -m sbcrawl_dev bench harness``: the CLI crawler scored from the server side by the shared
evaluation harness.

Each profile x seed x policy is one run of the harness's ``evaluate.py`` (its own origin server and proxy,
its own request log, its own scoring), with ``sbcrawl crawl`` as the command under test. BFS comes from
the harness's graph baselines, TREE-ORACLE from its ``oracle_tree.py``; nothing the crawler reports is used.
The harness is called, never copied: ``--eval-dir`` points at it (default ``../shared/eval`` beside the
repository)."""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

from sbcrawl_dev.bench import heldout

DEV_PROFILES = ("dev-archive", "dev-catalogue", "dev-hubs", "dev-multilingual", "dev-deep-tree", "dev-buried")
_REPO = Path(__file__).resolve().parents[2]
# A scheduled run's budget is often far below the site's size: the share of the targets a crawl holds when a
# budget of a quarter of the site's URLs runs out is read off the same run (requests to 90 % say nothing of it)
SMALL_BUDGET_SHARE = 0.25


@dataclass
class HarnessRun:
    profile: str
    seed: int
    policy: str
    total_urls: int
    budget: int
    pct_to_90: float  # requests to 90 % of targets, % of site URLs; inf when never reached
    bfs_pct: float
    tree_pct: float
    requests: int
    targets: int
    targets_retrieved: int
    missing_from_outputs: int
    requests_after_last_target: int
    trap_requests: int
    exit_code: int
    wall_s: float
    found_in_small_budget: float = math.nan  # share of the targets retrieved within SMALL_BUDGET_SHARE x URLs
    bfs_found_in_small_budget: float = math.nan


def _eval_modules(eval_dir: Path):
    if str(eval_dir) not in sys.path:
        sys.path.insert(0, str(eval_dir))
    sitegen = importlib.import_module("sitegen")
    heldout.register(sitegen)
    return sitegen, importlib.import_module("oracle_tree")


def _sbcrawl() -> str:
    exe = Path(sys.executable).with_name("sbcrawl")
    return str(exe) if exe.exists() else f"{shlex.quote(sys.executable)} -m airflow_sbcrawl.cli"


def crawl_command(policy: str, extra_args: str = "") -> str:
    """The ``sbcrawl crawl`` command line a harness runs, with its placeholders; 'default' = no --policy."""
    policy_arg = f" --policy {shlex.quote(policy)}" if policy != "default" else ""
    return (f"{_sbcrawl()} crawl {{start_url}} --out {{outdir}} --max-requests {{budget}} --delay 0 --quiet"
            f" --no-report{policy_arg} {extra_args}").strip()


SERIAL_HELP = ("crawl one request at a time (`--concurrency 1` given to every crawl), so that the order responses "
               "arrive in cannot change a decision: two codes compared this way differ only by what they decide")


def crawl_args(extra_args: str, serial: bool) -> str:
    """The extra ``sbcrawl crawl`` options of every run, with ``--concurrency 1`` first when ``serial``
    (a later ``--concurrency`` in ``extra_args`` wins, as argparse keeps the last)."""
    return f"--concurrency 1 {extra_args}".strip() if serial else extra_args


def default_eval_dir() -> Path:
    """The shared evaluation harness: ``$SBCRAWL_EVAL_DIR`` when set, else beside the repository
    (``../shared/eval``)."""
    given = os.environ.get("SBCRAWL_EVAL_DIR")
    return Path(given).resolve() if given else _REPO.parent / "shared" / "eval"


def run_one(eval_dir: Path, profile: str, seed: int, policy: str, scale: float, budget_factor: float,
            workdir: Path, extra_args: str = "", timeout: float = 1800, keep: Path | None = None) -> HarnessRun:
    sitegen, oracle_tree = _eval_modules(eval_dir)
    site = sitegen.generate(profile, seed, scale)
    budget = int(budget_factor * site.total_urls)
    tree = oracle_tree.tree_oracle(site)
    name = f"{profile}-s{seed}-{policy}"
    outdir = workdir / name
    result_json = workdir / f"{name}.json"
    cmd = crawl_command(policy, extra_args)
    subprocess.run(
        [sys.executable, "-m", "sbcrawl_dev.bench.evaluate_launcher", str(eval_dir),
         "--profile", profile, "--seed", str(seed), "--scale", str(scale), "--cmd", cmd,
         "--budget", str(budget), "--timeout", str(timeout),
         "--outdir", str(outdir), "--verify-glob", f"{outdir}/objects/*", "--json", str(result_json),
         "--grace", "0.2"],
        check=True, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, cwd=eval_dir)
    data = json.loads(result_json.read_text())
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        shutil.copy(result_json, keep / result_json.name)
        crawler_log = Path(data["run"].get("log") or "")
        if crawler_log.is_file():  # the crawler's own account (its stop reason), beside the server's
            shutil.copy(crawler_log, keep / crawler_log.name)
    crawler = data["crawler"]
    curve = crawler.get("curve") or [(0, 0)]
    last_new = max((x for x, _y in _rises(curve)), default=0)
    pct = crawler["requests_to_90_pct_site"]
    small_budget, n_targets = math.ceil(SMALL_BUDGET_SHARE * site.total_urls), max(1, crawler["targets_total"])
    bfs_curve = data["baselines"]["BFS"].get("curve")
    return HarnessRun(
        profile=profile, seed=seed, policy=policy, total_urls=site.total_urls, budget=budget,
        pct_to_90=math.inf if pct is None else float(pct),
        bfs_pct=float(data["baselines"]["BFS"]["requests_to_90_pct_site"]), tree_pct=float(tree["pct_site"]),
        requests=crawler["requests"], targets=crawler["targets_total"],
        targets_retrieved=crawler["targets_retrieved"],
        missing_from_outputs=data["verification"]["targets_missing_from_outputs"],
        requests_after_last_target=crawler["requests"] - last_new, trap_requests=crawler["trap_requests"],
        exit_code=data["run"]["exit_code"], wall_s=data["run"]["wall_seconds"],
        found_in_small_budget=found_within(curve, small_budget) / n_targets,
        bfs_found_in_small_budget=found_within(bfs_curve, small_budget) / n_targets if bfs_curve else math.nan)


def _rises(curve: Sequence[Sequence[float]]):
    prev = None
    for x, y in curve:
        if prev is None or y > prev:
            yield x, y
        prev = y


def found_within(curve: Sequence[Sequence[float]], requests: int) -> int:
    """Targets retrieved within the first ``requests`` requests, from a harness curve of (request, targets
    so far) points in request order."""
    got = 0
    for at, count in curve:
        if at > requests:
            break
        got = int(count)
    return got


def small_budget_line(runs: Sequence, key: str, policies: Sequence[str]) -> str:
    """Per site (``key``: the runs' attribute naming it), the share of the targets found when a budget of
    SMALL_BUDGET_SHARE x the site's URLs ran out: BFS's and each policy's median over its runs."""
    parts = []
    for name in dict.fromkeys(getattr(r, key) for r in runs):
        mine = [r for r in runs if getattr(r, key) == name]
        cells = [f"BFS {statistics.median(r.bfs_found_in_small_budget for r in mine):.0%}"]
        for policy in policies:
            shares = [r.found_in_small_budget for r in mine if r.policy == policy]
            if shares:
                cells.append(f"{policy} {statistics.median(shares):.0%}")
        parts.append(f"{name}: " + ", ".join(cells))
    return (f"targets found within {SMALL_BUDGET_SHARE:.0%} of the site's URLs in requests (median of runs): "
            + "; ".join(parts))


def gap_closed(bfs: float, ours: float, tree: float) -> float:
    """(BFS - ours) / (BFS - TREE); a crawl that never reaches 90 % counts as spending its whole budget."""
    return (bfs - ours) / (bfs - tree) if bfs != tree else 0.0


def summarise(runs: list[HarnessRun], policies: Sequence[str], budget_factor: float) -> str:
    profiles = list(dict.fromkeys(r.profile for r in runs))
    lines = ["| profile | BFS | " + " | ".join(policies) + " | TREE-ORACLE | "
             + " | ".join(f"gap {p}" for p in policies) + " |",
             "|---" * (3 + 2 * len(policies)) + "|"]
    gaps: dict[str, list[float]] = {p: [] for p in policies}
    for profile in profiles:
        mine = [r for r in runs if r.profile == profile]
        bfs = statistics.mean(r.bfs_pct for r in mine if r.policy == mine[0].policy)
        tree = statistics.mean(r.tree_pct for r in mine if r.policy == mine[0].policy)
        cells, gap_cells = [], []
        for policy in policies:
            pr = [r for r in mine if r.policy == policy]
            if not pr:
                cells.append("–")
                gap_cells.append("–")
                continue
            # A crawl that never got to 90 % is charged its whole budget, so the mean stays finite.
            vals = [r.pct_to_90 if math.isfinite(r.pct_to_90) else 100 * budget_factor for r in pr]
            never = sum(1 for r in pr if not math.isfinite(r.pct_to_90))
            mean = statistics.mean(vals)
            spread = f" ± {statistics.stdev(vals):.1f}" if len(vals) > 1 else ""
            cells.append(f"{mean:.1f}{spread}" + (f" ({never} never)" if never else ""))
            gap = gap_closed(bfs, mean, tree)
            gaps[policy].append(gap)
            gap_cells.append(f"{gap:.2f}")
        lines.append(f"| {profile} | {bfs:.1f} | " + " | ".join(cells) + f" | {tree:.1f} | "
                     + " | ".join(gap_cells) + " |")
    lines.append("| **mean gap** | | " + " | ".join("" for _ in policies) + " | | "
                 + " | ".join(f"**{statistics.mean(g):.2f}**" if g else "–" for g in gaps.values()) + " |")
    checks = []
    for r in runs:
        if r.requests > r.budget:
            checks.append(f"{r.profile} s{r.seed} {r.policy}: {r.requests} requests over a budget of {r.budget}")
        if r.missing_from_outputs:
            checks.append(f"{r.profile} s{r.seed} {r.policy}: {r.missing_from_outputs} served targets not in outputs")
        if r.exit_code != 0:
            checks.append(f"{r.profile} s{r.seed} {r.policy}: exit code {r.exit_code}")
    lines.append("")
    lines.append("checks: " + ("; ".join(checks) if checks else
                               f"all {len(runs)} runs within budget, every served target in the outputs, exit 0"))
    lines.append("")
    tails = []
    for profile in profiles:
        for policy in policies:
            after = [r.requests_after_last_target for r in runs if r.profile == profile and r.policy == policy]
            if after:
                tails.append(f"{profile}/{policy} {statistics.median(after):.0f}")
    lines.append("requests after the last new dataset (median over seeds): " + "; ".join(tails))
    lines.append(small_budget_line(runs, "profile", policies))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m sbcrawl_dev bench harness", description=__doc__.split("\n\n")[0])
    ap.add_argument("--eval-dir", type=Path, default=default_eval_dir())
    ap.add_argument("--profiles", default="dev",
                    help="comma-separated profile names; 'dev' = the harness's development profiles, "
                         "'held-out' = ours in bench/heldout.py")
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--budget-factor", type=float, default=1.5, help="budget = this x the site's URLs")
    ap.add_argument("--policies", default="default,sb-classifier-paper,focused",
                    help="'default' is the CLI without --policy")
    ap.add_argument("--extra-args", default="", help="more `sbcrawl crawl` options for every run")
    ap.add_argument("--serial", action="store_true", help=SERIAL_HELP)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", type=Path, default=None, help="folder for runs.jsonl and table.md")
    ap.add_argument("--keep-json", type=Path, default=None,
                    help="folder to keep each run's full harness result (harvest curve included) in")
    args = ap.parse_args(argv)
    eval_dir = args.eval_dir.resolve()
    if not (eval_dir / "evaluate.py").exists():
        print(f"python -m sbcrawl_dev bench harness: no evaluate.py in {eval_dir} (set --eval-dir)", file=sys.stderr)
        return 2
    policies = [p for p in args.policies.split(",") if p]
    groups = {"dev": DEV_PROFILES, "held-out": heldout.HELD_OUT}
    profiles = [name for p in args.profiles.split(",") if p for name in groups.get(p, (p,))]
    combos = [(p, int(s), pol) for p in profiles for s in args.seeds.split(",") for pol in policies]
    runs: list[HarnessRun] = []
    with tempfile.TemporaryDirectory(prefix="sbcrawl-harness-") as tmp, ThreadPoolExecutor(args.jobs) as pool:
        futures = [pool.submit(run_one, eval_dir, p, s, pol, args.scale, args.budget_factor, Path(tmp),
                               crawl_args(args.extra_args, args.serial), keep=args.keep_json) for p, s, pol in combos]
        for fut in futures:
            run = fut.result()
            runs.append(run)
            print(f"{run.profile} s{run.seed} {run.policy}: {run.pct_to_90:.1f} % (BFS {run.bfs_pct:.1f}, "
                  f"TREE {run.tree_pct:.1f}), {run.requests} requests, {run.wall_s:.0f}s", flush=True)
    table = summarise(runs, policies, args.budget_factor)
    print(table)
    if args.out:
        write_results(args.out, runs, table)
    return 0


def write_results(out: Path, runs: Sequence, table: str) -> None:
    """``runs.jsonl`` (one dataclass per line) and ``table.md`` in ``out``, for this bench and the replay."""
    out.mkdir(parents=True, exist_ok=True)
    with (out / "runs.jsonl").open("w") as f:
        for run in runs:
            f.write(json.dumps(asdict(run)) + "\n")
    (out / "table.md").write_text(table + "\n")
