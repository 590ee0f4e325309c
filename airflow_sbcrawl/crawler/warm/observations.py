"""What a run leaves for the next one: what it saw of the site's pages, and the site memory built from that.

``Observations`` is filled during the crawl (every run that has a memory store keeps them, warm or cold);
``build_memory`` turns them, the run's manifest rows and its link table into the next ``SiteMemory``;
``restore_model`` is the way back: a warm start takes the learned model (the policy's and the URL
classifier's) from the memory, when it was learned with the same settings."""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime

import numpy as np

from airflow_sbcrawl.crawler.classify import OracleClassifier, UrlClassifier
from airflow_sbcrawl.crawler.config import CrawlConfig
from airflow_sbcrawl.crawler.frontier import LinkTable
from airflow_sbcrawl.crawler.memory import FrontierLink, KnownDataset, KnownPage, SiteMemory, url_key
from airflow_sbcrawl.crawler.policies.base import Policy
from airflow_sbcrawl.crawler.warm.contexts import PageLinks

log = logging.getLogger(__name__)

# Settings the learned model depends on: another value and the model is learned afresh.
MODEL_KEYS = ("policy", "ngram", "dim_log2", "hash_width", "hash_prime", "theta", "tagpath_ignore_digits",
              "batch_size")
# Contexts of a link kept per known page or dataset (the places it is listed, over the last runs).
_MAX_CONTEXTS = 8
# Warm runs whose tallies a memory keeps (the change rate the site has shown).
HISTORY_RUNS = 8
# Pages remembered per known page or dataset as the ones that link it.
MAX_LISTERS = 4
# A page that describes at least this many pages above known datasets is kept as a catalogue.
_CATALOGUE_SUPPORT = 2
_NO_PAGE = KnownPage(url="")


@dataclass
class Observations:
    """What this run saw of the pages it read, for the next memory: their validators, those that answered
    a conditional GET with 304, the contexts each link was shown in and the pages that described it."""

    page_validators: dict[str, tuple[str, str]] = field(default_factory=dict)  # page URL -> (ETag, Last-Modified)
    unchanged_pages: set[str] = field(default_factory=set)
    contexts: dict[str, set[str]] = field(default_factory=dict)  # link URL -> hashes of its contexts
    listers: dict[str, list[str]] = field(default_factory=dict)  # link URL -> pages that described it

    def page_headers(self, url: str, headers: dict[str, str]) -> None:
        """A page's validators, to be sent at the next run's revisit; a page read without any is kept as
        ("", ""): what it had before no longer holds."""
        self.page_validators[url] = (headers.get("etag", ""), headers.get("last-modified", ""))

    def page_links(self, url: str, page: PageLinks) -> None:
        """The contexts a page showed its links in, and the links it described."""
        for link, hashes in page.contexts.items():
            self.contexts.setdefault(link, set()).update(hashes)
        for link in page.described:
            listers = self.listers.setdefault(link, [])
            if len(listers) < MAX_LISTERS and url not in listers:
                listers.append(url)

    # -- checkpoints -----------------------------------------------------------------------------------
    def state(self) -> dict:
        return {"page_validators": self.page_validators, "unchanged_pages": sorted(self.unchanged_pages),
                "contexts": {k: sorted(v) for k, v in self.contexts.items()}, "listers": self.listers}

    def arrays(self) -> dict[str, np.ndarray]:
        return {}

    def restore(self, state: dict, arrays: dict[str, np.ndarray]) -> None:
        self.page_validators = {k: (v[0], v[1]) for k, v in state["page_validators"].items()}
        self.unchanged_pages = set(state["unchanged_pages"])
        self.contexts = {k: set(v) for k, v in state["contexts"].items()}
        self.listers = {k: list(v) for k, v in state.get("listers", {}).items()}


def restore_model(memory: SiteMemory, config: CrawlConfig, policy: Policy,
                  classifier: UrlClassifier | OracleClassifier) -> bool:
    """Give the policy (if it can carry a model over) and the URL classifier what the memory's run learned;
    False when that model was learned with other settings (then both learn afresh)."""
    settings = config.to_dict()
    if memory.model_config != {k: settings[k] for k in MODEL_KEYS} or not memory.model_state:
        log.info("site memory model was learned with other settings: learning afresh")
        return False
    if policy.warm_startable:
        policy.restore(memory.model_state["policy"], _prefixed(memory.model_arrays, "policy."))
    classifier.restore(memory.model_state["classifier"], _prefixed(memory.model_arrays, "classifier."))
    return True


def build_memory(previous: SiteMemory | None, seen: Observations, status: dict[str, str], rows: list[dict],
                 links: LinkTable, *, config: CrawlConfig, run_id: str, policy: Policy,
                 classifier: UrlClassifier | OracleClassifier, frontier: list[int] = (),
                 tally: tuple[int, int] | None = None, drought: int = 0,
                 promise: float | None = None) -> SiteMemory:
    """The memory a run leaves: ``previous`` (the one it started from, or a cold run ignored) updated with
    the run's manifest ``rows``, the datasets' ``status`` this run, what it ``seen`` of the pages, the
    model it learned, the links it left unfetched (``frontier``, ids in ``links``) and, for a warm run, the
    known items it compared with the memory and found changed (``tally``, for the memory's history), and
    the pages it read after its last new target (``drought``) and, when early stopping ended it, what its
    frontier still promised (``promise``)."""
    now = datetime.now(UTC).isoformat(timespec="seconds")
    old_datasets = previous.datasets if previous is not None else {}
    datasets = {url: d for url, d in old_datasets.items() if status.get(url) != "gone"}
    for row in rows:
        if row.get("status", "new") == "gone":
            continue
        url, final = row["url"], row.get("final_url") or row["url"]
        old = old_datasets.get(url)
        # A known file that now answers from elsewhere (it moved) is remembered where it is now.
        key = final if old is not None and final != url else url
        if key != url:
            datasets.pop(url, None)
        datasets[key] = KnownDataset(
            url=key, final_url=final, sha256=row.get("sha256", ""), etag=row.get("etag", ""),
            last_modified=row.get("last_modified", ""), mime=row.get("mime", ""), size=int(row.get("size", 0)),
            first_seen=old.first_seen if old is not None else row.get("fetched_at", now),
            last_seen=row.get("fetched_at", now), found_on=row.get("found_on", "") or (old.found_on if old else ""),
            tag_path=row.get("tag_path", "") or (old.tag_path if old else ""), depth=int(row.get("depth", 0)),
            filename=row.get("filename", "") or (old.filename if old else ""),
            contexts=old.contexts if old is not None else [], listed_on=old.listed_on if old is not None else [])
    for d in datasets.values():
        d.contexts = _merged_contexts(seen, d.url, d.contexts)
        d.listed_on = _merged_listers(seen, d.url, d.listed_on)
    settings = config.to_dict()
    # The policy's arrays without this run's frontier (ids of its links), which the next run does not have.
    arrays = {**{f"policy.{k}": v for k, v in policy.model_arrays().items()},
              **{f"classifier.{k}": v for k, v in classifier.arrays().items()}}
    return SiteMemory(
        start_url=config.start_url, run_id=run_id, written_at=now,
        runs=(previous.runs if previous is not None else 0) + 1,
        model_config={k: settings[k] for k in MODEL_KEYS},
        model_state={"policy": policy.state(), "classifier": classifier.state()},
        model_arrays=arrays, datasets=datasets, pages=_pages(previous, seen, links, datasets),
        frontier=_frontier(frontier, links, datasets, rows), history=_history(previous, tally),
        drought=drought, promise=promise, **_seen_urls(previous, links, seen))


def _frontier(waiting: list[int], links: LinkTable, datasets: dict[str, KnownDataset],
              rows: list[dict]) -> list[FrontierLink]:
    """The links left unfetched, as the policy knew them (a dataset stored meanwhile is not one)."""
    stored = {row["url"] for row in rows}
    return [FrontierLink(url=url, parent=links.found_on(i), depth=links.depth[i], tag_path=links.tag_path(i),
                         label=links.predicted[i])
            for i in waiting if (url := links.urls[i]) not in datasets and url not in stored]


def _history(previous: SiteMemory | None, tally: tuple[int, int] | None) -> list[list[int]]:
    old = previous.history if previous is not None else []
    return [*old, list(tally)][-HISTORY_RUNS:] if tally is not None else list(old[-HISTORY_RUNS:])


def _prefixed(arrays: dict[str, np.ndarray], prefix: str) -> dict[str, np.ndarray]:
    return {k[len(prefix):]: v for k, v in arrays.items() if k.startswith(prefix)}


def _seen_urls(previous: SiteMemory | None, links: LinkTable, seen: Observations) -> dict[str, np.ndarray]:
    """The URLs met and the pages read (those links were found on), over this run and the last ones. Met
    includes what the crawl does not follow (another host, refused by robots.txt, a blocked extension): a
    listing's row that the last runs saw is not a new row, wherever it leads."""
    read = {links.urls[i] for i in set(links.parent) if i >= 0}
    out = {}
    for name, urls in (("seen_urls", [*links.urls, *seen.contexts]), ("read_urls", read)):
        mine = np.fromiter((url_key(url) for url in urls), dtype=np.uint64)
        out[name] = np.union1d(getattr(previous, name), mine) if previous is not None else np.unique(mine)
    return out


def _merged_contexts(seen: Observations, url: str, old: list[str]) -> list[str]:
    return list(dict.fromkeys([*sorted(seen.contexts.get(url, ())), *old]))[:_MAX_CONTEXTS]


def _merged_listers(seen: Observations, url: str, old: list[str]) -> list[str]:
    return list(dict.fromkeys([*seen.listers.get(url, ()), *old]))[:MAX_LISTERS]


def _pages(previous: SiteMemory | None, seen: Observations, links: LinkTable,
           datasets: dict[str, KnownDataset]) -> dict[str, KnownPage]:
    """Every page on the way from the start page to a known dataset, scored by the datasets below it, and
    every page that links known datasets (a dataset page whose files were first met on a catalogue),
    scored by those it links: each with the pages that link it, for the next run's revisits."""
    previous_pages = previous.pages if previous is not None else {}
    score: dict[int, int] = {}
    for d in datasets.values():
        link_id = links.ids.get(d.url, links.ids.get(d.final_url, -1))
        parent = links.parent[link_id] if link_id >= 0 else links.ids.get(d.found_on, -1)
        walked = set()
        while parent >= 0 and parent not in walked:  # parents of redirect hops can loop back
            walked.add(parent)
            score[parent] = score.get(parent, 0) + 1
            parent = links.parent[parent]
    listed = Counter(links.ids[url] for d in datasets.values() for url in d.listed_on if url in links.ids)
    # and pages that describe several of those pages (a catalogue page of dataset pages whose files were
    # first met elsewhere), scored as the datasets those list
    below = {links.urls[i]: n for i, n in score.items()} | {links.urls[i]: n for i, n in listed.items()}
    catalogues: Counter[int] = Counter()
    for url in below:
        for lister in _merged_listers(seen, url, previous_pages.get(url, _NO_PAGE).listed_on):
            if lister in links.ids:
                catalogues[links.ids[lister]] += 1
    for link_id, n in catalogues.items():
        if n >= _CATALOGUE_SUPPORT:
            listed[link_id] = max(listed[link_id], n)
    for link_id, n in listed.items():
        score[link_id] = max(score.get(link_id, 0), n)
    pages = {}
    for link_id, n in score.items():
        url = links.urls[link_id]
        old = previous_pages.get(url)
        if url in seen.page_validators:
            etag, modified = seen.page_validators[url]
        elif old is not None:
            # A 304 this run, or not asked at all (a budgeted run estimates much unchanged): what the page
            # had still holds. Dropped, the next run would read the page whole and compare all its rows.
            etag, modified = old.etag, old.last_modified
        else:
            etag, modified = "", ""
        parent = links.parent[link_id]
        pages[url] = KnownPage(url=url, parent=links.urls[parent] if parent >= 0 else "",
                               depth=links.depth[link_id], tag_path=links.tag_path(link_id), score=n,
                               etag=etag, last_modified=modified,
                               contexts=_merged_contexts(seen, url, old.contexts if old is not None else []),
                               listed_on=_merged_listers(seen, url, old.listed_on if old is not None else []))
    return pages

