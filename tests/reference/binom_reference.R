# Reference binomial intervals from base R (stats::prop.test, stats::binom.test).
# Run from the repository root: Rscript tests/reference/binom_reference.R
library(jsonlite)
grid <- data.frame(k = c(0, 1, 7, 15, 20, 50, 190, 3, 99),
                   n = c(20, 10, 30, 148, 20, 100, 315, 1000, 100))
out <- list()
for (conf in c(0.9, 0.95, 0.99)) {
  for (i in seq_len(nrow(grid))) {
    k <- grid$k[i]; n <- grid$n[i]
    cc <- prop.test(k, n, correct = TRUE, conf.level = conf)$conf.int
    nocc <- prop.test(k, n, correct = FALSE, conf.level = conf)$conf.int
    exact <- binom.test(k, n, conf.level = conf)$conf.int
    out[[length(out) + 1]] <- list(k = k, n = n, conf_level = conf,
                                   wilson_cc = as.numeric(cc), wilson = as.numeric(nocc),
                                   clopper_pearson = as.numeric(exact))
  }
}
write_json(list(r_version = R.version.string, intervals = out),
           "tests/reference/binom_reference.json", digits = NA, auto_unbox = TRUE, pretty = TRUE)
