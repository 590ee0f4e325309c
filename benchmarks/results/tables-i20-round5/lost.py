# lost.py HELD_DIR CORPUS OUT.json: per sheet numeric/unique with held-out models, and colliding keys
import sys, json
from collections import Counter
from sbcrawl_dev.bench import tables_corpora, tables_regions as TR
from airflow_sbcrawl.tables.detect import classify_and_detect
name = sys.argv[2]
line, reg = TR.held_out_models(sys.argv[1], [name])[name]
out = {}
tn = tu = 0
for s in tables_corpora.load_corpus(name):
    _, tables = classify_and_detect(s["rows"], TR._PROV, classifier=line, regions=reg)
    recs = []
    for t in tables:
        if not t.observations: continue
        keys = Counter((o.row_labels, o.column_path) for o in t.observations if o.value is not None)
        n = sum(keys.values()); u = sum(keys[k] == 1 for k in keys)
        tn += n; tu += u
        if n - u:
            ex = [list(map(list, k)) + [c] for k, c in keys.most_common(3)]
            recs.append({"range": t.cell_range, "n": n, "u": u, "classes": "".join(c[0] for c in t.line_classes),
                         "header": t.header[:6] if isinstance(t.header, list) else str(t.header)[:300], "ex": ex})
    if recs: out[s["id"]] = recs
print(name, tn, tu, tu / tn)
json.dump(out, open(sys.argv[3], "w"), default=str)
