"""One request budget over 4 simulated sites of different richness: the bandit of
``airflow_sbcrawl.crawler.shared_budget`` against equal shares (issue 13, item 3).

    .venv/bin/python -m sbcrawl_dev bench shared-budget [--total 4000] [--rounds 5] [--seed 0] [--via engine|dag]

Each site is the simulator's "small" profile with fewer or more datasets per catalogue section; the four are
served on 127.0.0.1 by one proxy (``sim/multisite.py``), site ``i`` as ``www.site<i>.example``, which counts
the requests each site received. Crawls use the default policy and settings (early stopping on), with no
delay between requests and the crawl seed ``--seed``.

The allocation is the DAG's: ``plan_round`` before each round, from the caps and the crawls' reports of the
rounds before (``--rounds`` rounds, then what sites that stopped early left); equal shares are one round of
``total / 4`` requests per site.

``--via engine`` (default) runs each round's crawls here, one after the other, each resuming the site's
crawl from its checkpoint in a local folder. ``--via dag`` runs ``dags/sbcrawl_many_sites.py`` itself with
``dag.test()`` (Airflow on SQLite in a temporary home, SeaweedFS as S3, checkpoints in S3): the code path of
a deployment, once with ``allocation=bandit`` and once with ``allocation=equal``.
Prints the requests (as the servers counted them) and datasets per site under each allocation."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
# datasets per catalogue section, from a site that publishes little to a data portal
RICHNESS = {"poor": (1, 2), "modest": (3, 6), "rich": (12, 30), "richest": (30, 60)}

Outcome = tuple[dict[str, tuple[int, int]], list[dict[str, int]]]  # per site (requests, datasets); caps per round


def sites(seed: int) -> list:
    from sbcrawl_dev.sim.profiles import get_profile
    from sbcrawl_dev.sim.site import Site

    base = get_profile("small")
    return [Site(dataclasses.replace(base, name=f"small-{name}", datasets_per_section=per_section), seed)
            for name, per_section in RICHNESS.items()]


# -- in this process, with the engine -------------------------------------------------------------------------
def _crawl_to(url: str, cap: int, work: Path, seed: int) -> dict[str, Any]:
    """Crawl (or resume) ``url`` up to ``cap`` requests in all; the report a DAG's crawl task returns."""
    from airflow_sbcrawl.crawler.config import CrawlConfig
    from airflow_sbcrawl.crawler.engine import Crawler
    from airflow_sbcrawl.crawler.sinks import LocalSink
    from airflow_sbcrawl.crawler.state import LocalStateStore

    config = CrawlConfig(start_url=url, max_requests=cap, delay=0.0, seed=seed)
    store = LocalStateStore(work / "state")
    summary = Crawler(config, LocalSink(work), store, tmp_dir=str(work)).run(resume=bool(store.checkpoints()))
    return summary.to_dict()


def run_engine(server, total: int, rounds: int, allocation: str, work: Path, seed: int) -> Outcome:
    from airflow_sbcrawl.crawler.shared_budget import plan_round

    urls = server.start_urls
    caps: list[dict[str, int]] = []
    reports: list[dict[str, dict]] = []
    while plan := plan_round(total, urls, caps, reports, rounds=rounds, allocation=allocation):
        caps.append(plan)
        reports.append({url: _crawl_to(url, cap, work / f"{allocation}-{urls.index(url)}", seed)
                        for url, cap in plan.items()})
    last = {url: next((r[url] for r in reversed(reports) if url in r), None) for url in urls}
    return {url: (server.requests(i), last[url]["targets"] if last[url] else 0)
            for i, url in enumerate(urls)}, caps


# -- through the DAG, with Airflow ------------------------------------------------------------------------------
def airflow_home(home: Path) -> None:
    """A throw-away Airflow (SQLite) for ``dag.test()``; set before Airflow is imported."""
    os.environ.update({
        "AIRFLOW_HOME": str(home), "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home}/airflow.db",
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False", "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
        "AIRFLOW__LOGGING__LOGGING_LEVEL": "WARNING",
    })
    subprocess.run([str(Path(sys.executable).with_name("airflow")), "db", "migrate"], check=True,
                   capture_output=True, timeout=600)


def run_dag(server, total: int, rounds: int, allocation: str, prefix: str, seed: int) -> Outcome:
    from airflow.dag_processing.dagbag import DagBag
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    os.environ["SBCRAWL_PREFIX"] = prefix  # a folder of its own: no site memory of another run to start from
    os.environ["SBCRAWL_CRAWL_OPTIONS"] = json.dumps({"delay": 0, "seed": seed})
    bag = DagBag(dag_folder=str(REPO / "dags"))
    if bag.import_errors:
        raise SystemExit(f"the DAGs do not import: {bag.import_errors}")
    dag_run = bag.dags["sbcrawl_many_sites"].test(run_conf={
        "start_urls": server.start_urls, "total_budget": total, "rounds": rounds, "allocation": allocation})
    if str(dag_run.state) != "success":
        raise SystemExit(f"the DAG run {dag_run.run_id} ended {dag_run.state}")
    with create_session() as session:
        row = session.query(XComModel).filter_by(dag_id=dag_run.dag_id, run_id=dag_run.run_id, task_id="report",
                                                 key="return_value").one()
        summary = XComModel.deserialize_value(row)
    table = summary["sites"]
    return ({url: (server.requests(i), table[url]["datasets"] or 0) for i, url in enumerate(server.start_urls)},
            summary["caps_per_round"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sbcrawl_dev bench shared-budget",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--total", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--via", choices=("engine", "dag"), default="engine")
    parser.add_argument("--out", type=Path, default=None, help="also write the table to this file")
    args = parser.parse_args(argv)

    from sbcrawl_dev.sim.multisite import MultiSiteServer

    all_sites = sites(args.seed)
    names = list(RICHNESS)
    results: dict[str, Outcome] = {}
    with tempfile.TemporaryDirectory(prefix="sbcrawl-shared-budget-") as tmp, MultiSiteServer(all_sites) as server:
        os.environ["HTTP_PROXY"] = os.environ["http_proxy"] = server.proxy_url
        os.environ["NO_PROXY"] = os.environ["no_proxy"] = "127.0.0.1,localhost"  # S3 stays direct
        if args.via == "dag":
            from sbcrawl_dev.infra.seaweedfs import SeaweedFS

            airflow_home(Path(tmp) / "airflow")
            with SeaweedFS(Path(tmp) / "sw") as seaweed:
                seaweed.boto3_client().create_bucket(Bucket="bench")
                os.environ.update(seaweed.airflow_env("bench_s3"))
                os.environ.update({"SBCRAWL_BUCKET": "bench", "SBCRAWL_AWS_CONN_ID": "bench_s3",
                                   "SBCRAWL_RETRIES": "0"})
                for allocation in ("equal", "bandit"):
                    server.reset_log()
                    results[allocation] = run_dag(server, args.total, args.rounds, allocation,
                                                  f"{allocation}-{args.seed}", args.seed)
        else:
            for allocation in ("equal", "bandit"):
                server.reset_log()
                results[allocation] = run_engine(server, args.total, args.rounds, allocation, Path(tmp), args.seed)

    equal, bandit = results["equal"][0], results["bandit"][0]
    urls = list(equal)
    lines = [f"Shared budget of {args.total} requests over 4 sites ({args.rounds} rounds, site and crawl seed "
             f"{args.seed}, via {args.via}; requests as the servers counted them)", "",
             "| site | datasets on site | equal: requests | equal: datasets | bandit: requests | bandit: datasets |",
             "|---|---|---|---|---|---|"]
    for name, site, url in zip(names, all_sites, urls, strict=True):
        lines.append(f"| {name} | {len(site.targets)} | {equal[url][0]} | {equal[url][1]} | {bandit[url][0]} | "
                     f"{bandit[url][1]} |")
    lines.append(f"| **total** | {sum(len(s.targets) for s in all_sites)} | "
                 f"{sum(v[0] for v in equal.values())} | {sum(v[1] for v in equal.values())} | "
                 f"{sum(v[0] for v in bandit.values())} | {sum(v[1] for v in bandit.values())} |")
    label = dict(zip(urls, names, strict=True))
    lines += ["", "Bandit caps per round (cumulative requests per site):"]
    lines += [f"  round {i + 1}: {({label[u]: c for u, c in plan.items()})}"
              for i, plan in enumerate(results["bandit"][1])]
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    return 0
