# lme4 reference values for tests/glmm/test_glmm_parity.py.
# Run from the repository root:  Rscript tests/reference/lme4_reference.R
# Writes tests/reference/lme4_reference.json (lme4 version, one record per fit).
suppressPackageStartupMessages({library(lme4); library(jsonlite)})

shared <- Sys.getenv("EVALMIX_SHARED", file.path("..", "shared"))
ai4math <- file.path(shared, "data", "ai4math", "ai4math_runs.csv")
ref <- file.path("tests", "reference")

cases <- list(
  list(id = "ai4math_full", data = "ai4math",
       formula = "correct ~ model * language * prompt + (1|problem_id) + (1|problem_id:run)"),
  list(id = "ai4math_ml_p", data = "ai4math",
       formula = "correct ~ model * language + prompt + (1|problem_id) + (1|problem_id:run)"),
  list(id = "ai4math_m_lp", data = "ai4math",
       formula = "correct ~ model + language * prompt + (1|problem_id) + (1|problem_id:run)"),
  list(id = "ai4math_m_l_p", data = "ai4math",
       formula = "correct ~ model + language + prompt + (1|problem_id) + (1|problem_id:run)"),
  list(id = "ai4math_m_l", data = "ai4math",
       formula = "correct ~ model + language + (1|problem_id) + (1|problem_id:run)"),
  list(id = "item_run", data = "glmm_item_run.csv",
       formula = "correct ~ model + (1|item) + (1|item:run)"),
  list(id = "item_run_nested", data = "glmm_item_run.csv",
       formula = "correct ~ model + (1|item/run)"),
  list(id = "singular", data = "glmm_singular.csv",
       formula = "correct ~ model + (1|item) + (1|item:run)"),
  list(id = "slope", data = "glmm_slope.csv", formula = "correct ~ x + (1 + x|g)"),
  list(id = "slope_uncorr", data = "glmm_slope.csv", formula = "correct ~ x + (1 + x||g)"),
  list(id = "crossed", data = "glmm_crossed.csv",
       formula = "correct ~ model + (1|item) + (1|template)"),
  list(id = "unbalanced", data = "glmm_unbalanced.csv",
       formula = "correct ~ model * language + (1|item) + (1|item:run)"),
  list(id = "counts", data = "glmm_counts.csv", formula = "cbind(k, n - k) ~ model + (1|item)")
)

only <- commandArgs(trailingOnly = TRUE)
out <- list()
for (cs in cases) {
  if (length(only) && !(cs$id %in% only)) next
  path <- if (cs$data == "ai4math") ai4math else file.path(ref, cs$data)
  if (!file.exists(path)) { message("skip ", cs$id, ": no ", path); next }
  d <- read.csv(path, stringsAsFactors = TRUE)
  f <- as.formula(cs$formula)
  t0 <- proc.time()[["elapsed"]]
  fit <- glmer(f, data = d, family = binomial)
  elapsed <- proc.time()[["elapsed"]] - t0
  devfun <- glmer(f, data = d, family = binomial, devFunOnly = TRUE)
  # the same deviance with PIRLS run to convergence (default tolPwrss = 1e-7 stops early)
  devtight <- glmer(f, data = d, family = binomial, devFunOnly = TRUE,
                    control = glmerControl(tolPwrss = 1e-12))
  th <- getME(fit, "theta"); be <- fixef(fit)
  # SEs from the Hessian of the converged deviance (what vcov_method = "hessian_exact" computes)
  ht <- lme4:::deriv12(devtight, c(th, be))$Hessian
  se_tight <- tryCatch(unname(sqrt(diag(2 * solve(ht))[-seq_along(th)])),
                       error = function(e) rep(NA_real_, length(be)), warning = function(w) rep(NA_real_, length(be)))
  pt <- c(th + 0.1, be + 0.05)
  vc <- as.data.frame(VarCorr(fit))
  vc$var1[is.na(vc$var1)] <- ""; vc$var2[is.na(vc$var2)] <- ""
  # conditional modes and SDs of the first five levels of each grouping factor
  rdf <- as.data.frame(ranef(fit, condVar = TRUE))
  rdf <- do.call(rbind, lapply(split(rdf, rdf$grpvar), function(x)
    x[x$grp %in% head(levels(droplevels(x$grp)), 5), ]))
  rlist <- data.frame(group = as.character(rdf$grpvar), term = as.character(rdf$term),
                      level = as.character(rdf$grp), mode = rdf$condval, sd = rdf$condsd)
  nd <- head(d, 6)
  rec <- list(
    id = cs$id, data = cs$data, formula = cs$formula, elapsed = elapsed,
    loglik = as.numeric(logLik(fit)), deviance = -2 * as.numeric(logLik(fit)),
    aic = AIC(fit), bic = BIC(fit), df = attr(logLik(fit), "df"), nobs = nobs(fit),
    fixef_names = names(be), fixef = unname(be),
    se = unname(sqrt(diag(as.matrix(vcov(fit))))),
    se_tight = se_tight,
    se_rx = unname(sqrt(diag(as.matrix(vcov(fit, use.hessian = FALSE))))),
    theta_names = names(th), theta = unname(th),
    varcorr = vc, singular = isSingular(fit),
    messages = c(fit@optinfo$conv$lme4$messages, fit@optinfo$warnings),
    dev_at_opt = devfun(c(th, be)), point = pt, dev_at_point = devfun(pt),
    dev_at_opt_tight = devtight(c(th, be)), dev_at_point_tight = devtight(pt),
    ranef = rlist,
    predict_response = unname(predict(fit, newdata = nd, type = "response")),
    predict_link_fixed = unname(predict(fit, newdata = nd, re.form = NA))
  )
  out[[length(out) + 1]] <- rec
  message(sprintf("%s: logLik %.6f (%.1f s)", cs$id, rec$loglik, elapsed))
}
res <- list(lme4_version = as.character(packageVersion("lme4")),
            r_version = R.version.string, fits = out)
dest <- file.path(ref, if (length(only)) "lme4_reference_partial.json" else "lme4_reference.json")
writeLines(toJSON(res, digits = NA, auto_unbox = TRUE, pretty = TRUE), dest)
