"""``python -m sbcrawl_dev bench crawl`` end to end on the tiny profile."""

from __future__ import annotations

import csv
import time

from sbcrawl_dev.bench.crawl_policies import main


def test_bench_crawl_on_tiny_writes_tables_csv_and_curves(tmp_path, capsys):
    began = time.monotonic()
    code = main(["--profiles", "tiny", "--policies", "sb-oracle,bfs,omniscient", "--repeats", "1", "--jobs", "1",
                 "--out", str(tmp_path)])
    assert code == 0
    assert time.monotonic() - began < 60
    out = capsys.readouterr().out
    assert "Table 2 equivalent" in out and "Table 3 equivalent" in out
    with (tmp_path / "crawl-summary.csv").open() as fh:
        rows = {r["policy"]: r for r in csv.DictReader(fh)}
    assert set(rows) == {"sb-oracle", "bfs", "omniscient"}
    # The bound: one request per target, 90 % of them in ceil(0.9 * targets) requests, no other volume.
    targets, urls = int(rows["omniscient"]["targets"]), int(rows["omniscient"]["url_count"])
    assert float(rows["omniscient"]["table2_mean"]) == 100 * -(-9 * targets // 10) / urls
    assert float(rows["omniscient"]["table3_mean"]) == 0.0
    for policy in ("sb-oracle", "bfs"):
        assert float(rows["omniscient"]["table2_mean"]) < float(rows[policy]["table2_mean"]) < 1000
    png = tmp_path / "harvest-tiny.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with (tmp_path / "crawl-runs.csv").open() as fh:
        runs = list(csv.DictReader(fh))
    assert all(int(r["requests"]) > 0 for r in runs)
