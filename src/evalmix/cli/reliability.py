"""``evalmix reliability``, ``evalmix ranks``, ``evalmix se-runs`` and ``evalmix plan``:
run-to-run reliability, leaderboard stability and how many runs and items a study needs."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ._args import (DeprecatedOption, add_data_arguments, conf_level, finite_number, positive_int, positive_int_list,
                    run_role, seed, split_list)

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd


def _default_by(data: pd.DataFrame, given: str | None) -> list[str]:
    by = split_list(given)
    if by:
        return by
    schema = data.attrs["evalmix"]
    return [schema["model"]] + [s for s in schema["slices"] if data[s].nunique() <= 20]



def _bands(text: str | None) -> tuple[float, ...]:
    from ..studies.reliability import KOO_LI_BANDS

    try:
        return tuple(float(v) for v in split_list(text)) if text else KOO_LI_BANDS
    except ValueError:
        raise SystemExit(f"--bands expects increasing numbers such as 0.5,0.75,0.9, got {text!r}") from None


def run_reliability(args: argparse.Namespace) -> int:
    from ..studies.reliability import flip_rate, icc
    from ._common import emit, load_data, require_runs

    data = load_data(args)
    require_runs(args, data, "the flip rate and the ICC across runs")
    by = _default_by(data, args.by)
    flips = flip_rate(data, by).to_frame()
    iccs = icc(data, by, model=args.icc_model, type=args.icc_type, unit=args.icc_unit,
               conf_level=args.conf_level, bands=_bands(args.bands)).to_frame()
    shared = [c for c in ("n_items", "n_runs") if c in flips.columns and c in iccs.columns]
    table = flips.merge(iccs, on=by + shared, how="outer")
    emit(args, table, {"icc_form": iccs["form"].iloc[0] if len(iccs) else None})
    return 0


def run_ranks(args: argparse.Namespace) -> int:
    from ..studies.ranking import rank_instability
    from ._common import emit, load_data, require_runs

    data = load_data(args)
    require_runs(args, data, "rank instability across runs")
    slices = split_list(args.slice_by) or None
    result = rank_instability(data, slices, runs_per_leaderboard=args.runs,
                              ties=args.ties)
    extra = {"n_unstable": result.n_unstable, "n_leaderboards": result.n_leaderboards, "rate": result.rate,
             "ties": result.ties, "n_unstable_paper": result.n_unstable_paper}
    if args.leaderboards:
        emit(args, result.table, extra)
    else:
        emit(args, result, extra)
    return 0


def run_se_runs(args: argparse.Namespace) -> int:
    from ..studies import repetitions
    from ._common import emit, load_data, require_runs

    data = load_data(args)
    require_runs(args, data, "the SE against the number of runs")
    by = _default_by(data, args.by)
    result = repetitions.se_vs_runs(data, by, max_runs=args.max_runs, curves=args.curves)
    emit(args, result)
    return 0


def _pilot_items(data: pd.DataFrame, by: list[str]) -> list[tuple[tuple, np.ndarray]]:
    """Each slice's item means over the pilot's runs: the observations the sequential rule sees."""
    schema = data.attrs["evalmix"]
    keys = by + [schema["item"]]
    if schema["outcome"] is not None:
        means = data.groupby(keys, sort=True, observed=True)[schema["outcome"]].mean()
    else:  # binomial counts: successes over trials of each item
        sums = data.groupby(keys, sort=True, observed=True)[[schema["successes"], schema["trials"]]].sum()
        means = sums[schema["successes"]] / sums[schema["trials"]]
    out = []
    for key, part in means.groupby(level=list(range(len(by))), sort=True):
        out.append((key if isinstance(key, tuple) else (key,), part.to_numpy(float)))
    return out


def _expected_stops(args: argparse.Namespace, data: pd.DataFrame, by: list[str], width: float,
                    max_items: int) -> pd.DataFrame:
    import pandas as pd

    from ..studies.sequential import expected_stop

    rows = []
    for key, obs in _pilot_items(data, by):
        stop = expected_stop(obs, bounds=(0.0, 1.0), max_n=max_items, conf_level=1 - ALPHA,
                             target_width=width, n_sims=args.sims, rng=args.seed)
        rows.append(dict(zip(by, key)) | {"target_width": width, "max_items": max_items}
                    | stop.to_dict(orient="records")[0])
    return pd.DataFrame(rows)


#: The two-sided level of the planner's intervals and of the sequence (a 95% interval).
ALPHA = 0.05


def run_plan(args: argparse.Namespace) -> int:
    import math

    from scipy import stats

    from ..studies import repetitions
    from ._common import emit, load_data, records, require_runs

    chosen = {k: v for k, v in (("se", args.se), ("mdd", args.mdd), ("width", args.width)) if v is not None}
    if args.judge is not None:
        return _plan_judges(args, chosen)
    for flag, given in (("--cost-judge", args.cost_judge is not None), ("--max-judges", args.max_judges is not None),
                        ("--fixed-judges", args.fixed_judges)):
        if given:
            raise SystemExit(f"{flag} plans judges: add --judge COLUMN")
    if len(chosen) > 1:
        raise SystemExit("give one target, --se, --mdd or --width, not " + " and ".join(f"--{k}" for k in chosen))
    if not chosen and args.budget is None:
        raise SystemExit("give a target (--se, --mdd or --width), or --budget for the smallest detectable "
                         "difference it buys")
    for flag, value, strict in (("--cost-per-sample", args.cost_run, True), ("--cost-per-item", args.cost_item, False),
                                ("--budget", args.budget, True)):
        if value is not None and not (value > 0 if strict else value >= 0):
            raise SystemExit(f"{flag} must be {'> 0' if strict else '>= 0'}, got {value:g}")
    for flag, value in chosen.items():
        if not value > 0:
            raise SystemExit(f"--{flag} must be > 0, got {value:g}")
    if args.max_items is not None and not args.sequential:
        raise SystemExit("--max-items sets the budget in items of --sequential; add --sequential")
    data = load_data(args)
    require_runs(args, data, "the planner (run-to-run variance)")
    by = _default_by(data, args.by)
    comps = repetitions.variance_components(data, by)
    result = repetitions.plan(comps, cost_item=args.cost_item, cost_run=args.cost_run, budget=args.budget,
                              max_runs=args.max_runs, alpha=ALPHA, **chosen)
    extra: dict[str, object] = {"n_items": result.n_items, "n_runs": result.n_runs, "cost": result.cost,
                                "achieved": result.achieved}
    if args.json:  # text names the target in the header line
        extra["target"] = result.target
    if args.budget is not None:
        extra["budget"] = args.budget
    stops = None
    if args.sequential:
        # the rule stops at the width of the planned design's 95% interval (its worst slice)
        z = stats.norm.isf(ALPHA / 2)
        scale = {"se": 1.0, "mdd": z + stats.norm.ppf(0.8), "width": 2 * z}[result.target]
        width = float(2 * z * result.achieved / scale)
        if args.max_items is not None:
            max_items = args.max_items
        elif args.budget is not None:  # the items the budget buys at the planned runs
            max_items = math.floor(args.budget / (args.cost_item + result.n_runs * args.cost_run) * (1 + 1e-12))
        else:
            max_items = 4 * result.n_items  # a sequence is wider than a fixed-n interval: 2-3x the items
        stops = _expected_stops(args, data, by, width, max_items)
    if args.json:
        emit(args, result, extra | ({"expected_stop": records(stops)} if stops is not None else {}))
        return 0
    emit(args, result, extra)
    if stops is not None:
        print()
        print(f"Expected stop of the anytime-valid rule (stop when the 95% confidence sequence is narrower "
              f"than {stops['target_width'].iloc[0]:.4g}, at most {stops['max_items'].iloc[0]} items; "
              f"the pilot's items resampled, {args.sims} simulated studies):")
        emit(args, stops.drop(columns=["target_width", "max_items", "n_sims", "decided"]))
    return 0


def _plan_judges(args: argparse.Namespace, chosen: dict[str, float]) -> int:
    """``evalmix plan --judge COLUMN``: items, runs and judges from the judges' variance parts."""
    from ..data.runs import load_table
    from ..studies.judges import judge_plan_components, plan_judges
    from ._common import emit, id_columns, records

    if "mdd" in chosen or len(chosen) > 1:
        raise SystemExit("with --judge give one target, --se or --width (of every model's mean), or --budget")
    if not chosen and args.budget is None:
        raise SystemExit("give a target (--se or --width), or --budget for the most precise design it buys")
    if args.sequential:
        raise SystemExit("--sequential plans items and runs; leave out --judge")
    for flag, value, strict in (("--cost-per-sample", args.cost_run, True), ("--cost-per-item", args.cost_item, False),
                                ("--cost-judge", args.cost_judge, False), ("--budget", args.budget, True),
                                *((f"--{k}", v, True) for k, v in chosen.items())):
        if value is not None and not (value > 0 if strict else value >= 0):
            raise SystemExit(f"{flag} must be {'> 0' if strict else '>= 0'}, got {value:g}")
    data = load_table(args.data, encoding=args.encoding, sep=args.sep, ids=id_columns(args))
    run = run_role(args.run, data.columns)
    outcome = args.outcome if args.outcome in data.columns or args.outcome != "correct" else None
    parts = judge_plan_components(data, judge=args.judge, outcome=outcome, model=args.model, item=args.item,
                                  run=run if run is None or run in data.columns else None)
    result = plan_judges(parts, se=chosen.get("se"), width=chosen.get("width"), budget=args.budget, alpha=ALPHA, cost_item=args.cost_item,
                         cost_run=args.cost_run, cost_judge=args.cost_judge or 0.0,
                         max_runs=min(args.max_runs, 50), max_judges=args.max_judges or 10,
                         judges="fixed" if args.fixed_judges else "random")
    extra: dict[str, object] = {"n_items": result.n_items, "n_runs": result.n_runs, "n_judges": result.n_judges,
                                "cost": result.cost, "se": result.se, "scale": parts.scale}
    if args.json:
        emit(args, result, extra | {"components": records(parts.table)})
        return 0
    emit(args, result, extra)
    return 0


def _add_by(p: argparse.ArgumentParser) -> None:
    p.add_argument("--by", default=None,
                   help="comma-separated slice columns (default: model and the slice columns)")


def add_reliability(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("reliability", help="flip rate, outcome entropy and run-to-run ICC per slice",
                       description="Flip rate and mean entropy (bits) of items across runs, and the ICC of "
                                   "the items x runs matrix (irr::icc), per slice.")
    add_data_arguments(p)
    _add_by(p)
    p.add_argument("--icc-model", default="twoway", choices=["oneway", "twoway"])
    p.add_argument("--icc-type", default="consistency", choices=["consistency", "agreement"])
    p.add_argument("--icc-unit", default="single", choices=["single", "average"])
    p.add_argument("--conf-level", type=conf_level, default=0.95)
    p.add_argument("--bands", default=None,
                   help="ICC quality cut points, e.g. 0.5,0.75,0.9 (Koo & Li, the default) or 0.6,0.75,0.9")
    p.set_defaults(handler=run_reliability)


def add_ranks(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ranks", help="how often leaderboards from single runs differ from the all-runs one",
                       description="Rank instability of leaderboards built from run subsets, per slice: "
                                   "leaderboards that strictly invert a model pair against the "
                                   "all-runs order (--ties paper: the AI4Math paper's count).")
    add_data_arguments(p)
    p.add_argument("--slice-by", "--by", dest="slice_by", default=None,
                   help="comma-separated columns defining the leaderboards (one per slice, as leaderboard --by)")
    p.add_argument("--runs", default=[1], type=positive_int_list, help="runs pooled per leaderboard, e.g. 1,2 (default: 1)")
    p.add_argument("--leaderboards", action="store_true", help="print one row per leaderboard")
    p.add_argument("--ties", choices=["strict", "paper"], default="strict",
                   help="unstable = a model pair strictly inverted, ties are not inversions (strict, "
                        "the default), or any model at another position with ties broken by level "
                        "order (the AI4Math paper's count)")
    p.set_defaults(handler=run_ranks)


def add_se_runs(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("se-runs", help="standard error of slice accuracies against the number of runs",
                       description="Between-item and within-item (run) variance per slice and the SE "
                                   "projected to 1..max-runs runs (--curves paper: the AI4Math "
                                   "paper's curves).")
    add_data_arguments(p)
    _add_by(p)
    p.add_argument("--max-runs", type=positive_int, default=10)
    p.add_argument("--curves", choices=["corrected", "paper"], default="corrected",
                   help="print the items-random projection per slice (corrected, the default) or the "
                        "AI4Math paper's curves")
    p.set_defaults(handler=run_se_runs)


def add_plan(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plan", help="how many items, runs and judges, at what cost, and when to stop",
                       description="Variance components from DATA, then the cheapest (items, runs) design "
                                   "for a target, or the most precise one within --budget; --sequential adds "
                                   "the expected stop of the anytime-valid rule; --judge plans items, runs "
                                   "and judges from a long table of judge verdicts or ratings.")
    add_data_arguments(p)
    _add_by(p)
    p.add_argument("--se", type=finite_number, default=None, help="target: SE of every slice accuracy")
    p.add_argument("--mdd", type=finite_number, default=None,
                   help="target: minimum detectable difference (80%% power, two-sided 5%% level)")
    p.add_argument("--width", type=finite_number, default=None, help="target: full width of every slice's 95%% interval")
    p.add_argument("--budget", type=finite_number, default=None,
                   help="the most the study may cost; without a target, the design with the smallest "
                        "detectable difference it buys")
    p.add_argument("--cost-per-item", "--cost-item", dest="cost_item", type=finite_number, default=0.0,
                   help="cost of one item (default 0)")
    p.add_argument("--cost-per-sample", "--cost-run", dest="cost_run", type=finite_number, default=1.0,
                   help="cost of one sample, one answer to one item in one run (default 1)")
    p.add_argument("--max-runs", type=positive_int, default=50)
    p.add_argument("--sequential", action="store_true",
                   help="also print where the anytime-valid stopping rule is expected to stop, per slice")
    p.add_argument("--max-items", type=positive_int, default=None,
                   help="--sequential: the budget in items (default: what --budget buys at the planned "
                        "runs, else four times the planned items)")
    p.add_argument("--n-sims", "--sims", dest="sims", type=positive_int, default=200,
                   help="--sequential: simulated studies (default 200)")
    p.add_argument("--seed", type=seed, default=0, help="--sequential: seed of the simulation (default 0)")
    p.add_argument("--judge", default=None, metavar="COLUMN",
                   help="plan items, runs and judges: DATA is a long table of verdicts or ratings, one row per "
                        "model, item, run and judge, and COLUMN names the judge (--se/--width: of every "
                        "model's mean; --outcome the verdict or rating column)")
    p.add_argument("--judges", dest="judge", action=DeprecatedOption, replacement="--judge COLUMN")
    p.add_argument("--cost-judge", type=finite_number, default=None,
                   help="--judge: cost of one judge call (default 0)")
    p.add_argument("--max-judges", type=positive_int, default=None, help="--judge: most judges considered (default 10)")
    p.add_argument("--fixed-judges", action="store_true",
                   help="--judge: the estimand averages over these judges only (default: judges drawn from a "
                        "population, whose variance puts a floor under the SE)")
    p.set_defaults(handler=run_plan)


PARSERS = [add_reliability, add_ranks, add_se_runs, add_plan]
