"""Requests per second and CPU per request of the crawler against a concurrent Scrapy spider, on the sites of
the evaluation harness (../shared/eval) served with latency; counted by the server.

Each run is a fresh process (its CPU is that process's, from wait4) against a fresh server (whose request log
gives the count); the crawlers of one round run one after another, rounds repeat, medians are printed:

    python -m sbcrawl_dev bench throughput --profiles dev-archive,dev-hubs --latency-ms 20 --delays 0,0.2 --runs 3 \\
        --baseline-src /tmp/snap-before/ --out benchmarks/results/throughput

``--baseline-src`` is a folder holding the ``airflow_sbcrawl`` package of an earlier commit (the sequential
engine), run with that folder first on PYTHONPATH. Scrapy comes from ``pip install -e '.[peers]'``.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

EVAL = Path(__file__).resolve().parents[3] / "shared" / "eval"


@dataclass
class Run:
    profile: str
    delay: float
    crawler: str
    round: int
    requests: int  # as the server counted them
    wall_s: float
    cpu_s: float

    @property
    def rps(self) -> float:
        return self.requests / self.wall_s if self.wall_s else 0.0

    @property
    def cpu_ms_per_request(self) -> float:
        return 1000 * self.cpu_s / self.requests if self.requests else 0.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    """The harness's server in its own process (so that it does not share the crawler's CPU accounting)."""

    def __init__(self, eval_dir: Path, profile: str, seed: int, latency_ms: float, log: Path) -> None:
        self.port = _free_port()
        self.log = log
        self.proc = subprocess.Popen(
            [sys.executable, str(eval_dir / "simserver.py"), "--profile", profile, "--seed", str(seed),
             "--port", str(self.port), "--latency-ms", str(latency_ms), "--log", str(log)],
            cwd=eval_dir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for line in self.proc.stdout:  # it prints the start URL, then the proxy line once it listens
            if line.startswith(f"{profile}:"):
                self.start_url = line.split()[1]
            if line.startswith("proxy:"):
                return
        raise RuntimeError(f"the harness server did not start for {profile}")

    @property
    def proxy(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def requests(self) -> int:
        self.proc.send_signal(2)
        self.proc.communicate(timeout=60)
        return sum(1 for _ in self.log.open())


def _command(crawler: str, start_url: str, out: Path, budget: int, delay: float, src: Path | None) -> list[str]:
    if crawler == "scrapy-16":
        return [sys.executable, str(Path(__file__).with_name("scrapy_peer.py")), start_url, "--out", str(out),
                "--budget", str(budget), "--delay", str(delay), "--concurrency", "16"]
    cmd = [sys.executable, "-m", "airflow_sbcrawl.cli", "crawl", start_url, "--out", str(out), "--max-requests",
           str(budget), "--delay", str(delay), "--no-early-stopping", "--no-report", "--quiet", "--json"]
    if crawler.startswith("sbcrawl-c"):
        cmd += ["--concurrency", crawler.removeprefix("sbcrawl-c")]
    return cmd


def run_once(crawler: str, server: Server, budget: int, delay: float, src: Path | None) -> tuple[float, float]:
    """Wall and CPU seconds of one crawl process."""
    env = {**os.environ, "HTTP_PROXY": server.proxy, "http_proxy": server.proxy}
    env.pop("NO_PROXY", None)
    env.pop("no_proxy", None)
    if crawler == "before" and src is not None:
        env["PYTHONPATH"] = f"{src}{os.pathsep}{env.get('PYTHONPATH', '')}"
    with tempfile.TemporaryDirectory() as tmp:
        began = time.monotonic()
        # Not from the checkout: "python -m" puts the working directory first on sys.path, before PYTHONPATH.
        proc = subprocess.Popen(_command(crawler, server.start_url, Path(tmp) / "out", budget, delay, src),
                                env=env, cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.monotonic() - began
        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        proc.stderr and proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{crawler} failed: {err[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m sbcrawl_dev bench throughput", description=__doc__.split("\n\n")[0])
    p.add_argument("--profiles", default="dev-archive,dev-hubs")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--latency-ms", type=float, default=20.0)
    p.add_argument("--delays", default="0,0.2")
    p.add_argument("--budget", type=int, default=1000, help="requests per run without a delay")
    p.add_argument("--budget-delayed", type=int, default=200, help="requests per run with a delay")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--crawlers", default="before,sbcrawl-c1,sbcrawl-c8,sbcrawl-c16,scrapy-16")
    p.add_argument("--baseline-src", type=Path, help="folder with an earlier airflow_sbcrawl package")
    p.add_argument("--eval-dir", type=Path, default=EVAL)
    p.add_argument("--out", type=Path, default=Path("bench-throughput"))
    args = p.parse_args(argv)
    crawlers = [c for c in args.crawlers.split(",") if c]
    if "before" in crawlers and args.baseline_src is None:
        crawlers.remove("before")
        print("no --baseline-src: the 'before' row is left out", file=sys.stderr)
    if "scrapy-16" in crawlers:
        try:
            import scrapy  # noqa: F401
        except ImportError:
            crawlers.remove("scrapy-16")
            print("Scrapy is not installed (pip install -e '.[peers]'): its row is left out", file=sys.stderr)
    args.out.mkdir(parents=True, exist_ok=True)
    runs: list[Run] = []
    for profile in args.profiles.split(","):
        for delay in (float(d) for d in args.delays.split(",")):
            budget = args.budget if delay == 0 else args.budget_delayed
            for rnd in range(args.runs):
                for crawler in crawlers:  # interleaved: a slow spell of the machine hits every crawler alike
                    with tempfile.TemporaryDirectory() as tmp:
                        server = Server(args.eval_dir, profile, args.seed, args.latency_ms, Path(tmp) / "log.jsonl")
                        try:
                            wall, cpu = run_once(crawler, server, budget, delay, args.baseline_src)
                        finally:
                            requests = server.requests()
                    run = Run(profile, delay, crawler, rnd, requests, round(wall, 3), round(cpu, 3))
                    runs.append(run)
                    print(f"{profile} delay {delay:g} round {rnd} {crawler:12s} {requests:5d} requests "
                          f"{run.rps:7.1f}/s  {run.cpu_ms_per_request:6.2f} ms CPU/request", flush=True)
    with (args.out / "runs.jsonl").open("w") as fh:
        for run in runs:
            fh.write(json.dumps({**asdict(run), "rps": run.rps, "cpu_ms_per_request": run.cpu_ms_per_request}) + "\n")
    table = summarise(runs, crawlers, args.latency_ms)
    (args.out / "table.md").write_text(table)
    print(table)
    return 0


def summarise(runs: list[Run], crawlers: list[str], latency_ms: float) -> str:
    lines = [f"Served with {latency_ms:g} ms latency per request; medians of the rounds; requests counted by the "
             "server, CPU (user + system) of the crawler's process.", "",
             "| profile | delay | crawler | requests | requests/s | CPU ms/request | rps vs before | "
             "rps vs scrapy-16 | CPU vs scrapy-16 |", "|---|---|---|---|---|---|---|---|---|"]
    groups: dict[tuple[str, float], dict[str, list[Run]]] = {}
    for run in runs:
        groups.setdefault((run.profile, run.delay), {}).setdefault(run.crawler, []).append(run)
    for (profile, delay), by_crawler in groups.items():
        med = {c: (statistics.median(r.rps for r in rs), statistics.median(r.cpu_ms_per_request for r in rs),
                   statistics.median(r.requests for r in rs)) for c, rs in by_crawler.items()}
        for crawler in crawlers:
            if crawler not in med:
                continue
            rps, cpu, requests = med[crawler]
            lines.append(f"| {profile} | {delay:g} | {crawler} | {requests:.0f} | {rps:.1f} | {cpu:.2f} | "
                         f"{_ratio(med, 'before', 0, rps)} | {_ratio(med, 'scrapy-16', 0, rps)} | "
                         f"{_ratio(med, 'scrapy-16', 1, cpu)} |")
    return "\n".join(lines) + "\n"


def _ratio(medians: dict[str, tuple[float, float, float]], other: str, index: int, value: float) -> str:
    base = medians.get(other, (0.0, 0.0, 0.0))[index]
    return f"{value / base:.2f}x" if base else "-"

