# lme4 reference fit of `correct ~ 0 + model + (1|item)` (100 fixed model effects) on a complete
# 100 x 2,000 grid, for tests/glmm/test_crossed_scale.py.
# Data: python tests/reference/grid_fixed_reference_data.py /tmp/evalmix_grid_fixed.csv
# Run from the repository root:  Rscript tests/reference/grid_fixed_reference.R [csv]
# Writes tests/reference/grid_fixed_reference.json. Stage 2 (nAGQ = 1, beta in the outer
# optimiser) runs with bobyqa over the 101 parameters and tight tolerances (the default
# Nelder-Mead does not converge at this size); vcov with use.hessian = FALSE (lme4's RX matrix);
# the nAGQ = 0 fit (beta within PIRLS) is recorded beside it.
suppressPackageStartupMessages({library(lme4); library(jsonlite)})
args <- commandArgs(trailingOnly = TRUE)
csv <- if (length(args)) args[[1]] else "/tmp/evalmix_grid_fixed.csv"
d <- read.csv(csv, stringsAsFactors = TRUE)
one <- function(nAGQ) {
  t0 <- proc.time()[["elapsed"]]
  ctl <- glmerControl(optimizer = "bobyqa", calc.derivs = FALSE,
                      optCtrl = list(maxfun = 200000, rhoend = 1e-9))
  fit <- glmer(correct ~ 0 + model + (1|item), data = d, family = binomial, nAGQ = nAGQ,
               control = ctl)
  elapsed <- proc.time()[["elapsed"]] - t0
  be <- fixef(fit)
  list(nAGQ = nAGQ, elapsed = elapsed, loglik = as.numeric(logLik(fit)), nobs = nobs(fit),
       fixef_names = names(be), fixef = unname(be),
       se_rx = unname(sqrt(diag(as.matrix(vcov(fit, use.hessian = FALSE))))),
       theta = unname(getME(fit, "theta")), feval = fit@optinfo$feval,
       messages = c(fit@optinfo$conv$lme4$messages, fit@optinfo$warnings))
}
fits <- list(one(0L), one(1L))
for (f in fits) message(sprintf("nAGQ %d: logLik %.6f (%.1f s)", f$nAGQ, f$loglik, f$elapsed))
res <- list(lme4_version = as.character(packageVersion("lme4")), r_version = R.version.string,
            data = "simulate_grid(100, 2000, rng=20261205, intercept=0.5)",
            formula = "correct ~ 0 + model + (1|item)", fits = fits)
writeLines(toJSON(res, digits = NA, auto_unbox = TRUE, pretty = TRUE),
           file.path("tests", "reference", "grid_fixed_reference.json"))
