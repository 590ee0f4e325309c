"""The units of a crawl's work: a request to make (``Job``) and a page being read (``PageWork``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from airflow_sbcrawl.crawler.fetch import Response
from airflow_sbcrawl.crawler.policies.base import NewLink


@dataclass(slots=True, eq=False)
class PageWork:
    """A page being read: the known datasets it listed checked, then its links labelled and its
    predicted targets fetched. Done when nothing of it is pending; a page read as part of another (a
    known dataset that became a page, a predicted target that was one) adds its reward to that one's."""

    page_id: int
    resp: Response | None  # until its links are read
    nesting: int
    parent: PageWork | None
    feedback_id: int | None  # the link the policy handed out, for a page it did
    reward: int = 0
    pending: int = 0
    links_read: bool = False
    links: list[NewLink] = field(default_factory=list)  # for the policy, with those of nested pages

    def root(self) -> PageWork:
        """The page the scheduler handed out that this work is part of."""
        work = self
        while work.parent is not None:
            work = work.parent
        return work


@dataclass(slots=True, eq=False)
class Job:
    """One request to make: for a link (``origin``), at a URL that moves along redirects."""

    origin: int  # parked on an interruption, labelled in the classifier's confusion counts
    link_id: int  # the link of the current hop
    url: str
    host: str
    target: bool  # a predicted target, fetched as part of its owner's work
    owner: PageWork | None  # None: a page from the scheduler (or the start page)
    nesting: int = 0
    hops: int = 0
    start: bool = False
    conditions: dict[str, str] | None = None
