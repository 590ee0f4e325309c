"""What a response means for the crawl (Algorithm 4): a page is read, a target stored, a 304 or a 404 noted.

A page's work is a small tree (``work.PageWork``): first the known datasets it listed last time are checked
(a file that moved is then recognised by its validators at its old URL before its new URL is met among the
links), then its links are read: predicted targets are fetched as part of its work, its other links go to
the scheduler once its reward is known. A predicted target that turns out to be a page is read as part of
the page that linked it, and adds its reward to that page's."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Container

from airflow_sbcrawl.crawler.budget import CrawlInterrupted
from airflow_sbcrawl.crawler.classify import HTML, TARGET
from airflow_sbcrawl.crawler.config import CrawlConfig
from airflow_sbcrawl.crawler.downloader import Downloader
from airflow_sbcrawl.crawler.equivalence import Equivalences
from airflow_sbcrawl.crawler.fetch import Response
from airflow_sbcrawl.crawler.frontier import LinkTable
from airflow_sbcrawl.crawler.html import charset_of, extract_links, head_links
from airflow_sbcrawl.crawler.labelling import LinkLabeller
from airflow_sbcrawl.crawler.manifest import Manifest
from airflow_sbcrawl.crawler.policies.base import NewLink, Policy
from airflow_sbcrawl.crawler.robots import RobotsRules
from airflow_sbcrawl.crawler.runstate import RunState
from airflow_sbcrawl.crawler.scheduler import Scheduler
from airflow_sbcrawl.crawler.urls import Scope, extension, host_of
from airflow_sbcrawl.crawler.warm import Changes, Observations, link_contexts
from airflow_sbcrawl.crawler.work import Job, PageWork

log = logging.getLogger(__name__)

OFF_SITE_PAGE = "link on a host allowed for files, not predicted a file (not fetched)"
# A predicted target that turns out to be an HTML page is read for links; this bounds that nesting.
_MAX_NESTING = 3


class PageReader:
    """Takes each answered request (``answer``) to what it means, queueing the requests a page's work needs
    on the ``downloader``; calls ``finished(link_id, reward)`` when the work of a page the scheduler handed
    out (``link_id``; None for the start page) is done. ``record``: the run keeps observations for a
    site memory; ``outcomes`` counts the links dropped for their length; ``equivalences`` learns from the
    pages read which URLs are one page, and says which form a new link is queued in."""

    def __init__(self, config: CrawlConfig, links: LinkTable, scope: Scope, robots: RobotsRules, policy: Policy,
                 labeller: LinkLabeller, scheduler: Scheduler, downloader: Downloader, manifest: Manifest,
                 changes: Changes, observations: Observations, *, record: bool,
                 finished: Callable[[int | None, int], None], outcomes: Counter[str],
                 equivalences: Equivalences) -> None:
        self.config = config
        self.links = links
        self.scope = scope
        self.robots = robots
        self.policy = policy
        self.labeller = labeller
        self.scheduler = scheduler
        self.downloader = downloader
        self.manifest = manifest
        self.changes = changes
        self.observations = observations
        self.record = record
        self.finished = finished
        self.outcomes = outcomes
        self.equivalences = equivalences
        self.works: set[PageWork] = set()  # pages whose work is not done
        self.start_error = ""

    def job(self, link_id: int, owner: PageWork | None, *, target: bool = False, nesting: int = 0) -> Job:
        """The request for a link: a page of the scheduler's (``owner`` None) or part of a page's work."""
        url = self.links.urls[link_id]
        return Job(link_id, link_id, url, host_of(url), target, owner, nesting)

    def answer(self, job: Job, resp: Response) -> None:
        """The final answer to a job (after its redirects)."""
        if job.target:
            self.done(job, self._target_fetched(job, resp))
        else:
            self.done(job, self._page_fetched(job, resp))

    def done(self, job: Job, reward: int | None) -> None:
        """A job is done with (``reward`` None: a page is being read, its work reports when done)."""
        if reward is None:
            return
        if job.owner is None:
            self.finished(None if job.start else job.origin, reward)
        else:
            job.owner.reward += reward
            job.owner.pending -= 1
            self._advance(job.owner)

    def wind_down(self) -> None:
        """After an interruption: pages not read yet are parked (read again on resume), links read already
        go to the policy."""
        for work in self.works:
            if not work.links_read:
                self.scheduler.park(work.page_id)
            if work.parent is None:
                self.scheduler.add(work.links)
        self.works = set()

    def _page_fetched(self, job: Job, resp: Response) -> int | None:
        """Algorithm 4 for a page (or a known dataset a page listed); the reward, or None when the page
        is being read (its reward comes when its work is done)."""
        final_id = job.link_id
        if not job.start:
            self.policy.outcome(job.origin, resp.kind)
        if resp.kind == "html":
            self.labeller.learn(job.origin, HTML)
            if self.links.urls[final_id] not in self.scope:
                return 0  # a link to a host allowed for files only (a baseline policy's): never read as a page
            self._read_page(final_id, resp, job.owner, job.origin if job.owner is None and not job.start else None)
            return None
        if resp.kind == "target":
            # A link that is itself a new target is worth one target for one request, the best any action
            # can do (Algorithm 4 gives it no reward; then targets the classifier missed teach nothing).
            self.labeller.learn(job.origin, TARGET)
            reward = self.manifest.store_target(final_id, job.origin, resp)
            if reward and job.owner is None and not job.start:
                self.policy.credit_late(self.links.parent[job.origin], reward)
            return reward
        if resp.kind == "unchanged":
            self._unchanged(job.origin, final_id, resp)
        elif self.changes.gone(job.origin, resp):
            self.manifest.record(job.origin, final_id, "gone", resp)
        elif job.start:
            self.start_error = resp.error or f"{resp.kind} response ({resp.mime or 'no content type'})"
            log.info("start page %s gave no links: %s", job.url, self.start_error)  # the result says it
        return 0

    def _target_fetched(self, job: Job, resp: Response) -> int | None:
        """A predicted target: 1 for a new target retrieved; a page the classifier took for a target is
        read anyway (its GET is paid for), as part of the page that linked to it."""
        if resp.kind == "target":
            self.labeller.learn(job.origin, TARGET)
            return self.manifest.store_target(job.link_id, job.origin, resp)
        if resp.kind == "html":
            self.labeller.learn(job.origin, HTML)
            if self.links.urls[job.link_id] not in self.scope:
                return 0  # on a host allowed for files only: a page there is never read
            self._read_page(job.link_id, resp, job.owner, None, nesting=job.nesting + 1)
            return None
        if resp.kind == "unchanged":
            self._unchanged(job.origin, job.link_id, resp)
        return 0

    def _unchanged(self, link_id: int, final_id: int, resp: Response) -> None:
        """A 304 to a conditional GET: a known dataset (maybe met at a new URL) or a page is as it was."""
        known_id = self.changes.known_for(link_id)
        if known_id is not None:
            self.manifest.record(known_id, final_id, self.changes.classify(known_id, resp), resp)
            return
        url = self.links.urls[link_id]
        self.observations.unchanged_pages.add(url)
        if self.scheduler.plan is not None:
            self.scheduler.plan.page_unchanged(url)

    # -- reading a page --------------------------------------------------------------------------------
    def _read_page(self, page_id: int, resp: Response, parent: PageWork | None, feedback_id: int | None,
                   nesting: int = 0) -> None:
        url = self.links.urls[page_id]
        self.equivalences.page_read(url, resp.body)
        head = head_links(resp.body, url)
        if head.canonical is not None:
            self.equivalences.canonical(url, head.canonical, self.links)
        if head.alternates:
            self.equivalences.alternates(url, head.alternates)
        work = PageWork(page_id, resp, nesting, parent, feedback_id)
        self.works.add(work)
        checks = self._observe(self.links.urls[page_id], resp)
        for known_id in checks:
            self.downloader.queue(self.job(known_id, work))
        work.pending = len(checks)
        self._advance(work)

    def _observe(self, url: str, resp: Response) -> list[int]:
        """What a page shows of its links (their contexts): kept for the next site memory (``record``), and
        told to the warm crawl's plan; returns the known datasets to check before the page's links."""
        plan = self.scheduler.plan
        if self.record:
            self.observations.page_headers(url, resp.headers)
        if not self.record and plan is None:
            return []
        page = link_contexts(resp.body, url, charset_of(resp.headers.get("content-type")),
                             self.config.max_links_per_page)
        if self.record:
            self.observations.page_links(url, page)
        return plan.page_read(url, page) if plan is not None else []

    def _advance(self, work: PageWork) -> None:
        if work.pending:
            return
        if not work.links_read:
            work.links_read = True
            self.read_links(work)
            if work.pending:
                return
        self.works.discard(work)
        if work.parent is not None:
            work.parent.reward += work.reward
            work.parent.pending -= 1
            self._advance(work.parent)
            return
        self.scheduler.add(work.links)
        self.finished(work.feedback_id, work.reward)

    def _known(self) -> Container[str]:
        """The URLs a page's links are new against: the link table's, noting on the way the targets a resume
        counted from their rows that the re-crawl meets again (``RunState.remet``)."""
        run = self.manifest.run
        return _Remeeting(self.links.ids, run) if run.replayed_unmet else self.links.ids

    def read_links(self, work: PageWork) -> None:
        """A page's new links: predicted targets are queued at once, as part of the page's work; the others
        wait in ``work.links`` (its root's) for the page's reward."""
        resp, work.resp = work.resp, None
        assert resp is not None
        page_url = self.links.urls[work.page_id]
        depth = self.links.depth[work.page_id] + 1
        root = work.root()
        new: list[NewLink] = []
        off_site: set[int] = set()  # new links on hosts allowed for files only
        known = self._known()
        relinks = _Recording(known) if self.policy.counts_relinks else None
        links = extract_links(resp.body, page_url, charset_of(resp.headers.get("content-type")),
                              self.config.max_links_per_page, known=relinks or known, dropped=self.outcomes,
                              rows=self.policy.reads_rows)
        if relinks is not None and relinks.hits:
            ids = self.links.ids
            self.policy.relinked([ids[url] for url in dict.fromkeys(relinks.hits) if ids[url] != work.page_id])
        if isinstance(known, _Remeeting):
            # What the uninterrupted crawl would have earned this page: it found those targets here.
            work.reward += known.met
        self.equivalences.page_links(page_url, [link.url for link in links])
        for link in links:
            url = self.equivalences.preferred(link.url, self.links)
            if url in self.links or extension(url) in self.config.blocked_extensions:
                continue
            if url not in self.scope:
                if not self.scope.allows_file(url):
                    continue
                off_site.add(len(new))
            try:
                allowed = self.robots.allowed(url)  # may fetch a new subdomain's robots.txt
            except CrawlInterrupted:
                # The page's remaining links are unread: keep what was taken, read the page again on resume.
                root.links.extend(new)
                self.scheduler.park(work.page_id)
                raise
            if allowed:
                new.append(NewLink(self.links.add(url, depth, work.page_id, link.tag_path), url, link.tag_path,
                                   link.anchor, depth, link.title, link.row))
        if not self.policy.classifies_links:
            root.links.extend(new)  # (a file host's link that is a page is not read: _page_fetched)
            return
        pages: list[NewLink] = []
        handled = 0
        try:
            plan = self.scheduler.plan
            for i, (link, label) in enumerate(zip(new, self.labeller.labels(new), strict=True)):
                if label == TARGET and plan is not None and (plan.asked_before(link) or plan.moved_file(link)):
                    pass  # asked after the warm crawl's revisits
                elif label == TARGET and work.nesting < _MAX_NESTING:
                    self.downloader.queue(self.job(link.id, work, target=True, nesting=work.nesting))
                    work.pending += 1
                elif i in off_site:
                    self.outcomes[OFF_SITE_PAGE] += 1
                elif label is not None:
                    pages.append(link)
                handled += 1
        except CrawlInterrupted:
            # Not labelled yet: into the frontier, so a resume crawls them (a file host's as a file).
            pages.extend(new[handled:])
            raise
        finally:
            root.links.extend(self.scheduler.claim(pages))


class _Recording:
    """A container of known URLs that notes the URLs asked of it that it holds: the known links of a page."""

    def __init__(self, known: Container[str]) -> None:
        self.known = known
        self.hits: list[str] = []

    def __contains__(self, url: object) -> bool:
        if url in self.known:
            self.hits.append(url)  # type: ignore[arg-type]
            return True
        return False


class _Remeeting:
    """The link table's URLs as a container, telling ``run`` of each one a replayed target waits for."""

    def __init__(self, known: Container[str], run: RunState) -> None:
        self.known = known
        self.run = run
        self.met = 0  # replayed targets met

    def __contains__(self, url: object) -> bool:
        if url in self.run.replayed_unmet:
            self.run.remet(url)  # type: ignore[arg-type]
            self.met += 1
        return url in self.known
