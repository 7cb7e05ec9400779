"""Write tests/reference/separation_runs.csv: separated versions of the example evaluation runs.

Run from the repository root: ``python tests/reference/make_separation_data.py``. The rows are
the first 40 items of models A, B and C of ``data/example_runs.csv`` (1440 rows); each ``y_*``
column is ``correct`` with one pattern of separation imposed, deterministically:

- ``y_nonref``: model-B (a non-reference level) always right;
- ``y_ref``: model-A (the reference level) always right;
- ``y_level0``: model-C always wrong;
- ``y_slice``: model-B always right in language ES only (quasi-complete in one slice of
  ``model * language``);
- ``y_all1``: every response right (the intercept direction; complete separation);
- ``y_none``: ``correct`` unchanged (no separation).

Also ``separation_counts.csv``: ``y_nonref`` pooled to k-of-n counts per model and item.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


def main() -> None:
    d = pd.read_csv(ROOT / "data" / "example_runs.csv")
    items = sorted(d["item"].unique())[:40]
    d = d[d["model"].isin(["model-A", "model-B", "model-C"]) & d["item"].isin(items)]
    d = d.reset_index(drop=True)
    y = d["correct"].to_numpy()
    d["y_none"] = y
    d["y_nonref"] = np.where(d["model"] == "model-B", 1, y)
    d["y_ref"] = np.where(d["model"] == "model-A", 1, y)
    d["y_level0"] = np.where(d["model"] == "model-C", 0, y)
    d["y_slice"] = np.where((d["model"] == "model-B") & (d["language"] == "ES"), 1, y)
    d["y_all1"] = 1
    d = d.drop(columns="correct")
    d.to_csv(HERE / "separation_runs.csv", index=False)
    counts = (d.groupby(["model", "item"], sort=True)["y_nonref"]
              .agg(k="sum", n="size").reset_index())
    counts.to_csv(HERE / "separation_counts.csv", index=False)


if __name__ == "__main__":
    main()
