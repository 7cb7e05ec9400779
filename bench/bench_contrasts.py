"""Chains of contrasts on a large reference grid: evalmix against R's emmeans on the same beta and V.

A leaderboard fit ``correct ~ model * slice`` (M models x S slices, M * S coefficients) is given
random fixed effects and a random positive-definite covariance; evalmix and emmeans (through
``qdrg``, so no fit is involved on either side) then run the same chain:

1. ``emmeans(~ model | slice)``: M * S means;
2. ``contrast(emm, "pairwise", adjust = "holm")``: every pair of models within each slice;
3. ``contrast(step2, "trt.vs.ctrl", by = "contrast")``: for each pair of models, how its gap in
   each slice differs from the first slice (interaction contrasts), adjust = "holm";
4. ``contrast(emm, interaction = c("pairwise", "trt.vs.ctrl"))``: the same interaction
   contrasts in one call (adjust = "none").

Times are wall seconds of each step (the best of ``--repeat`` runs); the last columns compare the
two sides' estimates, SEs and adjusted p-values (largest absolute difference).

Usage (from the repository root; R with emmeans on the PATH):
    nice python bench/bench_contrasts.py [--models 30] [--slices 10] [--repeat 2] [--no-r]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import evalmix  # noqa: E402
from evalmix.glmm import build_design  # noqa: E402

R_SCRIPT = r"""
suppressPackageStartupMessages(library(emmeans))
args <- commandArgs(TRUE)
dir <- args[1]; reps <- as.integer(args[2])
info <- jsonlite::fromJSON(file.path(dir, "info.json"))
grid <- expand.grid(model = factor(info$models, levels = info$models),
                    slice = factor(info$slices, levels = info$slices))
p <- length(info$names)
b <- setNames(readBin(file.path(dir, "beta.bin"), "double", p), info$names)
V <- matrix(readBin(file.path(dir, "vcov.bin"), "double", p * p), p, p,
            dimnames = list(info$names, info$names))
X <- model.matrix(~ model * slice, grid)
stopifnot(setequal(colnames(X), names(b)))
b <- b[colnames(X)]; V <- V[colnames(X), colnames(X)]
best <- function(f) {
  t <- Inf
  for (i in seq_len(reps)) { s <- proc.time()[["elapsed"]]; r <- f(); t <- min(t, proc.time()[["elapsed"]] - s) }
  list(t = t, r = r)
}
rg <- qdrg(~ model * slice, data = grid, coef = b, vcov = V, link = "logit")
emm_opts <- emm_options(rg.limit = 1e7)
s1 <- best(function() emmeans(rg, ~ model | slice))
s2 <- best(function() contrast(s1$r, "pairwise", adjust = "holm"))
s3 <- best(function() contrast(s2$r, "trt.vs.ctrl", by = "contrast", adjust = "holm"))
s4 <- best(function() contrast(emmeans(rg, ~ model * slice),
                               interaction = c("pairwise", "trt.vs.ctrl"), adjust = "none"))
t3s <- best(function() summary(s3$r, infer = c(TRUE, TRUE)))
t4s <- best(function() summary(s4$r, infer = c(TRUE, TRUE)))
t2s <- best(function() summary(s2$r, infer = c(TRUE, TRUE)))
out <- function(s, name) {
  d <- as.data.frame(s)
  labels <- d[, vapply(d, function(v) is.factor(v) || is.character(v), TRUE), drop = FALSE]
  write.csv(cbind(labels, estimate = d$estimate, se = d$SE, p = d$p.value),
            file.path(dir, name), row.names = FALSE)
}
out(t2s$r, "r_pairwise.csv"); out(t3s$r, "r_chain.csv"); out(t4s$r, "r_interaction.csv")
writeLines(jsonlite::toJSON(list(
  emmeans = s1$t, pairwise = s2$t + t2s$t, chain = s3$t + t3s$t, interaction = s4$t + t4s$t,
  r = R.version.string, emmeans_version = as.character(packageVersion("emmeans"))),
  auto_unbox = TRUE, digits = NA), file.path(dir, "r_times.json"))
"""


def r_name(name: str) -> str:
    """formulaic's ``model[T.M02]:slice[T.S03]`` as R's ``modelM02:sliceS03``."""
    if name == "Intercept":
        return "(Intercept)"
    return ":".join(part.replace("[T.", "").replace("]", "") for part in name.split(":"))


def best(f: Callable[[], Any], reps: int) -> tuple[float, Any]:
    t, out = np.inf, None
    for _ in range(reps):
        start = time.perf_counter()
        out = f()
        t = min(t, time.perf_counter() - start)
    return t, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", type=int, default=30)
    ap.add_argument("--slices", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--no-r", action="store_true", help="time evalmix only")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    models = [f"M{i:03d}" for i in range(1, a.models + 1)]
    slices = [f"S{j:02d}" for j in range(1, a.slices + 1)]
    # two items per cell: enough rows for the design; the numbers come from beta and V below
    rows = pd.DataFrame([(m, s, f"i{k}", k % 2) for m in models for s in slices for k in range(2)],
                        columns=["model", "slice", "item", "correct"])
    fixed = build_design("correct ~ model * slice + (1|item)", rows).fixed
    names = list(fixed.columns)
    p = len(names)
    beta = rng.normal(0.0, 0.5, p)
    A = rng.normal(size=(p, p)) / np.sqrt(p)
    V = 0.02 * (A @ A.T) + 0.01 * np.eye(p)
    fit = _Fit(pd.Series(beta, index=names), pd.DataFrame(V, index=names, columns=names), fixed)

    warnings.simplefilter("ignore")
    times: dict[str, float] = {}
    times["emmeans"], emm = best(lambda: evalmix.emmeans(fit, "model", by="slice"), a.repeat)
    times["pairwise"], pw = best(lambda: evalmix.contrast(emm, "pairwise", adjust="holm"),
                                 a.repeat)
    times["chain"], chain = best(lambda: evalmix.contrast(pw, "trt.vs.ctrl", by="contrast",
                                                          adjust="holm"), a.repeat)
    times["interaction"], inter = best(
        lambda: evalmix.contrast(evalmix.emmeans(fit, ["model", "slice"]),
                                 interaction=["pairwise", "trt.vs.ctrl"], adjust="none"),
        a.repeat)
    sizes = {"emmeans": len(emm.to_frame()), "pairwise": len(pw.to_frame()),
             "chain": len(chain.to_frame()), "interaction": len(inter.to_frame())}
    print(f"grid: {a.models} models x {a.slices} slices, {p} coefficients; "
          f"best of {a.repeat}")
    r_times: dict[str, Any] = {}
    diffs: dict[str, str] = {}
    if not a.no_r:
        with tempfile.TemporaryDirectory() as tmp:
            d = Path(tmp)
            beta.astype("<f8").tofile(d / "beta.bin")
            V.astype("<f8").T.tofile(d / "vcov.bin")  # R fills matrices column by column
            (d / "info.json").write_text(json.dumps(
                {"models": models, "slices": slices, "names": [r_name(n) for n in names]}))
            (d / "bench.R").write_text(R_SCRIPT)
            done = subprocess.run(["Rscript", str(d / "bench.R"), str(d), str(a.repeat)])
            if done.returncode != 0:  # e.g. killed for memory
                print(f"R exited with code {done.returncode}: evalmix only")
            else:
                r_times = json.loads((d / "r_times.json").read_text())
                diffs = _compare(d, {"pairwise": pw, "chain": chain, "interaction": inter},
                                 sizes)
                print(f"{r_times['r']}, emmeans {r_times['emmeans_version']}")
    print(f"{'step':<12} {'rows':>8} {'evalmix s':>10} {'emmeans s':>10}  max |evalmix - R|")
    for step in ("emmeans", "pairwise", "chain", "interaction"):
        rt = r_times.get(step)
        print(f"{step:<12} {sizes[step]:>8} {times[step]:>10.3f} "
              f"{'' if rt is None else f'{rt:.3f}':>10}  {diffs.get(step, '')}")


def _compare(d: Path, results: dict[str, Any], sizes: dict[str, int]) -> dict[str, str]:
    """Largest |evalmix - emmeans| of estimates, SEs and adjusted p-values, rows matched by
    their labels."""
    out = {}
    for step, res in results.items():
        theirs = pd.read_csv(d / f"r_{step}.csv", dtype=str, keep_default_na=False)
        labels = [c for c in theirs.columns if c not in ("estimate", "se", "p")]
        both = res.to_frame().astype({c: str for c in labels}).merge(
            theirs, on=labels, suffixes=("", "_r"), validate="one_to_one")
        assert len(both) == len(theirs) == sizes[step], step
        out[step] = "est {:.1e}, se {:.1e}, p {:.1e}".format(*(
            np.max(np.abs(both[m].to_numpy(float) - both[r].to_numpy(float)))
            for m, r in (("estimate", "estimate_r"), ("se", "se_r"), ("p_adjusted", "p"))))
    return out


class _Fit:
    """A fitted model reduced to what inference reads (evalmix.fitted.FittedModel)."""

    link = "logit"

    def __init__(self, fixef: pd.Series, vcov: pd.DataFrame, fixed_design: Any) -> None:
        self.fixef, self.vcov, self.fixed_design = fixef, vcov, fixed_design

    @property
    def coef_names(self) -> list[str]:
        return list(self.fixef.index)


if __name__ == "__main__":
    main()
