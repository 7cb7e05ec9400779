# lme4 reference fit of `correct ~ 0 + model + (1|item)` (100 fixed model effects) on a complete
# 100 x 2,000 grid (or 20 x 2,000), for tests/glmm/test_crossed_scale.py.
# Data: python tests/reference/grid_fixed_reference_data.py /tmp/evalmix_grid_fixed.csv
# Run from the repository root:  Rscript tests/reference/grid_fixed_reference.R [csv [json]]
# Writes tests/reference/grid_fixed_reference.json (or json). The 20-model grid of
# grid_fixed_reference_20.json: grid_fixed_reference_data.py /tmp/evalmix_grid_fixed_20.csv 20. Stage 2 (nAGQ = 1, beta in the outer
# optimiser) runs with bobyqa over the 101 parameters and tight tolerances (the default
# Nelder-Mead does not converge at this size); vcov with use.hessian = FALSE (lme4's RX matrix);
# the nAGQ = 0 fit (beta within PIRLS) is recorded beside it.
suppressPackageStartupMessages({library(lme4); library(jsonlite)})
args <- commandArgs(trailingOnly = TRUE)
csv <- if (length(args)) args[[1]] else "/tmp/evalmix_grid_fixed.csv"
d <- read.csv(csv, stringsAsFactors = TRUE)
one <- function(nAGQ) {
  t0 <- proc.time()[["elapsed"]]
  # tolPwrss = 1e-12: PIRLS to convergence inside the deviance function, so that lme4 optimises
  # the exact Laplace deviance (with the default 1e-7 its log det is taken after a fixed number
  # of PIRLS steps, a deviance 0.17 higher here)
  ctl <- glmerControl(optimizer = "bobyqa", calc.derivs = FALSE, tolPwrss = 1e-12,
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
res$data <- sprintf("simulate_grid(%d, 2000, rng=20261205, intercept=0.5)", nlevels(d$model))
out <- if (length(args) > 1) args[[2]] else file.path("tests", "reference", "grid_fixed_reference.json")
writeLines(toJSON(res, digits = NA, auto_unbox = TRUE, pretty = TRUE), out)
