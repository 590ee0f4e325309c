"""Unit tests of the engine's parts, each on its own (no network)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from airflow_sbcrawl.crawler import state as ckpt
from airflow_sbcrawl.crawler.actions import ActionIndex
from airflow_sbcrawl.crawler.bandit import SleepingBandit
from airflow_sbcrawl.crawler.budget import Budget, BudgetExhausted
from airflow_sbcrawl.crawler.classify import HTML, TARGET, UrlClassifier
from airflow_sbcrawl.crawler.config import ConfigError, CrawlConfig
from airflow_sbcrawl.crawler.earlystop import EarlyStopping
from airflow_sbcrawl.crawler.frontier import LinkTable, RandomBag
from airflow_sbcrawl.crawler.html import extract_links
from airflow_sbcrawl.crawler.mimes import TARGET_MIME_TYPES, dataset_extensions
from airflow_sbcrawl.crawler.policies import NewLink
from airflow_sbcrawl.crawler.policies.sb import SleepingBanditPolicy
from airflow_sbcrawl.crawler.tagpath import TagPathVectorizer
from airflow_sbcrawl.crawler.urls import InvalidURL, Scope, extension, normalize, resolve


# -- URLs and scope ------------------------------------------------------------------------------------
def test_normalize_canonical_forms():
    assert normalize("HTTP://WWW.Stats.Example:80/a/./b/../c?x=1#frag") == "http://www.stats.example/a/c?x=1"
    assert normalize("https://stats.example") == "https://stats.example/"
    assert normalize("http://stats.example/a b") == "http://stats.example/a%20b"
    assert normalize("http://stats.example/a%2Fb") == "http://stats.example/a%2Fb"  # escapes kept as they are
    for bad in ("ftp://stats.example/", "not a url", "http:///nohost", "http://stats.example:99999/"):
        with pytest.raises(InvalidURL):
            normalize(bad)


def test_resolve_skips_non_web_links():
    base = "http://www.stats.example/dir/page"
    assert resolve(base, "../data.csv") == "http://www.stats.example/data.csv"
    assert resolve(base, "#top") is None
    for href in ("mailto:a@b.c", "tel:+331", "javascript:void(0)", "  "):
        assert resolve(base, href) is None


def test_scope_is_start_host_and_subdomains_with_www_ignored():
    scope = Scope("https://www.A.B.com/index.php")
    assert "https://www.a.b.com/folder/content.php" in scope
    assert "https://www.c.a.b.com/page.html" in scope
    assert "https://a.b.com/x" in scope
    assert "https://www.b.com/page.php" not in scope
    assert "https://evila.b.com/" not in scope


def test_extension():
    assert extension("http://x.example/a/b.PNG?x=1") == "png"
    assert extension("http://x.example/media/9961/download") == ""


# -- HTML and tag paths --------------------------------------------------------------------------------
PAGE = b"""<html><head><base href="http://www.stats.example/base/"></head><body>
<div id="main" class="content wide"><ul class="datasets"><li><a href="d1.csv">Data 1</a></li></ul></div>
<map><area href="/area"></map><iframe src="/frame"></iframe>
<a href="mailto:x@y.z">mail</a><a href="http://www.stats.example/p#section">p</a>
<p>unclosed <b>tags <a href="/deep">deep</a>
"""


def test_extract_links_with_tag_paths_and_base_href():
    links = {link.url: link for link in extract_links(PAGE, "http://www.stats.example/page")}
    assert set(links) == {
        "http://www.stats.example/base/d1.csv",
        "http://www.stats.example/area",
        "http://www.stats.example/frame",
        "http://www.stats.example/p",
        "http://www.stats.example/deep",
    }
    assert links["http://www.stats.example/base/d1.csv"].tag_path == (
        "html body div#main.content.wide ul.datasets li a")
    assert links["http://www.stats.example/base/d1.csv"].anchor == "Data 1"


def test_extract_links_survives_garbage():
    assert extract_links(b"\x00\xff\xfe garbage <<<>>>", "http://x.example/") == []
    assert extract_links(b"", "http://x.example/") == []
    huge_attr = b'<a class="' + b"x" * 200_000 + b'" href="/ok">ok</a>'
    [link] = extract_links(huge_attr, "http://x.example/")
    assert link.url == "http://x.example/ok" and len(link.tag_path) < 200


def test_tag_path_vector_is_stable_and_hashed_by_token():
    a = TagPathVectorizer()
    b = TagPathVectorizer()
    b.transform_one("html body footer ul li a")  # another vocabulary history must not change vectors
    path = "html body div#main ul.datasets li a"
    assert np.array_equal(a.transform_one(path), b.transform_one(path))
    assert a.transform_one(path).shape == (4096,)
    assert a.tokens("html a") == ["<s>\x1fhtml", "html\x1fa", "a\x1f</s>"]


# -- actions, bandit, classifier -----------------------------------------------------------------------
def test_action_index_groups_similar_paths_only():
    vec = TagPathVectorizer()
    index = ActionIndex(vec.dim, theta=0.75)
    # 7 of 9 bigrams shared: cosine 0.78; a one-token difference in a shorter path would fall below theta.
    a = index.assign(vec.transform_one("html body div.page div.content div.region ul.datasets li a"))
    b = index.assign(vec.transform_one("html body div.page div.content div.region ul.datasets li.odd a"))
    c = index.assign(vec.transform_one("html body footer div.social span a"))
    assert a == b != c
    assert len(index) == 2
    saved = index.arrays()
    other = ActionIndex(vec.dim, theta=0.75)
    other.restore(saved["centroids"], saved["sizes"])
    assert other.assign(vec.transform_one("html body footer div.social span a")) == c


def test_theta_extremes():
    vec = TagPathVectorizer()
    paths = ["html body nav a", "html body div.x p a", "html body table tr td a"]
    one = ActionIndex(vec.dim, theta=0.0)
    assert {one.assign(vec.transform_one(p)) for p in paths} == {0}
    every = ActionIndex(vec.dim, theta=1.0)
    assert len({every.assign(vec.transform_one(p)) for p in paths}) == 3


def test_bandit_exploits_the_best_awake_action():
    bandit = SleepingBandit(alpha=2 * np.sqrt(2))
    bandit.grow(3)
    rng = np.random.default_rng(0)
    awake = np.array([True, True, True])
    pulls = []
    for _ in range(300):
        a = bandit.select(awake, rng)
        bandit.reward(a, {0: 0.0, 1: 5.0, 2: 1.0}[a])
        pulls.append(a)
    assert pulls[-100:].count(1) > 80
    asleep = np.array([True, False, True])
    assert all(bandit.select(asleep, rng) != 1 for _ in range(50))


def test_url_classifier_learns_from_batches_and_restores():
    clf = UrlClassifier(batch_size=10)
    assert clf.needs_head
    rng = np.random.default_rng(1)
    def sample():
        k = rng.integers(3)
        n = rng.integers(1, 99999)
        if k == 0:
            return f"http://www.stats.example/files/report-{n}.xlsx", TARGET
        if k == 1:
            return f"http://www.stats.example/media/{n}/download", TARGET
        return f"http://www.stats.example/themes/labour/page-{n}", HTML
    for _ in range(300):
        clf.observe(*sample())
    assert not clf.needs_head
    test = [sample() for _ in range(300)]
    accuracy = np.mean(clf.predict([u for u, _ in test]) == np.array([y for _, y in test]))
    assert accuracy > 0.95
    copy = UrlClassifier(batch_size=10)
    copy.restore(json.loads(json.dumps(clf.state())), clf.arrays())
    assert np.array_equal(copy.predict([u for u, _ in test]), clf.predict([u for u, _ in test]))


def test_a_dataset_extension_makes_a_target_before_the_model_met_one():
    urls = ["http://s.example/IMG/xlsx/catalogue-9804.xlsx", "http://s.example/data/prices.CSV?v=2",
            "http://s.example/notes.txt", "http://s.example/news/prices-2024"]
    young = UrlClassifier(batch_size=10)
    assert young.predict(urls).tolist() == [HTML] * 4  # a model with no label yet calls everything a page
    prior = UrlClassifier(batch_size=10, dataset_extensions=dataset_extensions(TARGET_MIME_TYPES))
    assert prior.predict(urls).tolist() == [TARGET, TARGET, HTML, HTML]
    assert dataset_extensions(("text/csv",)) == {"csv"}  # only for the types the crawl targets
    assert "txt" not in dataset_extensions(TARGET_MIME_TYPES)  # text/plain names pages as often as files


def test_sb_policy_round_trips_through_checkpoint_arrays():
    config = CrawlConfig("http://www.stats.example/")
    policy = SleepingBanditPolicy(config, np.random.default_rng(0))
    links = [NewLink(i, f"u{i}", "html body div.list ul li a" if i % 2 else "html body nav a", "", 1)
             for i in range(40)]
    policy.add(links)
    assert len(policy) == 40
    first = policy.next()
    policy.feedback(first, 3.0)
    state = json.loads(json.dumps(policy.state()))
    copy = SleepingBanditPolicy(config, np.random.default_rng(0))
    copy.restore(state, policy.arrays())
    assert len(copy) == 39
    rest = set()
    while (link := copy.next()) is not None:
        rest.add(link)
    assert rest == set(range(40)) - {first}


def test_random_bag_pops_each_item_once():
    bag = RandomBag()
    for i in range(100):
        bag.add(i)
    rng = np.random.default_rng(0)
    assert sorted(bag.pop_random(rng) for _ in range(100)) == list(range(100))


def test_link_table_restore():
    table = LinkTable()
    table.add("http://a.example/", 0, -1, None)
    table.add("http://a.example/x", 1, 0, "html body a")
    copy = LinkTable()
    copy.restore(json.loads(json.dumps(table.state())), table.arrays())
    assert copy.found_on(1) == "http://a.example/" and copy.tag_path(1) == "html body a"
    assert "http://a.example/x" in copy


# -- budget, early stopping, config --------------------------------------------------------------------
def test_budget_is_never_overshot():
    budget = Budget(max_requests=2, max_bytes=100)
    budget.reserve_request()
    budget.reserve_request()
    with pytest.raises(BudgetExhausted):
        budget.reserve_request()
    assert budget.requests == 2


def test_early_stopping_fires_only_after_patience_windows():
    es = EarlyStopping(window=10, epsilon=0.2, decay=0.5, patience=3)
    targets = 0
    for page in range(1, 101):
        targets += 1  # one target per page: never stops
        es.update(page, targets)
    assert not es.should_stop
    for page in range(101, 131):  # mean 0.5, 0.25, 0.125: one low window so far
        es.update(page, targets)
    assert not es.should_stop
    for page in range(131, 151):  # 0.0625, 0.03: three low windows in a row
        es.update(page, targets)
    assert es.should_stop


def test_config_rejects_bad_values_with_clear_messages():
    with pytest.raises(ConfigError, match="start_url"):
        CrawlConfig("ftp://x.example/")
    with pytest.raises(ConfigError, match="max_requests"):
        CrawlConfig("http://x.example/", max_requests=0)
    with pytest.raises(ConfigError, match="theta"):
        CrawlConfig("http://x.example/", theta=2)
    with pytest.raises(ConfigError, match="policy"):
        CrawlConfig("http://x.example/", policy="genius")
    with pytest.raises(ConfigError, match="unknown crawl settings: colour"):
        CrawlConfig.from_dict({"start_url": "http://x.example/", "colour": "red"})
    config = CrawlConfig("http://x.example/", target_mime_types=("Text/CSV",))
    assert CrawlConfig.from_dict(json.loads(json.dumps(config.to_dict()))) == config


# -- checkpoints ---------------------------------------------------------------------------------------
def _files(n: int) -> dict[str, bytes]:
    return ckpt.encode({"n": n}, {"a": np.arange(n)}, [f"http://x.example/{i}" for i in range(n)])


def test_checkpoint_torn_write_falls_back_to_previous(tmp_path):
    store = ckpt.LocalStateStore(tmp_path)
    ckpt.save(store, 1, _files(3))
    ckpt.save(store, 2, _files(5))
    (tmp_path / "ckpt-00000002" / "arrays.npz").write_bytes(b"torn")
    seq, state, arrays, urls = ckpt.load_latest(store)
    assert seq == 1 and state["n"] == 3 and len(urls) == 3 and list(arrays["a"]) == [0, 1, 2]


def test_checkpoint_all_corrupt_or_foreign_is_a_clear_error(tmp_path):
    store = ckpt.LocalStateStore(tmp_path)
    ckpt.save(store, 1, _files(2))
    (tmp_path / "ckpt-00000001" / "state.json").write_text("{not json")
    with pytest.raises(ckpt.CheckpointError, match="no valid checkpoint"):
        ckpt.load_latest(store)
    foreign = dict(_files(2))
    foreign["state.json"] = json.dumps({"format": "something-else"}).encode()
    foreign.pop("MANIFEST.json")
    import hashlib
    foreign["MANIFEST.json"] = json.dumps({k: hashlib.sha256(v).hexdigest() for k, v in foreign.items()}).encode()
    ckpt.save(store, 2, foreign)
    with pytest.raises(ckpt.ForeignCheckpoint, match="not an airflow-sbcrawl checkpoint"):
        ckpt.load_latest(store)


def test_checkpoint_never_unpickles(tmp_path):
    store = ckpt.LocalStateStore(tmp_path)
    files = dict(_files(2))
    import io
    buf = io.BytesIO()
    np.save(buf, np.array([{"evil": 1}], dtype=object), allow_pickle=True)
    # An object array inside the npz must be refused, not executed.
    import zipfile
    zbuf = io.BytesIO()
    with zipfile.ZipFile(zbuf, "w") as zf:
        zf.writestr("a.npy", buf.getvalue())
    files["arrays.npz"] = zbuf.getvalue()
    import hashlib
    files.pop("MANIFEST.json")
    files["MANIFEST.json"] = json.dumps({k: hashlib.sha256(v).hexdigest() for k, v in files.items()}).encode()
    ckpt.save(store, 1, files)
    with pytest.raises(ckpt.CheckpointError):
        ckpt.load_latest(store)


def test_budget_journal_keeps_the_highest_complete_totals(tmp_path):
    store = ckpt.LocalStateStore(tmp_path)
    journal = ckpt.BudgetJournal(store)
    journal.record(1, 0)
    journal.record(1, 500)
    with (tmp_path / "journal.log").open("a") as fh:
        fh.write("3 9")  # torn: no newline, but digits; still no more than what was reserved
    assert ckpt.BudgetJournal.last_totals(store) >= (2, 500)


def test_numbered_cms_ids_do_not_split_tag_paths():
    vec = TagPathVectorizer()
    a = vec.transform_one("html body div#node-48213 div.content ul li.menu-item-4521 a")
    b = vec.transform_one("html body div#node-977 div.content ul li.menu-item-12 a")
    assert np.array_equal(a, b)
    raw = TagPathVectorizer(ignore_digits=False)
    assert not np.array_equal(raw.transform_one("html div#node-1 a"), raw.transform_one("html div#node-2 a"))


def test_budget_is_journaled_before_spending_so_no_outage_lets_it_overshoot():
    class Journal:
        def __init__(self) -> None:
            self.totals, self.down = [0, 0], False

        def record(self, requests: int, nbytes: int) -> None:
            if self.down:
                raise OSError("storage unreachable")
            self.totals[0] += requests
            self.totals[1] += nbytes

        def restore(self, requests: int, nbytes: int) -> None:
            self.totals = [requests, nbytes]

    journal = Journal()
    budget = Budget(100, 10**9, journal, request_lease=10)
    for _ in range(12):
        budget.reserve_request()
    assert budget.requests == 12 and journal.totals[0] == 20  # leased ahead, two writes
    assert budget.reserve_bytes(5000) == 5000
    assert journal.totals[1] >= 5000
    for _ in range(8):
        budget.reserve_request()  # within the lease: no write needed
    journal.down = True
    with pytest.raises(OSError):
        budget.reserve_request()  # the 21st request needs a journal write: it is never counted nor sent
    assert budget.requests == 20
    # A resume from the journal alone (its checkpoints lost) starts at or above what was spent.
    resumed = Budget(100, 10**9, Journal(), request_lease=10)
    resumed.restore(*journal.totals)
    assert resumed.requests >= 20 and resumed.bytes >= 5000


def test_ipv6_literals_keep_their_brackets_and_scope_includes_the_port():
    assert normalize("http://[2001:DB8::1]:8080/a/../b") == "http://[2001:db8::1]:8080/b"
    assert normalize("http://[::1]/") == "http://[::1]/"
    assert resolve("http://[::1]:8080/x/", "y") == "http://[::1]:8080/x/y"
    scope = Scope("http://127.0.0.1:8900/")
    assert "http://127.0.0.1:8900/a" in scope and "http://127.0.0.1:6379/" not in scope
    site = Scope("http://www.stats.example/")
    assert "https://data.stats.example/x" in site  # subdomains, and the move to TLS
    assert "http://stats.example:8080/" not in site and "https://stats.example:8443/" not in site
