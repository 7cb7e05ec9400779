"""Command-line subcommands ``evalmix fit`` and ``evalmix select``.

``evalmix fit DATA --formula F [--family binomial|gaussian|ordinal|beta|betabinomial] [--emmeans model
--by language --contrast pairwise --adjust holm] [--anova] [--control KEY=VALUE ...] [--json]`` fits one
mixed model (a binomial GLMM by default; ``lmer``, ``clmm`` or ``glmmtmb`` for the other families) and
prints its coefficients, and optionally marginal means, their contrasts and type-III tests.  ``evalmix select DATA --formula F1 --formula F2 ...
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

from ..core.errors import FormulaError
from ._args import (CONTRAST_FAMILIES, WIDTH, OwnedChoices, add_choice_argument, add_data_arguments, conf_level,
                    positive_int)

if TYPE_CHECKING:
    import pandas as pd

    from ..glmm import GlmerResult
    from ..lmm import LmerResult
    from ..ordinal import ClmmResult
    from ..tmb import GlmmTMBResult

__all__ = ["FAMILIES", "PARSERS", "add_fit_parser", "add_select_parser", "fit_family", "load_scores", "run_fit",
           "run_select"]


def _fitter() -> Callable[..., Any]:
    """The GLMM fitting function (``evalmix.glmer``)."""
    from ..glmm import glmer

    return glmer


#: ``--family`` values: binomial (``glmer``), gaussian (``lmer``), ordinal (``clmm``), beta and
#: betabinomial (``glmmtmb``).
FAMILIES = ("binomial", "gaussian", "ordinal", "beta", "betabinomial")

# options of `evalmix fit` read by some families only: dest -> (the flag as written, the families);
# each defaults to None so that one given for another family is a user error, not silently ignored
_FAMILY_OPTIONS: dict[str, tuple[str, tuple[str, ...]]] = {
    "vcov": ("--vcov", ("binomial",)),
    "link": ("--link", ("binomial", "ordinal")),
    "nagq": ("--nagq", ("binomial",)),
    "weights": ("--weights", ("binomial", "betabinomial")),
    "offset": ("--offset", ("binomial",)),
    "contrasts": ("--contrasts", ("binomial", "gaussian", "beta", "betabinomial")),
    "fixef_prior": ("--fixef-prior", ("binomial",)),
    "control": ("--control", ("binomial",)),
    "reml": ("--reml/--ml", ("gaussian",)),
    "ddf": ("--ddf", ("gaussian",)),
    "threshold": ("--threshold", ("ordinal",)),
    "squeeze": ("--squeeze", ("beta",)),
}
# what each family's fit is called in messages
_ENGINE = {"binomial": "glmer", "gaussian": "lmer", "ordinal": "clmm", "beta": "glmmtmb",
           "betabinomial": "glmmtmb"}


def _check_family_options(args: argparse.Namespace, command: str = "fit") -> None:
    """A one-line error naming an option given for a family that does not read it."""
    family = getattr(args, "family", "binomial")
    for dest, (flag, families) in _FAMILY_OPTIONS.items():
        if getattr(args, dest, None) is not None and family not in families:
            raise SystemExit(f"evalmix {command}: {flag} does not apply to --family {family} "
                             f"({_ENGINE[family]}); it applies to --family {' or '.join(families)}")
    if family == "ordinal" and getattr(args, "link", None) == "cloglog":
        raise SystemExit(f"evalmix {command}: --link cloglog does not apply to --family ordinal (clmm): "
                         "its links are logit and probit")
    if family != "binomial":
        # the formula names the columns of these fits; the runs-table roles are not read
        for flag, dest, default in (("--successes", "successes", None), ("--trials", "trials", None),
                                    ("--outcome", "outcome", "correct")):
            if getattr(args, dest, default) != default:
                raise SystemExit(f"evalmix {command}: {flag} does not apply to --family {family}: the "
                                 f"formula names the response (e.g. 'rating ~ model + (1|item)')")


def _print_table(args: argparse.Namespace, title: str, table: pd.DataFrame, out: TextIO) -> None:
    from ._common import print_table

    print_table(args, table, out, title=title)


def _wrapped(text: str, out: TextIO, indent: str = "") -> None:
    print(textwrap.fill(text, WIDTH, initial_indent=indent, subsequent_indent=indent + "  "), file=out)


def _table(table: Any) -> pd.DataFrame:
    """A result's table as a frame (a coefficient table, or a frame already)."""
    import pandas as pd

    return table if isinstance(table, pd.DataFrame) else table.to_frame()


def _coef_frame(fit: Any, args: argparse.Namespace) -> pd.DataFrame:
    """The fit's coefficient table (t tests with ``--ddf`` df for a linear mixed model)."""
    family = getattr(args, "family", "binomial")
    if family == "gaussian":
        return fit.coef_table(args.ddf, conf_level=args.conf_level).to_frame()
    if family == "binomial":
        return _table(fit.coef_table())
    return fit.coef_table(conf_level=args.conf_level).to_frame()


def _fit_summary(fit: Any, args: argparse.Namespace | None = None) -> dict[str, Any]:
    from ._common import records

    family = getattr(args, "family", "binomial")
    doc = {"formula": str(fit.formula), "nobs": int(fit.nobs), "df": int(fit.df),
           "loglik": float(fit.loglik), "aic": float(fit.aic), "bic": float(fit.bic)}
    if family != "binomial":
        assert args is not None
        doc.update({"family": family, "engine": _ENGINE[family], "converged": bool(fit.converged),
                    "coefficients": records(_coef_frame(fit, args)),
                    "varcorr": records(fit.varcorr)})
        if family == "gaussian":
            doc.update({"reml": bool(fit.reml), "sigma": float(fit.sigma),
                        "ddf": _ddf_name(args.ddf), "singular": bool(fit.singular)})
        elif family == "ordinal":
            doc.update({"link": fit.link, "threshold": fit.threshold,
                        "levels": [str(v) for v in fit.levels]})
        else:
            doc.update({"dispersion": float(fit.dispersion), "link": fit.link})
        return doc
    return {**doc,
            "vcov_method": str(getattr(fit, "vcov_method", "glm")),
            "coefficients": records(_table(fit.coef_table())),
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
    _add_family_argument(p)
    p.add_argument("--emmeans", metavar="FACTOR", nargs="+", type=_factors, action=_Extend,
                   help="factor(s) whose marginal means to report (space- or comma-separated)")
    p.add_argument("--by", metavar="FACTOR", nargs="+", type=_factors, action=_Extend,
                   help="conditioning factor(s) (space- or comma-separated, as --by of every command)")
    p.add_argument("--type", choices=["link", "response"], default="link",
                   help="scale of the marginal means (default: link)")
    add_choice_argument(p, "--contrast", choices=CONTRAST_FAMILIES,
                        help="contrasts among the marginal means: a family registered with "
                             "evalmix.register_contrast (%(choices)s)")
    p.add_argument("--reference", "--ref", dest="ref", metavar="LEVEL",
                   help="control level for --contrast trt.vs.ctrl")
    add_choice_argument(p, "--adjust", choices=OwnedChoices("evalmix.core.methods", "ADJUST_METHODS"), default="holm",
                        help="multiplicity adjustment within each --by group (default: holm)")
    p.add_argument("--conf-level", type=conf_level, default=0.95)
    p.add_argument("--anova", action="store_true",
                   help="type-III tests: Wald chi-square; F with --ddf df for --family gaussian")
    add_choice_argument(p, "--vcov", choices=OwnedChoices("evalmix.core.methods", "VCOV_METHODS"), default=None,
                        help="binomial: standard errors: hessian (as lme4 1.1-31 reports them; default), "
                             "hessian_exact (exact Laplace deviance) or rx (variance parameters known)")
    p.add_argument("--link", choices=["logit", "probit", "cloglog"], default=None,
                   help="binomial link (R: family = binomial(link = ...); default logit); ordinal: "
                        "logit (default) or probit (R: clmm(link = ))")
    reml = p.add_mutually_exclusive_group()
    reml.add_argument("--reml", dest="reml", action="store_const", const=True, default=None,
                      help="gaussian: fit by REML (the default, as lmer)")
    reml.add_argument("--ml", dest="reml", action="store_const", const=False,
                      help="gaussian: fit by maximum likelihood (lmer(REML = FALSE))")
    p.add_argument("--ddf", choices=["satterthwaite", "kenward-roger"], default=None,
                   help="gaussian: denominator df of the t and F tests printed: satterthwaite "
                        "(default, lmerTest) or kenward-roger (pbkrtest; REML fits)")
    p.add_argument("--threshold", choices=["flexible", "equidistant"], default=None,
                   help="ordinal: thresholds between the rating categories (R: clmm(threshold = ); "
                        "default flexible)")
    p.add_argument("--squeeze", action="store_const", const=True, default=None,
                   help="beta: map scores of exactly 0 or 1 into (0, 1) (Smithson & Verkuilen)")
    p.add_argument("--nagq", type=_nagq, default=None, metavar="N",
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


def _factors(text: str) -> list[str]:
    """One word of ``--emmeans``/``--by``: ``a,b`` is two factors, as ``--by`` of every command."""
    return [v.strip() for v in text.split(",") if v.strip()]


class _Extend(argparse.Action):
    """``nargs="+"`` of lists (from :func:`_factors`) flattened into one list."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        setattr(namespace, self.dest, [v for part in values for v in part] or None)


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


def _nagq(text: str) -> int:
    """lme4's ``nAGQ``: 0 (first stage), 1 (Laplace) or more points."""
    return 0 if text.strip() == "0" else positive_int(text)


def _fit_options(args: argparse.Namespace) -> dict[str, Any]:
    """The R-side arguments of ``evalmix fit`` (only those given, so other fitters still work)."""
    opts: dict[str, Any] = {}
    if getattr(args, "link", None) not in (None, "logit"):
        opts["link"] = args.link
    if getattr(args, "nagq", None) not in (None, 1):
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


def _add_family_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--family", choices=FAMILIES, default="binomial",
                   help="binomial: 0/1 or k-of-n outcomes (glmer; default); gaussian: numeric scores "
                        "(lmer); ordinal: ratings on a small scale (clmm); beta: scores in (0, 1) "
                        "(glmmtmb); betabinomial: overdispersed k-of-n counts (glmmtmb)")


def _ddf_name(ddf: str | None) -> str:
    return "Kenward-Roger" if ddf == "kenward-roger" else "Satterthwaite"


def load_scores(args: argparse.Namespace, raw: pd.DataFrame | None = None) -> pd.DataFrame:
    """DATA for a fit of another family than binomial: the table as read (the formula names its
    columns, and the engine checks the response), or harness logs with continuous scores kept.

    With ``--missing drop`` the rows with a missing value in a column the formula reads are left
    out with a warning; otherwise the engine's own rule applies (an error naming the row, or, for
    ``lmer``, R's ``na.omit`` with a warning)."""
    import warnings

    from ..core.errors import DataWarning
    from ..model import model_columns, parse_formula
    from ._common import load_data

    data = load_data(args, scores=True, raw=raw)
    if getattr(args, "missing", "raise") == "drop":
        for formula in (args.formula if isinstance(args.formula, list) else [args.formula]):
            used = [c for c in model_columns(parse_formula(formula), data) if c in data.columns]
            keep = data[used].notna().all(axis=1)
            if not keep.all():
                warnings.warn(f"{args.data}: {int((~keep).sum())} row(s) with a missing value in "
                              f"{', '.join(used)} left out (--missing drop)", DataWarning, stacklevel=2)
                data = data[keep].reset_index(drop=True)
    return data


def _formula_roles(formula: str, columns: Any) -> dict[str, str] | None:
    """The runs-table roles that a binomial formula names, for a table read with no role options:
    the response (``correct ~``, or ``cbind(k, n - k) ~`` for k-of-n counts), the item (the
    grouping factor of the first random term, when the table has no ``item`` column) and the model
    (the first fixed term, when it has no ``model`` column).  None when the formula does not name
    them as columns (``cbind(k, f)``, a transformed response, no fixed term): the table is then
    read as it is, and the fit checks its response."""
    from ..model import parse_formula

    f = parse_formula(formula)
    cols = set(map(str, columns))
    roles: dict[str, str] = {}
    if f.successes is not None:
        if f.trials is None or f.successes not in cols or f.trials not in cols:
            return None
        roles.update(successes=f.successes, trials=f.trials)
    elif str(f.response) in cols:
        roles["outcome"] = str(f.response)
    else:
        return None
    if "item" not in cols and "problem_id" not in cols:
        groups = [r.group for r in f.random if len(r.group) == 1 and r.group[0] in cols]
        if not groups:
            return None
        roles["item"] = groups[0][0]
    if "model" not in cols:
        terms = [t for t in f.fixed_terms if t in cols]
        if not terms:
            return None
        roles["model"] = terms[0]
    return roles


def load_binomial(args: argparse.Namespace, formula: str) -> pd.DataFrame:
    """DATA for a binomial fit.  With no role option given (``--outcome``, ``--successes``,
    ``--trials``, ``--item``, ``--model``) the formula names the roles (:func:`_formula_roles`):
    ``cbind(k, n - k) ~ llm + (1|question)`` needs no other option."""
    from ..data.runs import load_table
    from ..core.errors import DataError
    from ..io import is_log_source
    from ._common import id_columns, load_data

    given = (args.successes is not None or args.trials is not None or args.item is not None
             or args.model != "model" or args.outcome != "correct")
    if given or is_log_source(args.data):
        return load_data(args)
    raw = load_table(args.data, encoding=getattr(args, "encoding", None), sep=getattr(args, "sep", None),
                     ids=id_columns(args))
    roles = _formula_roles(formula, raw.columns)
    if roles == {"outcome": args.outcome}:  # the default roles: as every command reads them
        return load_data(args, raw=raw)
    if roles is None:
        return load_scores(args, raw=raw)
    named = argparse.Namespace(**{**vars(args), "outcome": None, **roles})
    try:
        return load_data(named, raw=raw)
    except DataError:  # the roles do not make a runs table (e.g. a duplicated key): the formula's columns
        return load_scores(args, raw=raw)


def fit_family(args: argparse.Namespace, formula: str, data: pd.DataFrame
               ) -> GlmerResult | LmerResult | ClmmResult | GlmmTMBResult:
    """Fit ``formula`` with the engine of ``args.family`` and the options given for it."""
    family = args.family
    if family == "binomial":
        fit: GlmerResult = _fitter()(formula, data, vcov_method=getattr(args, "vcov", None) or "hessian",
                                     **_fit_options(args))
        return fit
    contrasts = _contrast_codings(args)
    if family == "gaussian":
        from ..lmm import lmer

        return lmer(formula, data, REML=getattr(args, "reml", None) is not False, contrasts=contrasts)
    if family == "ordinal":
        from ..ordinal import clmm

        return clmm(formula, data, link=getattr(args, "link", None) or "logit",
                    threshold=getattr(args, "threshold", None) or "flexible")
    from ..tmb import glmmtmb

    return glmmtmb(formula, data, family=family, weights=getattr(args, "weights", None), contrasts=contrasts,
                   squeeze=bool(getattr(args, "squeeze", None)))


def _contrast_codings(args: argparse.Namespace) -> dict[str, str] | None:
    if not getattr(args, "contrasts", None):
        return None
    codings = _fit_options(argparse.Namespace(contrasts=args.contrasts))["contrasts"]
    return dict(codings)


def run_fit(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run ``evalmix fit`` from parsed arguments; returns the exit code."""
    from ..inference.emmeans import contrast, emmeans
    from ..inference.selection import anova
    from ._common import dump_json, result_doc

    out = out or sys.stdout
    family = getattr(args, "family", "binomial")
    if (args.contrast or args.by) and not args.emmeans:
        raise SystemExit("evalmix fit: --contrast and --by need --emmeans FACTOR")
    _check_family_options(args)
    if family == "ordinal" and args.anova:
        raise SystemExit("evalmix fit: --anova does not apply to --family ordinal (clmm): compare nested "
                         "formulas with evalmix select --family ordinal")
    if family == "ordinal" and args.type == "response" and args.by:
        raise SystemExit("evalmix fit: --type response with --family ordinal gives the mean rating of each "
                         "level (clmm's mean.class) and takes no --by")
    data = load_binomial(args, args.formula) if family == "binomial" else load_scores(args)
    fit: Any = fit_family(args, args.formula, data)
    result: dict[str, Any] = {"fit": _fit_summary(fit, args)}
    emm: Any = None
    con: Any = None
    ddf = _ddf_name(args.ddf) if family == "gaussian" else None
    if args.emmeans:
        source: Any = fit
        if family == "ordinal":  # emmeans' latent scale: the linear predictor less the mean threshold
            from ..ordinal import clmm_ref_grid

            source = clmm_ref_grid(fit, conf_level=args.conf_level)
        grid_emm = emmeans(source, args.emmeans, by=args.by, conf_level=args.conf_level,
                           type="link" if family == "ordinal" else args.type, ddf=ddf)
        if family == "ordinal" and args.type == "response":
            from ..ordinal import clmm_emmeans

            emm = clmm_emmeans(fit, args.emmeans, mode="mean.class", conf_level=args.conf_level)
        else:
            emm = grid_emm
        result["emmeans"] = result_doc(emm)
        if args.contrast:  # --contrast without --emmeans is refused above
            con = contrast(grid_emm, args.contrast, ref=args.ref, adjust=args.adjust,
                           conf_level=args.conf_level)
            result["contrasts"] = result_doc(con)
    aov = None
    if args.anova:
        aov = anova(fit, ddf=ddf) if ddf else anova(fit)
        result["anova"] = result_doc(aov)
    if args.json:
        dump_json(result, out)
        return 0
    info = result["fit"]
    if family == "binomial" and hasattr(fit, "lme4_text"):  # as lme4 prints a merMod, then the Wald table
        print(fit.lme4_text(), file=out)
        print(f"\n{fit.wald_text(max_rows=None)}", file=out)
    elif family == "gaussian":
        print(fit.lme4_text(), file=out)
        _print_table(args, f"Fixed effects (t tests with {ddf} df, lmerTest)", _coef_frame(fit, args), out)
    elif family == "ordinal":
        print(fit.ordinal_text(), file=out)
    elif family in ("beta", "betabinomial"):
        print(fit.glmmtmb_text(), file=out)
    else:
        print(f"{info['formula']}\nnobs = {info['nobs']}  df = {info['df']}  "
              f"logLik = {info['loglik']:.3f}  AIC = {info['aic']:.3f}  BIC = {info['bic']:.3f}",
              file=out)
        _print_table(args, "Fixed effects", _table(fit.coef_table()), out)
    if emm is not None:
        scale = ("the mean rating, clmm's mean.class" if family == "ordinal" and args.type == "response"
                 else "latent scale" if family == "ordinal" else f"{args.type} scale")
        _print_table(args, f"Marginal means ({scale})", emm.to_frame(), out)
    if con is not None:
        scale = "latent" if family == "ordinal" else con.scale
        _print_table(args, f"Contrasts (scale: {scale})", con.to_frame(), out)
        for note in con.notes:
            print(note, file=out)
    if aov is not None:
        title = (f"Type-III F tests ({ddf} denominator df)" if ddf else "Type-III Wald chi-square tests")
        _print_table(args, title, aov.to_frame(), out)
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
    _add_family_argument(p)
    p.set_defaults(handler=run_select)
    return p


def run_select(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run ``evalmix select`` from parsed arguments; returns the exit code."""
    import numpy as np
    import pandas as pd

    from ..inference.selection import compare_models
    from ._common import dump_json, result_doc

    out = out or sys.stdout
    if len(args.formula) < 2:
        raise SystemExit("evalmix select: give at least two --formula")
    family = getattr(args, "family", "binomial")
    _check_family_options(args, "select")
    data = load_binomial(args, args.formula[0]) if family == "binomial" else load_scores(args)
    if family == "binomial":
        fitter = _fitter()
        fits = {f: fitter(f, data) for f in args.formula}
    else:  # lmer fits are compared by maximum likelihood, as lme4's anova() refits them
        fits = {f: fit_family(args, f, data) for f in args.formula}
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
