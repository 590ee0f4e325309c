"""The default policy's credit, its frontier order, the drought stopper and the policy registry."""

from __future__ import annotations

import json

import numpy as np
import pytest

from airflow_sbcrawl.crawler.config import CrawlConfig
from airflow_sbcrawl.crawler.earlystop import DroughtStop, EarlyStopping, make_stopper
from airflow_sbcrawl.crawler.frontier import LeveledQueue
from airflow_sbcrawl.crawler.policies import NewLink, make_policy
from airflow_sbcrawl.crawler.policies.registry import NEEDS_TRUTH, POLICIES, PRODUCTION, WITHOUT_TRUTH
from airflow_sbcrawl.crawler.policies.sb import CreditedBanditPolicy, SleepingBanditPolicy
from airflow_sbcrawl.crawler.scheduler import Scheduler

PAGER = "html body main nav.pager a"
ITEM = "html body main div.view-content ul li h2 a"
SIDEBAR = "html body aside div.related ul li a"


class Site:
    """A toy site as a policy sees it: hand out ids, tell what each page revealed and yielded."""

    def __init__(self, policy) -> None:
        self.policy = policy
        self.next_id = 0
        self.kind: dict[int, str] = {}

    def reveal(self, kinds: list[str]) -> None:
        links = []
        for kind in kinds:
            path = {"pager": PAGER, "item": ITEM, "sidebar": SIDEBAR}[kind]
            links.append(NewLink(self.next_id, f"http://s.example/{kind}/{self.next_id}", path, "", 1))
            self.kind[self.next_id] = kind
            self.next_id += 1
        self.policy.add(links)


def _config(**kw) -> CrawlConfig:
    return CrawlConfig(start_url="http://s.example/", **kw)


def _crawl_listing_site(policy, pages: int) -> list[str]:
    """A publication archive (pager -> 10 items worth 2 targets each, plus the next pager) beside a news
    site (sidebar links, each page revealing 3 more and holding a target one time in ten)."""
    site = Site(policy)
    site.reveal(["pager", "sidebar", "sidebar"])
    crawled = []
    for _ in range(pages):
        link = policy.next()
        if link is None:
            break
        kind = site.kind[link]
        crawled.append(kind)
        reward = 0
        if kind == "pager":
            site.reveal(["item"] * 10 + ["pager"])
        elif kind == "item":
            reward = 2
        else:
            site.reveal(["sidebar"] * 3)
            reward = int(crawled.count("sidebar") % 10 == 1)
        policy.feedback(link, reward)
        if kind == "pager" and policy.promising():
            crawled.append("promising pager")
    return crawled


def test_pager_that_leads_to_datasets_earns_credit_only_with_the_new_policy():
    credited = CreditedBanditPolicy(_config(), np.random.default_rng(0))
    paper = SleepingBanditPolicy(_config(policy="sb-classifier-paper"), np.random.default_rng(0))
    crawled = {policy: _crawl_listing_site(policy, 300) for policy in (credited, paper)}
    # A listing page holds no target, but it is a step towards ten: the drought stopper hears of it.
    assert crawled[credited].count("promising pager") >= 10 and "promising pager" not in crawled[paper]
    means = {}
    for policy in (credited, paper):
        pager, sidebar = (policy.actions.assign(policy.vectorizer.transform_one(p), 0, key=p) for p in (PAGER, SIDEBAR))
        means["sb-classifier" if policy is credited else "sb-classifier-paper"] = (
            policy.bandit.means[pager], policy.bandit.means[sidebar])
    # The paper's reward: the listing page holds no file, so the pager is worth less than a news page.
    assert means["sb-classifier-paper"][0] == 0.0 < means["sb-classifier-paper"][1]
    # Credited: it is worth the items it leads to, more than the news pages.
    assert means["sb-classifier"][0] > 2 * means["sb-classifier"][1] > 0


def test_self_reproducing_links_do_not_inflate_credit():
    # Every sidebar page reveals three more sidebar links and holds a target now and then: a branching
    # process whose summed surplus would grow without bound if the backlog did not discount it.
    policy = CreditedBanditPolicy(_config(), np.random.default_rng(0))
    site = Site(policy)
    site.reveal(["sidebar"] * 3)
    for step in range(2000):
        link = policy.next()
        site.reveal(["sidebar"] * 3)
        policy.feedback(link, 1 if step % 10 == 0 else 0)
    assert max(policy.bandit.means[: len(policy.actions)]) < 2.0
    assert policy.rho < 2.0


def test_links_of_a_better_page_go_first_within_an_action():
    policy = CreditedBanditPolicy(_config(), np.random.default_rng(0))
    site = Site(policy)
    site.reveal(["item", "item"])
    first, second = policy.next(), policy.next()
    site_ids = site.next_id
    policy.feedback(first, 0)  # nothing revealed: the pending links of `first` do not exist
    site.reveal(["pager"])  # revealed by `second`, a page that paid
    policy.feedback(second, 5)
    site.reveal(["pager"])  # revealed by a page that is never credited (the start page, say): level 0
    for _ in range(20):  # whatever the draw, the pager found on the paying page comes before the other one
        copy = CreditedBanditPolicy(_config(), np.random.default_rng(_))
        copy.restore(json.loads(json.dumps(policy.state())), policy.arrays())
        assert copy.next() == site_ids


def test_credited_policy_round_trips_through_checkpoint_arrays():
    config = _config()
    policy = CreditedBanditPolicy(config, np.random.default_rng(0))
    _crawl_listing_site(policy, 50)
    state = json.loads(json.dumps(policy.state()))
    arrays = {k: v.copy() for k, v in policy.arrays().items()}
    copy = CreditedBanditPolicy(config, np.random.default_rng(0))
    copy.restore(state, arrays)
    assert len(copy) == len(policy) > 0
    assert copy.rho == pytest.approx(policy.rho)
    assert sorted(copy.next() for _ in range(len(copy))) == sorted(policy.next() for _ in range(len(policy)))


def test_leveled_queue_pops_highest_level_first_and_round_trips():
    queue = LeveledQueue()
    for item, level in [(1, 0), (2, 3), (3, 3), (4, 1), (5, 0)]:
        queue.add(item, level)
    ids, levels = queue.to_arrays()
    copy = LeveledQueue.from_arrays(ids, levels)
    rng = np.random.default_rng(0)
    for q in (queue, copy):
        popped = [q.pop(rng) for _ in range(5)]
        assert set(popped[:2]) == {2, 3} and popped[2] == 4 and set(popped[3:]) == {1, 5}
        assert len(q) == 0


def test_drought_stop_is_relative_to_the_crawls_own_rate():
    rich = DroughtStop(min_pages=300, expected=30)
    for page in range(1, 1001):  # 2 targets a page, then nothing
        rich.update(page, 2 * min(page, 500))
    assert rich.should_stop and "no new target and no promising page in the last 500 pages" in rich.reason

    walking = DroughtStop(min_pages=300, expected=30)
    for page in range(1, 1000):  # no target after page 500, but the policy walks a listing chain
        walking.update(page, 2 * min(page, 500), promising=page % 50 == 0)
        assert not walking.should_stop, page

    sparse = DroughtStop(min_pages=300, expected=30)
    targets = 0
    for page in range(1, 20_001):  # one target every 400 pages, steadily: 0.0025 a page
        targets += page % 400 == 0
        sparse.update(page, targets)
        assert not sparse.should_stop, page
    assert sparse.window() == 12_000

    stalled = DroughtStop(min_pages=300, expected=30)
    for page in range(1, 30_001):
        stalled.update(page, min(page // 400, 25))  # 25 targets over 10,000 pages, then none
        if stalled.should_stop:
            break
    assert 10_000 + 12_000 <= page <= 10_000 + 12_100


def test_promising_pages_extend_a_drought_until_it_is_as_long_as_the_crawl_before_it():
    """A trap that the policy keeps finding promising (calendar pages credited by their own next links) ends
    the crawl once the pages since the last target are as many as those before it: the tiny site's crawl
    once spent its whole budget so."""
    walking = DroughtStop(min_pages=300, expected=30)
    for page in range(1, 5001):  # no target after page 500, and a promising page every 8
        walking.update(page, 2 * min(page, 500), promising=page % 8 == 0)
        if walking.should_stop:
            break
    assert page == 500 + 500 and walking.promise_spent and not walking.stale_promise
    assert "no new target in the last 500 pages, as many as the crawl read up to its last target" in walking.reason


def test_drought_stop_waits_a_share_of_the_crawl_before_it():
    def first_stop(share: float) -> int | None:
        stop = DroughtStop(min_pages=300, expected=30, share=share)
        for page in range(1, 8001):  # a rich section (2 a page), then one target every 400 pages
            stop.update(page, 2 * page if page <= 2000 else 4000 + (page - 2000) // 400)
            if stop.should_stop:
                return page
        return None

    assert first_stop(0.0) == 2300  # sized by the rich section's rate alone: the sparse rest is lost
    assert first_stop(0.5) is None
    stop = DroughtStop(min_pages=300, expected=30, share=0.5)
    for page in range(1, 2351):  # everything in the first 2,000 pages, then nothing
        stop.update(page, 2 * min(page, 2000))
    # The look comes when the drought is long for the crawl's rate; the stop only against the whole crawl.
    assert stop.should_look and not stop.should_stop
    stop.update(3000, 4000)
    assert stop.window() == 1000 and stop.should_stop
    assert not EarlyStopping().should_look  # the paper's rule has no look


def test_drought_stop_never_judges_a_crawl_that_found_nothing_yet():
    stop = DroughtStop(min_pages=300, expected=30)
    for page in range(1, 50_001):
        stop.update(page, 0)
    assert not stop.should_stop


def test_the_paper_policy_keeps_the_papers_stop_rule():
    assert isinstance(make_stopper(_config(policy="sb-classifier-paper").effective_stop_rule,
                                   _config()), EarlyStopping)
    assert isinstance(make_stopper(_config().effective_stop_rule, _config()), DroughtStop)
    assert _config(policy="sb-classifier-paper", stop_rule="drought").effective_stop_rule == "drought"
    assert _config(policy="focused").effective_stop_rule == "paper"  # it cannot say what is promising


def test_registry_names_every_policy_once_and_makes_each():
    assert len(set(POLICIES)) == len(POLICIES)
    assert "sb-classifier" in PRODUCTION and "sb-classifier-paper" in PRODUCTION
    assert not set(NEEDS_TRUTH) & set(WITHOUT_TRUTH) and not set(NEEDS_TRUTH) & set(PRODUCTION)
    for name in POLICIES:
        truth = (lambda url: url.endswith(".csv")) if name in NEEDS_TRUTH else None
        policy = make_policy(_config(policy=name), np.random.default_rng(0), is_target=truth)
        assert len(policy) == 0
    with pytest.raises(ValueError, match="oracle"):
        make_policy(_config(policy="tp-off"), np.random.default_rng(0))


def test_url_template_groups_siblings_and_keeps_query_keys():
    from airflow_sbcrawl.crawler.urls import url_template

    assert url_template("http://s.example/en/news/births-2009") == url_template("http://s.example/en/news/x-2")
    assert url_template("http://s.example/en/news/births-2009") == "s.example/en/news/*"
    assert url_template("http://s.example/en/publications?page=3") == "s.example/en/publications?page"
    assert url_template("http://s.example/en/publications?page=3") != url_template("http://s.example/en/news?page=3")
    assert url_template("http://data.s.example/dataset/12") != url_template("http://s.example/dataset/12")
    assert url_template("http://s.example/cat-1/cat-2/") == "s.example/cat-N/*"
    assert url_template("http://s.example/downloads") == "s.example/downloads"


def test_an_action_without_evidence_is_drawn_uniformly_over_its_links():
    # One tag path, two URL templates: 90 news teasers and 10 other links. While nothing has paid, the
    # draw is over the action's links (as the paper's), not round-robin over its templates.
    policy = CreditedBanditPolicy(_config(), np.random.default_rng(3))
    links = [NewLink(i, f"http://s.example/news/item-{i}" if i < 90 else f"http://s.example/other{i}/x", ITEM, "", 1)
             for i in range(100)]
    policy.add(links)
    first = [policy.next() for _ in range(40)]
    # Uniform: about 2 of the 10 in the first 20 draws; round-robin over the two templates: all 10.
    assert sum(i >= 90 for i in first[:20]) <= 6
    for link in first:
        policy.feedback(link, 0)


def test_a_reward_counts_in_full_while_other_pulls_of_its_action_are_in_flight():
    from airflow_sbcrawl.crawler.bandit import SleepingBandit

    bandit = SleepingBandit(alpha=1.0)
    bandit.grow(2)
    rng = np.random.default_rng(0)
    only_first = np.array([True, False])
    bandit.select(only_first, rng)
    bandit.select(only_first, rng)  # two pages of action 0 out at once
    bandit.reward(0, 3.0)
    assert bandit.counts[0] == 2 and bandit.means[0] == 3.0  # the bonus sees both pulls, the mean one reward
    bandit.reward(0, 1.0)
    assert bandit.means[0] == 2.0
    # A state saved before rewards were counted apart restores with rewards = pulls.
    restored = SleepingBandit(alpha=1.0)
    restored.restore(np.array([4.0, 1.0]), np.array([0.5, 2.0]), 5)
    assert list(restored.rewarded) == [4.0, 1.0]


def test_a_droughts_last_look_takes_links_of_templates_that_paid_and_only_those():
    policy = CreditedBanditPolicy(_config(), np.random.default_rng(0))
    site = Site(policy)
    site.reveal(["item"] * 20 + ["sidebar"] * 20)
    crawled = []
    for _ in range(6):  # items pay, sidebars never
        link = policy.next()
        crawled.append(link)
        policy.feedback(link, 2 if site.kind[link] == "item" else 0)
    assert "item" in {site.kind[i] for i in crawled}
    before = len(policy)
    look = policy.last_look(30)
    assert look and {site.kind[i] for i in look} == {"item"}  # the paid template's links, not the sidebars
    assert len(policy) == before - len(look)
    assert set(look).isdisjoint(policy.next() for _ in range(len(policy)))  # taken out of the frontier
    assert SleepingBanditPolicy(_config(policy="sb-classifier-paper"), np.random.default_rng(0)).last_look(5) == []


def test_a_warm_runs_promise_without_new_targets_extends_a_drought_by_ten_windows_at_most():
    # A warm run of a site where the last runs found 2,000 datasets in 4,000 pages: a window of 60 pages.
    warm, cold = DroughtStop(min_pages=50, expected=30), DroughtStop(min_pages=50, expected=30)
    warm.prior(2000, 4000)
    stopped_at = None
    for page in range(1, 3001):  # nothing new, and every page promising by the restored model
        for stop in (warm, cold):
            stop.update(page, 0, promising=True)
        if stopped_at is None and warm.should_stop:
            stopped_at = page
    assert stopped_at == 10 * 60 and "10 times the window" in warm.reason
    assert not cold.should_stop  # a cold run without a rate to judge by: only the budget ends it
    # and it ends the crawl though the links left promise more than es_expected targets (by the rates the
    # restored model learned from the last runs)
    class Promising:
        def promising(self) -> bool:
            return True

        def expected_targets(self) -> float:
            return 500.0

    for stop in (warm, cold):
        scheduler = Scheduler(Promising(), stop, early_stopping=True, es_expected=30.0)
        assert scheduler.ends_crawl() is (stop is warm)
    # a new target starts the count again
    walking = DroughtStop(min_pages=50, expected=30)
    walking.prior(2000, 4000)
    for page in range(1, 3001):
        walking.update(page, page // 500, promising=True)
        assert not walking.should_stop, page


def test_a_drought_gets_one_last_look_then_stops():
    stop = DroughtStop(min_pages=300, expected=30)
    stop.update(100, 50)
    stop.update(500, 50)
    assert stop.should_stop and not stop.looked()
    stop.note_look()
    assert stop.looked()
    stop.update(530, 50)
    assert stop.should_stop and stop.looked()  # the look found nothing: now it stops
    stop.update(540, 51)  # had it found a dataset, the drought would start over, with its own look
    stop.update(900, 51)
    assert stop.should_stop and not stop.looked()
    restored = DroughtStop()
    restored.restore(stop.state())
    assert not restored.looked() and restored.should_stop


FILE = "html body main div.field--name-field-attachment span.file a"


def test_a_template_of_files_the_classifier_missed_is_drained_before_the_bandit_chooses():
    policy = CreditedBanditPolicy(_config(), np.random.default_rng(3))
    news = [NewLink(i, f"http://s.example/news/item-{i}", SIDEBAR, "", 1) for i in range(300)]
    files = [NewLink(1000 + i, f"http://s.example/files/2020-0{i % 9}/table-{i}", FILE, "", 1) for i in range(40)]
    policy.add(news + files)
    order = []
    while (link := policy.next()) is not None:
        is_file = link >= 1000
        order.append(is_file)
        policy.outcome(link, "target" if is_file else "html")
        policy.feedback(link, 1 if is_file else 0)
    third = [i for i, is_file in enumerate(order) if is_file][2]
    # Once three of its links were files, the template's 37 others come one after the other.
    assert order[third + 1: third + 38] == [True] * 37
    assert third < 200  # found by the bandit among 300 news links, not left for last


def test_a_file_found_later_is_credited_to_the_page_that_listed_it():
    policy = CreditedBanditPolicy(_config(), np.random.default_rng(0))
    policy.add([NewLink(0, "http://s.example/tables/t-1", ITEM, "", 1)])
    page = policy.next()
    policy.feedback(page, 0.0)
    action = int(np.flatnonzero(policy.bandit.rewarded)[0])
    rho = policy.rho
    policy.credit_late(page, 3.0)
    assert policy.bandit.means[action] == 3.0 and policy.sub_bandit.means[0] == 3.0 and policy.rho > rho
    policy.credit_late(12345, 3.0)  # a page this policy never handed out: nothing to credit
    assert policy.bandit.means[action] == 3.0
    restored = CreditedBanditPolicy(_config(), np.random.default_rng(0))
    restored.restore(json.loads(json.dumps(policy.state())), policy.arrays())
    restored.credit_late(page, 1.0)
    assert restored.bandit.means[action] == 4.0


def test_the_frontier_promises_what_its_templates_pages_held():
    policy = CreditedBanditPolicy(_config(), np.random.default_rng(0))
    site = Site(policy)
    site.reveal(["item"] * 50 + ["sidebar"] * 50)
    assert policy.expected_targets() == 0.0  # nothing handed out yet: no evidence
    handed = {"item": 0, "sidebar": 0}
    while min(handed.values()) < 10:
        link = policy.next()
        kind = site.kind[link]
        handed[kind] += 1
        # items hold 3 targets one time in two, sidebar pages never
        policy.feedback(link, 3 * (handed["item"] % 2) if kind == "item" else 0)
    item_targets = sum(3 * (k % 2) for k in range(1, handed["item"] + 1))
    rate = item_targets / (handed["item"] + handed["sidebar"])  # the crawl's targets per page
    items_left, sidebars_left = 50 - handed["item"], 50 - handed["sidebar"]
    # Each template's own rate, shrunk towards the crawl's as if it had been given two pages more.
    expected = (items_left * (item_targets + 2 * rate) / (handed["item"] + 2)
                + sidebars_left * (0 + 2 * rate) / (handed["sidebar"] + 2))
    assert policy.expected_targets() == pytest.approx(expected)
    assert SleepingBanditPolicy(_config(policy="sb-classifier-paper"),
                                np.random.default_rng(0)).expected_targets() == 0.0


def test_new_links_of_a_rich_page_are_followed_before_the_bandit_chooses():
    def after_catalogue(reward: int) -> set[int]:
        policy = CreditedBanditPolicy(_config(), np.random.default_rng(1))
        news = [NewLink(i, f"http://s.example/news/item-{i}", SIDEBAR, "", 1) for i in range(300)]
        items = [NewLink(1000 + i, f"http://s.example/tables/t-{i}", ITEM, "", 1) for i in range(300)]
        policy.add(news + items)
        for _ in range(100):
            link = policy.next()
            policy.feedback(link, 5 if link >= 1000 else 0)  # table pages pay, news pages do not
        policy.add([NewLink(500, "http://s.example/catalogue", "html body footer a", "", 1)])
        assert policy.next() == 500  # a new action is tried at once
        # The catalogue page: its files were fetched with it; its pager (in the sidebar's action) is new.
        policy.add([NewLink(501 + k, f"http://s.example/catalogue?page={k + 2}", SIDEBAR, "", 2)
                    for k in range(3)])
        policy.feedback(500, reward)
        return {policy.next() for _ in range(3)}

    assert after_catalogue(400) == {501, 502, 503}  # 400 files: its "page 2" to "page 4" come next
    assert not after_catalogue(1) & {501, 502, 503}  # an ordinary page: the bandit goes on with the tables


def test_a_warm_runs_drought_goes_on_from_the_last_runs():
    # The last run read 1,500 pages for 1,000 targets (a window of 50 pages) and its last 1,200 found none.
    carried = DroughtStop(min_pages=50, expected=30)
    carried.prior(1000, 1500, drought=1200)
    fresh = DroughtStop(min_pages=50, expected=30)
    fresh.prior(1000, 1500)
    for page in range(1, 21):
        carried.update(page, 0, promising=True)
        fresh.update(page, 0, promising=True)
    assert carried.stale_promise and carried.should_stop and carried.drought() == 1220
    assert "(1200 of them at the end of the last run)" in carried.reason
    assert not fresh.should_stop and fresh.drought() == 20
    # A new target ends the drought, whatever the last run handed on.
    carried.update(21, 1)
    assert not carried.should_stop and carried.drought() == 0
    assert EarlyStopping().drought() == 0


GOAL = "html body main div.goals a"
INDICATOR = "html body main div.goal ul li a"
NEXT_BUTTON = "html body main div.banner a.btn"


def _crawl_goal_platform(chained: bool, seed: int, out: int = 1, goals: int = 8,
                         per_goal: int = 8, dryness: float = 0.0) -> tuple[int, int, int]:
    """An SDG platform as the policy sees it: the home page links the goal pages, each goal page its
    indicators (a target each); with ``chained``, every indicator page also links the previous and the next
    indicator, as the engine reports them (new ones added, known ones ``relinked``). Up to ``out`` pages
    are handed out before the oldest is fed back, until 90 % of the targets: (goal pages fetched, pages
    fetched, times the policy held back a link while pages were out). ``dryness``: the drought the crawl is
    in throughout (``Policy.drought``)."""
    policy = CreditedBanditPolicy(_config(), np.random.default_rng(seed))
    policy.drought(dryness)
    indicators = [f"{g}-{i}" for g in range(goals) for i in range(per_goal)]
    ids: dict[str, int] = {}

    def links_of(page: str) -> list[tuple[str, str]]:
        if page == "home":
            return [(f"goal{g}", GOAL) for g in range(goals)]
        if page.startswith("goal"):
            return [(f"{page[4:]}-{i}", INDICATOR) for i in range(per_goal)]
        k = indicators.index(page)
        return [(indicators[j], NEXT_BUTTON) for j in (k - 1, k + 1) if chained and 0 <= j < len(indicators)]

    def read(page: str) -> None:
        new, known = [], []
        for name, path in links_of(page):
            if name in ids:
                known.append(ids[name])
            else:
                ids[name] = len(ids)
                new.append(NewLink(ids[name], f"http://s.example/{name}/", path, "", 1))
        if getattr(policy, "counts_relinks", False):  # as the engine tells the policies that ask
            policy.relinked(known)
        policy.add(new)

    read("home")
    found = goal_pages = fetched = held = 0
    pages_out: list[int] = []
    while found < 0.9 * len(indicators):
        link = policy.next() if len(pages_out) < out else None
        if link is not None:
            pages_out.append(link)
            continue
        held += len(pages_out) < out and len(policy) > 0
        link = pages_out.pop(0)  # the oldest page out comes back
        page = next(name for name, i in ids.items() if i == link)
        read(page)
        fetched += 1
        is_goal = page.startswith("goal")
        goal_pages += is_goal
        found += not is_goal
        policy.feedback(link, 0 if is_goal else 1)
    return goal_pages, fetched, held


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_hub_pages_whose_links_other_pages_give_too_are_not_explored(seed):
    # Every indicator links the next one: after a goal page or two the rest are reached without them
    # (AUER alone explores all eight: they hold no target but their few pulls earn them a large bonus).
    goal_pages, fetched, _ = _crawl_goal_platform(chained=True, seed=seed)
    assert goal_pages <= 3 and fetched <= 60
    # Where the goal pages are the only way to the indicators, each is still fetched.
    assert _crawl_goal_platform(chained=False, seed=seed)[0] == 8


def test_relinks_are_counted_once_against_the_action_that_revealed_the_link():
    policy = CreditedBanditPolicy(_config(), np.random.default_rng(0))
    site = Site(policy)
    site.reveal(["pager"])
    page = policy.next()
    site.reveal(["item"] * 4)  # links 1-4, revealed by the pager page
    policy.feedback(page, 0)
    action = int(policy.actions.assign(policy.vectorizer.transform_one(PAGER), 0, key=PAGER))
    policy.relinked([1, 2, 2, 99])
    policy.relinked([1])
    assert policy._hub_revealed[action] == 4 and policy._hub_relinked[action] == 2
    restored = CreditedBanditPolicy(_config(), np.random.default_rng(0))
    restored.restore(json.loads(json.dumps(policy.state())), policy.arrays())
    assert restored._hub_relinked[action] == 2 and restored._revealer[3] == action and restored._revealer[1] == -1


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_hubs_reached_around_get_their_bonus_back_in_a_drought(seed):
    # In a drought the pages that would reach a hub's links are not being read: a hub is explored as AUER
    # explores any action (all eight goal pages), or early stopping ends the crawl with its pages unread
    # (the tiny site's economy archives, the only pages listing its last five datasets).
    assert _crawl_goal_platform(chained=True, seed=seed, dryness=1.0)[0] == 8
    assert 4 <= _crawl_goal_platform(chained=True, seed=seed, dryness=0.5)[0] < 8
    assert _crawl_goal_platform(chained=True, seed=seed, dryness=0.0)[0] <= 3


def test_a_droughts_dryness_rises_from_half_a_rate_window_to_a_whole_one():
    stop = DroughtStop(min_pages=50, expected=30)
    stop.update(40, 0)
    assert stop.dryness() == pytest.approx(0.6)  # no rate yet: in min_pages
    stop.update(100, 50)  # 0.5 targets a page: a rate window of 60 pages
    assert stop.dryness() == 0.0
    stop.update(130, 50, promising=True)  # half a window: the gaps between targets of a crawl finding them
    assert stop.dryness() == 0.0
    stop.update(145, 50, promising=True)  # promising pages renew a drought for the stop, not for this
    assert stop.dryness() == pytest.approx(0.5)
    stop.update(160, 50)
    assert stop.dryness() == 1.0
    restored = DroughtStop(min_pages=50, expected=30)
    restored.restore(stop.state())
    assert restored.dryness() == 1.0
    stop.update(161, 51)
    assert stop.dryness() == 0.0
    assert EarlyStopping().dryness() == 0.0  # the paper's rule: the hub rule as it is


def test_the_scheduler_tells_the_policy_how_deep_the_drought_is():
    policy = CreditedBanditPolicy(_config(), np.random.default_rng(0))
    scheduler = Scheduler(policy, DroughtStop(min_pages=50, expected=30), early_stopping=True, es_expected=30.0)
    scheduler.page_done(40, 0)
    assert policy._dryness == pytest.approx(0.6)
    scheduler.page_done(41, 1)
    assert policy._dryness == 0.0


def test_a_last_look_takes_pages_of_a_template_that_paid_where_another_action_holds_them():
    # Dataset pages paid as the catalogue's items; a facet search (a sidebar that never paid) met three
    # more first, so they wait among the facet's links, in a template never tried there.
    policy = CreditedBanditPolicy(_config(), np.random.default_rng(0))
    policy.add([NewLink(i, f"http://s.example/dataset/{i}", ITEM, "", 1) for i in range(4)])
    policy.add([NewLink(10 + i, f"http://s.example/search?f={i}", SIDEBAR, "", 1) for i in range(4)])
    for _ in range(7):
        link = policy.next()
        policy.feedback(link, 2 if link < 10 else 0)
    last = policy.next()  # the eighth page reveals the facet's links
    policy.add([NewLink(20 + i, f"http://s.example/dataset/{20 + i}", SIDEBAR, "", 1) for i in range(3)])
    policy.add([NewLink(30 + i, f"http://s.example/search?f={30 + i}", SIDEBAR, "", 1) for i in range(5)])
    policy.feedback(last, 2 if last < 10 else 0)
    assert not policy.last_look(0) and len(policy) == 8
    # the dataset pages the facet met first, not the facet's own pages, which never paid
    assert sorted(policy.last_look(30)) == [20, 21, 22]


class _LookingPolicy:
    """A policy whose every page looks promising and whose frontier promises nothing: what it hands a look."""

    def __init__(self, look: list[int]) -> None:
        self.look = look
        self.dryness = 0.0

    def promising(self) -> bool:
        return True

    def drought(self, dryness: float) -> None:
        self.dryness = dryness

    def last_look(self, limit: int) -> list[int]:
        look, self.look = self.look[:limit], self.look[limit:]
        return look

    def expected_targets(self) -> float:
        return 0.0


def test_a_drought_that_promising_pages_kept_short_gets_its_look_before_it_ends_the_crawl():
    policy = _LookingPolicy([7, 8])
    scheduler = Scheduler(policy, DroughtStop(min_pages=50, expected=30), early_stopping=True, es_expected=30.0)
    for page in range(1, 101):
        scheduler.page_done(page, page // 2)  # 50 targets in 100 pages: a rate window of 60
    for page in range(101, 200):
        scheduler.page_done(page, 50)  # every page promising, none with a target
        assert not scheduler.ends_crawl()
    scheduler.page_done(200, 50)  # as many pages since the last target as up to it
    assert scheduler.stopper.promise_spent and not scheduler.stopper.should_look
    assert not scheduler.ends_crawl()  # the look first: the best links left
    assert [scheduler.next(0), scheduler.next(0)] == [7, 8]
    assert scheduler.ends_crawl() and policy.dryness == 1.0
    scheduler.page_done(201, 50)  # one look per drought of targets, however often promising pages renew it
    assert scheduler.ends_crawl()


def test_a_rate_is_measured_over_min_pages_at_least():
    # Two files on the first pages, then none: no evidence of a file a page, so no drought of fifty pages
    stop = DroughtStop(min_pages=50, expected=30)
    stop.update(2, 2)
    for page in range(3, 120):
        stop.update(page, 2, promising=True)
        assert not stop.should_stop and not stop.should_look, page
    assert stop.window() == 750  # 2 targets in 50 pages: 30 targets take 750
    # a rate over more pages than that is the crawl's own
    steady = DroughtStop(min_pages=50, expected=30)
    steady.update(100, 50)
    assert steady.window() == 60
