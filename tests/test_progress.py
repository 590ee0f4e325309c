"""Long work says where it is: ``ProgressLines`` writes a line every interval while a block runs and one when
it ends; ``sbcrawl tables detect`` and ``sbcrawl lake load`` (and their operators) use it."""

from __future__ import annotations

import threading

import pytest

from airflow_sbcrawl import progress as progress_module
from airflow_sbcrawl.cli import main
from airflow_sbcrawl.progress import ProgressLines

CSV = "Region,2020,2021\nNorth,1.5,2.5\nSouth,3.5,4.5\nEast,5.5,6.5\nWest,7.5,8.5\n"


def test_a_line_while_the_work_runs_and_one_at_its_end():
    lines: list[str] = []
    ticked = threading.Event()

    def emit(line: str) -> None:
        lines.append(line)
        if "3/10 files" in line:
            ticked.set()

    with ProgressLines("job", emit, every_s=0.01) as progress:
        # (a line may come before the status is set: "job: starting (0 s)" on a loaded machine)
        progress.status = "3/10 files"
        assert ticked.wait(60)  # the block waits for a periodic line, not for a time
        progress.status = "10/10 files"
    assert any(line.startswith("job: 3/10 files (") for line in lines)
    assert all(line.endswith(" s)") for line in lines[:-1])
    assert lines[-1].startswith("job: 10/10 files, ") and lines[-1].endswith(" s in all")


def test_short_work_prints_nothing_and_a_failure_says_stopped():
    lines: list[str] = []
    with ProgressLines("quick", lines.append, every_s=3600):
        pass
    assert lines == []
    with pytest.raises(RuntimeError), ProgressLines("broken", lines.append, every_s=0) as progress:
        progress.status = "2/5 files"
        raise RuntimeError("boom")
    assert lines[-1].startswith("broken: 2/5 files, stopped after ")


def test_tables_detect_reports_its_progress(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(progress_module, "EVERY_S", 0.0)  # every run counts as long
    src = tmp_path / "in"
    src.mkdir()
    for name in ("a", "b", "c"):
        (src / f"{name}.csv").write_text(CSV.replace("Region", f"Region {name}"))
    assert main(["tables", "detect", str(src), "--out", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[-1].startswith("sbcrawl tables detect: 3/3 files, ") and err[-1].endswith(" s in all")
