"""``evalmix drift`` (did a model or its judge change between two waves of the same items?) and
``evalmix contamination`` (an advantage on pre-cutoff items beyond their difficulty)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ._args import (OwnedChoices, add_choice_argument, add_data_arguments, conf_level, positive_number,
                    split_list)


def _anchors(text: str | None) -> list[str] | None:
    """Anchor ids: a comma-separated list, or a file with one id per line."""
    if text is None:
        return None
    path = Path(text)
    if path.is_file():
        return [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return split_list(text)


def _print_notes(args: argparse.Namespace, notes: tuple[str, ...]) -> None:
    if not args.json:
        for line in notes:
            print(line)


def run_drift(args: argparse.Namespace) -> int:
    import pandas as pd

    from ..studies.drift import drift
    from ._common import emit, load_data

    def wave(path: str) -> pd.DataFrame:
        return load_data(argparse.Namespace(**{**vars(args), "data": path}), any_outcome=True)

    result = drift(wave(args.data), wave(args.after), anchors=_anchors(args.anchors), margin=args.margin,
                   judge=None if args.rejudged is None else wave(args.rejudged), conf_level=args.conf_level,
                   anytime=args.anytime, method=args.method)
    emit(args, result, {"margin": result.margin, "conf_level": result.conf_level, "anytime": result.anytime}
         if args.json else None)
    _print_notes(args, result.summary().notes)
    return 0


def run_contamination(args: argparse.Namespace) -> int:
    from ..studies.contamination import contamination_test
    from ._common import emit, load_data

    data = load_data(args)
    result = contamination_test(data, control=args.control, conf_level=args.conf_level, adjust=args.adjust)
    emit(args, result, {"formula": result.formula, "adjust": result.adjust, "conf_level": result.conf_level}
         if args.json else None)
    _print_notes(args, result.summary().notes)
    return 0


def add_drift(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("drift", help="per-model change between two waves on anchor items, with a TOST verdict",
                       description="The change of each model between two waves of the same items (BEFORE and "
                                   "AFTER: runs tables or harness logs), on anchor items or every shared item: "
                                   "the mean over items of after - before, its interval, and an equivalence "
                                   "(TOST) verdict at --margin. --rejudged FILE (the first wave re-scored by the "
                                   "new judge) splits the change into judge drift and system change.")
    add_data_arguments(p)
    for action in p._actions:  # the first table is the first wave
        if action.dest == "data":
            action.metavar, action.help = "BEFORE", "runs table (or harness logs) of the first wave"
    p.add_argument("after", metavar="AFTER", help="runs table (or harness logs) of the second wave")
    p.add_argument("--anchors", default=None, metavar="IDS",
                   help="anchor item ids, comma-separated, or a file with one id per line (default: every "
                        "item both waves share)")
    p.add_argument("--margin", type=positive_number, default=0.02,
                   help="equivalence margin on the score scale (default 0.02)")
    p.add_argument("--rejudged", default=None, metavar="FILE",
                   help="the first wave's answers re-scored by the new judge")
    p.add_argument("--conf-level", type=conf_level, default=0.95)
    p.add_argument("--anytime", action="store_true",
                   help="anytime-valid confidence sequences: valid when the command is rerun as canary runs "
                        "add items")
    add_choice_argument(p, "--method", default="empirical_bernstein",
                        choices=OwnedChoices("evalmix.core.methods", "CS_METHODS"),
                        help="confidence sequence of --anytime")
    p.set_defaults(handler=run_drift)


def add_contamination(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("contamination", help="per-model advantage on pre-cutoff items beyond item difficulty",
                       description="A logistic GLMM with a model:exposed interaction, item random effects and "
                                   "a fixed effect per publication era: each model's log-odds advantage on the "
                                   "items published before its training cutoff, one-sided p-values adjusted "
                                   "over models. --control names the column that is true where the item is a "
                                   "control item (post-cutoff) for the model of that row.")
    add_data_arguments(p)
    p.add_argument("--control", default="post_cutoff", metavar="COLUMN",
                   help="True/False column: the item is post-cutoff for that row's model (default post_cutoff)")
    p.add_argument("--conf-level", type=conf_level, default=0.95)
    add_choice_argument(p, "--adjust", choices=OwnedChoices("evalmix.core.methods", "ADJUST_METHODS"), default="holm",
                        help="p-value adjustment over models (default holm; a p.adjust method)")
    p.set_defaults(handler=run_contamination)
