"""Table detection on hand-made sheets: multi-row headers, groups, totals, notes, two tables, markers."""

import pytest

from airflow_sbcrawl.tables import Provenance, detect_file, detect_tables

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
    (table,) = detect_tables(SHEET, PROV)
    lines = _lines(table)
    assert lines[0] == "metadata"
    assert lines[3] == "header" and lines[4] == "header"
    assert lines[6] == "group" and lines[12] == "group"
    assert all(lines[i] == "data" for i in (7, 8, 9, 10, 13, 14, 15))
    assert lines[11] == "derived" and lines[16] == "derived"
    assert lines[18] == "notes" and lines[19] == "notes"
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
    assert a.first_row == 0 and b.first_row == len(first)
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
    assert table.cell_range == "A1:E20"
