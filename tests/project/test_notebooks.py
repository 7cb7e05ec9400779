"""Execute every notebook in notebooks/ so they never rot."""

from __future__ import annotations

from pathlib import Path

import os
import re

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


# Executing a notebook starts a kernel and, in each of them, builds and saves a study report or
# samples: the second test step runs them all.  The default step checks that each is committed
# executed and clean (below), and runs the quickstart's calls itself (README's tour, the example
# report in test_reporting.py).
CASES = [pytest.param(p, id=p.stem, marks=pytest.mark.slow) for p in NOTEBOOKS]


@pytest.mark.parametrize("path", CASES)
def test_notebook_runs(path: Path, monkeypatch):
    # the kernel imports this checkout's evalmix, whatever is installed
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=900, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors


# what a committed output may not show: progress bars, the machine's paths, warnings' file names
NOISE = ("\r", "it/s]", "s/it]", "/root/", "/home/", "site-packages", "/work/", "/tmp/", "TqdmWarning")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_committed_outputs_are_clean(path: Path):
    """Every notebook is written by its builder (notebooks/build_NAME.py) and committed executed,
    with outputs a reader can read: no progress bars, no paths of the machine that ran it, no
    error, and no float shown to more than six significant digits."""
    assert (path.parent / f"build_{path.stem}.py").exists()
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(c.get("execution_count") for c in code), "commit the executed notebook"
    for cell in code:
        for out in cell.get("outputs", []):
            assert out.get("output_type") != "error", cell.source
            text = out.get("text", "") + str(out.get("data", {}).get("text/plain", ""))
            bad = [n for n in NOISE if n in text]
            assert not bad, f"{bad} in the output of {cell.source[:60]!r}"
            assert not re.search(r"\d\.\d{7,}", text), f"unrounded numbers in {cell.source[:60]!r}"
            if out.get("name") == "stderr":  # warnings only, one line each (no logs, no tracebacks)
                lines = [ln for ln in text.splitlines() if ln.strip()]
                assert all(re.match(r"\w+(Warning|Error): ", ln) for ln in lines), text[:300]
