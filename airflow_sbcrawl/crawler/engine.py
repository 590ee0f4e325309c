"""The crawl loop of Algorithms 3 and 4: pick a link, fetch it, learn from it, checkpoint now and then.

Requests run concurrently in a fetch pool (crawler/pool.py); everything else happens on the thread that
runs the crawl. The policy still hands out one link at a time, and hears what a page was worth once the
page's whole work is done: its known datasets checked, its predicted targets fetched."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from array import array
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from email.message import Message

import numpy as np

from airflow_sbcrawl.crawler import memory as site_memory
from airflow_sbcrawl.crawler import state as ckpt
from airflow_sbcrawl.crawler.budget import Budget, BudgetExhausted, CrawlInterrupted, StopRequested
from airflow_sbcrawl.crawler.classify import HTML, LABEL_NAMES, TARGET, OracleClassifier, UrlClassifier
from airflow_sbcrawl.crawler.config import CrawlConfig
from airflow_sbcrawl.crawler.earlystop import make_stopper
from airflow_sbcrawl.crawler.fetch import Fetcher, Response
from airflow_sbcrawl.crawler.frontier import LinkTable
from airflow_sbcrawl.crawler.html import charset_of, extract_links
from airflow_sbcrawl.crawler.mimes import dataset_extensions
from airflow_sbcrawl.crawler.policies import NewLink, Policy, make_policy
from airflow_sbcrawl.crawler.pool import FetchPool
from airflow_sbcrawl.crawler.recrawl import Recrawl
from airflow_sbcrawl.crawler.robots import RobotsRules
from airflow_sbcrawl.crawler.sinks import Sink
from airflow_sbcrawl.crawler.urls import Scope, extension, host_of, resolve

log = logging.getLogger(__name__)

# Settings a resumed crawl must share with its checkpoint: they shape the saved state itself.
_STRUCTURAL = ("start_url", "policy", "ngram", "dim_log2", "hash_width", "hash_prime", "seed",
               "tagpath_ignore_digits")
# Saving a checkpoint grows with the frontier; spacing them by this multiple of the last save's duration
# keeps its share of the crawl's time under 5 % however large the frontier gets.
_CHECKPOINT_SHARE = 20
# Links crawled as a drought's last look before early stopping ends the crawl.
_LAST_LOOK = 30
# A predicted target that turns out to be an HTML page is read for links; this bounds that nesting.
_MAX_NESTING = 3


@dataclass(slots=True, eq=False)
class _Work:
    """A page being read: the known datasets it listed checked, then its links labelled and its
    predicted targets fetched. Done when nothing of it is pending; a page read as part of another (a
    known dataset that became a page, a predicted target that was one) adds its reward to that one's."""

    page_id: int
    resp: Response | None  # until its links are read
    nesting: int
    parent: _Work | None
    feedback_id: int | None  # the link the policy handed out, for a page it did
    reward: int = 0
    pending: int = 0
    links_read: bool = False
    links: list[NewLink] = field(default_factory=list)  # for the policy, with those of nested pages

    def root(self) -> _Work:
        work = self
        while work.parent is not None:
            work = work.parent
        return work


@dataclass(slots=True, eq=False)
class _Job:
    """One request to make: for a link (``origin``), at a URL that moves along redirects."""

    origin: int  # parked on an interruption, labelled in the classifier's confusion counts
    link_id: int  # the link of the current hop
    url: str
    host: str
    target: bool  # a predicted target, fetched as part of its owner's work
    owner: _Work | None  # None: a page from the policy (or the start page)
    nesting: int = 0
    hops: int = 0
    start: bool = False
    conditions: dict[str, str] | None = None


class StateExists(RuntimeError):
    """A crawl state is already there and neither resume nor a fresh start was asked for."""


@dataclass
class Progress:
    pages: int
    targets: int
    requests: int
    max_requests: int
    bytes: int
    frontier: int
    actions: int
    elapsed: float


@dataclass
class CrawlSummary:
    start_url: str
    policy: str
    run_id: str
    stop_reason: str = ""
    pages: int = 0
    targets: int = 0
    requests: int = 0
    head_requests: int = 0
    bytes: int = 0
    frontier: int = 0
    actions: int = 0
    resumed_from: int | None = None
    elapsed_s: float = 0.0
    cpu_s: float = 0.0
    outcomes: dict[str, int] = field(default_factory=dict)
    classifier_confusion: dict[str, int] = field(default_factory=dict)
    start_error: str = ""
    sink: str = ""
    # Incremental crawls: the run whose site memory this one started from ("" = cold), and what the known
    # and new datasets turned out to be (new / changed / unchanged / gone).
    warm_from: str = ""
    changes: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


class Crawler:
    """One budgeted crawl of one site. ``run()`` returns a summary; ``request_stop()`` (from a signal
    handler or another thread) makes it checkpoint and return after the current request."""

    def __init__(self, config: CrawlConfig, sink: Sink, store: ckpt.StateStore | None = None, *,
                 run_id: str = "", is_target: Callable[[str], bool] | None = None,
                 on_progress: Callable[[Progress], None] | None = None, tmp_dir: str | None = None,
                 memory: ckpt.StateStore | None = None, warm_start: bool = True) -> None:
        if config.policy == "sb-oracle" and is_target is None:
            raise ValueError("policy sb-oracle needs the truth: pass is_target (known only for simulated sites)")
        self.config = config
        self.sink = sink
        self.store = store
        # Microseconds: two runs within one second (a small site crawled again at once) must not share an
        # id, or the second would take the first's manifest rows for its own.
        self.run_id = run_id or datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        self.on_progress = on_progress
        self._stop = threading.Event()
        self._stop_reason = ""
        self.rng = np.random.default_rng(config.seed)
        self.scope = Scope(config.start_url)
        self.links = LinkTable()
        self.policy: Policy = make_policy(config, self.rng, is_target=is_target)
        # The paper's variant keeps the paper's classifier: learned from the crawl's labels alone.
        extensions = frozenset() if config.policy == "sb-classifier-paper" else dataset_extensions(
            config.target_mime_types)
        self.classifier = (OracleClassifier(is_target) if config.policy == "sb-oracle"
                           else UrlClassifier(config.batch_size, seed=config.seed, dataset_extensions=extensions))
        self.early = make_stopper(config.effective_stop_rule, config)
        self.journal = ckpt.BudgetJournal(store) if store is not None else None
        self.budget = Budget(config.max_requests, config.max_bytes, self.journal,
                             request_lease=getattr(store, "journal_lease", 1))
        self.tmp_dir = tmp_dir
        self.fetcher = Fetcher(config, self.budget, self._stop, tmp_dir=tmp_dir)
        self.robots = RobotsRules(config.user_agent, self._fetch_robots, enabled=config.respect_robots,
                                  max_crawl_delay=config.max_crawl_delay)
        self.fetcher.host_delay = self.robots.delays  # Crawl-delay lines slow the fetcher down per host
        self.pool: FetchPool[_Job, Response] = FetchPool(self._fetch_job, config.concurrency, self._host_limit)
        # Requests waiting for room in the pool, per host; a link from the policy waiting for its host;
        # pages whose work is not done; redirect targets being asked; pages handed out without feedback.
        self._queue: dict[str, deque[_Job]] = {}
        self._held: _Job | None = None
        self._works: set[_Work] = set()
        self._hops: set[str] = set()
        self._asking: set[int] = set()  # links whose request is in flight or queued (along its redirects)
        self._awaiting = 0
        self._last_host: str | None = None
        self._checkpoint_due = False
        self._last_look: set[int] = set()  # links of a drought's last look not sent yet (they are parked)
        self.outcomes: Counter[str] = Counter()
        # URL classifier prediction -> what the GET found ("HTML->target" …), for reports.
        self.confusion: Counter[str] = Counter()
        self.pages = 0
        self.targets = 0
        self.head_requests = 0
        self.rows_written = 0
        self._seq = 0
        self._pages_at_checkpoint = 0
        self._last_checkpoint = time.monotonic()
        self._checkpoint_cost = 0.0
        self._started = time.monotonic()
        self._last_progress = 0.0
        self.resumed_from: int | None = None
        self.start_error = ""
        # URLs of targets already in the sink: after a resume, rows written after the checkpoint name targets
        # whose links may still sit in the restored frontier; they are skipped, never fetched or listed twice.
        self._stored: set[str] = set()
        # Pages taken from the policy whose GET an interruption (budget, stop) prevented: crawled first on resume.
        self._parked: list[int] = []
        # Requests spent and targets retrieved after each page: the harvest curve of reports.
        self.harvest_requests = array("q")
        self.harvest_targets = array("q")
        # Site memory (crawler/memory.py, recrawl.py): read at the start, written at the end of a finished run.
        self.memory_store = memory
        self.warm_start = warm_start
        self.recrawl = Recrawl(None, config.max_requests, max_links=config.max_links_per_page)
        self._recrawl_state: dict | None = None  # from a checkpoint, until the memory is loaded
        # One entry per resume of this crawl (kept in checkpoints): the report's history across runs.
        self.resumes: list[dict] = []

    # -- control ---------------------------------------------------------------------------------------
    def request_stop(self, reason: str = "stop requested") -> None:
        self._stop_reason = self._stop_reason or reason
        self._stop.set()
        self.fetcher.abort_in_flight()  # a response trickling in must not hold the stop back

    def run(self, resume: bool = False, fresh: bool = False) -> CrawlSummary:
        cpu0 = time.thread_time()  # the crawl's own CPU (this thread's and its fetch pool's), not a server's
        self._started = time.monotonic()
        try:
            started = self._prepare(resume, fresh)
            reason = self._loop(started)
        finally:
            if self.pool.in_flight:  # an error left requests running: nothing will read their answers
                self.fetcher.abort_in_flight()
            self.pool.close()
            self.fetcher.close()
        if self.store is not None:
            self.checkpoint()
        self.sink.flush()
        self._write_memory()
        return CrawlSummary(
            start_url=self.config.start_url, policy=self.config.policy, run_id=self.run_id, stop_reason=reason,
            pages=self.pages, targets=self.targets, requests=self.budget.requests,
            head_requests=self.head_requests, bytes=self.budget.bytes, frontier=len(self.policy),
            actions=len(getattr(self.policy, "actions", ())), resumed_from=self.resumed_from,
            elapsed_s=round(time.monotonic() - self._started, 3),
            cpu_s=round(time.thread_time() - cpu0 + self.pool.cpu_seconds, 3),
            outcomes=dict(self.outcomes), classifier_confusion=dict(self.confusion), start_error=self.start_error,
            sink=self.sink.describe(), warm_from=self.recrawl.memory.run_id if self.recrawl.warm else "",
            changes=self.recrawl.counts(),
        )

    def _prepare(self, resume: bool, fresh: bool) -> bool:
        """Restore or start; returns True when the start page still has to be crawled."""
        memory = (site_memory.load(self.memory_store, self.config.start_url)
                  if self.memory_store is not None else None)
        checkpointed = (0, 0)
        if self.store is not None:
            has_state = bool(self.store.checkpoints()) or bool(self.store.journal_lines())
            if has_state and not (resume or fresh) and self._finished(memory):
                fresh = True  # the last run finished and left its memory: its run state is disposable
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
                checkpointed = (self.budget.requests, self.targets)
                # The journal is never lowered by a fallback to an older checkpoint: spending only grows.
                requests, nbytes = ckpt.BudgetJournal.last_totals(self.store)
                self.budget.restore(max(self.budget.requests, requests), max(self.budget.bytes, nbytes))
                # New checkpoints are numbered above every existing one, unreadable ones included.
                self._seq = max([self._seq, *self.store.checkpoints()])
                if self.tmp_dir and (removed := Fetcher.clean_partial_files(self.tmp_dir)):
                    log.info("removed %d partial downloads left by the interrupted crawl", removed)
        if self.resumed_from is None:  # a new run: warm when a memory exists, unless asked not to be
            self.recrawl = Recrawl(memory if self.warm_start else None, self.config.max_requests, previous=memory,
                                   max_links=self.config.max_links_per_page)
            self.recrawl.seed(self)
        elif self._recrawl_state is not None:
            self.recrawl = Recrawl(memory if self._recrawl_state.get("warm") else None, self.config.max_requests,
                                   previous=memory, max_links=self.config.max_links_per_page)
            self.recrawl.restore(self, self._recrawl_state)
        self._replay_manifest(count_as_this_crawl=resume)
        if resume and self.store is not None:
            self._note_resume(*checkpointed)
        if self.resumed_from is None or self.pages == 0:
            # Nothing crawled yet (an interrupted start, or a robots.txt that was unavailable): start over.
            start_id = self.links.ids.get(self.config.start_url)
            self._parked = [i for i in self._parked if i != start_id]
            return True
        return False

    def _note_resume(self, requests: int, targets: int) -> None:
        """Record a resume in the crawl's history: what the segment after the checkpoint (cut by a kill,
        or lost with a torn checkpoint) spent and retrieved is in the totals, its pages are not known; the
        harvest curve gets its end point so that it matches the totals."""
        lost_requests, replayed = self.budget.requests - requests, self.targets - targets
        if self.resumed_from is None and not lost_requests and not replayed:
            return  # nothing was there: a plain start
        lost_segment = bool(lost_requests or replayed)
        self.resumes.append({"from_checkpoint": self.resumed_from, "lost_requests": lost_requests,
                             "replayed_targets": replayed,
                             "at_page": len(self.harvest_requests) if lost_segment else None})
        if lost_segment:
            self.harvest_requests.append(self.budget.requests)
            self.harvest_targets.append(self.targets)

    def _finished(self, memory: site_memory.SiteMemory | None) -> bool:
        """Whether the run state in the store is that of the run that wrote ``memory`` (so it finished)."""
        if memory is None or not memory.run_id:
            return False
        try:
            loaded = ckpt.load_latest(self.store)
        except ckpt.CheckpointError:
            return False
        return loaded is not None and loaded[1].get("run_id") == memory.run_id

    def _write_memory(self) -> None:
        """At the end of a run that was not stopped from outside: the site memory for the next run."""
        if self.memory_store is None or self._stop.is_set():
            return
        rows = [row for row in self.sink.read_rows() if row.get("run_id") == self.run_id]
        seq = site_memory.save(self.memory_store, self.recrawl.build_memory(self, rows))
        log.info("site memory %d written to %s", seq, self.memory_store.describe())

    def _next_link(self) -> int | None:
        if self._parked:  # pages parked by an interruption come first; the policy never hears of them again
            link_id = self._parked.pop()
            self._last_look.discard(link_id)
            return link_id
        link_id = self.recrawl.next(len(self.policy) > 0, self.pool.in_flight)
        return link_id if link_id is not None else self.policy.next()

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
            if not self.pool.in_flight:
                if self._checkpoint_due:
                    self.checkpoint()
                    continue
                return self._idle_reason()
            done = self.pool.wait(timeout=0.25)  # bounded, so that a stop is seen
            if done is not None:
                self._complete(*done)

    def _early_stop(self) -> bool:
        """Whether early stopping ends the crawl now. A drought gets one look first, as soon as it is long
        for the crawl's rate: the links the policy rates best among those left are crawled. It ends the
        crawl only once it is also long against the whole crawl, and if the frontier does not promise
        ``es_expected`` targets more by what links of its kinds gave so far: the crawl's history is
        dominated by the section that paid first, while thousands of news articles waiting, of which one
        in fifty listed files, still hold datasets."""
        if not self.config.early_stopping or self._last_look:
            return False  # a look's links are still to be sent
        if self.early.should_look and not self.early.looked():
            self.early.note_look()
            links = self.policy.last_look(_LAST_LOOK)
            self._last_look = set(links)
            self._parked.extend(reversed(links))  # the best first
            if links:
                return False
        if not self.early.should_stop:
            return False
        return self.policy.expected_targets() < self.config.es_expected

    def _idle_reason(self) -> str:
        """Why nothing could be sent with nothing in flight."""
        if self._early_stop():
            waiting = self.policy.expected_targets()
            return self.early.reason + (f"; the links left promise {waiting:.1f} targets" if waiting else "")
        if self.budget.requests >= self.budget.max_requests:
            raise BudgetExhausted("request budget spent")
        if self.budget.bytes >= self.budget.max_bytes:
            raise BudgetExhausted("byte budget spent")
        return "frontier exhausted: every reachable page was crawled"

    def _after_page(self) -> None:
        self.pages += 1
        self.early.update(self.pages, self.targets, self.policy.promising())
        self.harvest_requests.append(self.budget.requests)
        self.harvest_targets.append(self.targets)
        now = time.monotonic()
        since = now - self._last_checkpoint
        if self.store is not None and (
            self.pages - self._pages_at_checkpoint >= self.config.checkpoint_every_pages
            or since >= self.config.checkpoint_every_seconds
        ) and since >= _CHECKPOINT_SHARE * self._checkpoint_cost:
            self._checkpoint_due = True
        if self.on_progress is not None and now - self._last_progress >= 0.2:
            self._last_progress = now
            self.on_progress(self.progress())

    def progress(self) -> Progress:
        return Progress(self.pages, self.targets, self.budget.requests, self.config.max_requests, self.budget.bytes,
                        len(self.policy), len(getattr(self.policy, "actions", ())),
                        time.monotonic() - self._started)

    # -- sending ---------------------------------------------------------------------------------------
    def _send(self) -> None:
        """Send what can go now: the work of pages already read first (it completes their rewards), then
        links from the policy, taken one at a time and only when their host is likely to have room, so
        the policy decides as late as the pool allows."""
        for host in list(self._queue):
            jobs = self._queue[host]
            while jobs and self.pool.can_send(host):
                self._dispatch(jobs.popleft())
            if not jobs:
                del self._queue[host]
        if self._held is not None and self.pool.can_send(self._held.host):
            job, self._held = self._held, None
            self._dispatch(job)
        while self._can_pull():
            link_id = self._next_link()
            if link_id is None:
                return
            self._awaiting += 1
            if self.links.urls[link_id] in self._stored:
                self._page_finished(link_id, 0)
                continue
            job = self._job(link_id, None)
            self._last_host = job.host
            if self.pool.can_send(job.host):
                self._dispatch(job)
            else:
                self._held = job

    def _can_pull(self) -> bool:
        return (self._held is None and not self._checkpoint_due
                and self.pool.in_flight < self.pool.size
                and (self._last_host is None or self.pool.can_send(self._last_host))
                and not self._early_stop()
                and self.budget.requests + self.pool.in_flight < self.budget.max_requests
                and self.budget.bytes < self.budget.max_bytes
                and not (self.policy.sequential and self._awaiting))

    def _job(self, link_id: int, owner: _Work | None, *, target: bool = False, nesting: int = 0) -> _Job:
        url = self.links.urls[link_id]
        return _Job(link_id, link_id, url, host_of(url), target, owner, nesting)

    def _queue_job(self, job: _Job, first: bool = False) -> None:
        jobs = self._queue.setdefault(job.host, deque())
        if first:
            jobs.appendleft(job)
        else:
            jobs.append(job)

    def _dispatch(self, job: _Job) -> None:
        if not job.hops:
            if job.origin in self._asking or (job.owner is not None and self.links.urls[job.origin] in self._stored):
                # Asked already (a known dataset checked for two pages at once) or stored since it was queued.
                self._job_done(job, 0)
                return
            self._asking.add(job.origin)
            # Validators of a known dataset or page; kept along redirects, so a file that moved can still
            # be a 304.
            job.conditions = self.recrawl.conditions(job.origin)
        self.pool.send(job.host, job)

    def _fetch_job(self, job: _Job) -> Response:
        """Runs on a pool thread: the request only; what it means is decided back in the engine."""
        return self.fetcher.fetch(job.url, headers=job.conditions)

    def _host_limit(self, host: str) -> int:
        return 1 if self.fetcher.delay_of(host) > 0 else self.config.concurrency

    # -- one response ----------------------------------------------------------------------------------
    def _complete(self, job: _Job, result: Response | BaseException) -> None:
        if isinstance(result, CrawlInterrupted):
            self._asking.discard(job.origin)
            self._parked.append(job.origin)  # asked again first on resume
            raise result
        if isinstance(result, BaseException):
            raise result
        resp = result
        self._count(resp)
        if job.hops:  # a hop's URL joins the link table only once its response is in
            self._hops.discard(job.url)
            prev = job.link_id
            job.link_id = self.links.add(job.url, self.links.depth[prev], self.links.parent[prev],
                                         self.links.tag_path(prev) or None)
        if resp.kind == "redirect" and (hop := self._next_hop(job, resp)) is not None:
            self._queue_job(hop, first=True)
            return
        self._asking.discard(job.origin)
        predicted = self.links.predicted[job.origin]
        if predicted >= 0:
            actual = resp.kind if resp.kind in ("html", "target") else "neither"
            self.confusion[f"{LABEL_NAMES[predicted]}->{actual}"] += 1
        if job.target:
            self._job_done(job, self._target_fetched(job, resp))
        else:
            self._job_done(job, self._page_fetched(job, resp))

    def _next_hop(self, job: _Job, resp: Response) -> _Job | None:
        """Redirects are followed by hand: each hop is a counted request, must stay in scope and allowed
        by robots.txt, and must lead to a URL not seen before (which also breaks redirect loops)."""
        if job.hops >= self.config.max_redirects:
            self.outcomes["too many redirects"] += 1
            return None
        target = resolve(job.url, resp.location or "")
        if target is None or target not in self.scope:
            self.outcomes["redirect out of scope (not followed)"] += 1
            return None
        if target in self.links or target in self._hops:
            self.outcomes["redirect to a known URL (not followed)"] += 1
            return None
        try:
            allowed = self.robots.allowed(target)
        except CrawlInterrupted:
            self._parked.append(job.origin)  # the whole chain is asked again on resume
            raise
        if not allowed:
            self.outcomes["redirect disallowed by robots.txt"] += 1
            return None
        self._hops.add(target)
        return replace(job, url=target, host=host_of(target), hops=job.hops + 1)

    def _page_fetched(self, job: _Job, resp: Response) -> int | None:
        """Algorithm 4 for a page (or a known dataset a page listed); the reward, or None when the page
        is being read (its reward comes when its work is done)."""
        final_id = job.link_id
        if not job.start:
            self.policy.outcome(job.origin, resp.kind)
        if resp.kind == "html":
            self._learn(resp.url, HTML)
            self._read_page(final_id, resp, job.owner, job.origin if job.owner is None and not job.start else None)
            return None
        if resp.kind == "target":
            # A link that is itself a new target is worth one target for one request, the best any action
            # can do (Algorithm 4 gives it no reward; then targets the classifier missed teach nothing).
            self._learn(resp.url, TARGET)
            reward = self._store_target(final_id, job.origin, resp)
            if reward and job.owner is None and not job.start:
                self.policy.credit_late(self.links.parent[job.origin], reward)
            return reward
        if resp.kind == "unchanged":
            self._unchanged(job.origin, final_id, resp)
        elif self.recrawl.gone(job.origin, resp):
            self._record(job.origin, final_id, "gone", resp)
        elif job.start:
            self.start_error = resp.error or f"{resp.kind} response ({resp.mime or 'no content type'})"
            log.warning("start page %s gave no links: %s", job.url, self.start_error)
        return 0

    def _target_fetched(self, job: _Job, resp: Response) -> int | None:
        """A predicted target: 1 for a new target retrieved; a page the classifier took for a target is
        read anyway (its GET is paid for), as part of the page that linked to it."""
        if resp.kind == "target":
            self._learn(resp.url, TARGET)
            return self._store_target(job.link_id, job.origin, resp)
        if resp.kind == "html":
            self._learn(resp.url, HTML)
            self._read_page(job.link_id, resp, job.owner, None, nesting=job.nesting + 1)
            return None
        if resp.kind == "unchanged":
            self._unchanged(job.origin, job.link_id, resp)
        return 0

    def _job_done(self, job: _Job, reward: int | None) -> None:
        if reward is None:  # a page is being read: its work reports to the job's owner when done
            return
        if job.owner is None:
            self._page_finished(None if job.start else job.origin, reward)
        else:
            job.owner.reward += reward
            job.owner.pending -= 1
            self._advance(job.owner)

    def _page_finished(self, link_id: int | None, reward: int) -> None:
        """A page handed out by the policy (``link_id``) is done with: its feedback, then the crawl's tally."""
        if link_id is not None:
            self.policy.feedback(link_id, reward)
        self._awaiting -= 1
        self._after_page()

    def _unchanged(self, link_id: int, final_id: int, resp: Response) -> None:
        """A 304 to a conditional GET: a known dataset (maybe met at a new URL) or a page is as it was."""
        known_id = self.recrawl.known_for(link_id)
        if known_id is None:
            self.recrawl.page_unchanged(self.links.urls[link_id])
        else:
            self._record(known_id, final_id, self.recrawl.classify(known_id, resp), resp)

    # -- reading a page --------------------------------------------------------------------------------
    def _read_page(self, page_id: int, resp: Response, parent: _Work | None, feedback_id: int | None,
                   nesting: int = 0) -> None:
        """Start a page's work: first the known datasets it listed last time are checked (a file that moved
        is then recognised by its validators at its old URL before its new URL is met among the links),
        then its links are read."""
        work = _Work(page_id, resp, nesting, parent, feedback_id)
        self._works.add(work)
        checks = self.recrawl.page_read(self.links.urls[page_id], resp.body,
                                        charset_of(resp.headers.get("content-type")), resp.headers,
                                        record=self.memory_store is not None)
        for known_id in checks:
            self._queue_job(self._job(known_id, work))
        work.pending = len(checks)
        self._advance(work)

    def _advance(self, work: _Work) -> None:
        if work.pending:
            return
        if not work.links_read:
            work.links_read = True
            self._read_links(work)
            if work.pending:
                return
        self._works.discard(work)
        if work.parent is not None:
            work.parent.reward += work.reward
            work.parent.pending -= 1
            self._advance(work.parent)
            return
        self.policy.add(work.links)
        self._page_finished(work.feedback_id, work.reward)

    def _read_links(self, work: _Work) -> None:
        """A page's new links: predicted targets are fetched at once, as part of the page's work; the
        others go to the policy when the page's reward is known."""
        resp, work.resp = work.resp, None
        assert resp is not None
        page_url = self.links.urls[work.page_id]
        depth = self.links.depth[work.page_id] + 1
        root = work.root()
        new: list[NewLink] = []
        for link in extract_links(resp.body, page_url, charset_of(resp.headers.get("content-type")),
                                  self.config.max_links_per_page, known=self.links.ids):
            url = link.url
            if url in self.links or url not in self.scope or extension(url) in self.config.blocked_extensions:
                continue
            try:
                allowed = self.robots.allowed(url)  # may fetch a new subdomain's robots.txt
            except CrawlInterrupted:
                # The page's remaining links are unread: keep what was taken, read the page again on resume.
                root.links.extend(new)
                self._parked.append(work.page_id)
                raise
            if allowed:
                new.append(NewLink(self.links.add(url, depth, work.page_id, link.tag_path), url, link.tag_path,
                                   link.anchor, depth))
        if not self.policy.classifies_links:
            root.links.extend(new)
            return
        pages: list[NewLink] = []
        handled = 0
        try:
            for link, label in zip(new, self._labels(new), strict=True):
                if label == TARGET and work.nesting < _MAX_NESTING:
                    self._queue_job(self._job(link.id, work, target=True, nesting=work.nesting))
                    work.pending += 1
                elif label is not None:
                    pages.append(link)
                handled += 1
        except CrawlInterrupted:
            pages.extend(new[handled:])  # not labelled yet: into the frontier, so a resume crawls them
            raise
        finally:
            root.links.extend(self.recrawl.claim(pages))

    def _wind_down(self) -> None:
        """After an interruption: the requests in flight end (a stop aborts them; what the budget paid
        for is used), and whatever was not done is kept for a resume: unsent requests and pages not read
        are parked, links already read go to the policy."""
        while self.pool.in_flight:
            done = self.pool.wait(timeout=0.25)
            if done is not None:
                with contextlib.suppress(CrawlInterrupted):
                    self._complete(*done)
        for jobs in self._queue.values():
            self._parked.extend(job.origin for job in jobs)
        if self._held is not None:
            self._parked.append(self._held.origin)
        for work in self._works:
            if not work.links_read:
                self._parked.append(work.page_id)
            if work.parent is None:
                self.policy.add(work.links)
        self._queue, self._held, self._works, self._hops, self._asking = {}, None, set(), set(), set()

    def _count(self, resp: Response) -> None:
        if resp.kind in ("html", "target", "redirect", "unchanged"):
            self.outcomes[resp.kind] += 1
        elif resp.kind == "blocked":
            self.outcomes[f"blocked {resp.mime}"] += 1
        elif resp.kind == "other":
            self.outcomes[f"not a target: {resp.mime or 'no type'}"] += 1
        else:
            self.outcomes[resp.error.split(":")[0] if resp.error else "error"] += 1

    def _learn(self, url: str, label: int) -> None:
        if self.policy.classifies_links:
            self.classifier.observe(url, label)

    # -- the start page and link labels -------------------------------------------------------------
    def _crawl_start(self) -> str:
        """Queue the start page; returns why the crawl cannot go on, or "" when it can."""
        url = self.config.start_url
        if url not in self.links:
            self.links.add(url, 0, -1, None)
        link_id = self.links.ids[url]
        try:
            allowed = self._start_allowed(url)
        except CrawlInterrupted:
            self._parked.append(link_id)  # a resume starts here again
            raise
        if not allowed:
            self.start_error = self.robots.problem(url) or f"robots.txt does not allow crawling {url}"
            if self.robots.unavailable(url):
                self._parked.append(link_id)  # a passing failure: a resume (or a retry) starts here again
            return self.start_error
        job = self._job(link_id, None)
        job.start = True
        self._awaiting += 1
        self._queue_job(job)
        return ""

    def _start_allowed(self, url: str) -> bool:
        """robots.txt of the start host, asked again with back-off while it is unavailable."""
        for attempt in range(self.config.robots_retries + 1):
            if self.robots.allowed(url) or not self.robots.unavailable(url):
                return self.robots.allowed(url)
            status, error = self.robots.failure(url)
            if error.startswith("refused") or Fetcher.retries_itself(status, error):
                return False  # an address the crawl may not reach, or already retried with back-off
            if attempt < self.config.robots_retries:
                wait = self.config.backoff * 2**attempt
                log.warning("retrying robots.txt of the start host in %gs", wait)
                if self._stop.wait(wait):
                    raise StopRequested(self._stop_reason or "stop requested")
                self.robots.retry_now(url)
        return False

    def _labels(self, links: list[NewLink]) -> list[int | None]:
        """Algorithm 2: HEAD requests while the classifier is in its first batch, predictions afterwards.
        A HEAD that finds neither a page nor a target drops the link (an error or a media file)."""
        labels: list[int | None] = []
        i = 0
        while i < len(links) and self.classifier.needs_head:
            resp = self.fetcher.fetch(links[i].url, method="HEAD")
            self.head_requests += 1
            label = {"html": HTML, "target": TARGET, "redirect": HTML}.get(resp.kind)
            if label is not None and resp.kind != "redirect":
                self.classifier.observe(links[i].url, label)
            labels.append(label)
            i += 1
        if i < len(links):
            predicted = self.classifier.predict([link.url for link in links[i:]])
            for link, label in zip(links[i:], predicted, strict=True):
                self.links.predicted[link.id] = label
                labels.append(int(label))
        return labels

    def _store_target(self, final_id: int, link_id: int, resp: Response) -> int:
        """A target's bytes are stored only when they are new or changed; returns 1 for those."""
        assert resp.path is not None
        # A new URL sent a known file's validators (same file name: it may have moved) speaks for that file.
        known_id = self.recrawl.known_for(link_id)
        subject = link_id if known_id is None else known_id
        status = self.recrawl.classify(subject, resp)
        if status == "unchanged":  # same bytes as a known dataset (downloaded: its server gave no validator)
            resp.discard()
            self._record(subject, final_id, status, resp)
            return 0
        self.sink.put_object(resp.sha256, resp.path, resp.mime)
        resp.path = None
        self._record(subject, final_id, status, resp)
        self.targets += 1
        return 1

    def _record(self, link_id: int, final_id: int, status: str, resp: Response) -> None:
        """The manifest row of a target: new / changed / unchanged / gone. A 304 or a 404 carries no body,
        so the row keeps what the memory knows of the file."""
        headers = resp.headers
        known = self.recrawl.known.get(link_id)
        has_body = resp.kind == "target"
        row = {
            "url": self.links.urls[link_id],
            "final_url": self.links.urls[final_id],
            "mime": resp.mime if has_body or known is None else known.mime,
            "size": resp.size if has_body or known is None else known.size,
            "sha256": resp.sha256 if has_body or known is None else known.sha256,
            "etag": headers.get("etag", "") or (known.etag if known and status != "gone" else ""),
            "last_modified": headers.get("last-modified", "") or (known.last_modified if known and status != "gone"
                                                                   else ""),
            "filename": _filename(headers.get("content-disposition")),
            "found_on": self.links.found_on(link_id),
            "tag_path": self.links.tag_path(link_id),
            "depth": self.links.depth[link_id],
            "fetched_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "run_id": self.run_id,
            "status": status,
        }
        self.sink.append_rows([row])
        self._stored.update((row["url"], row["final_url"]))
        self.rows_written += 1

    def _fetch_robots(self, url: str) -> tuple[int | None, str, str]:
        resp = self.fetcher.fetch(url)
        if resp.kind == "redirect":  # followed once, and only within the site
            target = resolve(url, resp.location or "")
            if target and target in self.scope:
                resp = self.fetcher.fetch(target)
        self.outcomes["robots.txt"] += 1
        text = ""
        if resp.kind == "html":
            text = resp.body.decode("utf-8", "replace")
        elif resp.kind == "target" and resp.path is not None:  # text/plain is one of the target types
            text = resp.path.read_bytes().decode("utf-8", "replace")
            resp.discard()
        return resp.status, text, resp.error

    # -- checkpoints -----------------------------------------------------------------------------------
    def checkpoint(self) -> None:
        if self.store is None:
            return
        began = time.monotonic()
        self.sink.flush()
        self._seq += 1
        state = {
            "config": self.config.to_dict(),
            "run_id": self.run_id,
            "pages": self.pages,
            "targets": self.targets,
            "head_requests": self.head_requests,
            "requests": self.budget.requests,
            "bytes": self.budget.bytes,
            "rows_written": self.rows_written,
            "outcomes": dict(self.outcomes),
            "confusion": dict(self.confusion),
            "rng": self.rng.bit_generator.state,
            "policy": self.policy.state(),
            "classifier": self.classifier.state(),
            "early_stopping": self.early.state(),
            "robots": self.robots.texts,
            "paths": self.links.paths,
            "parked": self._parked,
            "recrawl": {"warm": self.recrawl.warm, **self.recrawl.state()},
            "resumes": self.resumes,
        }
        arrays = {
            **self.links.arrays(),
            **{f"policy.{k}": v for k, v in self.policy.arrays().items()},
            **self.classifier.arrays(),
            "harvest_requests": np.frombuffer(self.harvest_requests, dtype=np.int64),
            "harvest_targets": np.frombuffer(self.harvest_targets, dtype=np.int64),
        }
        ckpt.save(self.store, self._seq, ckpt.encode(state, arrays, self.links.urls))
        self._pages_at_checkpoint = self.pages
        self._last_checkpoint = time.monotonic()
        self._checkpoint_cost = self._last_checkpoint - began
        self._checkpoint_due = False

    def _restore(self, seq: int, state: dict, arrays: dict[str, np.ndarray], urls: list[str]) -> None:
        saved = state["config"]
        for key in _STRUCTURAL:
            mine = getattr(self.config, key)
            if saved.get(key) != mine:
                raise ckpt.ForeignCheckpoint(
                    f"the checkpoint in {self.store.describe()} is of a crawl with {key}={saved.get(key)!r}, "
                    f"not {mine!r}; resume with the same settings or start afresh")
        self._seq = seq
        self.resumed_from = seq
        self.run_id = state["run_id"]
        self.pages = state["pages"]
        self.targets = state["targets"]
        self.head_requests = state["head_requests"]
        self.budget.requests = state["requests"]
        self.budget.bytes = state["bytes"]
        self.rows_written = state["rows_written"]
        self.outcomes = Counter(state["outcomes"])
        self.confusion = Counter(state["confusion"])
        self.rng.bit_generator.state = state["rng"]
        self.links = LinkTable.restore(urls, state["paths"], arrays)
        policy_arrays = {k.split(".", 1)[1]: v for k, v in arrays.items() if k.startswith("policy.")}
        self.policy.restore(state["policy"], policy_arrays)
        self.classifier.restore(state["classifier"], arrays.get("classifier_coef"))
        self.early.restore(state["early_stopping"])
        self.robots.texts = dict(state["robots"])
        self._parked = [int(x) for x in state["parked"]]
        self._recrawl_state = state.get("recrawl")
        self.resumes = list(state.get("resumes", []))
        self.harvest_requests = array("q", arrays["harvest_requests"].astype(np.int64).tobytes())
        self.harvest_targets = array("q", arrays["harvest_targets"].astype(np.int64).tobytes())
        self._pages_at_checkpoint = self.pages

    def _replay_manifest(self, count_as_this_crawl: bool) -> None:
        """Targets already in the sink are never fetched or listed again, whichever crawl stored them;
        rows written after the restored checkpoint also count as this crawl's targets."""
        rows = self.sink.read_rows()
        for row in rows:
            # An incremental crawl fetches the datasets of earlier runs again (conditionally): only this run's
            # rows are done with.
            if not self.recrawl.warm or row.get("run_id") == self.run_id:
                self._stored.update(url for url in (row.get("url"), row.get("final_url")) if url)
        if count_as_this_crawl:
            for row in rows[self.rows_written:]:
                for key in ("url", "final_url"):
                    url = row.get(key)
                    if url and url not in self.links:
                        self.links.add(url, int(row.get("depth", 0)), -1, None)
                status = row.get("status", "new")
                if row.get("run_id") == self.run_id:
                    self.recrawl.status[row["url"]] = status
                self.targets += status in ("new", "changed")
        self.rows_written = len(rows)


def _filename(disposition: str | None) -> str:
    if not disposition:
        return ""
    msg = Message()
    msg["content-disposition"] = disposition
    return msg.get_filename() or ""
