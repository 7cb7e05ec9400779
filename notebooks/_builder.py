"""Shared scaffolding of the notebook builders: collect cells, write, optionally execute."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent


class Notebook:
    """Cells added with :meth:`md` / :meth:`code`; :meth:`write` saves (and executes with --execute)."""

    def __init__(self) -> None:
        self.cells: list = []

    def md(self, text: str) -> None:
        self.cells.append(new_markdown_cell(text.strip()))

    def code(self, text: str) -> None:
        self.cells.append(new_code_cell(text.strip()))

    def write(self, name: str, timeout: int = 1200) -> None:
        nb = new_notebook(cells=self.cells, metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
            "language_info": {"name": "python"}})
        if "--execute" in sys.argv:
            from nbclient import NotebookClient

            # the kernel imports this checkout's evalmix, whatever is installed
            os.environ["PYTHONPATH"] = str(HERE.parent / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")
            NotebookClient(nb, timeout=timeout, kernel_name="python3",
                           resources={"metadata": {"path": str(HERE)}}).execute()
        out = HERE / name
        nbformat.write(nb, out)
        print(f"wrote {out}")
