# score_loco.py HELD_DIR CORPUS...: the held-out learned detector per corpus (no timing), detector on PYTHONPATH
import sys, json
from sbcrawl_dev.bench import tables_corpora, tables_regions as TR
held = TR.held_out_models(sys.argv[1], sys.argv[2:])
res = {}
for name in sys.argv[2:]:
    line, reg = held[name]
    s = TR.score(tables_corpora.load_corpus(name), TR.detector(line, reg)).scores()
    print(TR.format_row(f"{name} loco", s), flush=True)
    res[name] = s
print(json.dumps(res))
