"""Contamination by training data: does a model do better on the items published before its training
cutoff than their difficulty explains?

The test is a logistic GLMM with a ``model:exposed`` interaction (lme4 syntax)::

    correct ~ 0 + model + era + model:exposed + (1 | item) + (1 | item:model)

``exposed`` is 1 where the item was published before that model's cutoff (the ``control``
column is False) and 0 where it is a control item for that model.  Its coefficient for a model,
``estimate``, is the log-odds advantage of that model on its exposed items beyond its ability
and the items' difficulty; the test is one-sided (a pre-cutoff advantage), with Holm over models.

Why not the raw accuracy gap.  Items published later may be harder (or easier) than earlier
ones: a model's accuracy on its pre-cutoff items minus its accuracy on its post-cutoff items
(``naive_gap``) mixes that difference of difficulty with contamination.  Here:

* each item has its own effect (``(1 | item)``), so an item is compared with itself across the
  models that saw it and those that did not;
* ``era`` is the pattern of which models an item is exposed to (the items published between two
  successive cutoffs share one): a fixed effect per era takes out any difference of mean difficulty
  between the items published at different times, which the item random effects (centred on one
  mean) would otherwise hand to the contamination terms;
* ``(1 | item:model)`` holds the runs of a model on an item together, so repeated runs are not
  counted as independent evidence (fitted when the table has several runs per model and item).

Why a contaminated model does not spoil the reference.  Each model has its own ``exposed`` term,
so a contaminated model's extra successes on its exposed items are absorbed by its own
coefficient and do not make those items look easier for the others: the difficulty of an era
is learnt from the models for which its items are control items (earlier cutoffs, and a model
whose cutoff precedes every item).  The estimates are identified when, for every era, some model
sees it as control; when every model shares one cutoff, exposure and the era's difficulty are the
same column, and :func:`contamination_test` says so rather than report a number (a model with an
earlier cutoff, or models with different cutoffs, separate them).  The assumptions: the control
items are clean for that model, and a model's advantage is the same on all its exposed items.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from scipy import stats

from ..core.arguments import check_choice, check_level
from ..core.methods import P_ADJUST_METHODS
from ..core.errors import DataError, DataWarning, SingularFitWarning
from ..core.result import Result
from ..data.runs import RunsData, ensure_runs
from ..glmm import glmer
from ..model.parse import make_formula
from ..stats.multiplicity import adjust_pvalues

if TYPE_CHECKING:
    from ..glmm.result import GlmerResult

__all__ = ["ContaminationResult", "contamination_test"]

# working column names of the fit (the user's columns are copied under them)
_Y, _MODEL, _ITEM, _ERA = "y", "model", "item", "era"


@dataclass(frozen=True, eq=False, repr=False)
class ContaminationResult(Result):
    """Per-model advantage on pre-cutoff items beyond item difficulty.

    ``table`` has one row per model: ``model``, ``n_exposed`` and ``n_control`` (items),
    ``naive_gap`` (accuracy on exposed minus control items: what the difficulty confound
    distorts), ``estimate`` (log-odds advantage on exposed items), ``se``, ``conf_low``,
    ``conf_high``, ``odds_ratio``, ``statistic`` (z), ``p_value`` (one-sided: an advantage),
    ``p_adjusted`` and ``contaminated`` (``p_adjusted < 1 - conf_level``).  A model with no exposed
    item is a reference (NaN estimate); so is one with no control item, whose advantage cannot be
    told from its ability.  ``fit`` is the :func:`evalmix.glmer` fit the table reads.
    """

    table: pd.DataFrame
    conf_level: float
    adjust: str
    formula: str
    n_eras: int
    fit: GlmerResult

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()

    def _title(self) -> str:
        return "Contamination: advantage on pre-cutoff items beyond item difficulty"

    def _header(self) -> list[str]:
        return [f"model: {self.formula} (exposed: the item is pre-cutoff for the model; era: which models "
                f"an item is exposed to, {self.n_eras} pattern(s))",
                f"estimate: log-odds advantage on exposed items; {self.conf_level:.0%} Wald interval; p one-sided "
                f"(an advantage), {self.adjust} over models"]

    def _notes(self) -> list[str]:
        notes = ["naive_gap: accuracy on exposed minus control items, confounded with their difficulty"]
        if self.table["estimate"].isna().any():
            notes.append("NaN: a reference model (no exposed items) or one without control items")
        return notes

    def to_dict(self) -> dict[str, Any]:
        return super().to_dict() | {"conf_level": self.conf_level, "adjust": self.adjust,
                                    "formula": self.formula, "n_eras": self.n_eras}


def _control_flags(values: pd.Series, column: str) -> pd.Series:
    """The control column as booleans: True/False, 1/0 or the words true/false, yes/no."""
    if values.dtype == bool:
        return values
    words = {"true": True, "false": False, "yes": True, "no": False, "1": True, "0": False}
    if pd.api.types.is_numeric_dtype(values):
        bad = ~values.isin([0, 1])
        out = values == 1
    else:
        text = values.astype(str).str.strip().str.lower()
        bad = ~text.isin(list(words))
        out = text.map(lambda v: words.get(v, False)).astype(bool)
    if bad.any():
        row = values.index[bad.to_numpy()][0]
        raise DataError(f"control column {column!r} must be True/False (or 1/0): row {row} holds {values[row]!r}")
    return out


def _unidentified(cells: pd.DataFrame, exposed_models: list[str]) -> list[str]:
    """Models whose ``exposed`` coefficient the design cannot separate from model and era effects."""
    x = pd.get_dummies(cells[_MODEL]).astype(float)
    eras = pd.get_dummies(cells[_ERA], drop_first=True).astype(float)
    cols = [(cells[_MODEL] == m).astype(float) * cells["exposed"] for m in exposed_models]
    z = np.column_stack([np.asarray(x), np.asarray(eras)] + [np.asarray(c) for c in cols])
    base = np.column_stack([np.asarray(x), np.asarray(eras)])
    if np.linalg.matrix_rank(z) == np.linalg.matrix_rank(base) + len(exposed_models):
        return []
    # each exposure column that lies in the span of the others and the base is unidentified
    out = []
    for k, m in enumerate(exposed_models):
        others = np.delete(z, base.shape[1] + k, axis=1)
        if np.linalg.matrix_rank(others) == np.linalg.matrix_rank(z):
            out.append(m)
    return out


def contamination_test(data: RunsData, control: str = "post_cutoff", *, conf_level: float = 0.95,
                       adjust: str = "holm", model: str | None = None, item: str | None = None,
                       run: str | None = None, outcome: str | None = None,
                       missing: str = "raise") -> ContaminationResult:
    """Per-model test of an advantage on items published before the model's training cutoff.

    Parameters
    ----------
    data : DataFrame or path
        Long runs table: model, item, optional run, 0/1 outcome, and ``control``.
    control : str
        Column that is True where the item is a control item for the model of that row
        (published after the model's training cutoff) and False where the model may have seen it.
        It may differ between models (each has its own cutoff) but not between the runs of a
        model on an item.
    conf_level : float
        Level of the intervals; ``1 - conf_level`` is the level of the ``contaminated`` flags.
    adjust : {"holm", "hochberg", "BH", "BY", "bonferroni", "sidak", "none"}
        Multiplicity adjustment over the models tested (:func:`evalmix.adjust_pvalues`).
    model, item, run, outcome : str, optional
        Column names (default: the roles of :func:`evalmix.read_runs`).
    missing : {"raise", "drop"}
        Rows with a missing value.

    Returns
    -------
    ContaminationResult

    Raises
    ------
    DataError
        A missing or non-boolean control column, a control flag that differs between runs of one
        model on one item, no model with both exposed and control items, or exposure that cannot
        be told from the difficulty of the items (every model with the same cutoff).

    Examples
    --------
    >>> import evalmix
    >>> df = evalmix.simulate.contaminated_runs(300, 2, contamination={2: 1.5}, rng=7)
    >>> res = contamination_test(df)
    >>> res.to_frame()[["model", "contaminated"]]
         model  contaminated
    0  model-1         False
    1  model-2         False
    2  model-3          True
    3  model-4         False
    """
    level = check_level(conf_level)
    check_choice(adjust, "adjust", P_ADJUST_METHODS)
    df, roles = ensure_runs(data, model=model, item=item, run=run, outcome=outcome, need_model=True,
                            need_item=True, by=[control], missing=missing)
    if roles.counts:
        raise DataError("contamination_test needs 0/1 outcomes, one row per run (not successes/trials)")
    model_col, item_col = roles.role("model"), roles.role("item")
    w = pd.DataFrame({_Y: df[roles.scores].astype(float).to_numpy(),
                      _MODEL: df[model_col].astype(str).to_numpy(), _ITEM: df[item_col].astype(str).to_numpy(),
                      "exposed": (~_control_flags(df[control], control)).astype(float).to_numpy()})
    per_cell = w.groupby([_MODEL, _ITEM], sort=False)["exposed"].agg(["min", "max", "size"])
    mixed = per_cell[per_cell["min"] != per_cell["max"]]
    if len(mixed):
        m, i = mixed.index[0]
        raise DataError(f"control column {control!r} differs between the runs of model {m!r} on item {i!r}; "
                        "an item is pre- or post-cutoff for a model as a whole")
    models = list(pd.unique(w[_MODEL]))
    share = w.groupby(_MODEL, sort=False)["exposed"].agg(["min", "max"])
    exposed_models = [m for m in models if share.loc[m, "min"] == 0 and share.loc[m, "max"] == 1]
    no_control = [m for m in models if share.loc[m, "min"] == 1]
    if not exposed_models:
        raise DataError(f"no model has both exposed and control items in column {control!r}: the advantage "
                        "needs each tested model scored on both")
    if no_control:
        warnings.warn(f"model(s) without control items, not tested (their advantage cannot be told from their "
                      f"ability): {', '.join(no_control)}", DataWarning, stacklevel=2)
    # era: the pattern of which models an item is exposed to
    pattern = per_cell["max"].unstack(_MODEL).reindex(columns=models)
    codes = pattern.apply(lambda r: "".join("-" if np.isnan(v) else str(int(v)) for v in r), axis=1)
    era_names = {c: f"E{k}" for k, c in enumerate(sorted(set(codes), key=lambda c: (c.count("1"), c)))}
    w[_ERA] = w[_ITEM].map(codes.map(era_names))
    n_eras = len(era_names)
    cells = w.groupby([_MODEL, _ERA], sort=False)["exposed"].first().reset_index()
    bad = _unidentified(cells, exposed_models)
    if bad:
        raise DataError(f"the advantage of model(s) {', '.join(bad)} on their pre-cutoff items cannot be told from "
                        "the difficulty of those items: every model that is scored on them saw them. Add a "
                        "model whose cutoff precedes them (they are control items for it) or models with "
                        "other cutoffs")
    xcols = {m: f"exposed_{k}" for k, m in enumerate(exposed_models)}
    for m, c in xcols.items():
        w[c] = w["exposed"] * (w[_MODEL] == m)
    fixed = ["0 + model"] + (["era"] if n_eras > 1 else []) + list(xcols.values())
    random = [_ITEM] + (["item:model"] if (per_cell["size"] > 1).any() else [])
    formula = str(make_formula(_Y, fixed, random))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit = glmer(formula, w)
    for note in caught:
        # runs of a model on an item that vary no more than their item's do: the item:model variance
        # is 0, which is what the term allows, not a fault of the fit
        text = str(note.message)
        if not (issubclass(note.category, SingularFitWarning) and "'item:model.(Intercept)': 0.0" in text
                and "'item.(Intercept)': 0.0" not in text):
            warnings.warn_explicit(note.message, note.category, note.filename, note.lineno)
    beta, var = fit.fixef, pd.Series(np.diag(fit.vcov.to_numpy(dtype=float)), index=fit.vcov.index)
    z_crit = stats.norm.ppf(1 - (1 - level) / 2)
    acc = w.groupby([_MODEL, "exposed"])[_Y].mean().unstack()
    items = w.groupby([_MODEL, _ITEM])["exposed"].first().groupby(level=0)
    rows = []
    for m in models:
        n_exp = int(items.get_group(m).sum())
        row: dict[str, Any] = {"model": m, "n_exposed": n_exp, "n_control": int(items.get_group(m).size - n_exp),
                               "naive_gap": float(acc.loc[m].get(1.0, np.nan) - acc.loc[m].get(0.0, np.nan))}
        if m in xcols:
            est, se = float(beta[xcols[m]]), float(np.sqrt(var[xcols[m]]))
            row |= {"estimate": est, "se": se, "conf_low": est - z_crit * se, "conf_high": est + z_crit * se,
                    "odds_ratio": float(np.exp(est)), "statistic": est / se, "p_value": float(stats.norm.sf(est / se))}
        else:
            row |= dict.fromkeys(["estimate", "se", "conf_low", "conf_high", "odds_ratio", "statistic", "p_value"],
                                 np.nan)
        rows.append(row)
    table = pd.DataFrame(rows)
    tested = table["p_value"].notna()
    table["p_adjusted"] = np.nan
    if tested.any():
        p = table.loc[tested, "p_value"].to_numpy()
        table.loc[tested, "p_adjusted"] = adjust_pvalues(p, adjust)
    table["contaminated"] = table["p_adjusted"] < 1 - level
    shown = formula.replace(_Y, "correct", 1)
    for m, c in xcols.items():
        shown = shown.replace(f" + {c}", "")
    shown = shown.replace("0 + model", "0 + model + model:exposed" if n_eras <= 1 else "0 + model", 1)
    if n_eras > 1:
        shown = shown.replace("+ era", "+ era + model:exposed", 1)
    return ContaminationResult(table=table, conf_level=level, adjust=adjust, formula=shown, n_eras=n_eras, fit=fit)
