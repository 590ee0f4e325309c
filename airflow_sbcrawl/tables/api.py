"""Entry points: one file to tables (``detect_file``), many files to a directory (``detect_to_dir``)."""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from .detect import DETECTOR_VERSION, detect_tables
from .model import DetectedTable, Provenance
from .output import write_tables
from .readers import Limits, ReadError, read_bytes

# Why a sheet gave no table; the first words of a reason are its kind, counted in summaries
NO_BODY = "no data lines"
NO_VALUES = "no value cells"


@dataclass
class FileResult:
    """What one file gave: its tables, and the reasons for every part that could not be read."""

    provenance: Provenance
    tables: list[DetectedTable] = field(default_factory=list)
    errors: list[ReadError] = field(default_factory=list)
    # Sheets (or parts of sheets) where no table was kept, and why: {"member", "sheet", "reason"}
    no_tables: list[dict] = field(default_factory=list)
    sheets: int = 0
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """True unless the file gave errors and no table: a file read in part still counts as read."""
        return bool(self.tables) or not self.errors


@dataclass(frozen=True)
class InputFile:
    """One file for ``detect_to_dir``: a path or bytes, what the crawler said it is, and where it came from."""

    data: str | Path | bytes
    mime: str | None = None
    source_url: str = ""
    crawl_run: str = ""
    name: str = ""


def detect_file(
    path_or_bytes: str | Path | bytes,
    *,
    mime: str | None = None,
    provenance: Provenance | None = None,
    name: str = "",
    limits: Limits | None = None,
) -> FileResult:
    """Read a file of any supported format and find the tables in all its sheets. Never raises for bad input.

    ``path_or_bytes``: a path to read, or the file's bytes; ``mime`` (the server's Content-Type) and
    ``name`` (for its extension) only help tell text formats apart, magic bytes win. ``provenance`` is
    completed with the file's sha256 and ``DETECTOR_VERSION`` when it lacks them (default: the name and
    the sha256). Returns every table that holds observations; a file that cannot be opened or read, a
    sheet the detector fails on, and a sheet with no table are recorded in ``errors`` / ``no_tables``
    with their reason, so one bad file or sheet never loses the others.
    """
    start = time.perf_counter()
    if isinstance(path_or_bytes, bytes):
        data = path_or_bytes
    else:
        path = Path(path_or_bytes)
        name = name or path.name
        try:
            data = path.read_bytes()
        except OSError as exc:
            prov = provenance or Provenance(source_url=str(path), sha256="")
            return FileResult(prov, errors=[ReadError("", f"cannot open: {exc}")])
    sha = hashlib.sha256(data).hexdigest()
    if provenance is None:
        provenance = Provenance(source_url=name, sha256=sha)
    elif not provenance.sha256:
        provenance = replace(provenance, sha256=sha)
    if not provenance.detector_version:
        provenance = replace(provenance, detector_version=DETECTOR_VERSION)
    if not name and provenance.source_url:
        name = provenance.source_url.split("?")[0].rstrip("/").rsplit("/", 1)[-1]
    read = read_bytes(data, mime=mime, name=name, limits=limits)
    result = FileResult(provenance, errors=list(read.errors), sheets=len(read.sheets))
    for sheet in read.sheets:
        prov = replace(provenance, member=sheet.member, sheet=sheet.name)
        try:
            tables = detect_tables(sheet.rows, prov)
        except Exception as exc:  # one odd sheet must not lose the others
            result.errors.append(ReadError(sheet.member, f"detection failed on {sheet.name!r}: {exc}"))
            continue
        kept = [t for t in tables if t.observations]
        result.tables.extend(kept)
        for t in tables:
            if not t.observations:  # a table of labels only (a contents page, a code list) holds no data
                reason = f"{NO_VALUES}: table {t.cell_range} has only label columns"
                result.no_tables.append({"member": sheet.member, "sheet": sheet.name, "reason": reason})
        if not tables:
            result.no_tables.append({"member": sheet.member, "sheet": sheet.name, "reason": NO_BODY})
    result.seconds = time.perf_counter() - start
    return result


def detect_to_dir(files: Iterable[InputFile | str | Path], out_dir: str | Path, *,
                  on_file: Callable[[dict], None] | None = None) -> dict:
    """Detect tables in every file and write Parquet + index into ``out_dir``; returns a JSON-able summary.

    ``files``: ``InputFile`` items, or plain paths (their path is then their source URL). Tables, the index
    and the errors are appended to ``out_dir`` (layout in ``output``), so batches can share it. The
    summary counts files, files with tables, tables, observations, errors and sheets without a table
    (``no_table_reasons`` by the reason's first words), the detection seconds, and the index's path. Bad
    input is counted, not raised; only a failure to write ``out_dir`` raises (``OSError``). ``on_file`` is
    called with the summary so far after each file (progress lines).
    """
    summary: dict = {"files": 0, "files_with_tables": 0, "tables": 0, "observations": 0, "errors": 0,
                     "no_table_found": 0, "seconds": 0.0}
    no_table_reasons: Counter[str] = Counter()
    index_path = Path(out_dir) / "tables.jsonl"
    for item in files:
        if not isinstance(item, InputFile):
            item = InputFile(data=item, source_url=str(item))
        prov = Provenance(source_url=item.source_url, sha256="", crawl_run=item.crawl_run)
        result = detect_file(item.data, mime=item.mime, provenance=prov, name=item.name)
        errors = [
            {"source_url": result.provenance.source_url, "sha256": result.provenance.sha256, **asdict(e)}
            for e in result.errors
        ]
        index_path = write_tables(result.tables, out_dir, errors)
        summary["files"] += 1
        summary["files_with_tables"] += bool(result.tables)
        summary["tables"] += len(result.tables)
        summary["observations"] += sum(len(t.observations) for t in result.tables)
        summary["errors"] += len(result.errors)
        summary["no_table_found"] += len(result.no_tables)
        no_table_reasons.update(n["reason"].split(":")[0] for n in result.no_tables)
        summary["seconds"] += result.seconds
        if on_file is not None:
            on_file(summary)
    summary["no_table_reasons"] = dict(no_table_reasons)
    summary["index"] = str(index_path)
    summary["seconds"] = round(summary["seconds"], 3)
    return summary
