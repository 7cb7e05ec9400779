"""Execute every notebook in notebooks/ so they never rot."""

from __future__ import annotations

from pathlib import Path

import os

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


# the quickstart runs in seconds and belongs to every test run; the full-size studies are slow
FAST = {"quickstart"}
CASES = [pytest.param(p, id=p.stem, marks=() if p.stem in FAST else pytest.mark.slow) for p in NOTEBOOKS]


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
