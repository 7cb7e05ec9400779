# lme4 reference intervals for tests/glmm/test_intervals.py: profile-likelihood intervals
# (confint(fit, method = "profile")) and the parametric bootstrap (bootMer).
# Run from the repository root:  Rscript tests/reference/intervals_reference.R
# Writes tests/reference/intervals_reference.json.
#
# Profiles: on the standard-deviation scale (signames = FALSE names "sd_(Intercept)|item"), on a
# grid 5 times finer than lme4's default (delta.cutoff = 1/40 instead of 1/8) so that the spline
# interpolation error of the ends (up to 1e-3 on the default grid, also stored) stays below 1e-4;
# the fits use tolPwrss = 1e-12 and a tight bobyqa so that the
# optimum the profile is taken around is the exact Laplace one.
# Bootstrap: bootMer(fit, FUN, nsim, use.u = FALSE, type = "parametric"), new random effects for
# every simulation; FUN returns the fixed effects and the random-effect SDs; percentile intervals
# are the 2.5% and 97.5% quantiles (type 7), and the bootstrap means and SDs are stored too.
suppressPackageStartupMessages({library(lme4); library(jsonlite)})

ref <- file.path("tests", "reference")
ctrl <- glmerControl(optimizer = "bobyqa", tolPwrss = 1e-12,
                     optCtrl = list(maxfun = 1e5, rhoend = 1e-9))

cases <- list(
  list(id = "item_run", data = "glmm_item_run.csv",
       formula = "correct ~ model + (1|item) + (1|item:run)", boot = 0),
  list(id = "counts", data = "glmm_counts.csv",
       formula = "cbind(k, n - k) ~ model + (1|item)", boot = 500),
  list(id = "slope", data = "glmm_slope.csv", formula = "correct ~ x + (1 + x|g)", boot = 0)
)

sds <- function(m) {
  vc <- as.data.frame(VarCorr(m))
  vc <- vc[is.na(vc$var2), ]
  v <- vc$sdcor
  names(v) <- paste0("sd_", vc$var1, "|", vc$grp)
  v
}

out <- list(lme4 = as.character(packageVersion("lme4")), r = R.version.string, cases = list())
for (cs in cases) {
  d <- read.csv(file.path(ref, cs$data), stringsAsFactors = TRUE)
  fit <- glmer(as.formula(cs$formula), data = d, family = binomial, control = ctrl)
  pr <- profile(fit, signames = FALSE, delta.cutoff = 1 / 40)
  ci <- confint(pr, level = 0.95)
  ci90 <- confint(pr, level = 0.90)
  ci_default <- confint(profile(fit, signames = FALSE), level = 0.95)
  rec <- list(id = cs$id, data = cs$data, formula = cs$formula,
              loglik = as.numeric(logLik(fit)), fixef = as.list(fixef(fit)),
              theta = unname(getME(fit, "theta")),
              profile = list(term = rownames(ci), lower = unname(ci[, 1]), upper = unname(ci[, 2]),
                             lower90 = unname(ci90[, 1]), upper90 = unname(ci90[, 2]),
                             lower_default_grid = unname(ci_default[, 1]),
                             upper_default_grid = unname(ci_default[, 2])),
              wald = list(term = names(fixef(fit)),
                          lower = unname(confint(fit, method = "Wald")[names(fixef(fit)), 1]),
                          upper = unname(confint(fit, method = "Wald")[names(fixef(fit)), 2])))
  if (cs$boot > 0) {
    fun <- function(m) c(fixef(m), sds(m))
    t0 <- Sys.time()
    b <- bootMer(fit, fun, nsim = cs$boot, seed = 20241, use.u = FALSE, type = "parametric")
    secs <- as.numeric(difftime(Sys.time(), t0, units = "secs"))
    tt <- b$t
    rec$boot <- list(nsim = cs$boot, seed = 20241, seconds = secs, term = colnames(tt),
                     lower = unname(apply(tt, 2, quantile, 0.025, na.rm = TRUE)),
                     upper = unname(apply(tt, 2, quantile, 0.975, na.rm = TRUE)),
                     mean = unname(colMeans(tt, na.rm = TRUE)),
                     sd = unname(apply(tt, 2, sd, na.rm = TRUE)),
                     failed = sum(!complete.cases(tt)))
  }
  out$cases[[cs$id]] <- rec
}
writeLines(toJSON(out, auto_unbox = TRUE, digits = NA, pretty = TRUE),
           file.path(ref, "intervals_reference.json"))
