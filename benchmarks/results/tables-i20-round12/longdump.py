"""longdump.py OUT: every field of the tables ``detect_file`` finds in the two 2.4 MB long-format CSVs
(written by longcsv.py in this folder), as JSON lines, for comparing two trees (``cmp``)."""

import gzip
import json
import pathlib
import sys

from airflow_sbcrawl.tables.api import detect_file
from airflow_sbcrawl.tables.model import Provenance

with gzip.open(sys.argv[1], "wt") as out:
    for name in ("un-long-format-2.4MB.csv", "undata-demographic-2.4MB.csv"):
        result = detect_file(pathlib.Path("/tmp/h20g/longcsv") / name, provenance=Provenance("b", "b"))
        for t in result.tables:
            rec = {"file": name, "range": t.cell_range, "title": t.title, "header": t.header,
                   "classes": t.line_classes, "notes": t.notes, "conf": repr(t.confidence),
                   "warnings": t.warnings,
                   "obs": [[o.row, o.col, o.row_labels, o.column_path, o.raw, repr(o.value), o.status, o.line_class,
                            o.unit] for o in t.observations]}
            out.write(json.dumps(rec) + "\n")
        out.write(json.dumps({"file": name, "errors": [str(e) for e in result.errors],
                              "no_tables": [str(e) for e in result.no_tables]}) + "\n")
