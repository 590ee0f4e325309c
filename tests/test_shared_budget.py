"""The shared request budget across sites: what the bandit gives each site, round by round."""

from __future__ import annotations

import pytest

from airflow_sbcrawl.crawler.shared_budget import equal_caps, next_caps


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


def test_equal_caps():
    assert equal_caps(1000, ["a", "b", "c"]) == {"a": 333, "b": 333, "c": 333}
