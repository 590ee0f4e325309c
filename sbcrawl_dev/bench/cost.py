"""``python -m sbcrawl_dev bench cost``: what the engine costs at scale, on this machine.

0. The page path against its floor (``pagecost.py``): saved pages of simulated sites served over HTTP, the
   crawler's receive + page handling against urllib3 receive + lxml parse + iterlinks, interleaved.
1. Frontier scale (synthetic, no network): for 10^3 to 10^6 frontier URLs, fill a crawler's LinkTable
   and its SB-CLASSIFIER policy with synthetic links (a few hundred distinct tag paths, as on a real site),
   then measure resident memory per URL, the policy's CPU per page at that frontier size (next + add of a
   page's new links + feedback), and the checkpoint's size, save time and restore time (wall and CPU).
2. Real crawls of the simulator's ``large`` profile (default 1 000 and 50 000 pages): CPU milliseconds per
   crawled page of the crawl thread and its fetch pool (``time.thread_time``, which excludes waiting on the
   network), in windows as the frontier grows. The simulator runs in another process, so its CPU is not counted at all.
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import psutil

from airflow_sbcrawl.crawler import CrawlConfig, Crawler, LocalSink, LocalStateStore
from airflow_sbcrawl.crawler import state as ckpt
from airflow_sbcrawl.crawler.policies import DEFAULT_POLICY, NewLink
from sbcrawl_dev.bench.pagecost import SavedSite, capture_sources, format_page_cost, page_cost

_REPO = Path(__file__).resolve().parents[2]
_LINKS_PER_PAGE = 20
_PATHS_PER_PAGE = 4


# -- 1. synthetic frontier -----------------------------------------------------------------------------
@dataclass
class FrontierCost:
    frontier: int
    fill_s: float
    rss_mb: float
    bytes_per_url: float
    page_cpu_ms: float
    checkpoint_mb: float
    save_s: float
    restore_s: float  # wall
    restore_cpu_s: float  # this process's CPU (time.process_time), the measure


def _synthetic_tag_paths(n: int, rng: np.random.Generator) -> list[str]:
    tags = ["div", "ul", "li", "section", "nav", "main", "article", "p", "span", "table", "td", "h3"]
    classes = ["", ".item", ".list", ".block", ".content", ".teaser", ".downloads", ".menu"]
    out = []
    for _ in range(n):
        depth = int(rng.integers(3, 9))
        parts = ["html", "body"] + [str(rng.choice(tags)) + str(rng.choice(classes)) for _ in range(depth)] + ["a"]
        out.append(" ".join(parts))
    return out


def _links(start: int, count: int, depth: int, paths: list[str], rng: np.random.Generator,
           per_page: int | None = None) -> list[NewLink]:
    """Synthetic links; with ``per_page``, drawn from that many tag paths only, as a page's template
    repeats a few paths (menu, list items, download block) over its links."""
    pool = rng.choice(len(paths), per_page, replace=False) if per_page else np.arange(len(paths))
    picks = pool[rng.integers(0, len(pool), count)]
    return [NewLink(start + i, f"http://www.site.example/s{(start + i) % 97}/page-{start + i}", paths[p],
                    "anchor text", depth) for i, p in enumerate(picks)]


def frontier_cost(size: int, work: Path, pages: int = 2000, seed: int = 0,
                  policy_name: str = DEFAULT_POLICY) -> FrontierCost:
    rng = np.random.default_rng(seed)
    paths = _synthetic_tag_paths(300, rng)
    config = CrawlConfig(start_url="http://www.site.example/", policy=policy_name, seed=seed)
    store_dir = work / f"state-{size}"
    gc.collect()
    rss0 = psutil.Process().memory_info().rss
    crawler = Crawler(config, LocalSink(work / f"sink-{size}"), LocalStateStore(store_dir), tmp_dir=str(work))
    began = time.perf_counter()
    table, policy = crawler.links, crawler.policy
    table.add(config.start_url, 0, -1, None)
    # Filled in big batches (one action lookup per distinct tag path per batch): this is set-up, not the
    # per-page cost measured below.
    batch = 100_000
    for start in range(1, size + 1, batch):
        count = min(batch, size + 1 - start)
        links = _links(start, count, 3, paths, rng)
        for link in links:
            table.add(link.url, link.depth, 0, link.tag_path)
        policy.add(links)
    fill_s = time.perf_counter() - began
    gc.collect()
    rss = psutil.Process().memory_info().rss - rss0

    # Per-page policy cost at this frontier size: one pick, a page's new links, one reward.
    next_id = len(table)
    cpu0 = time.thread_time()
    for _ in range(pages):
        link_id = policy.next()
        new = _links(next_id, _LINKS_PER_PAGE, 4, paths, rng, per_page=_PATHS_PER_PAGE)
        next_id += _LINKS_PER_PAGE
        for link in new:
            table.add(link.url, link.depth, link_id or 0, link.tag_path)
        policy.add(new)
        policy.feedback(link_id, float(rng.random() < 0.1))
    page_cpu_ms = 1000 * (time.thread_time() - cpu0) / pages

    began = time.perf_counter()
    crawler.checkpoint()
    save_s = time.perf_counter() - began
    ckpt_bytes = sum(p.stat().st_size for p in store_dir.rglob("*") if p.is_file())

    gc.collect()
    began, cpu0 = time.perf_counter(), time.process_time()
    fresh = Crawler(config, LocalSink(work / f"sink-{size}"), LocalStateStore(store_dir), tmp_dir=str(work))
    loaded = ckpt.load_latest(fresh.store)
    assert loaded is not None
    fresh._restore(*loaded)  # what run(resume=True) does before its first request
    restore_s, restore_cpu_s = time.perf_counter() - began, time.process_time() - cpu0
    if len(fresh.policy) != len(policy):
        raise AssertionError(f"restored frontier has {len(fresh.policy)} links, saved {len(policy)}")
    result = FrontierCost(size, round(fill_s, 2), round(rss / 2**20, 1), round(rss / max(size, 1), 1),
                          round(page_cpu_ms, 3), round(ckpt_bytes / 2**20, 2), round(save_s, 3), round(restore_s, 3),
                          round(restore_cpu_s, 3))
    del crawler, fresh, loaded, table, policy
    shutil.rmtree(store_dir, ignore_errors=True)
    gc.collect()
    return result


# -- 2. real crawls ------------------------------------------------------------------------------------
def _serve(profile: str, seed: int, port_queue: Any, stop: Any) -> None:
    from sbcrawl_dev.sim.server import SimServer
    from sbcrawl_dev.sim.site import build_site

    with SimServer(build_site(profile, seed)) as server:
        port_queue.put((server.port, server.site.start_url))
        stop.wait()


@dataclass
class CrawlCost:
    pages: int
    requests: int
    frontier: int
    actions: int
    cpu_s: float
    wall_s: float
    cpu_ms_per_page: float
    cpu_ms_per_request: float  # pages exclude targets fetched at once; requests count every fetch
    windows: list[tuple[int, int, float]]  # (pages at window end, frontier, CPU ms per page in the window)


def crawl_cost(pages: int, profile: str = "large", seed: int = 0, policy: str = DEFAULT_POLICY,
               window: int = 0) -> CrawlCost:
    ctx = multiprocessing.get_context("spawn")
    ports, stop = ctx.Queue(), ctx.Event()
    server = ctx.Process(target=_serve, args=(profile, seed, ports, stop), daemon=True)
    server.start()
    try:
        port, start_url = ports.get(timeout=60)
        from sbcrawl_dev.bench.runner import proxied

        class _Proxy:  # what proxied() needs of a server
            proxy_url = f"http://127.0.0.1:{port}"

        samples: list[tuple[int, int, float]] = []
        with tempfile.TemporaryDirectory(prefix="sbcrawl-cost-") as out, proxied(_Proxy()):  # type: ignore[arg-type]
            # max_requests caps pages (+ HEAD and robots.txt requests, a handful); no early stop.
            config = CrawlConfig(start_url=start_url, policy=policy, seed=seed, delay=0.0, max_requests=pages,
                                 early_stopping=False, max_bytes=50 * 1024**3)
            crawler = Crawler(config, LocalSink(out), tmp_dir=out)
            window = window or max(100, pages // 25)
            next_mark = [window]

            def sample(p: Any) -> None:  # runs on the crawl thread: its CPU and its fetch pool's
                if p.pages >= next_mark[0]:
                    samples.append((p.pages, p.frontier, time.thread_time() + crawler.pool.cpu_seconds))
                    next_mark[0] = p.pages + window
                    if len(samples) > 1:  # as it goes, so that a long run cut short still says something
                        (p0, _, t0), (p1, f1, t1) = samples[-2:]
                        print(f"  pages {p1:,} frontier {f1:,} requests {p.requests:,}: "
                              f"{1000 * (t1 - t0) / max(p1 - p0, 1):.2f} CPU ms/page", file=sys.stderr, flush=True)

            crawler.on_progress = sample
            began = time.monotonic()
            summary = crawler.run()
            wall = time.monotonic() - began
    finally:
        stop.set()
        server.join(timeout=10)
        if server.is_alive():
            server.terminate()
    windows = []
    for (p0, _, t0), (p1, f1, t1) in pairwise(samples):
        windows.append((p1, f1, round(1000 * (t1 - t0) / max(p1 - p0, 1), 3)))
    return CrawlCost(summary.pages, summary.requests, summary.frontier, summary.actions, summary.cpu_s,
                     round(wall, 1), round(1000 * summary.cpu_s / max(summary.pages, 1), 3),
                     round(1000 * summary.cpu_s / max(summary.requests, 1), 3), windows)


# -- CLI -----------------------------------------------------------------------------------------------
def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m sbcrawl_dev bench cost", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--frontiers", default="1000,10000,100000,1000000", help="synthetic frontier sizes")
    p.add_argument("--crawls", default="1000,50000", help="pages of the real crawls of --profile (0: none)")
    p.add_argument("--profile", default="large")
    p.add_argument("--policy", default=DEFAULT_POLICY)
    p.add_argument("--pages", type=int, default=150,
                   help="pages saved per source for the page path against the floor (0: not measured)")
    p.add_argument("--page-sources", default="sim:large,sim:portal,eval:dev-archive,eval:dev-catalogue,eval:dev-hubs",
                   help="sites the saved pages come from: sim:PROFILE (the simulator), eval:PROFILE (--eval-dir)")
    p.add_argument("--eval-dir", type=Path, default=_REPO.parent / "shared" / "eval",
                   help="the evaluation harness, for eval: sources (skipped when absent)")
    p.add_argument("--saved-pages", type=Path, default=None,
                   help="time the pages saved by an earlier run (its --out) instead of capturing new ones")
    p.add_argument("--repeats", type=int, default=5, help="interleaved repeats of the page path and its floor")
    p.add_argument("--out", type=Path, default=Path("bench-cost"))
    args = p.parse_args(sys.argv[1:] if argv is None else list(argv))
    args.out.mkdir(parents=True, exist_ok=True)
    lines: list[str] = []

    def emit(*new: str) -> None:
        """Each line once, as soon as it is measured (the whole text also goes to cost.txt)."""
        lines.extend(new)
        print("\n".join(new), flush=True)

    if args.pages > 0:
        if args.saved_pages is not None:
            sites = [SavedSite.load(p) for p in sorted((args.saved_pages / "pages").iterdir())]
        else:
            sites = capture_sources([s for s in args.page_sources.split(",") if s], args.pages, args.out,
                                    args.eval_dir.resolve())
        with tempfile.TemporaryDirectory(prefix="sbcrawl-pagecost-") as work:
            results = page_cost(sites, args.repeats, Path(work), args.policy)
        emit(*format_page_cost(results, args.repeats), "")
    sizes = [int(x) for x in args.frontiers.split(",") if x]
    if sizes:
        emit(f"Frontier scale (synthetic links, {args.policy} policy; CPU = policy next+add+feedback per page)",
             "", f"{'frontier URLs':>14} {'fill s':>8} {'RSS MB':>8} {'B/URL':>7} {'CPU ms/page':>12} "
             f"{'ckpt MB':>8} {'save s':>7} {'restore s':>9} {'restore CPU s':>13}")
    with tempfile.TemporaryDirectory(prefix="sbcrawl-cost-") as work:
        for size in sizes:
            r = frontier_cost(size, Path(work), policy_name=args.policy)
            emit(f"{r.frontier:>14,} {r.fill_s:>8} {r.rss_mb:>8} {r.bytes_per_url:>7} {r.page_cpu_ms:>12} "
                 f"{r.checkpoint_mb:>8} {r.save_s:>7} {r.restore_s:>9} {r.restore_cpu_s:>13}")
    for pages in (int(x) for x in args.crawls.split(",") if x and int(x) > 0):
        c = crawl_cost(pages, args.profile, policy=args.policy)
        emit("", f"Crawl of {args.profile} capped at {pages:,} requests ({args.policy}): {c.pages:,} pages, "
                 f"{c.requests:,} requests, frontier {c.frontier:,}, {c.actions:,} actions; "
                 f"{c.cpu_s:.1f} s crawl-thread CPU = {c.cpu_ms_per_page} ms/page, "
                 f"{c.cpu_ms_per_request} ms/request; {c.wall_s} s wall",
             f"  {'pages':>8} {'frontier':>9} {'CPU ms/page (window)':>21}")
        step = max(1, len(c.windows) // 12)
        emit(*(f"  {w[0]:>8,} {w[1]:>9,} {w[2]:>21}" for w in c.windows[::step]))
    (args.out / "cost.txt").write_text("\n".join(lines) + "\n")
    return 0
