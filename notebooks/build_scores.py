"""Write notebooks/scores.ipynb (run: python notebooks/build_scores.py [--execute])."""

from __future__ import annotations

from _builder import Notebook

nb = Notebook()

nb.md("""
# Scores beyond 0/1: LLM-judge ratings from the raw table to a paper table and a study plan

Two LLM judges rate the answers of four models on a 1-5 scale: 60 items, 2 runs per item, every
answer rated by both judges (`data/example_ratings.csv`, 960 rows). The table is simulated by
`data/make_scores.py` from a cumulative-logit model whose truth is known (`data/README.md`): model
effects A 0.8, B 0.4, C 0, D -0.5 on the latent scale, judge-2 0.5 more lenient, sd(item) 1.0 and
sd(item:run) 0.4. The notebook goes from the raw table to ordinal and linear mixed models, a table
of adjusted pairwise contrasts for a paper, the judges' agreement and bias, the ICC, and a
recommendation of how many items, runs and judges the next study needs. Every number below is
computed by the cells that show it.
""")

nb.code("""
import math
import warnings

# warnings as one line, without the path of the file that raised them
warnings.formatwarning = lambda message, category, *args, **kwargs: f"{category.__name__}: {message}\\n"

import pandas as pd
from scipy import stats

import evalmix
from evalmix.ordinal import clmm_emmeans
from evalmix.ordinal.emmeans import clmm_ref_grid

pd.set_option("display.precision", 3)
ratings = pd.read_csv("../data/example_ratings.csv")
ratings.head()
""")

nb.md("The raw table: how often each model gets each rating, per judge.")

nb.code("""
pd.crosstab([ratings["judge"], ratings["model"]], ratings["rating"])
""")

nb.md("""
## An ordinal mixed model, as `ordinal::clmm` fits it

The ratings are ordered categories, not numbers: a cumulative-link mixed model puts the models and
the judges on a latent logistic scale, with thresholds between the categories and random item
intercepts. (A second random term, `(1|item:run)`, fits in about a second as well, and the report
adds it when a table has runs; here the linear mixed model below carries the run term.)
""")

nb.code("""
fit_o = evalmix.clmm("rating ~ model + judge + (1|item)", ratings)
fit_o.coef_table().round(3)
""")

nb.md("""
Marginal means of the models on the latent scale and all pairwise contrasts with Tukey's
adjustment, as `emmeans(fit, pairwise ~ model, adjust = "tukey")` gives them; then the same means as
mean ratings (`mode = "mean.class"`).
""")

nb.code("""
emm_o = evalmix.emmeans(clmm_ref_grid(fit_o), "model")
pairs_o = evalmix.contrast(emm_o, "pairwise", adjust="tukey")
pairs_o.to_frame().round(3)
""")

nb.code("""
clmm_emmeans(fit_o, "model", mode="mean.class").to_frame().round(3)
""")

nb.md("""
## The same question with a linear mixed model, as `lme4::lmer` (with `lmerTest`) fits it

Treating the ratings as numbers gives contrasts in rating points, with Satterthwaite degrees of
freedom, and a model with both the item and the item:run terms.
""")

nb.code("""
fit_l = evalmix.lmer("rating ~ model + judge + (1|item) + (1|item:run)", ratings)
pairs_l = evalmix.contrast(evalmix.emmeans(fit_l, "model"), "pairwise", adjust="tukey")
pairs_l.to_frame().round(3)
""")

nb.md("""
## The paper table

Both analyses side by side, one row per pair of models, then as LaTeX for the paper.
""")

nb.code("""
o, l = pairs_o.to_frame(), pairs_l.to_frame()
paper = pd.DataFrame({
    "contrast": o["contrast"],
    "latent log-odds (clmm)": o["estimate"].round(2),
    "95% CI (clmm)": [f"[{a:.2f}, {b:.2f}]" for a, b in zip(o["conf_low"], o["conf_high"])],
    "p Tukey (clmm)": o["p_adjusted"].map(evalmix.format_p),
    "rating points (lmer)": l["estimate"].round(2),
    "p Tukey (lmer)": l["p_adjusted"].map(evalmix.format_p),
})
paper
""")

nb.code("""
print(evalmix.tables.to_latex(paper, caption="Pairwise differences between models (Tukey-adjusted)",
                              label="tab:pairs"))
""")

nb.md("""
## The judges: agreement and bias

Agreement of the two judges on the same answers (Krippendorff's alpha and Cohen's kappa with
quadratic weights for ordinal ratings, and the two-way agreement ICC), then the bias: the judge
contrast of each model.
""")

nb.code("""
agree = evalmix.judge_agreement(ratings, outcome="rating", level="ordinal")
agree.table[["coefficient", "estimate", "conf_low", "conf_high", "band"]].round(3)
""")

nb.code("""
bias_o = evalmix.contrast(evalmix.emmeans(clmm_ref_grid(fit_o), "judge"), "revpairwise").to_frame()
bias_l = evalmix.contrast(evalmix.emmeans(fit_l, "judge"), "revpairwise").to_frame()
pd.concat([bias_o.assign(scale="latent (clmm)"), bias_l.assign(scale="rating points (lmer)")])[
    ["scale", "contrast", "estimate", "se", "conf_low", "conf_high", "p_value"]].round(3)
""")

nb.md("""
## ICC: how much of the variation is the item

`latent_icc` reads the variance components of either fit: on the latent scale of the ordinal
model (residual pi^2/3 of the logistic link) and on the observed scale of the linear model (its
residual variance).
""")

nb.code("""
icc_o = evalmix.latent_icc(fit_o)
icc_l = evalmix.latent_icc(fit_l, n_runs=2)
print(icc_o.summary().header[0])
print(icc_l.summary().header[0])
pd.concat([icc_o.table.assign(fit="clmm (latent)"), icc_l.table.assign(fit="lmer (observed)")]).round(3)
""")

nb.md("""
## Standard error against items and runs

The fitted models project the SE of a model's mean and of a difference between two models for any
number of items and runs, on the scale of the fit: here the rating scale of the linear model. The
item effect is shared by the models, so it cancels in differences; runs shrink only the part of
the variance that changes between runs.
""")

nb.code("""
se = evalmix.repetitions.se_vs_runs(fit_l, "model", paired="model", n_items=[60, 120, 240], max_runs=4)
proj = se.pair_projection
proj[(proj["model_a"] == "model-A") & (proj["model_b"] == "model-B")].round(4)
""")

nb.md("""
The ordinal fit gives the same kind of components on the scale of the mean rating (its thresholds
turn each latent mean into a mean rating and its variance):
""")

nb.code("""
evalmix.repetitions.components_from_fit(fit_o).to_frame().round(3)
""")

nb.md("""
## How many items, runs and judges to buy

A model with the judges as a random effect, `rating ~ model + (1|judge) + (1|item) + (1|response)`
(a response is one model's answer to one item in one run, rated by every judge), splits the
variance of a rating into the parts of `plan_judges`. With two judges the judge variance is
estimated from two judges only: the plan for a population of judges (`judges="random"`) is the
honest one, the plan for these two judges (`judges="fixed"`) the optimistic one.
""")

nb.code("""
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # a variance estimated at 0 is reported in the parts below
    parts = evalmix.judge_plan_components(ratings, outcome="rating")
parts.to_frame().round(4)
""")

nb.code("""
costs = {"cost_item": 2.0, "cost_run": 0.05, "cost_judge": 0.02}  # an item to write, a generation, a judge call
target = 0.3  # full width of the 95% interval of a model's mean rating
plan_random = evalmix.plan_judges(parts, width=target, **costs, max_judges=20)
plan_fixed = evalmix.plan_judges(parts, width=target, **costs, judges="fixed", max_judges=2)
plan_budget = evalmix.plan_judges(parts, budget=300, **costs, max_judges=20)
z = stats.norm.isf(0.025)
pd.DataFrame([{"plan": name, "items": p.n_items, "runs": p.n_runs, "judges": p.n_judges, "cost": p.cost,
               "se": p.se, "width": 2 * z * p.se}
              for name, p in ((f"width {target}, judges random", plan_random),
                              (f"width {target}, these judges", plan_fixed), ("budget 300", plan_budget))]).round(3)
""")

nb.md("""
The recommendation, written from the numbers above. The judge variance is the one part that more
items cannot average away (`judge / n_j`), so the two questions, these judges or judges in general,
get different designs.
""")

nb.code("""
n_items, n_runs, n_judges = (ratings[c].nunique() for c in ("item", "run", "judge"))
row = parts.to_frame().iloc[0]
now = {kind: evalmix.judge_se(row, n_items, n_runs, n_judges, judges=kind) for kind in ("fixed", "random")}
print(f"This study ({n_items} items x {n_runs} runs x {n_judges} judges) measures a model's mean rating with "
      f"an SE of {now['fixed']:.3f} for these judges, {now['random']:.3f} for judges in general.")
print(f"For a 95% interval {target} wide: {plan_fixed.n_items} items x {plan_fixed.n_runs} run(s) x "
      f"{plan_fixed.n_judges} of these judges (cost {plan_fixed.cost:g}); to generalise over judges, "
      f"{plan_random.n_items} items x {plan_random.n_runs} run(s) x {plan_random.n_judges} judges "
      f"(cost {plan_random.cost:g}).")
print(f"A budget of {plan_budget.budget:g} is best spent on {plan_budget.n_items} items x {plan_budget.n_runs} "
      f"run(s) x {plan_budget.n_judges} judges (SE {plan_budget.se:.3f}).")
""")

nb.write("scores.ipynb", timeout=600)
