"""``evalmix gate``: a pre-registered, multi-metric, anytime-valid release verdict of a candidate
against a baseline, with an exit code a CI pipeline can act on.

Exit codes: 0 PASS, 1 FAIL, 3 INCONCLUSIVE, 2 a usage or data error (as every command), and 4 an
internal error (a bug: Python would exit 1, which a pipeline would read as FAIL).  With ``--shadow``
the verdict is reported at every look and the exit code is 0 whatever it is (a gate watched before
it is enforced).
"""

from __future__ import annotations

import argparse
import sys

from ._args import WHERE_HELP, add_data_arguments, seed

#: The verdicts' exit codes (2 stays the usage or data error of every command).
EXIT_CODES = {"PASS": 0, "FAIL": 1, "INCONCLUSIVE": 3}
#: An unexpected exception: not 1, which is FAIL.
INTERNAL_ERROR = 4


def run_gate(args: argparse.Namespace) -> int:
    import traceback

    from . import USER_ERRORS

    try:
        return _gate(args)
    except (*USER_ERRORS, SystemExit):
        raise
    except Exception:  # a bug must not read as a FAIL verdict
        traceback.print_exc()
        print(f"evalmix gate: internal error (exit code {INTERNAL_ERROR})", file=sys.stderr)
        return INTERNAL_ERROR


def _gate(args: argparse.Namespace) -> int:
    from ..studies.gate import gate, read_rule
    from ._common import dump_json, load_data, parse_where, print_table, records, result_doc

    rule = read_rule(args.rule)  # a bad rule is reported before DATA is read
    if args.successes or args.trials:
        raise SystemExit("evalmix gate: the rule names each metric's columns; for k-of-n counts write "
                         "column = SUCCESSES and trials = TRIALS in the metric, not --successes/--trials")
    data = load_data(args, scores=True)
    if not data.attrs.get("evalmix") and args.outcome in data.columns:
        # a plain table: --outcome (default correct) is the 0/1 or partial-credit outcome, bounded in [0, 1]
        data.attrs["evalmix"] = {"outcome": args.outcome}
    for col, values in (parse_where(args.where, data, "gate") or {}).items():
        data = data[data[col].isin(values)]
    run = None if args.run in (None, "none") else args.run  # an item's runs are averaged either way
    result = gate(data, args.baseline, args.candidate, rule, model=args.model, item=args.item, run=run,
                  order=args.order, rng=args.seed, shadow=args.shadow)
    code = 0 if args.shadow else EXIT_CODES[result.verdict]
    if args.json:
        doc = {"command": "gate", **result_doc(result)}
        doc["path"] = records(result.path)
        dump_json(doc)
        return code
    print(f"verdict: {result.verdict}" + (" (shadow: nothing was stopped, exit code 0)" if args.shadow else ""))
    for line in result.summary().header:
        print(line)
    print_table(args, result.to_frame())
    print("MDE (80% power, distance from the margin): "
          + ", ".join(f"{k} {v:.4g}" for k, v in result.mde.items()))
    if args.shadow:
        print_table(args, result.path, title="What the gate would have decided at each look:")
    return code


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("gate", help="pre-registered release gate: PASS, FAIL or INCONCLUSIVE over several metrics",
                       description="Compare a candidate with a baseline on the same items under a rule fixed "
                                   "in advance (a TOML file: alpha, looks, metrics with their margins and tests). "
                                   "Every metric gets an anytime-valid confidence sequence, paired and clustered "
                                   "by item; the family-wise error over metrics and looks is at most alpha. "
                                   "Exit codes: 0 PASS, 1 FAIL, 3 INCONCLUSIVE, 2 usage or data error.")
    add_data_arguments(p)
    p.add_argument("--baseline", required=True, help="the baseline model")
    p.add_argument("--candidate", required=True, help="the candidate model (estimates are candidate - baseline)")
    p.add_argument("--rule", required=True, metavar="RULE.toml", help="the pre-registered rule (TOML)")
    p.add_argument("--shadow", action="store_true",
                   help="report what would have been decided at each look, stop nothing, exit 0")
    p.add_argument("--order", default=None, help="column giving the arrival order (default: table order)")
    p.add_argument("--seed", type=seed, default=None, help="shuffle the items with this seed first")
    p.add_argument("--where", action="append", default=[], metavar="COLUMN=VALUE", help=WHERE_HELP)
    p.set_defaults(handler=run_gate, output_codes=(1, 3))
