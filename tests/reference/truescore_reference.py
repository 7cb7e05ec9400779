"""Reference numbers from truescore on its own bundled example data (tests/fixtures/truescore/).

truescore's README prints, for ``examples/01_audit_an_eval.py`` and ``02_compare_two_models.py``,
the PPI++ pass rate ``0.7150 [0.6836, 0.7463]`` and the v4 - v3 difference
``+0.0950 [+0.0505, +0.1394]``.  Those lines were written by truescore 0.5.0; truescore 0.7.4
(same data) prints ``0.7151 [0.6837, 0.7464]`` and ``+0.0942 [+0.0498, +0.1387]`` because it
changed how lambda is tuned (the judge variance over every judged example and an ``n``-divided
covariance, ppi-python's convention).  This script records both releases' numbers, run once in an
environment of each:

    python -m venv /tmp/ts050 && /tmp/ts050/bin/pip install truescore==0.5.0
    python -m venv /tmp/ts074 && /tmp/ts074/bin/pip install truescore==0.7.4
    /tmp/ts050/bin/python tests/reference/truescore_reference.py > /tmp/ts050.json
    /tmp/ts074/bin/python tests/reference/truescore_reference.py > /tmp/ts074.json
    python -c "import json; print(json.dumps({**json.load(open('/tmp/ts050.json')), \
        **json.load(open('/tmp/ts074.json'))}, indent=1))" > tests/reference/truescore_reference.json

The data files are truescore's ``examples/data/support_eval.csv`` and ``support_compare.csv``
(Apache-2.0, Copyright 2026 Saif Punjwani), copied unchanged.
"""

from __future__ import annotations

import csv
import json
from importlib.metadata import version
from pathlib import Path

import numpy as np
import truescore as ts

HERE = Path(__file__).resolve().parent.parent / "fixtures" / "truescore"


def _column(rows: list[dict], name: str) -> np.ndarray:
    return np.array([float(r[name]) if r[name] != "" else np.nan for r in rows])


def main() -> None:
    with open(HERE / "support_eval.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    judge, gold = _column(rows, "judge_passed"), _column(rows, "human_passed")
    idx = np.flatnonzero(~np.isnan(gold))
    est = ts.ppi_estimate(judge, gold[idx], idx)
    with open(HERE / "support_compare.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    g4, g3 = _column(rows, "v4_human_passed"), _column(rows, "v3_human_passed")
    both = np.flatnonzero(~np.isnan(g4) & ~np.isnan(g3))
    j4, j3 = _column(rows, "v4_judge_passed"), _column(rows, "v3_judge_passed")
    cmp = ts.ppi_compare(j4, j3, g4[both], g3[both], both)
    # ppi_compare runs ppi_estimate on the per-example differences; its lambda is not in the result
    lam_diff = ts.ppi_estimate(j4 - j3, g4[both] - g3[both], both).lambda_
    out = {"mean": {"estimate": est.point, "conf_low": est.low, "conf_high": est.high, "lambda": est.lambda_},
           "difference": {"estimate": cmp.difference, "conf_low": cmp.low, "conf_high": cmp.high,
                          "p_value": cmp.p_value, "lambda": lam_diff}}
    print(json.dumps({f"truescore {version('truescore')}": out}, indent=1))


if __name__ == "__main__":
    main()
