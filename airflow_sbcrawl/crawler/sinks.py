"""Where targets and their manifest rows go. The local directory is the embedded default; the Airflow
layer adds an S3 sink with the same methods."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Protocol


class SinkError(RuntimeError):
    """The sink cannot store what the crawl retrieved (unwritable folder, unreachable bucket…)."""


class Sink(Protocol):
    """What a crawl writes to: each target's content once, under its sha256, and one manifest row per target
    met (see ``manifest.Manifest`` for the row). Rows are only appended; a crawl reads them back when it
    starts, to skip what is stored already. Methods raise ``SinkError`` when the storage fails."""

    def has_object(self, sha256: str) -> bool:
        """Whether content with this sha256 is stored."""
        ...

    def put_object(self, sha256: str, path: Path, mime: str, row: dict) -> None:
        """Store the file at ``path`` under its sha256 (once: a content stored already is not written again);
        the sink owns ``path`` afterwards. ``row`` is the target's manifest row, appended next: a sink whose
        rows wait for ``flush`` makes it durable meanwhile (with the object, or on its own when the content was
        stored already), so that ``recover_rows`` finds it after a failure and the target is not downloaded
        again."""
        ...

    def append_rows(self, rows: list[dict]) -> None:
        """Append manifest rows (JSON-ready dicts); they survive the process once this returns."""
        ...

    def read_rows(self) -> list[dict]:
        """Every manifest row in the sink, oldest first, earlier runs' included (a resume skips what was
        stored, a warm run counts its own rows)."""
        ...

    def flush(self) -> None:
        """Make appended rows durable; called before every checkpoint."""
        ...

    def recover_rows(self, run_id: str) -> int:
        """When a crawl resumes: append the rows of ``run_id``'s objects stored by an interrupted try whose rows
        never became durable, so that their targets are not downloaded again; returns how many."""
        ...

    def describe(self) -> str:
        """Where the sink is, for messages and the summary (a path, an s3:// URL)."""
        ...


class LocalSink:
    """``DIR/objects/<sha256>`` (each content stored once) and ``DIR/manifest.jsonl`` (a row per target)."""

    def __init__(self, out_dir: str | os.PathLike) -> None:
        self.root = Path(out_dir)
        self.objects = self.root / "objects"
        self.manifest = self.root / "manifest.jsonl"
        try:
            self.objects.mkdir(parents=True, exist_ok=True)
            probe = self.root / ".write-test"
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as exc:
            raise SinkError(f"output folder {self.root} is not writable: {exc.strerror or exc}") from exc
        self._fh = None

    def has_object(self, sha256: str) -> bool:
        return (self.objects / sha256).exists()

    def put_object(self, sha256: str, path: Path, mime: str, row: dict) -> None:
        dest = self.objects / sha256
        if dest.exists():
            path.unlink(missing_ok=True)
            return
        os.replace(path, dest)

    def append_rows(self, rows: list[dict]) -> None:
        if self._fh is None:
            self._repair_torn_tail()
            self._fh = self.manifest.open("a", encoding="utf-8")
        for row in rows:
            self._fh.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
        self._fh.flush()  # in the OS's hands: survives a killed process, which is what resume needs

    def _repair_torn_tail(self) -> None:
        """A process killed mid-write leaves a partial last line; drop it (its target will be fetched again)."""
        if not self.manifest.exists():
            return
        data = self.manifest.read_bytes()
        if data and not data.endswith(b"\n"):
            cut = data.rfind(b"\n") + 1
            with self.manifest.open("r+b") as fh:
                fh.truncate(cut)

    def read_rows(self) -> list[dict]:
        self._repair_torn_tail()
        if not self.manifest.exists():
            return []
        rows = []
        with self.manifest.open(encoding="utf-8", errors="replace") as fh:
            for number, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except ValueError as exc:
                    raise SinkError(f"{self.manifest} line {number} is not valid JSON ({exc}): "
                                    "repair or remove that line, then resume") from None
                if not isinstance(row, dict):
                    raise SinkError(f"{self.manifest} line {number} is not a JSON object: "
                                    "repair or remove that line, then resume")
                rows.append(row)
        return rows

    def flush(self) -> None:
        if self._fh is not None:
            self._fh.flush()
            os.fsync(self._fh.fileno())

    def recover_rows(self, run_id: str) -> int:
        return 0  # a row is in the OS's hands right after its object: nothing waits for a flush

    def close(self) -> None:
        """Close the manifest file (appending opens it again)."""
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def describe(self) -> str:
        return str(self.root)
