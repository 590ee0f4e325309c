"""The real-site benchmark's table: gaps against TREE-ORACLE, never-reached runs charged their budget."""

from __future__ import annotations

import math

from sbcrawl_dev.bench.harness import found_within
from sbcrawl_dev.bench.replay import ReplayRun, _pct, summarise


def _run(policy: str, run: int, pct: float, **kw) -> ReplayRun:
    base = dict(site="rw", policy=policy, run=run, total_urls=400, targets=100, budget=600, pct_to_90=pct,
                bfs_pct=90.0, tree_pct=40.0, requests=500, targets_retrieved=100, missing_from_outputs=0,
                redirects_to_known=3, pages_revealing_nothing=10, exit_code=0, wall_s=1.0)
    base.update(kw)
    return ReplayRun(**base)


def test_table_gives_each_run_and_its_gap_and_the_mean():
    runs = [_run("default", 1, 65.0), _run("default", 2, 40.0), _run("focused", 1, 90.0), _run("focused", 2, 80.0)]
    table = summarise(runs, ["default", "focused"])
    assert "| rw | 400 | 100 | 90.0 | 40.0 | 65.0 / 40.0 (0.50 / 1.00) | 90.0 / 80.0 (0.00 / 0.20) |" in table
    assert "**0.75** | **0.10**" in table
    assert "all 4 runs within budget" in table


def test_a_run_that_never_reached_90_percent_is_charged_its_budget_and_flagged():
    table = summarise([_run("default", 1, math.inf, exit_code=1, missing_from_outputs=2)], ["default"])
    assert "150.0* (-1.20)" in table  # budget 600 of 400 URLs
    assert "rw default run 1: 2 served targets not in the outputs; rw default run 1: exit code 1" in table


def test_a_count_the_harness_wrote_as_inf_or_null_is_never_reached():
    assert _pct("inf", 400) == math.inf and _pct(None, 400) == math.inf and _pct(100, 400) == 25.0


def test_targets_within_a_budget_are_read_off_the_curve_at_its_last_point_inside():
    curve = [(0, 0), (3, 1), (7, 2), (12, 3), (20, 3)]
    assert [found_within(curve, n) for n in (0, 2, 3, 11, 12, 100)] == [0, 0, 1, 2, 3, 3]


def test_table_gives_each_policys_median_share_found_within_a_small_budget():
    runs = [_run("default", 1, 65.0, found_in_small_budget=0.5, bfs_found_in_small_budget=0.1),
            _run("default", 2, 40.0, found_in_small_budget=0.7, bfs_found_in_small_budget=0.1),
            _run("focused", 1, 90.0, found_in_small_budget=0.2, bfs_found_in_small_budget=0.1)]
    line = summarise(runs, ["default", "focused"]).splitlines()[-1]
    assert line.endswith("rw: BFS 10%, default 60%, focused 20%")
