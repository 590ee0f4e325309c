"""Fitting the table detector's models is a function of the data only: neither the hash seed nor the
number of BLAS/OpenMP threads changes a bit of a refitted model."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

# A line model fitted on 3,001 random lines (more than OpenBLAS's small-product path takes, and shared out
# unevenly on two threads), printed as the hash of its parameters' bytes
_FIT_LINES = """
import hashlib
import numpy as np
from airflow_sbcrawl.tables.features import FEATURE_NAMES
from sbcrawl_dev.bench.tables_train import SheetData, fit_lines

rng = np.random.default_rng(3)
classes = ["metadata", "header", "group", "data", "notes"]
mix = rng.normal(size=(len(FEATURE_NAMES), len(classes)))
data = []
for k, n in enumerate([97] * 30 + [91]):
    feats = rng.normal(size=(n, len(FEATURE_NAMES)))
    labels = [classes[c] for c in (feats @ mix + rng.gumbel(size=(n, len(classes)))).argmax(axis=1)]
    data.append(SheetData("generated", {"id": str(k)}, feats, labels))
model = fit_lines(data)
parts = (model.mean_, model.scale_, model.coef_, model.intercept_)
print(hashlib.sha256(b"".join(np.ascontiguousarray(p).tobytes() for p in parts)).hexdigest())
"""


def _fit_in_subprocess(code: str, hash_seed: str, threads: str) -> str:
    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONHASHSEED": hash_seed, "OMP_NUM_THREADS": threads,
           "OPENBLAS_NUM_THREADS": threads, "PYTHONPATH": os.pathsep.join(
               p for p in (root, os.environ.get("PYTHONPATH", "")) if p)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_line_model_refit_has_the_same_bits_whatever_the_hash_seed_and_thread_count():
    one = _fit_in_subprocess(_FIT_LINES, "1", "1")
    two = _fit_in_subprocess(_FIT_LINES, "2", "2")
    assert len(one) == 64
    assert one == two
