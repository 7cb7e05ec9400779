"""Write notebooks/quickstart.ipynb (run: python notebooks/build_quickstart.py [--execute])."""

from __future__ import annotations

from _builder import Notebook

nb = Notebook()

nb.md("""
# Quick start: from a runs table to a mixed model, contrasts, a figure and the report

The bundled example is simulated with the design of the AI4Math study (8 models x 105 items x 3 runs
x 2 languages x 2 prompts), so the truth is known (`data/README.md`): model-A is the best model and
every model differs from it. The whole notebook runs in under a minute.
""")

nb.code("""
import os
import tempfile
import warnings

os.environ["TQDM_DISABLE"] = "1"  # no progress bars in a notebook meant to be read
# warnings as one line, without the path of the file that raised them
warnings.formatwarning = lambda message, category, *args, **kwargs: f"{category.__name__}: {message}\\n"

import matplotlib.pyplot as plt
import pandas as pd

import evalmix

pd.set_option("display.precision", 3)
runs = evalmix.read_runs("../data/example_runs.csv")
runs.head()
""")

nb.md("""
Column roles (model, item, run, outcome) are recorded once; every other column is a slice.
Accuracy per model with the item-clustered interval (items, not rows, are the sampling unit):
""")

nb.code("""
evalmix.accuracy(runs, "model", ci="cluster").table.round(3)
""")

nb.md("""
## A mixed model, as `lme4::glmer` fits it

Items differ in difficulty and each run of an item shares its draw: `(1|item) + (1|item:run)`.
The fixed part asks about the models, the language and the prompt.
""")

nb.code("""
fit = evalmix.glmer("correct ~ model + language + prompt + (1|item) + (1|item:run)", runs)
fit.coef_table().round(3)
""")

nb.md("""
## Marginal means and contrasts, as `emmeans` computes them

The accuracy of each model averaged over language and prompt, then every model against the best
one with Dunnett's adjustment (odds ratios, since the model is on the logit scale).
""")

nb.code("""
emm = evalmix.emmeans(fit, "model", type="response")
emm.to_frame().round(3)
""")

nb.code("""
ctr = evalmix.contrast(emm, "trt.vs.ctrl", adjust="dunnettx")
ctr.to_frame().round(4)
""")

nb.md("""
## A figure for the paper

Every function of `evalmix.plots` returns a matplotlib figure in one style; `savefig` writes it at
300 dpi, and PDFs embed TrueType fonts.
""")

nb.code("""
fig = evalmix.plots.odds_ratio_forest(ctr)
plt.show()
""")

nb.md("""
## The whole study in one call

`evalmix.report` runs every analysis of a repeated-runs study (accuracy, model selection, odds
ratios, reliability, rank stability, standard error against runs) and writes an HTML page, LaTeX and
Markdown tables and PNG/PDF figures.
""")

nb.code("""
out = tempfile.mkdtemp(prefix="evalmix-report-")
rep = evalmix.report(runs, out, n_boot=200, rng=1)
rep.to_frame()
""")

nb.code("""
sorted(os.listdir(os.path.join(out, "figures")))[:6]
""")

nb.md("""
Bad input fails loudly and names the culprit:
""")

nb.code("""
bad = pd.read_csv("../data/example_runs.csv")
bad.loc[5, "correct"] = 2
try:
    evalmix.read_runs(bad)
except evalmix.DataError as err:
    print(err)
""")

nb.write("quickstart.ipynb", timeout=600)
