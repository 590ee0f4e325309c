"""Hostile and huge inputs to the table readers (issue 9, items 10-12): bounded, and every cut recorded."""

import io
import json
import random
import subprocess
import sys
import textwrap
import tracemalloc
import zipfile

from airflow_sbcrawl.tables import InputFile, Limits, detect_file, detect_to_dir, read_bytes, read_tables


def _xlsx(cells: dict[str, object]) -> bytes:
    import openpyxl

    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Data"
    for ref, value in cells.items():
        ws[ref] = value
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()


def test_xlsx_with_a1_and_xfd1048576_is_refused_not_fatal(tmp_path):
    """calamine would allocate the whole used range (500 GB) and abort: run in a child so a regression
    shows as a failed test, not a dead test session."""
    path = tmp_path / "corners.xlsx"
    path.write_bytes(_xlsx({"A1": "x", "XFD1048576": "y"}))
    assert path.stat().st_size < 10_000
    script = textwrap.dedent(
        f"""
        import json
        from airflow_sbcrawl.tables import detect_file
        r = detect_file({str(path)!r})
        print(json.dumps({{"tables": len(r.tables), "errors": [e.reason for e in r.errors]}}))
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["tables"] == 0
    (reason,) = out["errors"]
    assert "'Data'" in reason and "1048576 rows x 16384 columns" in reason and "not read" in reason


def test_xlsx_over_the_cell_limit_is_refused_with_its_reason_and_others_sheets_are_read():
    import openpyxl

    wb = openpyxl.Workbook()
    big = wb.active
    big.title = "Big"
    for r in range(1, 101):
        big.append([f"r{r}", *range(20)])
    small = wb.create_sheet("Small")
    small.append(["Region", "2020"])
    small.append(["North", 5])
    buf = io.BytesIO()
    wb.save(buf)
    result = read_bytes(buf.getvalue(), limits=Limits(max_cells=1000))
    assert [s.name for s in result.sheets] == ["Small"]
    (err,) = result.errors
    assert "'Big'" in err.reason and "more than 1000 cells" in err.reason


def test_zip_member_named_mimetype_is_not_decompressed_whole():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("mimetype", b"\0" * (64 << 20))
        zf.writestr("t.csv", b"a,b\n1,2\n")
    data = buf.getvalue()
    tracemalloc.start()
    try:
        result = read_bytes(data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, f"peak {peak} bytes while reading a 64 MiB mimetype member"
    assert any(e.member == "mimetype" and "ratio" in e.reason for e in result.errors)
    assert [s.member for s in result.sheets] == ["t.csv"]


def test_csv_of_one_huge_line_is_cut_and_the_cut_recorded():
    data = b"h1,h2\n" + b"1," * 400_000 + b"1\n" + b"3,4\n"
    result = read_bytes(data, name="x.csv", limits=Limits(max_line_chars=10_000, max_cols=50))
    (sheet,) = result.sheets
    assert len(sheet.rows) == 3 and max(len(r) for r in sheet.rows) == 50
    assert sheet.rows[2][:2] == ["3", "4"]
    assert any("1 line(s) longer than 10000 characters cut" in e.reason for e in result.errors)


def test_csv_over_the_cell_limit_keeps_the_first_rows_and_says_so():
    data = "\n".join(f"r{i},{i},{i * 2}" for i in range(1000)).encode()
    result = read_bytes(data, name="x.csv", limits=Limits(max_cells=300))
    (sheet,) = result.sheets
    assert len(sheet.rows) == 100
    assert any("rows after 100 not read: more than 300 cells" in e.reason for e in result.errors)


def test_random_bytes_named_csv_are_refused_as_binary():
    data = random.Random(7).randbytes(200_000)
    result = detect_file(data, name="data.csv")
    assert not result.tables
    (err,) = result.errors
    assert "binary content" in err.reason
    # Text in a western 8-bit encoding is not binary
    text = ("Région;Valeur\n" + "Île-de-France;12,5\n" * 50).encode("cp1252")
    assert read_bytes(text, name="x.csv").sheets[0].rows[1] == ["Île-de-France", "12,5"]


def test_zero_observation_tables_are_not_written_and_counted_with_their_reason(tmp_path):
    contents = tmp_path / "contents.csv"
    contents.write_text(
        "Contents\n\nTable,Title\nT1,Population by region\nT2,Households by size\nT3,Income by decile\n"
    )
    data = tmp_path / "data.csv"
    data.write_text("Population by region\n\nRegion,2020,2021\nNorth,1200,1350\nSouth,800,900\nEast,700,650\n")
    result = detect_file(contents)
    assert not result.tables and not result.errors
    (none,) = result.no_tables
    assert none["reason"].startswith(("no value cells", "no data lines"))
    out = tmp_path / "out"
    summary = detect_to_dir([InputFile(contents, source_url="c"), InputFile(data, source_url="d")], out)
    assert summary["tables"] == 1 and summary["no_table_found"] == 1
    assert sum(summary["no_table_reasons"].values()) == 1
    (table,) = read_tables(summary["index"])
    assert table.provenance.source_url == "d" and table.observations
    assert len(list((out / "tables").glob("*.parquet"))) == 1


def test_xlsx_whose_shared_strings_are_a_zip_bomb_is_refused():
    source = zipfile.ZipFile(io.BytesIO(_xlsx({"A1": "Region", "B1": 2020, "A2": "North", "B2": 5})))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as out:
        for info in source.infolist():
            out.writestr(info.filename, source.read(info))
        sst = b'<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" count="1" uniqueCount="1">'
        out.writestr("xl/sharedStrings.xml", sst + b"<si><t>x</t></si><!--" + b" " * (32 << 20) + b"--></sst>")
    result = read_bytes(buf.getvalue())
    assert not result.sheets
    (err,) = result.errors
    assert "xl/sharedStrings.xml" in err.reason and "zip bomb" in err.reason


def test_hostile_bench_reads_each_file_in_a_child_and_reports_its_reasons(tmp_path):
    from sbcrawl_dev.bench import tables_hostile

    corners = tmp_path / "corners.xlsx"
    tables_hostile._write_xlsx(corners, 0, 0, corners=True)
    small = tmp_path / "small.xlsx"
    tables_hostile._write_xlsx(small, 3, 2)
    rows = {p.name: tables_hostile.measure(p) for p in (corners, small)}
    assert rows["corners.xlsx"]["exit"] == 0 and rows["corners.xlsx"]["tables"] == 0
    assert "1048576 rows x 16384 columns" in rows["corners.xlsx"]["errors"][0]
    assert rows["small.xlsx"]["exit"] == 0 and not rows["small.xlsx"]["errors"]
    assert 10 < rows["small.xlsx"]["peak_rss_mb"] < 256


def test_hostile_bench_counts_the_childs_memory_not_the_test_processs(tmp_path):
    """A child started by vfork+exec inherits its parent's high-water mark in wait4's ru_maxrss; CI's test
    process had grown to 1 GB and made a 36 MB read look like 1,038 MB."""
    from sbcrawl_dev.bench import tables_hostile

    ballast = bytearray(400 << 20)
    ballast[::4096] = b"\x01" * len(ballast[::4096])  # touch every page so it counts in this process's RSS
    small = tmp_path / "small.xlsx"
    tables_hostile._write_xlsx(small, 3, 2)
    assert tables_hostile.measure(small)["peak_rss_mb"] < 256
    del ballast


def test_spreadsheets_that_hide_a_huge_range_are_refused_with_a_reason_in_bounded_memory(tmp_path):
    """Issue 21, item 1: four XLSX written so that a scan for r="..." text misses their far cell, and two ODS
    of repeated rows and cells (3.2 GB and 800 MB in calamine): each read in a child process, which exits
    0 with the reason recorded and a peak RSS under 256 MB (36 MB measured)."""
    from sbcrawl_dev.bench import tables_hostile

    files = tables_hostile.write_hidden_ranges(tmp_path)
    assert len(files) == 6 and all(p.stat().st_size < 2500 for p in files)
    for path in files:
        row = tables_hostile.measure(path)
        assert row["exit"] == 0, (path.name, row.get("stderr"))
        assert row["peak_rss_mb"] < 256, (path.name, row["peak_rss_mb"])
        (reason,) = row["errors"]
        assert "'Data'" in reason and "is over the limit of" in reason and "not read" in reason, reason


def _xlsx_sheet(sheet_data: bytes) -> bytes:
    from sbcrawl_dev.bench import tables_hostile

    head = b'<?xml version="1.0"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, body in tables_hostile._xlsx_parts(head + sheet_data + b"</worksheet>").items():
            zf.writestr(name, body)
    return buf.getvalue()


def _cells(row: int, values: list[str]) -> bytes:
    cells = "".join(
        f'<c r="{chr(65 + j)}{row}"><v>{v}</v></c>' if v.isdigit() else
        f'<c r="{chr(65 + j)}{row}" t="inlineStr"><is><t>{v}</t></is></c>'
        for j, v in enumerate(values)
    )
    return f'<row r="{row}">{cells}</row>'.encode()


def test_xlsx_with_a_million_formatted_empty_rows_is_measured_by_its_cells_and_read():
    """A Eurostat export declares 1,048,576 formatted rows: they hold no value, so the sheet is read."""
    body = _cells(1, ["Population on 1 January"]) + _cells(3, ["GEO", "2021", "2022"])
    body += _cells(4, ["Belgium", "11554767", "11617623"]) + _cells(5, ["Bulgaria", "6916548", "6838937"])
    body += b"".join(f'<row r="{r}"><c r="A{r}" s="2"/><c r="T{r}" s="2"/></row>'.encode() for r in range(6, 1048577))
    data = _xlsx_sheet(b'<dimension ref="A1:T1048576"/><sheetData>' + body + b"</sheetData>")
    result = detect_file(data, name="demo_pjan_spreadsheet.xlsx")
    assert not result.errors, result.errors
    (table,) = result.tables
    values = {(o.row_labels, o.column_path): o.value for o in table.observations}
    assert values[(("Bulgaria",), ("2022",))] == 6838937


def test_xlsx_written_with_single_quotes_and_positional_cells_is_read_exactly():
    """The exact (expat) measure reads what the regular-expression one cannot, and lets a small sheet through."""
    body = b"<sheetData><row r='1'><c r='A1' t='inlineStr'><is><t>Region</t></is></c><c t='inlineStr'><is><t>2020"
    body += b"</t></is></c></row><row><c t='inlineStr'><is><t>North</t></is></c><c><v>5</v></c></row></sheetData>"
    (sheet,) = read_bytes(_xlsx_sheet(body)).sheets
    assert sheet.rows == [["Region", "2020"], ["North", "5"]]


def test_ods_repeated_rows_and_cells_are_read_as_copies_and_merges_kept(tmp_path):
    from sbcrawl_dev.bench import tables_hostile

    rows = (
        b'<table:table-row><table:table-cell table:number-columns-spanned="3" office:value-type="string">'
        b"<text:p>Births</text:p></table:table-cell><table:covered-table-cell table:number-columns-repeated="
        b'"2"/></table:table-row><table:table-row><table:table-cell office:value-type="string"><text:p>Region'
        b'</text:p></table:table-cell><table:table-cell office:value-type="string" office:string-value="2020"/>'
        b'<table:table-cell office:value-type="string"><text:p>2021</text:p><office:annotation><text:p>note'
        b'</text:p></office:annotation></table:table-cell></table:table-row>'
        b'<table:table-row table:number-rows-repeated="2"><table:table-cell office:value-type="string"><text:p>'
        b'Same</text:p></table:table-cell><table:table-cell table:number-columns-repeated="2" '
        b'office:value-type="float" office:value="7"><text:p>7</text:p></table:table-cell></table:table-row>'
        b'<table:table-row table:number-rows-repeated="1048570"><table:table-cell '
        b'table:number-columns-repeated="1024"/></table:table-row>'
    )
    tables_hostile._ods(tmp_path / "t.ods", rows)
    (sheet,) = read_bytes((tmp_path / "t.ods").read_bytes(), name="t.ods").sheets
    assert sheet.rows == [["Births", "", ""], ["Region", "2020", "2021"], ["Same", "7", "7"], ["Same", "7", "7"]]
    assert sheet.merged == [((0, 0), (0, 2))]
