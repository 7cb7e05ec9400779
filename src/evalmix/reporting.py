"""The whole study in one call: every table and figure of a repeated-runs evaluation.

:func:`report` runs the analyses of the AI4Math study (Table 1, accuracy with Wilson intervals,
model selection by BIC, odds ratios against a reference model, marginal means and the heatmap by an
item-level slice such as the domain, the slice fit comparison and slice-conditional contrasts,
run-to-run reliability, rank instability and rank intervals, SE against repetitions and the
study planner, the robustness table) on any runs table, and returns a :class:`Report`:
the tables as DataFrames, the figures as matplotlib Figures, and a self-contained HTML page.
Where the paper's procedure is flawed the report gives its number and the corrected one side by
side, with the reason.

Sections whose ingredient is absent (a slice, several runs) are left out with a line saying why.
"""

from __future__ import annotations

import base64
import functools
import html
import io
import platform
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from .core.arguments import check_arguments
from .studies import repetitions
from .core import tables
from .core.files import atomic_path, write_bytes, write_text, write_with
from .core.result import Result
from .data.runs import read_runs, schema_of
from .stats.descriptive import accuracy
from .inference.emmeans import contrast, emmeans
from .core.errors import DataError
from .core.seeds import accepts_seed
from .glmm import glmer
from .model import ParsedFormula, make_formula
from .studies.ranking import rank_instability, rank_uncertainty
from .studies.reliability import KOO_LI_BANDS, flip_rate, icc, quality_band
from .inference.selection import anova, compare_models

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["RATING_LEVELS_MAX", "Report", "ReportSection", "arena_section", "candidate_formulas", "judges_section",
           "outcome_kind", "report", "health_section"]
__all__ += ["DRIFT_COLUMNS", "drift_sections"]

#: ICC cut points of the AI4Math paper (poor < 0.60 <= moderate < 0.75 <= good < 0.90 <= excellent),
#: shown beside the Koo & Li (2016) bands the report (and :func:`evalmix.icc`) uses.
PAPER_ICC_BANDS = (0.6, 0.75, 0.9)

#: The domain test as the AI4Math paper printed it: chi-square 13.5 on 6 df with p = 0.005.  A
#: chi-square of 13.5 on 6 df has p = 0.036, so the printed p is shown beside the computed one
#: when the report's slice test is that statistic (same chi-square to one decimal, same df).
PAPER_SLICE_TEST = {"statistic": 13.5, "df": 6, "p_value": 0.005}


@dataclass(frozen=True)
class ReportSection:
    """One section of a :class:`Report`.

    ``tables`` and ``figures`` are tuples of ``(name, caption, object)``; ``skipped`` is the line
    shown instead of the content when the section could not be computed on this table.
    """

    key: str
    title: str
    note: str = ""
    tables: tuple[tuple[str, str, pd.DataFrame], ...] = ()
    figures: tuple[tuple[str, str, Figure], ...] = ()
    skipped: str | None = None


@dataclass(frozen=True, eq=False, repr=False)
class Report(Result):
    """Tables, figures and notes of a study report (see :func:`report`).

    Attributes
    ----------
    sections : tuple of ReportSection
    title : str
    formulas : dict
        Formula (lme4 syntax) -> what it was fitted for, for every model fitted; the ``fits``
        table adds convergence, boundary flags and warnings.
    versions : dict
        Software -> version.
    options : dict
        The options the report was made with (reference model, slice, seed...).
    """

    sections: tuple[ReportSection, ...]
    title: str
    formulas: dict[str, str] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)

    def to_frame(self) -> pd.DataFrame:
        """One row per table and figure: ``section``, ``kind``, ``name``, ``caption``."""
        rows = []
        for s in self.sections:
            if s.skipped:
                rows.append({"section": s.key, "kind": "left out", "name": "", "caption": s.skipped})
            rows += [{"section": s.key, "kind": "table", "name": n, "caption": c} for n, c, _ in s.tables]
            rows += [{"section": s.key, "kind": "figure", "name": n, "caption": c} for n, c, _ in s.figures]
        return pd.DataFrame(rows, columns=["section", "kind", "name", "caption"])

    def __repr__(self) -> str:
        # captions are sentences: cut to what is left of the 100-character line (to_frame() has them)
        frame = self.to_frame()
        rest = sum(max([len(str(c))] + [len(str(v)) for v in frame[c]]) + 2 for c in frame.columns if c != "caption")
        room = max(20, tables.REPR_WIDTH - rest)
        frame["caption"] = [c if len(c) <= room else c[:room - 3] + "..." for c in frame["caption"].astype(str)]
        return "\n".join(tables.wrap_lines([f"Report {self.title!r}"]) + [tables.to_text(frame, width=None)])

    def _repr_html_(self) -> str:
        return f"<p><b>{tables.html_text(self.title)}</b></p>\n{tables.to_html(self.to_frame())}"

    @property
    def tables(self) -> dict[str, pd.DataFrame]:
        """Every table by name."""
        return {n: t for s in self.sections for n, _, t in s.tables}

    @property
    def figures(self) -> dict[str, Any]:
        """Every figure by name."""
        return {n: f for s in self.sections for n, _, f in s.figures}

    def section(self, key: str) -> ReportSection:
        """The section with this key."""
        for s in self.sections:
            if s.key == key:
                return s
        raise KeyError(f"no section {key!r}; sections: {[s.key for s in self.sections]}")

    def to_html(self, images: dict[str, bytes] | None = None) -> str:
        """The report as one self-contained HTML page (figures embedded as PNG)."""
        images = images if images is not None else {n: _png(f) for n, f in self.figures.items()}
        return _render_html(self, images)

    def save(self, directory: str | Path) -> dict[str, Path]:
        """Write ``index.html``, each table as ``tables/NAME.{tex,md,csv}`` and each figure as
        ``figures/NAME.{png,pdf}``; returns the paths by kind (``"html"``, ``"NAME.png"``...)."""
        out = Path(directory)
        (out / "tables").mkdir(parents=True, exist_ok=True)
        (out / "figures").mkdir(parents=True, exist_ok=True)
        paths: dict[str, Path] = {}
        captions = {n: c for s in self.sections for n, c, _ in s.tables}
        for name, tab in self.tables.items():
            for ext, text in (("tex", tables.to_latex(tab, caption=captions[name], label=f"tab:{name}")),
                              ("md", tables.to_markdown(tab))):
                p = out / "tables" / f"{name}.{ext}"
                write_text(p, text + "\n")
                paths[f"{name}.{ext}"] = p
            p = out / "tables" / f"{name}.csv"
            write_with(p, functools.partial(_write_csv, tab))
            paths[f"{name}.csv"] = p
        import matplotlib as mpl

        from .plots.style import paper_style

        images = {}
        for name, fig in self.figures.items():
            images[name] = _png(fig)
            p = out / "figures" / f"{name}.png"
            write_bytes(p, images[name])
            paths[f"{name}.png"] = p
            p = out / "figures" / f"{name}.pdf"
            # the PNG's drawing already placed everything: reuse that layout for the PDF, with no
            # engine at all (a placeholder engine would still cost a layout pass of the drawing)
            engine = fig.get_layout_engine()
            with mpl.rc_context({"figure.autolayout": False, "figure.constrained_layout.use": False}):
                fig.set_layout_engine(None)
            try:  # TrueType fonts (no Type 3), whatever the caller's matplotlib settings
                with paper_style(), atomic_path(p) as tmp:
                    fig.savefig(tmp, format="pdf")
            finally:
                fig.set_layout_engine(engine)
            paths[f"{name}.pdf"] = p
        p = out / "index.html"
        write_text(p, self.to_html(images))
        paths["html"] = p
        return paths


def _write_csv(table: pd.DataFrame, path: Path) -> None:
    table.to_csv(path, index=False)


_DPI = 300  # PNG resolution journals ask for; the page shows figures at 100 CSS pixels per inch


def _png(fig: Any, dpi: int = _DPI) -> bytes:
    # constrained layout already fits every label and legend: no second, "tight" drawing pass
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, facecolor="white")
    return buf.getvalue()


# ----------------------------------------------------------------------------------------------
# design: which slices are conditions and which describe items


def _item_level(data: pd.DataFrame, item: str, col: str) -> bool:
    """True when every item has one level of ``col`` (an item attribute such as the domain)."""
    return bool((data.groupby(item, observed=True)[col].nunique() <= 1).all())


def _roles(data: pd.DataFrame) -> dict[str, Any]:
    schema = schema_of(data)
    assert schema is not None
    slices = [s for s in schema.slices if data[s].nunique() >= 2]
    item = schema.item
    item_level = [s for s in slices if item is not None and _item_level(data, item, s)
                  and data[s].nunique() < data[item].nunique()]
    conditions = [s for s in slices if s not in item_level and data[s].nunique() <= 20
                  and s not in DRIFT_COLUMNS]
    return {"schema": schema, "item_level": item_level, "conditions": conditions,
            "others": [s for s in schema.slices if s not in item_level + conditions]}


#: Columns the drift and contamination sections read (a wave of two levels; True where an item is
#: post-cutoff for the row's model): not conditions that models are compared across
DRIFT_COLUMNS = ("wave", "post_cutoff")


def drift_sections(data: pd.DataFrame, conf_level: float = 0.95) -> list[ReportSection]:
    """The contamination section when the table has a ``post_cutoff`` column, and the drift section
    when it has a ``wave`` column of two levels (the first in the table's order is the earlier
    wave); a section that cannot be computed on the table says why.

    Examples
    --------
    >>> import evalmix
    >>> df = evalmix.simulate.contaminated_runs(100, 1, contamination={2: 2.0}, rng=7)
    >>> [s.key for s in drift_sections(evalmix.read_runs(df))]
    ['contamination']
    """
    from .plots.drift import contamination_plot, drift_plot
    from .studies.contamination import contamination_test
    from .studies.drift import drift

    schema = schema_of(data)
    model, item, run, outcome = ((schema.model, schema.item, schema.run, schema.outcome) if schema is not None
                                 else (None, None, None, None))
    out = []
    pct = f"{conf_level:.0%}"
    if "post_cutoff" in data.columns:
        title = "Contamination: advantage on pre-cutoff items beyond item difficulty"
        try:
            res = contamination_test(data, "post_cutoff", conf_level=conf_level, model=model, item=item,
                                     run=run, outcome=outcome)
        except DataError as exc:
            out.append(ReportSection("contamination", title, skipped=f"Left out: {exc}"))
        else:
            out.append(ReportSection(
                "contamination", title,
                "Each model's log-odds advantage on the items published before its training cutoff, beyond "
                f"its ability and the items' difficulty ({res.formula}); {pct} Wald intervals, one-sided "
                f"p-values adjusted by {res.adjust} over models. naive_gap is the raw accuracy gap, which "
                "mixes contamination with the difficulty of items published at different times.",
                tables=(("contamination", "Advantage on pre-cutoff items per model.", res.to_frame()),),
                figures=(("contamination", f"Advantage on pre-cutoff items with {pct} intervals.",
                          _close(contamination_plot(res))),)))
    if "wave" in data.columns:
        title = "Drift between two waves"
        waves = list(pd.unique(data["wave"]))
        if len(waves) != 2:
            out.append(ReportSection("drift", title, skipped=f"Left out: column 'wave' has {len(waves)} levels, "
                                                             "not two (the earlier and the later wave)"))
        else:
            before, after = (data[data["wave"] == w].drop(columns="wave") for w in waves)
            res_d = drift(before, after, conf_level=conf_level, model=model, item=item, run=run, outcome=outcome)
            out.append(ReportSection(
                "drift", title,
                f"Each model's change from wave {waves[0]!r} to wave {waves[1]!r} on the items both share: the mean "
                f"over items of after - before with its {pct} paired t interval, and an equivalence (TOST) "
                f"verdict at +-{res_d.margin:g}.",
                tables=(("drift", "Change between the waves per model.", res_d.to_frame()),),
                figures=(("drift", f"Change between the waves with {pct} intervals and the margin.",
                          _close(drift_plot(res_d))),)))
    return out


def candidate_formulas(conditions: Sequence[str], model: str = "model") -> list[str]:
    """The fixed-effect structures the AI4Math paper compared, for any list of condition columns.

    With conditions ``c1, ..., ck``: the full interaction, the model interacting with the first
    condition only, the conditions interacting among themselves only, all main effects, and the main
    effects without the last condition.  For ``["language", "prompt"]`` these are the paper's five.

    Examples
    --------
    >>> candidate_formulas(["language", "prompt"])
    ['model * language * prompt', 'model * language + prompt', 'model + language * prompt', \
'model + language + prompt', 'model + language']
    >>> candidate_formulas([])
    ['model']
    """
    c = list(conditions)
    if not c:
        return [model]
    out = [" * ".join([model] + c)]
    if len(c) >= 2:
        out.append(" + ".join([f"{model} * {c[0]}"] + c[1:]))
        out.append(f"{model} + " + " * ".join(c))
    out.append(" + ".join([model] + c))
    out.append(" + ".join([model] + c[:-1]))
    return list(dict.fromkeys(out))


# ----------------------------------------------------------------------------------------------
# helpers


def _fit(formula: str, data: pd.DataFrame, log: list[dict[str, Any]], use: str) -> Any:
    """glmer fit whose warnings (boundary, convergence) are recorded in ``log`` for the page."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit = glmer(formula, data)
    log.append(_fit_row(use, formula, fit.nobs, fit.converged, fit.singular,
                        [str(w.message) for w in caught]))
    return fit


def _fit_row(use: str, formula: str, nobs: int, converged: bool, singular: bool,
             messages: Sequence[str] = ()) -> dict[str, Any]:
    first_lines = dict.fromkeys(m.splitlines()[0] for m in messages if m)
    return {"use": use, "formula": formula, "nobs": int(nobs), "converged": bool(converged),
            "singular": bool(singular), "warnings": "; ".join(first_lines)}


def _pcol(tab: pd.DataFrame) -> str:
    for name in ("p_adjusted", "p_value", "p"):
        if name in tab.columns:
            return name
    raise KeyError("no p-value column")


def _lohi(tab: pd.DataFrame, prefix: str = "") -> tuple[str, str]:
    lo = f"{prefix}conf_low" if f"{prefix}conf_low" in tab.columns else f"{prefix}lower"
    hi = f"{prefix}conf_high" if f"{prefix}conf_high" in tab.columns else f"{prefix}upper"
    return lo, hi


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _close(fig: Figure) -> Figure:
    import matplotlib.pyplot as plt

    plt.close(fig)  # the report owns the figure; keep pyplot's registry empty
    return fig


def _versions() -> dict[str, str]:
    import importlib.metadata as md

    out = {"python": platform.python_version()}
    for pkg in ("evalmix", "numpy", "scipy", "pandas", "statsmodels", "formulaic", "matplotlib"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:  # pragma: no cover - running from a source tree
            out[pkg] = "not installed"
    return out


# ----------------------------------------------------------------------------------------------
# sections


def _data_section(data: pd.DataFrame, roles: dict[str, Any], slice_: str | None) -> ReportSection:
    schema = roles["schema"]
    rows = [{"role": "model", "column": schema.model, "levels": data[schema.model].nunique()},
            {"role": "item", "column": schema.item, "levels": data[schema.item].nunique()}]
    if schema.run:
        rows.append({"role": "run", "column": schema.run, "levels": data[schema.run].nunique()})
    for s in schema.slices:
        kind = ("item attribute" if s in roles["item_level"] else "condition" if s in roles["conditions"]
                else "other column")
        rows.append({"role": kind, "column": s, "levels": data[s].nunique()})
    design = pd.DataFrame(rows)
    design["values"] = [", ".join(map(str, list(dict.fromkeys(data[c].astype(str)))[:8]))
                        + (", ..." if data[c].nunique() > 8 else "") for c in design["column"]]
    out = [("design", f"Design: {len(data):,} rows; the role of each column.", design)]
    note = ("Every column other than the model, item, run and outcome is a slice. A slice with one "
            "level per item (such as a domain) is an item attribute; the others are conditions "
            "under which every item was answered (such as language or prompt).")
    if slice_ is not None and slice_ in roles["item_level"]:
        per = (data.groupby(slice_, observed=True)[schema.item].nunique().rename("items").reset_index())
        per = per.sort_values(slice_, key=lambda s: s.astype(str), kind="stable").reset_index(drop=True)
        per["percent"] = 100 * per["items"] / per["items"].sum()
        total = pd.DataFrame({slice_: ["Total"], "items": [int(per["items"].sum())], "percent": [100.0]})
        per[slice_] = per[slice_].astype(str)
        out.append(("table1", f"Table 1: items by {slice_}.", pd.concat([per, total], ignore_index=True)))
    return ReportSection("data", "Data and design", note, tables=tuple(out))


def _overall(data: pd.DataFrame, roles: dict[str, Any], conf_level: float) -> pd.DataFrame:
    overall = accuracy(data, roles["schema"].model, ci="wilson", conf_level=conf_level).table
    return overall.sort_values("estimate", ascending=False, kind="stable").reset_index(drop=True)


def _per_item(data: pd.DataFrame, roles: dict[str, Any], ref: str, levels: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-item counts: items each model never / always solves, solves alone; the reference against
    the most accurate other model."""
    schema = roles["schema"]
    m, item = schema.model, schema.item
    if schema.counts:
        g = data.groupby([item, m], observed=True)[[schema.successes, schema.trials]].sum()
        acc = (g[schema.successes] / g[schema.trials]).unstack()
    else:
        acc = data.groupby([item, m], observed=True)[schema.outcome].mean().unstack()
    acc.columns = [str(c) for c in acc.columns]
    solved = acc > 0
    alone = solved.sum(axis=1) == 1
    per_model = pd.DataFrame({
        "model": levels,
        "n_items": [int(acc[c].notna().sum()) for c in levels],
        "never_solved": [int((acc[c] == 0).sum()) for c in levels],
        "always_solved": [int((acc[c] == 1).sum()) for c in levels],
        "only_model_solving": [int((alone & solved[c]).sum()) for c in levels]})
    rows = []
    other = next((lv for lv in levels if lv != ref), None)
    if other is not None:
        a, b = acc[ref], acc[other]
        counts = {f"items neither {ref} nor {other} ever solves": ((a == 0) & (b == 0)).sum(),
                  f"items {ref} solves more often than {other}": (a > b).sum(),
                  f"items {other} solves more often than {ref}": (b > a).sum(),
                  "items no model ever solves": (~solved).all(axis=1).sum()}
        rows = [{"comparison": k, "n_items": int(v)} for k, v in counts.items()]
    return per_model, pd.DataFrame(rows, columns=["comparison", "n_items"])


def _accuracy_section(data: pd.DataFrame, roles: dict[str, Any], conf_level: float, overall: pd.DataFrame,
                      ref: str) -> ReportSection:
    from .plots import accuracy_intervals

    schema = roles["schema"]
    cond = roles["conditions"]
    by = [schema.model] + cond
    tab = accuracy(data, by, ci="wilson", conf_level=conf_level).table
    levels = [str(v) for v in overall[schema.model]]
    per_model, pair = _per_item(data, roles, ref, levels)
    fig = accuracy_intervals(tab, y=schema.model, hue=cond[0] if cond else None,
                             col=cond[1] if len(cond) > 1 else None)
    note = (f"Accuracy is the share of correct answers; intervals are Wilson score intervals "
            f"({conf_level:.0%}), as DescTools::BinomCI. They treat every answer as independent and "
            "are too narrow when items differ in difficulty; the model-based intervals below account "
            "for items.")
    return ReportSection(
        "accuracy", "Accuracy with intervals", note,
        tables=(("accuracy", f"Accuracy by {', '.join(by)} with Wilson {conf_level:.0%} intervals.", tab),
                ("accuracy_overall", "Accuracy by model over every condition and run.", overall),
                ("per_item", "Items each model never solves (no correct answer in any run or "
                 "condition), always solves, and solves alone.", per_model),
                ("reference_vs_runner_up", f"{ref} against the most accurate other model, item by "
                 "item (accuracy of each item over its runs and conditions).", pair)),
        figures=(("fig1_accuracy", "Figure 1: accuracy per model and condition (Wilson intervals).",
                  _close(fig)),))


def _selection_section(fits: dict[str, Any], base: ParsedFormula) -> tuple[ReportSection, str]:
    from .plots import delta_bic_bars

    comp = compare_models(fits)
    best = str(comp.table["name"].iloc[0])
    tab = comp.to_frame()[["name", "df", "loglik", "aic", "bic", "delta_bic", "bic_weight"]]
    fit_rows = pd.DataFrame([{"name": n, "converged": bool(f.converged), "singular": bool(f.singular)}
                             for n, f in fits.items()])
    tab = tab.merge(fit_rows, on="name", how="left")
    type3 = anova(fits[best]).to_frame()
    rand = " + ".join(str(r) for r in base.random)
    note = (f"Logistic mixed models with random intercepts {rand} fitted by "
            "maximum likelihood (Laplace), as lme4::glmer, and compared by BIC: "
            f"{comp.verdict()}. Type-III Wald tests of the selected model as car::Anova(type = 3).")
    return ReportSection(
        "selection", "Model selection by BIC", note,
        tables=(("model_selection", "Candidate models: BIC, ΔBIC and BIC weights.", tab),
                ("type3_selected", f"Type-III Wald χ² tests of the selected model ({best}).", type3)),
        figures=(("fig2_delta_bic", "Figure 2: ΔBIC of each candidate against the best.",
                  _close(delta_bic_bars(comp))),)), best


def _odds_section(data: pd.DataFrame, roles: dict[str, Any], fit: Any, formula: str, reference: str,
                  conf_level: float, flips: list[dict[str, Any]]) -> ReportSection:
    from .plots import odds_ratio_forest

    schema = roles["schema"]
    emm = emmeans(fit, schema.model, conf_level=conf_level)
    ctr = contrast(emm, "trt.vs.ctrl", ref=reference, adjust="dunnettx")
    tab = ctr.to_frame()
    lo, hi = _lohi(tab, "or_")
    show = ["contrast", "estimate", "se", _pcol(tab), "odds_ratio", lo, hi]
    tables_ = [("odds_ratios", f"Odds ratios against {reference} (marginal over the conditions; "
                f"Dunnett-adjusted p and intervals).", tab[[c for c in show if c in tab.columns]])]
    if flips:
        tables_.append(("corrections_sign_flips", "Significance against the reference in single runs: "
                        "the paper's procedure beside a refit.", pd.DataFrame(flips)))
    cond = roles["conditions"]
    if cond:
        pw = contrast(emmeans(fit, schema.model, by=cond, conf_level=conf_level), "pairwise",
                      adjust="holm").to_frame()
        tables_.append(("pairwise_by_condition", f"Pairwise contrasts of models within each "
                        f"{' × '.join(cond)} cell (log odds; Holm-adjusted p).", pw))
    note = (f"Marginal means of each model on the logit scale from {formula} (equal weights over the "
            f"conditions, as emmeans), contrasted with the reference {reference}. The saturated model "
            "is used so that contrasts within a condition are not forced equal across conditions.")
    fig = odds_ratio_forest(ctr)
    return ReportSection("odds_ratios", f"Odds ratios against {reference}", note, tables=tuple(tables_),
                         figures=(("fig3_odds_ratios", f"Figure 3: odds ratios against {reference} "
                                   "(log scale).", _close(fig)),))


def _slice_sections(data: pd.DataFrame, roles: dict[str, Any], slice_: str, base: ParsedFormula,
                    reference: str, conf_level: float, log: list[dict[str, Any]]
                    ) -> tuple[ReportSection, ReportSection, pd.DataFrame]:
    from .plots import accuracy_heatmap, delta_bic_bars, marginal_means, odds_ratio_forest

    schema = roles["schema"]
    m = schema.model
    add, inter = f"{m} + {slice_}", f"{m} * {slice_}"
    fits = {f"additive: {add}": _fit(base.with_fixed(add).text, data, log, f"{slice_}: additive"),
            f"interaction: {m} × {slice_}": _fit(base.with_fixed(inter).text, data, log,
                                                 f"{slice_}: interaction")}
    comp = compare_models(fits)
    chosen_name = str(comp.table["name"].iloc[0])
    chosen = fits[chosen_name]
    means = emmeans(chosen, slice_, type="response", conf_level=conf_level)
    type3 = anova(fits[f"additive: {add}"]).to_frame()
    acc = accuracy(data, [m, slice_], ci="wilson", conf_level=conf_level).table
    mm = means.to_frame().sort_values("estimate", kind="stable").reset_index(drop=True)
    row = type3[type3["term"] == slice_]
    stat = "statistic" if "statistic" in row.columns else "chisq"
    chi = (f" The {slice_} effect in the additive model: χ² = {float(row[stat].iloc[0]):.1f} on "
           f"{int(row['df'].iloc[0])} df, p = {tables.format_p(float(row[_pcol(row)].iloc[0]))}."
           if len(row) else "")
    means_sec = ReportSection(
        "slice_means", f"Marginal means by {slice_}",
        f"Marginal means of {slice_} on the probability scale from the model preferred by BIC "
        f"({chosen_name}), averaged over models with equal weights; Wald intervals on the logit "
        f"scale, back-transformed (emmeans, type = \"response\").{chi} The heatmap shows the "
        f"observed accuracy of each model in each {slice_} (descriptive, not a test).",
        tables=((f"{slice_}_means", f"Marginal means by {slice_} ({chosen_name}).", mm),
                ("type3_slice", f"Type-III Wald χ² tests of {add}.", type3),
                (f"accuracy_by_{slice_}", f"Observed accuracy by model and {slice_}.", acc)),
        figures=(("fig4_slice_means", f"Figure 4: marginal means by {slice_} (95% CI).",
                  _close(marginal_means(means))),
                 ("fig5_heatmap", f"Figure 5: accuracy (%) per model and {slice_}.",
                  _close(accuracy_heatmap(acc, row=m, col=slice_)))))
    cond = contrast(emmeans(chosen, m, by=slice_, conf_level=conf_level), "trt.vs.ctrl", ref=reference,
                    adjust="holm")
    ctab = cond.to_frame()
    fit_sec = ReportSection(
        "slice_models", f"Does {slice_} moderate the model differences?",
        f"The additive model (a shared {slice_} difficulty shift) against the interaction model "
        f"(model differences that vary by {slice_}), by BIC: {comp.verdict()}. Contrasts against "
        f"{reference} within each {slice_} come from the preferred model ({chosen_name}); "
        "Holm-adjusted within each level. Under the additive model they are equal across levels on "
        "the log-odds scale by construction.",
        tables=(("slice_fit_comparison", f"Additive against interaction model for {slice_}.",
                 comp.to_frame()[["name", "df", "loglik", "bic", "delta_bic", "bic_weight"]]),
                ("slice_conditional_contrasts", f"Odds ratios against {reference} within each "
                 f"{slice_} (Holm).", ctab)),
        figures=(("supp_fig1_slice_fit", f"Supplementary Figure 1: ΔBIC, additive against "
                  f"interaction model for {slice_}.", _close(delta_bic_bars(comp))),
                 ("supp_fig2_conditional_contrasts", f"Supplementary Figure 2: odds ratios against "
                  f"{reference} within each {slice_} (Holm).",
                  _close(odds_ratio_forest(cond, by=slice_)))))
    return means_sec, fit_sec, acc


def _robustness_section(acc: pd.DataFrame, roles: dict[str, Any], slice_: str) -> ReportSection:
    m = roles["schema"].model
    g = acc.groupby(m, observed=True)["estimate"]
    tab = pd.DataFrame({
        "mean_acc": g.mean(), "sd_acc": g.std(ddof=1),
        "iqr_acc": g.quantile(0.75) - g.quantile(0.25), "min_acc": g.min(), "max_acc": g.max()})
    tab = tab.sort_values("mean_acc", ascending=False, kind="stable").reset_index()
    tab[m] = tab[m].astype(str)
    return ReportSection(
        "robustness", f"Robustness across {slice_} (Table S7)",
        f"Each model's accuracy in every {slice_} (pooled over conditions and runs), summarised "
        f"across the {acc[slice_].nunique()} levels: mean, SD, interquartile range (R's type-7 "
        "quantiles), minimum and maximum. A high mean with a small spread marks a generalist.",
        tables=(("robustness", f"Table S7: model accuracy across {slice_}.", tab),))


def _reliability_section(data: pd.DataFrame, roles: dict[str, Any]
                         ) -> tuple[ReportSection, list[dict[str, Any]]]:
    from .plots import flip_rate_bars, icc_dots

    schema = roles["schema"]
    cond = roles["conditions"]
    by = [schema.model] + cond
    fl = flip_rate(data, by).to_frame()
    ic = icc(data, by)  # Koo & Li bands, as evalmix.icc and the CLI label them
    tab = ic.to_frame()
    tab["quality_paper"] = quality_band(tab["icc"].to_numpy(), PAPER_ICC_BANDS) if len(tab) else []
    names = ("poor", "moderate", "good", "excellent")

    def counts(col: str) -> str:
        c = tab[col].value_counts()
        return ", ".join(f"{int(c.get(q, 0))} {q}" for q in names if c.get(q, 0)) or "none"

    cuts = " / ".join(f"{b:.2f}" for b in KOO_LI_BANDS)
    paper_cuts = " / ".join(f"{b:.2f}" for b in PAPER_ICC_BANDS)
    note = ("Flip rate: share of items whose outcome is not the same in every run; entropy: mean "
            "outcome entropy in bits. ICC(C,1): two-way consistency single-measure intraclass "
            "correlation of the items × runs matrix, as irr::icc, with F-test intervals. Quality "
            f"bands of Koo & Li (2016) at {cuts} ({counts('quality')} of {len(tab)} slices); "
            f"quality_paper uses the paper's {paper_cuts} ({counts('quality_paper')}).")
    corr = [{"quantity": "ICC quality bands",
             "paper_method": f"cut points {paper_cuts}",
             "paper_value": counts("quality_paper"),
             "corrected_method": f"Koo & Li (2016): {cuts}, as evalmix.icc and the CLI",
             "corrected_value": counts("quality"),
             "why": "one banding everywhere, the published guideline; the paper's 0.60 calls an ICC "
                    "of 0.55 poor where the guideline calls it moderate."}]
    figs = [("fig7_icc", "Figure 7: run-to-run ICC per slice, by quality band (Koo & Li).",
             _close(icc_dots(ic)))]
    figs.insert(0, ("fig6_flip_rate", "Figure 6: share of items whose outcome changes across runs.",
                    _close(flip_rate_bars(fl, x=schema.model, hue=cond[0] if cond else None,
                                          col=cond[1] if len(cond) > 1 else None))))
    return ReportSection("reliability", "Run-to-run reliability", note,
                         tables=(("flip_rates", "Flip rate and entropy per slice.", fl),
                                 ("icc", "ICC(C,1) per slice with 95% intervals, quality band (Koo & "
                                  "Li) and the paper's band.", tab)),
                         figures=tuple(figs)), corr


def _ranks_section(data: pd.DataFrame, roles: dict[str, Any], n_runs: int, n_boot: int, seed: int
                   ) -> tuple[ReportSection, list[dict[str, Any]]]:
    from .plots import rank_bump, rank_intervals

    cond = roles["conditions"]
    sizes = list(range(1, n_runs))
    ri = rank_instability(data, cond or None, runs_per_leaderboard=sizes)
    ru = rank_uncertainty(data, cond or None, n_boot=n_boot, rng=seed)
    singles = ri.table[ri.table["n_runs"] == 1]
    n_lb = len(singles)
    n_paper = int((singles["n_moved"] > 0).sum())
    n_real = int((singles["n_discordant"] > 0).sum())
    corr = [{"quantity": "single-run leaderboards with a rank inversion",
             "paper_method": "any model at another position, ties broken by level order",
             "paper_value": f"{n_paper} of {n_lb} ({_pct(n_paper / n_lb)})",
             "corrected_method": "at least one model pair strictly inverted; ties count as ties",
             "corrected_value": f"{n_real} of {n_lb} ({_pct(n_real / n_lb)})",
             "why": "a tie in accuracy is not an inversion; breaking it by the models' level order "
                    "moves models that are not ordered at all."}]
    if 2 in sizes:
        s = ri.to_frame().set_index("n_runs")
        rate = s["rate"]  # strict: leaderboards with an inverted pair
        red_lb = 1 - rate.loc[2] / rate.loc[1] if rate.loc[1] > 0 else np.nan
        red_pairs = s["inversions_removed"].loc[2]
        corr.append({
            "quantity": "share of single-run inversions removed by pooling two runs",
            "paper_method": "the single-run instability rate, read as a reduction",
            "paper_value": _pct(n_paper / n_lb),
            "corrected_method": "reduction of leaderboards with an inverted pair / of inverted model "
                                "pairs",
            "corrected_value": f"{_pct(red_lb)} / {_pct(red_pairs)}",
            "why": "a reduction compares one run with two runs; the paper's figure is the one-run "
                   "rate alone."})
    note = ("Within each condition cell, the leaderboard of every single run (and every pair of runs) "
            "is compared with the leaderboard of all runs pooled; it counts as unstable when a model "
            "pair is strictly inverted (a tie is not an inversion), with the paper's count (any "
            "model at another position, ties broken by level order) beside it. Rank intervals come from an "
            f"item-level cluster bootstrap ({n_boot} replicates, seed {seed}): models are compared on "
            "the same resampled items.")
    return ReportSection(
        "ranks", "Rank instability and rank intervals", note,
        tables=(("corrections_ranks", "The paper's counts beside the corrected ones.", pd.DataFrame(corr)),
                ("rank_instability", "Leaderboards of run subsets against all runs: leaderboards "
                 "with an inverted pair (n_unstable; the paper's count, ties broken by level order, "
                 "in n_unstable_paper), inverted pairs and Kendall's τ.", ri.to_frame()),
                ("leaderboards", "Every run-subset leaderboard.", ri.table),
                ("rank_intervals", "Rank of each model with its 95% bootstrap interval.", ru.to_frame())),
        figures=(("fig8_rank_bump", "Figure 8: ranks in single runs against all runs (ties side by "
                  "side).", _close(rank_bump(ri))),
                 ("rank_intervals", "Rank intervals (item bootstrap).", _close(rank_intervals(ru))))), corr


def _repetitions_section(data: pd.DataFrame, roles: dict[str, Any], n_runs: int, plan_se: float, cost_item: float,
                         cost_run: float) -> tuple[ReportSection, list[dict[str, Any]]]:
    from .plots import se_curves

    schema = roles["schema"]
    cond = roles["conditions"]
    by = [schema.model] + cond
    res = repetitions.se_vs_runs(data, by, max_runs=max(2 * n_runs, 5), curve_by=schema.model)
    paper_se = repetitions.slice_se_by_runs(data, by).to_frame()
    proj = res.projection.groupby("n_runs")[["se", "se_runs"]].mean().reset_index()
    comp = paper_se[["n_runs", "se"]].rename(columns={"se": "paper_se"}).merge(
        proj.rename(columns={"se": "se_items_random", "se_runs": "se_items_fixed"}), on="n_runs",
        how="right")
    comps = res.components
    tables_ = [("se_vs_runs", "SE of slice accuracy against runs: the paper's statistic and the "
                "decomposition (mean over slices).", comp),
               ("variance_components", "Between-item and within-item (run) variance per slice.", comps)]
    plan_note = ""
    try:
        pl = repetitions.plan(comps, se=plan_se, cost_item=cost_item, cost_run=cost_run)
        tables_.append(("plan", f"Study planner: fewest items for each number of runs so that every "
                        f"slice's SE ≤ {plan_se} (cost = items × {cost_item:g} + answers × "
                        f"{cost_run:g}).", pl.table))
        plan_note = (f" The cheapest design with every slice's SE ≤ {plan_se}: {pl.n_items} items × "
                     f"{pl.n_runs} run(s) (cost {pl.cost:g}).")
    except DataError as exc:
        plan_note = f" Study planner: {exc}."
    r1 = comp.set_index("n_runs")
    paper_se_r, se_random, se_fixed = r1["paper_se"], r1["se_items_random"], r1["se_items_fixed"]
    corr = [{"quantity": f"SE of slice accuracy at R = {r}",
             "paper_method": "SD between slice accuracies / √(number of slices)",
             "paper_value": f"{paper_se_r.loc[r]:.4f}" if np.isfinite(paper_se_r.loc[r]) else "",
             "corrected_method": "√(var_between / N + var_within / (N R)) per slice, averaged "
                                 "(items random / items fixed)",
             "corrected_value": f"{se_random.loc[r]:.4f} / {se_fixed.loc[r]:.4f}",
             "why": "the paper's statistic measures how far slices differ from each other, not the "
                    "uncertainty of a slice; runs only shrink the within-item part."}
            for r in range(1, n_runs + 1) if r in r1.index]
    tables_.insert(0, ("corrections_se", "The paper's SE statistic beside the decomposition.",
                       pd.DataFrame(corr)))
    note = ("Each slice's accuracy has two sources of noise: which items were drawn (between-item "
            "variance) and what the decoder produced (within-item, run-to-run variance). Only the "
            "second shrinks with more runs. The figure shows the paper's curves (predicted sd/√R, "
            "empirical over run subsets) and the projection from the decomposition." + plan_note)
    return ReportSection("repetitions", "SE against repetitions and study planning", note,
                         tables=tuple(tables_),
                         figures=(("fig9_se_curves", "Figure 9: SE of slice accuracy against runs "
                                   "averaged.", _close(se_curves(res, show_projection=True))),)), corr


def _slice_test_rows(means_sec: ReportSection, slice_: str) -> list[dict[str, Any]]:
    """The paper's printed p of the slice test beside the p its chi-square gives, when it is that test."""
    type3 = next((t for name, _, t in means_sec.tables if name == "type3_slice"), None)
    if type3 is None:
        return []
    row = type3[type3["term"] == slice_]
    stat = "statistic" if "statistic" in row.columns else "chisq"
    if len(row) != 1:
        return []
    chi, df, p = float(row[stat].iloc[0]), int(row["df"].iloc[0]), float(row[_pcol(row)].iloc[0])
    if round(chi, 1) != PAPER_SLICE_TEST["statistic"] or df != PAPER_SLICE_TEST["df"]:
        return []  # not the paper's test: there is no printed number to set beside it
    return [{"quantity": f"{slice_} effect (type-III Wald χ², additive model)",
             "paper_method": "as printed in the paper",
             "paper_value": f"χ² = {PAPER_SLICE_TEST['statistic']:.1f} on {PAPER_SLICE_TEST['df']} df, "
                            f"p = {PAPER_SLICE_TEST['p_value']:.3f}",
             "corrected_method": "upper tail of χ² on the test's df (car::Anova)",
             "corrected_value": f"χ² = {chi:.1f} on {df} df, p = {p:.3f}",
             "why": f"a χ² of {chi:.1f} on {df} df has p = {p:.3f}; the printed p is not the tail "
                    "probability of the printed statistic."}]


def _sign_flip_rows(data: pd.DataFrame, formula: str, reference: str, model: str,
                    log: list[dict[str, Any]]) -> list[dict[str, Any]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the refits' convergence and boundary flags go to the log
        sf = repetitions.sign_flip_rate(data, formula, term=model, ref=reference)
    fits = sf.fits[["run", "formula", "nobs", "converged", "singular"]]
    for run, fit_formula, nobs, converged, singular in fits.itertuples(index=False, name=None):
        log.append(_fit_row(f"sign flips: {'all runs' if run == 'all' else f'run {run}'}",
                            fit_formula, nobs, converged, singular))
    singles = sf.details[sf.details["run"] != "all"]
    flipped = singles.groupby("contrast")["flipped"].any()
    return [{"quantity": f"contrasts against {reference} whose significance changes in a single run",
             "paper_method": "decisions read from the all-runs fit for every run",
             "paper_value": f"0 of {len(flipped)} (0%, by construction)",
             "corrected_method": "the model refitted on each run",
             "corrected_value": f"{int(flipped.sum())} of {len(flipped)} ({_pct(sf.rate)})",
             "why": "without a refit every 'single-run' decision is the all-runs decision, so no "
                    "flip can be seen."}]


def _bayes_section(data: pd.DataFrame, formula: str, model: str, seed: int) -> ReportSection:
    try:
        import pymc  # noqa: F401
    except ImportError:
        return ReportSection("bayes", "Posterior rank probabilities",
                             skipped="Left out: the Bayesian section needs the bayes extra "
                                     "(pip install 'evalmix[bayes]').")
    from . import bayes

    fit = bayes.glmer(formula, data, draws=500, tune=500, chains=2, rng=seed, progressbar=False)
    ranks = fit.ranks(model).to_frame()
    return ReportSection(
        "bayes", "Posterior rank probabilities",
        f"The selected model ({formula}) fitted by MCMC with evalmix's default weakly informative "
        f"priors (2 chains × 500 draws, seed {seed}); each model's marginal mean is ranked within "
        "every draw.",
        tables=(("bayes_ranks", "Posterior probability of each rank.", ranks),))


# ----------------------------------------------------------------------------------------------
# judges and arenas


def _judge_column(schema: Any, data: pd.DataFrame, judge: str | None) -> str | None:
    """The judge column: the one named, else a slice called ``judge`` with two or more levels."""
    if judge is not None:
        if judge not in schema.slices:
            raise DataError(f"judge={judge!r} is not a slice column of the runs table; the slices are "
                            f"{list(schema.slices)}")
        return judge
    return "judge" if "judge" in schema.slices and data["judge"].nunique() >= 2 else None


def _response_keys(schema: Any) -> list[str]:
    return [c for c in (schema.model, schema.item, schema.run) if c is not None]


def _ppi_table(data: pd.DataFrame, schema: Any, judge: str | None, labels: pd.DataFrame | str | Path,
               human: str, conf_level: float) -> tuple[pd.DataFrame, str]:
    """PPI++, human-only and judge-only means per model: the judge score of a response is the mean
    verdict of its judges, the labels are the human scores of some responses."""
    from .data.runs import load_table, require_columns
    from .studies.ppi import ppi_mean

    lab = load_table(labels, ids=[c for c in (schema.item, schema.model, schema.run) if c is not None])
    where = f"{labels}: " if isinstance(labels, (str, Path)) else "labels: "
    keys = [c for c in _response_keys(schema) if c in lab.columns or c != schema.run]
    require_columns(lab, [*keys, human], labels if isinstance(labels, (str, Path)) else None,
                    " (the human labels: one row per labelled response)")
    score = str(schema.outcome)
    if score in lab.columns:
        raise DataError(f"{where}the labels table has a column {score!r}, the runs table's verdict column: "
                        "drop it (the judge score of each labelled response is read from the runs table)")
    judged = data.groupby(keys, observed=True, sort=False)[score].mean().reset_index()
    for k in keys:  # the runs table's keys are categoricals; match the labels as text
        judged[k] = judged[k].astype(str)
    lab = lab[[*keys, human]].copy()
    for k in keys:
        lab[k] = lab[k].astype(str)
    merged = lab.merge(judged, on=keys, how="left")
    unmatched = merged[score].isna().to_numpy()
    if unmatched.any():
        first = merged.loc[unmatched, keys].iloc[0].to_dict()
        raise DataError(f"{where}{int(unmatched.sum())} labelled response(s) are not in the runs table, "
                        f"e.g. {first}")
    res = ppi_mean(judged, merged, by=schema.model, judge=score, human=human, item=schema.item,
                   run=schema.run if schema.run in keys else None,
                   method=["ppi++", "classical", "judge_only"], conf_level=conf_level)
    what = "the mean verdict of the judges" if judge is not None else "the verdict"
    return res.to_frame(), what


def judges_section(data: pd.DataFrame, *, judge: str | None = None,
                   labels: pd.DataFrame | str | Path | None = None, human: str = "human",
                   conf_level: float = 0.95, log: list[dict[str, Any]] | None = None) -> ReportSection:
    """The report's judges section: agreement, judge effects and PPI estimates.

    With a judge column (``judge=``, or a slice called ``judge``), :func:`evalmix.judge_study` gives
    the agreement of the judges on the same responses, each judge's bias against the mean judge,
    the judge-by-model interaction test and the judges' share of the variance.  With human
    ``labels`` (a table of model, item, optionally run, and the ``human`` score of a few responses)
    :func:`evalmix.ppi_mean` gives the prediction-powered (PPI++) mean of the human score per model,
    beside the human-only and the judge-only means.

    Parameters
    ----------
    data : DataFrame
        A runs table from :func:`evalmix.read_runs` with 0/1 verdicts (one row per model, item,
        run and judge).
    judge : str, optional
        The judge column (default: a slice called ``judge``).
    labels : DataFrame or path, optional
        Human scores of some responses.
    human : str
        The human score column of ``labels``.
    conf_level : float
        Level of every interval.
    log : list, optional
        Rows describing each model fitted are appended to it (the report's ``fits`` table).

    Returns
    -------
    ReportSection
        Left out, with the reason, when there is neither a judge column nor labels, or when the
        table cannot be read as one verdict per response and judge.

    Examples
    --------
    >>> import evalmix, numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> rows = [(m, f"q{i}", r, j) for m in "AB" for i in range(30) for r in (1, 2) for j in ("x", "y")]
    >>> df = pd.DataFrame(rows, columns=["model", "item", "run", "judge"])
    >>> df["correct"] = (rng.random(len(df)) < np.where(df["judge"] == "y", 0.4, 0.7)).astype(int)
    >>> sec = judges_section(evalmix.read_runs(df))
    >>> [name for name, _, _ in sec.tables]
    ['judge_agreement', 'judge_agreement_pairs', 'judge_bias', 'judge_means', 'judge_variance']
    """
    from .studies.judges import judge_study

    check_arguments(conf_level=conf_level)
    schema = schema_of(data)
    if schema is None:
        raise DataError("judges_section needs a runs table from evalmix.read_runs")
    title = "LLM judges: agreement, judge effects and human-corrected means"
    judge_col = _judge_column(schema, data, judge)
    if judge_col is None and labels is None:
        return ReportSection("judges", title, skipped="Left out: the table has no judge column (name it with "
                                                      "judge=) and no human labels were given (labels=).")
    if schema.counts:
        return ReportSection("judges", title, skipped="Left out: judge verdicts are one 0/1 answer per "
                                                      "response, not k-of-n counts.")
    tabs: list[tuple[str, str, pd.DataFrame]] = []
    figs: list[tuple[str, str, Figure]] = []
    notes: list[str] = []
    if judge_col is not None:
        others = [s for s in schema.slices if s != judge_col and data[s].nunique() >= 2]
        if others:
            notes.append(f"Judge effects left out: the table has further conditions ({', '.join(others)}), "
                         "so a response is not identified by model, item and run alone.")
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the fits' convergence and boundary flags go to the log
                study = judge_study(data, judge=judge_col, outcome=schema.outcome, model=schema.model,
                                    item=schema.item, run=schema.run, conf_level=conf_level)
            if log is not None:
                for use, fit in study.fits.items():
                    log.append(_fit_row(f"judges: {use.replace('_', ' ')}", study.formulas[use], fit.nobs,
                                        fit.converged, fit.singular))
            it = study.interaction
            lrt = (f"The judge-by-model interaction (does a judge favour some models?) has a likelihood-ratio "
                   f"χ² of {it['statistic']:.2f} on {it['df']:g} df, p = {it['p_value']:.3g}."
                   if np.isfinite(it["p_value"]) else "")
            notes.append(f"{study.agreement.n_judges} judges ({judge_col}) graded {study.n_responses} responses "
                         "(model × item × run). Judge effects come from a logistic mixed model with the judge "
                         "beside the model and intercepts for items and responses; each judge's bias is its "
                         "marginal mean against the mean judge (log-odds; 'difference' on the probability "
                         f"scale). {lrt} The judges take {study.judge_share:.1%} of the latent variance "
                         "(the model with a random judge effect).")
            tabs += [("judge_agreement", "Agreement of the judges on the same responses (Krippendorff's α, "
                      "Fleiss' κ, ICC(A,1)).", study.agreement.table),
                     ("judge_agreement_pairs", "Cohen's κ of each pair of judges.", study.agreement.pairs),
                     ("judge_bias", "Judge bias: each judge against the mean judge (log-odds; difference "
                      "on the probability scale).", study.bias),
                     ("judge_means", "Marginal mean verdict of each judge.", study.means),
                     ("judge_variance", "Variance components with a random judge effect (share of the "
                      "latent variance).", study.variance)]
            by = study.by_judge
            if schema.model in by.columns and "judge" in by.columns:
                from .plots import accuracy_intervals

                figs.append(("judge_accuracy", "Accuracy of each model under each judge (interaction "
                             f"model, {conf_level:.0%} intervals).",
                             _close(accuracy_intervals(by, y=str(schema.model), hue="judge"))))
    if labels is not None:
        ppi, what = _ppi_table(data, schema, judge_col, labels, human, conf_level)
        notes.append(f"Human-corrected means: the judge score of a response is {what}; a few responses "
                     f"carry a human score ({human}). PPI++ corrects the judges' mean by their average error "
                     "on the labelled items, with the judge's weight (lambda) tuned; items are the sampling "
                     "unit. The judge-only mean ignores the labels and carries the judges' bias; the "
                     "human-only mean uses the labels alone.")
        tabs.append(("judge_ppi", f"Prediction-powered (PPI++) means of the human score per model beside the "
                     f"human-only and judge-only means ({conf_level:.0%} intervals).", ppi))
    return ReportSection("judges", title, " ".join(notes), tables=tuple(tabs), figures=tuple(figs))


def arena_section(battles: pd.DataFrame | str | Path, *, cluster: str | None = None,
                  conf_level: float = 0.95) -> ReportSection:
    """The report's arena section: Bradley-Terry ratings with intervals, rank sets and tie groups.

    Battles (model A vs model B, a winner or a tie) are fitted by :func:`evalmix.bradley_terry`
    with Davidson's ties (ties left out when there are none) and the first-position effect, on the
    Elo scale with sandwich intervals (clustered by ``cluster``, e.g. the prompt).

    Parameters
    ----------
    battles : DataFrame or path
        Battle table (see :func:`evalmix.read_battles`), or battle files and folders of them
        recognised by content (:func:`evalmix.read_arena_battles`, MT-bench pairwise judgments).
    cluster : str, optional
        Cluster column of the sandwich.
    conf_level : float
        Level of the intervals and joint coverage of the rank sets.

    Returns
    -------
    ReportSection

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(1)
    >>> a = rng.integers(0, 3, 600); b = (a + rng.integers(1, 3, 600)) % 3
    >>> p_a = 1 / (1 + np.exp(np.array([0.0, 0.5, 1.0])[b] - np.array([0.0, 0.5, 1.0])[a]))
    >>> u = rng.random(600)
    >>> won = np.where(u < p_a - 0.1, "model_a", np.where(u < p_a + 0.1, "tie", "model_b"))
    >>> names = np.array(["small", "medium", "large"])
    >>> sec = arena_section(pd.DataFrame({"model_a": names[a], "model_b": names[b], "winner": won}))
    >>> sec.tables[0][2]["model"].tolist()
    ['large', 'medium', 'small']
    """
    check_arguments(conf_level=conf_level)
    return _arena_section(_battle_table(battles, cluster), cluster, conf_level)


def _battle_table(battles: pd.DataFrame | str | Path, cluster: str | None) -> pd.DataFrame:
    """The battles read and checked (the cluster column kept as ``prompt``): the report reads them
    before its first fit, so that a bad battle file fails at once."""
    from .studies.arena import read_battles

    if isinstance(battles, (str, Path)):
        from .io.detect import detect_format, is_log_source, read_logs

        # battle files found by content (FastChat clean_battle JSON, lmarena tables, MT-bench pairs)
        fmt = detect_format(battles) if is_log_source(battles) else None
        if fmt in ("arena", "mt-bench"):
            battles = read_logs(battles, **({"kind": "pair"} if fmt == "mt-bench" else {}))
    return read_battles(battles, prompt=cluster)


def _arena_section(table: pd.DataFrame, cluster: str | None, conf_level: float) -> ReportSection:
    from .studies.arena import bradley_terry
    from .plots.leaderboard import leaderboard_plot

    ties: Literal["davidson", "drop"] = "davidson" if (table["winner"] == "tie").any() else "drop"
    bt = bradley_terry(table, ties=ties, cluster="prompt" if cluster is not None else None,
                       conf_level=conf_level)
    assert bt.rank_sets is not None  # rank_sets=True is the default
    pct = f"{conf_level:.0%}"
    ci = f"sandwich clustered by {cluster}" if cluster is not None else "sandwich, each battle its own cluster"
    note = (f"{bt.n_battles:,} battles among {len(bt.table)} models, fitted by Bradley-Terry maximum "
            f"likelihood with {'Davidson ties' if ties == 'davidson' else 'no ties in the battles'} and an "
            f"effect of being shown first; ratings on the Elo scale (400 points are odds of 10 to 1, mean "
            f"1000) with {pct} intervals ({ci}). Rank sets hold every model's rank jointly with {pct} "
            "confidence; models sharing a tie-group letter cannot be told apart.")
    return ReportSection(
        "arena", "Pairwise battles: Bradley-Terry ratings and rank sets", note,
        tables=(("arena_ratings", f"Bradley-Terry ratings (Elo scale) with {pct} intervals, simultaneous rank "
                 "sets and tie groups.", bt.table),
                ("arena_params", "Position effect (rating points gained by being shown first) and Davidson's "
                 "tie parameter.", bt.params)),
        figures=(("arena_leaderboard", f"Ratings with {pct} intervals beside simultaneous rank sets and tie "
                  "groups.", _close(leaderboard_plot(bt.rank_sets))),))


#: Slice columns read as the harness or benchmark version of a response (the version-shift tables).
VERSION_COLUMNS = ("harness_version", "benchmark_version", "version")


def health_section(data: pd.DataFrame, *, top_k: int | None = None, version: str | None = None,
                   alpha: float = 0.05) -> ReportSection:
    """The report's benchmark-health section: dead items among the top models, effective items,
    signal-to-noise and run noise per model; version shifts when the table has a version column.

    Parameters
    ----------
    data : DataFrame
        A runs table from :func:`evalmix.read_runs` with 0/1 outcomes (or k-of-n counts).
    top_k : int, optional
        The top models items must separate (default: all models).
    version : str, optional
        Column of harness or benchmark versions (default: the first slice named as in
        :data:`VERSION_COLUMNS`; none, no version tables).
    alpha : float
        FDR level of the item-by-version flags.

    Returns
    -------
    ReportSection

    Examples
    --------
    >>> import evalmix
    >>> sec = health_section(evalmix.read_runs("data/example_runs.csv"))
    >>> [name for name, _, _ in sec.tables]
    ['health_benchmark', 'health_items', 'health_models']
    """
    from .plots.health import item_health_plot, version_shift_plot
    from .studies.health import item_health, version_shift

    schema = schema_of(data)
    if schema is None:
        raise DataError("health_section needs a runs table from evalmix.read_runs")
    if version is None:
        version = next((c for c in VERSION_COLUMNS if c in schema.slices), None)
    counts = schema.counts
    item, model = schema.role("item"), schema.role("model")
    outcome = "correct" if counts else schema.role("outcome")
    successes, trials = (schema.successes, schema.trials) if counts else (None, None)
    n_models, n_items = data[model].nunique(), data[item].nunique()
    if n_models < 3 or n_items < 3:
        return ReportSection("health", "Benchmark health", skipped=(
            f"Left out: item health compares at least 3 models on at least 3 items (the table has {n_models} "
            f"model(s) and {n_items} item(s))."))
    # item-rest correlations: no model fit, so the section costs little (evalmix.item_health(...,
    # method="2pl") gives the 2PL parameters)
    h = item_health(data, top_k, method="point_biserial", item=item, model=model, outcome=outcome,
                    run=schema.run, successes=successes, trials=trials)
    b = h.benchmark.iloc[0]
    note = (f"Items that no longer separate the top {h.top_k} models: {int(b['dead'])} of {int(b['n_items'])} "
            f"({b['dead_share']:.0%}; all solve {int(b['all_solve'])}, none solve {int(b['none_solve'])}, flat "
            f"{int(b['flat'])}: discrimination among the top models below {h.min_discrimination:g}). The benchmark "
            f"is worth about {b['effective_items']:.0f} equally discriminating items; the models' scores stand "
            f"{b['snr']:.3g} times further apart than item sampling and run noise would put them (about 1: "
            "they cannot be ranked). Run noise is given per model.")
    dead = h.items.sort_values(["dead", "top_discrimination"], ascending=[False, True], kind="stable")
    tabs: list[tuple[str, str, pd.DataFrame]] = [
        ("health_benchmark", "Benchmark health: dead share, effective items, signal-to-noise.", h.benchmark),
        ("health_items", f"Items, dead first: discrimination among the top {h.top_k} models and the reason an "
                         "item is dead.", dead),
        ("health_models", "Run-to-run noise per model.", h.models)]
    figs = [("health_map", "Items by accuracy and discrimination among the top models (dead items by "
             "reason), and the run noise of each model.", _close(item_health_plot(h)))]
    if version is not None:
        vs = version_shift(data, version, alpha=alpha, item=item, model=model, outcome=outcome, run=schema.run,
                           successes=successes, trials=trials)
        flagged = vs.affected_items()
        note += (f" Versions ({version!r}, against {vs.reference!r}): "
                 + ("a systematic shift is tested through the models run under several versions"
                    if vs.identified else "no model ran under two versions, so a systematic shift cannot be "
                                          "told from model strength")
                 + f"; {len(flagged)} item(s) shifted beyond it (Benjamini-Hochberg at {alpha:g}), matched on "
                   "model ability; scores equated to the reference version.")
        tabs += [("version_overall", "Version shifts: systematic (GLMM with model fixed effects) and item by "
                                     "version.", vs.overall),
                 ("version_items", "Per-item version shifts (logistic-regression DIF), BH-adjusted.", vs.items),
                 ("version_models", "Scores per model and version, equated to the reference version.",
                  vs.models)]
        figs.append(("version_shift", "Item shifts beyond the systematic one, and scores before and after "
                                      "equating.", _close(version_shift_plot(vs))))
    return ReportSection("health", "Benchmark health", note, tables=tuple(tabs), figures=tuple(figs))


# ----------------------------------------------------------------------------------------------
# scores beyond 0/1: judge ratings, continuous scores, overdispersed k-of-n counts

#: The most distinct integer values an outcome may take to be read as a rating scale (ordinal);
#: integers on a wider range are read as a continuous score.
RATING_LEVELS_MAX = 10

OutcomeKind = Literal["binary", "counts", "ordinal", "continuous"]

# what each kind is fitted with, and the scale its means and contrasts are on
_SCORE_FITS = {
    "ordinal": ("clmm", "a cumulative-link (proportional-odds) mixed model, R's ordinal::clmm"),
    "continuous": ("lmer", "a linear mixed model fitted by REML, R's lme4::lmer with lmerTest's "
                           "Satterthwaite df"),
    "counts": ("glmmtmb", "a beta-binomial mixed model (logit link), R's glmmTMB(family = betabinomial)"),
}


def outcome_kind(runs: pd.DataFrame) -> OutcomeKind:
    """What the outcome of a runs table is, and so which model the report fits.

    ``"binary"``: 0/1 (a binomial GLMM, ``glmer``); ``"counts"``: k of n (``glmer``, or a
    beta-binomial ``glmmtmb`` when :func:`evalmix.check_overdispersion` finds overdispersion);
    ``"ordinal"``: integers taking 3 to :data:`RATING_LEVELS_MAX` distinct values, such as judge
    ratings on a 1-5 scale (``clmm``); ``"continuous"``: any other numbers, such as partial credit or
    a similarity score (``lmer``).

    Parameters
    ----------
    runs : DataFrame
        A runs table from :func:`evalmix.read_runs` (``allow_fractional="any"`` for scores).

    Returns
    -------
    str

    Examples
    --------
    >>> import pandas as pd
    >>> import evalmix
    >>> d = pd.DataFrame({"model": ["a", "a", "b", "b"], "item": [1, 2, 1, 2], "run": 1,
    ...                   "rating": [1, 3, 5, 4]})
    >>> outcome_kind(evalmix.read_runs(d, outcome="rating", allow_fractional="any"))
    'ordinal'
    >>> outcome_kind(evalmix.read_runs(d.assign(rating=[0.5, 0.25, 1.0, 0.75]), outcome="rating",
    ...                                allow_fractional="any"))
    'continuous'
    """
    schema = schema_of(runs)
    if schema is None:
        raise DataError("outcome_kind needs a runs table from evalmix.read_runs (its column roles)")
    if schema.counts:
        return "counts"
    y = pd.to_numeric(runs[schema.scores], errors="coerce").to_numpy(dtype=float)
    values = np.unique(y[np.isfinite(y)])
    if np.isin(values, [0.0, 1.0]).all():
        return "binary"
    if np.all(values == np.round(values)) and 3 <= len(values) <= RATING_LEVELS_MAX:
        return "ordinal"
    return "continuous"


def _kind_sentence(data: pd.DataFrame, col: str, kind: str) -> str:
    y = pd.to_numeric(data[col], errors="coerce")
    if kind == "ordinal":
        return (f"the outcome {col!r} takes {y.nunique()} integer values from {y.min():g} to {y.max():g}, "
                "read as ratings on an ordered scale")
    if kind == "continuous":
        return f"the outcome {col!r} is a numeric score from {y.min():.4g} to {y.max():.4g}"
    return f"the outcome is k of n counts ({col!r}) with more spread than a binomial model allows"


def _variance_table(fit: Any, kind: str) -> tuple[pd.DataFrame, str]:
    """Variance components of the fit and each one's share of the total (its intraclass correlation
    on the model's scale), with the scale named."""
    vc = fit.varcorr
    if kind == "continuous":
        # variances only (lme4's as.data.frame(VarCorr): covariances name a second variable)
        comp = vc[vc["var2"].fillna("").astype(str) == ""] if "var2" in vc else vc
        names = comp["group"].astype(str).tolist()
        var = comp["variance"].to_numpy(float)
        scale = "the score's scale (the residual is the lmer residual variance)"
    else:
        names = vc["group"].astype(str).tolist() + ["Residual (latent)"]
        resid = 1.0 if getattr(fit, "link", "logit") == "probit" else np.pi ** 2 / 3
        var = np.r_[vc["variance"].to_numpy(float), resid]
        scale = ("the latent scale: the residual is the standard logistic's variance pi^2/3"
                 + (" (the probit link's: 1)" if resid == 1.0 else ""))
        if kind == "counts":
            scale += "; the beta-binomial's extra-binomial spread is not a component here"
    share = var / var.sum()
    tab = pd.DataFrame({"component": names, "variance": var, "sd": np.sqrt(var), "share": share})
    return tab, scale


def _score_fit(kind: str, formula: str, data: pd.DataFrame, log: list[dict[str, Any]]) -> Any:
    from .lmm import lmer
    from .ordinal import clmm
    from .tmb import glmmtmb

    fit: Any
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if kind == "ordinal":
            fit = clmm(formula, data)
        elif kind == "continuous":
            fit = lmer(formula, data)
        else:
            fit = glmmtmb(formula, data, family="betabinomial")
    log.append(_fit_row(f"{_SCORE_FITS[kind][0]}: means, contrasts, variance components", formula,
                        fit.nobs, fit.converged, bool(getattr(fit, "singular", False)),
                        [str(w.message) for w in caught]))
    return fit


def _score_sections(data: pd.DataFrame, roles: dict[str, Any], kind: str, fixed: str, ref: str | None,
                    conf_level: float, log: list[dict[str, Any]], check: Any = None
                    ) -> tuple[list[ReportSection], str, str]:
    """The sections of a report on a score: the scores by model, the mixed model (variance
    components), marginal means and contrasts.  Returns them, the formula fitted and the reference."""
    schema = roles["schema"]
    m, col = schema.model, schema.scores
    n_runs = int(data[schema.run].nunique()) if schema.run else 1
    # every engine takes the nested item:run intercepts (clmm too: the nested Laplace Hessian keeps
    # it under a second on the example's 960 ratings)
    random = [schema.item] + ([f"{schema.item}:{schema.run}"] if n_runs > 1 else [])
    base = make_formula(str(col), random=random, trials=schema.trials if kind == "counts" else None)
    formula = base.with_fixed(fixed).text
    y = data[col].astype(float) if kind != "counts" else data[col] / data[schema.trials]
    scores = (pd.DataFrame({m: data[m], "y": y}).groupby(m, observed=True)["y"]
              .agg(n="size", mean="mean", sd="std", min="min", max="max").reset_index())
    scores[m] = scores[m].astype(str)
    scores = scores.sort_values("mean", ascending=False, kind="stable").reset_index(drop=True)
    ref = ref if ref is not None else str(scores[m].iloc[0])
    if ref not in scores[m].tolist():
        raise DataError(f"reference={ref!r} is not a model; the models are {scores[m].tolist()}")
    what = "score" if kind == "continuous" else "rating" if kind == "ordinal" else "share of the n trials"
    tabs: list[tuple[str, str, pd.DataFrame]] = [
        ("scores", f"Observed {what} by model: rows, mean, SD, range (raw, every row counted once).", scores)]
    if kind == "ordinal":
        dist = pd.crosstab(data[m].astype(str), data[col], normalize="index").mul(100)
        dist.columns = [f"{v:g}" for v in dist.columns]
        tabs.append(("rating_distribution", "Share of each rating by model (%).",
                     dist.reset_index().rename(columns={"index": m})))
    if check is not None:
        tabs.append(("overdispersion", "Overdispersion of the binomial model: " + check.verdict() + ".",
                     check.to_frame()))
    engine, described = _SCORE_FITS[kind]
    note = (f"{_kind_sentence(data, str(col), kind)[:1].upper()}{_kind_sentence(data, str(col), kind)[1:]}, so "
            f"the report fits {described} instead of the binomial GLMM it fits to 0/1 outcomes; nothing is "
            "binarised.")
    sections = [ReportSection("scores", "Scores by model", note, tables=tuple(tabs))]

    fit = _score_fit(kind, formula, data, log)
    if kind == "ordinal":
        from .ordinal import clmm_emmeans, clmm_ref_grid

        coef = fit.coef_table(conf_level).to_frame()
        grid: Any = clmm_ref_grid(fit, conf_level=conf_level)
        emm = emmeans(grid, m, conf_level=conf_level)
        shown = clmm_emmeans(fit, m, mode="mean.class", conf_level=conf_level).to_frame()
        means_caption = (f"Mean rating by model (clmm's mean.class, averaged over the other factors with "
                         f"equal weights), {_pct(conf_level)} Wald intervals.")
        scale = "the latent scale of the cumulative-link model (log-odds of a higher rating)"
    elif kind == "continuous":
        coef = fit.coef_table(conf_level=conf_level).to_frame()
        emm = emmeans(fit, m, conf_level=conf_level)
        shown = emm.to_frame()
        means_caption = (f"Mean score by model (averaged over the other factors with equal weights), "
                         f"{_pct(conf_level)} t intervals with Satterthwaite df.")
        scale = "the score's own scale (t tests with Satterthwaite df)"
    else:
        coef = fit.coef_table(conf_level).to_frame()
        emm = emmeans(fit, m, conf_level=conf_level)
        shown = emmeans(fit, m, type="response", conf_level=conf_level).to_frame()
        means_caption = (f"Expected share of the n trials by model (beta-binomial, averaged over the other "
                         f"factors with equal weights), {_pct(conf_level)} intervals.")
        scale = "the log-odds scale of the beta-binomial model"
    var_tab, var_scale = _variance_table(fit, kind)
    sections.append(ReportSection(
        "score_model", "Mixed model of the score",
        f"{engine}: {formula}. Random intercepts of items"
        + (" and of runs within items" if any(":" in r for r in random) else "")
        + f". Variance components are on {var_scale}; each component's share of the total is its "
          "intraclass correlation (ICC): the item share is the correlation of two answers to the same item "
          "by the same model.",
        tables=(("score_coefficients", f"Coefficients of the {engine} fit.", coef),
                ("score_variance", "Variance components and their shares of the total (ICC).", var_tab))))
    pairs = contrast(emm, "pairwise", adjust="holm", conf_level=conf_level).to_frame()
    vs_ref = contrast(emm, "trt.vs.ctrl", ref=ref, adjust="dunnettx", conf_level=conf_level).to_frame()
    from .plots import marginal_means

    y_all = pd.to_numeric(data[col], errors="coerce")
    axis = (f"mean rating ({y_all.min():g}-{y_all.max():g}, {_pct(conf_level)} CI)" if kind == "ordinal" else
            f"mean score ({_pct(conf_level)} CI)" if kind == "continuous" else
            f"expected share of the trials ({_pct(conf_level)} CI)")
    fig = _close(marginal_means(shown[[m, "estimate", "conf_low", "conf_high"]], scale=axis))
    sections.append(ReportSection(
        "score_means", "Marginal means and contrasts of the score",
        f"Marginal means of each model from the {engine} fit and their differences on {scale}: every pair "
        f"with Holm-adjusted p-values, and each model against the reference {ref} with Dunnett's "
        "(dunnettx) adjustment.",
        tables=(("score_means", means_caption, shown),
                ("score_pairwise", f"Pairwise differences on {scale} (Holm).", pairs),
                ("score_vs_reference", f"Each model against {ref} on {scale} (Dunnett).", vs_ref)),
        figures=(("fig_score_means", means_caption, fig),)))
    return sections, formula, ref


def _overdispersion(formula: str, data: pd.DataFrame) -> Any:
    from .tmb import check_overdispersion, glmmtmb

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the fits' warnings belong to the check, not the page
        return check_overdispersion(glmmtmb(formula, data, family="binomial"))


def _score_report(data: pd.DataFrame, out: str | Path | None, *, roles: dict[str, Any], kind: str, fixed: str,
                  reference: str | None, slice_: str | None, conf_level: float, title: str | None,
                  judge_col: str | None, labels: Any, battles: Any, battle_cluster: str | None, check: Any,
                  bayes: bool, seed: int, n_boot: int) -> Report:
    """The report on a judge rating, a continuous score or overdispersed counts: the sections that
    apply to any score, and a line saying why each 0/1-only section is left out."""
    schema = roles["schema"]
    col = str(schema.scores)
    log: list[dict[str, Any]] = []
    sections: list[ReportSection] = [_data_section(data, roles, slice_)]
    score_secs, formula, ref = _score_sections(data, roles, kind, fixed, reference, conf_level, log, check)
    sections += score_secs[:1]
    what = _kind_sentence(data, col, kind)
    left_out = [
        ("accuracy", "Accuracy with intervals", "accuracy with Wilson intervals"),
        ("selection", "Model selection by BIC", "BIC among the binomial GLMMs of the paper's candidates"),
        ("odds_ratios", "Odds ratios against the reference", "odds ratios of a binomial GLMM"),
        ("slice_means", "Marginal means by slice", "accuracy by slice from a binomial GLMM"),
        ("slice_models", "Slice fit comparison and conditional contrasts", "binomial GLMMs by slice"),
        ("reliability", "Run-to-run reliability", "flip rates and entropy of 0/1 answers"),
        ("ranks", "Rank instability and rank intervals", "leaderboards of accuracy"),
        ("repetitions", "SE against repetitions and study planning", "the binomial variance of accuracy"),
        ("robustness", "Robustness across a slice (Table S7)", "accuracy across a slice"),
    ]
    sections += [ReportSection(key, name, skipped=f"Left out: this section is computed for 0/1 outcomes "
                               f"({why}), and {what}. The score sections give its means, contrasts and "
                               "variance components (ICC).") for key, name, why in left_out]
    sections += score_secs[1:]
    if bayes:
        sections.append(ReportSection("bayes", "Posterior rank probabilities",
                                      skipped=f"Left out: the Bayesian model is a binomial GLMM, and {what}."))
    if judge_col is not None or labels is not None:
        sections.append(ReportSection(
            "judges", "LLM judges", skipped=f"Left out: the judges section reads 0/1 verdicts, and {what}; the "
            f"judge column {judge_col!r} enters the score model's fixed part instead." if judge_col else
            f"Left out: the judges section reads 0/1 verdicts, and {what}."))
    if battles is not None:
        sections.append(_arena_section(battles, battle_cluster, conf_level))
    sections.append(_fits_section(log))
    engine = _SCORE_FITS[kind][0]
    options = {"reference": ref, "slice": slice_, "conditions": roles["conditions"], "selected": None,
               "contrast_model": formula, "conf_level": conf_level, "seed": seed, "n_boot": n_boot,
               "bayes": bayes, "judge": judge_col, "labels": labels is not None, "battles": battles is not None,
               "outcome": col, "outcome_kind": kind, "engine": engine}
    rep = Report(sections=tuple(sections), title=title or "Evaluation report",
                 formulas={formula: f"{engine}: means, contrasts, variance components"},
                 versions=_versions(), options=options)
    if out is not None:
        rep.save(out)
    return rep


# ----------------------------------------------------------------------------------------------
# the report


def _fits_section(log: list[dict[str, Any]], singular: str = "", check: Any = None) -> ReportSection:
    """The last section: every mixed model the report fitted, with its convergence and warnings
    (``singular``: what a singular fit means for these models; ``check``: the overdispersion check
    of k-of-n counts that chose the binomial models)."""
    fit_log = pd.DataFrame(log)
    n_bad = int((~fit_log["converged"]).sum())
    return ReportSection(
        "fits", "Models fitted",
        "Every mixed model fitted for this report (lme4 syntax), with its convergence and boundary "
        f"checks and the first line of each warning. {n_bad} of {len(fit_log)} did not converge"
        + (f"; {singular}." if singular else ".")
        + (f" The k-of-n counts were checked for overdispersion first: {check.verdict()}, so the binomial "
           "models stand." if check is not None else ""),
        tables=(("fits", "Models fitted, with convergence and warnings.", fit_log),))


@accepts_seed
def report(runs: pd.DataFrame | str | Path, out: str | Path | None = None, *,
           reference: str | None = None, slice: str | None = None, candidates: Sequence[str] | None = None,
           formula: str | None = None, bayes: bool = False, rng: int = 0, conf_level: float = 0.95,
           n_boot: int = 1000, plan_se: float = 0.03, cost_item: float = 10.0, cost_run: float = 1.0,
           title: str | None = None, item: str = "item", outcome: str = "correct", judge: str | None = None,
           labels: pd.DataFrame | str | Path | None = None, human: str = "human",
           battles: pd.DataFrame | str | Path | None = None, battle_cluster: str | None = None) -> Report:
    """Every table and figure of a repeated-runs study, with the corrected analyses beside the paper's.

    Parameters
    ----------
    runs : DataFrame or path
        A runs table, ideally from :func:`evalmix.read_runs` (its column roles are used); a path or
        an unvalidated DataFrame is read with :func:`evalmix.read_runs` (``item=`` names the item
        column).
    out : path, optional
        Directory to write the page, tables and figures into (see :meth:`Report.save`).
    reference : str, optional
        Model the odds ratios are taken against (default: the most accurate model overall).
    slice : str, optional
        Slice for the marginal means, the heatmap, the slice model comparison and Table S7
        (default: the first item attribute, such as a domain column; the sections are left out
        when there is none).
    candidates : list of str, optional
        Fixed-effect parts compared by BIC (default: :func:`candidate_formulas` of the conditions,
        the paper's five for language and prompt).  The random part is added:
        ``(1|item) + (1|item:run)``.
    formula : str, optional
        Fixed part of the model behind the odds ratios and the within-condition contrasts (default:
        the saturated candidate, model × every condition).
    bayes : bool
        Add posterior rank probabilities (needs the ``bayes`` extra; samples for a while).
    rng : int
        Seed of the bootstrap (rank intervals) and the sampler.
    conf_level : float
        Level of every interval.
    n_boot : int
        Bootstrap replicates for the rank intervals.
    plan_se, cost_item, cost_run : float
        Target SE per slice and costs for the study planner (:func:`evalmix.studies.repetitions.plan`).
    title : str, optional
    item, outcome : str
        Item and outcome columns when ``runs`` is not yet validated (it is read with
        :func:`evalmix.read_runs`, any numeric outcome accepted).
    judge : str, optional
        Column naming the judge that gave each verdict (default: a slice called ``judge``); adds the
        judges section (:func:`judges_section`: agreement, judge bias, variance share).
    labels : DataFrame or path, optional
        Human scores of some responses (model, item, optionally run, and ``human``); adds
        prediction-powered means of the human score to the judges section.
    human : str
        The human score column of ``labels``.
    battles : DataFrame or path, optional
        Arena battles (model_a, model_b, winner); adds the arena section (:func:`arena_section`).
    battle_cluster : str, optional
        Column of ``battles`` the sandwich clusters on (usually the prompt).

    Returns
    -------
    Report

    Examples
    --------
    >>> import evalmix
    >>> df = evalmix.simulate.glmm_runs(3, 30, 3, slices={"language": ["EN", "ES"]}, rng=1)
    >>> rep = evalmix.report(df, n_boot=100)
    >>> [s.key for s in rep.sections][:4]
    ['data', 'accuracy', 'selection', 'odds_ratios']
    >>> rep.section("slice_means").skipped.startswith("Left out")
    True
    """
    check_arguments(rng=rng, conf_level=conf_level, n_boot=n_boot)
    if not isinstance(runs, pd.DataFrame) or schema_of(runs) is None:
        # any numeric outcome is read: 0/1 goes the binomial way, scores are fitted as what they are
        runs = read_runs(runs, item=item, outcome=outcome, allow_fractional="any")
    data = runs
    roles = _roles(data)
    schema = roles["schema"]
    m = schema.model
    if data[m].nunique() < 2:
        raise DataError(f"a report compares models: column {m!r} has one level ({data[m].iloc[0]!r})")
    n_runs = int(data[schema.run].nunique()) if schema.run else 1
    # the response, random intercepts of items (and of runs within items): the fixed part varies
    base = make_formula(str(schema.successes if schema.counts else schema.outcome),
                        random=[schema.item] + ([f"{schema.item}:{schema.run}"] if n_runs > 1 else []),
                        trials=schema.trials if schema.counts else None)
    if slice is not None and slice not in schema.slices:
        raise DataError(f"slice={slice!r} is not a slice column; the slices are {list(schema.slices)}")
    slice_ = slice if slice is not None else (roles["item_level"][0] if roles["item_level"] else None)
    cond = roles["conditions"]  # a condition chosen as the slice stays a condition
    judge_col = _judge_column(schema, data, judge)  # a bad judge= fails before the fits
    if battles is not None:  # so does a bad battle file
        battles = _battle_table(battles, battle_cluster)
    kind = outcome_kind(data)
    check = None
    if kind == "counts":
        check = _overdispersion(base.with_fixed(m).text, data)
        if not (check.p_value < check.alpha or check.lrt_p_value < check.alpha):
            kind = "binary"  # the binomial model's uncertainty holds: the report as for 0/1
    if kind != "binary":
        return _score_report(data, out, roles=roles, kind=kind, fixed=formula or candidate_formulas(cond, m)[0],
                             reference=reference, slice_=slice_, conf_level=conf_level, title=title,
                             judge_col=judge_col, labels=labels, battles=battles, battle_cluster=battle_cluster,
                             check=check, bayes=bayes, seed=rng, n_boot=n_boot)
    if not schema.counts and data[schema.outcome].dtype != np.int8:
        data = data.assign(**{schema.outcome: data[schema.outcome].astype("int8")})  # 0/1 read as numbers

    sections: list[ReportSection] = [_data_section(data, roles, slice_)]
    overall = _overall(data, roles, conf_level)
    levels = [str(v) for v in overall[m]]
    ref = str(reference) if reference is not None else levels[0]
    if ref not in levels:
        raise DataError(f"reference={reference!r} is not a model; the models are {levels}")
    sections.append(_accuracy_section(data, roles, conf_level, overall, ref))
    cands = list(candidates) if candidates is not None else candidate_formulas(cond, m)
    log: list[dict[str, Any]] = []
    fits = {c: _fit(base.with_fixed(c).text, data, log, "candidate") for c in cands}
    sel, best = _selection_section(fits, base)
    sections.append(sel)
    full = formula or candidate_formulas(cond, m)[0]
    if full in fits:
        full_fit = fits[full]
        log[cands.index(full)]["use"] = "candidate; odds ratios and contrasts"
    else:
        full_fit = _fit(base.with_fixed(full).text, data, log, "odds ratios and contrasts")
    flips: list[dict[str, Any]] = []
    if n_runs >= 2 and not schema.counts:
        flips = _sign_flip_rows(data, base.with_fixed(best).text, ref, m, log)
    sections.append(_odds_section(data, roles, full_fit, full, ref, conf_level, flips))
    if slice_ is not None:
        means_sec, fit_sec, acc_slice = _slice_sections(data, roles, slice_, base, ref,
                                                        conf_level, log)
        sections += [means_sec, fit_sec]
    else:
        line = ("Left out: the table has no item attribute (a column with one level per item, "
                "such as a domain); pass slice=COLUMN to use a condition instead.")
        sections += [ReportSection("slice_means", "Marginal means by slice", skipped=line),
                     ReportSection("slice_models", "Slice fit comparison and conditional "
                                   "contrasts", skipped=line)]
    corrections: list[dict[str, Any]] = list(flips)
    if slice_ is not None:
        corrections += _slice_test_rows(means_sec, slice_)
    if n_runs >= 2 and not schema.counts:
        rel_sec, corr = _reliability_section(data, roles)
        sections.append(rel_sec)
        corrections += corr
        rank_sec, corr = _ranks_section(data, roles, n_runs, n_boot, rng)
        sections.append(rank_sec)
        corrections += corr
        rep_sec, corr = _repetitions_section(data, roles, n_runs, plan_se, cost_item, cost_run)
        sections.append(rep_sec)
        corrections += corr
    else:
        why = ("the table has a single run" if n_runs < 2 else
               "the outcome is given as k-of-n counts, not one answer per run")
        for key, name in (("reliability", "Run-to-run reliability"),
                          ("ranks", "Rank instability and rank intervals"),
                          ("repetitions", "SE against repetitions and study planning")):
            sections.append(ReportSection(key, name, skipped=f"Left out: {why}."))
    if slice_ is not None:
        sections.append(_robustness_section(acc_slice, roles, slice_))
    else:
        sections.append(ReportSection("robustness", "Robustness across a slice (Table S7)",
                                      skipped="Left out: no item attribute to summarise "
                                              "models across."))
    if corrections:
        sections.append(ReportSection(
            "corrections", "The paper's procedures and the corrected ones",
            "Where a procedure of the AI4Math study misleads, its number on this table is shown "
            "beside the corrected one, with the reason.",
            tables=(("corrections", "The paper's procedure against the corrected one.",
                     pd.DataFrame(corrections)),)))
    if bayes:
        sections.append(_bayes_section(data, base.with_fixed(best).text, m, rng))
    sections.append(health_section(data))
    if judge_col is not None or labels is not None:
        sections.append(judges_section(data, judge=judge_col, labels=labels, human=human,
                                       conf_level=conf_level, log=log))
    if battles is not None:
        sections.append(_arena_section(battles, battle_cluster, conf_level))
    sections += drift_sections(data, conf_level)
    sections.append(_fits_section(log, "a singular fit has a variance at zero (in single-run fits the "
                                  "item:run term is dropped, as it is aliased with the item term)", check))
    formulas: dict[str, str] = {}
    for row in log:  # formula -> what it was fitted for
        formulas[row["formula"]] = "; ".join(filter(None, [formulas.get(row["formula"]), row["use"]]))
    options = {"reference": ref, "slice": slice_, "conditions": cond, "selected": best,
               "contrast_model": full, "conf_level": conf_level, "seed": rng, "n_boot": n_boot,
               "bayes": bayes, "judge": judge_col, "labels": labels is not None,
               "battles": battles is not None, "outcome": str(schema.scores),
               "outcome_kind": "counts" if schema.counts else "binary", "engine": "glmer"}
    rep = Report(sections=tuple(sections), title=title or "Evaluation report", formulas=formulas,
                 versions=_versions(), options=options)
    if out is not None:
        rep.save(out)
    return rep


# ----------------------------------------------------------------------------------------------
# HTML

_CSS = """
body{font-family:-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;max-width:980px;margin:2em auto;
padding:0 1em;color:#222;line-height:1.45}
h1{font-size:1.6em;margin-bottom:.2em}h2{font-size:1.25em;border-bottom:1px solid #ddd;
padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;font-size:.82em;margin:.6em 0}th,td{padding:2px 8px;
border-bottom:1px solid #e4e4e4;text-align:right}th{border-bottom:2px solid #999}
td.l,th.l{text-align:left}caption{caption-side:top;text-align:left;font-weight:600;padding:.3em 0}
figure{margin:1em 0}figure img{max-width:100%;height:auto}figcaption{font-size:.88em;color:#444}
p.note{color:#333}p.skip{color:#8a5a00;font-style:italic}nav ol{columns:2;font-size:.9em}
details summary{cursor:pointer;color:#0b5394}code{font-size:.9em}
"""


def _html_table(caption: str, tab: pd.DataFrame, name: str) -> str:
    table = tables.to_html(tab, caption=caption, attrs=f'id="tab-{html.escape(name)}"')
    if len(tab) > 40:
        return (f"<details><summary>{tables.html_text(caption)} ({len(tab)} rows)</summary>{table}"
                "</details>")
    return table


def _render_html(rep: Report, images: dict[str, bytes]) -> str:
    parts = [f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>"
             f"{html.escape(rep.title)}</title><style>{_CSS}</style></head><body>",
             f"<h1>{html.escape(rep.title)}</h1>",
             "<p class=\"note\">Made with evalmix " + html.escape(rep.versions.get("evalmix", "")) +
             f". Reference model: <b>{html.escape(str(rep.options.get('reference')))}</b>; slice: "
             f"<b>{html.escape(str(rep.options.get('slice')))}</b>; " + (
                 f"model selected by BIC: <code>{html.escape(str(rep.options.get('selected')))}</code>.</p>"
                 if rep.options.get("engine", "glmer") == "glmer" else
                 f"outcome <b>{html.escape(str(rep.options.get('outcome')))}</b> "
                 f"({html.escape(str(rep.options.get('outcome_kind')))}), fitted by "
                 f"{html.escape(str(rep.options.get('engine')))}: "
                 f"<code>{html.escape(str(rep.options.get('contrast_model')))}</code>.</p>"),
             "<nav><ol>" + "".join(f'<li><a href="#{s.key}">{html.escape(s.title)}</a></li>'
                                   for s in rep.sections) + '<li><a href="#software">Software</a></li>'
             "</ol></nav>"]
    for s in rep.sections:
        parts.append(f'<section id="{s.key}"><h2>{html.escape(s.title)}</h2>')
        if s.skipped:
            parts.append(f'<p class="skip">{html.escape(s.skipped)}</p></section>')
            continue
        if s.note:
            parts.append(f'<p class="note">{html.escape(s.note)}</p>')
        for name, caption, _ in s.figures:
            png = images[name]
            b64 = base64.b64encode(png).decode("ascii")
            # shown at 100 CSS pixels per inch of the figure: a column-wide figure is 350 px
            width = int.from_bytes(png[16:20], "big") * 100 // _DPI if png[:8] == b"\x89PNG\r\n\x1a\n" else 0
            size = f' width="{width}"' if width else ""
            parts.append(f'<figure id="fig-{html.escape(name)}"><img alt="{html.escape(caption)}"{size} '
                         f'src="data:image/png;base64,{b64}"><figcaption>{html.escape(caption)}'
                         "</figcaption></figure>")
        for name, caption, tab in s.tables:
            parts.append(_html_table(caption, tab, name))
        parts.append("</section>")
    versions = pd.DataFrame({"software": list(rep.versions), "version": list(rep.versions.values())})
    parts.append('<section id="software"><h2>Software</h2>'
                 + _html_table("Software versions.", versions, "versions") + "</section>")
    parts.append("</body></html>")
    return "\n".join(parts)

