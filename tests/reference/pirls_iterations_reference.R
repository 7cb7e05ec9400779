# lme4 reference for the default (finite-difference Hessian) standard errors of glmer: how many
# PIRLS iterations lme4's second-stage deviance function takes from its first-stage linear
# predictor lp0, at the optimum and at every point of deriv12's stencil (step 1e-4), and its value
# there. Data: tests/reference/fit_many_benchmarks.csv, as in fit_many_reference.R.
# Run from the repository root:  Rscript tests/reference/pirls_iterations_reference.R
# Writes tests/reference/pirls_iterations_reference.json.
suppressPackageStartupMessages({library(lme4); library(jsonlite)})

ref <- file.path("tests", "reference")
d <- read.csv(file.path(ref, "fit_many_benchmarks.csv"), stringsAsFactors = TRUE)
form <- correct ~ model + (1 | item) + (1 | item:run)

# lme4's devfun with verbose = 3 prints one "pdev=" line per pwrssUpdate iteration
iterations <- function(devfun, pars) {
  rho <- environment(devfun)
  rho$verbose <- 3L
  out <- capture.output(v <- devfun(pars))
  rho$verbose <- 0L
  list(value = v, iterations = length(grep("pdev=", out)))
}

out <- list()
for (b in c("chem", "code", "math")) {
  sub <- droplevels(d[d$benchmark == b, ])
  fit <- glmer(form, data = sub, family = binomial)
  # glmer's own two stages, step by step, to reach its deviance function
  glmod <- glFormula(form, data = sub, family = binomial)
  devfun <- do.call(mkGlmerDevfun, glmod)
  opt1 <- optimizeGlmer(devfun)
  devfun <- updateGlmerDevfun(devfun, glmod$reTrms)
  opt2 <- optimizeGlmer(devfun, stage = 2, optimizer = "Nelder_Mead",
                        start = list(theta = opt1$par))
  stopifnot(isTRUE(all.equal(opt2$par, unname(c(getME(fit, "theta"), fixef(fit))))))
  rho <- environment(devfun)
  p <- opt2$par
  at <- iterations(devfun, p)
  h <- 1e-4
  st <- c()
  for (j in seq_along(p)) for (s in c(-1, 1)) {
    q <- p; q[j] <- q[j] + s * h
    st <- c(st, iterations(devfun, q)$iterations)
  }
  # the same deviance function, run to convergence (what vcov_method = "hessian_exact" targets)
  rho$tolPwrss <- 1e-12
  tight <- devfun(p)
  rho$tolPwrss <- 1e-7
  out[[b]] <- list(benchmark = b, theta = unname(p[rho$dpars]), beta = unname(p[-rho$dpars]),
                   stage1_theta = unname(opt1$par), lp0_range = range(rho$lp0),
                   lp0_sum = sum(rho$lp0), dev_at_opt = at$value, dev_at_opt_tight = tight,
                   iterations_at_opt = at$iterations, iterations_at_stencil = st,
                   se = unname(sqrt(diag(as.matrix(vcov(fit))))))
}
res <- list(r_version = R.version.string, lme4 = as.character(packageVersion("lme4")),
            formula = deparse(form), fits = unname(out))
write_json(res, file.path(ref, "pirls_iterations_reference.json"), digits = NA, auto_unbox = TRUE,
           pretty = TRUE)
