"""dumplines.py: the prepared training data of every corpus (tables_train.prepare, augmented) pickled to
/tmp/h20d-data.pkl for fitline.py (a local scratch file, never committed)."""

import pickle

from sbcrawl_dev.bench import tables_corpora, tables_train

everything = {n: tables_corpora.load_corpus(n) for n in tables_corpora.available()}
data = tables_train.prepare(everything, augment=True)
with open("/tmp/h20d-data.pkl", "wb") as fh:
    pickle.dump(data, fh)
