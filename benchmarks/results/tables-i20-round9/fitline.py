"""fitline.py [HELD]: the line model loco_fit refits without HELD (saus), on the prepared data dumplines.py saved;
prints a hash of its coefficients' bytes, of its rounded JSON, and the CPU seconds (fitline.txt)."""

import hashlib
import json
import pickle
import sys
import time

from sbcrawl_dev.bench import tables_train

with open("/tmp/h20d-data.pkl", "rb") as fh:
    data = pickle.load(fh)  # written by dumplines.py on this machine
train = tables_train.loco_split(data, sys.argv[1] if len(sys.argv) > 1 else "saus")
t = time.process_time()
model = tables_train.fit_lines(train)
coef, rounded = model.coef_.tobytes(), json.dumps(model.to_dict()).encode()
print(hashlib.sha1(coef).hexdigest()[:10], hashlib.sha1(rounded).hexdigest()[:10],
      round(time.process_time() - t, 1))
