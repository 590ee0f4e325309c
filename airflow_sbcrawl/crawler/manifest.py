"""The manifest: one row per target a crawl met (new, changed, unchanged or gone), written to the sink.

A row names the target, where it was found and what it was (type, size, sha256, validators). Targets
already in the sink are never fetched or listed again, whichever crawl stored them; a warm crawl asks
again the datasets of earlier runs (conditionally), so only its own rows are done with."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from email.message import Message

from airflow_sbcrawl.crawler.fetch import Response
from airflow_sbcrawl.crawler.frontier import LinkTable
from airflow_sbcrawl.crawler.runstate import RunState
from airflow_sbcrawl.crawler.sinks import Sink
from airflow_sbcrawl.crawler.warm.changes import Changes

log = logging.getLogger(__name__)


class Manifest:
    """Writes a run's rows through ``sink`` and counts them in ``run``; ``stored`` holds the URLs (as
    linked and as answered) of the targets the sink has, not to be fetched again."""

    def __init__(self, sink: Sink, links: LinkTable, run: RunState, changes: Changes) -> None:
        self.sink = sink
        self.links = links
        self.run = run
        self.changes = changes
        self.stored: set[str] = set()
        self.rows_of_run: set[str] = set()  # the URLs this run wrote a row for (a row's "url")

    def store_target(self, final_id: int, link_id: int, resp: Response) -> int:
        """A target's bytes are stored only when they are new or changed; returns 1 for those."""
        assert resp.path is not None
        # A new URL sent a known file's validators (same file name: it may have moved) speaks for that file.
        known_id = self.changes.known_for(link_id)
        subject = link_id if known_id is None else known_id
        if self.links.urls[subject] in self.rows_of_run:  # its second answer this run (see ``record``)
            resp.discard()
            return 0
        status = self.changes.classify(subject, resp)
        row = self._row(subject, final_id, status, resp)
        # Unchanged too (same bytes as a known dataset, downloaded: its server gave no validator), the bytes go
        # to the sink, which stores a content once: it makes the row of every download durable at once, so a
        # try that fails before its rows are flushed leaves no download to repeat.
        self.sink.put_object(resp.sha256, resp.path, resp.mime, row)
        resp.path = None
        self._append(row)
        if status == "unchanged":
            return 0
        self.run.targets += 1
        return 1

    def record(self, link_id: int, final_id: int, status: str, resp: Response) -> None:
        """The row of a target: new / changed / unchanged / gone. A 304 or a 404 carries no body, so the
        row keeps what the memory knows of the file.

        One row per target and run: a known dataset can be asked twice at once, under its own URL (a 301 to
        where it moved) and under the new URL that was sent its validators (same file name) while the first
        answer was still on its way; the second answer to come back writes nothing."""
        if self.links.urls[link_id] not in self.rows_of_run:
            self._append(self._row(link_id, final_id, status, resp))

    def _row(self, link_id: int, final_id: int, status: str, resp: Response) -> dict:
        headers = resp.headers
        known = self.changes.known.get(link_id)
        has_body = resp.kind == "target"
        kept = known is not None and status != "gone"
        return {
            "url": self.links.urls[link_id],
            "final_url": self.links.urls[final_id],
            "mime": resp.mime if has_body or known is None else known.mime,
            "size": resp.size if has_body or known is None else known.size,
            "sha256": resp.sha256 if has_body or known is None else known.sha256,
            "etag": headers.get("etag", "") or (known.etag if kept else ""),
            "last_modified": headers.get("last-modified", "") or (known.last_modified if kept else ""),
            "filename": _filename(headers.get("content-disposition")),
            "found_on": self.links.found_on(link_id),
            "tag_path": self.links.tag_path(link_id),
            "depth": self.links.depth[link_id],
            "fetched_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "run_id": self.run.run_id,
            "status": status,
        }

    def _append(self, row: dict) -> None:
        self.sink.append_rows([row])
        self.rows_of_run.add(row["url"])
        self.stored.update((row["url"], row["final_url"]))
        self.run.rows_written += 1

    def replay(self, warm: bool, count_as_this_crawl: bool) -> None:
        """At the start of a run: the URLs of the targets already in the sink are ``stored`` (a warm run's own
        rows only); ``count_as_this_crawl`` (a resume): the rows written after the restored checkpoint
        count as this crawl's targets, and their URLs join the link table."""
        rows = self.sink.read_rows()
        good = usable_rows(rows, self.sink.describe())
        for row in good:
            if not warm or row.get("run_id") == self.run.run_id:
                self.stored.update(url for url in (row.get("url"), row.get("final_url")) if url)
            if row.get("run_id") == self.run.run_id and isinstance(row.get("url"), str):
                self.rows_of_run.add(row["url"])
        if count_as_this_crawl:
            for row in usable_rows(rows[self.run.rows_written:]):
                for key in ("url", "final_url"):
                    url = row.get(key)
                    if url and url not in self.links:
                        self.links.add(url, int(row.get("depth", 0)), -1, None)
                status = row.get("status", "new")
                if row.get("run_id") == self.run.run_id:
                    self.changes.status[row["url"]] = status
                if status in ("new", "changed"):
                    self.run.targets += 1
                    self.run.replayed(row["url"], row.get("final_url") or "")
        self.run.rows_written = len(rows)


_STATUSES = ("new", "changed", "unchanged", "gone")


def row_problem(row: dict) -> str:
    """What makes a manifest row unusable ("" when nothing does): a row of the right shape may still hold
    values of the wrong type (an edited or foreign manifest)."""
    if not isinstance(row.get("url"), str) or not row["url"]:
        return f"url is {row.get('url')!r}, not a URL"
    for key in ("final_url", "run_id", "sha256", "mime"):
        if key in row and not isinstance(row[key], str):
            return f"{key} is {row[key]!r}, not a string"
    depth = row.get("depth", 0)
    if not isinstance(depth, int) or isinstance(depth, bool) or depth < 0:
        return f"depth is {depth!r}, not a whole number"
    if row.get("status", "new") not in _STATUSES:
        return f"status is {row.get('status')!r}, not one of {', '.join(_STATUSES)}"
    return ""


def usable_rows(rows: list[dict], where: str = "") -> list[dict]:
    """The rows a crawl can use; the others are skipped, counted and (with ``where``, once) logged."""
    good, skipped, first = [], 0, ""
    for number, row in enumerate(rows, 1):
        problem = row_problem(row)
        if problem:
            skipped += 1
            first = first or f"row {number}: {problem}"
        else:
            good.append(row)
    if skipped and where:
        log.warning("%s: skipped %d manifest row%s with values of the wrong type (first, %s); the targets "
                    "they name may be fetched again", where, skipped, "s" * (skipped > 1), first)
    return good


def _filename(disposition: str | None) -> str:
    if not disposition:
        return ""
    msg = Message()
    msg["content-disposition"] = disposition
    return msg.get_filename() or ""
