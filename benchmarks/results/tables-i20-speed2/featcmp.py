"""featcmp.py A.npz B.npz: sheets whose sheet_features differ (bit for bit, NaN equal to NaN)."""

import sys

import numpy as np

a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
diff = [k for k in a.files if not np.array_equal(a[k], b[k], equal_nan=True)]
print("sheets", len(a.files), len(b.files), "differing", len(diff), diff[:10])
