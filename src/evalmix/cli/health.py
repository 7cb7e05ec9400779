"""``evalmix health``: is the benchmark still measuring?  Dead items among the top models, the
effective number of items, the signal-to-noise ratio and the run noise of each model; with
``--version COLUMN``, whether scores shifted between harness versions beyond the models' differences."""

from __future__ import annotations

import argparse

from ._args import OwnedChoices, add_choice_argument, add_data_arguments, finite_number, positive_int


def run_health(args: argparse.Namespace) -> int:
    from ..studies.health import item_health, version_shift
    from ._common import dump_json, load_data, print_table, records

    data = load_data(args)
    roles = data.attrs.get("evalmix") or {}
    cols = {"item": roles.get("item") or "item", "model": roles.get("model") or args.model,
            "run": roles.get("run")}
    if roles.get("successes"):
        cols |= {"successes": roles["successes"], "trials": roles["trials"]}
    else:
        cols |= {"outcome": roles.get("outcome") or args.outcome}
    if args.version is not None and args.version not in data.columns:
        raise SystemExit(f"evalmix health: --version {args.version!r} is not a column of {args.data}; "
                         f"the columns are {', '.join(map(str, data.columns))}")
    health = item_health(data, args.top_k, method=args.method, min_discrimination=args.min_discrimination,
                         **cols)
    shift = version_shift(data, args.version, kind=args.dif, **cols) if args.version else None
    if args.figure:
        from ..core.files import atomic_path
        from ..plots.health import item_health_plot

        fig = item_health_plot(health)
        with atomic_path(args.figure) as tmp:
            fig.savefig(tmp, format=args.figure.rsplit(".", 1)[-1] if "." in args.figure else "png")
    if args.json:
        doc = {"command": args.command} | health.to_dict()
        doc["table"] = records(health.items)
        doc["models"] = records(health.models)
        doc["benchmark"] = records(health.benchmark)[0]
        if shift is not None:
            doc["version_shift"] = shift.to_dict() | {"table": records(shift.overall),
                                                       "items": records(shift.items),
                                                       "models": records(shift.models)}
        dump_json(doc)
        return 0
    summary = health.summary()
    for line in (summary.title, *summary.header):
        print(line)
    items = health.items
    dead_first = items.sort_values(["dead", "top_discrimination"], ascending=[False, True], kind="stable")
    print_table(args, dead_first, title="items (dead first):")
    print_table(args, health.models, title="models (run noise per model):")
    print_table(args, health.benchmark, title="benchmark:")
    if shift is not None:
        s = shift.summary()
        print()
        for line in (s.title, *s.header):
            print(line)
        print_table(args, shift.overall, title="overall:")
        flagged = shift.items[shift.items["flagged"]]
        print_table(args, flagged if len(flagged) else shift.items.head(0), title="shifted items:")
        print_table(args, shift.models, title="models (equated to the reference version):")
        for line in s.notes:
            print(line)
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "health", help="dead items, effective items, signal-to-noise and run noise per model; version shifts",
        description="Benchmark health: per item, difficulty, discrimination and whether it still separates "
                    "the top-k models (dead: all solve, none solve, or flat); per benchmark the dead share, "
                    "the effective number of items and the signal-to-noise ratio; per model the run-to-run "
                    "noise.  With --version COLUMN, item-by-version DIF and a systematic shift, conditional "
                    "on the model, with BH over items and equated scores.")
    add_data_arguments(p)
    p.add_argument("--top-k", type=positive_int, default=None, metavar="K",
                   help="the best K models an item must separate (default: all models; at least 3)")
    add_choice_argument(p, "--method", choices=OwnedChoices("evalmix.core.methods", "HEALTH_METHODS"),
                        default="auto", help="item parameters: 2PL with run noise, point-biserial, or auto "
                                             "(2PL with at least 10 models)")
    p.add_argument("--min-discrimination", type=finite_number, default=0.1, metavar="R",
                   help="items whose discrimination among the top-k is below R are flat (default 0.1)")
    p.add_argument("--version", default=None, metavar="COLUMN",
                   help="also test for shifts between the versions named in COLUMN (e.g. harness_version)")
    add_choice_argument(p, "--dif", choices=OwnedChoices("evalmix.core.methods", "DIF_KINDS"), default="uniform",
                        help="item shifts tested with --version: uniform (default) or both (also the slope)")
    p.add_argument("--figure", default=None, metavar="FILE", help="save the item map and run noise figure")
    p.set_defaults(handler=run_health)
