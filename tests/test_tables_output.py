"""Parquet per table, the JSON Lines index, and reading both back as DetectedTable."""

import json

import pyarrow.parquet as pq

from airflow_sbcrawl.tables import InputFile, Provenance, detect_tables, detect_to_dir, read_tables
from airflow_sbcrawl.tables.output import write_tables

from .test_tables_detect import SHEET


def test_parquet_round_trip(tmp_path):
    prov = Provenance("http://stats.example/t.xlsx", "a" * 64, member="x/t.xlsx", sheet="Data", crawl_run="r1")
    tables = detect_tables(SHEET, prov)
    index = write_tables(tables, tmp_path)
    back = read_tables(index)
    assert len(back) == len(tables)
    for orig, got in zip(tables, back, strict=True):
        assert got.table_id == orig.table_id
        assert got.provenance == orig.provenance
        assert got.observations == orig.observations
        assert got.header == orig.header and got.line_classes == orig.line_classes
        assert got.cell_range == orig.cell_range and got.title == orig.title
    data = pq.read_table(tmp_path / json.loads(index.read_text().splitlines()[0])["path"])
    cols = set(data.column_names)
    assert {"source_url", "sha256", "member", "sheet", "cell_range", "crawl_run", "detector_version"} <= cols
    assert {"confidence", "value", "status", "raw", "row_labels", "column_path"} <= cols
    assert set(data.column("crawl_run").to_pylist()) == {"r1"}


def test_detect_to_dir_summary_and_errors(tmp_path):
    good = tmp_path / "t.csv"
    good.write_text("\n".join(",".join(f'"{c}"' for c in row) for row in SHEET))
    bad = tmp_path / "b.pdf"
    bad.write_bytes(b"%PDF-1.4 broken")
    out = tmp_path / "out"
    summary = detect_to_dir([InputFile(good, source_url="http://x/t.csv", crawl_run="r"), bad], out)
    assert summary["files"] == 2 and summary["tables"] == 1 and summary["errors"] >= 1
    (table,) = read_tables(summary["index"])
    assert table.provenance.crawl_run == "r" and table.observations
    errors = [json.loads(line) for line in (out / "errors.jsonl").read_text().splitlines()]
    assert errors[0]["reason"]
