"""The README's Python tour runs as written, and every line of it shows a table, not a dump."""

from __future__ import annotations

import ast
import contextlib
import io
import re
from pathlib import Path

import matplotlib
import pandas as pd

from evalmix.core.result import Result, Summary

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 40  # a table a reader takes in at a glance (long tables elide their middle rows)


def _check_shown(value: object, source: str) -> None:
    """What a REPL would print for ``value`` is a short table (or a plain number)."""
    if value is None or isinstance(value, (int, float, str)):
        return
    assert isinstance(value, (Result, Summary, pd.DataFrame)), \
        f"{source!r} shows a {type(value).__name__}, not a result table"
    text = repr(value)
    lines = text.splitlines()
    assert len(lines) <= MAX_LINES, f"{source!r} prints {len(lines)} lines"
    assert "array(" not in text and "DataFrame(" not in text and "=" not in lines[0], \
        f"{source!r} prints a dump of its fields:\n{text[:500]}"
    if isinstance(value, (Result, Summary)):
        columns = value.to_frame().columns
        assert all(str(c) in text for c in columns[:3]), f"{source!r} hides its table"


def test_readme_python_blocks_run(monkeypatch):
    matplotlib.use("Agg")
    monkeypatch.chdir(ROOT)
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks
    shown = 0
    for block in blocks:
        env: dict = {}
        for stmt in ast.parse(block).body:
            source = ast.get_source_segment(block, stmt)
            if isinstance(stmt, ast.Expr):
                printed = io.StringIO()
                with contextlib.redirect_stdout(printed):
                    value = eval(compile(ast.Expression(stmt.value), "README.md", "eval"), env)
                _check_shown(value, source)
                if printed.getvalue():  # print(...) lines: the printed text is short too
                    assert "array(" not in printed.getvalue(), source
                shown += 1
            else:
                exec(compile(ast.Module([stmt], []), "README.md", "exec"), env)
    assert shown >= 10  # the tour shows results, line by line
