"""``evalmix compare`` (two models on the same items) and ``evalmix calibrate`` (how honest each
comparison method is, by simulation)."""

from __future__ import annotations

import argparse

from ._args import WHERE_HELP, add_data_arguments, add_output_arguments, conf_level, n_jobs, positive_int, seed, split_list

PAIR_METHODS = ["paired_t", "mcnemar", "bootstrap", "permutation", "wilcoxon"]


def run_compare(args: argparse.Namespace) -> int:
    from ..stats.comparisons import compare_pair
    from ._common import emit, load_data, parse_where

    data = load_data(args)
    options = {"seed": args.seed} if args.method in ("bootstrap", "permutation") else {}
    result = compare_pair(data, args.a, args.b, method=args.method, where=parse_where(args.where, data, "compare"),
                          conf_level=args.conf_level, **options)
    emit(args, result)
    return 0


def run_calibrate(args: argparse.Namespace) -> int:
    from ..studies.calibration import calibrate
    from ._common import emit, show_progress

    methods = split_list(args.methods) or None
    result = calibrate(args.scenario, methods, n_sims=args.n_sims, rng=args.seed, n_jobs=args.jobs,
                       progress=show_progress())
    emit(args, result)
    return 0


def add_compare(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compare", help="compare two models on the same items (paired tests)",
                       description="Difference in accuracy (B - A) with a paired test.")
    add_data_arguments(p)
    p.add_argument("a", metavar="A", help="first model")
    p.add_argument("b", metavar="B", help="second model (estimate = B - A)")
    p.add_argument("--method", default="paired_t", choices=PAIR_METHODS)
    p.add_argument("--where", action="append", default=[], metavar="COLUMN=VALUE", help=WHERE_HELP)
    p.add_argument("--conf-level", type=conf_level, default=0.95)
    p.add_argument("--seed", type=seed, default=0, help="seed of resampling methods (default 0)")
    p.set_defaults(handler=run_compare)


def add_calibrate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("calibrate", help="false-positive rate, power and coverage of comparison methods",
                       description="Simulate benchmarks under a null and an alternative and score each method.")
    p.add_argument("--scenario", default="mixture", choices=["mixture", "glmm"])
    p.add_argument("--methods", default=None, help="comma-separated method names (default: the built-in set)")
    p.add_argument("--n-sims", type=positive_int, default=200,
                   help="simulated benchmarks (default 200)")
    p.add_argument("--seed", type=seed, default=0)
    p.add_argument("--jobs", type=n_jobs, default=1, help="parallel workers (-1: all cores)")
    add_output_arguments(p)
    p.set_defaults(handler=run_calibrate)


PARSERS = [add_compare, add_calibrate]
