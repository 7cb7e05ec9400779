# lme4 reference for tests/studies/test_fit_many.py: one glmer per benchmark, as evalmix.fit_many fits them.
# Run from the repository root:  Rscript tests/reference/fit_many_reference.R
# Writes tests/reference/fit_many_reference.json (versions, one record per benchmark).
suppressPackageStartupMessages({library(lme4); library(jsonlite)})

ref <- file.path("tests", "reference")
d <- read.csv(file.path(ref, "fit_many_benchmarks.csv"), stringsAsFactors = TRUE)
form <- correct ~ model + (1 | item) + (1 | item:run)

out <- list()
for (b in sort(unique(as.character(d$benchmark)))) {
  sub <- droplevels(d[d$benchmark == b, ])
  rec <- tryCatch({
    fit <- glmer(form, data = sub, family = binomial)
    cf <- summary(fit)$coefficients
    list(benchmark = b, error = "", term = rownames(cf), estimate = unname(cf[, 1]),
         se = unname(cf[, 2]), statistic = unname(cf[, 3]), p_value = unname(cf[, 4]),
         loglik = as.numeric(logLik(fit)), singular = isSingular(fit), nobs = nobs(fit))
  }, error = function(e) list(benchmark = b, error = conditionMessage(e)))
  out[[b]] <- rec
}
res <- list(r_version = R.version.string, lme4 = as.character(packageVersion("lme4")),
            formula = deparse(form), fits = unname(out))
write_json(res, file.path(ref, "fit_many_reference.json"), digits = NA, auto_unbox = TRUE, pretty = TRUE)
