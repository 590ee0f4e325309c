"""Link text in the default policy: rows read beside links, words learned per site, tag paths without
generated ids; and a crawl of a hand-written site on 127.0.0.1 where only the anchor tells pages apart."""

from __future__ import annotations

import json
import random
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from airflow_sbcrawl.crawler import CrawlConfig, Crawler, LocalSink, LocalStateStore
from airflow_sbcrawl.crawler.actions import ActionIndex
from airflow_sbcrawl.crawler.earlystop import make_stopper
from airflow_sbcrawl.crawler.frontier import LeveledQueue
from airflow_sbcrawl.crawler.html import extract_links
from airflow_sbcrawl.crawler.linktext import LinkTextModel, link_features
from airflow_sbcrawl.crawler.policies import NewLink
from airflow_sbcrawl.crawler.policies.sb import CreditedBanditPolicy
from airflow_sbcrawl.crawler.tagpath import TagPathVectorizer

GOAL_PAGE = b"""<html><body><div id="main-content" class="container">
<div class="row goal-indicator"><div class="col indicator-name">
  <span class="indicator-name"><a href="/1-1-1/">Population below the poverty line</a></span>
  <ul class="tags"><li><span class="status">Reported online</span></li></ul></div></div>
<div class="row goal-indicator"><div class="col indicator-name">
  <span class="indicator-name"><a href="/1-2-1/" title="Indicator 1.2.1">Poverty by age</a></span>
  <ul class="tags"><li><span class="status">Exploring data sources</span></li></ul></div></div>
<ul class="menu"><li><a href="/about/">About</a></li><li><a href="/faq/">FAQ</a></li></ul>
<table><tr><td><a href="/t.csv">t.csv</a></td><td>CSV, 12 kB, 2024-05-01</td></tr></table>
</div></body></html>"""


def test_the_text_beside_a_link_is_its_row_and_a_menu_item_has_none():
    links = {link.url.rpartition("/h.example")[2]: link for link in extract_links(GOAL_PAGE, "http://h.example/")}
    assert links["/1-1-1/"].anchor == "Population below the poverty line"
    assert links["/1-1-1/"].row == "Reported online"  # the status sits next to the link, not in it
    assert links["/1-2-1/"].row == "Exploring data sources"
    assert links["/1-2-1/"].title == "Indicator 1.2.1"
    assert links["/about/"].row == "" and links["/faq/"].row == ""  # a menu item says nothing more
    assert links["/t.csv"].row == "CSV, 12 kB, 2024-05-01"  # the table row, not the cell
    assert all(link.row == "" for link in extract_links(GOAL_PAGE, "http://h.example/", rows=False))


LONG_NAME = ("Proportion of the population living below the international poverty line by sex, age, "
             "employment status and geographic location (urban/rural)")  # 140 characters, past the anchor's 120


def test_a_long_anchor_still_finds_the_status_beside_it():
    page = GOAL_PAGE.replace(b"Population below the poverty line", LONG_NAME.encode())
    links = {link.url.rpartition("/h.example")[2]: link for link in extract_links(page, "http://h.example/")}
    assert links["/1-1-1/"].anchor == LONG_NAME[:120]
    # The element holding the name alone says nothing more than the link: not the name's tail ("(urban/rural)").
    assert links["/1-1-1/"].row == "Reported online"
    long_row = GOAL_PAGE.replace(b"Reported online", b"Reported online " + b"x" * 400)
    assert len(extract_links(long_row, "http://h.example/")[0].row) == 300  # the row is still cut


def _heading_page(slug: str) -> bytes:
    return (f'<html><body><div id="main-content"><h2 id="{slug}"><a href="/doc/{slug}/">Report</a></h2>'
            f'</div></body></html>').encode()


def test_ids_made_from_content_do_not_split_links_into_actions():
    # Markdown gives each heading an id made from its text: unique to its page. Template ids stay.
    slugs = ["ghanas-sdg-budget-baseline-report-2019", "african-union-agenda-2063-first-plan",
             "data-production-for-sdg-indicators-in-ghana"]
    paths = {extract_links(_heading_page(s), "http://h.example/")[0].tag_path for s in slugs}
    assert paths == {"html body div#main-content h2 a"}
    # The same through the vectoriser and the action index (theta as the default's): one action.
    raw = [f"html body div#main-content h2#{s} a" for s in slugs]
    vectorizer = TagPathVectorizer()
    index = ActionIndex(vectorizer.dim, 0.75)
    assert len({index.assign(vectorizer.transform_one(p)) for p in raw}) > 1  # the ids kept would split them
    index = ActionIndex(vectorizer.dim, 0.75)
    assert len({index.assign(vectorizer.transform_one(p)) for p in paths | paths}) == 1


def test_link_words_are_tagged_by_part_in_any_script_with_digits_masked():
    anchor_only = link_features(["anchor"], "http://h/a/1-2-1/", "Данные 2023", "", "")
    url_only = link_features(["url"], "http://h/a/1-2-1/", "Данные 2023", "", "")
    assert len(anchor_only) == 2 and len(url_only) == 2  # {данные, 0}; {a, 0}
    assert not set(anchor_only) & set(url_only)  # "0" of the anchor is not "0" of the URL
    assert np.array_equal(np.sort(link_features(["anchor"], "http://h/x", "Данные 1999", "", "")), np.sort(anchor_only))
    assert len(link_features([], "http://h/x", "a", "b", "c")) == 0


def test_the_model_tells_pages_apart_by_their_words_and_round_trips():
    model = LinkTextModel()
    good = link_features(["anchor"], "", "Poverty Reported online", "", "")
    bad = link_features(["anchor"], "", "Hunger Exploring data sources", "", "")
    assert not model.trained
    for _ in range(5):
        model.learn(good, True)
        model.learn(bad, False)
    assert model.trained
    fresh = [link_features(["anchor"], "", f"{w} Reported online", "", "") for w in ("Water", "Energy")]
    fresh += [link_features(["anchor"], "", f"{w} Exploring data sources", "", "") for w in ("Water", "Energy")]
    scores = model.scores(fresh)
    assert min(scores[:2]) > 0 > max(scores[2:])
    copy = LinkTextModel()
    copy.restore(json.loads(json.dumps(model.state())), model.arrays())
    assert np.array_equal(copy.scores(fresh), scores)


ITEM = "html body div#main-content div.row div.col span a"


def _links(start: int, statuses: list[bool]) -> list[NewLink]:
    return [NewLink(start + i, f"http://h.example/ind/{start + i}/", ITEM,
                    "Reported online" if paid else "Exploring data sources", 1) for i, paid in enumerate(statuses)]


@pytest.mark.parametrize("groups", [("anchor",), ()])
def test_siblings_of_one_template_are_ordered_by_their_anchor_once_learned(groups):
    config = CrawlConfig(start_url="http://h.example/", link_context=groups)
    policy = CreditedBanditPolicy(config, np.random.default_rng(0))
    statuses = [i % 2 == 0 for i in range(60)]
    policy.add(_links(0, statuses))
    paid = dict(enumerate(statuses))
    for _ in range(6):  # a few pages of both kinds: enough to learn from
        link = policy.next()
        policy.feedback(link, 2 if paid[link] else 0)
    following = [paid[policy.next()] for _ in range(20)]
    if groups:
        assert sum(following) >= 19
    else:  # without the words the draw is uniform within the template: about half
        assert 4 <= sum(following) <= 16


def test_link_words_of_waiting_links_survive_a_checkpoint():
    config = CrawlConfig(start_url="http://h.example/")
    policy = CreditedBanditPolicy(config, np.random.default_rng(0))
    policy.add(_links(0, [i % 2 == 0 for i in range(40)]))
    for _ in range(6):
        link = policy.next()
        policy.feedback(link, 2 if link % 2 == 0 else 0)
    state, arrays = json.loads(json.dumps(policy.state())), {k: v.copy() for k, v in policy.arrays().items()}
    copy = CreditedBanditPolicy(config, np.random.default_rng(1))
    copy.restore(state, arrays)
    assert copy.text.trained and len(copy) == len(policy)
    assert all(copy.next() % 2 == 0 for _ in range(10))
    # The site memory keeps the model, not this run's links.
    memory = CreditedBanditPolicy(config, np.random.default_rng(1))
    memory.restore(state, policy.model_arrays())
    assert memory.text.trained and not memory._words


def test_pop_best_prefers_the_best_score_within_reach_and_ignores_levels_beyond():
    queue = LeveledQueue()
    queue.extend([1, 2, 3], 10)
    queue.extend([4], 8)
    queue.extend([5], 2)
    rng = np.random.default_rng(0)
    bonus = {4: 5.0, 5: 100.0}
    def score(ids):
        return np.array([bonus.get(i, 0.0) for i in ids])
    assert queue.pop_best(rng, score, 8, 4) == 4  # 8 + 5 beats 10; level 2 is out of reach
    assert queue.pop_best(rng, score, 8, 4) in (1, 2, 3)
    assert len(queue) == 3


# -- a crawl over HTTP ---------------------------------------------------------------------------------
def _indicator_site(n: int, seed: int = 7) -> dict[str, bytes]:
    """An index of ``n`` indicator pages whose URLs and tag paths are alike; half of them (chosen at random)
    link a CSV, and only their anchors say so."""
    paid = random.Random(seed).sample(range(n), n // 2)
    rows = "".join(f'<li><a href="/ind/{i}/">Indicator {i}: '
                   f'{"Reported online" if i in paid else "Exploring data sources"}</a></li>' for i in range(n))
    pages = {"/": f"<html><body><ul class='indicators'>{rows}</ul></body></html>".encode()}
    for i in range(n):
        data = f'<a href="/data/{i}.csv">Download</a>' if i in paid else "<p>No data yet.</p>"
        pages[f"/ind/{i}/"] = f"<html><body><h1>Indicator {i}</h1>{data}</body></html>".encode()
        if i in paid:
            pages[f"/data/{i}.csv"] = f"year,value\n2020,{i}\n".encode()
    pages["/robots.txt"] = b"User-agent: *\nAllow: /\n"
    return pages


class _SiteServer:
    """The pages of a dict over HTTP on 127.0.0.1, each GET path logged in order."""

    def __init__(self, pages: dict[str, bytes]) -> None:
        self.log: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self, body: bool) -> None:
                page = pages.get(self.path)
                if self.command == "GET":
                    outer.log.append(self.path)
                self.send_response(200 if page is not None else 404)
                kind = "text/csv" if self.path.endswith(".csv") else "text/html; charset=utf-8"
                self.send_header("Content-Type", kind if page is not None else "text/plain")
                self.send_header("Content-Length", str(len(page or b"")))
                self.end_headers()
                if body and page:
                    self.wfile.write(page)

            def do_GET(self) -> None:
                self._answer(True)

            def do_HEAD(self) -> None:
                self._answer(False)

            def log_message(self, *args) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> _SiteServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _wasted_before_last_file(groups: tuple[str, ...], out: Path) -> int:
    """Indicator pages without data fetched before the crawl's last CSV."""
    with _SiteServer(_indicator_site(60)) as server:
        config = CrawlConfig(server.url, delay=0.0, concurrency=1, link_context=groups, max_requests=400)
        Crawler(config, LocalSink(out), LocalStateStore(out / "state")).run()
        log = list(server.log)
    last = max(i for i, path in enumerate(log) if path.endswith(".csv"))
    assert sum(path.endswith(".csv") for path in log) == 30  # every file, either way
    data_pages = {f"/ind/{p.split('/')[2].split('.')[0]}/" for p in log if p.endswith(".csv")}
    return sum(1 for path in log[:last] if path.startswith("/ind/") and path not in data_pages)


def test_a_crawl_learns_the_anchor_words_of_pages_with_data(tmp_path):
    with_words = _wasted_before_last_file(("anchor",), tmp_path / "words")
    without = _wasted_before_last_file((), tmp_path / "none")
    # Without the words, the 30 pages without data are drawn among the 30 with: most come before the last
    # file. With them, only the few met before the model has seen both kinds.
    assert without >= 20
    assert with_words <= 10


def test_the_default_drought_rule_stops_a_small_site_soon_after_its_last_dataset():
    # A 400-page site: 100 targets in its first 150 pages, nothing after. The window is the crawl's own:
    # max(floor, 30 / rate, half the pages before the last target) = 75 pages, not a fixed 300 that outlasts
    # the site.
    stop = make_stopper("drought", CrawlConfig(start_url="http://h.example/"))
    stopped_at = None
    for page in range(1, 401):
        stop.update(page, min(100, (page * 2) // 3))
        if stop.should_stop:
            stopped_at = page
            break
    assert stopped_at is not None and 150 < stopped_at <= 150 + 80


# -- link_text_scope "action": the text also chooses between an action's templates -----------------------
def _slug(i: int) -> str:
    """A slug without digits (digits are masked in URL templates): 0 -> 'aa', 27 -> 'bb'."""
    return chr(97 + i // 26) + chr(97 + i % 26)


@pytest.mark.parametrize("scope", ["template", "action"])
def test_templates_the_bandits_cannot_tell_apart_are_chosen_by_their_link_text(scope):
    # Six pages of one list teach the words; then another list, each link in a template of its own
    # (a top-level slug), 5 of 40 saying "Reported online". Nothing tells those templates apart but the text.
    config = CrawlConfig(start_url="http://h.example/", link_text_scope=scope)
    policy = CreditedBanditPolicy(config, np.random.default_rng(0))
    policy.add(_links(0, [i % 2 == 0 for i in range(6)]))
    for _ in range(6):
        link = policy.next()
        policy.feedback(link, 2 if link % 2 == 0 else 0)
    assert policy.text.trained and len(policy) == 0
    good = set(range(100, 140, 8))
    policy.add([NewLink(i, f"http://h.example/ind-{_slug(i)}/", "html body table tbody tr td a",
                        "Reported online" if i in good else "Exploring data sources", 1) for i in range(100, 140)])
    following = []
    for _ in range(5):
        link = policy.next()
        following.append(link in good)
        policy.feedback(link, 2 if link in good else 0)
    if scope == "action":
        assert all(following)  # first the untried action, then its untried templates, by their words
    else:  # a never-tried template is drawn at random: about 5/40 of them well worded
        assert sum(following) <= 2


def _slug_site(n: int, seed: int = 7) -> dict[str, bytes]:
    """``_indicator_site`` with each indicator at a top-level slug of its own (``/ind-ab/``): a URL template
    per indicator, so the text within a template has nothing to order."""
    pages = _indicator_site(n, seed)
    renamed = {}
    for path, body in pages.items():
        for i in range(n):
            body = body.replace(f'"/ind/{i}/"'.encode(), f'"/ind-{_slug(i)}/"'.encode())
        if path.startswith("/ind/"):
            path = f"/ind-{_slug(int(path.split('/')[2]))}/"
        renamed[path] = body
    return renamed


def test_a_crawl_orders_indicators_of_templates_of_their_own_by_their_words(tmp_path):
    wasted = {}
    for scope in ("template", "action"):
        with _SiteServer(_slug_site(60)) as server:
            config = CrawlConfig(server.url, delay=0.0, concurrency=1, max_requests=400, link_text_scope=scope)
            Crawler(config, LocalSink(tmp_path / scope), LocalStateStore(tmp_path / scope / "state")).run()
            log = list(server.log)
        assert sum(path.endswith(".csv") for path in log) == 30  # every file, either way
        last = max(i for i, path in enumerate(log) if path.endswith(".csv"))
        with_data = {f"/ind-{_slug(int(p.split('/')[2].split('.')[0]))}/" for p in log if p.endswith(".csv")}
        wasted[scope] = sum(1 for p in log[:last] if p.startswith("/ind-") and p not in with_data)
    # One template per indicator: within a template there is nothing to order, so by template the 30 pages
    # without data are drawn among the 30 with; across the action's templates, only those met early.
    assert wasted["template"] >= 20, wasted
    assert wasted["action"] <= 10, wasted


def _status_site(n: int, seed: int = 7) -> dict[str, bytes]:
    """``_indicator_site`` as an SDG platform lays it out: each indicator's long name is its anchor, and its
    status sits beside the link, in the row."""
    paid = set(random.Random(seed).sample(range(n), n // 2))
    rows = "".join(
        f'<div class="row"><div class="col"><span class="name"><a href="/ind/{i}/">{LONG_NAME} ({i})</a></span>'
        f'<ul class="tags"><li>{"Reported online" if i in paid else "Exploring data sources"}</li></ul></div></div>'
        for i in range(n))
    pages = _indicator_site(n, seed)
    pages["/"] = f"<html><body><div id='main'>{rows}</div></body></html>".encode()
    return pages


def test_a_crawl_learns_the_status_beside_long_indicator_names(tmp_path):
    with _SiteServer(_status_site(60)) as server:
        config = CrawlConfig(server.url, delay=0.0, concurrency=1, max_requests=400, link_context=("row",))
        Crawler(config, LocalSink(tmp_path), LocalStateStore(tmp_path / "state")).run()
        log = list(server.log)
    assert sum(path.endswith(".csv") for path in log) == 30
    last = max(i for i, path in enumerate(log) if path.endswith(".csv"))
    with_data = {f"/ind/{p.split('/')[2].split('.')[0]}/" for p in log if p.endswith(".csv")}
    wasted = sum(1 for path in log[:last] if path.startswith("/ind/") and path not in with_data)
    # Read from the row, the status orders the indicators; read as the name's tail, it tells nothing (30
    # pages without data drawn among the 30 with).
    assert wasted <= 10, wasted
