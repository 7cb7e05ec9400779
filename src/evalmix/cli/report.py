"""``evalmix report``: every table and figure of a study, as an HTML page plus LaTeX, Markdown, PNG
and PDF files."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import DataError
from ._args import (DeprecatedOption, add_data_arguments, conf_level, finite_number, positive_int, positive_number,
                    seed)

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["add_parser", "run"]


def _read(args: argparse.Namespace) -> pd.DataFrame:
    from ..io import read_inspect, read_lm_eval
    from ._common import load_data

    path = Path(args.data)
    logs = args.logs
    if logs == "auto":
        is_eval = path.suffix == ".eval" or (path.is_dir() and any(path.glob("**/*.eval")))
        logs = "inspect" if is_eval else "table"
    if logs == "inspect":  # --score names the scorer of any logs, as for every command
        return read_inspect(path, args.scorer or args.score)
    if logs == "lm-eval":
        metric = args.metric or args.score
        if not metric:
            raise DataError("--logs lm-eval needs --metric (e.g. exact_match)")
        return read_lm_eval(path, metric)
    return load_data(args, any_outcome=True)  # ratings and scores are fitted as what they are


def _plain(value: Any) -> Any:
    """Read-only mappings and tuples of a result -> JSON-ready dicts and lists."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def run(args: argparse.Namespace) -> int:
    data = _read(args)  # first: a table that cannot be read is named before the plotting imports
    import matplotlib

    from ..reporting import report
    from ._common import dump_json, records

    matplotlib.use("Agg")  # files only: never open a window
    rep = report(data, args.out, reference=args.reference, slice=args.slice,
                 candidates=args.candidate_formula, formula=args.formula, bayes=args.bayes, rng=args.seed,
                 conf_level=args.conf_level, n_boot=args.n_boot, plan_se=args.plan_se,
                 cost_item=args.cost_item, cost_run=args.cost_run, title=args.title, judge=args.judge,
                 labels=args.labels, human=args.human, battles=args.battles, battle_cluster=args.battle_cluster)
    index = Path(args.out) / "index.html"
    if args.json:
        doc = {"command": "report", "html": str(index), "options": _plain(rep.options),
               "contents": records(rep.to_frame())}
        dump_json(doc)
    else:
        n_tab, n_fig = len(rep.tables), len(rep.figures)
        print(f"wrote {index} ({n_tab} tables as .tex/.md/.csv, {n_fig} figures as .png/.pdf)")
        for s in rep.sections:
            if s.skipped:
                print(f"  {s.title}: {s.skipped}")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report", help="every table and figure of the study: an HTML page, LaTeX/Markdown tables, "
                       "PNG/PDF figures",
        description="Run the whole analysis (accuracy, model selection, odds ratios, marginal means by "
                    "slice, reliability, rank instability, SE against runs, robustness) and write "
                    "OUT/index.html, OUT/tables/*.{tex,md,csv} and OUT/figures/*.{png,pdf}. An outcome "
                    "that is not 0/1 (--outcome rating: judge ratings, continuous scores) is fitted by "
                    "clmm or lmer, and overdispersed k-of-n counts by a beta-binomial model.")
    add_data_arguments(p, output_file=False)  # -o is the report's folder
    p.add_argument("-o", "--out", required=True,
                   help="output folder (created if needed); each file in it is replaced only once complete")
    p.add_argument("--logs", choices=["auto", "table", "lm-eval", "inspect"], default="auto",
                   help="DATA is a runs table, lm-evaluation-harness samples or Inspect logs "
                        "(default: auto, Inspect for .eval files, else a table)")
    p.add_argument("--metric", default=None, help="lm-evaluation-harness metric (with --logs lm-eval)")
    p.add_argument("--scorer", default=None, help="Inspect scorer (default: the only one)")
    p.add_argument("--reference", "--ref", dest="reference", default=None, metavar="MODEL",
                   help="model the odds ratios are taken against (default: the most accurate)")
    p.add_argument("--slice", default=None,
                   help="slice for marginal means, heatmap and robustness (default: the first item "
                        "attribute, e.g. domain)")
    p.add_argument("--candidate-formula", dest="candidate_formula", action="append", default=None,
                   metavar="F", help="fixed part of a candidate model for BIC selection (repeat; default: "
                                     "the paper's candidate set)")
    # --candidate names the candidate model in gate; here it was the formula's old spelling
    p.add_argument("--candidate", dest="candidate_formula", action=DeprecatedOption, append=True,
                   replacement="--candidate-formula F")
    p.add_argument("--formula", default=None,
                   help="fixed part of the model behind the odds ratios (default: model x every "
                        "condition)")
    p.add_argument("--bayes", action="store_true",
                   help="add posterior rank probabilities (needs the bayes extra; slow)")
    p.add_argument("--seed", type=seed, default=0, help="seed of the bootstrap and sampler (default: 0)")
    p.add_argument("--conf-level", type=conf_level, default=0.95)
    p.add_argument("--n-boot", type=positive_int, default=1000, help="bootstrap replicates for rank intervals")
    p.add_argument("--plan-se", type=positive_number, default=0.03, help="target SE per slice for the planner")
    p.add_argument("--cost-per-item", "--cost-item", dest="cost_item", type=finite_number, default=10.0,
                   help="cost of one item for the planner (default 10)")
    p.add_argument("--cost-per-sample", "--cost-run", dest="cost_run", type=finite_number, default=1.0,
                   help="cost of one answer for the planner (default 1)")
    p.add_argument("--title", default=None, help="page title")
    p.add_argument("--judge", default=None,
                   help="column naming the judge of each verdict: adds the judges section (default: a "
                        "column called judge)")
    p.add_argument("--labels", default=None, metavar="FILE",
                   help="human scores of some responses (model, item, run, --human): adds PPI++ means to "
                        "the judges section")
    p.add_argument("--human", default="human", help="human score column of --labels (default: human)")
    p.add_argument("--battles", default=None, metavar="FILE",
                   help="arena battles (model_a, model_b, winner): adds Bradley-Terry ratings and rank sets")
    p.add_argument("--battle-cluster", default=None,
                   help="column of --battles the sandwich clusters on (usually the prompt)")
    p.set_defaults(handler=run)
