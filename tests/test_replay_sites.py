"""The project's replayed real sites: the committed list, group selection, and a site of our own extracted and
crawled through the shared harness (called, never copied)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from sbcrawl_dev.bench import replay, replay_sites
from sbcrawl_dev.bench.replay_sites import SiteListError, groups, project_sites, select


def test_the_committed_sites_are_complete_and_split_into_groups(eval_dir):
    ours = project_sites(eval_dir)
    by_group = groups(eval_dir)
    assert {"rw", "kg", "rdatasets"} <= set(by_group["dev"])
    assert len(set(by_group["dev"]) - {"rw", "kg", "rdatasets"}) >= 3 and len(by_group["held-out"]) >= 3
    for name, spec in ours.items():
        notes = spec["notes"]
        assert spec["title"] and notes["languages"], name
        assert 300 <= notes["urls"] <= 5000, name
        assert notes["bfs_pct"] - notes["tree_pct"] > 15, name  # else it cannot tell policies apart
        for mount in spec["mounts"]:
            assert re.fullmatch(r"[0-9a-f]{40}", mount["commit"]) and mount["url"].endswith("/"), name


def test_groups_and_names_select_sites_in_order_each_once(eval_dir):
    by_group = groups(eval_dir)
    held_out = by_group["held-out"]
    assert select("held-out", eval_dir) == held_out
    assert select("dev", eval_dir) == by_group["dev"]
    assert select(f"rw,{held_out[0]},held-out", eval_dir) == ["rw", *held_out]
    assert select("all", eval_dir) == by_group["dev"] + held_out
    with pytest.raises(SiteListError, match="unknown replay site or group 'nosuch'"):
        select("rw,nosuch", eval_dir)


def _sites_file(tmp_path: Path, **sites: dict) -> Path:
    path = tmp_path / "sites.json"
    path.write_text(json.dumps({"_comment": "test", **sites}))
    return path


def test_a_bad_group_or_a_harness_name_is_refused(tmp_path, eval_dir):
    mount = {"url": "http://x.test/", "dir": "d", "repo": "o/r", "ref": "main", "commit": "0" * 40}
    bad_group = _sites_file(tmp_path, mine={"group": "test", "start_url": "http://x.test/", "mounts": [mount]})
    with pytest.raises(SiteListError, match="group 'test'"):
        select("dev", eval_dir, bad_group)
    clash = _sites_file(tmp_path, rw={"group": "dev", "start_url": "http://x.test/", "mounts": [mount]})
    with pytest.raises(SiteListError, match="'rw' is already one of the harness's sites"):
        project_sites(eval_dir, clash)


def test_bench_replay_names_what_to_extract_before_it_crawls(tmp_path, capsys, eval_dir):
    assert replay.main(["--eval-dir", str(eval_dir), "--sites", "nosuch"]) == 2
    assert "unknown replay site or group 'nosuch'" in capsys.readouterr().err
    held_out = groups(eval_dir)["held-out"]
    assert replay.main(["--eval-dir", str(eval_dir), "--sites", "held-out", "--data-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"not extracted yet: {', '.join(held_out)}" in err and "bench replay-extract" in err


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


@pytest.mark.parametrize("serial", [False, True], ids=["concurrent", "serial"])
def test_a_project_site_is_extracted_and_crawled_through_the_harness(tmp_path, eval_dir, serial):
    # A small built site in a real git repository: the start page links a tables section and 12 news pages;
    # the section links four CSV files; one more CSV is in the tree but linked from nowhere.
    repo = tmp_path / "origin"
    (repo / "tables").mkdir(parents=True)
    news = " ".join(f'<a href="news-{i}.html">News {i}</a>' for i in range(12))
    (repo / "index.html").write_text(f'<html><body><a href="tables/">Tables</a> {news}</body></html>')
    for i in range(12):
        (repo / f"news-{i}.html").write_text(f"<html><body><p>News {i}</p></body></html>")
    files = ("a", "b", "c", "d")
    (repo / "tables" / "index.html").write_text(
        "<html><body>" + " ".join(f'<a href="{n}.csv">{n}</a>' for n in files) + "</body></html>")
    for name in (*files, "unlinked"):
        (repo / "tables" / f"{name}.csv").write_text(f"x,y\n1,{name}\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "site")
    commit = _git(repo, "rev-parse", "HEAD")
    sites_json = _sites_file(tmp_path, tiny={
        "title": "tiny", "group": "held-out", "start_url": "http://tiny.test/site/",
        "mounts": [{"url": "http://tiny.test/site/", "dir": "site", "repo": "test/tiny", "ref": "main",
                    "commit": commit}]})
    data = tmp_path / "data"
    assert replay_sites.main(["--eval-dir", str(eval_dir), "--sites-json", str(sites_json), "--site", "held-out",
                              "--data-dir", str(data), "--git", f"test/tiny={repo / '.git'}"]) == 0
    assert json.loads((data / "tiny" / "MANIFEST.json").read_text())["mounts"][0]["commit"] == commit
    out = tmp_path / "out"
    assert replay.main(["--eval-dir", str(eval_dir), "--sites-json", str(sites_json), "--data-dir", str(data),
                        "--sites", "tiny", "--runs", "1", "--policies", "default", "--jobs", "1",
                        "--out", str(out), "--keep-json", str(tmp_path / "kept"), *(["--serial"] * serial)]) == 0
    # --serial reaches the crawl command the harness ran (one request at a time), and only with --serial.
    ran = json.loads((tmp_path / "kept" / "tiny-default-1.json").read_text())["run"]["cmd"]
    assert ("--concurrency 1" in ran) is serial and " crawl " in ran
    run = json.loads((out / "runs.jsonl").read_text())
    # The harness built U from the tree: 14 pages and the 4 linked files, not the unlinked one.
    assert (run["site"], run["total_urls"], run["targets"]) == ("tiny", 18, 4)
    # Scored from the server's log: what the crawl fetched (how soon is the policies' business, not this test's).
    assert run["targets_retrieved"] >= 1 and run["missing_from_outputs"] == 0 and run["exit_code"] == 0
    assert run["requests"] <= run["budget"] == 27 and run["bfs_pct"] > run["tree_pct"]

