"""Shared fixtures. Tests that need ``../shared`` (the AI4Math data) skip cleanly without it."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd
import pytest

# One BLAS thread per test process: pytest-xdist already runs one worker per core, and the small
# factorisations of model fits run many times slower when the threaded BLAS of two workers compete
# for the cores (idle threads spin).  The environment reaches the workers and the notebooks' kernels
# before they load numpy; pytest_configure limits the BLAS already loaded in this process.
for _var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

ROOT = Path(__file__).resolve().parents[1]
# tests/ mirrors the package's folders, and a few test files use another's helpers by module name
# (test file names are unique): every test folder is importable, whatever order the files run in
for _folder in sorted((ROOT / "tests").iterdir()):
    if _folder.is_dir() and any(_folder.glob("test_*.py")) and str(_folder) not in sys.path:
        sys.path.append(str(_folder))
SHARED = Path(os.environ.get("EVALMIX_SHARED", ROOT.parent / "shared"))
AI4MATH = SHARED / "data" / "ai4math"
REFERENCE = ROOT / "tests" / "reference"


@pytest.fixture(scope="session")
def ai4math_dir() -> Path:
    """Folder of the AI4Math runs table and its published tables; skips when absent."""
    if not (AI4MATH / "ai4math_runs.csv").exists():
        pytest.skip("../shared/data/ai4math is not available")
    return AI4MATH


@pytest.fixture(scope="session")
def ai4math_raw(ai4math_dir: Path) -> pd.DataFrame:
    """The AI4Math runs table as pandas reads it (no validation)."""
    return pd.read_csv(ai4math_dir / "ai4math_runs.csv")


@pytest.fixture(scope="session")
def published(ai4math_dir: Path):
    """Loader of the paper's published tables: ``published("accuracy")`` -> DataFrame."""

    def load(name: str) -> pd.DataFrame:
        return pd.read_csv(ai4math_dir / "published" / f"{name}.csv")

    return load


@pytest.fixture(scope="session")
def reference():
    """Loader of committed R reference values: ``reference("binom_reference")`` -> parsed JSON."""
    import json

    def load(name: str):
        return json.loads((REFERENCE / f"{name}.json").read_text())

    return load


def readme_tour_commands() -> list[str]:
    """The ``evalmix ...`` commands of README's command-line tour, as written (comments cut)."""
    import re

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"From the command line.*?```bash\n(.*?)```", text, re.S)
    assert block, "README.md has no command-line tour"
    lines = block.group(1).replace("\\\n", " ").splitlines()
    return [c.split("  #")[0].strip() for c in lines if c.strip().startswith("evalmix ")]


class SavedReport(NamedTuple):
    """README's ``evalmix report`` run on the bundled example: its exit code and printed text, the
    report it built, the folder it was saved to and the paths ``Report.save`` returned."""

    code: int
    stdout: str
    report: Any
    folder: Path
    paths: dict[str, Path]


@pytest.fixture(scope="session")
def example_report(tmp_path_factory: pytest.TempPathFactory) -> SavedReport:
    """README's report command (``evalmix report data/example_runs.csv -o report/``) run as written
    where a user would (outputs go to a temporary folder), once per test process: it is the tour's
    report test (test_reporting.py), and the tests that read a saved report share it (a file runs
    on one worker: they live in test_reporting.py).  The built report is taken from
    ``Report.save`` on its way out.  Treat it as read-only."""
    import contextlib
    import io
    import shlex
    import warnings

    import matplotlib

    matplotlib.use("Agg")
    from evalmix.cli import main
    from evalmix.reporting import Report

    command = next(c for c in readme_tour_commands() if c.split()[1] == "report")
    work = tmp_path_factory.mktemp("readme_report")
    (work / "data").symlink_to(ROOT / "data")
    saved: list[tuple[Any, dict[str, Path]]] = []
    save = Report.save

    def recorded_save(self: Any, directory: Any) -> dict[str, Path]:
        paths = save(self, directory)
        saved.append((self, paths))
        return paths

    out = io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(out), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mp.chdir(work)
        mp.setattr(Report, "save", recorded_save)
        code = main(shlex.split(command)[1:])
    assert len(saved) == 1, f"{command!r} exited {code} without saving one report"
    rep, paths = saved[0]
    paths = {k: work / p for k, p in paths.items()}  # relative to the folder it ran in
    return SavedReport(code, out.getvalue(), rep, paths["html"].parent, paths)


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """Every core by default (README's test command): one pytest-xdist worker per logical CPU,
    each test file on one worker (its module fixtures are built once).  Set here rather than in
    addopts so that ``-p no:xdist`` (no ``-n`` option at all) still works; ``-n0`` runs serially."""
    if (config.pluginmanager.hasplugin("xdist") and config.getoption("numprocesses", None) is None
            and not hasattr(config, "workerinput") and not config.getoption("collectonly")):
        config.option.numprocesses = "logical"
        if config.getoption("dist", "no") == "no":
            config.option.dist = "loadfile"
            # files go out in the order of pytest_collection_modifyitems (longest first), not
            # by their number of tests
            config.option.loadscopereorder = False


# The files that take longest, longest first (seconds of the default run, measured per test):
# pytest-xdist hands them out before the others, so that no worker starts a long file while the
# other runs dry (the wall time of two workers is then about half the total).
LONGEST_FIRST = (
    "test_output_hygiene.py", "test_doctests.py", "test_figure_layout.py", "test_bayes.py",
    "test_docs_blocks.py", "test_vocabulary.py", "test_formula_sweep.py", "test_output_safety.py",
    "test_irt.py", "test_reporting.py", "test_leaderboard.py", "test_arena.py", "test_readme_cli.py",
    "test_loop.py", "test_bad_input.py", "test_formula_parity.py", "test_separation_everywhere.py",
    "test_rank_scale.py", "test_architecture.py", "test_report_judges.py", "test_bayes_model_args.py",
    "test_bad_logs.py",
    # then the files whose slowest tests alone (--durations=80 of a whole run) add up to 7-20 s
    "test_judges.py", "test_calibration.py", "test_repetitions.py", "test_fit_planning.py",
    "test_report_scores.py", "test_fit_many.py", "test_glmmtmb.py", "test_cli.py", "test_readme.py",
    "test_formula_r.py", "test_bayes_holders.py", "test_io_judges.py", "test_glmmtmb_gradient.py",
)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The files of LONGEST_FIRST first, in that order; the others after them in the order they
    came (shuffled by pytest-randomly when it is installed).  A stable sort keeps each file's
    tests together and in their order."""
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


_BLAS_LIMIT: list[object] = []  # held for the whole session (threadpoolctl restores on exit only)


def pytest_configure(config: pytest.Config) -> None:
    """BLAS limited to one thread in this process too (numpy was loaded before this file)."""
    from threadpoolctl import threadpool_limits

    _BLAS_LIMIT.append(threadpool_limits(limits=1, user_api="blas"))
