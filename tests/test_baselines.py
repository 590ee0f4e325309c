"""The paper's baselines (§4.3) as engine policies: complete crawls, and what each one learns."""

from __future__ import annotations

import pytest

from airflow_sbcrawl.crawler.config import CrawlConfig
from airflow_sbcrawl.crawler.policies import NewLink
from airflow_sbcrawl.crawler.policies.focused import FocusedPolicy
from airflow_sbcrawl.crawler.policies.oracles import TagPathOfflinePolicy, omniscient_fetches
from sbcrawl_dev.bench.runner import CrawlSpec, make_crawler, proxied
from sbcrawl_dev.bench.truth import site_truth
from sbcrawl_dev.sim import SimServer
from sbcrawl_dev.sim.profiles import get_profile
from sbcrawl_dev.sim.site import Site
from sbcrawl_dev.sim.web import Route


class FiniteSite(Site):
    """The tiny site with its endless calendar and facet pages answering 404 (the profile's calendar_trap
    switch is not honoured by the simulator yet): a finite site, on which "unlimited budget" means the crawl
    ends by exhausting its frontier, whatever order it visits pages in."""

    def route(self, url: str) -> Route:
        found = super().route(url)
        return Route("error", "error", (404,)) if found.kind == "trap" else found


@pytest.fixture(scope="module")
def finite_tiny():
    site = FiniteSite(get_profile("tiny"), 0)
    return site, site_truth(site)


def crawl_to_the_end(policy: str, finite_tiny, tmp_path):
    """A crawl of the finite tiny site with an unlimited budget: the crawler, its summary, and the URLs the
    server answered a GET with 200. The crawl must end by exhausting its frontier."""
    site, truth = finite_tiny
    with SimServer(site) as server, proxied(server):
        crawler = make_crawler(site, truth, CrawlSpec("tiny", 0, policy, 0, 0, 10**9), str(tmp_path))
        crawler.on_progress = None  # no benchmark stop: the crawl must end on its own
        summary = crawler.run()
        served = {e.url for e in server.log if e.method == "GET" and e.status == 200}
    assert summary.stop_reason.startswith("frontier exhausted")
    assert truth.targets > 20
    assert set(truth.target_sizes) <= served
    return crawler, summary


@pytest.mark.parametrize("policy", ["focused", "tp-off", "bfs", "dfs", "random", "sb-oracle"])
def test_baseline_finds_every_target_of_tiny_with_unlimited_budget(policy, finite_tiny, tmp_path):
    crawl_to_the_end(policy, finite_tiny, tmp_path)


def _link(i: int, url: str, anchor: str = "", depth: int = 2, tag_path: str = "html body a") -> NewLink:
    return NewLink(i, url, tag_path, anchor, depth)


def test_focused_ranks_a_target_like_link_first_after_training():
    policy = FocusedPolicy(seed=0, min_new_labels=20)
    ids = iter(range(10_000))
    policy.add([_link(next(ids), "http://s.example/", "home", 0)])
    # Crawl a toy site: news pages (no target) and dataset pages whose links are CSV files.
    for n in range(30):
        page = policy.next()
        assert page is not None
        policy.outcome(page, "html")
        policy.add([_link(next(ids), f"http://s.example/news/story-{n}", "Read the story"),
                    _link(next(ids), f"http://s.example/data/table-{n}.csv", "Download CSV")])
        policy.feedback(page, 0.0)
    while (link := policy.next()) is not None:
        url = policy._urls[policy._rows[link]]
        policy.outcome(link, "target" if url.endswith(".csv") else "html")
        policy.feedback(link, 0.0)
    assert policy.fits >= 1
    fresh = [_link(next(ids), f"http://s.example/news/story-{n}", "Read the story") for n in range(100, 110)]
    fresh.insert(4, _link(next(ids), "http://s.example/data/table-999.csv", "Download CSV"))
    policy.add(fresh)
    assert policy.next() == fresh[4].id
    scores = policy.score_links(fresh)
    assert scores[4] > 0.5 > max(scores[:4].max(), scores[5:].max())


def test_tp_off_learns_on_bfs_then_crawls_the_best_group_first():
    targets = {f"http://s.example/files/{n}.csv" for n in range(100)}
    config = CrawlConfig(start_url="http://s.example/")
    policy = TagPathOfflinePolicy(config, lambda u: u in targets, learning_pages=3)
    ids = iter(range(10_000))
    menu, cat = "html body nav ul li a", "html body main div.catalogue ul li h3 a"
    policy.add([_link(next(ids), "http://s.example/news", tag_path=menu),
                _link(next(ids), "http://s.example/cat/1", tag_path=cat),
                _link(next(ids), "http://s.example/about", tag_path=menu)])
    # Learning phase: BFS order; the catalogue page links two targets, the menu pages none.
    first = policy.next()
    policy.add([_link(next(ids), "http://s.example/news/2", tag_path=menu)])
    policy.feedback(first, 0)
    second = policy.next()
    policy.add([_link(next(ids), "http://s.example/files/1.csv", tag_path="html body main div.downloads a"),
                _link(next(ids), "http://s.example/files/2.csv", tag_path="html body main div.downloads a"),
                _link(next(ids), "http://s.example/cat/2", tag_path=cat)])
    policy.feedback(second, 0)
    third = policy.next()
    policy.feedback(third, 0)
    assert policy.learning
    # Ranking phase: the catalogue group (benefit 2) before the menu group (0) and the unknown one (0).
    fourth = policy.next()
    assert not policy.learning
    assert fourth == 6  # http://s.example/cat/2, found after the menu link news/2 (id 3)
    assert policy.describe()["top_groups"][0]["mean_benefit"] == 2.0
    rest = []
    while (link := policy.next()) is not None:
        rest.append(link)
    assert sorted(rest) == [3, 4, 5] and len(policy) == 0


def test_omniscient_fetches_each_target_once():
    fetches = omniscient_fetches({"http://a/1.csv": ("text/csv", 10), "http://a/2.pdf": ("application/pdf", 20)})
    assert fetches == [("http://a/1.csv", 10), ("http://a/2.pdf", 20)]
