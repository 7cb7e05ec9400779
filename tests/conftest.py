"""Shared fixtures. Tests that need ``../shared`` (the AI4Math data) skip cleanly without it."""

from __future__ import annotations

import os
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


class SavedReport(NamedTuple):
    """A study report with the folder it was saved to and the paths ``Report.save`` returned."""

    report: Any
    folder: Path
    paths: dict[str, Path]


@pytest.fixture(scope="session")
def example_report(tmp_path_factory: pytest.TempPathFactory) -> SavedReport:
    """The study report of the bundled example (``data/example_runs.csv``, 100 bootstrap
    resamples, seed 1), built and saved once per test process (about 6 CPU seconds, most of it
    drawing and writing the figures) for the tests that only read it (a file runs on one worker:
    the tests that share it live in test_reporting.py).  Treat it as read-only;
    the command line's report runs end to end in test_reporting.py and test_readme_cli.py."""
    import warnings

    import matplotlib

    matplotlib.use("Agg")
    import evalmix

    folder = tmp_path_factory.mktemp("example_report")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = evalmix.report(evalmix.read_runs(ROOT / "data" / "example_runs.csv"), n_boot=100, seed=1)
        paths = rep.save(folder)
    return SavedReport(rep, folder, paths)


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
    "test_reporting.py", "test_bayes.py", "test_figure_layout.py", "test_vocabulary.py",
    "test_readme_cli.py", "test_doctests.py", "test_report_judges.py", "test_calibration.py",
    "test_repetitions.py", "test_architecture.py", "test_notebooks.py", "test_leaderboard.py",
    "test_irt.py", "test_fit_planning.py", "test_lmer.py", "test_output_safety.py",
    "test_parallel.py", "test_clmm.py",
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
