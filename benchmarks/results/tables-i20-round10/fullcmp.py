"""fullcmp.py A.jl.gz B.jl.gz: sheets whose detection (fulldump.py) differs, field by field (confidence to 1e-9)."""

import gzip
import json
import sys


def load(path: str) -> dict:
    with gzip.open(path, "rt") as f:
        return {r["id"]: r for r in map(json.loads, f)}


a, b = load(sys.argv[1]), load(sys.argv[2])
assert a.keys() == b.keys(), (len(a), len(b))
diff: dict[str, set] = {}
for k in a:
    ra, rb = a[k], b[k]
    if ra["classes"] != rb["classes"]:
        diff.setdefault("classes", set()).add(k)
    if len(ra["tables"]) != len(rb["tables"]):
        diff.setdefault("tables", set()).add(k)
        continue
    for ta, tb in zip(ra["tables"], rb["tables"], strict=True):
        for f in ta:
            same = abs(float(ta[f]) - float(tb[f])) <= 1e-9 if f == "conf" else ta[f] == tb[f]
            if not same:
                diff.setdefault(f, set()).add(k)
n_tables = sum(len(r["tables"]) for r in a.values())
n_obs = sum(len(t["obs"]) for r in a.values() for t in r["tables"])
print("sheets", len(a), "tables", n_tables, "observations", n_obs,
      "differing sheets per field", {f: len(v) for f, v in diff.items()} or "none")
for f, v in diff.items():
    print(f, sorted(v)[:10])
