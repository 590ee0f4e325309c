"""Table detection on hand-made sheets: multi-row headers, groups, totals, notes, two tables, markers."""

import numpy as np
import pytest

from airflow_sbcrawl.tables import Provenance, detect_file, detect_tables
from airflow_sbcrawl.tables.detect import classify_and_detect

PROV = Provenance(source_url="http://stats.example/t.csv", sha256="0" * 64)

SHEET = [
    ["Table 3. Employment by region and sex", "", "", "", ""],
    ["(in thousands)", "", "", "", ""],
    ["", "", "", "", ""],
    ["Region", "2020", "", "2021", ""],
    ["", "Men", "Women", "Men", "Women"],
    ["", "", "", "", ""],
    ["NORTH", "", "", "", ""],
    ["Alpha", "1,200", "1,100", "1,250", "1,130"],
    ["Beta", "800", "(D)", "820", "770"],
    ["Gamma", "450", "430", "..", "440"],
    ["Delta", "210", "205", "215", "208"],
    ["Total", "2,660", "1,735", "2,285", "2,548"],
    ["SOUTH", "", "", "", ""],
    ["Epsilon", "300", "310", "305", "312"],
    ["Zeta", "150", "140", "155", "145"],
    ["Eta", "120", "118", "122", "121"],
    ["Total", "570", "568", "582", "578"],
    ["", "", "", "", ""],
    ["Source: Statistics Office, Labour Force Survey.", "", "", "", ""],
    ["Note: (D) withheld to avoid disclosure.", "", "", "", ""],
]


def _lines(table):
    return dict(zip(range(table.first_row, table.last_row + 1), table.line_classes, strict=True))


def test_line_classes_of_a_typical_sheet():
    sheet_lines, (table,) = classify_and_detect(SHEET, PROV)
    # The table is its header block and body; its title, unit line and notes are its metadata, outside its
    # range (issue 20), and keep their classes in the sheet's
    assert (table.first_row, table.last_row) == (3, 16)
    assert sheet_lines[0] == "metadata"
    assert sheet_lines[18] == "notes" and sheet_lines[19] == "notes"
    lines = _lines(table)
    assert lines[3] == "header" and lines[4] == "header"
    assert lines[6] == "group" and lines[12] == "group"
    assert all(lines[i] == "data" for i in (7, 8, 9, 10, 13, 14, 15))
    assert lines[11] == "derived" and lines[16] == "derived"
    assert table.title.startswith("Table 3. Employment")
    assert table.notes[0].startswith("Source:")
    assert 0.5 < table.confidence <= 1.0
    # "(in thousands)" may read as title or as a unit line of the header; the two header rows must be there
    assert table.header[-2:] == [SHEET[3], SHEET[4]]


def test_observations_long_form():
    (table,) = detect_tables(SHEET, PROV)
    obs = {(o.row, o.col): o for o in table.observations}
    alpha = obs[(7, 1)]
    assert alpha.value == 1200.0 and alpha.status == "ok"
    assert alpha.row_labels == ("NORTH", "Alpha")
    assert alpha.column_path == ("2020", "Men")
    # a spanning header cell is carried right over its merged area
    assert obs[(7, 2)].column_path == ("2020", "Women")
    assert obs[(7, 4)].column_path == ("2021", "Women")
    assert obs[(8, 2)].value is None and obs[(8, 2)].status == "confidential" and obs[(8, 2)].raw == "(D)"
    assert obs[(9, 3)].status == "missing"
    assert obs[(16, 1)].line_class == "derived" and obs[(16, 1)].row_labels == ("SOUTH", "Total")
    # the stub, group and note lines are not observations
    assert not any(o.col == 0 for o in table.observations)
    assert len(table.observations) == 9 * 4


def test_two_tables_in_one_sheet_and_decimal_commas():
    first = [
        ["Tabelle 1: Preise", "", ""],
        ["Ware", "2022", "2023"],
        ["Brot", "2,35", "2,59"],
        ["Milch", "1,09", "1,15"],
        ["Käse", "12,80", "(12,5)"],
        ["Quelle: Statistisches Amt", "", ""],
        ["", "", ""],
        ["", "", ""],
    ]
    second = [
        ["Tabelle 2: Mengen", "", ""],
        ["Ware", "2022", "2023"],
        ["Brot", "1.234", "1.250"],
        ["Milch", "2.100", "–"],
        ["Käse", "310", "305"],
        ["Quelle: Statistisches Amt", "", ""],
    ]
    tables = detect_tables(first + second, PROV)
    assert len(tables) == 2
    a, b = tables
    assert a.title == "Tabelle 1: Preise" and b.title == "Tabelle 2: Mengen"
    # each starts at its header line, under its title (metadata of the table, outside its range)
    assert a.first_row == 1 and b.first_row == len(first) + 1
    assert a.last_row == 4 and a.notes == ["Quelle: Statistisches Amt"]
    values = {(o.row, o.col): o for o in a.observations + b.observations}
    assert values[(2, 1)].value == pytest.approx(2.35)
    assert values[(4, 2)].value == pytest.approx(-12.5)
    assert values[(len(first) + 2, 1)].value == pytest.approx(1234.0)  # sheet uses decimal commas
    assert values[(len(first) + 3, 2)].status == "missing"
    assert a.table_id != b.table_id
    assert values[(2, 1)].column_path == ("2022",)


def test_year_stub_is_a_label_not_a_measure():
    sheet = [["Year", "Births", "Deaths"], ["2019", "778", "939"], ["2020", "773", "985"], ["2021", "795", "1,023"]]
    (table,) = detect_tables(sheet, PROV)
    assert {o.col for o in table.observations} == {1, 2}
    assert table.observations[0].row_labels == ("2019",)


def test_detect_file_never_raises():
    result = detect_file(b"\x00\x01 garbage", mime="application/pdf", provenance=PROV)
    assert result.tables == [] or result.errors is not None
    result = detect_file(b"%PDF-1.4 broken", mime="application/pdf", provenance=PROV)
    assert result.errors and not result.tables


def test_detect_file_from_csv_bytes_sets_provenance():
    csv = "\n".join(",".join(f'"{c}"' for c in row) for row in SHEET).encode()
    result = detect_file(csv, mime="application/octet-stream", provenance=Provenance("http://x/t", ""))
    assert not result.errors
    (table,) = result.tables
    assert len(table.provenance.sha256) == 64
    assert table.provenance.detector_version
    # the table proper: header block and body; the title, unit line and notes around it are not in it
    assert table.cell_range == "A4:E17"


def _beside(left, right, gap=1):
    height = max(len(left), len(right))
    lw, rw = len(left[0]), len(right[0])
    rows = []
    for i in range(height):
        a = left[i] if i < len(left) else [""] * lw
        b = right[i] if i < len(right) else [""] * rw
        rows.append(a + [""] * gap + b)
    return rows


def test_tables_side_by_side_are_two_tables_each_with_its_header():
    right = [
        ["Table 4. Hours worked", "", ""],
        ["Region", "2020", "2021"],
        ["Alpha", "38.5", "38.1"],
        ["Beta", "40.2", "39.9"],
        ["Gamma", "37.0", "37.4"],
        ["Source: Statistics Office.", "", ""],
    ]
    sheet = _beside(SHEET, right)
    tables = detect_tables(sheet, PROV)
    assert [(t.first_col, t.last_col) for t in tables] == [(0, 4), (6, 8)]
    left, beside = tables
    assert left.title.startswith("Table 3.") and beside.title == "Table 4. Hours worked"
    assert len(left.observations) == 9 * 4
    obs = {(o.row, o.col): o for o in beside.observations}
    assert obs[(2, 7)].row_labels == ("Alpha",) and obs[(2, 7)].column_path == ("2020",)
    assert obs[(4, 8)].value == pytest.approx(37.4)
    assert beside.cell_range == "G2:I5"  # its title above and source under it are outside its range


def test_a_spacer_column_inside_one_table_does_not_split_it():
    sheet = [
        ["Table 5. Trade", "", "", ""],
        ["Partner", "", "Exports", "Imports"],
        ["Alpha", "", "120", "80"],
        ["Beta", "", "95", "101"],
        ["Gamma", "", "40", "33"],
    ]
    (table,) = detect_tables(sheet, PROV)
    assert {o.col for o in table.observations} == {2, 3}
    assert table.observations[0].row_labels == ("Alpha",)


def test_stacked_tables_under_a_repeated_header_are_split_and_paths_not_doubled():
    header = [["Region", "2020", "", "2021", ""], ["", "Men", "Women", "Men", "Women"]]
    body1 = [["Alpha", "1,200", "1,100", "1,250", "1,130"], ["Beta", "800", "790", "820", "770"]]
    body2 = [["Gamma", "450", "430", "460", "440"], ["Delta", "210", "205", "215", "208"]]
    blank = [[""] * 5]
    sheet = [["Table 6. Employment", "", "", "", ""], *header, *body1, *blank, *header, *body2]
    tables = detect_tables(sheet, PROV)
    # the first table starts at its header, under its title (outside its range)
    assert [(t.first_row, t.last_row) for t in tables] == [(1, 4), (6, 9)]
    assert tables[0].title == "Table 6. Employment"
    second = tables[1]
    assert second.header == header
    assert {o.column_path for o in second.observations} == {
        ("2020", "Men"), ("2020", "Women"), ("2021", "Men"), ("2021", "Women")
    }
    # Continued under its header with no blank line: one table, each column with one path
    (table,) = detect_tables([["Table 6. Employment", "", "", "", ""], *header, *body1, *header, *body2], PROV)
    assert len(table.observations) == 16
    assert max(len(o.column_path) for o in table.observations) == 2


def test_time_series_metadata_rows_are_column_attributes_not_data():
    series = ["Employed total ;  Persons ;", "Unemployed total ;  Persons ;", "Participation rate ;  Persons ;"]
    meta = [
        ["Unit", "000", "000", "Percent"],
        ["Series Type", "Seasonally Adjusted", "Seasonally Adjusted", "Seasonally Adjusted"],
        ["Data Type", "STOCK", "STOCK", "PERCENT"],
        ["Frequency", "Month", "Month", "Month"],
        ["Collection Month", "1", "1", "1"],
        ["Series Start", "1978-02-01 00:00:00", "1978-02-01 00:00:00", "1978-02-01 00:00:00"],
        ["Series End", "1978-11-01 00:00:00", "1978-11-01 00:00:00", "1978-11-01 00:00:00"],
        ["No. Obs", "10", "10", "10"],
        ["Series ID", "A84423043C", "A84423047L", "A84423051C"],
    ]
    body = [[f"1978-{m:02d}-01 00:00:00", f"{6000 + m * 7.5}", f"{400 + m}", f"{61 + m / 10:.1f}"]
            for m in range(2, 10)]
    body.append(["1978-10-01 00:00:00", "DNR", "NSD", "DNR"])
    body.append(["1978-11-01 00:00:00", "6090.1", "410.0", "62.0"])
    sheet = [["", *series], *meta, *body]
    (table,) = detect_tables(sheet, PROV)
    rows = {o.row for o in table.observations}
    assert rows == set(range(10, 20))  # no observation from the metadata rows, the marker row kept
    assert {o.status for o in table.observations if o.row == 18} == {"missing"}
    first = next(o for o in table.observations if o.row == 10 and o.col == 1)
    assert first.column_path == ("Employed total ; Persons ;",) and first.value == pytest.approx(6015.0)
    assert table.column_attributes[1]["Series ID"] == "A84423043C"
    assert table.column_attributes[3]["Unit"] == "Percent"
    assert table.column_attributes[2]["No. Obs"] == "10"


def test_values_with_a_margin_of_error_are_numbers():
    sheet = [
        ["Table 7. Height by age (cm)", "", ""],
        ["Age", "Boys", "Girls"],
        ["10 years", "138.4±1.2", "138.1±1.1"],
        ["11 years", "143.5±1.3", "144.2±1.2"],
        ["12 years", "149.1±1.4", "151.0 +/- 1.3"],
    ]
    (table,) = detect_tables(sheet, PROV)
    obs = {(o.row, o.col): o for o in table.observations}
    assert len(obs) == 6
    assert obs[(2, 1)].value == pytest.approx(138.4) and obs[(2, 1)].raw == "138.4±1.2"
    assert obs[(4, 2)].value == pytest.approx(151.0) and obs[(4, 2)].status == "ok"
    assert obs[(3, 2)].row_labels == ("11 years",) and obs[(3, 2)].column_path == ("Girls",)


def test_section_labels_without_values_keep_two_series_apart():
    sheet = [
        ["Table 8. Exchange rates", "", ""],
        ["Currency", "2022", "2023"],
        ["United States dollar", "", ""],
        ["Monthly average", "0.68", "0.66"],
        ["End of period", "0.67", "0.68"],
        ["Trade weighted index", "", ""],
        ["Monthly average", "60.1", "61.2"],
        ["End of period", "60.5", "61.0"],
        ["Source: Reserve Bank.", "", ""],
    ]
    (table,) = detect_tables(sheet, PROV)
    keys = [(o.row_labels, o.column_path) for o in table.observations]
    assert len(keys) == 8 and len(set(keys)) == 8
    obs = {(o.row, o.col): o for o in table.observations}
    assert obs[(3, 1)].row_labels[-2:] == ("United States dollar", "Monthly average")
    assert obs[(7, 2)].row_labels[-2:] == ("Trade weighted index", "End of period")


def test_time_series_side_by_side_split_on_their_year_stubs():
    years = range(2010, 2020)
    left = [["Year", "Births", "Deaths"]] + [[str(y), f"{700 + y % 50}", f"{900 + y % 40}"] for y in years]
    right = [["Year", "Imports", "Exports"]] + [[str(y), f"{30 + y % 7}.5", f"{40 + y % 9}.25"] for y in years]
    tables = detect_tables(_beside(left, right, gap=2), PROV)
    assert [(t.first_col, t.last_col) for t in tables] == [(0, 2), (5, 7)]
    assert {o.column_path for o in tables[1].observations} == {("Imports",), ("Exports",)}
    assert tables[1].observations[0].row_labels == ("2010",)


def test_a_total_column_is_derived_by_arithmetic_not_by_its_name():
    from airflow_sbcrawl.tables.detect import total_columns

    rows = [["Table 5. Persons employed by region (thousands)", "", "", "", ""], ["", "", "", "", ""],
            ["Region", "Men", "Women", "All", "Share of women (%)"], ["North", "70", "50", "120", "41.7"],
            ["South", "180", "160", "340", "47.1"], ["East", "140", "140", "281", "49.8"],  # 281: rounded parts
            ["West", "81", "69", "150", "46.0"], ["Islands", "12", "9", "21", "42.9"]]
    (table,) = detect_tables(rows, Provenance("t", "t"))
    by_col = {}
    for o in table.observations:
        by_col.setdefault(o.column_path[-1], set()).add(o.line_class)
    assert by_col == {"Men": {"data"}, "Women": {"data"}, "All": {"derived"}, "Share of women (%)": {"data"}}
    nan = float("nan")
    values = np.array([[1.0, 2.0, 3.0, 9.0], [4.0, 5.0, 9.0, 1.0], [2.5, 2.5, 5.0, nan]])
    assert total_columns(values) == [2]  # 9.0 = 4 + 5 on one line only: column 3 is not a total
    assert total_columns(np.array([[23.65, 20.81, 3.04], [15.34, 13.50, 1.97]])) == []  # 23.85 is not 23.65


def test_a_label_line_right_under_the_header_does_not_replace_it():
    from airflow_sbcrawl.tables.features import cell_kinds
    from airflow_sbcrawl.tables.segment import _frame_tables
    from airflow_sbcrawl.tables.values import SheetCells

    rows = [["Region", "2010", "2011"], ["Northeast", "States", ""], ["Maine", "1.3", "1.4"],
            ["Vermont", "0.6", "0.6"]]
    cells = SheetCells.guess(rows)
    kinds, values = cell_kinds(rows, cells.decimal, cells)
    framed = _frame_tables(["header", "data", "data", "data"], cells.text, kinds, values)
    assert framed == ["header", "data", "data", "data"]
    # the same label line under free text, with no header: it names the columns
    framed = _frame_tables(["metadata", "data", "data", "data"], cells.text, kinds, values)
    assert framed == ["metadata", "header", "data", "data"]
