"""``evalmix judges`` (several judges in one model) and ``evalmix ppi`` (judge scores corrected by a
few human labels)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import DataError
from ._args import (MISSING_CHOICES, DeprecatedOption, OwnedChoices, add_choice_argument, add_output_arguments,
                    add_text_arguments, choice_list, conf_level, finite_number, positive_int, positive_number,
                    split_list)

if TYPE_CHECKING:
    import pandas as pd

#: The methods of evalmix.ppi, read from it when ``--help`` or a run needs them.
PPI_METHODS = OwnedChoices("evalmix.core.methods", "PPI_METHODS")


def _is_mt_bench(path: str) -> bool:
    from ..io.mt_bench import is_mt_bench_judgment

    p = Path(path)
    if p.is_dir():
        return any(is_mt_bench_judgment(f) for f in p.rglob("*.jsonl"))
    return is_mt_bench_judgment(p)


def _load(args: argparse.Namespace) -> pd.DataFrame:
    import pandas as pd

    from ..data.runs import load_table
    from ._common import id_columns
    from ..io.detect import detect_format, is_log_source
    from ..io.inspect_logs import read_inspect
    from ..io.mt_bench import read_mt_bench

    if _is_mt_bench(args.data):
        df = read_mt_bench(args.data, kind="single", threshold=args.threshold)
        if args.outcome is None:
            args.outcome = "correct" if args.threshold is not None else "score"
        return df
    if is_log_source(args.data) and detect_format(args.data) == "inspect":
        # every scorer of the samples is a judge (model-graded scorers with their grader models)
        return read_inspect(args.data, judges=True)
    df = load_table(args.data, encoding=args.encoding, sep=args.sep, ids=id_columns(args))
    if args.threshold is not None:
        col = args.outcome or "score"
        if col not in df.columns:
            raise DataError(f"{args.data}: no column {col!r} to compare with --pass-threshold (name it with --outcome)")
        num = pd.to_numeric(df[col], errors="coerce")
        if num.isna().any():
            raise DataError(f"{args.data}: column {col!r} holds non-numeric or missing values; --pass-threshold "
                            "needs numeric ratings")
        df = df.assign(correct=(num >= args.threshold).astype("int64"))
        args.outcome = "correct"
    return df


def run_judges(args: argparse.Namespace) -> int:
    from ..studies.judges import judge_agreement, judge_study, plan_judges
    from ._common import dump_json, emit, print_table, records

    data = _load(args)
    run = None if args.run and args.run.lower() == "none" else args.run
    cols = {"judge": args.judge, "outcome": args.outcome, "model": args.model, "item": args.item, "run": run}
    if args.agreement:
        res = judge_agreement(data, level=args.level, conf_level=args.conf_level, **cols)
        if args.json:
            dump_json({"command": args.command, "table": records(res.table), "pairs": records(res.pairs),
                       "level": res.level})
            return 0
        emit(args, res)
        print_table(args, res.pairs, title="Cohen's kappa of each pair of judges:")
        return 0
    study = judge_study(data, ref=args.ref, conf_level=args.conf_level, **cols)
    plan = None
    if args.se is not None:
        plan = plan_judges(study, se=args.se, cost_item=args.cost_item, cost_run=args.cost_run,
                           cost_judge=args.cost_judge, max_runs=args.max_runs, max_judges=args.max_judges,
                           judges="fixed" if args.fixed_judges else "random")
    if args.json:
        doc: dict[str, Any] = {"command": args.command}
        for name in ("bias", "means", "by_judge", "variance", "components"):
            doc[name] = records(getattr(study, name))
        doc["agreement"] = records(study.agreement.table)
        doc["agreement_pairs"] = records(study.agreement.pairs)
        doc["interaction"] = dict(study.interaction)
        doc["judge_share"] = study.judge_share
        doc["formulas"] = dict(study.formulas)
        if plan is not None:
            doc["plan"] = {"n_items": plan.n_items, "n_runs": plan.n_runs, "n_judges": plan.n_judges,
                           "cost": plan.cost, "se": plan.se, "target": plan.target, "judges": plan.judges,
                           "table": records(plan.table.head(10))}
        dump_json(doc)
        return 0
    for line in study.summary().header:
        print(line)
    for title, table in study.summary().tables.items():
        print_table(args, table, title=f"{title}:")
    print(f"\njudge share of the latent variance: {study.judge_share:.3f}")
    if plan is not None:
        print()
        for line in plan.summary().header:
            print(line)
        print_table(args, plan.table.head(10))
    return 0


def run_ppi(args: argparse.Namespace) -> int:
    methods = args.method
    from ..data.runs import load_table
    from ._common import id_columns
    from ..studies.ppi import ppi_difference, ppi_mean
    from ._common import emit

    by = split_list(args.by)
    run = None if args.run is not None and args.run.strip().lower() == "none" else args.run
    common: dict[str, Any] = {"judge": args.judge, "human": args.human, "item": args.item, "run": run,
                              "method": methods, "conf_level": args.conf_level, "missing": args.missing}
    judged = load_table(args.data, encoding=args.encoding, sep=args.sep, ids=id_columns(args))
    labelled = None if args.labelled is None else load_table(args.labelled, encoding=args.encoding, sep=args.sep,
                                                             ids=id_columns(args))
    if (args.a is None) != (args.b is None):
        raise SystemExit("give both --a and --b for a difference, or neither for the means")
    if args.a is not None:
        if len(by) != 1:
            raise SystemExit("a difference --a/--b needs exactly one --by column (the model column)")
        res = ppi_difference(judged, labelled, a=args.a, b=args.b, by=by[0], **common)
    else:
        res = ppi_mean(judged, labelled, by=by or None, **common)
    emit(args, res)
    return 0


def add_judges(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("judges", help="several LLM judges in one model: bias, interaction, agreement, variance",
                       description="Judge bias, the judge-by-model interaction test, agreement between "
                                   "judges and the judges' variance share from a long table of verdicts "
                                   "(one row per model, item, run and judge) or FastChat MT-bench "
                                   "single-answer judgment files; --se plans items x runs x judges.")
    p.add_argument("data", metavar="DATA", help="long table of verdicts (.csv, .parquet, .jsonl), MT-bench "
                   "judgment files (*_single.jsonl or a folder of them) or Inspect logs with several scorers "
                   "(each scorer a judge; --judge grader for the grader models)")
    p.add_argument("--judge", default="judge", help="judge column (default: judge)")
    p.add_argument("--outcome", default=None, help="verdict column (default: correct, else score)")
    p.add_argument("--model", default=None, help="model column (default: model)")
    p.add_argument("--item", default=None, help="item column (default: item)")
    p.add_argument("--run", default=None, help="run column (default: run if present; 'none' for one run)")
    p.add_argument("--pass-threshold", dest="threshold", type=finite_number, default=None, metavar="SCORE",
                   help="turn ratings into verdicts: correct = score >= SCORE")
    p.add_argument("--threshold", dest="threshold", type=finite_number, action=DeprecatedOption,
                   replacement="--pass-threshold SCORE (--threshold is fit's clmm threshold structure)")
    p.add_argument("--reference", "--ref", dest="ref", default=None, metavar="JUDGE",
                   help="reference judge for the bias contrasts (default: the mean judge)")
    p.add_argument("--agreement", action="store_true",
                   help="agreement only (for ordinal ratings; the ordinal mixed model is not in evalmix yet)")
    p.add_argument("--level", default="nominal", choices=["nominal", "ordinal", "interval"],
                   help="measurement level of the verdicts for --agreement (default: nominal)")
    p.add_argument("--conf-level", type=conf_level, default=0.95)
    p.add_argument("--se", type=positive_number, default=None, help="plan: target SE of every model's accuracy")
    p.add_argument("--cost-per-item", "--cost-item", dest="cost_item", type=finite_number, default=0.0,
                   help="plan: cost of one item (default 0)")
    p.add_argument("--cost-per-sample", "--cost-run", dest="cost_run", type=finite_number, default=1.0,
                   help="plan: cost of one generation (default 1)")
    p.add_argument("--cost-judge", type=finite_number, default=0.0, help="plan: cost of one judge call (default 0)")
    p.add_argument("--max-runs", type=positive_int, default=20)
    p.add_argument("--max-judges", type=positive_int, default=10)
    p.add_argument("--fixed-judges", action="store_true",
                   help="plan: the estimand averages over these judges only (default: judges drawn from a "
                        "population)")
    p.add_argument("--judges", dest="fixed_judges", choices=["random", "fixed"], action=DeprecatedOption,
                   convert=lambda v: v == "fixed",
                   replacement="--fixed-judges for fixed judges (random is the default); --judges COLUMN of "
                               "evalmix plan is now --judge COLUMN")
    add_text_arguments(p)
    add_output_arguments(p)
    p.set_defaults(handler=run_judges)


def add_ppi(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ppi", help="prediction-powered means of judge scores corrected by a few human labels",
                       description="PPI / PPI++ means per group (or the difference --a minus --b) of a human "
                                   "score, from judge scores on every response and human scores on a few "
                                   "(evalmix.ppi_mean, evalmix.ppi_difference).")
    p.add_argument("data", metavar="JUDGED", help="table of judged responses (.csv, .parquet, .jsonl)")
    p.add_argument("--labels", "--labelled", dest="labelled", default=None, metavar="FILE",
                   help="table of human-scored responses with the judge score (default: the human column "
                        "of JUDGED, empty where unlabelled)")
    p.add_argument("--judge-score", dest="judge", default="judge_score",
                   help="judge score column (default: judge_score)")
    p.add_argument("--judge", dest="judge", action=DeprecatedOption,
                   replacement="--judge-score COLUMN (--judge names the judge column elsewhere)")
    p.add_argument("--human", default="human_score", help="human score column (default: human_score)")
    p.add_argument("--by", default="model", help="comma-separated grouping columns (default: model)")
    p.add_argument("--item", default=None, help="item column (default: item)")
    p.add_argument("--run", default=None, help="run column (default: run if present; 'none' for one run)")
    p.add_argument("--a", default=None, help="difference: this level of --by ...")
    p.add_argument("--b", default=None, help="... minus this one")
    method = p.add_argument("--method", default=["ppi++"], type=choice_list(PPI_METHODS),
                            help="comma-separated methods among %(methods)s (default: ppi++)")
    method.methods = PPI_METHODS  # argparse fills %(methods)s from the action, at --help
    p.add_argument("--conf-level", type=conf_level, default=0.95)
    add_choice_argument(p, "--missing", default="raise", choices=MISSING_CHOICES)
    add_text_arguments(p)
    add_output_arguments(p)
    p.set_defaults(handler=run_ppi)


PARSERS = [add_judges, add_ppi]
