"""Issue 21, item 1, from outside: the six hidden-range spreadsheets of the hostile-sheet bench (four XLSX, two
ODS), each read by ``detect_file`` in a child process (``sbcrawl_dev.bench.tables_hostile.measure``): exit code,
seconds, the child's own peak RSS (VmHWM) and the reason recorded. Runs the code on PYTHONPATH."""

import tempfile
from pathlib import Path

from sbcrawl_dev.bench.tables_hostile import measure, write_hidden_ranges

with tempfile.TemporaryDirectory() as tmp:
    for path in write_hidden_ranges(Path(tmp)):
        row = measure(path)
        reasons = "; ".join(row.get("errors", []) + row.get("no_tables", []) + row.get("stderr", []))
        rss = row.get("peak_rss_mb", float("nan"))
        print(f"{row['file']:<28} {row['bytes']:>6d} B  exit {row['exit']}  {row['seconds']:6.2f} s  "
              f"peak RSS {rss:6.1f} MB  tables {row.get('tables', '-')}  reason: {reasons[:160]}")
