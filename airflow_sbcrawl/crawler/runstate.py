"""The run's own tallies (``RunState``), and what a crawl reports of them: its ``Progress`` while it runs and
its ``CrawlSummary`` at the end."""

from __future__ import annotations

from array import array
from collections import Counter
from dataclasses import asdict, dataclass, field, fields

import numpy as np

from airflow_sbcrawl.crawler.fetch import Response


def _int64s() -> array:
    return array("q")


@dataclass(eq=False)
class RunState:
    """What a run counted so far, saved in its checkpoints field by field: ``state`` and ``arrays`` capture
    every field, ``restore`` takes every field back (in place: the parts of the crawl that count into
    these objects keep counting into them), so a field added here is checkpointed with no other change.
    The counters the other parts keep (the budget's, the policy's...) are saved by those parts."""

    run_id: str
    rng: np.random.Generator  # the crawl's random draws (the policy's)
    pages: int = 0
    targets: int = 0  # new and changed datasets stored
    head_requests: int = 0
    rows_written: int = 0  # manifest rows, this run's and earlier runs' (the sink's row count)
    outcomes: Counter[str] = field(default_factory=Counter)  # what each response was (html, target, ...)
    confusion: Counter[str] = field(default_factory=Counter)  # URL classifier prediction -> what the GET found
    resumes: list[dict] = field(default_factory=list)  # one entry per resume: the report's history across runs
    harvest_requests: array = field(default_factory=_int64s)  # requests spent after each page
    harvest_targets: array = field(default_factory=_int64s)  # targets retrieved after each page
    # The targets a resume counted from rows written after its checkpoint, by URL (a row's URL and its final
    # URL, each naming the other; "" for none), until the re-crawl meets a link to them again (``remet``).
    replayed_unmet: dict[str, str] = field(default_factory=dict)

    def count(self, resp: Response) -> None:
        """One response in the outcome tally."""
        if resp.kind in ("html", "target", "redirect", "unchanged"):
            self.outcomes[resp.kind] += 1
        elif resp.kind == "blocked":
            self.outcomes[f"blocked {resp.mime}"] += 1
        elif resp.kind == "other":
            self.outcomes[f"not a target: {resp.mime or 'no type'}"] += 1
        else:
            self.outcomes[resp.error.split(":")[0] if resp.error else "error"] += 1

    def page_done(self, requests: int) -> None:
        """One more page: a point of the harvest curve (requests spent, targets retrieved)."""
        self.pages += 1
        self.harvest_requests.append(requests)
        self.harvest_targets.append(self.targets)

    def replayed(self, url: str, final_url: str) -> None:
        """A target a resume counted from its row (``manifest.Manifest.replay``), not yet met again."""
        partner = final_url if final_url and final_url != url else ""
        self.replayed_unmet[url] = partner
        if partner:
            self.replayed_unmet[partner] = url

    def remet(self, url: str) -> None:
        """The re-crawl met a link to ``url`` again: a replayed target it names counts as found from now."""
        partner = self.replayed_unmet.pop(url, None)
        if partner:
            self.replayed_unmet.pop(partner, None)

    def targets_met(self) -> int:
        """The targets as the crawl has met them: those a resume counted from rows written after its
        checkpoint only once the re-crawl of the lost segment reaches their links again. The early stop
        judges this count: counted all at once at the resume, the lost segment's targets would read as found
        within the pages before it, a rate that segment never had, and end the crawl before its own
        uninterrupted twin would (the operator's retry test, under load, where checkpoints are sparser)."""
        pairs = sum(1 for url, partner in self.replayed_unmet.items() if partner and url < partner)
        singles = sum(1 for partner in self.replayed_unmet.values() if not partner)
        return self.targets - pairs - singles

    def note_resume(self, resumed_from: int | None, requests: int, requests_saved: int, targets_saved: int) -> None:
        """Record a resume in the run's history: what the segment after the checkpoint (cut by a kill, or lost
        with a torn checkpoint) spent and retrieved is in the totals (``requests``, the journal's, and the
        targets of the manifest rows written since), its pages are not known; the harvest curve gets its
        end point so that it matches the totals."""
        lost_requests, replayed = requests - requests_saved, self.targets - targets_saved
        if resumed_from is None and not lost_requests and not replayed:
            return  # nothing was there: a plain start
        lost_segment = bool(lost_requests or replayed)
        self.resumes.append({"from_checkpoint": resumed_from, "lost_requests": lost_requests,
                             "replayed_targets": replayed,
                             "at_page": len(self.harvest_requests) if lost_segment else None})
        if lost_segment:
            self.harvest_requests.append(requests)
            self.harvest_targets.append(self.targets)

    # -- checkpoints -----------------------------------------------------------------------------------
    def state(self) -> dict:
        """Every field but the arrays, as JSON-ready values."""
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, np.random.Generator):
                out[f.name] = value.bit_generator.state
            elif not isinstance(value, array):
                out[f.name] = dict(value) if isinstance(value, Counter) else value
        return out

    def arrays(self) -> dict[str, np.ndarray]:
        """The harvest curve."""
        return {f.name: np.frombuffer(value, dtype=np.int64) for f in fields(self)
                if isinstance(value := getattr(self, f.name), array)}

    def restore(self, state: dict, arrays: dict[str, np.ndarray]) -> None:
        """Take every field back, in place (a field added since the checkpoint was written keeps its default)."""
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name not in state and not isinstance(value, array):
                continue
            if isinstance(value, np.random.Generator):
                value.bit_generator.state = state[f.name]
            elif isinstance(value, array):
                del value[:]
                value.frombytes(arrays[f.name].astype(np.int64).tobytes())
            elif isinstance(value, Counter):
                value.clear()
                value.update(state[f.name])
            elif isinstance(value, list):
                value[:] = state[f.name]
            else:
                setattr(self, f.name, type(value)(state[f.name]))


@dataclass
class Progress:
    """A crawl's figures while it runs, handed to ``on_progress`` (at most five times a second)."""

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
    """What a finished (or stopped) run did: its figures, why it ended, and what the known datasets turned
    out to be."""

    start_url: str
    policy: str
    run_id: str
    stop_reason: str = ""
    pages: int = 0
    targets: int = 0
    requests: int = 0
    head_requests: int = 0
    bytes: int = 0
    frontier: int = 0  # links left to crawl: kept in the site memory, where the next run goes on
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
    # How the known datasets were settled: verified (a request), vouched (a page as it was), estimated (the
    # change rate said unchanged, not asked), the requests of the revisits and checks, and that change rate
    # (``change_rate``: the share of the known items compared that changed, over the runs); empty when cold.
    checks: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)
