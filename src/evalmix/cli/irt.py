"""``evalmix irt``: a 2PL or 1PL item response model with run-to-run noise; abilities, items, and
optionally a subset of items chosen for estimating full-benchmark accuracy."""

from __future__ import annotations

import argparse

from ._args import (DeprecatedOption, OwnedChoices, add_choice_argument, add_output_arguments, conf_level,
                    positive_int, seed)


def run_irt(args: argparse.Namespace) -> int:
    import pandas as pd

    from ..core import tables
    from ..studies.irt import fit_irt, select_items
    from ._common import dump_json, emit, print_table, records

    # --run none, as for every command: no run column (the default here)
    run = [c.strip() for c in args.run.split(",") if c.strip()] if args.run else None
    if run is not None and [c.lower() for c in run] == ["none"]:
        run = None
    fit = fit_irt(args.data, item=args.item, model=args.model, correct=args.outcome, run=run,
                  model_type=args.model_type, conf_level=args.conf_level, successes=args.successes,
                  trials=args.trials)
    chosen = (select_items(fit, args.select, method=args.select_method, rng=args.seed)
              if args.select is not None else None)
    if args.json:
        doc = {"command": args.command} | fit.to_dict()
        doc["table"] = records(fit.abilities)
        doc["items"] = records(fit.items)
        doc["population"] = records(fit.population)
        if chosen is not None:
            doc["selected_items"] = [str(i) for i in chosen]
        dump_json(doc)
        return 0
    summary = fit.summary()
    for line in (summary.title, *summary.header):
        print(line)
    if fit.separated:  # said before the table too, not only in the warning after it
        print(f"separation: left out of the fit (ability +-Inf, no SE): {', '.join(fit.separated)}")
    emit(args, fit.abilities)
    print_table(args, fit.population, title="item population:")
    if args.items:
        print_table(args, fit.items, title="items:")
    if chosen is not None:
        print()
        print(f"{len(chosen)} items chosen ({args.select_method}):")
        print(tables.to_text(pd.DataFrame({"item": chosen})))  # to_text makes labels safe for a terminal
    for line in summary.notes:
        if not line.startswith("separation"):  # printed above the table
            print(line)
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "irt", help="2PL/1PL item response model with run-to-run noise; item subsets",
        description="Fit a 2PL (or 1PL) item response model to 0/1 outcomes by marginal maximum "
                    "likelihood: item discrimination and difficulty (items random), model ability "
                    "(at mean 0, SD 1 over the models) with intervals, a random intercept per "
                    "item:run for run-to-run noise, and the model-by-item misfit SD (what subset "
                    "estimates of accuracy add to their intervals).  DATA is a runs table (.csv, .tsv, .parquet, .jsonl).")
    p.add_argument("data", metavar="DATA", help="runs table")
    p.add_argument("--item", default="item", help="item column (default: item)")
    p.add_argument("--model", default="model", help="model column (default: model)")
    p.add_argument("--outcome", default="correct", help="0/1 outcome column (default: correct)")
    p.add_argument("--correct", dest="outcome", action=DeprecatedOption, replacement="--outcome COLUMN")
    p.add_argument("--successes", default=None, help="k-of-n successes column (with --trials), instead of --outcome")
    p.add_argument("--trials", default=None, help="k-of-n trials column (with --successes)")
    p.add_argument("--run", default=None, metavar="COLUMNS",
                   help="run column(s), comma-separated (e.g. language,prompt,run); each item:run gets "
                        "a random intercept (default: none, as --run none)")
    add_choice_argument(p, "--model-type", choices=OwnedChoices("evalmix.core.methods", "IRT_MODELS"), default="2pl", help="2PL (default) or 1PL")
    p.add_argument("--conf-level", type=conf_level, default=0.95, help="interval level (default 0.95)")
    p.add_argument("--items", action="store_true", help="also print the item table")
    p.add_argument("--select", type=positive_int, default=None, metavar="N",
                   help="choose N items for estimating full-benchmark accuracy")
    selections = OwnedChoices("evalmix.core.methods", "ITEM_SELECTIONS")
    add_choice_argument(p, "--select-method", choices=selections, default="stratified",
                        help="how --select chooses (default: stratified)")
    add_choice_argument(p, "--method", dest="select_method", choices=selections, action=DeprecatedOption,
                        replacement="--select-method (--method names the estimation method elsewhere)")
    p.add_argument("--seed", type=seed, default=1, help="seed of --select-method random (default 1)")
    add_output_arguments(p)
    p.set_defaults(handler=run_irt)
