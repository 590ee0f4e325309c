"""Redirects, followed by hand: each hop is a request of its own, counted in the budget, and must stay in
the crawl's scope, be allowed by robots.txt and lead to a URL not seen before (which breaks loops)."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from airflow_sbcrawl.crawler.equivalence import Equivalences
from airflow_sbcrawl.crawler.fetch import Response
from airflow_sbcrawl.crawler.frontier import LinkTable
from airflow_sbcrawl.crawler.robots import RobotsRules
from airflow_sbcrawl.crawler.urls import TOO_LONG, Scope, host_of, resolve, too_long
from airflow_sbcrawl.crawler.work import Job


class Redirects:
    """Decides a redirect's next hop (``next_hop``); a hop's URL joins the link table once its answer is in
    (``answered``). Why a redirect was not followed is counted in ``outcomes``; each redirect in scope
    teaches ``equivalences`` a pair of equal URLs."""

    def __init__(self, max_redirects: int, scope: Scope, links: LinkTable, robots: RobotsRules,
                 outcomes: Counter[str], equivalences: Equivalences) -> None:
        self.max_redirects = max_redirects
        self.scope = scope
        self.links = links
        self.robots = robots
        self.outcomes = outcomes
        self.equivalences = equivalences
        self._asked: set[str] = set()  # URLs of hops sent and not answered yet

    def next_hop(self, job: Job, resp: Response) -> Job | None:
        """The request for the next hop of a redirect, or None when it is not followed. Raises
        CrawlInterrupted when asking the target's robots.txt hits the budget or a stop."""
        target = self._target(job.url, resp, job.hops, self.outcomes)
        if target is None:
            return None
        if target in self.links or target in self._asked:
            self.outcomes["redirect to a known URL (not followed)"] += 1
            return None
        if not self.robots.allowed(target):
            self.outcomes["redirect disallowed by robots.txt"] += 1
            return None
        self._asked.add(target)
        return replace(job, url=target, host=host_of(target), hops=job.hops + 1)

    def head_hop(self, url: str, resp: Response, hops: int) -> str | None:
        """Where a HEAD's redirect leads (the URL classifier's first labels, ``labelling``), or None when it
        is not followed: as a GET's redirect, except that a URL the crawl knows is asked too (a HEAD reads
        no body, and what is wanted is the label of the link that led there). Not counted in ``outcomes``:
        the link's GET meets the same redirect and counts it. Raises CrawlInterrupted as ``next_hop``."""
        target = self._target(url, resp, hops, Counter())
        return target if target is not None and self.robots.allowed(target) else None

    def _target(self, url: str, resp: Response, hops: int, outcomes: Counter[str]) -> str | None:
        """The redirect's target when it is in the crawl's scope and within the hop limit (each such redirect
        teaches ``equivalences`` a pair), else None, the reason counted in ``outcomes``."""
        if hops >= self.max_redirects:
            outcomes["too many redirects"] += 1
            return None
        target = resolve(url, resp.location or "")
        if target is None and too_long(url, resp.location or ""):
            outcomes[TOO_LONG] += 1
            return None
        # A link may move to a host allowed for files (what it finds there is never read as a page).
        if target is None or not self.scope.allows_file(target):
            outcomes["redirect out of scope (not followed)"] += 1
            return None
        self.equivalences.learn(url, target)  # the site's own word that both URLs are one page
        return target

    def answered(self, job: Job) -> None:
        """A hop was answered: its URL joins the link table, placed as the link it was redirected from."""
        self._asked.discard(job.url)
        prev = job.link_id
        job.link_id = self.links.add(job.url, self.links.depth[prev], self.links.parent[prev],
                                     self.links.tag_path(prev) or None)

    def forget(self) -> None:
        """After an interruption: the hops in flight are asked again from their start on resume."""
        self._asked = set()
