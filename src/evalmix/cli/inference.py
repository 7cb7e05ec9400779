"""Command-line subcommands ``evalmix fit`` and ``evalmix select``.

``evalmix fit DATA --formula F [--emmeans model --by language --contrast pairwise --adjust holm]
[--anova] [--control KEY=VALUE ...] [--json]`` fits one GLMM and prints its coefficients, and optionally marginal means,
their contrasts and type-III Wald tests.  ``evalmix select DATA --formula F1 --formula F2 ...
[--json]`` fits several formulas to the same rows and compares them by BIC, AIC and
likelihood-ratio tests.

:func:`add_fit_parser` and :func:`add_select_parser` register the subcommands on an argparse
``subparsers`` object (DATA and the column-role options are those of every evalmix command); each
sets ``handler`` to the function that runs it and returns the exit code.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import sys
import textwrap
from typing import TYPE_CHECKING, Any, Callable, TextIO

from ..errors import FormulaError
from ._args import WIDTH, OwnedChoices, add_choice_argument, add_data_arguments, conf_level

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["PARSERS", "add_fit_parser", "add_select_parser", "run_fit", "run_select"]


def _fitter() -> Callable[..., Any]:
    """The GLMM fitting function (``evalmix.glmer``)."""
    from ..glmm import glmer

    return glmer


def _print_table(args: argparse.Namespace, title: str, table: pd.DataFrame, out: TextIO) -> None:
    from ._common import print_table

    print_table(args, table, out, title=title)


def _wrapped(text: str, out: TextIO, indent: str = "") -> None:
    print(textwrap.fill(text, WIDTH, initial_indent=indent, subsequent_indent=indent + "  "), file=out)


def _fit_summary(fit: Any) -> dict[str, Any]:
    from ._common import records

    return {"formula": str(fit.formula), "nobs": int(fit.nobs), "df": int(fit.df),
            "loglik": float(fit.loglik), "aic": float(fit.aic), "bic": float(fit.bic),
            "vcov_method": str(getattr(fit, "vcov_method", "glm")),
            "coefficients": records(fit.coef_table()),
            # the settings that differ from GlmerControl's defaults (--control)
            "control": (fit.control.changed() if getattr(fit, "control", None) is not None
                        else None),
            # divergent estimates are null in the tables; which way they diverge is here
            "separation": (fit.separation.to_dict() if getattr(fit, "separation", None) is not None
                           else None)}


def add_fit_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``evalmix fit``.

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="evalmix")
    >>> _ = add_fit_parser(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["fit", "runs.csv", "--formula", "correct ~ model + (1|item)",
    ...                           "--emmeans", "model"])
    >>> args.adjust
    'holm'
    """
    p = subparsers.add_parser(
        "fit", help="fit a GLMM; optionally marginal means, contrasts and type-III tests",
        description="Fit a binomial GLMM (lme4 syntax) and report what an analyst reads next: "
                    "marginal means, adjusted contrasts, type-III Wald tests.")
    add_data_arguments(p)
    p.add_argument("--formula", required=True,
                   help="e.g. 'correct ~ model + language + (1|problem_id) + (1|problem_id:run)'")
    p.add_argument("--emmeans", metavar="FACTOR", nargs="+",
                   help="factor(s) whose marginal means to report")
    p.add_argument("--by", metavar="FACTOR", nargs="+", help="conditioning factor(s)")
    p.add_argument("--type", choices=["link", "response"], default="link",
                   help="scale of the marginal means (default: link)")
    p.add_argument("--contrast", choices=["pairwise", "revpairwise", "trt.vs.ctrl"],
                   help="contrasts among the marginal means")
    p.add_argument("--ref", help="control level for --contrast trt.vs.ctrl")
    add_choice_argument(p, "--adjust", choices=OwnedChoices("evalmix.methods", "ADJUST_METHODS"), default="holm",
                        help="multiplicity adjustment within each --by group (default: holm)")
    p.add_argument("--conf-level", type=conf_level, default=0.95)
    p.add_argument("--anova", action="store_true", help="type-III Wald chi-square tests")
    add_choice_argument(p, "--vcov", choices=OwnedChoices("evalmix.methods", "VCOV_METHODS"), default="hessian",
                        help="standard errors: hessian (as lme4 1.1-31 reports them; default), "
                             "hessian_exact (exact Laplace deviance) or rx (variance parameters known)")
    p.add_argument("--link", choices=["logit", "probit", "cloglog"], default="logit",
                   help="binomial link (R: family = binomial(link = ...); default logit)")
    p.add_argument("--nagq", type=_nagq, default=1, metavar="N",
                   help="adaptive Gauss-Hermite points (lme4's nAGQ; 0 is lme4's fast first "
                        "stage; > 1 needs one scalar random-effect term)")
    p.add_argument("--weights", metavar="COLUMN", help="column of prior weights (R: weights =)")
    p.add_argument("--offset", metavar="COLUMN", help="column added to the linear predictor")
    p.add_argument("--contrasts", metavar="FACTOR=CODING", nargs="+",
                   help="e.g. model=contr.sum (contr.treatment, contr.sum, contr.poly, "
                        "contr.helmert)")
    p.add_argument("--fixef-prior", metavar="PRIOR", default=None,
                   help="normal prior on the fixed effects, e.g. 'normal(0, 2.5)' (blme::bglmer's "
                        "remedy for separation)")
    p.add_argument("--control", metavar="KEY=VALUE", action="append", default=None,
                   help="a setting of the fit (evalmix.GlmerControl, R: glmerControl), e.g. "
                        "maxiter=1000 or grad_tol=1e-3; repeat for several")
    p.set_defaults(handler=run_fit)
    return p


def _control(items: list[str]) -> Any:
    """``--control KEY=VALUE ...`` as a GlmerControl (a ValueError naming the field otherwise)."""
    from ..glmm import GlmerControl

    names = [f.name for f in dataclasses.fields(GlmerControl)]
    settings: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise ValueError(f"--control takes KEY=VALUE (e.g. maxiter=1000), got {item!r}")
        key = key.strip()
        if key not in names:  # one suggestion, not the list of every setting
            close = difflib.get_close_matches(key, names, n=3, cutoff=0.6)
            hint = (f"did you mean {' or '.join(repr(c) for c in close)}?" if close else
                    f"help(evalmix.GlmerControl) lists its {len(names)} settings")
            raise ValueError(f"--control {key}=...: GlmerControl has no field {key!r}; {hint}")
        settings[key] = value.strip()
    return GlmerControl.from_text(settings)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer >= 1")
    return value


def _nagq(text: str) -> int:
    """lme4's ``nAGQ``: 0 (first stage), 1 (Laplace) or more points."""
    return 0 if text.strip() == "0" else _positive_int(text)


def _fit_options(args: argparse.Namespace) -> dict[str, Any]:
    """The R-side arguments of ``evalmix fit`` (only those given, so other fitters still work)."""
    opts: dict[str, Any] = {}
    if getattr(args, "link", "logit") != "logit":
        opts["link"] = args.link
    if getattr(args, "nagq", 1) != 1:
        opts["nAGQ"] = args.nagq
    for name in ("weights", "offset", "fixef_prior"):
        if getattr(args, name, None):
            opts[name] = getattr(args, name)
    if getattr(args, "contrasts", None):
        pairs = {}
        for item in args.contrasts:
            factor, sep, coding = item.partition("=")
            if not sep or not factor or not coding:
                raise FormulaError(f"--contrasts takes FACTOR=CODING (e.g. model=contr.sum), "
                                   f"got {item!r}")
            pairs[factor.strip()] = coding.strip()
        opts["contrasts"] = pairs
    if getattr(args, "control", None):
        opts["control"] = _control(args.control)
    return opts


def run_fit(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run ``evalmix fit`` from parsed arguments; returns the exit code."""
    from ..emmeans import contrast, emmeans
    from ..selection import anova
    from ._common import dump_json, load_data, result_doc

    out = out or sys.stdout
    if (args.contrast or args.by) and not args.emmeans:
        raise SystemExit("evalmix fit: --contrast and --by need --emmeans FACTOR")
    data = load_data(args)
    fit = _fitter()(args.formula, data, vcov_method=args.vcov, **_fit_options(args))
    result: dict[str, Any] = {"fit": _fit_summary(fit)}
    emm = None
    if args.emmeans:
        emm = emmeans(fit, args.emmeans, by=args.by, type=args.type,
                      conf_level=args.conf_level)
        result["emmeans"] = result_doc(emm)
    if args.contrast and emm is not None:  # --contrast without --emmeans is refused above
        con = contrast(emm, args.contrast, ref=args.ref, adjust=args.adjust,
                       conf_level=args.conf_level)
        result["contrasts"] = result_doc(con)
    aov = anova(fit) if args.anova else None
    if aov is not None:
        result["anova"] = result_doc(aov)
    if args.json:
        dump_json(result, out)
        return 0
    info = result["fit"]
    if hasattr(fit, "lme4_text"):  # the fit as lme4 prints a merMod, then the Wald table
        print(fit.lme4_text(), file=out)
        print(f"\n{fit.wald_text(max_rows=None)}", file=out)
    else:
        print(f"{info['formula']}\nnobs = {info['nobs']}  df = {info['df']}  "
              f"logLik = {info['loglik']:.3f}  AIC = {info['aic']:.3f}  BIC = {info['bic']:.3f}",
              file=out)
        _print_table(args, "Fixed effects", fit.coef_table(), out)
    if emm is not None:
        _print_table(args, f"Marginal means ({args.type} scale)", emm.to_frame(), out)
    if args.contrast:
        _print_table(args, f"Contrasts (scale: {con.scale})", con.to_frame(), out)
        for note in con.notes:
            print(note, file=out)
    if aov is not None:
        _print_table(args, "Type-III Wald chi-square tests", aov.to_frame(), out)
    return 0


def add_select_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``evalmix select``.

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="evalmix")
    >>> _ = add_select_parser(parser.add_subparsers(dest="command"))
    >>> parser.parse_args(["select", "runs.csv", "--formula", "y ~ a + (1|g)",
    ...                    "--formula", "y ~ a + b + (1|g)"]).formula
    ['y ~ a + (1|g)', 'y ~ a + b + (1|g)']
    """
    p = subparsers.add_parser(
        "select", help="compare GLMM formulas by BIC, AIC and likelihood-ratio tests",
        description="Fit each formula to the same rows and compare them as lme4's anova() "
                    "does, with BIC weights and a Kass & Raftery verdict.")
    add_data_arguments(p)
    p.add_argument("--formula", action="append", required=True,
                   help="a formula; give --formula once per model (two or more)")
    p.set_defaults(handler=run_select)
    return p


def run_select(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run ``evalmix select`` from parsed arguments; returns the exit code."""
    import numpy as np
    import pandas as pd

    from ..selection import compare_models
    from ._common import dump_json, load_data, result_doc

    out = out or sys.stdout
    if len(args.formula) < 2:
        raise SystemExit("evalmix select: give at least two --formula")
    data = load_data(args)
    fit = _fitter()
    fits = {f: fit(f, data) for f in args.formula}
    comparison = compare_models(fits)
    if args.json:
        dump_json(result_doc(comparison), out)
        return 0
    # formulas are long: the tables name the models m1, m2 ... in the order given
    short = {f: f"m{i + 1}" for i, f in enumerate(args.formula)}
    nobs = int(next(iter(fits.values())).nobs)
    print(f"Models compared (each fitted to the same {nobs} rows):", file=out)
    for f, label in short.items():
        _wrapped(f"{label}  {f}", out, "  ")
    table = comparison.to_frame().drop(columns=["lrt_vs", "nested", "statistic", "df_diff", "p_value"],
                                       errors="ignore")
    table["name"] = table["name"].map(short)
    _print_table(args, "Models by BIC", table.rename(columns={"name": "model"}), out)
    lrt = comparison.lrt.copy()
    lrt["name"] = lrt["name"].map(short)
    lrt["lrt_vs"] = lrt["lrt_vs"].map(lambda v: short.get(v, "") if isinstance(v, str) else "")
    lrt["nested"] = lrt["nested"].map(lambda v: "" if v is None or pd.isna(v) else "yes" if v else "no")
    lrt = lrt.rename(columns={"name": "model", "lrt_vs": "against"})
    lrt = lrt[["model", "npar", "loglik", "deviance", "against", "nested", "statistic", "df_diff", "p_value"]]
    _print_table(args, "Likelihood-ratio tests (lme4 order: each model against the one before it)", lrt, out)
    print("", file=out)
    for row in comparison.lrt.itertuples(index=False):
        if not isinstance(row.lrt_vs, str):
            continue
        a, b = short[row.name], short[row.lrt_vs]
        if not isinstance(row.nested, (bool, np.bool_)):
            _wrapped(f"{a} against {b}: nesting cannot be checked for these fits; the test applies only "
                     "if one model is a special case of the other.", out)
        elif row.nested:
            _wrapped(f"{a} against {b}: nested (the fixed and random terms of {b} are among those of "
                     f"{a}, on the same rows), so the likelihood-ratio test applies.", out)
        else:
            _wrapped(f"{a} against {b}: not nested (neither model's terms are a subset of the other's), "
                     "so the likelihood-ratio test does not apply; compare them by BIC.", out)
    verdict = comparison.verdict()
    for f, label in sorted(short.items(), key=lambda kv: -len(kv[0])):
        verdict = verdict.replace(f, label)
    _wrapped(verdict[:1].upper() + verdict[1:] + ".", out)
    return 0


PARSERS = [add_fit_parser, add_select_parser]
