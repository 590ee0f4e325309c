"""The ingestion pipeline without Airflow: ``sbcrawl crawl`` -> ``sbcrawl tables detect`` -> ``sbcrawl lake
load``, on a simulated site, a local folder and SeaweedFS's Iceberg catalog."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from airflow_sbcrawl.cli import main

CSV = ("Population by region (thousands)\nRegion,2020,2021,2022\nNorth,100.5,110.2,120.9\n"
       "South,200.1,210.4,220.7\nEast,300.3,310.8,320.2\nWest,400.4,410.1,420.6\n")


def _index(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "tables.jsonl").read_text().splitlines() if line]


def test_tables_detect_on_files_and_folders(tmp_path, capsys):
    src = tmp_path / "in"
    (src / "sub").mkdir(parents=True)
    (src / "sub" / "population.csv").write_text(CSV)
    (src / "broken.xlsx").write_bytes(b"PK\x03\x04 not really a zip")
    single = tmp_path / "single.csv"
    single.write_text(CSV.replace("Population", "Households"))
    out = tmp_path / "out"

    assert main(["tables", "detect", str(src), str(single), "--out", str(out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["files"] == 3 and summary["files_with_tables"] == 2 and summary["errors"] >= 1
    records = _index(out)
    assert len(records) == summary["tables"] >= 2
    assert all((out / r["path"]).is_file() and r["path"].endswith(".parquet") for r in records)
    assert {Path(r["provenance"]["source_url"]).name for r in records} == {"population.csv", "single.csv"}
    errors = [json.loads(line) for line in (out / "errors.jsonl").read_text().splitlines()]
    assert any(e["source_url"].endswith("broken.xlsx") for e in errors)

    from airflow_sbcrawl.tables import read_tables

    tables = read_tables(out / "tables.jsonl")
    assert sum(len(t.observations) for t in tables) == summary["observations"] >= 24  # 4 regions x 3 years x 2


@pytest.mark.parametrize("case", ["missing path", "out not empty"])
def test_tables_detect_refuses_bad_input_in_one_line(tmp_path, capsys, case):
    out = tmp_path / "out"
    out.mkdir()
    if case == "out not empty":
        (out / "tables.jsonl").write_text("{}\n")
        (tmp_path / "a.csv").write_text(CSV)
        args, message = [str(tmp_path / "a.csv")], "is not an empty folder"
    else:
        args, message = [str(tmp_path / "nope")], "no such file or folder"
    assert main(["tables", "detect", *args, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    assert case != "out not empty" or (out / "tables.jsonl").read_text() == "{}\n"  # nothing lost


def test_tables_detect_skips_manifest_lines_that_are_not_rows(tmp_path, capsys):
    """A hand-edited manifest: each line that is not a row of a stored object is named and skipped, the
    others' files are read (no TypeError, nothing read from outside objects/)."""
    import hashlib

    crawl = tmp_path / "crawl"
    (crawl / "objects").mkdir(parents=True)
    sha = hashlib.sha256(CSV.encode()).hexdigest()
    (crawl / "objects" / sha).write_text(CSV)
    (tmp_path / "secret.csv").write_text(CSV.replace("Population", "Secret"))
    lines = ["[1, 2]", '"a string"', "{not json", json.dumps({"sha256": "../../secret.csv", "mime": "text/csv"}),
             json.dumps({"url": "http://x.example/a.csv"}),
             json.dumps({"sha256": sha, "url": ["http://x.example/pop.csv"], "mime": 5, "run_id": "r1"})]
    (crawl / "manifest.jsonl").write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    assert main(["tables", "detect", str(crawl), "--out", str(out), "--json"]) == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    skipped = [line for line in captured.err.splitlines() if "skipped" in line]
    assert summary["files"] == 1 and summary["files_with_tables"] == 1
    assert [line.split(" line ")[1].split(" ")[0] for line in skipped] == ["1", "2", "3", "4", "5"]
    assert "a JSON list, not an object" in skipped[0] and "not JSON" in skipped[2]
    records = _index(out)
    assert records and {r["provenance"]["source_url"] for r in records} == {""}  # a list is no URL
    assert all("Secret" not in json.dumps(r) for r in records)


def test_lake_load_refuses_bad_input(tmp_path, capsys):
    assert main(["lake", "load", str(tmp_path), "--catalog", "{}"]) == 2
    assert "tables.jsonl not found" in capsys.readouterr().err
    (tmp_path / "tables.jsonl").write_text("")
    assert main(["lake", "load", str(tmp_path), "--catalog", "{not json"]) == 2
    assert "--catalog is neither a JSON object" in capsys.readouterr().err
    assert main(["lake", "load", str(tmp_path), "--catalog", '{"warehouse": "w"}', "--site", "x"]) == 2
    assert "need a 'uri'" in capsys.readouterr().err
    # an unreachable catalog: one line naming it, exit 1
    assert main(["lake", "load", str(tmp_path), "--catalog", '{"uri": "http://127.0.0.1:9/", "warehouse": "w"}',
                 "--site", "x"]) == 1
    err = capsys.readouterr().err.strip()
    assert "127.0.0.1:9" in err and len(err.splitlines()) == 1


@pytest.mark.slow
def test_crawl_detect_load_without_airflow(tmp_path, capsys, sim_server, sim_proxy_env, lake_config, monkeypatch):
    from airflow_sbcrawl.lake import scan

    srv = sim_server("tiny", seed=0)
    sim_proxy_env(srv)
    for name in ("NO_PROXY", "no_proxy"):  # the simulated hosts through its proxy, the catalog directly
        monkeypatch.setenv(name, "127.0.0.1,localhost")
    crawl = tmp_path / "crawl"
    assert main(["crawl", srv.site.start_url, "--out", str(crawl), "--max-requests", "300", "--delay", "0",
                 "--quiet", "--no-report", "--json"]) == 0
    crawled = json.loads(capsys.readouterr().out)
    assert crawled["targets"] > 0

    detected = tmp_path / "detected"
    assert main(["tables", "detect", str(crawl), "--out", str(detected), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    rows = [json.loads(line) for line in (crawl / "manifest.jsonl").read_text().splitlines() if line]
    assert summary["files"] == len({r["sha256"] for r in rows})  # each crawled file once
    assert summary["tables"] > 0
    records = _index(detected)
    urls = {r["url"] for r in rows}
    assert all(r["provenance"]["source_url"] in urls for r in records)  # provenance is the crawled URL

    catalog = tmp_path / "catalog.json"
    catalog.write_text(json.dumps({**lake_config.properties, "namespace": lake_config.namespace}))
    from airflow_sbcrawl import progress

    monkeypatch.setattr(progress, "EVERY_S", 0.0)  # every load counts as long: its progress line is written
    for attempt in (1, 2):  # a second load replaces the first: nothing twice
        code = main(["lake", "load", str(detected), "--catalog", str(catalog), "--json"])
        captured = capsys.readouterr()
        assert code == 0, captured.err
        assert captured.err.splitlines()[-1].startswith(f"sbcrawl lake load: {summary['tables']:,} tables loaded, ")
        loaded = json.loads(captured.out)
        assert loaded["site"] == "stats.example" and loaded["namespace"] == lake_config.namespace
        assert loaded["tables"] == summary["tables"] and loaded["observations"] == summary["observations"]
        assert loaded["replaced_tables"] == (0 if attempt == 1 else summary["tables"])
    assert scan(lake_config, "tables").num_rows == summary["tables"]
    assert scan(lake_config, "observations").num_rows == summary["observations"]


def test_site_of_crawled_tables_is_the_domain_their_hosts_share():
    from airflow_sbcrawl.cli import _common_site

    assert _common_site({"www.stats.example", "data.stats.example", "pub.stats.example"}) == "stats.example"
    assert _common_site({"www.insee.fr"}) == "insee.fr"
    with pytest.raises(ValueError, match="unrelated sites"):
        _common_site({"insee.fr", "destatis.de"})
    with pytest.raises(ValueError, match="local files"):
        _common_site({""})
