"""diag.py HELD OUT_JSON: fit the models held out from one corpus (tables_train.loco_fit) once, printing a hash
of every training matrix (x, y, weights) and of every fitted model, and writing the models to OUT_JSON; run it
twice under other PYTHONHASHSEED / OMP_NUM_THREADS and diff the lines (diag.txt)."""

import hashlib
import json
import sys

import numpy as np

from airflow_sbcrawl.tables.boosted import BoostedTrees
from airflow_sbcrawl.tables.classifier import LineClassifier, default_classifier
from sbcrawl_dev.bench import tables_corpora, tables_train

log = []


def digest(a) -> str:
    a = np.ascontiguousarray(a)
    return hashlib.sha1(a.tobytes() + str(a.dtype).encode() + str(a.shape).encode()).hexdigest()[:12]


def text_digest(obj) -> str:
    return hashlib.sha1(json.dumps(obj).encode()).hexdigest()[:12]


hgb_fit = tables_train._hgb_fit
line_fit = LineClassifier.fit_features


def hgb(x, y, max_iter, depth):
    model = hgb_fit(x, y, max_iter, depth)
    trees = BoostedTrees.from_sklearn(model).to_dict()
    log.append(("hgb", x.shape, digest(x), digest(np.asarray(y)), text_digest(trees)))
    return model


def lines(self, x, y, weight=None):
    fitted = line_fit(self, x, y, weight)
    log.append(("lines", x.shape, digest(x), digest(np.asarray(y)), digest(weight), digest(self.coef_)))
    return fitted


tables_train._hgb_fit = hgb
LineClassifier.fit_features = lines
everything = {n: tables_corpora.load_corpus(n) for n in tables_corpora.available()}
data = tables_train.prepare(everything, augment=True)
log.append(("data", [d.sheet["id"] for d in data][:3], text_digest([d.sheet["id"] for d in data]),
            digest(np.vstack([d.feats for d in data if len(d.feats)]))))
line, regions = tables_train.loco_fit(data, sys.argv[1], default_classifier(), ("saus",))
with open(sys.argv[2], "w") as fh:
    json.dump({"log": [list(map(str, e)) for e in log], "line": line.to_dict(), "regions": regions.to_dict()}, fh)
for entry in log:
    print(*entry)
