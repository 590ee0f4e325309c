"""The shared request budget across sites: what the bandit gives each site, round by round."""

from __future__ import annotations

import pytest

from airflow_sbcrawl.crawler.shared_budget import equal_caps, next_caps, plan_round, rounds_history


def _extra(caps: dict[str, int], history: dict) -> dict[str, int]:
    return {s: cap - (history[s][-1][0] if history[s] else 0) for s, cap in caps.items()}


def test_first_round_is_an_equal_warm_up():
    history = {s: [] for s in "abcd"}
    assert next_caps(10_000, history, round_requests=400) == dict.fromkeys("abcd", 100)


def test_richer_recent_yield_gets_more_of_the_round_and_the_round_is_spent_exactly():
    history = {"rich": [(100, 60)], "fair": [(100, 20)], "poor": [(100, 1)], "dry": [(100, 0)]}
    caps = next_caps(10_000, history, round_requests=1000, chunk=50)
    extra = _extra(caps, history)
    assert sum(extra.values()) == 1000
    assert extra["rich"] > extra["fair"] > extra.get("poor", 0) >= extra.get("dry", 0)
    assert extra["rich"] >= 500


def test_yield_is_judged_on_the_last_round_not_the_whole_past():
    # "old" was rich but its last round found nothing; "new" pays now
    history = {"old": [(500, 300), (1000, 300)], "new": [(500, 10), (1000, 200)]}
    extra = _extra(next_caps(10_000, history, round_requests=1000), history)
    assert extra["new"] > extra.get("old", 0)


def test_a_round_shorter_than_the_warm_up_is_judged_with_the_rounds_before_it():
    # The shared-budget DAG test's sites after round 2: "modest" found 8 datasets in its 15 requests (0.53),
    # "rich" 25 in 70 (0.36). Judged on those 15 alone, modest took the whole last round.
    history = {"poor": [(40, 9), (75, 16)], "modest": [(40, 8), (55, 16)], "rich": [(40, 10), (110, 35)]}
    extra = _extra(next_caps(360, history, round_requests=120, chunk=7), history)
    assert sum(extra.values()) == 120
    assert extra.get("rich", 0) > extra.get("modest", 0)


def test_finished_sites_get_nothing_and_the_total_is_never_exceeded():
    history = {"a": [(300, 30)], "b": [(100, 90)], "c": [(50, 0)]}
    caps = next_caps(500, history, finished={"b"}, round_requests=1000)
    assert "b" not in caps
    assert sum(_extra(caps, history).values()) == 50  # 500 - 450 already spent
    assert next_caps(450, history) == {}
    assert next_caps(10_000, history, finished={"a", "b", "c"}) == {}


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError):
        next_caps(100, {"a": []}, chunk=0)


def test_equal_caps_give_the_whole_budget():
    assert equal_caps(1000, ["a", "b", "c"]) == {"a": 334, "b": 333, "c": 333}
    assert equal_caps(900, ["a", "b", "c"]) == {"a": 300, "b": 300, "c": 300}


def _report(requests: int, targets: int, stop: str = "request budget spent") -> dict:
    return {"requests": requests, "targets": targets, "stop_reason": stop}


def test_history_from_caps_and_reports_counts_a_failed_crawl_at_its_cap():
    caps = [{"a": 100, "b": 100, "c": 100}, {"a": 250, "b": 150}]
    reports = [{"a": _report(100, 40), "b": _report(100, 5), "c": _report(60, 9, "frontier exhausted: every ...")},
               {"a": _report(240, 90)}]  # b's crawl failed in round 2
    history, finished = rounds_history("abc", caps, reports)
    assert history == {"a": [(100, 40), (240, 90)], "b": [(100, 5), (150, 5)], "c": [(60, 9)]}
    assert finished == {"b", "c"}
    with pytest.raises(ValueError, match="2 rounds of caps but 1"):
        rounds_history("abc", caps, reports[:1])
    with pytest.raises(ValueError, match="'z'"):
        rounds_history("abc", [{"z": 1}], [{}])


def test_plan_round_spreads_what_is_left_over_the_rounds_left_and_never_past_the_total():
    sites = ["rich", "poor"]
    first = plan_round(1000, sites, [], [], rounds=4)
    assert first == {"rich": 125, "poor": 125}  # a quarter of the budget, equal warm-up
    reports = [{"rich": _report(125, 60), "poor": _report(125, 2)}]
    second = plan_round(1000, sites, [first], reports, rounds=4)
    extra = {site: cap - 125 for site, cap in second.items()}
    assert sum(extra.values()) == 250  # 750 left over 3 rounds
    assert extra["rich"] > extra.get("poor", 0)
    # the last round (and any after it) hands out all that is left; a failed site gets nothing more
    caps = [first, {"rich": 300, "poor": 200}]
    reports.append({"rich": _report(300, 100)})  # poor's crawl failed: its cap counts as spent
    last = plan_round(1000, sites, caps, reports, rounds=2)
    assert last == {"rich": 800}
    assert plan_round(1000, sites, [*caps, last], [*reports, {"rich": _report(790, 120)}], rounds=2) == {"rich": 800}
    assert plan_round(1000, sites, [*caps, last], [*reports, {"rich": _report(800, 120)}], rounds=2) == {}


def test_plan_round_equal_is_one_round_of_equal_shares():
    assert plan_round(10, ["a", "b", "c"], [], [], rounds=4, allocation="equal") == {"a": 4, "b": 3, "c": 3}
    assert plan_round(10, ["a", "b", "c"], [{"a": 4, "b": 3, "c": 3}],
                      [{s: _report(3, 1) for s in "abc"}], rounds=4, allocation="equal") == {}


def test_plan_round_refuses_bad_settings():
    with pytest.raises(ValueError, match="allocation must be one of bandit, equal"):
        plan_round(10, ["a"], [], [], rounds=1, allocation="greedy")
    with pytest.raises(ValueError, match="rounds must be >= 1"):
        plan_round(10, ["a"], [], [], rounds=0)
