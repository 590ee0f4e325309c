"""TRES and Anthelion as engine policies: complete crawls of a simulated site, checkpoints through the real
checkpoint format, and what each one learns."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from airflow_sbcrawl.crawler import state as ckpt
from airflow_sbcrawl.crawler.config import CrawlConfig
from airflow_sbcrawl.crawler.policies import NewLink, make_policy
from airflow_sbcrawl.crawler.policies.anthelion import AnthelionPolicy, section
from airflow_sbcrawl.crawler.policies.online import hashed, tokens
from airflow_sbcrawl.crawler.policies.tres import TreeFrontier, TresPolicy, keyword_in_anchor, seeded_classifier
from sbcrawl_dev.bench.runner import CrawlSpec, make_crawler, proxied
from sbcrawl_dev.bench.truth import site_truth
from sbcrawl_dev.sim import SimServer
from sbcrawl_dev.sim.profiles import get_profile
from tests.test_baselines import FiniteSite, crawl_to_the_end

BASELINES = ["tres", "anthelion"]


@pytest.fixture(scope="module")
def finite_tiny():
    site = FiniteSite(get_profile("tiny"), 0)
    return site, site_truth(site)


@pytest.mark.parametrize("policy", BASELINES)
def test_finds_every_target_of_tiny_with_unlimited_budget(policy, finite_tiny, tmp_path):
    crawler, summary = crawl_to_the_end(policy, finite_tiny, tmp_path)
    _, truth = finite_tiny
    assert summary.targets == truth.targets
    assert crawler.policy.describe()  # it says something about what it learnt


def _copy_through_checkpoint(policy, config, rng_state):
    files = ckpt.encode(policy.state(), policy.arrays(), [])
    state, arrays, _ = ckpt.decode(files)
    rng = np.random.default_rng()
    rng.bit_generator.state = rng_state
    twin = make_policy(config, rng)
    twin.restore(state, arrays)
    return twin


@pytest.mark.parametrize("policy", BASELINES)
def test_checkpoint_round_trip_continues_the_same_crawl(policy, finite_tiny, tmp_path):
    """Halfway through a real crawl, a policy restored from the checkpoint files (with the same random
    state) hands out the same links in the same order as the original."""
    site, truth = finite_tiny
    with SimServer(site) as server, proxied(server):
        crawler = make_crawler(site, truth, CrawlSpec("tiny", 0, policy, 0, 0, 120), str(tmp_path))
        crawler.on_progress = None
        crawler.run()
    original = crawler.policy
    assert len(original) > 10
    twin = _copy_through_checkpoint(original, crawler.config, copy.deepcopy(crawler.run_state.rng.bit_generator.state))
    assert len(twin) == len(original)
    assert twin.describe() == original.describe()
    new_ids = iter(range(10**6, 2 * 10**6))
    for step in range(10_000):
        link = original.next()
        assert twin.next() == link
        if link is None:
            break
        new = [NewLink(next(new_ids), f"http://x.example/d{step}/p", "html body a", "Download CSV", 3)]
        for p in (original, twin):
            p.outcome(link, "html")
            if step % 7 == 0:  # some pages reveal more links, some pay
                p.add(new)
            p.feedback(link, float(step % 5 == 0))
    assert link is None and len(original) == len(twin) == 0


def test_registry_offers_both_as_baselines_without_truth():
    from airflow_sbcrawl.crawler.policies.registry import REGISTRY, WITHOUT_TRUTH

    for name in BASELINES:
        assert name in WITHOUT_TRUTH and not REGISTRY[name].production
        assert make_policy(CrawlConfig(start_url="http://s.example/", policy=name),
                           np.random.default_rng(0)).classifies_links


# -- TRES -------------------------------------------------------------------------------------------------
def test_tres_classifier_is_seeded_with_the_papers_keywords():
    model = seeded_classifier()
    assert model.proba(hashed(tokens("Download CSV", 2), model.dim)) > 0.8
    assert model.proba(hashed(tokens("About us", 2), model.dim)) < 0.5
    assert keyword_in_anchor("Get dataset here") and not keyword_in_anchor("Contact")


def test_tree_frontier_splits_on_the_feature_that_explains_rewards():
    tree = TreeFrontier(min_leaf=5, split_every=10)
    features = {}
    rng = np.random.default_rng(0)
    for i in range(40):  # frontier samples: feature 3 on for half of them
        x = rng.random(8)
        x[3] = float(i % 2)
        features[i] = x
        tree.add_frontier(i, x)
    for _ in range(20):  # experience: reward is exactly feature 3
        x = rng.random(8)
        x[3] = float(rng.random() < 0.5)
        tree.add_experience(x, x[3], features)
    assert tree.feature[0] == 3 and 0 < tree.threshold[0] < 1
    by_leaf = {node: {int(features[i][3]) for i in leaf.frontier} for node, leaf in tree.leaves.items()}
    assert sorted(map(sorted, by_leaf.values())) == [[0], [1]]
    assert sum(len(leaf.frontier) for leaf in tree.leaves.values()) == 40


def test_tres_learns_to_prefer_links_below_relevant_pages():
    """Pages found on a relevant page pay, the others never: after a while TRES picks the former."""
    policy = TresPolicy(np.random.default_rng(0), rate=0.2)
    ids = iter(range(10**6))
    kinds: dict[int, bool] = {}

    def reveal(parent_pays: bool) -> None:
        links = []
        for _ in range(2):
            link_id = next(ids)
            kinds[link_id] = parent_pays  # a link pays when its parent page paid
            links.append(NewLink(link_id, f"http://s.example/p{link_id}", "html body a", "page", 2))
        policy.add(links)

    reveal(True)
    picks = []
    for _ in range(400):
        link = policy.next()
        pays = kinds.pop(link)
        reveal(pays)
        policy.feedback(link, float(pays))
        picks.append(pays)
    assert policy.q[0] > 0  # the parent-reward feature is worth something
    assert sum(picks[-100:]) > 90


# -- Anthelion --------------------------------------------------------------------------------------------
def test_section_is_host_and_first_directory():
    assert section("http://s.example/census/2020/table") == "s.example/census"
    assert section("http://s.example/about") == "s.example/"


def test_anthelion_bandit_goes_to_the_section_that_pays_and_classifier_orders_within():
    policy = AnthelionPolicy(np.random.default_rng(0), lam=0.0)
    ids = iter(range(10**6))

    def links(prefix: str, n: int, anchor: str = "page") -> list[NewLink]:
        return [NewLink(next(ids), f"http://s.example/{prefix}/p{next(ids)}", "html body a", anchor, 2)
                for _ in range(n)]

    policy.add(links("news", 20) + links("stats", 20))
    for _ in range(20):
        link = policy.next()
        url = policy._current_info[0]
        policy.feedback(link, float("/stats/" in url))
    assert policy._good[policy._index["s.example/stats"]] > 0
    # the success rate of stats is now above news': the next pages come from stats
    policy.add(links("stats", 5) + links("news", 5))
    picks = []
    for _ in range(5):
        link = policy.next()
        picks.append(policy._current_info[0])
        policy.feedback(link, 1.0)
    assert all("/stats/" in u for u in picks)
    # within one section the classifier's best link goes first: stats pages paid, news pages did not
    assert policy.classifier.log_odds(hashed(tokens("http://s.example/stats/x"), 10_000, "u:")) > \
        policy.classifier.log_odds(hashed(tokens("http://s.example/news/x"), 10_000, "u:"))
