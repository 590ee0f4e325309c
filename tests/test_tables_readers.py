"""Readers: one small file per format, dispatch on lying MIME types, and archive limits."""

import gzip
import io
import json
import struct
import tarfile
import zipfile

import pytest

from airflow_sbcrawl.tables.readers import Limits, read_bytes, sniff_format

ROWS = [["Region", "2020", "2021"], ["North", "1,200", "1,350"], ["South", "800", ".."]]


def _csv(rows, delim=","):
    return "\n".join(delim.join(r if delim != "," else [f'"{c}"' if "," in c else c for c in r]) for r in rows)


def test_csv_dialect_and_encoding():
    data = ("Tabelle 1: Einwohner\n" + _csv([["Gemeinde", "2020", "2021"], ["Köln", "1,5", "2,5"]], ";")).encode(
        "cp1252"
    )
    result = read_bytes(data, mime="application/octet-stream", name="x.csv")
    assert not result.errors
    (sheet,) = result.sheets
    assert sheet.rows[2] == ["Köln", "1,5", "2,5"]
    assert sheet.rows[0][0] == "Tabelle 1: Einwohner"


def test_tsv_and_quoted_csv():
    tsv = read_bytes(_csv(ROWS, "\t").encode(), mime="text/tab-separated-values")
    assert tsv.sheets[0].rows == ROWS
    quoted = read_bytes(_csv(ROWS).encode(), mime="text/csv")
    assert quoted.sheets[0].rows == ROWS


def test_xlsx_and_ods_via_calamine(tmp_path):
    import openpyxl

    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Pop"
    for r in [["Table 1. Population"], [], ["Region", 2020, 2021], ["North", 1200, 1350.5]]:
        ws.append(r)
    buf = io.BytesIO()
    wb.save(buf)
    result = read_bytes(buf.getvalue(), mime="application/octet-stream")
    assert [s.name for s in result.sheets] == ["Pop"]
    assert result.sheets[0].format == "xlsx"
    assert result.sheets[0].rows[2:] == [["Region", "2020", "2021"], ["North", "1200", "1350.5"]]

    import odf.opendocument as odf
    from odf.table import Table, TableCell, TableRow
    from odf.text import P

    doc = odf.OpenDocumentSpreadsheet()
    table = Table(name="Sheet A")
    for row in [["Region", "2020"], ["North", "5"]]:
        tr = TableRow()
        for cell in row:
            tc = TableCell(valuetype="string")
            tc.addElement(P(text=cell))
            tr.addElement(tc)
        table.addElement(tr)
    doc.spreadsheet.addElement(table)
    path = tmp_path / "t.ods"
    doc.save(str(path))
    result = read_bytes(path.read_bytes(), mime="application/zip")
    assert result.sheets[0].format == "ods"
    assert result.sheets[0].rows == [["Region", "2020"], ["North", "5"]]


def test_json_records_and_nested():
    doc = {"meta": {"title": "t"}, "data": [{"geo": "DE", "v": 1, "obs": [{"y": 2020, "x": 1.5}]}, {"geo": "FR"}]}
    result = read_bytes(json.dumps(doc).encode(), mime="text/plain")
    names = [s.name for s in result.sheets]
    assert names == ["data", "data.obs[]"]
    assert result.sheets[0].rows == [["geo", "v"], ["DE", "1"], ["FR", ""]]
    assert result.sheets[1].rows == [["y", "x"], ["2020", "1.5"]]


SDMX_GENERIC = b"""<?xml version="1.0"?>
<message:GenericData xmlns:message="http://www.sdmx.org/resources/sdmxml/schemas/v2_1/message"
  xmlns:generic="http://www.sdmx.org/resources/sdmxml/schemas/v2_1/data/generic">
 <message:DataSet>
  <generic:Series>
   <generic:SeriesKey><generic:Value id="GEO" value="DE"/><generic:Value id="FREQ" value="A"/></generic:SeriesKey>
   <generic:Obs><generic:ObsDimension value="2020"/><generic:ObsValue value="1.5"/></generic:Obs>
   <generic:Obs><generic:ObsDimension value="2021"/><generic:ObsValue value="1.7"/>
     <generic:Attributes><generic:Value id="OBS_STATUS" value="p"/></generic:Attributes></generic:Obs>
  </generic:Series>
 </message:DataSet>
</message:GenericData>"""

SDMX_SS = b"""<?xml version="1.0"?>
<message:StructureSpecificData xmlns:message="http://www.sdmx.org/resources/sdmxml/schemas/v2_1/message">
 <message:DataSet><Series GEO="FR" FREQ="A"><Obs TIME_PERIOD="2020" OBS_VALUE="3"/></Series></message:DataSet>
</message:StructureSpecificData>"""


def test_sdmx_generic_and_structure_specific():
    generic = read_bytes(SDMX_GENERIC, mime="application/octet-stream")
    assert generic.sheets[0].format == "sdmx-generic"
    assert generic.sheets[0].rows == [
        ["GEO", "FREQ", "TIME_PERIOD", "OBS_STATUS", "OBS_VALUE"],
        ["DE", "A", "2020", "", "1.5"],
        ["DE", "A", "2021", "p", "1.7"],
    ]
    ss = read_bytes(SDMX_SS, mime="text/html")  # a lying MIME type
    assert ss.sheets[0].rows == [["GEO", "FREQ", "TIME_PERIOD", "OBS_VALUE"], ["FR", "A", "2020", "3"]]


def test_plain_xml_records_and_no_entity_expansion():
    xml = b"""<?xml version="1.0"?><!DOCTYPE r [<!ENTITY e "boom">]>
    <r><row><name>a</name><n>1</n></row><row><name>b&e;</name><n>2</n></row></r>"""
    result = read_bytes(xml)
    assert result.sheets[0].rows[0] == ["name", "n"]
    assert "boom" not in json.dumps(result.sheets[0].rows)


def _pdf(lines: list[tuple[float, float, str]]) -> bytes:
    """A one-page PDF with text at the given positions (Helvetica 10pt), written by hand."""
    content = "BT /F1 10 Tf " + " ".join(f"1 0 0 1 {x} {y} Tm ({t}) Tj" for x, y, t in lines) + " ET"
    objs = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        "/Resources << /Font << /F1 5 0 R >> >> >>",
        f"<< /Length {len(content)} >>\nstream\n{content}\nendstream",
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = b"%PDF-1.4\n"
    offsets = []
    for i, obj in enumerate(objs, start=1):
        offsets.append(len(out))
        out += f"{i} 0 obj\n{obj}\nendobj\n".encode()
    xref = len(out)
    out += f"xref\n0 {len(objs) + 1}\n0000000000 65535 f \n".encode()
    out += "".join(f"{o:010d} 00000 n \n" for o in offsets).encode()
    out += f"trailer\n<< /Size {len(objs) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return out


def make_pdf_table() -> bytes:
    rows = [["Region", "2020", "2021"], ["North", "1200", "1350"], ["South", "800", "950"], ["West", "70", "75"]]
    return _pdf([(72 + 120 * j, 700 - 16 * i, cell) for i, row in enumerate(rows) for j, cell in enumerate(row)])


def test_pdf_text_table():
    result = read_bytes(make_pdf_table(), mime="application/octet-stream")
    assert not result.errors
    sheet = result.sheets[0]
    assert sheet.name == "page 1"
    flat = [[c for c in r if c] for r in sheet.rows]
    assert ["North", "1200", "1350"] in flat
    assert ["Region", "2020", "2021"] in flat


def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def test_nested_zip_and_gzip():
    inner = _zip({"b.csv": _csv(ROWS).encode()})
    outer = _zip(
        {"a/inner.zip": inner, "c.csv.gz": gzip.compress(_csv(ROWS, ";").encode()), "bad.xlsx": b"PK\x03\x04junk"}
    )
    result = read_bytes(outer, mime="application/octet-stream", name="outer.zip")
    members = sorted(s.member for s in result.sheets)
    assert members == ["a/inner.zip/b.csv", "c.csv.gz/c.csv"]
    assert all(s.rows == ROWS for s in result.sheets)
    # an unreadable member is an error with a reason, and does not stop its siblings
    assert [e.member for e in result.errors] == ["bad.xlsx"]


def _tar(members: dict[str, bytes], mode: str = "w") -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode) as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_tar_and_tgz_members_are_read_by_their_own_names():
    members = {"data/t1.csv": _csv(ROWS).encode(), "data/t2.tsv": _csv(ROWS, "\t").encode()}
    for data, name, prefix in ((_tar(members), "stats.tar", ""), (_tar(members, "w:gz"), "stats.tgz", "stats.tar/")):
        result = read_bytes(data, mime="application/octet-stream", name=name)
        assert not result.errors, result.errors
        by_member = {s.member: s for s in result.sheets}
        assert set(by_member) == {f"{prefix}data/t1.csv", f"{prefix}data/t2.tsv"}
        assert all(s.rows == ROWS for s in result.sheets)
        assert by_member[f"{prefix}data/t2.tsv"].format == "tsv"  # sniffed by the member's own name


def test_zip_bomb_is_refused_with_a_reason():
    bomb = _zip({"zeros.csv": b"0" * (20 * 1024 * 1024)})
    assert len(bomb) < 100_000
    result = read_bytes(bomb)
    assert not result.sheets
    assert "ratio" in result.errors[0].reason
    gz_bomb = gzip.compress(b"0" * (20 * 1024 * 1024))
    result = read_bytes(gz_bomb, name="zeros.csv.gz")
    assert not result.sheets and "ratio" in result.errors[0].reason


def test_total_size_and_depth_limits():
    data = _zip({"a.csv": _csv(ROWS).encode() * 50, "b.csv": _csv(ROWS).encode() * 50})
    result = read_bytes(data, limits=Limits(max_total_bytes=3000))
    assert any("total uncompressed size" in e.reason for e in result.errors)
    deep = _csv(ROWS).encode()
    for level in range(5):
        deep = _zip({f"level{level}.zip" if level else "t.csv": deep})
    result = read_bytes(deep, limits=Limits(max_depth=3))
    assert not result.sheets
    assert any("nested deeper" in e.reason for e in result.errors)


def test_unreadable_file_is_a_result_not_an_exception():
    result = read_bytes(b"PK\x03\x04 not really a zip", mime="application/zip")
    assert result.errors and not result.sheets
    result = read_bytes(b"%PDF-1.4 broken", mime="application/pdf")
    assert result.errors and result.errors[0].reason


@pytest.mark.parametrize(
    ("data", "mime", "name", "fmt"),
    [
        (b"a,b\n1,2\n", "application/octet-stream", "", "csv"),
        (b'[{"a": 1}]', "text/csv", "x.csv", "json"),
        (b"<html><body>x</body></html>", "text/csv", "x.csv", "html"),
        (b"%PDF-1.4", "text/html", "", "pdf"),
        (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1rest", "application/octet-stream", "", "xls"),
        (b"a\tb\n", None, "x.tsv", "tsv"),
    ],
)
def test_sniff_format(data, mime, name, fmt):
    assert sniff_format(data, mime, name) == fmt


def _record(kind: int, body: bytes) -> bytes:
    return struct.pack("<HH", kind, len(body)) + body


def _biff4_sheet(rows: list[list[object]]) -> bytes:
    """A worksheet as Excel 4 wrote it: LABEL, NUMBER and RK cells, one formula with a string result."""
    out = _record(0x0409, struct.pack("<HHH", 0, 0x0010, 0)) + _record(0x0042, struct.pack("<H", 1252))
    for i, row in enumerate(rows):
        for j, value in enumerate(row):
            if isinstance(value, str):
                text = value.encode("cp1252")
                out += _record(0x0204, struct.pack("<HHHH", i, j, 15, len(text)) + text)
            elif isinstance(value, int):  # an RK integer: the value shifted left twice, bit 1 set
                out += _record(0x027E, struct.pack("<HHHI", i, j, 15, (value << 2) | 2))
            else:
                out += _record(0x0203, struct.pack("<HHHd", i, j, 15, value))
    return out + _record(0x000A, b"")


def test_bare_biff4_and_biff5_streams_are_read():
    rows = [["Région", "2019", "2020"], ["Nord", 1200, 1350.5], ["Sud", 800, 912.25]]
    data = _biff4_sheet(rows)
    assert sniff_format(data, "application/octet-stream", "t.xls") == "xls"
    (sheet,) = read_bytes(data, name="t.xls").sheets
    assert sheet.rows == [["Région", "2019", "2020"], ["Nord", "1200", "1350.5"], ["Sud", "800", "912.25"]]
    # a BIFF5 book saved as a stream: globals naming two sheets, then each sheet; a formula's string result
    globals_ = _record(0x0809, struct.pack("<HH", 0x0500, 0x0005))
    for name in (b"Data", b"Notes"):
        globals_ += _record(0x0085, struct.pack("<IBBB", 0, 0, 0, len(name)) + name)
    globals_ += _record(0x000A, b"")
    formula = struct.pack("<HHH", 1, 1, 15) + b"\x00\x00\x00\x00\x00\x00\xff\xff" + b"\x00" * 6
    notes = (_record(0x0809, struct.pack("<HH", 0x0500, 0x0010)) + _record(0x0006, formula)
             + _record(0x0207, struct.pack("<H", 4) + b"done") + _record(0x000A, b""))
    result = read_bytes(globals_ + _biff4_sheet(rows) + notes, name="book.xls")
    assert [s.name for s in result.sheets] == ["Data", "Notes"] and not result.errors
    assert result.sheets[1].rows == [["", ""], ["", "done"]]


def test_bytes_that_are_no_excel_stream_are_refused_with_one_line():
    result = read_bytes(b"\x09\x04\x06\x00\x00\x00\x99\x99\x00\x00" + b"\x00" * 40, name="t.xls")
    (err,) = result.errors
    assert "\n" not in err.reason and not result.sheets
