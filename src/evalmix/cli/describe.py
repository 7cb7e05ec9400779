"""``evalmix describe``: accuracy with confidence intervals per model and slice."""

from __future__ import annotations

import argparse

from ._args import OwnedChoices, add_choice_argument, add_data_arguments, conf_level, split_list


def run(args: argparse.Namespace) -> int:
    from ..core.errors import DataError
    from ..stats.descriptive import accuracy
    from ..io import is_log_source
    from ._common import emit, load_data

    by = split_list(args.by)
    lazy = _lazy_source(args, by)
    if lazy is not None:  # Parquet files: counted by DuckDB (or polars), only the groups reach Python
        source, by = lazy
        try:
            table = accuracy(source, by, ci=args.ci, conf_level=args.conf_level, outcome=args.outcome,
                             item=args.item)
        except DataError as exc:
            raise DataError(f"{args.data}: {exc}") from None
    else:
        # ratings and scores (an outcome column other than 'correct', or harness logs' scores) are
        # described by their means; a 'correct' column is read as 0/1, where a 2 is an error
        data = load_data(args, any_outcome=args.outcome not in (None, "correct") or is_log_source(args.data))
        if not by:
            schema = data.attrs["evalmix"]
            by = [schema["model"]] + list(schema["slices"])
        table = accuracy(data, by, ci=args.ci, conf_level=args.conf_level)
    extra: dict[str, object] = {"ci": table.ci, "conf_level": args.conf_level}
    if table.kind == "mean":  # ratings or scores: means with item-clustered t intervals
        extra["outcome"] = "mean score"
    emit(args, table, extra)
    return 0

def _lazy_source(args: argparse.Namespace, by: list[str]) -> tuple[str, list[str]] | None:
    """A Parquet file, folder or glob with the conventional 0/1 roles, and the groups (by default
    the model and every slice column, as read_runs finds them), or None (read the table whole)."""
    from ..data.pushdown import parquet_files, scan_columns

    if args.successes or args.trials or args.model != "model" or args.outcome != "correct":
        return None
    source = parquet_files(args.data)
    cols = scan_columns(source) if source is not None else None
    item = args.item or "item"
    run = args.run or "run"
    if cols is None or source is None or not {"model", item, "correct"} <= set(cols) \
            or args.run not in (None, "run"):
        return None
    if not by:
        by = ["model"] + [c for c in cols if c not in {"model", item, run, "correct"}]
    return source, by


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
