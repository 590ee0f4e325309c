"""The PDF reader on hand-written PDFs: whitespace tables, two tables a page, scans, ruled grids, limits."""

from __future__ import annotations

import pypdfium2  # noqa: F401 - fails loudly if the PDF engine is missing
import pytest

from airflow_sbcrawl.tables.api import detect_file
from airflow_sbcrawl.tables.readers import Limits, read_bytes
from airflow_sbcrawl.tables.readers import pdf as pdf_reader
from sbcrawl_dev.bench.tables_pdf import Page, bench_pages, build_pdf, fixed_width_page, place_table, table_rows

TITLE = "Table 4.1: Resident population by region, 2010-2015 (thousands)"
NOTE = "Source: Census office. Figures for 2015 are provisional."


def _padded(rows: list[list[str]], width: int) -> list[list[str]]:
    return [row + [""] * (width - len(row)) for row in rows]


def _one_table_pdf(n_rows: int = 41, n_years: int = 6) -> tuple[bytes, list[list[str]]]:
    page = Page()
    rows = table_rows(n_rows, n_years)
    place_table(page, rows, 770, title=TITLE, note=NOTE, pitch=11)
    return build_pdf([page]), rows


def test_numeric_table_with_title_and_footnote_keeps_every_row():
    data, rows = _one_table_pdf()
    result = read_bytes(data, mime="application/pdf")
    assert not result.errors
    [sheet] = result.sheets
    assert sheet.name == "page 1" and sheet.format == "pdf"
    # title, header, the 41 rows and the note: one sheet row per printed line, one cell per column
    assert sheet.rows == _padded([[TITLE], *rows, [NOTE]], 7)
    assert len(sheet.rows) == 41 + 3


def test_the_detector_finds_the_table_in_the_pdf():
    data, rows = _one_table_pdf(n_rows=12, n_years=4)
    result = detect_file(data, mime="application/pdf")
    assert not result.errors and result.tables
    values = {o.value for t in result.tables for o in t.observations}
    assert float(rows[1][1].replace(",", "")) in values


def test_two_tables_on_one_page_are_two_sheets():
    page = Page()
    first, second = table_rows(5, 3, seed=1), table_rows(4, 5, seed=2)
    y = place_table(page, first, 760, title="Table 1: Births", note="p: provisional")
    place_table(page, second, y - 36, title="Table 2: Deaths", note="Source: Registry.")
    result = read_bytes(build_pdf([page]))
    assert [s.name for s in result.sheets] == ["page 1", "page 1 table 2"]
    assert result.sheets[0].rows == _padded([["Table 1: Births"], *first, ["p: provisional"]], 4)
    assert result.sheets[1].rows == _padded([["Table 2: Deaths"], *second, ["Source: Registry."]], 6)


def test_fixed_width_layout_with_multiword_labels():
    rows = table_rows(20, 8, seed=3)
    assert any(" " in row[0] for row in rows[1:])  # "North East 1": single spaces stay inside the cell
    result = read_bytes(build_pdf([fixed_width_page(rows, "Table 9: Road accidents", "Source: Police.")]))
    [sheet] = result.sheets
    assert sheet.rows == _padded([["Table 9: Road accidents"], *rows, ["Source: Police."]], 9)


def test_a_two_part_note_does_not_merge_the_columns():
    page = Page()
    rows = table_rows(24, 5, seed=4)
    y = place_table(page, rows, 760, title="Table 5: Income")
    page.text(50, y, "Source: Tax office.")
    page.text(300, y, "(p) provisional figures for the latest year")
    [sheet] = read_bytes(build_pdf([page])).sheets
    assert sheet.rows[1:-1] == rows
    assert sheet.rows[-1][0] == "Source: Tax office."


def test_page_without_text_is_skipped_with_a_reason():
    text_page = Page()
    place_table(text_page, table_rows(3, 2), 700)
    result = read_bytes(build_pdf([Page(image=True), text_page, Page()]))
    assert [s.name for s in result.sheets] == ["page 2"]
    [error] = result.errors
    assert "without text" in error.reason and error.reason.endswith(": 1, 3") and error.format == "pdf"


def test_prose_page_gives_no_sheet_and_no_error():
    page = Page()
    for i, line in enumerate(["This report describes the population of the regions.", "It has no tables."]):
        page.text(50, 700 - 12 * i, line)
    result = read_bytes(build_pdf([page]))
    assert not result.sheets and not result.errors


def _grid_page(rows: list[list[str]]) -> Page:
    """A table drawn with a full grid of ruling lines, text centred-ish in each cell."""
    page = Page()
    left, top, width, height = 60, 700, 90, 20
    for i, row in enumerate(rows):
        for j, cell in enumerate(row):
            page.text(left + width * j + 6, top - height * i - 14, cell)
    bottom, right = top - height * len(rows), left + width * len(rows[0])
    page.rules += [(left, top - height * i, right, top - height * i) for i in range(len(rows) + 1)]
    page.rules += [(left + width * j, top, left + width * j, bottom) for j in range(len(rows[0]) + 1)]
    return page


def test_ruled_grid_goes_through_ruled_extraction(monkeypatch):
    rows = [["Region", "2020", "2021"], ["North East", "1,200", "1,350"], ["South", "800", "950"]]
    calls = []
    original = pdf_reader._ruled_tables
    monkeypatch.setattr(pdf_reader, "_ruled_tables", lambda *a: calls.append(a) or original(*a))
    plain = Page()
    place_table(plain, rows, 700)
    result = read_bytes(build_pdf([_grid_page(rows), plain]))
    assert [s.rows for s in result.sheets] == [rows, rows]
    assert len(calls) == 1  # the page without lines never pays for pdfplumber


def test_page_limit_and_time_budget_are_reasons(monkeypatch):
    data = build_pdf(bench_pages(3))
    result = read_bytes(data, limits=Limits(max_pdf_pages=2))
    assert {s.name.split()[1] for s in result.sheets} == {"1", "2"}
    assert [e.reason for e in result.errors] == ["only the first 2 of 3 pages were read"]
    monkeypatch.setattr(pdf_reader, "MAX_SECONDS", 0.0)
    result = read_bytes(data)
    assert not result.sheets
    assert [e.reason for e in result.errors] == ["time budget of 0 s spent: pages 1-3 not read"]


@pytest.mark.parametrize("data", [b"%PDF-1.4 broken", b"%PDF-1.4\n" + b"\x00" * 500, build_pdf([Page()])[:200]])
def test_damaged_pdf_is_a_reason_not_an_exception(data):
    result = read_bytes(data, mime="application/pdf")
    assert not result.sheets and result.errors and result.errors[0].reason


def test_landscape_table_on_a_rotated_page():
    page = Page(rotate=90)
    rows = table_rows(30, 9, seed=5)
    place_table(page, rows, 580, title="Table 7: Exports by region", note="Source: Customs.", pitch=11)
    [sheet] = read_bytes(build_pdf([page])).sheets
    assert sheet.rows == _padded([["Table 7: Exports by region"], *rows, ["Source: Customs."]], 10)


def test_a_table_continued_on_the_next_page_is_joined_under_one_header():
    rows = table_rows(50, 4, seed=5)
    first, second = Page(), Page()
    place_table(first, rows[:31], 770, title=TITLE, pitch=11)
    place_table(second, [rows[0], *rows[31:]], 770, title="Table 4.1 (continued)", note=NOTE, pitch=11)
    other = Page()
    place_table(other, table_rows(6, 2, seed=6), 770, title="Table 4.2: Deaths", pitch=11)
    result = read_bytes(build_pdf([first, second, other]))
    assert [s.name for s in result.sheets] == ["pages 1-2", "page 3"]
    assert result.sheets[0].rows == _padded([[TITLE], *rows, [NOTE]], 5)
    tables = detect_file(build_pdf([first, second])).tables
    assert len(tables) == 1
    assert {o.row_labels for o in tables[0].observations} == {(r[0],) for r in rows[1:]}


def test_a_table_filling_its_page_goes_on_under_its_repeated_header_without_a_title():
    rows = table_rows(80, 3, seed=7)
    first, second = Page(), Page()
    place_table(first, rows[:64], 770, title=TITLE, pitch=11)  # down to about 60 pt above the page's bottom
    place_table(second, [rows[0], *rows[64:]], 770, note=NOTE, pitch=11)
    result = read_bytes(build_pdf([first, second]))
    assert [s.name for s in result.sheets] == ["pages 1-2"]
    assert result.sheets[0].rows == _padded([[TITLE], *rows, [NOTE]], 4)
    # The same short table on two pages, header and all, is two tables
    short = Page(), Page()
    for page in short:
        place_table(page, rows[:10], 770, title=TITLE, pitch=11)
    assert len(read_bytes(build_pdf(list(short))).sheets) == 2


def test_a_page_over_its_time_bound_is_read_in_part_and_says_so(monkeypatch):
    data = build_pdf(bench_pages(2))
    monkeypatch.setattr(pdf_reader, "PAGE_SECONDS", 0.0)
    monkeypatch.setattr(pdf_reader, "_CHECK_EVERY", 64)
    result = read_bytes(data)
    assert [e.reason for e in result.errors] == ["2 page(s) over the per-page time bound of 0 s, read in part: 1, 2"]


def test_ruled_cells_holding_one_value_per_line_become_rows():
    stacked = [
        ["Region", "2020", "2021"],
        ["North\nSouth\nEast", "1,200\n800\n450", "1,350\n950\n470"],
        ["Total, all\nregions", "2,450", "2,770"],
    ]
    assert pdf_reader.unstack(stacked) == [
        ["Region", "2020", "2021"],
        ["North", "1,200", "1,350"],
        ["South", "800", "950"],
        ["East", "450", "470"],
        ["Total, all regions", "2,450", "2,770"],  # a wrapped label: its lines are one text
    ]
