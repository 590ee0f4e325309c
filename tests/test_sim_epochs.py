"""The simulator's time: epoch N adds, updates, removes and moves files, deterministically, and answers
conditional requests with 304."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from collections import Counter

import pytest
import requests

from sbcrawl_dev.sim import build_site

WWW = "http://www.stats.example"


@pytest.fixture(scope="module")
def small_epochs():
    return build_site("small", epoch=0), build_site("small", epoch=1)


def test_epoch_zero_is_the_site_as_before_and_epochs_are_deterministic():
    a, b = build_site("tiny"), build_site("tiny", epoch=0)
    assert list(a.targets) == list(b.targets)
    c, d = build_site("tiny", epoch=2), build_site("tiny", epoch=2)
    assert list(c.targets) == list(d.targets)
    assert c.changes(0) == d.changes(0)
    with pytest.raises(ValueError, match="epoch"):
        build_site("tiny", epoch=-1)


def test_next_epoch_has_new_changed_moved_and_gone_files(small_epochs):
    before, after = small_epochs
    truth = after.changes(0)
    counts = Counter(truth.values())
    assert counts["new"] >= 0.04 * len(before.targets)
    assert counts["changed"] >= 0.04 * len(before.targets)
    assert counts["moved"] > 0 and counts["gone"] > 0
    assert counts["unchanged"] > 0.8 * len(before.targets)
    # The truth agrees with what the two sites serve.
    for url, status in list(truth.items())[:4000]:
        if status == "new":
            assert url in after.targets and url not in before.targets
        elif status == "changed":
            assert after.body(url) != before.body(url) if url in before.targets else True
        elif status == "unchanged":
            assert after.body(url) == before.body(url)
        elif status == "gone":
            assert after.response("GET", url).status in (404, 410) and url in before.targets
    moved = [u for u, s in truth.items() if s == "moved"]
    old = [u for u in before.targets if after.kind(u) == "redirect" and after.location(u) in moved]
    assert old and after.body(after.location(old[0])) == before.body(old[0])


def test_new_datasets_come_first_in_their_catalogue_and_in_news(small_epochs):
    before, after = small_epochs
    new_dids = range(after.total_datasets, after.datasets_now)
    assert len(new_dids) == after.new_per_epoch > 0
    did = new_dids[0]
    sec = after.section_of(did)
    assert after.section_datasets(sec)[0] in new_dids
    assert after.dataset_url(after.section_datasets(sec)[0]) in after.links(after.catalogue_url(sec))
    assert before.kind(after.dataset_url(did)) == "error" and after.kind(after.dataset_url(did)) == "html"
    news = after.listing_size("news") - 1
    assert news >= before.listing_size("news")
    cited = [u for u in after.links(after.item_url("news", news)) if "/dataset/" in u]
    assert any(after.dataset_url(d) in cited for d in new_dids)


def test_a_changed_file_changes_its_dataset_page_and_validators(small_epochs):
    before, after = small_epochs
    truth = after.changes(0)
    changed = [u for u, s in truth.items() if s == "changed" and after.route(u).handler == "resource"
               and "ETag" in after.response("HEAD", u).headers]
    url = changed[0]
    old, new = before.response("GET", url), after.response("GET", url)
    assert old.headers.get("ETag") != new.headers.get("ETag") or \
        old.headers.get("Last-Modified") != new.headers.get("Last-Modified")
    did = after.route(url).args[0].table_key[1]
    page = after.dataset_url(did)
    assert before.body(page) != after.body(page)
    unchanged = next(u for u, s in truth.items() if s == "unchanged" and after.route(u).handler == "resource"
                     and after.route(u).args[0].table_key[0] == "ds"
                     and all(truth.get(r.url) == "unchanged"
                             for r in after.resources(after.route(u).args[0].table_key[1])))
    page = after.dataset_url(after.route(unchanged).args[0].table_key[1])
    assert before.body(page) == after.body(page)


def test_conditional_requests_get_304_without_body(small_epochs):
    before, after = small_epochs
    truth = after.changes(0)
    with_etag = [u for u, s in truth.items() if s == "unchanged" and "ETag" in after.response("HEAD", u).headers]
    url = with_etag[0]
    etag = before.response("HEAD", url).headers["ETag"]
    resp = after.response("GET", url, conditions={"If-None-Match": etag})
    assert resp.status == 304 and b"".join(resp.body) == b"" and resp.headers["ETag"] == etag
    changed = [u for u, s in truth.items() if s == "changed" and "ETag" in before.response("HEAD", u).headers]
    old_etag = before.response("HEAD", changed[0]).headers["ETag"]
    assert after.response("GET", changed[0], conditions={"If-None-Match": old_etag}).status == 200
    only_date = [u for u in after.targets if after.route(u).handler == "resource"
                 and set(after.response("HEAD", u).headers) >= {"Last-Modified"}
                 and "ETag" not in after.response("HEAD", u).headers]
    lm = after.response("HEAD", only_date[0]).headers["Last-Modified"]
    assert after.response("GET", only_date[0], conditions={"If-Modified-Since": lm}).status == 304
    assert after.response("GET", only_date[0],
                          conditions={"If-Modified-Since": "Mon, 01 Jan 2001 00:00:00 GMT"}).status == 200
    no_validator = [u for u in after.targets if after.route(u).handler == "resource"
                    and not {"ETag", "Last-Modified"} & set(after.response("HEAD", u).headers)]
    assert no_validator, "some servers give no validator at all"
    page = after.response("GET", after.start_url)
    assert after.response("GET", after.start_url, conditions={"If-None-Match": page.headers["ETag"]}).status == 304


def test_server_answers_conditional_get_with_304(sim_server, sim_proxy_env):
    server = sim_server(build_site("tiny", epoch=1))
    sim_proxy_env(server)
    url = next(u for u in server.site.targets if "ETag" in server.site.response("HEAD", u).headers)
    first = requests.get(url, timeout=5)
    again = requests.get(url, headers={"If-None-Match": first.headers["ETag"]}, timeout=5)
    assert first.status_code == 200 and again.status_code == 304 and again.content == b""
    assert server.log[-1].status == 304 and server.log[-1].bytes_sent == 0
    assert hashlib.sha256(first.content).hexdigest() == hashlib.sha256(server.site.body(url)).hexdigest()


def test_serve_sim_takes_an_epoch():
    proc = subprocess.Popen([sys.executable, "-m", "sbcrawl_dev", "serve-sim", "tiny", "--epoch", "2",
                             "--port", "0"], stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert "epoch 2" in line
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    bad = subprocess.run([sys.executable, "-m", "sbcrawl_dev", "serve-sim", "tiny", "--epoch", "-1"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "--epoch" in bad.stderr
