# lme4 reference fits of the two formulas of glmer_grid on a 20 x 150 grid of k-of-n answers
# (1 to 5 runs a cell, about one cell in ten empty), for tests/glmm/test_gridfit_kofn.py.
# Data: python tests/reference/grid_kofn_data.py (writes tests/reference/grid_kofn.csv)
# Run from the repository root:  Rscript tests/reference/grid_kofn_reference.R
# Writes tests/reference/grid_kofn_reference.json. The empty cells (n = 0) are dropped: they
# carry no information, and glmer_grid leaves them out. Both fits optimise the exact Laplace
# deviance (tolPwrss = 1e-12; bobyqa with a tight rhoend, beta in the outer optimisation, nAGQ = 1);
# standard errors: lme4's default (Hessian) for the first formula, use.hessian = FALSE (RX) for
# the second.
suppressPackageStartupMessages({library(lme4); library(jsonlite)})
d <- read.csv(file.path("tests", "reference", "grid_kofn.csv"), stringsAsFactors = TRUE)
d <- d[d$n > 0, ]
ctl <- glmerControl(optimizer = "bobyqa", tolPwrss = 1e-12,
                    optCtrl = list(maxfun = 200000, rhoend = 1e-10))
one <- function(formula, use_hessian) {
  t0 <- proc.time()[["elapsed"]]
  fit <- glmer(as.formula(formula), data = d, family = binomial, control = ctl)
  elapsed <- proc.time()[["elapsed"]] - t0
  be <- fixef(fit)
  list(formula = formula, elapsed = elapsed, loglik = as.numeric(logLik(fit)), nobs = nobs(fit),
       fixef_names = names(be), fixef = unname(be),
       se = unname(sqrt(diag(as.matrix(vcov(fit, use.hessian = use_hessian))))),
       theta_names = names(getME(fit, "theta")), theta = unname(getME(fit, "theta")),
       feval = fit@optinfo$feval, messages = c(fit@optinfo$conv$lme4$messages, fit@optinfo$warnings))
}
fits <- list(one("cbind(k, n - k) ~ 1 + (1|model) + (1|item)", TRUE),
             one("cbind(k, n - k) ~ 0 + model + (1|item)", FALSE))
for (f in fits) message(sprintf("%s: logLik %.8f (%.1f s)", f$formula, f$loglik, f$elapsed))
res <- list(lme4_version = as.character(packageVersion("lme4")), r_version = R.version.string,
            data = "grid_kofn.csv (tests/reference/grid_kofn_data.py)", fits = fits)
writeLines(toJSON(res, digits = NA, auto_unbox = TRUE, pretty = TRUE),
           file.path("tests", "reference", "grid_kofn_reference.json"))
