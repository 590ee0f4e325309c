"""The site simulator: determinism, realism of the structure, the HTTP server and the hostile endpoints."""

from __future__ import annotations

import csv
import io
import time
import tracemalloc
import zipfile
import zlib

import pytest
import requests

from sbcrawl_dev.sim import PROFILES, TARGET_MIMES, build_site, files

WWW = "http://www.stats.example"
DATA = "http://data.stats.example"


# ---------------------------------------------------------------------- determinism
def test_same_seed_same_site_different_seed_different_site():
    a, b, c = build_site("tiny", 0), build_site("tiny", 0), build_site("tiny", 1)
    assert a.url_count == b.url_count
    assert list(a.targets) == list(b.targets)
    url = next(iter(a.targets))
    assert a.body(url) == b.body(url)
    assert a.body(a.start_url) == b.body(b.start_url)
    assert list(a.targets) != list(c.targets)
    assert a.body(a.start_url) != c.body(c.start_url)


def test_random_profiles_draw_their_structure_from_the_seed():
    p1, p2 = build_site("random-1").profile, build_site("random-2").profile
    assert p1 == build_site("random-1").profile
    assert (p1.themes, p1.catalogue_page_size, p1.extensionless_share) != (
        p2.themes, p2.catalogue_page_size, p2.extensionless_share)
    with pytest.raises(KeyError):
        build_site("no-such-profile")


# ---------------------------------------------------------------------- structure and ground truth
@pytest.mark.parametrize(("name", "lo", "hi"), [("tiny", 100, 250), ("small", 1500, 3000), ("deep", 3500, 7000)])
def test_profile_sizes(name, lo, hi):
    site = build_site(name)
    assert lo <= site.url_count <= hi
    stats = site.stats()
    share = stats["html_pages_linking_targets"] / stats["by_kind"]["html"]
    assert 0.02 <= share <= 0.7  # targets sit on a minority of pages, as in the paper's Table 1


def test_deep_profile_hides_targets_behind_long_pagination():
    stats = build_site("deep").stats()
    assert stats["target_depth_max"] >= 30
    assert stats["target_depth_mean"] >= 10
    assert build_site("small").stats()["target_depth_max"] <= 8


def test_kinds_of_urls():
    site = build_site("tiny")
    kinds = {site.kind(u) for u in site.targets}
    assert kinds == {"target"}
    assert site.kind(site.start_url) == "html"
    assert site.kind(f"{WWW}/no/such/page") == "error"
    assert site.kind(f"{WWW}/events/calendar?month=2031-07") == "trap"
    assert site.kind(f"{WWW}/search?topic=economy&year=2020") == "trap"
    assert site.kind(f"{DATA}/catalogue/filter?format=csv") == "trap"
    assert site.kind(f"{WWW}/go/oecd") == "redirect"
    assert site.kind("http://twitter.example/nso_stats") == "out-of-scope"
    assert site.kind(f"{WWW}/robots.txt") == "robots"
    assert all(mime in TARGET_MIMES for mime, _ in site.targets.values())
    assert all(1000 <= size <= 100_000 for _, size in site.targets.values())


def test_targets_come_in_many_formats_and_url_styles():
    site = build_site("small")
    mimes = {mime for mime, _ in site.targets.values()}
    assert {"text/csv", "application/pdf", "application/zip", "application/octet-stream",
            files.MIME["xlsx"], files.MIME["ods"]} <= mimes
    urls = list(site.targets)
    assert any(u.endswith("/download") and "/media/" in u for u in urls)  # extensionless
    assert any(u.endswith(".csv") for u in urls)


def test_downloads_block_and_navigation_on_pages():
    site = build_site("tiny")
    did = 0
    page = site.page(site.dataset_url(did)).html()
    assert '<div class="downloads">' in page
    assert 'class="breadcrumb"' in page and "<footer" in page
    for res in site.resources(did):
        assert res.url in site.links(site.dataset_url(did))
    # News pages (most of the site) link no target through their downloads block.
    news = site.item_url("news", 0)
    assert site.kind(news) == "html" and 'class="downloads"' not in site.page(news).html()


def test_unique_ids_theme():
    site = build_site("portal")
    html = site.page(site.item_url("news", 3)).html()
    assert '<div id="node-' in html and '<section id="block-' in html
    assert '<div id="node-' not in build_site("small").page(site.item_url("news", 3)).html()


def test_redirect_chain_and_out_of_scope_redirect():
    site = build_site("tiny")
    status, headers, _ = site.response("GET", f"{WWW}/stats/3")
    assert status == 302 and headers["Location"] == f"{WWW}/datasets/3"
    status, headers, _ = site.response("GET", headers["Location"])
    assert status == 301 and headers["Location"] == site.dataset_url(3)
    assert site.kind(site.dataset_url(3)) == "html"
    loc = site.location(f"{WWW}/go/eurostat")
    assert loc is not None and not site.in_scope(loc)


def test_robots_txt():
    site = build_site("tiny", crawl_delay=1.5)
    text = site.body(f"{WWW}/robots.txt").decode()
    assert "User-agent: *" in text and "Crawl-delay: 1.5" in text
    assert "Disallow: /search" in text
    assert "Crawl-delay: 0" in build_site("tiny").body(f"{WWW}/robots.txt").decode()
    assert site.disallowed(f"{WWW}/search?topic=x") and not site.disallowed(f"{WWW}/events/calendar?month=2024-01")
    # The ground truth never counts disallowed or trap URLs.
    assert not any(site.disallowed(u) for u in site.targets)


def test_csv_served_is_the_table_the_site_describes():
    site = build_site("small", seed=3)
    url = next(u for u, (mime, _) in site.targets.items() if mime == "text/csv")
    table = site.table(url)
    rows = list(csv.reader(io.StringIO(site.body(url).decode())))
    assert rows[0] == [table.title] and rows[1] == list(table.header)
    label, values = table.rows[0]
    assert rows[2] == [label, *map(str, values)]
    assert rows[-2][0] == "Total" and rows[-1] == [table.footnote]
    assert table.value("Total", table.header[1]) == sum(v[0] for _, v in table.rows)


def test_spreadsheet_pdf_and_zip_are_readable():
    site = build_site("small")
    table = files.make_table(0, "k", (5, 10), "T1")
    archive = zipfile.ZipFile(io.BytesIO(files.zip_bytes(table, "t1.csv")))
    assert archive.read("t1.csv") == files.csv_bytes(table)
    pdf = files.pdf_bytes(table)
    assert pdf.startswith(b"%PDF-1.4") and pdf.rstrip().endswith(b"%%EOF")
    import openpyxl

    sheet = openpyxl.load_workbook(io.BytesIO(files.xlsx_bytes(table))).active
    label, values = table.rows[0]
    assert [c.value for c in sheet[3]] == [label, *values]
    import pdfplumber

    assert table.title in pdfplumber.open(io.BytesIO(pdf)).pages[0].extract_text()
    url = next(u for u, (m, _) in site.targets.items() if m == files.MIME["xlsx"])
    assert openpyxl.load_workbook(io.BytesIO(site.body(url))).active["A1"].value == site.table(url).title


@pytest.mark.parametrize("fmt", ["xls", "xlsx", "ods", "csv", "pdf", "zip", "json", "sdmx"])
def test_every_table_format_the_simulator_serves_is_read_back_to_its_values(fmt):
    """The detector reads each format the simulator serves (its .xls files were once a fake OLE2 header
    over text, unreadable: 12 of 168 files in the demo)."""
    from airflow_sbcrawl.tables import detect_file

    table = files.make_table(5, "k", (6, 9), "T7")
    result = detect_file(files.encode(fmt, table, "t7"), name=f"t7.{fmt}")
    assert not result.errors and result.tables, result.errors
    label, row = table.rows[2]
    # a wide table keys the year in its column path, SDMX's long form in its row labels
    (value,) = [o.value for t in result.tables for o in t.observations
                if label in o.row_labels and table.header[4] in (*o.row_labels, *o.column_path)]
    assert value == row[3]


def test_large_profile_builds_lazily():
    tracemalloc.start()
    t0 = time.perf_counter()
    site = build_site("large")
    elapsed = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert elapsed < 0.5 and peak < 5_000_000
    assert not site.has_ground_truth
    last_section = max(site.data_sections)
    last_page = site.catalogue_url(last_section, site.catalogue_pages(last_section))
    assert site.kind(last_page) == "html"
    assert site.total_datasets * 1 + site.profile.news + site.profile.blog >= 100_000 // 2
    did = site.total_datasets - 1
    assert site.kind(site.resources(did)[0].url) == "target"


# ---------------------------------------------------------------------- server
def test_proxy_mode_and_host_header_mode(tiny_server, sim_proxy_env):
    site = tiny_server.site
    direct = requests.get(tiny_server.base_url + "about", headers={"Host": "www.stats.example"}, timeout=5)
    assert direct.status_code == 200 and "About us" in direct.text
    sim_proxy_env(tiny_server)
    url = next(iter(site.targets))
    r = requests.get(url, timeout=5)
    assert r.status_code == 200 and r.content == site.body(url)
    assert r.headers["Content-Type"].split(";")[0] == site.targets[url][0]
    log = tiny_server.log
    assert log[-1].url == url and log[-1].method == "GET" and log[-1].bytes_sent == len(r.content)
    assert log[0].url == "http://www.stats.example/about"


def test_head_has_no_body_and_redirects_are_not_followed_by_the_server(tiny_server, sim_proxy_env):
    sim_proxy_env(tiny_server)
    url = next(iter(tiny_server.site.targets))
    r = requests.head(url, timeout=5)
    assert r.status_code == 200 and r.content == b"" and int(r.headers["Content-Length"]) > 0
    r = requests.get(f"{WWW}/stats/1", allow_redirects=False, timeout=5)
    assert r.status_code == 302
    r = requests.get(f"{WWW}/stats/1", timeout=5)
    assert r.url == tiny_server.site.dataset_url(1) and [h.status_code for h in r.history] == [302, 301]
    assert requests.get(f"{WWW}/nothing-here", timeout=5).status_code == 404
    summary = tiny_server.summary()
    assert summary["by_method"]["HEAD"] == 1 and summary["by_status"][404] == 1
    tiny_server.reset_log()
    assert tiny_server.log == []


def test_out_of_scope_hosts_answer_and_are_logged(tiny_server, sim_proxy_env):
    sim_proxy_env(tiny_server)
    assert requests.get("http://twitter.example/nso_stats", timeout=5).status_code == 200
    assert tiny_server.summary()["out_of_scope_requests"] == 1


def test_media_are_served_with_media_types(tiny_server, sim_proxy_env):
    sim_proxy_env(tiny_server)
    site = build_site("small")
    images = [site.image_url("news", n) for n in range(40)]
    assert any("/media/" in u for u in images) and any(u.endswith(".png") for u in images)
    tiny_site = tiny_server.site
    url = tiny_site.image_url("news", 0)
    r = requests.get(url, timeout=5)
    assert r.headers["Content-Type"] == "image/png" and tiny_site.kind(url) == "media"


def test_server_is_quick_enough(sim_server, sim_proxy_env):
    srv = sim_server("small")
    sim_proxy_env(srv)
    site = srv.site
    urls = list(site.targets)[:100] + [site.dataset_url(d) for d in range(100)]
    t0 = time.perf_counter()
    with requests.Session() as s:
        for u in urls:
            assert s.get(u, timeout=5).status_code == 200
    assert (time.perf_counter() - t0) / len(urls) < 0.02
    assert len(srv.log) == len(urls)


# ---------------------------------------------------------------------- hostile
@pytest.fixture
def hostile_server(sim_server):
    site = build_site("hostile")
    site.drip_interval = 0.2
    return sim_server(site)


def test_hostile_redirect_loops(hostile_server, sim_proxy_env):
    sim_proxy_env(hostile_server)
    with pytest.raises(requests.TooManyRedirects):
        requests.get(f"{WWW}/archive/loop-a", timeout=5)
    r = requests.get(f"{WWW}/archive/self", allow_redirects=False, timeout=5)
    assert r.status_code == 301 and r.headers["Location"] == f"{WWW}/archive/self"


def test_hostile_huge_page_and_gzip_bomb_are_streamed(hostile_server, sim_proxy_env):
    sim_proxy_env(hostile_server)
    with requests.get(f"{WWW}/archive/full-listing", stream=True, timeout=5) as r:
        assert int(r.headers["Content-Length"]) == 50 * 1024 * 1024
        first = next(r.raw.stream(65536, decode_content=False))
        assert b"<a href=" in first
    with requests.get(f"{WWW}/data/bulk-export", stream=True, timeout=5) as r:
        assert r.headers["Content-Encoding"] == "gzip" and "Content-Length" not in r.headers
        raw = r.raw.read(64 * 1024, decode_content=False)
    expanded = zlib.decompressobj(31).decompress(raw, 200 * 1024 * 1024)
    assert len(expanded) > 100 * len(raw)  # a bomb: ratio far beyond any real HTML
    assert hostile_server.site.bomb_bytes >= 1024**3


def test_hostile_429_storm_then_success(hostile_server, sim_proxy_env):
    sim_proxy_env(hostile_server)
    url = f"{WWW}/api/series/0.csv"
    codes = [requests.get(url, timeout=5) for _ in range(4)]
    assert [r.status_code for r in codes] == [429, 429, 429, 200]
    assert codes[0].headers["Retry-After"] == "1"
    assert codes[3].text.startswith("Table API000")
    hostile_server.reset_log()
    assert requests.get(url, timeout=5).status_code == 429


def test_hostile_slow_drip(hostile_server, sim_proxy_env):
    sim_proxy_env(hostile_server)
    t0 = time.perf_counter()
    with requests.get(f"{WWW}/live/feed", stream=True, timeout=5) as r:
        chunks = r.iter_content(1)
        got = next(chunks) + next(chunks) + next(chunks)
    assert len(got) == 3 and time.perf_counter() - t0 >= 0.35


def test_hostile_malformed_and_mislabelled(hostile_server, sim_proxy_env):
    sim_proxy_env(hostile_server)
    site = hostile_server.site
    r = requests.get(f"{WWW}/legacy/page-2", timeout=5)
    assert "x-klingon" in r.headers["Content-Type"]
    for u in site.links(f"{WWW}/legacy/page-1"):
        assert u.encode() in requests.get(f"{WWW}/legacy/page-1", timeout=5).content
    huge_attr = requests.get(f"{WWW}/legacy/page-3", timeout=5)
    assert len(huge_attr.content) > 2_000_000
    r = requests.get(f"{WWW}/reports/summary.csv", timeout=5)
    assert r.headers["Content-Type"] == "text/html" and r.text.startswith("Table SUM001")
    assert site.kind(f"{WWW}/reports/summary.csv") == "html"
    r = requests.get(f"{WWW}/reports/annual-report.pdf", timeout=5)
    assert r.headers["Content-Type"] == "application/pdf" and r.content.startswith(b"<!DOCTYPE html>")
    assert site.disallowed(f"{WWW}/private/archive/1") and site.kind(f"{WWW}/private/archive/1") == "trap"
    robots = requests.get(f"{WWW}/robots.txt", timeout=5).text
    assert "Disallow: /private/" in robots


def test_hostile_site_still_has_ordinary_targets():
    site = build_site("hostile")
    assert len(site.targets) >= 30
    assert site.depth(f"{WWW}/archive") == 1
    assert set(PROFILES) >= {"tiny", "small", "deep", "portal", "large", "hostile"}
