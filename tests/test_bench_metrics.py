"""The 90 % measures of Tables 2-3, on hand-made server logs."""

from __future__ import annotations

import math

from sbcrawl_dev.bench.metrics import (
    format_cell,
    harvest,
    mean_std,
    non_target_volume_before,
    requests_to_reach,
    table2_percent,
    table3_percent,
)

TARGETS = {f"http://s/t{i}.csv": 100 for i in range(10)}


def _log() -> list[tuple[str, str, int, int]]:
    rows = [("GET", "http://s/robots.txt", 200, 10), ("GET", "http://s/", 200, 50)]
    rows.append(("HEAD", "http://s/t0.csv", 200, 0))  # a HEAD is a request, not a retrieval
    for i in range(9):
        rows.append(("GET", f"http://s/t{i}.csv", 200, 100))
        rows.append(("GET", f"http://s/page{i}", 200, 20))
    rows.append(("GET", "http://s/t0.csv", 200, 100))  # a second download is wasted volume
    rows.append(("GET", "http://s/t9.csv", 500, 30))  # an error serves no target
    rows.append(("GET", "http://s/t9.csv", 200, 100))
    return rows


def test_requests_to_reach_counts_every_request_until_the_ninth_of_ten_targets():
    h = harvest(_log(), TARGETS)
    # robots, home, HEAD, then target/page pairs: the 9th target is request 3 + 2*8 + 1 = 20
    assert requests_to_reach(h, 10, 0.9) == 20
    assert table2_percent(h, 10, url_count=40) == 50.0
    assert requests_to_reach(h, 10, 1.0) == len(_log())
    assert int(h.targets[-1]) == 10


def test_non_target_volume_before_90_percent_of_target_volume():
    h = harvest(_log(), TARGETS)
    # 900 of 1000 target bytes are in with the 9th target; before it: 10 + 50 + 0 + 8 pages * 20 = 220
    assert non_target_volume_before(h, 1000, 0.9) == 220
    assert table3_percent(h, 1000, non_target_volume=440) == 50.0
    # all of it only after the re-download (100) and the error (30) as well
    assert non_target_volume_before(h, 1000, 1.0) == 220 + 20 + 100 + 30


def test_never_reached_is_infinite_and_propagates_to_the_mean():
    h = harvest(_log()[:5], TARGETS)
    assert math.isinf(requests_to_reach(h, 10))
    assert math.isinf(non_target_volume_before(h, 1000))
    mean, _ = mean_std([10.0, math.inf])
    assert math.isinf(mean) and format_cell(mean, 0.0) == "+inf"
    assert mean_std([10.0, 20.0]) == (15.0, math.sqrt(50.0))
    assert format_cell(15.0, 7.07) == "15.0 ± 7.1"
