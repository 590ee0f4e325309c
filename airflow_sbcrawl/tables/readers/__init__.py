"""Readers: bytes of any supported format in, sheets of cell strings out. No Airflow import here.

``read_bytes`` dispatches on what the bytes are, not on what the server said they are: crawled MIME
types are often ``application/octet-stream`` or plain wrong, so magic bytes win over the MIME type,
and the MIME type and extension only decide between text formats that have no magic.
"""

from __future__ import annotations

import io
import re
import zipfile
import zlib

from .archive import Budget, read_gzip, read_tar, read_zip
from .base import LimitExceeded, Limits, ReadError, ReadResult, Sheet
from .biff import looks_like_biff
from .delimited import read_delimited
from .jsondata import read_json
from .pdf import read_pdf
from .spreadsheet import read_spreadsheet
from .xmldata import read_xml

__all__ = ["Limits", "ReadError", "ReadResult", "Sheet", "read_bytes", "sniff_format"]

FORMATS = ("csv", "tsv", "xlsx", "xls", "xlsb", "ods", "json", "xml", "pdf", "zip", "gzip", "tar", "html")

_MIME_FORMATS = {
    "text/csv": "csv",
    "application/csv": "csv",
    "text/comma-separated-values": "csv",
    "text/tab-separated-values": "tsv",
    "application/vnd.ms-excel": "xls",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
    "application/vnd.ms-excel.sheet.binary.macroenabled.12": "xlsb",
    "application/vnd.oasis.opendocument.spreadsheet": "ods",
    "application/json": "json",
    "application/x-ndjson": "json",
    "application/xml": "xml",
    "text/xml": "xml",
    "application/vnd.sdmx.genericdata+xml": "xml",
    "application/vnd.sdmx.structurespecificdata+xml": "xml",
    "application/pdf": "pdf",
    "application/zip": "zip",
    "application/x-zip-compressed": "zip",
    "application/gzip": "gzip",
    "application/x-gzip": "gzip",
    "application/x-tar": "tar",
    "text/html": "html",
}

_EXT_FORMATS = {
    "csv": "csv", "tsv": "tsv", "tab": "tsv", "txt": "csv", "xlsx": "xlsx", "xlsm": "xlsx", "xls": "xls",
    "xlsb": "xlsb", "ods": "ods", "json": "json", "jsonl": "json", "ndjson": "json", "xml": "xml",
    "sdmx": "xml", "pdf": "pdf", "zip": "zip", "gz": "gzip", "tgz": "gzip", "tar": "tar",
    "html": "html", "htm": "html",
}  # fmt: skip


_JSON_START = re.compile(rb'^(\[\s*[\[{"\d\]-]|\{\s*["}])')


def _zip_kind(data: bytes) -> str:
    """OOXML and ODF are zip files too; their member names say which."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            names = set(zf.namelist()[:200])
            if "mimetype" in names:
                with zf.open("mimetype") as member:  # its first bytes only: the member may be a bomb
                    mimetype = member.read(100)
                if b"opendocument.spreadsheet" in mimetype:
                    return "ods"
            if any(n.startswith("xl/") for n in names):
                binary = any(n.endswith(".bin") and n.startswith("xl/work") for n in names)
                return "xlsb" if binary else "xlsx"
    except (zipfile.BadZipFile, ValueError, OSError, KeyError, RuntimeError, NotImplementedError, zlib.error):
        pass
    return "zip"


def sniff_format(data: bytes, mime: str | None = None, name: str = "") -> str:
    """The format of the bytes: magic bytes first, then MIME type, then extension, then a text sniff.

    Returns one of ``FORMATS``; text that is none of the others is read as ``csv``. Never raises.
    """
    head = data[:8]
    if head.startswith(b"PK\x03\x04") or head.startswith(b"PK\x05\x06"):
        return _zip_kind(data)
    if head.startswith(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"):
        return "xls"
    if looks_like_biff(data):  # Excel 2-5 saved as a bare record stream, without the OLE2 container
        return "xls"
    if head.startswith(b"%PDF"):
        return "pdf"
    if head.startswith(b"\x1f\x8b"):
        return "gzip"
    if len(data) > 262 and data[257:262] == b"ustar":
        return "tar"
    base = (mime or "").split(";")[0].strip().lower()
    by_mime = _MIME_FORMATS.get(base)
    ext = name.rsplit("/", 1)[-1].rsplit(".", 1)[-1].lower() if "." in name.rsplit("/", 1)[-1] else ""
    by_ext = _EXT_FORMATS.get(ext)
    text = data[:2048].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    looks_markup = text.startswith(b"<")
    looks_html = text.startswith((b"<!doctype html", b"<html")) or b"<html" in text[:512]
    looks_json = text[:1] in (b"{", b"[")
    # A text MIME type or extension is trusted only when the content does not contradict it
    looks_json = looks_json and bool(_JSON_START.match(text))
    for guess in (by_mime, by_ext):
        if guess in ("csv", "tsv") and not looks_markup and not looks_json:
            return guess
        if guess == "json" and looks_json:
            return guess
        if guess == "xml" and looks_markup and not looks_html:
            return guess
    if looks_html:
        return "html"
    if looks_markup:
        return "xml"
    if looks_json:
        return "json"
    return "tsv" if by_ext == "tsv" else "csv"


def _read(data: bytes, name: str, member: str, depth: int, budget: Budget, mime: str | None = None) -> ReadResult:
    fmt = sniff_format(data, mime if depth == 0 else None, name)
    limits = budget.limits
    try:
        if fmt in ("zip", "gzip", "tar"):
            if depth >= limits.max_depth:
                reason = f"archive nested deeper than {limits.max_depth}"
                return ReadResult(errors=[ReadError(member, reason, fmt)])
            reader = {"zip": read_zip, "gzip": read_gzip, "tar": read_tar}[fmt]
            return reader(data, name, member, depth, budget, _read)
        if fmt in ("csv", "tsv"):
            result = read_delimited(data, name.rsplit("/", 1)[-1], limits=limits, tsv=fmt == "tsv")
        elif fmt in ("xlsx", "xls", "xlsb", "ods"):
            result = read_spreadsheet(data, fmt, limits=limits)
        elif fmt == "json":
            result = read_json(data, limits=limits)
        elif fmt == "xml":
            result = read_xml(data, limits=limits)
        elif fmt == "pdf":
            result = read_pdf(data, limits=limits)
        else:
            return ReadResult(errors=[ReadError(member, f"unsupported format {fmt}", fmt)])
    except LimitExceeded as exc:
        return ReadResult(errors=[ReadError(member, str(exc), fmt)])
    except Exception as exc:  # a reader bug must not kill the batch; the reason is kept
        return ReadResult(errors=[ReadError(member, f"{type(exc).__name__}: {exc}", fmt)])
    for sheet in result.sheets:
        sheet.member = member
        sheet.format = sheet.format or fmt
    result.errors = [ReadError(member or e.member, e.reason, e.format or fmt) for e in result.errors]
    return result


def read_bytes(data: bytes, *, mime: str | None = None, name: str = "", limits: Limits | None = None) -> ReadResult:
    """Every sheet in ``data`` (archives opened recursively) and the reasons for whatever was not read.

    ``mime`` and ``name`` help ``sniff_format`` for the file itself (members are sniffed by their own
    names); ``limits`` bound the whole file, archive members included. Never raises for bad input: an
    unsupported format, a limit hit or a reader's failure becomes a ``ReadError`` naming the member.
    """
    return _read(data, name, "", 0, Budget(limits or Limits()), mime)
