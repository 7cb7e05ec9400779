"""``evalmix reliability``, ``evalmix ranks``, ``evalmix se-runs`` and ``evalmix plan``:
run-to-run reliability, leaderboard stability and how many runs and items a study needs."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ._args import add_data_arguments, conf_level, positive_int, split_list

if TYPE_CHECKING:
    import pandas as pd


def _default_by(data: pd.DataFrame, given: str | None) -> list[str]:
    by = split_list(given)
    if by:
        return by
    schema = data.attrs["evalmix"]
    return [schema["model"]] + [s for s in schema["slices"] if data[s].nunique() <= 20]


def _bands(text: str | None) -> tuple[float, ...]:
    from ..reliability import KOO_LI_BANDS

    try:
        return tuple(float(v) for v in split_list(text)) if text else KOO_LI_BANDS
    except ValueError:
        raise SystemExit(f"--bands expects increasing numbers such as 0.5,0.75,0.9, got {text!r}") from None


def run_reliability(args: argparse.Namespace) -> int:
    from ..reliability import flip_rate, icc
    from ._common import emit, load_data

    data = load_data(args)
    by = _default_by(data, args.by)
    flips = flip_rate(data, by).to_frame()
    iccs = icc(data, by, model=args.icc_model, type=args.icc_type, unit=args.icc_unit,
               conf_level=args.conf_level, bands=_bands(args.bands)).to_frame()
    shared = [c for c in ("n_items", "n_runs") if c in flips.columns and c in iccs.columns]
    table = flips.merge(iccs, on=by + shared, how="outer")
    emit(args, table, {"icc_form": iccs["form"].iloc[0] if len(iccs) else None})
    return 0


def run_ranks(args: argparse.Namespace) -> int:
    from ..ranking import rank_instability
    from ._common import emit, load_data

    data = load_data(args)
    slices = split_list(args.slice_by) or None
    result = rank_instability(data, slices, runs_per_leaderboard=[int(r) for r in split_list(args.runs)] or 1,
                              ties=args.ties)
    extra = {"n_unstable": result.n_unstable, "n_leaderboards": result.n_leaderboards, "rate": result.rate,
             "ties": result.ties, "n_unstable_paper": result.n_unstable_paper}
    if args.leaderboards:
        emit(args, result.table, extra)
    else:
        emit(args, result, extra)
    return 0


def run_se_runs(args: argparse.Namespace) -> int:
    from .. import repetitions
    from ._common import emit, load_data

    data = load_data(args)
    by = _default_by(data, args.by)
    result = repetitions.se_vs_runs(data, by, max_runs=args.max_runs, curves=args.curves)
    emit(args, result)
    return 0


def run_plan(args: argparse.Namespace) -> int:
    from .. import repetitions
    from ._common import emit, load_data

    data = load_data(args)
    by = _default_by(data, args.by)
    comps = repetitions.variance_components(data, by)
    targets = {"se": args.se, "mdd": args.mdd}
    chosen = {k: v for k, v in targets.items() if v is not None}
    if len(chosen) != 1:
        raise SystemExit("evalmix plan: give exactly one target, --se or --mdd")
    result = repetitions.plan(comps, cost_item=args.cost_item, cost_run=args.cost_run,
                              max_runs=args.max_runs, **chosen)
    emit(args, result, {"n_items": result.n_items, "n_runs": result.n_runs, "cost": result.cost,
                        "achieved": result.achieved})
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
    p.add_argument("--slice-by", default=None, help="comma-separated columns defining the leaderboards")
    p.add_argument("--runs", default="1", help="runs pooled per leaderboard, e.g. 1,2 (default: 1)")
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
    p = sub.add_parser("plan", help="cheapest number of items and runs for a precision target",
                       description="Variance components from DATA, then the cheapest (items, runs) design.")
    add_data_arguments(p)
    _add_by(p)
    p.add_argument("--se", type=float, default=None, help="target: SE of every slice accuracy")
    p.add_argument("--mdd", type=float, default=None, help="target: minimum detectable difference")
    p.add_argument("--cost-item", type=float, default=0.0, help="cost of one item (default 0)")
    p.add_argument("--cost-run", type=float, default=1.0, help="cost of one answer (default 1)")
    p.add_argument("--max-runs", type=positive_int, default=50)
    p.set_defaults(handler=run_plan)


PARSERS = [add_reliability, add_ranks, add_se_runs, add_plan]
