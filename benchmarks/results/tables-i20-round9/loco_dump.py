"""loco_dump.py OUT_DIR: `bench tables --regions --loco` (tables_regions.main(loco=True), without timings),
the held-out models it fits also written to OUT_DIR (<corpus>.json, and <corpus>.line.json with the line
model's coefficients in full precision), so that two runs can be diffed model by model."""

import json
import pathlib
import sys

import numpy as np

from sbcrawl_dev.bench import tables_regions

out = pathlib.Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
fit = tables_regions.loco_models


def dumped(corpora):
    models = fit(corpora)
    for name, (line, regions) in models.items():
        (out / f"{name}.json").write_text(json.dumps(regions.to_dict()))
        exact = {k: np.asarray(getattr(line, k)).tolist() for k in ("mean_", "scale_", "coef_", "intercept_")}
        (out / f"{name}.line.json").write_text(json.dumps(exact))  # floats printed round-trip exactly
        arrays = {m: {k: np.asarray(getattr(getattr(regions, m), k)).tolist()
                      for k in ("feature", "threshold", "value", "base")} for m in ("roles", "starts")}
        (out / f"{name}.trees.json").write_text(json.dumps(arrays))  # unrounded
    return models


tables_regions.loco_models = dumped
with open(out / "loco.txt", "w") as fh:
    tables_regions.main(loco=True, out=fh, repeats=0)
