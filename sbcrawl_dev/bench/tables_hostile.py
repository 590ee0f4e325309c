"""Hostile and huge files through ``detect_file``: seconds, peak memory and the reasons recorded.

    python -m sbcrawl_dev bench tables --hostile [DIR]

Writes the files of issue 9 (items 10-11) and issue 21 (item 1: spreadsheets of a few hundred bytes that
hide a huge range) into DIR (a temporary folder by default) and reads each one in a child process, so
that a file that would abort the process or exhaust memory shows as a failed row rather than ending the
benchmark; the child's peak RSS is its own.
"""

from __future__ import annotations

import io
import json
import random
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

# The child reports its own peak RSS (VmHWM, kB) because wait4's ru_maxrss is not its own: a child started by
# vfork+exec keeps the parent's high-water mark, so a 1 GB test process made every file look 1 GB.
_CHILD = """
import json, sys
from airflow_sbcrawl.tables import detect_file
r = detect_file(sys.argv[1])
hwm = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
rows = {(t.index, o.row) for t in r.tables for o in t.observations}
paths = max((len(o.column_path) for t in r.tables for o in t.observations), default=0)
print(json.dumps({"tables": len(r.tables), "errors": [e.reason for e in r.errors],
                  "no_tables": [n["reason"] for n in r.no_tables], "peak_rss_mb": round(hwm / 1024, 1),
                  "data_lines": len(rows), "header_lines": sum(len(t.header) for t in r.tables),
                  "longest_path": paths}))
"""


def _xlsx_parts(sheet_xml: bytes) -> dict[str, bytes]:
    ns = b'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"'
    rel = b"http://schemas.openxmlformats.org/officeDocument/2006/relationships"
    return {
        "[Content_Types].xml": b'<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/'
        b'content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.'
        b'relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/'
        b'workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
        b'<Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-'
        b'officedocument.spreadsheetml.worksheet+xml"/></Types>',
        "_rels/.rels": b'<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/'
        b'relationships"><Relationship Id="rId1" Type="' + rel + b'/officeDocument" Target="xl/workbook.xml"/>'
        b"</Relationships>",
        "xl/workbook.xml": b'<?xml version="1.0"?><workbook ' + ns + b' xmlns:r="' + rel + b'"><sheets><sheet '
        b'name="Data" sheetId="1" r:id="rId1"/></sheets></workbook>',
        "xl/_rels/workbook.xml.rels": b'<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/'
        b'package/2006/relationships"><Relationship Id="rId1" Type="' + rel + b'/worksheet" '
        b'Target="worksheets/sheet1.xml"/></Relationships>',
        "xl/worksheets/sheet1.xml": sheet_xml,
    }


def _write_xlsx(path: Path, rows: int, cols: int, corners: bool = False) -> None:
    head = b'<?xml version="1.0"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, body in _xlsx_parts(b"").items():
            if name != "xl/worksheets/sheet1.xml":
                zf.writestr(name, body)
        with zf.open("xl/worksheets/sheet1.xml", "w", force_zip64=True) as out:
            out.write(head + b"<sheetData>")
            if corners:  # A1 and XFD1048576: a 1.5 KB file whose used range is 17 billion cells
                out.write(b'<row r="1"><c r="A1" t="inlineStr"><is><t>x</t></is></c></row>')
                out.write(b'<row r="1048576"><c r="XFD1048576" t="inlineStr"><is><t>y</t></is></c></row>')
            else:
                letters = [chr(65 + c) for c in range(cols)]
                for r in range(1, rows + 1):
                    cells = "".join(f'<c r="{col}{r}"><v>{r}</v></c>' for col in letters)
                    out.write(f'<row r="{r}">{cells}</row>'.encode())
            out.write(b"</sheetData></worksheet>")


def _write_xlsx_sheet(path: Path, sheet_data: bytes) -> None:
    head = b'<?xml version="1.0"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, body in _xlsx_parts(head + b"<sheetData>" + sheet_data + b"</sheetData></worksheet>").items():
            zf.writestr(name, body)


_A1 = b'<row r="1"><c r="A1" t="inlineStr"><is><t>x</t></is></c></row>'

#: Issue 21, item 1: the far cell XFD1048576 written so that a scan for ``r="..."`` text misses it
HIDDEN_RANGE_XLSX: dict[str, bytes] = {
    "xlsx-single-quotes.xlsx": b"<row r='1'><c r='A1' t='inlineStr'><is><t>x</t></is></c></row>"
    b"<row r='1048576'><c r='XFD1048576' t='inlineStr'><is><t>y</t></is></c></row>",
    "xlsx-newline-before-r.xlsx": _A1
    + b'<row r="1048576"><c\nr="XFD1048576" t="inlineStr"><is><t>y</t></is></c></row>',
    "xlsx-tab-and-order.xlsx": _A1 + b'<row r="1048576"><c t="inlineStr"\tr="XFD1048576"><is><t>y</t></is></c></row>',
    # cells placed by their order: the last row holds 16,384 of them, so its last one is XFD1048576
    "xlsx-positional-cells.xlsx": _A1 + b'<row r="1048576">' + b"<c><v>1</v></c>" * 16384 + b"</row>",
}


def _ods(path: Path, rows: bytes) -> None:
    """A minimal OpenDocument spreadsheet, one table named Data, the mimetype stored first."""
    mime = b"application/vnd.oasis.opendocument.spreadsheet"
    content = (
        b'<?xml version="1.0" encoding="UTF-8"?><office:document-content '
        b'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
        b'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
        b'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" office:version="1.2"><office:body>'
        b'<office:spreadsheet><table:table table:name="Data">' + rows
        + b"</table:table></office:spreadsheet></office:body></office:document-content>"
    )
    manifest = (
        b'<?xml version="1.0" encoding="UTF-8"?><manifest:manifest '
        b'xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0">'
        b'<manifest:file-entry manifest:full-path="/" manifest:media-type="' + mime + b'"/>'
        b'<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/></manifest:manifest>'
    )
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(zipfile.ZipInfo("mimetype"), mime)  # stored, as the format wants
        zf.writestr("META-INF/manifest.xml", manifest)
        zf.writestr("content.xml", content)


def _ods_repeated(rows: int, cols: int) -> bytes:
    """One row of ``cols`` copies of a number, the row ``rows`` times: a few bytes, rows x cols cells."""
    return (f'<table:table-row table:number-rows-repeated="{rows}"><table:table-cell '
            f'table:number-columns-repeated="{cols}" office:value-type="float" office:value="1">'
            "<text:p>1</text:p></table:table-cell></table:table-row>").encode()


#: Issue 21, item 1: ODS rows and cells repeated (calamine materialises every copy: 3.2 GB and 800 MB)
HIDDEN_RANGE_ODS: dict[str, bytes] = {
    "ods-repeated-100M-cells.ods": _ods_repeated(9_999, 10_000),
    "ods-repeated-25M-cells.ods": _ods_repeated(5_000, 5_000),
}


def write_hidden_ranges(folder: Path) -> list[Path]:
    """The six files of issue 21, item 1: four XLSX and two ODS of under 2 KB each."""
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for name, sheet_data in HIDDEN_RANGE_XLSX.items():
        _write_xlsx_sheet(folder / name, sheet_data)
        files.append(folder / name)
    for name, rows in HIDDEN_RANGE_ODS.items():
        _ods(folder / name, rows)
        files.append(folder / name)
    return files


_UN_SOURCE = '"United Nations Population Division, New York, World Population Prospects: The 2022 Revision."'
_UN_SERIES = ("Population mid-year estimates (millions)", "Population mid-year estimates for males (millions)",
              "Sex ratio (males per 100 females)", "Population density")


def un_long_format(n_areas: int) -> bytes:
    """A UN Statistical Yearbook table in long form, as data.un.org publishes it: a title line, then code,
    area, year, series, value, footnotes and source on every line (16 lines per area)."""
    lines = ['T02,"Population, density and surface area",,,,,',
             "Region/Country/Area,,Year,Series,Value,Footnotes,Source"]
    for a in range(n_areas):
        for year in ("2010", "2015", "2020", "2022"):
            for k, name in enumerate(_UN_SERIES):
                value = f'"{1000 + a * 7 + k:,}.{a % 10}{k}"' if k < 2 else f"{95 + a % 9}.{k}"
                note = "Projected estimate (medium fertility variant)." if year == "2022" else ""
                lines.append(f'{4 + a},"Area {a}, part of region",{year},{name},{value},{note},{_UN_SOURCE}')
    return ("\n".join(lines) + "\n").encode()


_UN_AGES = ("Total", "0 - 4", "5 - 9", "10 - 14", "15 - 19", "20 - 24", "25 - 29", "30 - 34", "35 - 39",
            "40 - 44", "45 - 49", "50 - 54", "55 - 59", "60 - 64", "65 +", "Unknown")
_UN_INDICATORS = (("Population by age and sex", "Number"), ("Deaths by age and sex", "Number"))


def un_demographic_long(n_countries: int) -> bytes:
    """A UNdata export of the Demographic Statistics Database in long form: country, indicator, sex, age,
    unit, year, value and a footnote reference on every line, quoted as data.un.org writes them, and the
    footnotes under the data (about 2.4 MB for 30 countries). Six text columns beside the value: a detector
    that takes text-heavy lines for a header reads most of it as header (issue 20, item 6)."""
    lines = ['"Country or Area","Indicator","Sex","Age","Unit","Year","Value","Value Footnotes"']
    for c in range(n_countries):
        country = f"Country {c:03d}, Republic of" if c % 3 == 0 else f"Country {c:03d}"
        for indicator, unit in _UN_INDICATORS:
            for year in range(2005, 2022, 2):
                for sex in ("Both Sexes", "Male", "Female"):
                    for k, age in enumerate(_UN_AGES):
                        value = (c * 7919 + year * 31 + k * 977 + len(sex) * 13) % 900_000 + 100
                        if indicator.startswith("Deaths"):
                            value //= 90
                        note = str(1 + c % 9) if (year + k) % 5 == 0 else ""
                        lines.append(f'"{country}","{indicator}","{sex}","{age}","{unit}","{year}",'
                                     f'"{value}","{note}"')
    lines += ["", '"footnoteSeqID","Footnote"']
    lines += [f'"{k}","Data refer to the de jure population; estimate {k} revised."' for k in range(1, 10)]
    return ("\n".join(lines) + "\n").encode()


def write_files(folder: Path) -> list[Path]:
    """The hostile files of issue 9, items 10-11, and of issue 21, item 1; and a 2.4 MB long-format CSV
    (issue 20: one such UN file took 3.9 GB and gave header paths of 12,197 entries)."""
    folder.mkdir(parents=True, exist_ok=True)
    files = write_hidden_ranges(folder)
    long_format = folder / "un-long-format-2.4MB.csv"
    long_format.write_bytes(un_long_format(800))
    files.append(long_format)
    demographic = folder / "undata-demographic-2.4MB.csv"
    demographic.write_bytes(un_demographic_long(30))
    files.append(demographic)
    corners = folder / "corners-A1-XFD1048576.xlsx"
    _write_xlsx(corners, 0, 0, corners=True)
    files.append(corners)
    big = folder / "cells-10M.xlsx"
    _write_xlsx(big, 1_000_000, 10)
    files.append(big)
    line = folder / "one-line-50MB.csv"
    line.write_bytes(b"1," * (25 << 20))
    files.append(line)
    noise = folder / "random-bytes.csv"
    noise.write_bytes(random.Random(1).randbytes(5 << 20))
    files.append(noise)
    bomb = folder / "mimetype-1GiB.zip"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf, zf.open("mimetype", "w", force_zip64=True) as out:
        zeros = b"\0" * (1 << 20)
        for _ in range(1024):
            out.write(zeros)
    bomb.write_bytes(buf.getvalue())
    files.append(bomb)
    return files


def measure(path: Path) -> dict:
    """Read one file in a child process: seconds, the child's own peak RSS (VmHWM) and its report."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([sys.executable, "-c", _CHILD, str(path)], stdout=subprocess.PIPE, stderr=err)
        assert proc.stdout is not None
        stdout = proc.stdout.read().decode()
        proc.stdout.close()
        proc.wait()
        err.seek(0)
        stderr = err.read().decode(errors="replace").strip().splitlines()
    row: dict = {"file": path.name, "bytes": path.stat().st_size, "exit": proc.returncode}
    row["seconds"] = round(time.perf_counter() - start, 2)
    if proc.returncode == 0:
        row.update(json.loads(stdout.strip().splitlines()[-1]))
    else:
        row["stderr"] = stderr[-1:]
    return row


def main(folder: str | None = None, out=sys.stdout) -> int:
    with tempfile.TemporaryDirectory(prefix="sbcrawl-hostile-") as tmp:
        files = write_files(Path(folder or tmp))
        print("hostile files through detect_file (one child process each):", file=out)
        failed = 0
        for path in files:
            row = measure(path)
            failed += row["exit"] != 0
            reasons = "; ".join(row.get("errors", []) + row.get("no_tables", []) + row.get("stderr", []))
            print(
                f"  {row['file']:<28} {row['bytes']:>10d} B  exit {row['exit']:>3}  {row['seconds']:6.2f} s  "
                f"peak RSS {row.get('peak_rss_mb', float('nan')):7.1f} MB  tables {row.get('tables', '-')}  "
                f"lines with values {row.get('data_lines', '-')}  header lines {row.get('header_lines', '-')}  "
                f"longest path {row.get('longest_path', '-')}  "
                f"{reasons[:150]}",
                file=out,
            )
    return 1 if failed else 0
