"""What the known datasets turned out to be this run, and the validators that ask it cheaply.

Each dataset of the site memory ends a run ``new``, ``changed``, ``unchanged`` or ``gone`` (404/410); those
not reached stay as they were in the memory. A known dataset or page is asked with a conditional GET
(If-None-Match / If-Modified-Since): a 304 is one request and no body. A new URL with the file name of one
known dataset not answered yet is sent that dataset's validators, so a file that moved is recognised."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from airflow_sbcrawl.crawler.frontier import LinkTable
from airflow_sbcrawl.crawler.memory import KnownDataset, SiteMemory

if TYPE_CHECKING:
    from airflow_sbcrawl.crawler.fetch import Response

STATUSES = ("new", "changed", "unchanged", "gone")
_GONE = (404, 410)


class Changes:
    """The known datasets by link id (``known``), and the status of each dataset answered this run by the
    URL the memory knows it by (``status``). A cold crawl has no memory: every target it stores is new."""

    def __init__(self, links: LinkTable, memory: SiteMemory | None = None) -> None:
        self.links = links
        self.use(memory)

    def use(self, memory: SiteMemory | None) -> None:
        """Start afresh from ``memory`` (None: a cold crawl)."""
        self.memory = memory
        self.known: dict[int, KnownDataset] = {}
        self.status: dict[str, str] = {}
        self._known_sha = {d.sha256 for d in memory.datasets.values()} if memory is not None else set()
        self._by_name: dict[str, list[int]] = {}  # file name -> known datasets of that name
        self._borrowed: dict[int, int] = {}  # new link id -> the known dataset whose validators it was sent

    def seed(self) -> None:
        """Put the memory's datasets into the link table (after its pages: they are their parents)."""
        assert self.memory is not None
        links = self.links
        for d in self.memory.datasets.values():
            if d.url not in links:
                self._know(links.add(d.url, d.depth, links.ids.get(d.found_on, -1), d.tag_path or None), d)

    def _know(self, link_id: int, dataset: KnownDataset) -> None:
        self.known[link_id] = dataset
        for name in {_basename(dataset.url), _basename(dataset.final_url), dataset.filename} - {""}:
            self._by_name.setdefault(name, []).append(link_id)

    def answered(self, link_id: int) -> bool:
        """Whether the dataset at this link already has its status this run."""
        return self.links.urls[link_id] in self.status

    def moved_from(self, link_id: int) -> int | None:
        """For a new URL with the file name of exactly one known dataset not answered yet: that dataset (the
        file may have moved here, and is sent its validators); else None."""
        if self.memory is None or link_id in self.known:
            return None
        url = self.links.urls[link_id]
        if url in self.memory.pages:
            return None
        same = [i for i in self._by_name.get(_basename(url), ()) if not self.answered(i)]
        return same[0] if len(same) == 1 else None

    def conditions(self, link_id: int) -> dict[str, str] | None:
        """Validators to send with the GET of a link (None for an unconditional GET)."""
        if self.memory is None:
            return None
        url = self.links.urls[link_id]
        known = self.known.get(link_id)
        page = self.memory.pages.get(url) if known is None else None
        if known is None and page is None:
            # A new URL with the file name of one known dataset not checked yet: that file may have moved
            # here; its validators make the answer a 304 if so (and a download otherwise).
            moved = self.moved_from(link_id)
            if moved is None:
                return None
            self._borrowed[link_id] = moved
            known = self.known[moved]
        if known is not None:
            etag, modified = known.etag, known.last_modified
        else:
            etag, modified = page.etag, page.last_modified
        headers = {}
        if etag:
            headers["If-None-Match"] = etag
        if modified:
            headers["If-Modified-Since"] = modified
        return headers or None

    def known_for(self, link_id: int) -> int | None:
        """The known dataset a 304 to this link speaks for: itself, or the one whose validators it was sent."""
        if link_id in self.known:
            return link_id
        return self._borrowed.get(link_id)

    def classify(self, link_id: int, resp: Response) -> str:
        """new / changed / unchanged for a target response (a 304 is unchanged); records it."""
        known = self.known.get(link_id)
        if resp.kind == "unchanged":
            status = "unchanged"
        elif known is not None:
            status = "unchanged" if resp.sha256 == known.sha256 else "changed"
        else:
            # A URL the memory does not know, with bytes it does: a file that moved, not a new one.
            status = "unchanged" if resp.sha256 in self._known_sha else "new"
        self.status[self.links.urls[link_id]] = status
        return status

    def gone(self, link_id: int, resp: Response) -> bool:
        """Whether a known dataset's answer says it was removed (404 or 410); records it."""
        if link_id not in self.known or resp.status not in _GONE:
            return False
        self.status[self.links.urls[link_id]] = "gone"
        return True

    def counts(self) -> dict[str, int]:
        """How many datasets ended the run in each status, for the summary."""
        out = dict.fromkeys(STATUSES, 0)
        for status in self.status.values():
            out[status] += 1
        return out

    # -- checkpoints -----------------------------------------------------------------------------------
    def state(self) -> dict:
        return {"status": self.status, "by_name": self._by_name,
                "borrowed": {str(k): v for k, v in self._borrowed.items()}}

    def arrays(self) -> dict[str, np.ndarray]:
        return {}

    def restore(self, state: dict, arrays: dict[str, np.ndarray]) -> None:
        """After a resume: the link table is the checkpoint's, which holds the memory's links already. The
        known datasets are those of the memory now (a run cut short by its budget left one) in the table;
        the file names are those of the datasets known at the start."""
        self.status = dict(state["status"])
        self._borrowed = {int(k): int(v) for k, v in state["borrowed"].items()}
        self._by_name = {k: list(v) for k, v in state["by_name"].items()}
        self.known.clear()
        if self.memory is not None:
            ids = self.links.ids
            self.known.update((ids[d.url], d) for d in self.memory.datasets.values() if d.url in ids)


def _basename(url: str) -> str:
    """The last path segment of a URL when it names a file (has an extension), else ""."""
    name = url.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]
    return name if "." in name else ""
