# lme4 reference fits of two crossed random intercepts on a (nearly) complete grid, for
# tests/glmm/test_crossed.py. Data: python tests/reference/make_crossed_grid_data.py
# Run from the repository root:  Rscript tests/reference/crossed_grid_reference.R
# Writes tests/reference/crossed_grid_reference.json (lme4 version, one record per fit).
suppressPackageStartupMessages({library(lme4); library(jsonlite)})

ref <- file.path("tests", "reference")
cases <- list(
  list(id = "grid_rasch", data = "crossed_grid.csv",
       formula = "correct ~ 1 + (1|model) + (1|item)"),
  list(id = "grid_format", data = "crossed_grid.csv",
       formula = "correct ~ format + (1|model) + (1|item)"),
  list(id = "grid_incomplete", data = "crossed_grid_incomplete.csv",
       formula = "correct ~ format + (1|model) + (1|item)"),
  list(id = "grid_counts", data = "crossed_grid_counts.csv",
       formula = "cbind(k, n - k) ~ format + (1|model) + (1|item)")
)
out <- list()
for (cs in cases) {
  d <- read.csv(file.path(ref, cs$data), stringsAsFactors = TRUE)
  t0 <- proc.time()[["elapsed"]]
  fit <- glmer(as.formula(cs$formula), data = d, family = binomial)
  elapsed <- proc.time()[["elapsed"]] - t0
  th <- getME(fit, "theta"); be <- fixef(fit)
  rdf <- as.data.frame(ranef(fit, condVar = TRUE))
  rdf <- do.call(rbind, lapply(split(rdf, rdf$grpvar), function(x)
    x[x$grp %in% head(levels(droplevels(x$grp)), 5), ]))
  out[[length(out) + 1]] <- list(
    id = cs$id, data = cs$data, formula = cs$formula, elapsed = elapsed,
    loglik = as.numeric(logLik(fit)), nobs = nobs(fit),
    fixef_names = names(be), fixef = unname(be),
    se = unname(sqrt(diag(as.matrix(vcov(fit))))),
    theta_names = names(th), theta = unname(th),
    messages = c(fit@optinfo$conv$lme4$messages, fit@optinfo$warnings),
    ranef = data.frame(group = as.character(rdf$grpvar), level = as.character(rdf$grp),
                       mode = rdf$condval, sd = rdf$condsd))
  message(sprintf("%s: logLik %.6f (%.1f s)", cs$id, out[[length(out)]]$loglik, elapsed))
}
res <- list(lme4_version = as.character(packageVersion("lme4")),
            r_version = R.version.string, fits = out)
writeLines(toJSON(res, digits = NA, auto_unbox = TRUE, pretty = TRUE),
           file.path(ref, "crossed_grid_reference.json"))
