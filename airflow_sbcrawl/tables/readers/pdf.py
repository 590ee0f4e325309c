"""PDF text tables through pdfplumber: ruled tables first, else tables found from text alignment."""

from __future__ import annotations

import io

from .base import DEFAULT_LIMITS, Limits, ReadError, ReadResult, Sheet, cell_text, trim

# Statistics PDFs mostly lay tables out with whitespace, not ruling lines.
_TEXT_SETTINGS = {"vertical_strategy": "text", "horizontal_strategy": "text", "text_x_tolerance": 2}


def read_pdf(data: bytes, *, limits: Limits = DEFAULT_LIMITS) -> ReadResult:
    try:
        import pdfplumber
    except ImportError:
        return ReadResult(errors=[ReadError("", "pdfplumber is not installed", "pdf")])
    result = ReadResult()
    try:
        pdf = pdfplumber.open(io.BytesIO(data))
    except Exception as exc:  # pdfminer raises many types for damaged or encrypted files
        return ReadResult(errors=[ReadError("", f"unreadable PDF: {exc}", "pdf")])
    with pdf:
        for number, page in enumerate(pdf.pages[: limits.max_pdf_pages], start=1):
            try:
                tables = page.extract_tables() or page.extract_tables(_TEXT_SETTINGS)
            except Exception as exc:
                result.errors.append(ReadError("", f"page {number}: {exc}", "pdf"))
                continue
            finally:
                page.flush_cache()  # pdfplumber keeps every parsed object otherwise
            for k, table in enumerate(t for t in tables if t):
                rows = trim([[cell_text(c) for c in row] for row in table], limits.max_rows, limits.max_cols)
                if rows:
                    name = f"page {number}" if k == 0 else f"page {number} table {k + 1}"
                    result.sheets.append(Sheet(name=name, rows=rows, format="pdf"))
        if len(pdf.pages) > limits.max_pdf_pages:
            reason = f"only the first {limits.max_pdf_pages} pages were read"
            result.errors.append(ReadError("", reason, "pdf"))
    return result
