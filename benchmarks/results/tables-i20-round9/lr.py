"""lr.py N: a line model (LineClassifier.fit_features, as on ea55915: no thread limit) on N random lines of 5
classes; prints N, a hash of its rounded JSON, a hash of its coefficients' bytes, CPU seconds. Run under
OMP_NUM_THREADS=1 and 2 (lr.txt)."""

import hashlib
import json
import sys
import time

import numpy as np

from airflow_sbcrawl.tables.classifier import CLASSES, LineClassifier
from airflow_sbcrawl.tables.features import FEATURE_NAMES

n = int(sys.argv[1])
rng = np.random.default_rng(0)
x = rng.normal(size=(n, len(FEATURE_NAMES)))
w = rng.normal(size=(len(FEATURE_NAMES), 5))
cls = [c for c in CLASSES if c != "empty"][:5]
y = [cls[k] for k in (x @ w + rng.gumbel(size=(n, 5))).argmax(1)]
t = time.process_time()
m = LineClassifier().fit_features(x, y)
rounded = hashlib.sha1(json.dumps(m.to_dict()).encode()).hexdigest()[:10]
print(n, rounded, hashlib.sha1(m.coef_.tobytes()).hexdigest()[:10], round(time.process_time() - t, 2))
