"""``evalmix sequential``: an anytime-valid confidence sequence over the items of DATA and where the
stopping rule stops it (one model's accuracy, or the paired difference B - A of two models)."""

from __future__ import annotations

import argparse

from ._args import (WHERE_HELP, OwnedChoices, add_choice_argument, add_data_arguments, conf_level, finite_number,
                    positive_int, positive_number, seed)





def run_sequential(args: argparse.Namespace) -> int:
    from ..studies.sequential import sequential_accuracy, sequential_difference
    from ._common import emit, load_data, parse_where

    data = load_data(args)
    for col, values in (parse_where(args.where, data, "sequential") or {}).items():
        data = data[data[col].isin(values)]
    options = {"method": args.method, "conf_level": args.conf_level, "target_width": args.width,
               "max_items": args.max_items, "order": args.order, "seed": args.seed}
    if args.b is None:
        result = sequential_accuracy(data, args.a, null=args.null, **options)
    else:
        result = sequential_difference(data, args.a, args.b, null=0.0 if args.null is None else args.null,
                                       **options)
    if args.expect is not None:  # DATA is a pilot: where will a study like it stop?
        import numpy as np

        from ..studies.sequential import expected_stop

        pilot = result.to_frame()
        obs = pilot["estimate"].to_numpy() * pilot["n"].to_numpy()
        bounds = (0.0, 1.0) if args.b is None else (-1.0, 1.0)
        # the item observations back from the running means (clipped: rounding only)
        obs = np.clip(obs - np.concatenate(([0.0], obs[:-1])), *bounds)
        table = expected_stop(obs, bounds=bounds, max_n=args.expect,
                              method=args.method, conf_level=args.conf_level, null=result.null,
                              target_width=args.width, n_sims=args.sims, rng=args.seed or 0)
        emit(args, table)
        return 0
    extra = {"stopped_at": result.stopped_at, "decision": result.decision, "estimate": result.estimate,
             "conf_low": result.conf_low, "conf_high": result.conf_high, "n_answers": result.n_answers}
    if not args.json and not args.steps:  # the stop in words above its one-row table
        print("\n".join(result.summary().header))
    emit(args, result if args.steps else result.stop_frame(), extra if args.json else None)
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sequential", help="anytime-valid confidence sequence over items and where to stop",
                       description="Confidence sequence of model A's accuracy, or of the paired difference "
                                   "B - A, item by item (each item's mean over its runs), and the first item "
                                   "at which it excludes --null, is narrower than --width, or reaches "
                                   "--max-items. Items must arrive in a random order (--seed shuffles).")
    add_data_arguments(p)
    p.add_argument("a", metavar="A", help="the model (or the first model of a comparison)")
    p.add_argument("b", metavar="B", nargs="?", default=None, help="second model (estimate = B - A)")
    add_choice_argument(p, "--method", default="betting", choices=OwnedChoices("evalmix.core.methods", "CS_METHODS"))
    p.add_argument("--conf-level", type=conf_level, default=0.95)
    p.add_argument("--width", type=positive_number, default=None, help="stop when the interval is this narrow")
    p.add_argument("--null", type=finite_number, default=None,
                   help="stop when the sequence excludes this value (default 0 for a comparison)")
    p.add_argument("--max-items", type=positive_int, default=None, help="the budget in items")
    p.add_argument("--order", default=None, help="column giving the arrival order (default: table order)")
    p.add_argument("--seed", type=seed, default=None, help="shuffle the items with this seed first")
    p.add_argument("--where", action="append", default=[], metavar="COLUMN=VALUE", help=WHERE_HELP)
    p.add_argument("--expect", type=positive_int, default=None, metavar="MAX_ITEMS",
                   help="treat DATA as a pilot: where a study of at most MAX_ITEMS items like it is expected "
                        "to stop (its items resampled into --sims simulated studies)")
    p.add_argument("--n-sims", "--sims", dest="sims", type=positive_int, default=200,
                   help="simulated studies of --expect (default 200)")
    p.add_argument("--steps", action="store_true", help="print every step of the sequence, not only the stop")
    p.set_defaults(handler=run_sequential)
