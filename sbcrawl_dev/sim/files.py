"""Target file bodies: a small statistics table and its encodings (CSV, XLSX, ODS, PDF, ZIP, JSON, SDMX...).

Everything is built by hand with the standard library so that the simulator has no dependency, yet the
spreadsheets and PDFs are valid enough for real readers (openpyxl, calamine, pdfplumber) to open them:
the table-detection layer is tested end to end on these bytes.
"""

from __future__ import annotations

import io
import json
import struct
import zipfile
import zlib
from dataclasses import dataclass
from xml.sax.saxutils import escape

from airflow_sbcrawl.tables.model import column_letter
from sbcrawl_dev.sim import seeded
from sbcrawl_dev.sim.xls import biff8_workbook, compound_file

# Served MIME type of each format (the octet-stream variant is decided per resource, not per format).
MIME = {
    "csv": "text/csv",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "xls": "application/vnd.ms-excel",
    "ods": "application/vnd.oasis.opendocument.spreadsheet",
    "pdf": "application/pdf",
    "zip": "application/zip",
    "json": "application/json",
    "sdmx": "application/xml",
}

# The paper's target MIME list (appendix A.2): what makes a response a target in the ground truth.
_TARGET_MIMES_TEXT = """application/csv application/json application/msword application/octet-stream application/pdf
    application/rdf+xml application/rss+xml application/vnd.ms-excel
    application/vnd.ms-excel.sheet.macroenabled.12 application/vnd.oasis.opendocument.presentation
    application/vnd.oasis.opendocument.spreadsheet application/vnd.oasis.opendocument.text
    application/vnd.openxmlformats-officedocument.presentationml.presentation
    application/vnd.openxmlformats-officedocument.spreadsheetml.sheet
    application/vnd.openxmlformats-officedocument.wordprocessingml.document
    application/vnd.openxmlformats-officedocument.wordprocessingml.template application/vnd.rar
    application/x-7z-compressed application/x-csv application/x-gtar application/x-gzip application/xml
    application/x-pdf application/x-rar-compressed application/x-tar application/x-yaml
    application/x-zip-compressed application/yaml application/zip application/zip-compressed
    text/comma-separated-values text/csv text/json text/plain text/x-comma-separated-values text/x-csv
    text/x-yaml text/yaml"""
TARGET_MIMES = frozenset(_TARGET_MIMES_TEXT.split()
)

_MEASURES = (
    ("Resident population", "thousands"),
    ("Births", "number"),
    ("Unemployment rate", "per mille"),
    ("Average monthly wage", "EUR"),
    ("Dwellings completed", "number"),
    ("Hospital beds", "number"),
    ("Pupils enrolled", "number"),
    ("Greenhouse gas emissions", "kt CO2 eq."),
    ("Exports of goods", "EUR million"),
    ("Consumer price index", "2015=1000"),
    ("Road traffic accidents", "number"),
    ("Tourist overnight stays", "thousands"),
)
_DIMENSIONS = (
    ("Region", ("North", "North-East", "East", "South-East", "South", "South-West", "West", "North-West",
                "Capital", "Islands", "Central", "Lakes", "Highlands", "Coast", "Valley", "Plains")),
    ("Age group", ("0-4", "5-9", "10-14", "15-19", "20-24", "25-29", "30-34", "35-39", "40-44", "45-49",
                   "50-54", "55-59", "60-64", "65-69", "70-74", "75+")),
    ("Industry", ("Agriculture", "Mining", "Manufacturing", "Energy", "Water", "Construction", "Trade",
                  "Transport", "Hospitality", "ICT", "Finance", "Real estate", "Professional services",
                  "Administration", "Education", "Health")),
)
_BREAKDOWN = ("All", "Men", "Women", "Urban", "Rural")
_FIRST_YEAR = (2005, 2008, 2010, 2012)


@dataclass(frozen=True)
class Table:
    """A statistics table as published: title, header, labelled rows of integers, totals, footnote."""

    code: str
    title: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, tuple[int, ...]], ...]
    footnote: str

    @property
    def totals(self) -> tuple[int, ...]:
        return tuple(sum(col) for col in zip(*(v for _, v in self.rows), strict=True))

    def value(self, row_label: str, column: str) -> int:
        """The number at ``row_label`` × ``column`` (``"Total"`` is the totals row)."""
        col = self.header.index(column) - 1
        if row_label == "Total":
            return self.totals[col]
        return dict(self.rows)[row_label][col]

    def lines(self) -> list[list[str]]:
        """Title, header, data rows, totals and footnote as rows of cells (the CSV/XLSX/PDF layout)."""
        out = [[self.title], list(self.header)]
        out += [[label, *map(str, values)] for label, values in self.rows]
        out.append(["Total", *map(str, self.totals)])
        out.append([self.footnote])
        return out


def make_table(seed: int, key: object, rows: tuple[int, int], code: str) -> Table:
    """The deterministic table of one resource (``key`` identifies it within the site)."""
    measure, unit = seeded.pick(_MEASURES, seed, key, "measure")
    dim_name, first_labels = seeded.pick(_DIMENSIONS, seed, key, "dim")
    labels = [f"{a} - {b}" if b != "All" else a for a in first_labels for b in _BREAKDOWN]
    n_rows = min(len(labels), seeded.randint(rows[0], rows[1], seed, key, "rows"))
    n_years = seeded.randint(8, 16, seed, key, "years")
    first = seeded.pick(_FIRST_YEAR, seed, key, "year0")
    years = tuple(str(first + i) for i in range(n_years))
    base = seeded.randint(50, 90000, seed, key, "base")
    body = []
    for i in range(n_rows):
        level = base * (40 + seeded.randint(0, 120, seed, key, "lvl", i)) // 100
        values = tuple(
            max(0, level + level * (seeded.randint(0, 30, seed, key, i, j) - 12) // 100) for j in range(n_years)
        )
        body.append((labels[i], values))
    title = f"Table {code}: {measure} by {dim_name.lower()} and year ({unit})"
    footnote = f"Source: National Statistics Office, table {code}. Figures for {years[-1]} are provisional."
    return Table(code, title, (dim_name, *years), tuple(body), footnote)


def _csv_cell(cell: str) -> str:
    if any(c in cell for c in ',"\n'):
        return '"' + cell.replace('"', '""') + '"'
    return cell


def csv_bytes(table: Table) -> bytes:
    return "".join(",".join(map(_csv_cell, row)) + "\r\n" for row in table.lines()).encode()


def json_bytes(table: Table) -> bytes:
    doc = {
        "code": table.code,
        "title": table.title,
        "columns": list(table.header),
        "data": [[label, *values] for label, values in table.rows],
        "note": table.footnote,
    }
    return json.dumps(doc, indent=1).encode()


def sdmx_bytes(table: Table) -> bytes:
    """A small SDMX-ML generic data message: one series per row label, one observation per year."""
    parts = [
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<message:GenericData xmlns:message="http://www.sdmx.org/resources/sdmxml/schemas/v2_1/message" '
        'xmlns:generic="http://www.sdmx.org/resources/sdmxml/schemas/v2_1/data/generic">\n'
        f"<message:Header><message:ID>{escape(table.code)}</message:ID>"
        "<message:Prepared>2024-01-01T00:00:00</message:Prepared></message:Header>\n"
        f'<message:DataSet structureRef="{escape(table.code)}">\n'
    ]
    for label, values in table.rows:
        parts.append(f'<generic:Series><generic:SeriesKey><generic:Value id="{escape(table.header[0])}" '
                     f'value="{escape(label)}"/></generic:SeriesKey>')
        for year, v in zip(table.header[1:], values, strict=True):
            parts.append(f'<generic:Obs><generic:ObsDimension value="{year}"/>'
                         f'<generic:ObsValue value="{v}"/></generic:Obs>')
        parts.append("</generic:Series>\n")
    parts.append("</message:DataSet>\n</message:GenericData>\n")
    return "".join(parts).encode()


# Fixed timestamp for zip members: same seed, same bytes, whatever the day.
_ZIP_DATE = (2024, 1, 1, 0, 0, 0)


def _zip(members: list[tuple[str, bytes]], stored_first: bool = False) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for i, (name, data) in enumerate(members):
            info = zipfile.ZipInfo(name, _ZIP_DATE)
            stored = stored_first and i == 0
            info.compress_type = zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return buf.getvalue()


def xlsx_bytes(table: Table) -> bytes:
    """A minimal valid Office Open XML workbook: one sheet, inline strings, numbers as numbers."""
    rows_xml = []
    for r, row in enumerate(table.lines(), start=1):
        cells = []
        for c, cell in enumerate(row):
            ref = f"{column_letter(c)}{r}"
            if r > 2 and cell.isdigit():  # header years stay text, like in published sheets
                cells.append(f'<c r="{ref}"><v>{cell}</v></c>')
            else:
                cells.append(f'<c r="{ref}" t="inlineStr"><is><t>{escape(cell)}</t></is></c>')
        rows_xml.append(f'<row r="{r}">{"".join(cells)}</row>')
    sheet = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
        f'<sheetData>{"".join(rows_xml)}</sheetData></worksheet>'
    )
    ns_pkg = "http://schemas.openxmlformats.org/package/2006"
    ns_rel = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
    content_types = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        f'<Types xmlns="{ns_pkg}/content-types">'
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        '<Default Extension="xml" ContentType="application/xml"/>'
        '<Override PartName="/xl/workbook.xml" '
        'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
        '<Override PartName="/xl/worksheets/sheet1.xml" '
        'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>'
        "</Types>"
    )
    root_rels = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        f'<Relationships xmlns="{ns_pkg}/relationships">'
        f'<Relationship Id="rId1" Type="{ns_rel}/officeDocument" Target="xl/workbook.xml"/>'
        "</Relationships>"
    )
    workbook = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        '<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" '
        f'xmlns:r="{ns_rel}"><sheets><sheet name="{escape(table.code[:31])}" sheetId="1" r:id="rId1"/>'
        "</sheets></workbook>"
    )
    wb_rels = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        f'<Relationships xmlns="{ns_pkg}/relationships">'
        f'<Relationship Id="rId1" Type="{ns_rel}/worksheet" Target="worksheets/sheet1.xml"/>'
        "</Relationships>"
    )
    return _zip(
        [
            ("[Content_Types].xml", content_types.encode()),
            ("_rels/.rels", root_rels.encode()),
            ("xl/workbook.xml", workbook.encode()),
            ("xl/_rels/workbook.xml.rels", wb_rels.encode()),
            ("xl/worksheets/sheet1.xml", sheet.encode()),
        ]
    )


def ods_bytes(table: Table) -> bytes:
    """A minimal OpenDocument spreadsheet (mimetype stored first, as the format requires)."""
    mime = MIME["ods"]
    rows_xml = []
    for r, row in enumerate(table.lines()):
        cells = []
        for cell in row:
            if r > 1 and cell.isdigit():
                cells.append(f'<table:table-cell office:value-type="float" office:value="{cell}">'
                             f"<text:p>{cell}</text:p></table:table-cell>")
            else:
                cells.append(f'<table:table-cell office:value-type="string"><text:p>{escape(cell)}</text:p>'
                             "</table:table-cell>")
        rows_xml.append(f'<table:table-row>{"".join(cells)}</table:table-row>')
    content = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
        'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
        'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" office:version="1.2">'
        f'<office:body><office:spreadsheet><table:table table:name="{escape(table.code)}">'
        f'{"".join(rows_xml)}</table:table></office:spreadsheet></office:body></office:document-content>'
    )
    manifest = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" '
        'manifest:version="1.2">'
        f'<manifest:file-entry manifest:full-path="/" manifest:media-type="{mime}"/>'
        '<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/>'
        "</manifest:manifest>"
    )
    return _zip(
        [("mimetype", mime.encode()), ("META-INF/manifest.xml", manifest.encode()),
         ("content.xml", content.encode())],
        stored_first=True,
    )


def xls_bytes(table: Table) -> bytes:
    """A legacy Excel workbook (BIFF8 in an OLE2 compound file): the table's lines, numbers as numbers
    below the header (header years stay text, as in published sheets)."""
    return compound_file(biff8_workbook(table.code[:31], table.lines(), lambda i, cell: i > 1 and cell.isdigit()))


def _pdf_text(s: str) -> str:
    return s.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)").encode("latin-1", "replace").decode(
        "latin-1")


def pdf_bytes(table: Table, max_lines: int = 60) -> bytes:
    """A one-page PDF 1.4 with the table as lines of monospaced text (extractable by pdfplumber)."""
    lines = []
    for row in table.lines()[:max_lines]:
        if len(row) == 1:
            lines.append(row[0])
        else:
            lines.append(row[0].ljust(22) + "".join(c.rjust(10) for c in row[1:]))
    ops = ["BT", "/F1 8 Tf", "10 TL", "36 800 Td"]
    for line in lines:
        ops.append(f"({_pdf_text(line)}) Tj T*")
    ops.append("ET")
    stream = "\n".join(ops).encode("latin-1")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 842] "
        b"/Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>",
        b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Courier >>",
    ]
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for i, obj in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(f"{i} 0 obj\n".encode() + obj + b"\nendobj\n")
    xref = out.tell()
    out.write(f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode())
    for off in offsets:
        out.write(f"{off:010d} 00000 n \n".encode())
    out.write(f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode())
    return out.getvalue()


def zip_bytes(table: Table, csv_name: str) -> bytes:
    """A ZIP archive holding the table as CSV plus a short metadata note, as bulk downloads often do."""
    readme = f"{table.title}\n{table.footnote}\n".encode()
    return _zip([(csv_name, csv_bytes(table)), ("README.txt", readme)])


def encode(fmt: str, table: Table, name: str) -> bytes:
    """The bytes of ``table`` in format ``fmt`` (``name`` is the file's base name, used inside ZIPs)."""
    if fmt == "csv":
        return csv_bytes(table)
    if fmt == "xlsx":
        return xlsx_bytes(table)
    if fmt == "xls":
        return xls_bytes(table)
    if fmt == "ods":
        return ods_bytes(table)
    if fmt == "pdf":
        return pdf_bytes(table)
    if fmt == "zip":
        return zip_bytes(table, name + ".csv")
    if fmt == "json":
        return json_bytes(table)
    if fmt == "sdmx":
        return sdmx_bytes(table)
    raise ValueError(f"unknown format {fmt!r}")


# Tiny but well-formed media bodies: a crawler should stop at the headers, but a careless one gets real bytes.
def _png_1px() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", 1, 1, 8, 6, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\x00\x00\x00\x00\x00")) + chunk(
        b"IEND", b"")


PNG_1PX = _png_1px()


def mp4_bytes(size: int) -> bytes:
    """An ``ftyp`` box followed by padding, ``size`` bytes in all."""
    ftyp = b"\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom"
    return ftyp + b"\x00" * max(0, size - len(ftyp))
