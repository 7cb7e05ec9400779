"""Layer 0, the data: the runs table and its roles (:mod:`evalmix.data.runs`), slicing, Parquet and
leaderboard-scale aggregation, the status of errored samples.

``evalmix.data`` re-exports the runs table's public names (``from evalmix.data.runs import read_runs``).
"""

from .runs import *  # noqa: F401,F403
from .runs import __all__  # noqa: F401
