"""fulldump.py OUT.jl.gz: every sheet of real, saus, fuste through classify_and_detect with the shipped models.

Per sheet its line classes and every table in full (range, title, header, line classes, notes, confidence,
column attributes, warnings, observations); floats as repr, so that any change shows.
"""

import gzip
import json
import sys

from airflow_sbcrawl.tables.detect import classify_and_detect
from airflow_sbcrawl.tables.model import Provenance
from sbcrawl_dev.bench import tables_corpora

P = Provenance("b", "b")


def table(t) -> dict:
    return {"range": t.cell_range, "title": t.title, "header": t.header, "classes": t.line_classes, "notes": t.notes,
            "conf": repr(t.confidence), "attrs": {str(a): b for a, b in t.column_attributes.items()},
            "warnings": t.warnings,
            "obs": [[o.row, o.col, o.row_labels, o.column_path, o.raw, repr(o.value), o.status, o.line_class, o.unit]
                    for o in t.observations]}


with gzip.open(sys.argv[1], "wt") as out:
    for corpus in ("real", "saus", "fuste"):
        for k, s in enumerate(tables_corpora.load_corpus(corpus)):
            classes, tables = classify_and_detect(s["rows"], P)
            rec = {"id": f"{corpus}/{k}/{s['id']}", "classes": classes, "tables": [table(t) for t in tables]}
            out.write(json.dumps(rec) + "\n")
