"""The crawl loop of Algorithms 3 and 4: take a link, fetch it, learn from it, checkpoint now and then.

The engine wires the parts of a crawl and moves the work between them; each part has one job:

* ``scheduler.Scheduler``: which link comes next (parked links, the warm crawl's plan, the policy), and when
  early stopping ends the crawl;
* ``downloader.Downloader``: requests queued per host and in flight on the fetch pool, each made by the
  ``fetch.Fetcher`` (politeness, budget, limits);
* ``labelling.LinkLabeller``: new links labelled page or target; ``redirects`` and ``robots``: which URLs
  may be followed; ``manifest.Manifest``: the row of each target in the sink;
* ``warm``: the site memory's side (what the known datasets turned out to be, the revisit plan, the next
  memory); ``runstate.RunState``: the run's tallies.

Each part saves its own state in checkpoints (``_parts``). Requests run concurrently in the fetch pool;
everything else happens on the thread that runs the crawl. The policy hands out one link at a time, and
hears what a page was worth once the page's whole work (``work.PageWork``) is done: its known datasets
checked, its predicted targets fetched."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime

import numpy as np

from airflow_sbcrawl.crawler import checkpoint_v1
from airflow_sbcrawl.crawler import memory as site_memory
from airflow_sbcrawl.crawler import state as ckpt
from airflow_sbcrawl.crawler.budget import Budget, CrawlInterrupted, StopRequested
from airflow_sbcrawl.crawler.classify import LABEL_NAMES, OracleClassifier, UrlClassifier
from airflow_sbcrawl.crawler.config import CrawlConfig
from airflow_sbcrawl.crawler.downloader import Downloader
from airflow_sbcrawl.crawler.earlystop import make_stopper
from airflow_sbcrawl.crawler.equivalence import Equivalences
from airflow_sbcrawl.crawler.fetch import Fetcher, Response
from airflow_sbcrawl.crawler.frontier import LinkTable
from airflow_sbcrawl.crawler.labelling import LinkLabeller
from airflow_sbcrawl.crawler.manifest import Manifest, usable_rows
from airflow_sbcrawl.crawler.mimes import dataset_extensions
from airflow_sbcrawl.crawler.policies import Policy, make_policy
from airflow_sbcrawl.crawler.reader import PageReader
from airflow_sbcrawl.crawler.redirects import Redirects
from airflow_sbcrawl.crawler.robots import RobotsRules, robots_txt_reader, start_allowed
from airflow_sbcrawl.crawler.runstate import CrawlSummary, Progress, RunState
from airflow_sbcrawl.crawler.scheduler import Scheduler
from airflow_sbcrawl.crawler.sinks import Sink
from airflow_sbcrawl.crawler.sitemaps import MAX_BYTES as SITEMAP_MAX_BYTES
from airflow_sbcrawl.crawler.sitemaps import SitemapLinks, SitemapReader, apply_lastmod, document_budget
from airflow_sbcrawl.crawler.spool import ResponseSpool
from airflow_sbcrawl.crawler.state import StateExists
from airflow_sbcrawl.crawler.urls import Scope, host_of
from airflow_sbcrawl.crawler.warm import (
    RECRAWL_SHARE,
    Changes,
    Observations,
    RevisitPlan,
    add_frontier,
    build_memory,
    restore_model,
)
from airflow_sbcrawl.crawler.work import Job

__all__ = ["CrawlSummary", "Crawler", "Progress", "StateExists"]

log = logging.getLogger(__name__)

# Settings a resumed crawl must share with its checkpoint: they shape the saved state itself.
_STRUCTURAL = ("start_url", "policy", "ngram", "dim_log2", "hash_width", "hash_prime", "seed",
               "tagpath_ignore_digits")
# Parts a checkpoint of an older version may lack.
_ADDED_PARTS = frozenset({"equivalences", "sitemaps"})


class Crawler:
    """One budgeted crawl of one site: ``run()`` crawls and returns a ``CrawlSummary``; ``request_stop()``
    (from a signal handler or another thread) makes it checkpoint and return after the current requests.

    ``sink`` receives the targets and the manifest rows; ``store`` (optional) keeps the run state, so that a
    crawl can be resumed; ``memory`` (optional) keeps the site memory: a run that finishes leaves one, and
    the next run starts from it (a warm, incremental crawl) unless ``warm_start`` is False. ``is_target``
    is the truth, needed only by the oracle baselines (simulated sites); ``on_progress`` is called with a
    ``Progress`` after a page at most once per ``progress_every`` seconds (0: after every page); ``tmp_dir``
    holds downloads in progress."""

    def __init__(self, config: CrawlConfig, sink: Sink, store: ckpt.StateStore | None = None, *,
                 run_id: str = "", is_target: Callable[[str], bool] | None = None,
                 on_progress: Callable[[Progress], None] | None = None, tmp_dir: str | None = None,
                 memory: ckpt.StateStore | None = None, warm_start: bool = True,
                 progress_every: float = 0.2) -> None:
        self.config = config
        self.sink = sink
        self.store = store
        self.memory_store = memory
        self.warm_start = warm_start
        self.on_progress = on_progress
        self.progress_every = progress_every
        self.tmp_dir = tmp_dir
        self._stop = threading.Event()
        self._stop_reason = ""
        rng = np.random.default_rng(config.seed)
        # Microseconds: two runs within one second (a small site crawled again at once) must not share an
        # id, or the second would take the first's manifest rows for its own.
        self.run_state = RunState(run_id or datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ"), rng)
        self.scope = Scope(config.start_url, config.target_hosts)
        self.links = LinkTable()
        self.policy: Policy = make_policy(config, rng, is_target=is_target)
        self.classifier = (OracleClassifier(is_target) if self.policy.labels_by_truth else UrlClassifier(
            config.batch_size, seed=config.seed, dataset_extensions=dataset_extensions(config.target_mime_types)
            if self.policy.extension_prior else frozenset(), context_groups=self.policy.link_groups))
        self.equivalences = Equivalences(self.run_state.outcomes)
        self.scheduler = Scheduler(self.policy, make_stopper(config.effective_stop_rule, config),
                                   early_stopping=config.early_stopping, es_expected=config.es_expected,
                                   defer=self.equivalences.defer)
        self.budget = Budget(config.max_requests, config.max_bytes,
                             ckpt.BudgetJournal(store) if store is not None else None,
                             request_lease=getattr(store, "journal_lease", 1))
        self.fetcher = Fetcher(config, self.budget, self._stop, tmp_dir=tmp_dir)
        # A store on local disk keeps the answers since its last checkpoint: a kill then costs no request twice.
        spool_root = getattr(store, "spool_root", None)
        self.spool = self.fetcher.spool = ResponseSpool(spool_root) if spool_root is not None else None
        self.robots = RobotsRules(config.user_agent,
                                  robots_txt_reader(self.fetcher, self.scope, self.run_state.outcomes),
                                  enabled=config.respect_robots, max_crawl_delay=config.max_crawl_delay)
        self.fetcher.host_delay = self.robots.delays  # Crawl-delay lines slow the fetcher down per host
        self.downloader = Downloader(self.fetcher, config.concurrency)
        self.pool = self.downloader.pool  # (its threads' CPU time is the crawl's too)
        self.redirects = Redirects(config.max_redirects, self.scope, self.links, self.robots, self.run_state.outcomes,
                                   self.equivalences)
        self.labeller = LinkLabeller(self.classifier, self.fetcher, self.links, self.run_state,
                                     enabled=self.policy.classifies_links, follow=self.redirects.head_hop)
        # The site memory's side: read at the start of a run (a warm run gets a plan), written at its end.
        self._memory: site_memory.SiteMemory | None = None
        self.changes = Changes(self.links)
        self.observations = Observations()
        self.manifest = Manifest(sink, self.links, self.run_state, self.changes)
        self.sitemap_links = SitemapLinks()
        self.reader = PageReader(config, self.links, self.scope, self.robots, self.policy, self.labeller,
                                 self.scheduler, self.downloader, self.manifest, self.changes, self.observations,
                                 record=memory is not None, finished=self._page_finished,
                                 outcomes=self.run_state.outcomes, equivalences=self.equivalences)
        self._asking: set[int] = set()  # links whose request is in flight or queued (along its redirects)
        self._awaiting = 0  # pages handed out without feedback
        self._ended_early = False  # early stopping ended this run
        self._timer = ckpt.CheckpointTimer(config.checkpoint_every_pages, config.checkpoint_every_seconds)
        self._seq = 0
        self._valid_seq: int | None = None  # the newest checkpoint known sound: retention never drops it
        self._started, self._last_progress = time.monotonic(), 0.0
        self.resumed_from: int | None = None

    @property
    def run_id(self) -> str:
        """The run's id: the one given, else the time it was made (a resume takes its checkpoint's)."""
        return self.run_state.run_id

    # -- control ---------------------------------------------------------------------------------------
    def request_stop(self, reason: str = "stop requested") -> None:
        """Make the crawl stop as soon as it can (thread-safe): requests in flight are aborted, the state is
        checkpointed, ``run`` returns with ``reason`` as its stop reason, and no site memory is written."""
        self._stop_reason = self._stop_reason or reason
        self._stop.set()
        self.fetcher.abort_in_flight()  # a response trickling in must not hold the stop back

    def run(self, resume: bool = False, fresh: bool = False) -> CrawlSummary:
        """Crawl until the budget is spent, early stopping ends it, nothing is left or a stop is requested.

        When the state store holds an unfinished crawl, ``resume`` goes on from its last checkpoint and
        ``fresh`` discards it (not the targets already stored); with neither, ``StateExists`` is raised. A
        finished run's state is discarded without asking. Checkpoints the state at the end, and writes the
        site memory when the run was not stopped from outside."""
        cpu0 = time.thread_time()  # the crawl's own CPU (this thread's and its fetch pool's), not a server's
        self._started = time.monotonic()
        try:
            started = self._prepare(resume, fresh)
            reason = self._loop(started)
        finally:
            self.downloader.close()
            self.fetcher.close()
            if self.spool is not None:
                self.spool.close()
        if self.store is not None:
            self.checkpoint()
        if self.spool is not None and self._stop.is_set():
            self.spool.close()  # kept for the resume
        elif self.spool is not None:
            self.spool.discard()  # a run that ended by itself is not resumed
        self.sink.flush()
        self._write_memory()
        run = self.run_state
        return CrawlSummary(
            start_url=self.config.start_url, policy=self.config.policy, run_id=run.run_id, stop_reason=reason,
            pages=run.pages, targets=run.targets, requests=self.budget.requests, head_requests=run.head_requests,
            bytes=self.budget.bytes, frontier=len(self.scheduler.waiting()),
            actions=len(getattr(self.policy, "actions", ())),
            resumed_from=self.resumed_from, elapsed_s=round(time.monotonic() - self._started, 3),
            cpu_s=round(time.thread_time() - cpu0 + self.pool.cpu_seconds, 3), outcomes=dict(run.outcomes),
            classifier_confusion=dict(run.confusion), start_error=self.reader.start_error, sink=self.sink.describe(),
            warm_from=self._memory.run_id if self.scheduler.plan is not None and self._memory is not None else "",
            changes=self.changes.counts(),
            checks=self.scheduler.plan.settled() if self.scheduler.plan is not None else {})

    def progress(self) -> Progress:
        """The crawl's figures now (safe to call from ``on_progress``)."""
        return Progress(self.run_state.pages, self.run_state.targets, self.budget.requests, self.config.max_requests,
                        self.budget.bytes, len(self.policy), len(getattr(self.policy, "actions", ())),
                        time.monotonic() - self._started)

    # -- start, resume, end ----------------------------------------------------------------------------
    def _prepare(self, resume: bool, fresh: bool) -> bool:
        """Restore or start; returns True when the start page still has to be crawled."""
        memory = None
        if self.memory_store is not None:
            memory = site_memory.load_for_run(self.memory_store, self.config.start_url, discard_unusable=fresh)
        self._memory = memory
        checkpointed = (0, 0)
        if self.store is not None:
            has_state = bool(self.store.checkpoints()) or bool(self.store.journal_lines())
            if has_state and not (resume or fresh) and ckpt.disposable(self.store, memory.run_id if memory else ""):
                fresh = True  # the last run finished and left its memory, or crawled nothing: start afresh
            if has_state and not (resume or fresh):
                raise StateExists(
                    f"a crawl state already exists in {self.store.describe()}: resume it, or start afresh "
                    "(which discards that state, not the targets already stored)")
            if fresh:
                for seq in self.store.checkpoints():
                    self.store.delete(seq)
                self.store.journal_reset()
            elif resume:
                loaded = ckpt.load_latest(self.store)
                if loaded is not None:
                    self._restore(*loaded)
                checkpointed = (self.budget.requests, self.run_state.targets)
                # The journal is never lowered by a fallback to an older checkpoint: spending only grows.
                requests, nbytes = ckpt.BudgetJournal.last_totals(self.store)
                self.budget.restore(max(self.budget.requests, requests), max(self.budget.bytes, nbytes))
                # New checkpoints are numbered above every existing one, unreadable ones included.
                self._seq = max([self._seq, *self.store.checkpoints()])
                if self.tmp_dir and (removed := Fetcher.clean_partial_files(self.tmp_dir)):
                    log.info("removed %d partial downloads left by the interrupted crawl", removed)
            if self.spool is not None and resume and not fresh:
                if waiting := self.spool.resume(self.resumed_from or 0):
                    log.info("%d answers the interrupted crawl received since its checkpoint are replayed, "
                             "not asked again", waiting)
            elif self.spool is not None:
                self.spool.begin(0)  # a run of its own: no other run's answers
        if self.resumed_from is None:  # a new run: warm when a memory exists, unless asked not to be
            self.changes.use(memory if self.warm_start else None)
            if self.changes.memory is not None:
                self._warm_plan(None)
        if resume:
            self.sink.recover_rows(self.run_state.run_id)  # before the replay: their targets count as stored
        self.manifest.replay(warm=self.scheduler.plan is not None, count_as_this_crawl=resume)
        if resume and self.store is not None:
            self.run_state.note_resume(self.resumed_from, self.budget.requests, *checkpointed)
        if self.resumed_from is None or self.run_state.pages == 0:
            # Nothing crawled yet (an interrupted start, or a robots.txt that was unavailable): start over.
            self.scheduler.unpark(self.links.ids.get(self.config.start_url))
            return True
        return False

    def _write_memory(self) -> None:
        """At the end of a run that was not stopped from outside: the site memory for the next run."""
        if self.memory_store is None or self._stop.is_set():
            return
        if self.reader.start_error and self.run_state.pages <= 1 and self.run_state.targets == 0:
            return  # the site was not reached: a memory of nothing would make the next run "incremental"
        rows = [row for row in usable_rows(self.sink.read_rows()) if row.get("run_id") == self.run_state.run_id]
        memory = build_memory(self._memory, self.observations, self.changes.status, rows, self.links,
                              config=self.config, run_id=self.run_state.run_id, policy=self.policy,
                              classifier=self.classifier, frontier=self.scheduler.waiting(),
                              tally=self.scheduler.plan.tally() if self.scheduler.plan is not None else None,
                              drought=self.scheduler.stopper.drought(),
                              promise=self.policy.expected_targets() if self._ended_early else None)
        log.info("site memory %d written to %s", site_memory.save(self.memory_store, memory),
                 self.memory_store.describe())

    def checkpoint(self) -> None:
        """Save the run state in the store (nothing without a store): the settings, the budget spent and every
        part's state under its name. The crawl takes one when nothing is in flight, so a checkpoint never
        holds half of a page's work; ``run(resume=True)`` goes on from the last one."""
        if self.store is None:
            return
        began = time.monotonic()
        self.sink.flush()
        self._seq += 1
        state = {"config": self.config.to_dict(), "budget": {"requests": self.budget.requests,
                                                             "bytes": self.budget.bytes}}
        arrays = {}
        for name, part in self._parts().items():
            state[name] = part.state()
            arrays.update({f"{name}.{key}": value for key, value in part.arrays().items()})
        urls = state["links"].pop("urls")  # the bulk of a checkpoint: a file of its own
        ckpt.save(self.store, self._seq, ckpt.encode(state, arrays, urls), valid=self._valid_seq)
        self._valid_seq = self._seq
        if self.spool is not None:  # kept for a resume from any checkpoint still stored
            self.spool.begin(self._seq, keep_from=min(self.store.checkpoints(), default=self._seq))
        self._timer.saved(self.run_state.pages, began)

    def _restore(self, seq: int, state: dict, arrays: dict[str, np.ndarray], urls: list[str]) -> None:
        """Take back checkpoint ``seq`` (as ``state.load_latest`` reads it): what ``run(resume=True)`` does
        before its first request."""
        if state.get("version") == 1:
            state, arrays = checkpoint_v1.upgrade(state, arrays)
        saved = state["config"]
        for key in _STRUCTURAL:
            mine = getattr(self.config, key)
            if saved.get(key) != mine:
                raise ckpt.ForeignCheckpoint(
                    f"the checkpoint in {self.store.describe()} is of a crawl with {key}={saved.get(key)!r}, "
                    f"not {mine!r}; resume with the same settings or start afresh")
        self._seq = self.resumed_from = self._valid_seq = seq
        state["links"]["urls"] = urls
        self.changes.use(self._memory if "plan" in state else None)
        self.budget.restore(state["budget"]["requests"], state["budget"]["bytes"])
        for name, part in self._parts().items():
            if name not in state and name in _ADDED_PARTS:
                continue  # a checkpoint from before the part existed: it starts empty
            prefix = name + "."
            part.restore(state[name], {k[len(prefix):]: v for k, v in arrays.items() if k.startswith(prefix)})
        self.scheduler.restore_later(self.links)
        if self.changes.memory is not None:
            self._warm_plan(state["plan"])
        self._timer.saved(self.run_state.pages, time.monotonic())

    def _warm_plan(self, state: dict | None) -> None:
        """The warm crawl's plan: made from the memory at a warm start (``state`` None), which also hands the
        model the memory's run learned to the policy and the classifier; or restored."""
        memory = self.changes.memory
        assert memory is not None
        if state is None:
            restore_model(memory, self.config, self.policy, self.classifier)
            self.scheduler.stopper.prior(len(memory.datasets), len(memory.read_urls), memory.drought)
            self.scheduler.inherit_stop(memory.promise)
        self.scheduler.plan = RevisitPlan.for_run(memory, state, self.links, self.changes, self.observations,
                                                  int(RECRAWL_SHARE * self.config.max_requests),
                                                  self.scheduler.add, self.config.start_url)

    def _explore_frontier(self) -> None:
        """A warm run goes on exploring where the last runs stopped: the links they met and never fetched
        (their budget ran out) join the link table, and the policy, restored with its learned model, once the
        plan's revisits and checks are over. Robots.txt is asked again: it may have changed."""
        memory = self.changes.memory
        if memory is None or not memory.frontier or self.scheduler.plan is None:
            return
        fresh = add_frontier(memory, self.links, lambda url: url in self.scope and self.robots.allowed(url))
        self.scheduler.plan.defer(fresh)
        log.info("warm start: %d links of the last runs' frontier to explore", len(fresh))

    def _parts(self) -> dict[str, ckpt.Saved]:
        """What a checkpoint holds, by name: each part saves and restores its own state."""
        parts: dict[str, ckpt.Saved] = {
            "run": self.run_state, "links": self.links, "policy": self.policy, "classifier": self.classifier,
            "scheduler": self.scheduler, "robots": self.robots, "changes": self.changes,
            "observations": self.observations, "equivalences": self.equivalences, "sitemaps": self.sitemap_links}
        if self.scheduler.plan is not None:
            parts["plan"] = self.scheduler.plan
        return parts

    # -- the loop --------------------------------------------------------------------------------------
    def _loop(self, start_pending: bool) -> str:
        try:
            if start_pending and (refusal := self._crawl_start()):
                return refusal
            return self._run_jobs()
        except CrawlInterrupted as exc:
            reason = self._stop_reason or exc.reason
            self._wind_down()
            return reason

    def _run_jobs(self) -> str:
        """Keep the pool busy and take its responses in order of completion, until nothing is left to send
        (a stop, the budget, early stopping, an exhausted frontier). Checkpoints are taken when nothing is
        in flight, so that a checkpoint never holds half of a page's work."""
        while True:
            if self._stop.is_set():
                raise StopRequested(self._stop_reason or "stop requested")
            self._send()
            if not self.downloader.in_flight:
                if self._timer.due:
                    self.checkpoint()
                    continue
                return self._idle_reason()
            done = self.downloader.wait(timeout=0.25)  # bounded, so that a stop is seen
            if done is not None:
                self._complete(*done)

    def _idle_reason(self) -> str:
        """Why nothing could be sent with nothing in flight."""
        if self.scheduler.ends_crawl():
            self._ended_early = True
            return self.scheduler.end_reason()
        self.budget.raise_if_spent()
        return "frontier exhausted: every reachable page was crawled"

    def _wind_down(self) -> None:
        """After an interruption: the requests in flight end (a stop aborts them; what the budget paid
        for is used), and whatever was not done is kept for a resume: unsent requests and pages not read
        are parked, links already read go to the policy."""
        while self.downloader.in_flight:
            done = self.downloader.wait(timeout=0.25)
            if done is not None:
                with contextlib.suppress(CrawlInterrupted):
                    self._complete(*done)
        for link_id in self.downloader.unsent():
            self.scheduler.park(link_id)
        self.reader.wind_down()
        self._asking = set()
        self.redirects.forget()

    def _after_page(self, link_id: int | None = None) -> None:
        run = self.run_state
        run.page_done(self.budget.requests)
        self.scheduler.page_done(run.pages, run.targets_met(), listed=link_id is not None and self.sitemap_links.listed(
            self.links, link_id))
        now = time.monotonic()
        if self.store is not None:
            self._timer.page_done(run.pages, now)
        if self.on_progress is not None and now - self._last_progress >= self.progress_every:
            self._last_progress = now
            self.on_progress(self.progress())

    # -- sending ---------------------------------------------------------------------------------------
    def _crawl_start(self) -> str:
        """Queue the start page; returns why the crawl cannot go on, or "" when it can."""
        url = self.config.start_url
        if url not in self.links:
            self.links.add(url, 0, -1, None)
        link_id = self.links.ids[url]
        try:
            allowed = start_allowed(self.robots, url, self.config.robots_retries, self.config.backoff, self._stop)
        except CrawlInterrupted:
            self.scheduler.park(link_id)  # a resume starts here again
            raise
        if not allowed:
            error = self.reader.start_error = self.robots.problem(url) or f"robots.txt does not allow crawling {url}"
            if self.robots.unavailable(url):
                self.scheduler.park(link_id)  # a passing failure: a resume (or a retry) starts here again
            return error
        if self.config.sitemaps and not self.sitemap_links.read:
            try:
                self._read_sitemaps(url)
            except CrawlInterrupted:
                self.scheduler.park(link_id)  # a resume reads them again, then starts here
                raise
        self._explore_frontier()
        job = self.reader.job(link_id, None)
        job.start = True
        self._awaiting += 1
        self.downloader.queue(job)
        return ""

    def _read_sitemaps(self, url: str) -> None:
        """The start host's sitemaps, read before its start page: in a cold run their URLs join the frontier
        as candidates for the policy; in a warm run an unchanged ``<lastmod>`` vouches for a known page as a
        304 would."""
        outcomes = self.run_state.outcomes

        def fetch(address: str) -> Response:
            outcomes["sitemap"] += 1
            return self.fetcher.fetch(address, max_body=SITEMAP_MAX_BYTES)

        reader = SitemapReader(fetch, self.scope, self.robots.allowed, document_budget(self.config.max_requests))
        entries = reader.read(url, self.robots.sitemaps(url))
        plan, memory = self.scheduler.plan, self.changes.memory
        vouched = 0
        if plan is not None and memory is not None:  # the warm run's one use of <lastmod>
            def unchanged(page: str) -> bool:
                if not plan.page_vouched(page):
                    return False
                self.observations.unchanged_pages.add(page)
                return True
            vouched, _ = apply_lastmod(entries, memory.pages, plan.index.clock, unchanged)
        # A warm run takes only the lastmods: a listed URL entered now would be known when a revisited page
        # links it, and lose the evidence of that link (where it sits on the page), which is what tells the
        # plan a new row from an old one (on small-sitemap, entering them made warm/cold 0.23, from 0.17).
        added = 0 if plan is not None else self.sitemap_links.enter(entries, self.links, self.robots.allowed,
                                                                    self.scheduler.add)
        if reader.documents:
            log.info("sitemaps: %d documents read, %d URLs listed, %d new to the frontier%s", len(reader.documents),
                     len(entries), added, f", {vouched} known pages vouched for by their lastmod" if vouched else "")

    def _send(self) -> None:
        """Send what can go now: the work of pages already read first (it completes their rewards), then
        links from the scheduler, taken one at a time and only when their host is likely to have room, so
        the scheduler decides as late as the pool allows."""
        self.downloader.pump(self._dispatch)
        while self._can_pull():
            link_id = self.scheduler.next(self.downloader.in_flight)
            if link_id is None:
                return
            self._awaiting += 1
            if self.scheduler.handed_before(link_id) or self.links.urls[link_id] in self.manifest.stored:
                self._page_finished(link_id, 0)
                continue
            self.downloader.offer(self.reader.job(link_id, None), self._dispatch)

    def _can_pull(self) -> bool:
        return (not self._timer.due and self.downloader.has_room()
                and not self.scheduler.ends_crawl()
                and self.budget.requests + self.downloader.in_flight < self.budget.max_requests
                and self.budget.bytes < self.budget.max_bytes
                and self._pages_room())

    def _pages_room(self) -> bool:
        """Whether the policy may hand out one more page while ``_awaiting`` pages wait for their feedback."""
        limit = 1 if self.policy.sequential else self.policy.pages_at_once
        return limit is None or self._awaiting < limit

    def _dispatch(self, job: Job) -> None:
        if not job.hops:
            if job.origin in self._asking or (job.owner is not None
                                              and self.links.urls[job.origin] in self.manifest.stored):
                # Asked already (a known dataset checked for two pages at once) or stored since it was queued.
                self.reader.done(job, 0)
                return
            self._asking.add(job.origin)
            # Validators of a known dataset or page; kept along redirects, so a file that moved can still
            # be a 304.
            job.conditions = self.changes.conditions(job.origin)
            form = job.url if job.owner is not None or job.start else self.equivalences.site_form(
                job.url, self.links, self.robots.allowed)
            if form is None:  # a copy of a known URL: not asked
                self._asking.discard(job.origin)
                self.reader.done(job, 0)
                return
            if form != job.url:  # asked as a redirect's next hop would be: the form joins the table once answered
                job.url, job.host, job.hops = form, host_of(form), 1
        self.downloader.send(job)

    # -- one response ----------------------------------------------------------------------------------
    def _complete(self, job: Job, result: Response | BaseException) -> None:
        if isinstance(result, CrawlInterrupted):
            self._asking.discard(job.origin)
            self.scheduler.park(job.origin)  # asked again first on resume
            raise result
        if isinstance(result, BaseException):
            raise result
        resp = result
        self.run_state.count(resp)
        if job.hops:  # a hop's URL joins the link table only once its response is in
            self.redirects.answered(job)
        if (resp.kind != "redirect" and (own := self.equivalences.fallback(job.url, resp)) is not None
                and own not in self.links and self.robots.allowed(own)):
            # A link rewritten by what the site taught failed: its own URL is asked, as a redirect's next hop.
            self.downloader.queue(replace(job, url=own, host=host_of(own), hops=job.hops + 1), first=True)
            return
        if resp.kind == "redirect":
            try:
                hop = self.redirects.next_hop(job, resp)
            except CrawlInterrupted:
                self.scheduler.park(job.origin)  # the whole chain is asked again on resume
                raise
            if hop is not None:
                self.downloader.queue(hop, first=True)
                return
        self._asking.discard(job.origin)
        predicted = self.links.predicted[job.origin]
        if predicted >= 0:
            actual = resp.kind if resp.kind in ("html", "target") else "neither"
            self.run_state.confusion[f"{LABEL_NAMES[predicted]}->{actual}"] += 1
        self.reader.answer(job, resp)

    def _page_finished(self, link_id: int | None, reward: int) -> None:
        """A page handed out by the scheduler (``link_id``) is done with: its feedback, then the crawl's tally."""
        if link_id is not None:
            self.policy.feedback(link_id, reward)
            self.equivalences.page_done(self.links.urls[link_id], reward)
        self._awaiting -= 1
        self._after_page(link_id)
