"""exact.py: raw() (heap evaluation) against _walk() (the evaluation of ea55915), bit for bit, on every role and
start input of every sheet of real, saus and fuste, then on 5,000 random rows with NaN and ties (exact.txt)."""

import numpy as np

from airflow_sbcrawl.tables import regions
from airflow_sbcrawl.tables.detect import classify_and_detect
from airflow_sbcrawl.tables.model import Provenance
from sbcrawl_dev.bench import tables_corpora

MODEL = regions.default_region_model()
seen = {"roles": [0, 0], "starts": [0, 0]}


def checked(trees, name):
    original = trees.raw

    def raw(x):
        a = original(x)
        b = trees._walk(np.ascontiguousarray(x, dtype=float))
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes(), name
        seen[name][0] += 1
        seen[name][1] += len(x)
        return a

    return raw


for name in ("roles", "starts"):
    getattr(MODEL, name).raw = checked(getattr(MODEL, name), name)
for corpus in ("real", "saus", "fuste"):
    for s in tables_corpora.load_corpus(corpus):
        classify_and_detect(s["rows"], Provenance("b", "b"))
rng = np.random.default_rng(0)
for name in ("roles", "starts"):
    trees = getattr(MODEL, name)
    del trees.raw
    x = rng.normal(size=(5000, trees.feature.max() + 1)) * 3
    x[rng.random(x.shape) < 0.05] = np.nan
    inner = trees.left != np.arange(trees.left.shape[1])
    features, thresholds = trees.feature[inner], trees.threshold[inner]
    pick = rng.integers(len(features), size=20000)
    x[rng.integers(len(x), size=20000), features[pick]] = thresholds[pick]  # ties: x == threshold goes left
    assert trees.raw(x).tobytes() == trees._walk(x).tobytes(), name
print("bit-identical on every call; calls / rows per model:", seen)
