"""``evalmix arena``: Bradley-Terry ratings (Elo scale) of pairwise battles, with intervals, the tie
and first-position parameters, rank sets and tie groups."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.errors import DataError
from ._args import add_output_arguments, conf_level, positive_int, seed

if TYPE_CHECKING:
    import pandas as pd


def battles_of(args: argparse.Namespace) -> str | pd.DataFrame:
    """DATA as :func:`evalmix.bradley_terry` takes it: battle files and folders of them (FastChat's
    clean_battle JSON, lmarena's tables, MT-bench pairwise judgments), recognised by their content,
    read by their loader; any other table is read as it is, with the columns named on the command
    line."""
    from ..io.detect import FORMATS, detect_format, is_log_source, read_logs

    renamed = [f"--{flag.replace('_', '-')}" for flag in ("model_a", "model_b", "winner")
               if getattr(args, flag) != flag]
    renamed += [f"--{flag}" for flag in ("counts", "weights") if getattr(args, flag, None)]
    path = Path(args.data)
    if not is_log_source(path) or (renamed and path.is_file()):
        return str(path)  # a table, or a file whose columns the command line names: read as it is
    fmt = detect_format(path)
    if fmt not in ("arena", "mt-bench"):
        raise DataError(f"{path} holds {FORMATS[fmt][1]}, not pairwise battles; evalmix arena reads battle "
                        "tables (model_a, model_b, winner), FastChat clean_battle JSON, lmarena tables and MT-bench "
                        "*_pair.jsonl judgments")
    if renamed:
        raise DataError(f"{' and '.join(renamed)} name the columns of one battle table; the files under {path} "
                        f"are read as {fmt} battles, whose columns are model_a, model_b and winner")
    return read_logs(path, **({"kind": "pair"} if fmt == "mt-bench" else {}))


def run_arena(args: argparse.Namespace) -> int:
    from ..studies.arena import bradley_terry
    from ._common import dump_json, emit, records

    if args.latex and args.json:
        raise SystemExit("--latex and --json each print the leaderboard: give one")
    if args.ci != "bootstrap" and args.n_boot is not None:
        raise SystemExit("--n-boot is used with --ci bootstrap only")
    counts = [c.strip() for c in args.counts.split(",") if c.strip()] if args.counts else None
    if counts is not None and len(counts) not in (2, 3):
        raise SystemExit(f"--counts takes 2 or 3 comma-separated columns (wins of model A, wins of model B"
                         f"[, ties]), got {args.counts!r}")
    fit = bradley_terry(battles_of(args), model_a=args.model_a, model_b=args.model_b, winner=args.winner,
                        ties=args.ties, position=not args.no_position, cluster=args.cluster, ci=args.ci,
                        n_boot=args.n_boot or 1000, rng=args.seed, conf_level=args.conf_level,
                        reference=args.reference, scale=args.scale, rank_sets=not args.no_rank_sets,
                        counts=counts, weights=args.weights)
    if args.latex:
        print(fit.to_latex())
        return 0
    if args.json:
        doc = {"command": args.command} | fit.to_dict()
        doc["table"] = records(fit.to_frame())
        doc["params"] = records(fit.params)
        dump_json(doc)
        return 0
    emit(args, fit)
    for line in fit.summary().notes:
        print(line)
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "arena", help="Bradley-Terry (Elo) ratings of pairwise battles, with rank sets",
        description="Rate models from pairwise battles (model A vs model B: a winner or a tie) by "
                    "Bradley-Terry maximum likelihood, with Davidson ties and a first-shown advantage; "
                    "ratings on the Elo scale (400 points = odds of 10 to 1, mean 1000), sandwich "
                    "intervals clustered by --cluster (or the bootstrap), simultaneous rank sets and tie "
                    "groups.  DATA is a battle table (.csv, .tsv, .parquet, .jsonl or .json) with columns "
                    "model_a, model_b and winner ('model_a', 'model_b', 'tie', 'tie (bothbad)', 'both_bad', "
                    "or 'a', 'b'), or battle files found by their content (a file or a folder): FastChat's "
                    "clean_battle JSON, lmarena's human-preference tables, MT-bench *_pair.jsonl judgments.")
    p.add_argument("data", metavar="DATA", help="battle table, battle file or folder of them")
    p.add_argument("--model-a", default="model_a", help="column of the model shown first (default: model_a)")
    p.add_argument("--model-b", default="model_b", help="column of the model shown second (default: model_b)")
    p.add_argument("--winner", default="winner", help="outcome column (default: winner)")
    p.add_argument("--counts", default=None, metavar="WINS_A,WINS_B[,TIES]",
                   help="aggregated battles (BradleyTerry2's format): columns of the first model's wins, the "
                        "second model's wins and optionally the ties per row; --winner is not read")
    p.add_argument("--weights", default=None, metavar="COLUMN",
                   help="column of whole numbers: each battle row counts that many times")
    p.add_argument("--ties", choices=["davidson", "half", "drop"], default="davidson",
                   help="Davidson's tie model (default), half a win each (FastChat), or left out")
    p.add_argument("--no-position", action="store_true", help="do not fit the first-shown advantage")
    p.add_argument("--cluster", default=None, metavar="COLUMN",
                   help="cluster column (e.g. prompt) of the sandwich or the bootstrap")
    p.add_argument("--ci", choices=["sandwich", "hessian", "bootstrap"], default="sandwich",
                   help="interval: sandwich (default), inverse information, or percentile bootstrap")
    p.add_argument("--n-boot", type=positive_int, default=None, help="bootstrap replicates (default 1000)")
    p.add_argument("--seed", type=seed, default=1, help="bootstrap seed (default 1)")
    p.add_argument("--conf-level", type=conf_level, default=0.95, help="interval level (default 0.95)")
    p.add_argument("--reference", "--ref", dest="reference", default=None, metavar="MODEL",
                   help="model whose rating is fixed at 1000 (default: the mean rating is 1000)")
    p.add_argument("--scale", choices=["elo", "logit"], default="elo", help="rating scale (default: elo)")
    p.add_argument("--no-rank-sets", action="store_true",
                   help="skip the rank sets and tie groups (slow for hundreds of models)")
    p.add_argument("--latex", action="store_true", help="print the leaderboard as a LaTeX table")
    add_output_arguments(p)
    p.set_defaults(handler=run_arena)
