"""The paper's measures (Tables 2-4), computed from a server's request log and the site's truth.

A log is a sequence of ``(method, url, status, body bytes sent)`` in the order the server answered them.
Every entry is a request (GET or HEAD, robots.txt included). A *target retrieval* is the first GET of a
ground-truth target URL answered 200; all other bytes sent (pages, errors, traps, media cut short,
repeated downloads) are *non-target volume*."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

LogRow = tuple[str, str, int, int]


@dataclass(frozen=True)
class Harvest:
    """Cumulative counts after each request of a crawl."""

    targets: np.ndarray  # distinct targets retrieved
    target_bytes: np.ndarray
    non_target_bytes: np.ndarray

    @property
    def requests(self) -> int:
        return len(self.targets)


def harvest(log: Iterable[LogRow], target_sizes: Mapping[str, int]) -> Harvest:
    found: set[str] = set()
    targets: list[int] = []
    tbytes: list[int] = []
    nbytes: list[int] = []
    n = t = o = 0
    for method, url, status, sent in log:
        if method == "GET" and status == 200 and url in target_sizes and url not in found:
            found.add(url)
            n += 1
            t += sent
        else:
            o += sent
        targets.append(n)
        tbytes.append(t)
        nbytes.append(o)
    return Harvest(np.array(targets, dtype=np.int64), np.array(tbytes, dtype=np.int64),
                   np.array(nbytes, dtype=np.int64))


def requests_to_reach(h: Harvest, total_targets: int, share: float = 0.9) -> float:
    """Table 2's raw count: requests made until ``share`` of the targets were retrieved (inf if never)."""
    need = math.ceil(share * total_targets - 1e-9)
    if need <= 0:
        return 0.0
    hit = np.flatnonzero(h.targets >= need)
    return float(hit[0] + 1) if len(hit) else math.inf


def non_target_volume_before(h: Harvest, total_target_volume: int, share: float = 0.9) -> float:
    """Table 3's raw count: non-target bytes received until ``share`` of the target volume was (inf if never)."""
    need = share * total_target_volume
    if need <= 0:
        return 0.0
    hit = np.flatnonzero(h.target_bytes >= need)
    return float(h.non_target_bytes[hit[0]]) if len(hit) else math.inf


def table2_percent(h: Harvest, total_targets: int, url_count: int, share: float = 0.9) -> float:
    """Requests needed to retrieve ``share`` of the targets, as % of the site's URLs."""
    return 100.0 * requests_to_reach(h, total_targets, share) / url_count


def table3_percent(h: Harvest, total_target_volume: int, non_target_volume: int, share: float = 0.9) -> float:
    """Non-target volume retrieved before ``share`` of the target volume, as % of the site's non-target
    volume (it can exceed 100 when a crawler wanders into traps)."""
    return 100.0 * non_target_volume_before(h, total_target_volume, share) / non_target_volume


def mean_std(values: Iterable[float]) -> tuple[float, float]:
    """Mean and standard deviation; any never-reached run (inf) makes the mean inf, as in the paper."""
    vals = [float(v) for v in values]
    if not vals:
        return math.nan, math.nan
    if any(math.isinf(v) for v in vals):
        return math.inf, math.nan
    arr = np.array(vals)
    return float(arr.mean()), float(arr.std(ddof=1)) if len(arr) > 1 else 0.0


def format_cell(mean: float, std: float) -> str:
    if math.isinf(mean):
        return "+inf"
    if math.isnan(mean):
        return "NA"
    if math.isnan(std) or std == 0.0:
        return f"{mean:.1f}"
    return f"{mean:.1f} ± {std:.1f}"
