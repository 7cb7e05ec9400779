"""Timings of marginal means, contrasts, type-III tests and model comparison on the AI4Math fits.

Usage (from the repository root, with ../shared beside the checkout):
    python bench/bench_inference.py [path/to/ai4math_runs.csv]
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import evalmix  # noqa: E402
from evalmix.model import make_formula  # noqa: E402
from bench_reliability import timed  # noqa: E402  (same timing helper; this folder is on the path)

RANDOM = ["problem_id", "problem_id:run"]  # random intercepts


def main() -> None:
    root = Path(__file__).resolve().parents[1]
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else \
        root.parent / "shared" / "data" / "ai4math" / "ai4math_runs.csv"
    data = pd.read_csv(path)
    warnings.simplefilter("ignore")
    full = evalmix.glmer(make_formula("correct", "model * language * prompt", RANDOM).text, data)
    small = evalmix.glmer(make_formula("correct", "model + language", RANDOM).text, data)
    emm_slices = evalmix.emmeans(full, "model", by=["language", "prompt"])
    emm_model = evalmix.emmeans(full, "model")

    timed("emmeans ~ model | language * prompt (34 coefficients)",
          lambda: evalmix.emmeans(full, "model", by=["language", "prompt"]))
    timed("emmeans ~ model, type='response'",
          lambda: evalmix.emmeans(full, "model", type="response"))
    for adjust in ("holm", "tukey", "dunnettx", "mvt"):
        timed(f"4 x 28 pairwise contrasts, adjust={adjust}",
              lambda a=adjust: evalmix.contrast(emm_slices, "pairwise", adjust=a))
    timed("trt.vs.ctrl vs Grok-4 (7 contrasts), dunnettx",
          lambda: evalmix.contrast(emm_model, "trt.vs.ctrl", ref="Grok-4", adjust="dunnettx"))
    timed("type-III Wald tests, model * language * prompt", lambda: evalmix.anova(full))
    timed("compare_models, 2 fits", lambda: evalmix.compare_models({"a": small, "b": full}))


if __name__ == "__main__":
    main()
