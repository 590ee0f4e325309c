"""Crawl many sites in parallel with one request budget for all of them, shared by yield.

The trigger form takes the sites (``start_urls``), the ``total_budget`` of requests, the ``allocation``
(``bandit``: by yield; ``equal``: equal shares) and the number of ``rounds``. The budget goes out in rounds,
each a task group ``round_<n>``:

* ``allocate`` gives every site that still has something to crawl its cap for the round (its cumulative
  request budget), from the caps and the crawls' reports of the rounds before, read from XCom
  (``crawler/shared_budget.py``: an equal warm-up, then a UCB bandit over each site's new datasets per
  request in its last round; a site whose crawl ended on its own gets nothing more). An empty plan ends
  the crawl: the round's crawl expands to nothing and every later round is skipped.
* ``crawl`` is one mapped ``SBCrawlOperator`` task instance per site of the plan (spread over the workers
  like any mapped task), continuing the site's crawl: every round of a site shares one crawl state in S3
  (``crawl_key``), so each resumes from the site's last checkpoint and stops at its new cap.

Why rounds unrolled at parse time: an Airflow DAG cannot loop, and of the ways around that this one keeps
every crawl a task instance of its own (parallel on the workers, retried alone, its logs and state where
the UI shows them) and every allocation a task whose inputs are in XCom (re-running it gives the same plan).
A single task driving all the rounds in-process would lose the parallelism and restart every site on a
retry; a chain of self-triggered DAG runs would spread one crawl over several runs. ``MAX_ROUNDS`` rounds are
unrolled; the ``rounds`` Param chooses how many the budget is spread over (more adapt better, each costs a
resume per site), and the rounds left after it hand out what sites that stopped early left.

The budget is exact: the caps of a round never add up to more than the budget minus what the rounds before
spent, and a crawl never goes past its cap, retries included (the crawl's budget journal in S3 records
requests before they are sent; a retry resumes with at least what the killed try spent). A site whose crawl
fails (retries exhausted) counts its whole cap as spent and gets nothing more; the others go on, and the
run fails at the end (``check``), naming it. A failed allocation (a bug, not a site) skips the rounds after
it and fails the run too. Clearing a crawl task resumes that site's crawl: what it spent
stays spent, so a cleared run never exceeds the budget either; trigger a new run to crawl again (it starts
warm from each site's memory).

``report`` emits each site's manifest Asset event once, after its last round (ingestion DAGs scheduled on
the manifests see one event per site and run, not one per round), and returns the table of what each site
spent and retrieved per round.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from airflow.providers.common.compat.sdk import AirflowFailException, AirflowSkipException
from airflow.sdk import DAG, Asset, AssetAlias, TaskGroup, TriggerRule, task

from airflow_sbcrawl.crawler.shared_budget import plan_round, rounds_history
from airflow_sbcrawl.operators.crawl import MANIFEST_ALIAS, SBCrawlOperator, manifest_event_extra
from airflow_sbcrawl.params import site_list_params
from airflow_sbcrawl.settings import CrawlSettings, load_providers

#: Rounds unrolled in the DAG: the most a run can have (the ``rounds`` Param is bounded by it).
MAX_ROUNDS = 8

settings = CrawlSettings.from_env(dags_folder=Path(__file__).parent)
default_sites = [p.start_url for p in load_providers(settings.providers_file)]


def crawl_key(index: int) -> str:
    """The key of the crawl state every round of the ``index``-th site shares (unique even for two start
    URLs on one host)."""
    return f"site-{index:03d}"


def rounds_so_far(ti: Any, urls: list[str], upto: int) -> tuple[list[dict[str, int]], list[dict[str, dict]]]:
    """The caps (start URL -> cap) and the crawls' reports (start URL -> report) of the rounds among
    1..``upto`` that crawled, from XCom. A site of a plan without a report is one whose crawl failed."""
    by_key = {crawl_key(i): url for i, url in enumerate(urls)}
    caps: list[dict[str, int]] = []
    reports: list[dict[str, dict]] = []
    for n in range(1, upto + 1):
        plan = ti.xcom_pull(task_ids=f"round_{n}.allocate")
        if not plan:  # not planned, or planned empty: the crawl ended before this round
            break
        results = ti.xcom_pull(task_ids=f"round_{n}.crawl") or []
        results = [results] if isinstance(results, dict) else results
        caps.append({kwargs["start_url"]: int(kwargs["max_requests"]) for kwargs in plan})
        reports.append({by_key[r["crawl_key"]]: r for r in results if r and r.get("crawl_key") in by_key})
    return caps, reports


with DAG(
    dag_id="sbcrawl_many_sites",
    description="Crawl many statistics sites in parallel, one request budget shared by yield",
    doc_md=__doc__,
    schedule=None,
    start_date=datetime(2025, 1, 1),
    catchup=False,
    tags=["sbcrawl"],
    params=site_list_params(default_sites, MAX_ROUNDS),
    default_args=settings.default_args,  # the crawls' bucket, prefix, connection and retries
) as dag:
    # The bookkeeping tasks below read the params and XCom and compute: waiting does not mend their failures
    # (bad input or a bug), so they fail at once instead of taking the crawls' retries.

    @task(retries=0)
    def sites(**context) -> list[str]:
        urls = list(dict.fromkeys(context["params"]["start_urls"]))  # one crawl per site, not per duplicate
        if not urls:
            raise ValueError("start_urls is empty")
        return urls

    @task(retries=0)
    def allocate(urls: list[str], round_number: int, **context) -> list[dict[str, Any]]:
        """The round's crawls: start URL, cumulative cap and crawl key of each site given requests."""
        params = context["params"]
        caps, reports = rounds_so_far(context["ti"], urls, round_number - 1)
        if len(caps) < round_number - 1:  # a round before was not planned (its allocation failed)
            raise AirflowSkipException(f"round {round_number - 1} has no plan")
        plan = plan_round(int(params["total_budget"]), urls, caps, reports, rounds=int(params["rounds"]),
                          allocation=params["allocation"])
        history, _ = rounds_history(urls, caps, reports)
        spent = {url: rounds[-1][0] if rounds else 0 for url, rounds in history.items()}
        for url, cap in plan.items():
            print(f"round {round_number}: {url} up to {cap} requests in all (+{cap - spent[url]})")
        if not plan:
            print(f"round {round_number}: nothing to allocate (budget spent, every site done, or equal shares)")
        index = {url: i for i, url in enumerate(urls)}
        return [{"start_url": url, "max_requests": cap, "crawl_key": crawl_key(index[url])}
                for url, cap in plan.items()]

    @task(retries=0, trigger_rule=TriggerRule.ALL_DONE, outlets=[AssetAlias(MANIFEST_ALIAS)])
    def report(urls: list[str], **context) -> dict[str, Any]:
        """One manifest Asset event per site crawled (its last report), and what each site spent and found."""
        caps, reports = rounds_so_far(context["ti"], urls, MAX_ROUNDS)
        events = context["outlet_events"]
        table, failed = {}, []
        for url in urls:
            rounds = [(round_caps[url], rep.get(url)) for round_caps, rep in zip(caps, reports, strict=True)
                      if url in round_caps]
            done = [r for _, r in rounds if r]
            failed += [url] if any(r is None for _, r in rounds) else []  # never given requests is not failed
            last = done[-1] if done else None
            if last is not None:
                events[AssetAlias(MANIFEST_ALIAS)].add(Asset(last["manifest_uri"]), extra=manifest_event_extra(last))
            table[url] = {"site": last["site"] if last else None,
                          "requests": last["requests"] if last else None,
                          "datasets": last["targets"] if last else None,
                          "stop_reason": last["stop_reason"] if last else None,
                          "caps": [cap for cap, _ in rounds]}
        total = int(context["params"]["total_budget"])
        spent = sum(row["requests"] or 0 for row in table.values())
        print(f"{spent} of {total} requests spent in {len(caps)} rounds; datasets: "
              + ", ".join(f"{url} {row['datasets']}" for url, row in table.items()))
        return {"total_budget": total, "requests": spent, "rounds": len(caps), "caps_per_round": caps,
                "sites": table, "failed": failed}

    # Also downstream of every allocation, so that a failed one fails the run (skipped ones are the norm).
    @task(retries=0, trigger_rule=TriggerRule.NONE_FAILED)
    def check(summary: dict[str, Any]) -> None:
        """Fail the run when a site's crawl failed (its retries spent), after the others went on."""
        if summary["failed"]:
            raise AirflowFailException(f"the crawl of {', '.join(summary['failed'])} failed; the other sites "
                                       "were crawled and their manifests announced")

    urls = sites()
    previous: list[Any] = []
    round_tasks: list[Any] = []
    plans: list[Any] = []
    for n in range(1, MAX_ROUNDS + 1):
        with TaskGroup(f"round_{n}", tooltip=f"allocation and crawls of round {n}"):
            # From round 2 on: run after every crawl of the round before is done, failed ones included (that
            # site gets nothing more); skipped when the round before crawled nothing (the crawl is over).
            plan = allocate.override(trigger_rule=TriggerRule.ALL_SUCCESS if n == 1 else TriggerRule.NONE_SKIPPED)(
                urls, n)
            crawls = SBCrawlOperator.partial(
                task_id="crawl",
                crawl_options=settings.crawl_options,
                manifest_event=False,  # a round may not be the site's last: report() announces the manifests
                map_index_template="{{ task.start_url }}",
            ).expand_kwargs(plan)
        previous >> plan
        previous = [plan, crawls]
        round_tasks += previous
        plans.append(plan)
    summary = report(urls)
    round_tasks >> summary
    plans >> check(summary)
