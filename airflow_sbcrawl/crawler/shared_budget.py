"""One request budget shared by the crawls of several sites, allocated in rounds by a bandit over sites.

An Anthelion-style use for our users (issue 13): when one DAG crawls many provider sites, equal shares give
a poor site as many requests as a rich one, and what a site that stops early leaves is lost. Here the
budget goes out in rounds: each round is cut into chunks, and each chunk goes to the site with the highest
UCB index, its recent yield (new datasets per request in its last round, pooled with the rounds before when
the last was shorter than the warm-up, relative to the best site's) plus an exploration bonus that shrinks
with the requests it already had. Sites whose crawl ended on its own
(frontier exhausted, early stop) get nothing more, so their leftover goes to the others.

The plan is a pure function of the progress so far, so a DAG can call it between rounds with what the
crawls reported (requests spent, datasets stored, finished or not) and nothing else to persist: each site's
next crawl resumes from its checkpoint with the returned cap as its (cumulative) ``max_requests``.
:func:`plan_round` is that call as the ``sbcrawl_many_sites`` DAG makes it: the caps of the rounds so far
and the crawls' reports in, the next round's caps out."""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from typing import Any

#: The stop reason of a crawl that would go on with more requests (the engine's budget says it so); any
#: other ending (frontier exhausted, early stop, byte budget spent) means the site needs no more.
REQUEST_BUDGET_SPENT = "request budget spent"
#: Allocations a DAG run can choose: the bandit, or the comparison of equal shares in one round.
ALLOCATIONS = ("bandit", "equal")
#: A round is handed out in about this many chunks (the bandit's grain), whatever its size.
CHUNKS_PER_ROUND = 16


def next_caps(total: int, history: Mapping[str, Sequence[tuple[int, int]]], finished: Collection[str] = (),
              round_requests: int = 1000, chunk: int = 50, exploration: float = 1.0) -> dict[str, int]:
    """The cumulative request cap of each site for the next round; sites absent from the answer are not
    crawled in it. An empty answer means the budget is spent or every site has finished.

    ``history[site]`` lists the site's cumulative ``(requests, datasets)`` after each round so far (empty
    before its first round). A site never crawled gets an equal share of the round first (warm-up)."""
    if total < 0 or round_requests <= 0 or chunk <= 0:
        raise ValueError("total must be >= 0, round_requests and chunk > 0")
    spent = {site: (rounds[-1][0] if rounds else 0) for site, rounds in history.items()}
    remaining = total - sum(spent.values())
    active = [site for site in history if site not in finished]
    if remaining <= 0 or not active:
        return {}
    budget = min(round_requests, remaining)
    extra = dict.fromkeys(active, 0)
    fresh = [site for site in active if not history[site]]
    if fresh:  # warm-up: every site is tried before any is judged
        share = max(1, budget // len(fresh))
        for site in fresh:
            give = min(share, budget)
            extra[site] += give
            budget -= give
    yields = {site: _recent_yield(history[site]) for site in active if history[site]}
    best = max(yields.values(), default=0.0) or 1.0
    chunks_so_far = {site: max(1.0, spent[site] / chunk) for site in active}
    while budget > 0 and yields:
        n = sum(chunks_so_far[site] + extra[site] / chunk for site in yields)

        def index(site: str, n: float = n) -> float:
            had = chunks_so_far[site] + extra[site] / chunk
            return yields[site] / best + exploration * math.sqrt(math.log(max(n, 2.0)) / had)

        site = max(yields, key=index)
        give = min(chunk, budget)
        extra[site] += give
        budget -= give
    return {site: spent[site] + give for site, give in extra.items() if give > 0}


def _recent_yield(rounds: Sequence[tuple[int, int]]) -> float:
    """New datasets per request over the site's last rounds: the last one, pooled with the rounds before it
    back to at least as many requests as the site's first round (its warm-up share) had.

    One short round is a noisy yield: in a 360-request DAG run a site given 15 requests in round 2 found 8
    datasets in them, and that 0.53 took the whole last round from a site twice as rich, judged on 70."""
    if not rounds:
        return 0.0
    floor = max(1, rounds[0][0])  # (a round that spent no request says nothing)
    last = rounds[-1]
    for i in range(len(rounds) - 1, -1, -1):
        before = rounds[i - 1] if i > 0 else (0, 0)
        requests = last[0] - before[0]
        if requests >= floor or i == 0:
            return (last[1] - before[1]) / requests if requests > 0 else 0.0
    return 0.0


def equal_caps(total: int, sites: Sequence[str]) -> dict[str, int]:
    """The comparison: every site the same share, in one crawl (the first ``total % len(sites)`` sites one
    request more, so that the whole budget is given)."""
    if not sites:
        return {}
    share, rest = divmod(total, len(sites))
    return {site: share + (i < rest) for i, site in enumerate(sites)}


def rounds_history(sites: Sequence[str], caps: Sequence[Mapping[str, int]],
                   reports: Sequence[Mapping[str, Mapping[str, Any]]]) -> tuple[dict[str, list[tuple[int, int]]],
                                                                              set[str]]:
    """Every site's cumulative ``(requests, datasets)`` after each of its rounds, and the sites that need no
    more, from the caps given in each round so far and what each crawl reported (``requests``, ``targets``,
    ``stop_reason``). A site given a cap but without a report (its crawl failed) counts its whole cap as
    spent, the most it can have sent, and gets nothing more: the total stays a bound whatever happened."""
    if len(reports) != len(caps):
        raise ValueError(f"{len(caps)} rounds of caps but {len(reports)} rounds of reports")
    history: dict[str, list[tuple[int, int]]] = {site: [] for site in sites}
    finished: set[str] = set()
    for round_caps, round_reports in zip(caps, reports, strict=True):
        for site, cap in round_caps.items():
            if site not in history:
                raise ValueError(f"a cap was given to {site!r}, which is not one of the sites")
            report = round_reports.get(site)
            if report is None:
                requests, datasets = history[site][-1] if history[site] else (0, 0)
                history[site].append((max(cap, requests), datasets))
                finished.add(site)
                continue
            history[site].append((int(report["requests"]), int(report["targets"])))
            if report.get("stop_reason") != REQUEST_BUDGET_SPENT:
                finished.add(site)
    return history, finished


def plan_round(total: int, sites: Sequence[str], caps: Sequence[Mapping[str, int]],
               reports: Sequence[Mapping[str, Mapping[str, Any]]], *, rounds: int,
               allocation: str = "bandit") -> dict[str, int]:
    """The cumulative caps of the next round (empty: the crawl is over), given the caps and reports of the
    rounds so far (see :func:`rounds_history`).

    ``bandit``: the budget left is spread over the rounds left of ``rounds`` (round ``rounds`` and any
    after it hand out all that is left, which is what sites that stopped early left), each round by
    :func:`next_caps`. ``equal``: one round of :func:`equal_caps`."""
    if allocation not in ALLOCATIONS:
        raise ValueError(f"allocation must be one of {', '.join(ALLOCATIONS)}, got {allocation!r}")
    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    if allocation == "equal":
        return equal_caps(total, sites) if not caps else {}
    history, finished = rounds_history(sites, caps, reports)
    remaining = total - sum(h[-1][0] for h in history.values() if h)
    if remaining <= 0:
        return {}
    rounds_left = max(1, rounds - len(caps))
    round_requests = -(-remaining // rounds_left)
    return next_caps(total, history, finished, round_requests, max(1, round_requests // CHUNKS_PER_ROUND))
