"""``python -m sbcrawl_dev bench recrawl``: what a warm, incremental crawl saves over a cold one when a site changed.

Per profile: epoch N-1 (``--epoch N``, default 1) is crawled cold (that run leaves the site memory);
epoch N is then crawled (a) cold, with no memory, and (b) warm, from that memory. Both are measured on
the simulator's log against its truth (``Site.changes``): requests until 90 % of the new and changed files
were served, body bytes downloaded, and how many unchanged files were downloaded again (with and without a
validator).
The line per profile and seed ends with ``warm/cold <ratio>``: requests to 90 % of new+changed, warm over
cold (``≤`` when the cold run never got there: a bound). With several ``--seed``, a line per profile gives
the median over the seeds; the crawls send requests concurrently, so one seed's figure varies from run to run.

``--kill-at SHARE`` measures a resume instead: the warm run twice (the difference is the noise), and once
killed after SHARE of its requests to 90 % and resumed from its last checkpoint; a resume that kept the
warm crawl's order (which listing page follows which, which rows were new) changes the figure by no more
than the noise.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from airflow_sbcrawl.crawler import CrawlConfig, Crawler, LocalSink, LocalStateStore
from sbcrawl_dev.bench.runner import proxied
from sbcrawl_dev.sim import sitemap_docs as sim_sitemaps
from sbcrawl_dev.sim.server import SimServer
from sbcrawl_dev.sim.site import Site, build_site

DEFAULT_PROFILES = ("tiny", "small", "deep")
# Share of the new and changed files the request count is measured at.
REACH = 0.9


@dataclass
class RecrawlRun:
    requests: int  # requests of the whole run
    requests_to_reach: float  # requests until REACH of the new+changed files were served (inf: never)
    found: int  # new+changed files served
    body_bytes: int
    unchanged_downloads: int  # unchanged or moved files whose body was served again
    unchanged_downloads_with_validator: int
    not_modified: int  # 304 answers
    changes: dict[str, int]  # what the crawler's manifest says


def measure(site: Site, log: list, truth: dict[str, str], summary_changes: dict[str, int]) -> RecrawlRun:
    wanted = {u for u, s in truth.items() if s in ("new", "changed")}
    need = math.ceil(REACH * len(wanted))
    served: set[str] = set()
    reach = math.inf
    again = again_validated = 0
    for i, entry in enumerate(log, 1):
        if entry.method != "GET" or entry.status != 200:
            continue
        if entry.url in wanted and entry.url not in served:
            served.add(entry.url)
            if len(served) >= need and reach == math.inf:
                reach = i
        elif truth.get(entry.url) in ("unchanged", "moved"):
            again += 1
            headers = site.response("HEAD", entry.url, count=False).headers
            again_validated += bool({"ETag", "Last-Modified"} & set(headers))
    return RecrawlRun(len(log), reach, len(served), sum(e.bytes_sent for e in log), again, again_validated,
                      sum(e.status == 304 for e in log), summary_changes)


def crawl(site: Site, out: Path, max_requests: int, warm: bool, seed: int,
          sitemaps: bool = True) -> tuple[list, dict[str, int]]:
    config = CrawlConfig(start_url=site.start_url, seed=seed, delay=0.0, max_requests=max_requests,
                         early_stopping=False, checkpoint_every_pages=10**9, sitemaps=sitemaps)
    with SimServer(site) as server, proxied(server):
        crawler = Crawler(config, LocalSink(out), LocalStateStore(out / "state"), tmp_dir=str(out),
                          memory=LocalStateStore(out / "memory"), warm_start=warm)
        summary = crawler.run()
        return server.log, summary.changes


def crawl_killed(site: Site, out: Path, max_requests: int, seed: int, kill_after: int) -> tuple[list, dict[str, int]]:
    """A warm crawl killed after ``kill_after`` requests and resumed from its run state, as after a SIGKILL:
    checkpoints every 25 pages, and the one the stop wrote is deleted, so the resume goes on from the last
    periodic one (the budget journal keeps what was spent since, the spool the answers received since).
    Returns the server's log of both parts."""
    config = CrawlConfig(start_url=site.start_url, seed=seed, delay=0.0, max_requests=max_requests,
                         early_stopping=False, checkpoint_every_pages=25)

    def make() -> Crawler:
        return Crawler(config, LocalSink(out), LocalStateStore(out / "state"), tmp_dir=str(out),
                       memory=LocalStateStore(out / "memory"))

    with SimServer(site) as server, proxied(server):
        killed = make()
        killed.on_progress = lambda p: killed.request_stop("killed") if p.requests >= kill_after else None
        killed.run()
        first_part = server.log
        before_kill = {entry.url for entry in first_part}
        store = LocalStateStore(out / "state")
        if len(store.checkpoints()) > 1:
            store.delete(store.checkpoints()[-1])
        summary = make().run(resume=True)
        log = server.log
        # What the resume asked the site again: the answers since the checkpoint come from the spool, so only
        # the requests the kill aborted, and any the resumed crawl decided differently.
        again = sum(entry.url in before_kill for entry in log[len(first_part):])
        return log, {**summary.changes, "asked again after the resume": again}


def bench_kill(profile: str, seed: int, budget_factor: float, kill_at: float, epoch: int = 1) -> dict:
    """A warm run twice uninterrupted (their difference is the noise) and once killed after ``kill_at`` of
    the first one's requests to 90 % and resumed: requests to 90 % of new+changed of each."""
    before, after = build_site(profile, seed, epoch=epoch - 1), build_site(profile, seed, epoch=epoch)
    truth = after.changes(epoch - 1)
    max_requests = int(budget_factor * max(before.url_count, after.url_count))
    with tempfile.TemporaryDirectory(prefix="sbcrawl-recrawl-kill-") as tmp:
        first = Path(tmp, "first")
        crawl(before, first, max_requests, warm=True, seed=seed)
        dirs = {name: Path(tmp, name) for name in ("warm", "again", "killed")}
        for path in dirs.values():
            shutil.copytree(first, path)
        runs = {}
        for name in ("warm", "again"):
            log, changes = crawl(after, dirs[name], max_requests, warm=True, seed=seed)
            runs[name] = asdict(measure(after, log, truth, changes))
        reach = runs["warm"]["requests_to_reach"]
        kill_after = max(1, int(kill_at * (reach if reach != math.inf else runs["warm"]["requests"])))
        log, changes = crawl_killed(after, dirs["killed"], max_requests, seed, kill_after)
        runs["killed"] = asdict(measure(after, log, truth, changes))
    return {"profile": profile, "seed": seed, "kill_after": kill_after, **runs}


def format_kill(r: dict) -> str:
    warm, again, killed = (r[k]["requests_to_reach"] for k in ("warm", "again", "killed"))
    return (f"{r['profile']:>6} seed {r['seed']}: requests to 90% of new+changed, warm {warm:,.0f}, warm again "
            f"{again:,.0f} (noise {abs(again - warm):,.0f}), killed after {r['kill_after']:,} requests and "
            f"resumed {killed:,.0f} (change {killed - warm:+,.0f}) | manifests {r['warm']['changes']} / "
            f"{r['killed']['changes']} (asked again: requests the site was sent before the kill and after the resume)")


def bench_profile(profile: str, seed: int, budget_factor: float, epoch: int = 1, sitemaps: bool = True) -> dict:
    """One profile and seed: the epoch before crawled, then this epoch cold and warm (``sitemaps``: the
    crawls read the site's XML sitemaps, on the profiles that have one)."""
    before, after = build_site(profile, seed, epoch=epoch - 1), build_site(profile, seed, epoch=epoch)
    truth = after.changes(epoch - 1)
    max_requests = int(budget_factor * max(before.url_count, after.url_count))
    if sitemaps and after.profile.sitemap_share:  # worked out before the clock starts, not on the first request
        sim_sitemaps.entries(before)
        sim_sitemaps.entries(after)
    with tempfile.TemporaryDirectory(prefix="sbcrawl-recrawl-") as tmp:
        warm_dir, cold_dir = Path(tmp, "warm"), Path(tmp, "cold")
        t0 = time.monotonic()
        crawl(before, warm_dir, max_requests, warm=True, seed=seed, sitemaps=sitemaps)  # no memory yet: cold
        log, changes = crawl(after, cold_dir, max_requests, warm=True, seed=seed, sitemaps=sitemaps)
        cold = measure(after, log, truth, changes)
        log, changes = crawl(after, warm_dir, max_requests, warm=True, seed=seed, sitemaps=sitemaps)
        warm = measure(after, log, truth, changes)
        elapsed = time.monotonic() - t0
    counts = {s: sum(v == s for v in truth.values()) for s in ("new", "changed", "moved", "unchanged", "gone")}
    return {"profile": profile, "seed": seed, "epoch": epoch,
            "sitemaps": sitemaps and bool(after.profile.sitemap_share), "truth": counts, "max_requests": max_requests,
            "cold": asdict(cold), "warm": asdict(warm), "ratio": ratio(warm, cold), "elapsed_s": round(elapsed, 1)}


def ratio(warm: RecrawlRun, cold: RecrawlRun) -> float:
    """Requests to reach, warm over cold. A cold run that never reached took more than all of its requests:
    the ratio is then at most warm over those (reported as a bound); a warm run that never reached, inf."""
    if warm.requests_to_reach == math.inf:
        return math.inf
    return warm.requests_to_reach / min(cold.requests_to_reach, cold.requests)


def format_ratio(r: dict) -> str:
    bound = "≤" if r["cold"]["requests_to_reach"] == math.inf and r["ratio"] != math.inf else ""
    return f"{bound}{r['ratio']:.2f}"


def format_line(r: dict) -> str:
    cold, warm = r["cold"], r["warm"]
    t = r["truth"]

    def reach(x: float) -> str:
        return "never" if x == math.inf else f"{x:,.0f}"

    return (f"{r['profile']:>6}: truth new {t['new']} changed {t['changed']} moved {t['moved']} gone {t['gone']} | "
            f"requests to 90% of new+changed cold {reach(cold['requests_to_reach'])} warm "
            f"{reach(warm['requests_to_reach'])} | body MB cold {cold['body_bytes'] / 1e6:.2f} warm "
            f"{warm['body_bytes'] / 1e6:.2f} | unchanged downloaded again cold {cold['unchanged_downloads']} warm "
            f"{warm['unchanged_downloads']} (with validator {warm['unchanged_downloads_with_validator']}) | "
            f"warm 304s {warm['not_modified']} | warm manifest {warm['changes']} | seed {r['seed']} | "
            f"warm/cold {format_ratio(r)}")


def format_median(profile: str, results: list[dict]) -> str:
    ratios = sorted(r["ratio"] for r in results)
    shown = ", ".join(format_ratio(r) for r in sorted(results, key=lambda r: r["ratio"]))
    return (f"{profile:>6}: median over seeds {', '.join(str(r['seed']) for r in results)} | "
            f"warm/cold {statistics.median(ratios):.2f} (each: {shown})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sbcrawl_dev bench recrawl", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profiles", nargs="+", default=list(DEFAULT_PROFILES))
    parser.add_argument("--seed", type=int, nargs="+", default=[0],
                        help="site seeds; with several, each profile also gets a line with the median")
    parser.add_argument("--budget", type=float, default=1.5,
                        help="request budget of every crawl, as a multiple of the site's URL count")
    parser.add_argument("--epoch", type=int, default=1,
                        help="crawl the site at this epoch, warm from a crawl of the epoch before (>= 1)")
    parser.add_argument("--kill-at", type=float, metavar="SHARE",
                        help="instead: a warm run twice, and once killed after SHARE of its requests to 90%% "
                        "and resumed from its last checkpoint (does a resume keep the warm crawl's order?)")
    parser.add_argument("--no-sitemaps", action="store_true",
                        help="crawl without reading the sites' XML sitemaps (profiles *-sitemap have one)")
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    args = parser.parse_args(argv)
    if args.epoch < 1:
        parser.error(f"--epoch must be 1 or more, not {args.epoch}")
    if args.kill_at is not None and not 0 < args.kill_at < 1:
        parser.error(f"--kill-at must be between 0 and 1, not {args.kill_at}")
    results = []
    if args.kill_at is not None:
        for profile in args.profiles:
            for seed in args.seed:
                with contextlib.redirect_stdout(sys.stderr):
                    results.append(bench_kill(profile, seed, args.budget, args.kill_at, args.epoch))
                print(format_kill(results[-1]), flush=True)
        if args.json:
            args.json.write_text(json.dumps(results, indent=2, default=str))
        return 0
    for profile in args.profiles:
        mine = []
        for seed in args.seed:
            with contextlib.redirect_stdout(sys.stderr):
                mine.append(bench_profile(profile, seed, args.budget, args.epoch, sitemaps=not args.no_sitemaps))
            print(format_line(mine[-1]), flush=True)
        if len(mine) > 1:
            print(format_median(profile, mine), flush=True)
        results.extend(mine)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str))
    return 0
