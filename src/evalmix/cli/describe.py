"""``evalmix describe``: accuracy with confidence intervals per model and slice."""

from __future__ import annotations

import argparse

from ._args import OwnedChoices, add_choice_argument, add_data_arguments, conf_level, split_list


def run(args: argparse.Namespace) -> int:
    from ..stats.descriptive import accuracy
    from ..io import is_log_source
    from ._common import emit, load_data

    # ratings and scores (an outcome column other than 'correct', or harness logs' scores) are
    # described by their means; a 'correct' column is read as 0/1, where a 2 is an error
    data = load_data(args, any_outcome=args.outcome not in (None, "correct") or is_log_source(args.data))
    by = split_list(args.by)
    if not by:
        schema = data.attrs["evalmix"]
        by = [schema["model"]] + list(schema["slices"])
    table = accuracy(data, by, ci=args.ci, conf_level=args.conf_level)
    extra: dict[str, object] = {"ci": table.ci, "conf_level": args.conf_level}
    if table.kind == "mean":  # ratings or scores: means with item-clustered t intervals
        extra["outcome"] = "mean score"
    emit(args, table, extra)
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("describe", help="accuracy with confidence intervals per model and slice",
                       description="Accuracy per group with a binomial (or item-clustered) interval.")
    add_data_arguments(p)
    p.add_argument("--by", default=None,
                   help="comma-separated grouping columns (default: model and every slice column)")
    add_choice_argument(p, "--ci", default="wilson", choices=OwnedChoices("evalmix.core.methods", "CI_METHODS"),
                        help="interval method (default: wilson)")
    p.add_argument("--conf-level", type=conf_level, default=0.95, help="interval coverage (default: 0.95)")
    p.set_defaults(handler=run)
