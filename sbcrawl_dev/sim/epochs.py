"""Time on a simulated site: what epoch N (N periods after epoch 0) adds, updates, removes and moves.

Like everything else in the simulator this is a keyed hash, not stored state: whether file ``key`` was
updated, removed or moved at epoch ``e`` is a seeded draw of ``(key, e)``, so epoch N needs no history
and epoch N+1 is epoch N plus one more draw per file.  Every epoch adds datasets (listed first in their
section's catalogue and announced in new news articles), news and publications; existing files are
updated (new bytes, new ETag and Last-Modified), removed (404 or 410) or moved (the old URL answers 301).

Files carry validators as real servers do, some both, some only one, some none; a GET whose
If-None-Match or If-Modified-Since matches the current file is answered 304 with no body.  HTML pages
carry an ETag of their body.  ``Site.changes(since)`` is the truth a recrawl is measured against.
"""

from __future__ import annotations

import email.utils
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sbcrawl_dev.sim import seeded
from sbcrawl_dev.sim.profiles import Profile
from sbcrawl_dev.sim.web import Resource

EPOCH0 = datetime(2026, 1, 1, 8, 0, tzinfo=UTC)
PERIOD = timedelta(days=30)
# What a recrawl can see change; "moved" is an unchanged file under a new URL (its old one answers 301).
STATUSES = ("new", "changed", "moved", "unchanged", "gone")


@dataclass(frozen=True)
class FileState:
    """One file's life up to an epoch."""

    version: int = 0  # updates so far: the bytes served depend on it
    modified: int = 0  # epoch of the last update (or of birth); 0 = the original
    moved: int = 0  # epoch of the last move; 0 = still at its first URL
    gone: int = 0  # 404 or 410 once removed, else 0


def file_state(profile: Profile, seed: int, epoch: int, key: tuple[object, ...], born: int) -> FileState:
    """The state at ``epoch`` of the file ``key`` of the site ``(profile, seed)`` that first appeared at
    epoch ``born``."""
    p = profile
    version, modified, moved = 0, born, 0
    for e in range(born + 1, epoch + 1):
        if seeded.chance(p.remove_share, seed, "remove", key, e):
            return FileState(version, modified, moved, 410 if seeded.chance(0.5, seed, "gone-410", key) else 404)
        if seeded.chance(p.update_share, seed, "update", key, e):
            version, modified = version + 1, e
        if seeded.chance(p.move_share, seed, "move", key, e):
            moved = e
    return FileState(version, modified, moved)


def moved_url(res: Resource, epoch: int) -> str:
    """Where a file moved at ``epoch`` lives: same host, a path the site routes back to the file."""
    host = res.url.split("/", 3)[2]
    kind, owner, index = res.table_key
    return f"http://{host}/moved/{epoch}/{kind}/{owner}/{index}/{res.filename}"


def parse_moved(path: str) -> tuple[int, str, int, int, str] | None:
    segs = [s for s in path.split("/") if s]
    if len(segs) != 6 or segs[0] != "moved" or not (segs[1].isdigit() and segs[3].isdigit() and segs[4].isdigit()):
        return None
    if segs[2] not in ("ds", "pub"):
        return None
    return int(segs[1]), segs[2], int(segs[3]), int(segs[4]), segs[5]


def epoch_date(epoch: int) -> datetime:
    return EPOCH0 + epoch * PERIOD


def last_modified(seed: int, key: tuple[object, ...], state: FileState) -> datetime:
    if state.modified:
        return epoch_date(state.modified)
    # Originals were published over the two years before epoch 0.
    return EPOCH0 - timedelta(days=seeded.randint(1, 730, seed, "published", key))


def validator_headers(profile: Profile, seed: int, key: tuple[object, ...], state: FileState) -> dict[str, str]:
    """ETag and/or Last-Modified, as this file's server gives them (some give neither)."""
    u = seeded.unit(seed, "validators", key)
    share = profile.validator_share
    headers = {}
    if u < share * 0.85:  # most servers that validate send an ETag
        headers["ETag"] = f'"{seeded.h64(seed, "etag", key, state.version):016x}"'
    if u < share * 0.7 or share * 0.85 <= u < share:
        when = last_modified(seed, key, state)
        headers["Last-Modified"] = email.utils.format_datetime(when.astimezone(UTC), usegmt=True)
    return headers


def html_etag(body: bytes) -> str:
    return f'W/"{hashlib.blake2b(body, digest_size=8).hexdigest()}"'


def not_modified(headers: Mapping[str, str], conditions: Mapping[str, str]) -> bool:
    """Whether a GET with ``conditions`` (request headers, any case) gets a 304 (RFC 9110 §13.2.2)."""
    cond = {k.lower(): v for k, v in conditions.items()}
    etag = headers.get("ETag")
    if "if-none-match" in cond:  # takes precedence over If-Modified-Since when present
        if etag is None:
            return False
        tags = [t.strip() for t in cond["if-none-match"].split(",")]
        return "*" in tags or any(t.removeprefix("W/") == etag.removeprefix("W/") for t in tags)
    since, modified = cond.get("if-modified-since"), headers.get("Last-Modified")
    if since and modified:
        try:
            return email.utils.parsedate_to_datetime(modified) <= email.utils.parsedate_to_datetime(since)
        except (TypeError, ValueError):
            return False
    return False
