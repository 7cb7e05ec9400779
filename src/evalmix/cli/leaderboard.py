"""``evalmix leaderboard``: a leaderboard with simultaneous rank sets and tie groups, from a runs
table, Inspect AI logs or an lm-evaluation-harness output folder."""

from __future__ import annotations

import argparse
import warnings
from typing import TYPE_CHECKING

from ..core.errors import DataError, DataWarning
from ._args import add_data_arguments, conf_level, positive_int, seed, split_list

if TYPE_CHECKING:
    import pandas as pd

    from ..model import ParsedFormula


def _load(args: argparse.Namespace) -> pd.DataFrame:
    from ..io import read_inspect, read_lm_eval
    from ._common import load_data

    # --score names the scorer or metric of any logs (as for every command); --scorer and --metric
    # are the spellings of --logs inspect and --logs lm-eval
    if args.logs == "inspect":
        return read_inspect(args.data, scorer=args.scorer or args.score, errors="keep")
    if args.logs == "lm-eval":
        metric = args.metric or args.score
        if not metric:
            raise DataError("--logs lm-eval needs --metric (e.g. acc or exact_match)")
        return read_lm_eval(args.data, metric, filter_name=args.filter)
    return load_data(args)


def _glmm_formula(scored: pd.DataFrame, by: list[str]) -> ParsedFormula:
    """The leaderboard's model: the models (within each ``by`` level) with random intercepts of
    items, and of runs within items when there are several runs; the columns are the table's
    recorded roles (read_runs), the conventional names otherwise."""
    from ..data.runs import schema_of
    from ..model import make_formula

    schema = schema_of(scored)
    item = (schema.item if schema is not None else None) or "item"
    run = schema.run if schema is not None else "run"
    runs = run is not None and run in scored.columns and scored[run].nunique() > 1
    model = (schema.model if schema is not None else None) or "model"
    fixed = [model] + [f"{model}:{b}" for b in by] + by
    groups = [item] + ([f"{item}:{run}"] if runs else [])
    if schema is not None and schema.counts:
        return make_formula(str(schema.successes), fixed, groups, trials=schema.trials)
    outcome = (schema.outcome if schema is not None else None) or "correct"
    return make_formula(outcome, fixed, groups)


def run_leaderboard(args: argparse.Namespace) -> int:
    from ..stats.descriptive import accuracy
    from ..studies.leaderboard import rank_sets, rank_sets_glmm
    from ..data.status import scored_rows, status_column
    from ._common import emit, show_progress

    if args.latex and args.json:
        raise SystemExit("--latex and --json each print the leaderboard: give one")
    data = _load(args)
    by = split_list(args.by)
    if status_column(data) is None:
        cov = None
    else:  # errored samples: their share per model goes beside the leaderboard
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DataWarning)
            cov = accuracy(data, by + ["model"]).table[by + ["model", "n_attempted", "coverage"]]
    if args.method == "glmm":
        from ..glmm import glmer

        scored = scored_rows(data)
        formula = _glmm_formula(scored, by)
        result = rank_sets_glmm(glmer(formula.text, scored), formula.fixed_terms[0], by=by or None,
                                conf_level=args.conf_level)
    else:
        result = rank_sets(data, by or None, n_boot=args.n_boot, conf_level=args.conf_level, rng=args.seed,
                           progress=show_progress())
    if args.plot:
        from ..plots.leaderboard import leaderboard_plot

        if by:
            raise DataError("--plot draws one leaderboard; leave out --by")
        leaderboard_plot(result).savefig(args.plot, bbox_inches="tight")
    if args.latex:
        print(result.to_latex())
        return 0
    table = result.to_frame()
    if cov is not None:
        table = table.merge(cov, on=by + ["model"], how="left")
    emit(args, table, {"conf_level": result.conf_level, "method": result.method,
                       "tie_groups": {g: list(m) for g, m in zip(result.groups["group"], result.groups["models"])}
                       if not by else None})
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "leaderboard", help="leaderboard with simultaneous rank sets and tie groups",
        description="Rank the models with simultaneous confidence sets for their ranks (joint coverage "
                    ">= --conf-level), marginal rank intervals and tie groups (models sharing a letter "
                    "are not separable).  DATA is a runs table, or Inspect AI logs (--logs inspect) or "
                    "an lm-evaluation-harness output folder (--logs lm-eval); samples that errored are "
                    "reported as coverage beside each model.")
    add_data_arguments(p)
    p.add_argument("--logs", choices=["inspect", "lm-eval"], default=None,
                   help="read DATA as harness logs instead of a runs table")
    p.add_argument("--scorer", default=None, help="Inspect scorer to use when samples carry several")
    p.add_argument("--metric", default=None, help="lm-eval per-document metric (e.g. acc)")
    p.add_argument("--filter", default=None, help="lm-eval filter when a task logs several")
    p.add_argument("--by", default=None, help="comma-separated slice columns: one leaderboard per slice")
    p.add_argument("--method", choices=["bootstrap", "glmm"], default="bootstrap",
                   help="item bootstrap (default) or the marginal means of a GLMM with (1|item)")
    p.add_argument("--conf-level", type=conf_level, default=0.95, help="joint coverage (default 0.95)")
    p.add_argument("--n-boot", type=positive_int, default=2000, help="bootstrap replicates (default 2000)")
    p.add_argument("--seed", type=seed, default=1, help="bootstrap seed (default 1)")
    p.add_argument("--latex", action="store_true", help="print the leaderboard as a LaTeX table")
    p.add_argument("--plot", default=None, metavar="FILE", help="save the leaderboard figure to FILE")
    p.set_defaults(handler=run_leaderboard)
