"""The example tables shipped inside the package, so that the README's tour runs from an installed
wheel in any directory: ``evalmix.load_example("runs")`` and ``evalmix describe --example runs``.

The files are package data (``src/evalmix/data/examples/``); ``data/example_*.csv`` at the root of
a checkout are links to them, and ``data/make_example.py`` / ``data/make_scores.py`` rewrite them
(``data/README.md`` describes their designs and true values).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.arguments import check_choice

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["EXAMPLES", "example_path", "load_example"]

#: The bundled examples: name -> what the table holds.
EXAMPLES: dict[str, str] = {
    "runs": "simulated runs table with the AI4Math design: 8 models x 105 items x 3 runs x 2 languages "
            "x 2 prompts, binary `correct` (10,080 rows)",
    "ratings": "judge ratings on a 1-5 scale: 4 models x 60 items x 2 runs x 2 judges (960 rows)",
    "battles": "2,000 arena battles between 4 models: model_a, model_b, winner, prompt",
}


def example_path(name: str) -> Path:
    """The path of a bundled example table (a CSV file inside the installed package).

    Parameters
    ----------
    name : {"runs", "ratings", "battles"}
        Which example (:data:`EXAMPLES` describes them).

    Returns
    -------
    pathlib.Path
        The CSV file; every function and command that reads a table reads it.

    Examples
    --------
    >>> import evalmix
    >>> evalmix.example_path("runs").name
    'example_runs.csv'
    >>> evalmix.accuracy(evalmix.example_path("runs"), "model").to_frame().shape
    (8, 6)
    """
    check_choice(name, "name", list(EXAMPLES))
    # an installed wheel or a checkout: either way the package directory is on the file system
    return Path(str(resources.files(__package__).joinpath("examples", f"example_{name}.csv")))


def load_example(name: str) -> pd.DataFrame:
    """A bundled example table as a DataFrame.

    Parameters
    ----------
    name : {"runs", "ratings", "battles"}
        ``"runs"``: a simulated runs table with the design of the AI4Math benchmark (8 models x 105
        items x 3 runs x 2 languages x 2 prompts, binary ``correct``, with known true effects);
        ``"ratings"``: 1-5 judge ratings of 4 models x 60 items x 2 runs by 2 judges;
        ``"battles"``: 2,000 arena battles between the same 4 models.

    Returns
    -------
    pandas.DataFrame
        The table as ``pandas.read_csv`` reads it.

    Examples
    --------
    >>> import evalmix
    >>> runs = evalmix.load_example("runs")
    >>> runs.shape, list(runs.columns)
    ((10080, 6), ['model', 'item', 'run', 'language', 'prompt', 'correct'])
    >>> evalmix.load_example("battles").winner.value_counts().index.tolist()
    ['model_a', 'model_b', 'tie']
    """
    import pandas as pd

    return pd.read_csv(example_path(name))
