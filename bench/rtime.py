"""The R side of the engine benchmarks: a table written to CSV, an R script run on it by Rscript,
and the script's printed ``<median CPU seconds> <logLik>`` read back (R's start-up and the CSV
read are outside the script's timing)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pandas as pd


def r_fit_time(d: pd.DataFrame, script: str, reps: int, *args: str) -> tuple[float, float] | None:
    """Run ``script`` as ``Rscript fit.R rows.csv reps *args``; None when R is not installed."""
    if shutil.which("Rscript") is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        csv = Path(tmp) / "rows.csv"
        path = Path(tmp) / "fit.R"
        d.to_csv(csv, index=False)
        path.write_text(script)
        out = subprocess.run(["Rscript", str(path), str(csv), str(reps), *args], capture_output=True,
                             text=True, check=True)
    t, ll = out.stdout.split()
    return float(t), float(ll)
