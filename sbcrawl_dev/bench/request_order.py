"""The requests a crawl sends, in order, for a fixed set of deterministic crawls: a check that a refactoring
changed nothing the sites see.

Each crawl runs with one connection and no delay against the simulator, so its requests are sent one after
the other in the crawler's own order; the server's log (method, URL, status) of every crawl, and each
crawl's summary figures, are written as JSON. Run it on two trees and compare the files:

    PYTHONHASHSEED=0 PYTHONPATH=<old tree> python sbcrawl_dev/bench/request_order.py --out before.json
    PYTHONHASHSEED=0 python -m sbcrawl_dev bench request-order --out after.json
    python -m sbcrawl_dev bench request-order --compare before.json after.json

(run by its path, it takes the crawler and simulator of whatever tree is first on PYTHONPATH).

The crawls: per profile and seed, a cold crawl of epoch 0 (early stopping on), a warm crawl of epoch 1 from
its memory, the same warm crawl cut short by its request budget and resumed with a larger one (once as if
killed before its last checkpoint), and per policy a cold crawl whose budget runs out and is resumed with a
larger one. The hash seed must be fixed: some of the crawler's choices iterate over sets of URLs."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
from pathlib import Path

from airflow_sbcrawl.crawler import CrawlConfig, Crawler, LocalSink, LocalStateStore

try:  # a tree from before issue 22 kept the simulator in the runtime package
    from sbcrawl_dev.sim.server import SimServer
    from sbcrawl_dev.sim.site import build_site
except ImportError:
    from airflow_sbcrawl.sim.server import SimServer
    from airflow_sbcrawl.sim.site import build_site

PROFILES = ("tiny", "small", "deep")
SEEDS = (0, 1)
POLICIES = ("sb-classifier", "sb-classifier-paper", "bfs", "focused", "tres", "anthelion")


@contextlib.contextmanager
def _proxied(server: SimServer):
    names = ("HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy")
    saved = {k: os.environ.pop(k, None) for k in names}
    os.environ["HTTP_PROXY"] = os.environ["http_proxy"] = server.proxy_url
    try:
        yield
    finally:
        for k in ("HTTP_PROXY", "http_proxy"):
            os.environ.pop(k, None)
        os.environ.update({k: v for k, v in saved.items() if v is not None})


def _crawl(server: SimServer, out: Path, resume: bool = False, **options) -> dict:
    # One connection, no delay; one checkpoint, at the end (when the others fall depends on timing).
    config = CrawlConfig(start_url=server.site.start_url, delay=0.0, concurrency=1, checkpoint_every_pages=10**9,
                         checkpoint_every_seconds=1e9, **options)
    crawler = Crawler(config, LocalSink(out), LocalStateStore(out / "state"), tmp_dir=str(out),
                      memory=LocalStateStore(out / "memory"))
    server.reset_log()
    summary = crawler.run(resume=resume)
    return {"log": [[e.method, e.url, e.status] for e in server.log],
            "summary": {k: getattr(summary, k) for k in ("stop_reason", "pages", "targets", "requests",
                                                         "head_requests", "frontier", "changes", "outcomes")}}


def record(profiles: tuple[str, ...], seeds: tuple[int, ...], policies: tuple[str, ...],
           cap: int) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for profile in profiles:
        for seed in seeds:
            before, after = build_site(profile, seed, epoch=0), build_site(profile, seed, epoch=1)
            budget = min(2 * max(before.url_count, after.url_count), cap)
            with tempfile.TemporaryDirectory() as tmp, SimServer(before) as old, SimServer(after) as new:
                name = f"{profile}/{seed}"
                with _proxied(old):
                    out[f"{name}/cold"] = _crawl(old, Path(tmp, "a"), seed=seed, max_requests=budget)
                # a warm crawl cut short by its budget, then resumed with more; once as if killed after twice
                # as many requests as its last checkpoint saw (its journal says so, its frontier does not)
                for cut, killed in ((30, False), (120, False), (60, True)):
                    folder, key = Path(tmp, f"cut-{cut}"), f"{name}/warm-{'killed' if killed else 'cut'}-{cut}"
                    with _proxied(old):
                        _crawl(old, folder, seed=seed, max_requests=budget, early_stopping=False)
                    with _proxied(new):
                        out[key] = _crawl(new, folder, seed=seed, max_requests=cut, early_stopping=False)
                        if killed:
                            out[f"{key}/lost"] = _crawl(new, folder, resume=True, seed=seed,
                                                        max_requests=2 * cut, early_stopping=False)
                            store = LocalStateStore(folder / "state")
                            store.delete(store.checkpoints()[-1])
                        out[f"{key}/resumed"] = _crawl(new, folder, resume=True, seed=seed, max_requests=budget,
                                                       early_stopping=False)
                with _proxied(new):
                    out[f"{name}/warm"] = _crawl(new, Path(tmp, "a"), seed=seed, max_requests=budget,
                                                 early_stopping=False)
                with _proxied(old):
                    for policy in policies:
                        folder = Path(tmp, f"p-{policy}")
                        out[f"{name}/{policy}/budget"] = _crawl(old, folder, seed=seed, policy=policy,
                                                                max_requests=budget // 4)
                        out[f"{name}/{policy}/raised"] = _crawl(old, folder, resume=True, seed=seed,
                                                                policy=policy, max_requests=budget // 2)
            print(f"{name}: {sum(len(v['log']) for k, v in out.items() if k.startswith(name))} requests",
                  file=sys.stderr)
    return out


def compare(a: dict[str, dict], b: dict[str, dict]) -> int:
    problems = 0
    for key in sorted(set(a) | set(b)):
        if key not in a or key not in b:
            print(f"{key}: only in {'the first' if key in a else 'the second'}")
            problems += 1
            continue
        la, lb = a[key]["log"], b[key]["log"]
        if la != lb:
            first = next((i for i, (x, y) in enumerate(zip(la, lb, strict=False)) if x != y), min(len(la), len(lb)))
            print(f"{key}: requests differ from #{first} ({len(la)} vs {len(lb)}): "
                  f"{la[first] if first < len(la) else '-'} vs {lb[first] if first < len(lb) else '-'}")
            problems += 1
        elif a[key]["summary"] != b[key]["summary"]:
            print(f"{key}: same requests, summaries differ: {a[key]['summary']} vs {b[key]['summary']}")
            problems += 1
    total = sum(len(v["log"]) for v in a.values())
    print(f"{len(a)} crawls, {total:,} requests: {'identical' if not problems else f'{problems} differ'}")
    return 1 if problems else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m sbcrawl_dev bench request-order", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    ap.add_argument("--profiles", nargs="+", default=list(PROFILES))
    ap.add_argument("--seeds", nargs="+", type=int, default=list(SEEDS))
    ap.add_argument("--policies", nargs="+", default=list(POLICIES))
    ap.add_argument("--cap", type=int, default=2500, help="most requests of a crawl (twice the site's URLs else)")
    args = ap.parse_args(argv)
    if args.compare:
        a, b = (json.loads(p.read_text()) for p in args.compare)
        return compare(a, b)
    if os.environ.get("PYTHONHASHSEED") != "0":
        print("set PYTHONHASHSEED=0: some choices iterate over sets of URLs", file=sys.stderr)
        return 2
    if args.out is None:
        ap.error("--out or --compare")
    result = record(tuple(args.profiles), tuple(args.seeds), tuple(args.policies), args.cap)
    args.out.write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
