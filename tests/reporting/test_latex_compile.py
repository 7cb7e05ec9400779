"""Every LaTeX table evalmix writes compiles with pdflatex (slow: the second test step).

The report's ``tables/*.tex`` on the bundled example and on a copy whose model and slice names are
hostile (``$x$``, ``<script>``, blank lines, every LaTeX special character, Greek, accents, emoji),
and every ``to_latex()`` of README's Python tour, are each wrapped in a minimal article with booktabs
and compiled with ``pdflatex -halt-on-error``.  Without pdflatex the tests are skipped, except in CI
(``CI=true``), where a missing pdflatex fails them.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import unicodedata
import warnings
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import evalmix
from evalmix.core.result import Result

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "data" / "example_runs.csv"

pytestmark = pytest.mark.slow

# the preamble to_latex documents: nothing but booktabs (pdflatex reads UTF-8 by default)
PREAMBLE = r"""\documentclass{article}
\usepackage{booktabs}
\begin{document}
"""

HOSTILE = {"model-A": "$x$", "model-B": "<script>alert(1)</script>", "model-C": "a\nb|c",
           "model-D": "a\n\nb %#_&~^\\{}", "model-E": "χ² Δ ≤ × café 😀"}


def _tool(name: str, packages: str) -> str:
    """The path of a command-line tool; skipped without it, except in CI, where it must be there."""
    exe = shutil.which(name)
    if exe is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{name} is missing: CI installs {packages}")
        pytest.skip(f"{name} is not installed (apt-get install {packages})")
    return exe


def _pdflatex() -> str:
    return _tool("pdflatex", "texlive-latex-recommended texlive-latex-extra")


def compile_tables(snippets: dict[str, str], folder: Path) -> None:
    """Compile all snippets as one document (one pdflatex run); on failure, find the culprit."""
    exe = _pdflatex()
    folder.mkdir(parents=True, exist_ok=True)

    def run(names: list[str]) -> subprocess.CompletedProcess[str]:
        body = "\n\\clearpage\n".join(snippets[n] for n in names)
        tex = folder / "doc.tex"
        tex.write_text(PREAMBLE + body + "\n\\end{document}\n", encoding="utf-8")
        return subprocess.run([exe, "-halt-on-error", "-interaction=nonstopmode", tex.name], cwd=folder,
                              capture_output=True, text=True, errors="replace", timeout=300)

    if run(list(snippets)).returncode == 0:
        return
    for name in snippets:  # name the table that fails
        proc = run([name])
        if proc.returncode != 0:
            error = next((ln for ln in proc.stdout.splitlines() if ln.startswith("!")), proc.stdout[-2000:])
            pytest.fail(f"{name}.tex does not compile: {error}")
    pytest.fail("the tables compile one by one but not together")


def _report_tables(runs: pd.DataFrame, out: Path) -> dict[str, str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        evalmix.report(evalmix.read_runs(runs), out, n_boot=50)
    found = {p.stem: p.read_text(encoding="utf-8") for p in sorted((out / "tables").glob("*.tex"))}
    assert len(found) >= 20, sorted(found)
    return found


def test_report_tables_compile(tmp_path):
    _pdflatex()
    compile_tables(_report_tables(pd.read_csv(EXAMPLE), tmp_path / "report"), tmp_path / "tex")


def test_report_tables_with_hostile_names_compile(tmp_path):
    _pdflatex()
    runs = pd.read_csv(EXAMPLE)
    runs["model"] = runs["model"].map(HOSTILE).fillna(runs["model"])
    runs["language"] = runs["language"].map({"EN": "<img src=x onerror=alert(1)>"}).fillna(runs["language"])
    found = _report_tables(runs, tmp_path / "report")
    # the names are in the tables, escaped
    assert r"\$x\$" in found["accuracy_overall"] and r"\textless{}script\textgreater{}" in found["accuracy_overall"]
    compile_tables(found, tmp_path / "tex")



def test_score_report_tables_with_hostile_names_compile(tmp_path):
    """The report on judge ratings (clmm) and on a continuous score (lmer): its own tables."""
    _pdflatex()
    ratings = pd.read_csv(ROOT / "data" / "example_ratings.csv")
    ratings = ratings[ratings["item"].isin(sorted(ratings["item"].unique())[:20])].copy()
    ratings["model"] = ratings["model"].map(HOSTILE).fillna(ratings["model"])
    found = {}
    for outcome, table in (("rating", ratings), ("score", ratings.assign(score=ratings["rating"] / 5 + 0.01 * (
            ratings["run"] - 1)).drop(columns="rating"))):
        out = tmp_path / outcome
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            evalmix.report(table, out, outcome=outcome, n_boot=20)
        found |= {f"{outcome}_{p.stem}": p.read_text(encoding="utf-8") for p in sorted((out / "tables").glob("*.tex"))}
    assert {"rating_score_means", "rating_score_pairwise", "rating_rating_distribution", "score_score_variance",
            "score_score_vs_reference"} <= set(found)
    assert r"\$x\$" in found["rating_score_means"] and r"\textless{}script\textgreater{}" in found["rating_scores"]
    compile_tables(found, tmp_path / "tex")

def _readme_results() -> dict[str, Result]:
    """Run README's Python tour and collect every result it makes."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks, "README.md has no Python code"
    namespace: dict[str, object] = {}
    cwd = os.getcwd()
    try:
        os.chdir(ROOT)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for block in blocks:
                exec(compile(block, "README.md", "exec"), namespace)  # noqa: S102 - the tour's own code
    finally:
        os.chdir(cwd)
    return {k: v for k, v in namespace.items() if isinstance(v, Result)}


def test_readme_results_to_latex_compile(tmp_path):
    """Each result of the tour, and each table of its summary()."""
    _pdflatex()
    results = _readme_results()
    assert len(results) >= 3, sorted(results)
    snippets = {name: res.to_latex(caption=f"README: {name}") for name, res in results.items()}
    snippets |= {f"{name}.summary": res.summary().to_latex() for name, res in results.items()}
    compile_tables(snippets, tmp_path / "tex")


def _pdftotext() -> str:
    return _tool("pdftotext", "poppler-utils")


def _alnum(text: str) -> str:
    """The ASCII letters and digits of ``text``, accents taken off (pdflatex sets an accented
    letter as the letter plus an accent, which pdftotext may read back either way)."""
    return re.sub(r"[^A-Za-z0-9]", "", unicodedata.normalize("NFD", text))


def _runs(text: str) -> list[str]:
    """The runs of ASCII letters and digits of a name (symbols between them are set as math or as
    their code point, so only the runs are compared)."""
    return re.findall(r"[A-Za-z0-9]+", unicodedata.normalize("NFD", text))


# names a user may give models and slices: letters and digits mixed with every LaTeX special,
# markup, line breaks and symbols pdflatex has no glyph for
NAME = st.text(alphabet=st.sampled_from(list("abcXYZ019 #$%&~_^\\{}<>|\n\t'\"`-éüχ²Δ×≤😀")), min_size=1,
               max_size=12)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(names=st.lists(NAME, min_size=1, max_size=5, unique=True), header=NAME)
def test_any_names_compile_and_read_back(tmp_path_factory, names, header):
    """A table of arbitrary names compiles with a real pdflatex, and the PDF's text holds every
    name's letters and digits in order (nothing dropped or swallowed by an unescaped special)."""
    exe, totext = _pdflatex(), _pdftotext()
    folder = tmp_path_factory.mktemp("tex")
    table = pd.DataFrame({header: names, "estimate": [0.5 + i for i in range(len(names))]})
    tex = folder / "doc.tex"
    tex.write_text(PREAMBLE + evalmix.to_latex(table) + "\n\\end{document}\n", encoding="utf-8")
    proc = subprocess.run([exe, "-halt-on-error", "-interaction=nonstopmode", tex.name], cwd=folder,
                          capture_output=True, text=True, errors="replace", timeout=120)
    error = next((ln for ln in proc.stdout.splitlines() if ln.startswith("!")), "")
    assert proc.returncode == 0, f"{names!r} / {header!r}: {error}"
    text = subprocess.run([totext, "-layout", "doc.pdf", "-"], cwd=folder, capture_output=True, text=True,
                          errors="replace", check=True).stdout
    lines = [_alnum(ln) for ln in text.splitlines()]
    for name in names:
        # each name's row: its letters and digits, in order, on one line of the PDF
        assert any(all(r in ln for r in _runs(name)) for ln in lines), (name, text)
    assert all(r in _alnum(text) for r in _runs(header)), (header, text)


def test_judge_and_arena_tables_with_hostile_names_compile(tmp_path):
    _pdflatex()
    import numpy as np

    from evalmix.reporting import arena_section, judges_section

    rng = np.random.default_rng(2)
    models, judges = list(HOSTILE.values())[:3], [HOSTILE["model-B"], HOSTILE["model-D"]]
    rows = [(m, f"q{i}", r, j, int(rng.random() < 0.3 + 0.2 * k + 0.1 * jj))
            for k, m in enumerate(models) for i in range(12) for r in (1, 2) for jj, j in enumerate(judges)]
    judged = pd.DataFrame(rows, columns=["model", "item", "run", "judge", "correct"])
    labels = judged[(judged["judge"] == judges[0]) & judged["item"].isin([f"q{i}" for i in range(5)])]
    labels = labels.rename(columns={"correct": "human"}).drop(columns="judge")
    a = rng.integers(0, 3, 600)
    b = (a + rng.integers(1, 3, 600)) % 3
    won = rng.choice(["model_a", "model_b", "tie"], 600, p=[0.45, 0.4, 0.15])
    battles = pd.DataFrame({"model_a": np.array(models, dtype=object)[a],
                            "model_b": np.array(models, dtype=object)[b], "winner": won})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sections = [judges_section(evalmix.read_runs(judged), labels=labels), arena_section(battles)]
    found = {name: evalmix.tables.to_latex(tab, caption=caption, label=f"tab:{name}")
             for sec in sections for name, caption, tab in sec.tables}
    assert {"judge_agreement_pairs", "judge_bias", "judge_ppi", "arena_ratings", "arena_params"} <= set(found)
    assert r"\textless{}script\textgreater{}" in found["judge_agreement_pairs"] and r"\$x\$" in found["arena_ratings"]
    compile_tables(found, tmp_path / "tex")
