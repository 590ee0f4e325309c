"""Table detection on real statistics files (tests/data/tables_real, sources in SOURCES.md)."""

from __future__ import annotations

import io
import json
import shutil

from airflow_sbcrawl.tables import detect_file
from sbcrawl_dev.bench.tables_real import default_dir, header_row, load_expected, main, score_file

REAL = default_dir()


def _by_sheet(name: str) -> dict[str, list]:
    out: dict[str, list] = {}
    for t in detect_file(REAL / name).tables:
        out.setdefault(t.provenance.sheet, []).append(t)
    return out


def test_notes_around_a_table_leave_one_table_under_its_column_names():
    # readxl's deaths.xlsx: free text in several cells above and below the table, on both sheets
    for sheet, tables in _by_sheet("readxl-deaths.xlsx").items():
        assert len(tables) == 1, sheet
        table = tables[0]
        assert header_row(table) == 4
        assert table.header == [["Name", "Profession", "Age", "Has kids", "Date of birth", "Date of death"]]
        assert not any(o.status == "text" and o.raw.endswith(("too!", "now!")) for o in table.observations)
        assert "Age" in {o.column_path[-1] for o in table.observations}


def test_time_series_workbook_keeps_its_series_attributes_out_of_the_data():
    tables = _by_sheet("abs-640101.xls")
    (data,) = tables["Data1"]
    assert header_row(data) == 0
    assert {"Unit", "Series ID"} <= set(data.column_attributes[1])
    assert all(o.row >= 10 for o in data.observations)  # the 9 attribute rows under the header hold none
    # the series list: its column names are above a blank line, the first series is data
    (index,) = tables["Index"]
    assert header_row(index) == 9
    assert any(o.row == 11 for o in index.observations)


def test_small_multiples_stacked_and_side_by_side_are_five_tables():
    tables = _by_sheet("unpivotr-purpose.xlsx")["Small multiples"]
    assert sorted(t.title for t in tables) == ["Bachelor's degree", "Certificate", "Diploma", "No Qualification",
                                                "Postgraduate qualification"]
    assert all(len(t.observations) == 2 for t in tables)


def test_key_value_lines_above_a_csv_header_are_metadata():
    (table,) = _by_sheet("worldbank-API_SP.POP.TOTL_DS2_en_csv_v2.csv").popitem()[1]
    assert header_row(table) == 4
    assert table.header[0][:2] == ["Country Name", "Country Code"]
    assert "Data Source" in table.title


def test_real_bench_scores_each_file_against_its_annotation(tmp_path):
    expected = load_expected(REAL)
    assert len(expected) >= 20
    score = score_file(REAL / "bfs-Weinverbrauch.xlsx", expected["bfs-Weinverbrauch.xlsx"])
    assert (score.expected, score.found, score.matched, score.problems) == (1, 1, 1, [])
    # a wrong annotation shows as a problem, so the bench can fail
    wrong = score_file(REAL / "bfs-Weinverbrauch.xlsx", {"by_sheet": {"T7.6.3": 2}, "header_rows": {"T7.6.3": 1}})
    assert wrong.matched == 1 and len(wrong.problems) == 2
    # the whole bench over a folder of two files, one of them annotated wrong
    for name in ("bfs-Weinverbrauch.xlsx", "tidyxl-titanic.xlsx"):
        shutil.copy(REAL / name, tmp_path / name)
    files = {"bfs-Weinverbrauch.xlsx": expected["bfs-Weinverbrauch.xlsx"], "tidyxl-titanic.xlsx": {"by_sheet": {}}}
    (tmp_path / "expected.json").write_text(json.dumps({"files": files}))
    out = io.StringIO()
    summary = main(tmp_path, out)
    assert (summary["files"], summary["files_without_problems"]) == (2, 1)
    assert (summary["tables_expected"], summary["tables_found"], summary["recall"]) == (1, 2, 1.0)
    assert "sheet 'Sheet1': 1 tables, expected 0" in out.getvalue()


def test_pdf_ruled_around_column_groups_is_read_from_its_words():
    # pdfplumber's grid of this page has one cell per group of columns ("11,062 .6 1,540 .0 ..."); the
    # words give a column per figure, the points sitting low join their line, dot leaders leave the labels
    tables = detect_file(REAL / "camelot-12s0324.pdf").tables
    assert len(tables) == 2
    by_race = tables[1]
    assert len(by_race.observations) > 150
    robbery = {o.column_path[-1]: o.value for o in by_race.observations if o.row_labels == ("Robbery",)}
    assert robbery["White"] == 43039.0 and robbery["Black"] == 55742.0
    assert robbery["T otal"] == 100496.0


def test_real_bench_without_annotations_says_so_in_one_line(tmp_path, capsys):
    from sbcrawl_dev.bench.tables_detection import main as bench_main

    assert bench_main(["--real", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "expected.json" in err
