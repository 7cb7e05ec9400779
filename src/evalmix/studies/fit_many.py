"""One GLMM per group (benchmark, domain...) in parallel, gathered in one tidy table."""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..core.arguments import check_arguments
from ..data import slicing as sl
from ..data.runs import at_the_door
from ..core.result import Result
from ..core.errors import DataError, FitWarning, FormulaError, SingularFitWarning
from ..model import factor_columns, parse_formula, random_columns
from ..core.parallel import parallel_map, record_warnings

if TYPE_CHECKING:
    from ..glmm.result import GlmerResult

__all__ = ["FitManyResult", "fit_many"]

_COEF_COLUMNS = ["term", "estimate", "se", "statistic", "p_value", "conf_low", "conf_high",
                 "odds_ratio", "or_conf_low", "or_conf_high"]
_NAME = re.compile(r"^[A-Za-z_.][A-Za-z0-9_.]*$")


@dataclass(frozen=True, eq=False, repr=False)
class FitManyResult(Result):
    """The fixed effects of one GLMM per group.

    Attributes
    ----------
    table : DataFrame
        One row per group x fixed-effect term: the group columns, ``term``, ``estimate``, ``se``,
        ``statistic`` (Wald z), ``p_value``, ``conf_low``, ``conf_high`` (log-odds), ``odds_ratio``,
        ``or_conf_low``, ``or_conf_high``, then ``nobs``, ``converged``, ``singular``, ``messages``
        (the fit's convergence and boundary messages, ``"; "``-joined), ``warnings`` (other
        warnings raised while fitting, e.g. rows dropped for missing values, rank-deficient
        columns dropped, a Hessian that is not positive definite; recorded whichever backend
        runs the fits: this process, threads, worker processes or a cluster) and ``error``.  A group whose fit failed has one row with
        ``term`` missing, NaN numbers and the exception in ``error`` (``""`` when it did not fail).
    groups : DataFrame
        One row per group: the group columns, ``nobs``, ``converged``, ``singular``, ``messages``,
        ``warnings``, ``error``.
    fits : dict
        Group key (a tuple of the group values) -> :class:`~evalmix.glmm.GlmerResult` (None for a
        failed group); empty when ``keep_fits=False``.
    formula : str
    by : tuple of str
    """

    table: pd.DataFrame
    groups: pd.DataFrame
    fits: dict[tuple[Any, ...], GlmerResult | None] = field(repr=False)
    formula: str = ""
    by: tuple[str, ...] = ()

    scale = "log-odds"

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()

    @property
    def failed(self) -> pd.DataFrame:
        """The groups whose fit raised an error, with the message."""
        return self.groups[self.groups["error"] != ""].reset_index(drop=True)

    def _title(self) -> str:
        return f"FitManyResult: {self.formula} by {', '.join(self.by)}"

    def _header(self) -> list[str]:
        g = self.groups
        ok = g["error"] == ""
        return [f"{len(g)} groups: {int(ok.sum())} fitted, {int((~ok).sum())} failed, "
                f"{int((g['singular'] == True).sum())} singular, "  # noqa: E712 (object column)
                f"{int((ok & (g['converged'] == False)).sum())} not converged"]  # noqa: E712

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out.update({"formula": self.formula, "by": list(self.by)})
        return out


def _fit_group(task: tuple[tuple, pd.DataFrame], formula: str, conf_level: float, keep_fit: bool,
               glmer_kwargs: dict) -> dict[str, Any]:
    """Fit one group; never raises, so one bad group cannot lose the others."""
    from ..glmm import glmer

    key, sub = task
    out: dict[str, Any] = {"key": key, "nobs": len(sub), "converged": None, "singular": None,
                           "messages": "", "warnings": "", "error": "", "coef": None, "fit": None}
    said: set[str] = set()  # the fit's own messages (convergence, boundary, separation)
    with record_warnings() as caught:  # per thread, so any backend fills the group's row
        try:
            fit = glmer(formula, sub, **glmer_kwargs)
        except Exception as exc:  # recorded as the group's row; the other groups go on
            out["error"] = f"{type(exc).__name__}: {exc}"
        else:
            out.update(nobs=fit.nobs, converged=bool(fit.converged), singular=bool(fit.singular),
                       messages="; ".join(fit.messages), coef=fit.coef_table(conf_level).to_frame(),
                       fit=fit if keep_fit else None)
            said = set(fit.messages)
    # the fit's convergence and separation messages and its singular flag are in the row already
    other = [f"{w.category.__name__}: {w.message}" for w in caught
             if not (issubclass(w.category, FitWarning) and str(w.message) in said)
             and not (issubclass(w.category, SingularFitWarning) and out["singular"])]
    out["warnings"] = "; ".join(dict.fromkeys(other))
    return out


def _check_formula(formula: str, data: pd.DataFrame) -> None:
    """Errors shared by every group (syntax, absent columns) are raised once, before any fit."""
    parsed = parse_formula(formula)
    random_columns(parsed.random, data)
    needed = [c for c in (parsed.successes, parsed.failures, parsed.trials) if c]
    try:
        needed += factor_columns(parsed.fixed, data)
    except Exception as exc:
        raise FormulaError(f"cannot read the fixed part {parsed.fixed!r} of {formula!r}: {exc}") from exc
    absent = [c for c in needed if _NAME.match(c) and c not in data.columns]
    if absent:
        raise FormulaError(f"formula {formula!r} names column(s) {', '.join(map(repr, absent))} absent "
                           f"from the data; columns: {', '.join(map(repr, map(str, data.columns)))}")


def fit_many(formula: str, data: pd.DataFrame, by: str | Sequence[str] = "benchmark", *,
             conf_level: float = 0.95, n_jobs: int | None = None, progress: bool = False,
             keep_fits: bool = True, **glmer_kwargs: Any) -> FitManyResult:
    """Fit the same GLMM to every group of ``data`` (one per benchmark, say), in parallel.

    Each group is fitted by :func:`evalmix.glmer` on its own rows, unused factor levels dropped
    (as R's ``glmer(..., data = subset(d, benchmark == b))`` drops them in its model frame).  A
    group whose fit fails becomes a row with the error message; it never stops the others.

    Parameters
    ----------
    formula : str
        lme4-style formula, the same for every group.
    data : DataFrame
        Long runs table holding every group.
    by : str or list of str
        Column(s) whose combinations define the groups.
    conf_level : float
        Level of the Wald intervals.
    n_jobs : int, optional
        Parallel workers (joblib); default: an enclosing ``joblib.parallel_config``, else 1.
        Inside ``joblib.parallel_config(backend="dask")`` the fits run on the Dask cluster (see
        :func:`evalmix.core.parallel.parallel_map`).
    progress : bool
        Progress bar over the groups, advanced as fits finish.
    keep_fits : bool
        Keep every :class:`~evalmix.glmm.GlmerResult` in ``fits`` (set False to send only the
        tables back from remote workers).
    **glmer_kwargs
        Passed to :func:`evalmix.glmer` (``trials``, ``vcov_method``, ``maxiter``...).

    Returns
    -------
    FitManyResult

    Raises
    ------
    FormulaError
        The formula cannot be read or names a column absent from ``data`` (raised once, before
        any fit).
    DataError
        A ``by`` column is absent or has missing values.

    Examples
    --------
    >>> import pandas as pd
    >>> from evalmix import fit_many, simulate
    >>> d = pd.concat([simulate.glmm_runs(2, 40, 2, model_effects=[0, e], rng=s).assign(benchmark=b)
    ...                for b, e, s in [("math", 1.0, 1), ("code", 0.0, 2)]])
    >>> res = fit_many("correct ~ model + (1|item)", d, by="benchmark")
    >>> res.table[["benchmark", "term"]].values.tolist()
    [['code', '(Intercept)'], ['code', 'modelM2'], ['math', '(Intercept)'], ['math', 'modelM2']]
    """
    check_arguments(conf_level=conf_level, n_jobs=n_jobs)
    data = at_the_door(data)
    by_ = sl.as_list(by)
    if not by_:
        raise DataError("fit_many needs at least one by= column")
    missing = [c for c in by_ if c not in data.columns]
    if missing:
        raise DataError(f"by column(s) {', '.join(map(repr, missing))} not in the data; columns: "
                        f"{', '.join(map(repr, map(str, data.columns)))}")
    for c in by_:
        na = data[c].isna()
        if na.any():
            rows = list(data.index[na][:5])
            raise DataError(f"by column {c!r} has {int(na.sum())} missing value(s) (rows {rows}); "
                            f"their rows would belong to no group")
    if not 0 < conf_level < 1:
        raise ValueError(f"conf_level must be in (0, 1), got {conf_level}")
    _check_formula(formula, data)

    tasks = []
    for key, sub in sl.groups(data, by_):
        sub = sub.copy()
        for c in sub.columns:
            if isinstance(sub[c].dtype, pd.CategoricalDtype):
                sub[c] = sub[c].cat.remove_unused_categories()
        tasks.append((key, sub))
    outs = parallel_map(partial(_fit_group, formula=formula, conf_level=conf_level, keep_fit=keep_fits,
                                glmer_kwargs=glmer_kwargs),
                        tasks, n_jobs=n_jobs, progress=progress, desc="fit_many")

    frames, group_rows, fits = [], [], {}
    flag_cols = ["nobs", "converged", "singular", "messages", "warnings", "error"]
    for o in outs:
        base = dict(zip(by_, o["key"]))
        flags = {k: o[k] for k in flag_cols}
        group_rows.append(base | flags)
        if keep_fits:
            fits[o["key"]] = o["fit"]
        coef = o["coef"]
        if coef is None:
            coef = pd.DataFrame({c: [None if c == "term" else np.nan] for c in _COEF_COLUMNS})
        coef = coef[_COEF_COLUMNS].reset_index(drop=True)
        front = pd.DataFrame({c: [v] * len(coef) for c, v in base.items()})
        back = pd.DataFrame({c: [v] * len(coef) for c, v in flags.items()})
        frames.append(pd.concat([front, coef, back], axis=1))
    table = pd.concat(frames, ignore_index=True)
    groups = pd.DataFrame(group_rows)
    for frame in (table, groups):
        for c in by_:
            if isinstance(data[c].dtype, pd.CategoricalDtype):
                frame[c] = pd.Categorical(frame[c], categories=data[c].cat.categories)
    failed = groups[groups["error"] != ""]
    if len(failed):
        shown = ", ".join(sl.slice_label(by_, k).rstrip(": ") for k in
                          [tuple(r) for r in failed[by_].itertuples(index=False)][:5])
        warnings.warn(f"fit_many: {len(failed)} of {len(groups)} group fit(s) failed ({shown}); see "
                      f"the error column", FitWarning, stacklevel=2)
    return FitManyResult(table=table, groups=groups, fits=fits, formula=formula, by=tuple(by_))
