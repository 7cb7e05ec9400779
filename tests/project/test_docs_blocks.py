"""Every ```python block of docs/*.md runs, page by page, and prints what the page shows.

The blocks of one page run in order in one namespace, as a reader pasting them into one session
would run them (a later block sees the ``runs`` and ``fit`` of an earlier one), in a temporary
folder that holds links to the checkout's ``data/``, ``docs/`` and ``tests/`` (so the pages' paths
work, and the files a page writes land outside the checkout).  README.md's blocks run in
tests/project/test_readme.py, each on its own, with every line's result checked to be a short table.

**Expected output.**  When a python block is followed, past blank lines only, by Markdown tables
or by a fenced block whose info string is empty, ``text`` or ``latex``, that is what the block
prints: its ``print(...)`` output, then, as a notebook would show it, the value of a last bare
expression (its cells for a table shown as one, its ``repr`` otherwise).  The two are
compared word by word (whitespace and Markdown table padding do not matter); numbers agree to
half a unit in the last digit the page shows, and ``...`` in the page stands for any words.  A
table right after a block that is not its output needs a line of prose between the two.

**Command lines.**  A ```console block shows ``$ evalmix ...`` commands, each followed by what it
prints: each runs (``evalmix.cli.main``) in the same folder and must print that (as above).

**Blocks that do not run.**  A block marked ```python no-run``` (or preceded by an
``<!-- no-run: why -->`` comment) is a sketch that cannot run here (it needs a Dask cluster, or
Inspect AI and a model API): it is compiled, not run, and counted (``test_few_blocks_do_not_run``).
``SLOW`` pages (Bayesian sampling, a whole report, worker processes) run in the second test step
(``-m slow``).
"""

from __future__ import annotations

import ast
import contextlib
import io
import math
import re
import shlex
import warnings
from dataclasses import dataclass
from pathlib import Path

import matplotlib
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
OUTPUT_INFO = {"", "text", "latex"}
# pages whose blocks take longest: the second test step (why, by page)
SLOW: dict[str, str] = {
    "bayes.md": "six MCMC fits",
    "ppi.md": "PPI++ intervals of several simulated studies (kept out of the first step's 2 minutes)",
    "arena.md": "Bradley-Terry with bootstrap rank sets (kept out of the first step's 2 minutes)",
    "scores.md": "an MCMC fit",
    "irt.md": "the 2PL fit of the AI4Math-sized example and an adaptive subset (about 10 s)",
    "report.md": "every table and figure of the example's report",
    "scale.md": "fit_many in worker processes",
    "health.md": "the version-shift example: GLMM refits of the purified matching (about 5 s)",
}
# the most blocks that may be marked no-run over all pages: raise it only with a reason
MAX_NO_RUN = 6


@dataclass(frozen=True)
class Block:
    """One fenced python block: its code, where it is, and the output the page shows after it."""

    page: str
    line: int  # of the first line of code
    code: str
    runs: bool
    expected: str | None  # None: the page shows no output
    table: bool  # the expected output is a Markdown table


def _fences(text: str) -> list[tuple[str, str, int, int]]:
    """``(info string, body, opening line index, closing line index)`` of each fenced block."""
    lines, found, i = text.split("\n"), [], 0
    while i < len(lines):
        opening = re.match(r"^(`{3,})(.*)$", lines[i])
        if opening:
            end = next((j for j in range(i + 1, len(lines)) if lines[j].rstrip() == opening.group(1)),
                       len(lines))
            found.append((opening.group(2).strip(), "\n".join(lines[i + 1:end]) + "\n", i, end))
            i = end + 1
        else:
            i += 1
    return found


def blocks(page: Path) -> list[Block]:
    """The python blocks of one page, in order, each with the output the page shows after it."""
    text = page.read_text(encoding="utf-8")
    lines = text.split("\n")
    fences = _fences(text)
    openings = {start: (info, body) for info, body, start, _ in fences}
    found = []
    for info, body, start, end in fences:
        words = info.split()
        if not words or words[0] != "python":
            continue
        before = next((lines[j].strip() for j in range(start - 1, -1, -1) if lines[j].strip()), "")
        runs = "no-run" not in words[1:] and not re.fullmatch(r"<!-- no-run(:.*)? -->", before)
        after = next((j for j in range(end + 1, len(lines)) if lines[j].strip()), len(lines))
        expected, table = None, False
        if after < len(lines) and lines[after].startswith("|"):
            tables, stop = [], after
            while stop < len(lines) and lines[stop].startswith("|"):  # tables one after another
                top = stop
                stop = next((j for j in range(top, len(lines)) if not lines[j].startswith("|")), len(lines))
                tables.append("\n".join(lines[top:stop]))
                stop = next((j for j in range(stop, len(lines)) if lines[j].strip()), len(lines))
            expected, table = "\n\n".join(tables), True
        elif after in openings and openings[after][0] in OUTPUT_INFO:
            expected = openings[after][1]
        found.append(Block(page.name, start + 2, body, runs, expected, table))
    return found


@dataclass(frozen=True)
class Command:
    """One ``$ evalmix ...`` line of a console block and the output the page shows after it."""

    page: str
    line: int
    argv: list[str]
    runs: bool
    expected: str


def console_commands(page: Path) -> list[Command]:
    """The evalmix commands of a page's console blocks, in order."""
    text = page.read_text(encoding="utf-8")
    lines = text.split("\n")
    found = []
    for info, body, start, _ in _fences(text):
        if info.split()[:1] != ["console"]:
            continue
        before = next((lines[j].strip() for j in range(start - 1, -1, -1) if lines[j].strip()), "")
        runs = not re.fullmatch(r"<!-- no-run(:.*)? -->", before)
        body_lines = body.rstrip("\n").split("\n")
        prompts = [k for k, line in enumerate(body_lines) if line.startswith("$ ")] + [len(body_lines)]
        for k, nxt in zip(prompts, prompts[1:]):
            argv = shlex.split(body_lines[k][2:])
            if argv[:1] == ["evalmix"]:
                found.append(Command(page.name, start + 2 + k, argv[1:], runs,
                                     "\n".join(body_lines[k + 1:nxt])))
    return found


def _words(text: str) -> list[str]:
    """The words of printed text as Markdown renders it: table rules, padding and the backslashes
    of escaped punctuation (``\\[``) left out."""
    kept = [line for line in text.splitlines() if not re.fullmatch(r"\s*\|?[\s:|-]*-[\s:|-]*\|?\s*", line)]
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", " ".join(kept).replace("\\|", "\x00")
                  ).replace("|", " ").replace("\x00", "|").split()


NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?", re.I)


def _same_word(shown: str, printed: str) -> bool:
    if shown == printed:
        return True
    a, b = NUMBER.fullmatch(shown), NUMBER.fullmatch(printed)
    if not (a and b) or a.group(2) or b.group(2):
        return False
    decimals = len(a.group(1).split(".")[1]) if "." in a.group(1) else 0
    return math.isclose(float(shown), float(printed), rel_tol=0, abs_tol=0.5001 * 10.0 ** -decimals)


def _matches(shown: list[str], printed: list[str]) -> bool:
    """``printed`` is ``shown``, word by word, where a ``...`` of ``shown`` stands for any words."""
    if not shown:
        return not printed
    if shown[0] == "...":
        return any(_matches(shown[1:], printed[k:]) for k in range(len(printed) + 1))
    return bool(printed) and _same_word(shown[0], printed[0]) and _matches(shown[1:], printed[1:])


def _display(value: object, as_table: bool) -> str:
    """What a notebook shows for the value of a block's last expression."""
    if value is None:
        return ""
    if as_table and isinstance(value, pd.DataFrame):  # its cells, word by word, as a table shows them
        frame = value if isinstance(value.index, pd.RangeIndex) else value.reset_index()
        return "\n".join(" ".join(map(str, row)) for row in [list(frame.columns), *frame.values.tolist()])
    if as_table and callable(getattr(value, "to_markdown", None)):  # a result table
        return str(value.to_markdown())
    return repr(value)


def run_block(block: Block, env: dict) -> str:
    """Run one block in ``env``; return what it prints, with the display of a last bare expression
    when the page shows output after the block."""
    tree = ast.parse(block.code)
    where = f"{block.page}:{block.line}"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for k, stmt in enumerate(tree.body):
            if k == len(tree.body) - 1 and isinstance(stmt, ast.Expr) and block.expected is not None:
                print(_display(eval(compile(ast.Expression(stmt.value), where, "eval"), env), block.table))
            else:
                exec(compile(ast.Module([stmt], []), where, "exec"), env)
    return out.getvalue()


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("data", "docs", "tests"):
        (tmp_path / name).symlink_to(ROOT / name)
    monkeypatch.chdir(tmp_path)
    matplotlib.use("Agg")
    return tmp_path


def _page_param(page: Path) -> object:
    marks = [pytest.mark.slow] if page.name in SLOW else []
    return pytest.param(page, id=page.name, marks=marks)


@pytest.mark.parametrize("page", [_page_param(p) for p in PAGES
                                  if p.name != "README.md" and any(b.runs for b in blocks(p))])
def test_page_blocks_run_and_print_what_the_page_shows(page: Path, workdir: Path) -> None:
    import matplotlib.pyplot as plt

    env: dict = {"__name__": "__main__"}
    for block in blocks(page):
        if not block.runs:
            compile(block.code, f"{block.page}:{block.line}", "exec")
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a page may show a warning on purpose
            # but it teaches no module path that moved (evalmix.NAME is the public path)
            warnings.filterwarnings("error", r"evalmix\.\S+ moved to ", DeprecationWarning)
            printed = run_block(block, env)
        plt.close("all")
        if block.expected is not None:
            assert _matches(_words(block.expected), _words(printed)), (
                f"{block.page}:{block.line} prints\n{printed}\nbut the page shows\n{block.expected}")


COMMANDS = [c for p in PAGES for c in console_commands(p)]


@pytest.mark.parametrize("command", [c for c in COMMANDS if c.runs], ids=lambda c: f"{c.page}:{c.line}")
def test_console_command_prints_what_the_page_shows(command: Command, workdir: Path) -> None:
    from evalmix.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main(command.argv)
    assert code == 0, f"{command.page}:{command.line}: evalmix {' '.join(command.argv)} exited {code}"
    assert _matches(_words(command.expected), _words(out.getvalue())), (
        f"{command.page}:{command.line} prints\n{out.getvalue()}\nbut the page shows\n{command.expected}")


def test_readme_blocks_are_the_tour_test_readme_runs() -> None:
    """README's blocks run in tests/project/test_readme.py, each on its own (stricter than one namespace),
    with every line's result checked to be a short table; they show no output of their own."""
    readme = blocks(ROOT / "README.md")
    assert readme and all(b.runs and b.expected is None for b in readme)


def test_few_blocks_do_not_run() -> None:
    sketches = [f"{b.page}:{b.line}" for p in PAGES for b in blocks(p) if not b.runs]
    sketches += [f"{c.page}:{c.line}" for c in COMMANDS if not c.runs]
    assert len(sketches) <= MAX_NO_RUN, sketches
    found = [b for p in PAGES for b in blocks(p)]
    assert len(found) >= 60 and sum(b.expected is not None for b in found) >= 18  # the reader finds them


def test_the_comparison_of_printed_and_shown_output() -> None:
    shown = "| model | rating |\n|:--|--:|\n| m06   | 1188.2 |\n| m05 | 12.50 |"
    assert _matches(_words(shown), _words("|model|rating|\n|---|---|\n|m06|1188.24|\n|m05|12.496|"))
    assert not _matches(_words(shown), _words("| model | rating |\n| m06 | 1188.3 |\n| m05 | 12.50 |"))
    assert _matches(_words("estimate 0.544 ... sigma 1.097"), _words("estimate 0.5441 a b c sigma 1.0969"))
    assert not _matches(_words("p_value <0.001"), _words("p_value 0.001"))
    page_blocks = blocks(ROOT / "docs" / "arena.md")
    assert [b.table for b in page_blocks if b.expected is not None][:2] == [True, True]
