# Reference values for the paired comparison tests, p-value adjustment and Cohen's kappa, from base R
# (stats) and psych. Inputs are stored next to the results so the Python tests read both.
# Run from the repository root: Rscript tests/reference/comparisons_reference.R
library(jsonlite)
set.seed(20261120)
out <- list(r_version = R.version.string)

# McNemar: one run per model, 0/1 outcomes
a <- rbinom(150, 1, 0.6)
b <- ifelse(runif(150) < 0.75, a, rbinom(150, 1, 0.7))
tab <- table(factor(a, levels = 0:1), factor(b, levels = 0:1))
m0 <- mcnemar.test(tab, correct = FALSE)
m1 <- mcnemar.test(tab, correct = TRUE)
out$mcnemar <- list(a = a, b = b, chisq = unname(m0$statistic), p = m0$p.value,
                    chisq_cc = unname(m1$statistic), p_cc = m1$p.value)

# paired t on per-item means of 4 runs (runs x items matrices, stored row-major by run)
ra <- matrix(rbinom(4 * 80, 1, 0.55), nrow = 4)
rb <- matrix(pmax(ra, rbinom(4 * 80, 1, 0.15)), nrow = 4)
tt <- t.test(colMeans(rb), colMeans(ra), paired = TRUE)
out$paired_t <- list(a = ra, b = rb, t = unname(tt$statistic), df = unname(tt$parameter),
                     p = tt$p.value, conf_int = as.numeric(tt$conf.int))

# Wilcoxon signed-rank: untied (exact) and tied with zeros (normal approximation)
x <- round(runif(20), 4); y <- round(x + rnorm(20, 0.1, 0.3), 4)
w_exact <- wilcox.test(y, x, paired = TRUE, exact = TRUE)
xt <- sample(0:4, 60, replace = TRUE) / 4
yt <- pmin(pmax(xt + sample(-1:2, 60, replace = TRUE) / 4, 0), 1)
w_app <- suppressWarnings(wilcox.test(yt, xt, paired = TRUE, exact = FALSE, correct = FALSE))
w_app_cc <- suppressWarnings(wilcox.test(yt, xt, paired = TRUE, exact = FALSE, correct = TRUE))
out$wilcoxon <- list(x = x, y = y, V = unname(w_exact$statistic), p = w_exact$p.value,
                     xt = xt, yt = yt, V_tied = unname(w_app$statistic), p_tied = w_app$p.value,
                     p_tied_cc = w_app_cc$p.value)

# Friedman on an items x models matrix with ties
fm <- matrix(sample(0:3, 25 * 4, replace = TRUE) / 3, nrow = 25)
fr <- friedman.test(fm)
out$friedman <- list(scores = fm, chisq = unname(fr$statistic), p = fr$p.value)

# p.adjust
p <- c(0.0001, 0.004, 0.019, 0.02, 0.03, 0.2, 0.5, 0.5, 0.9, NA)
out$p_adjust <- list(p = p)
for (meth in c("holm", "bonferroni", "hochberg", "BH", "BY")) {
  out$p_adjust[[meth]] <- p.adjust(p, meth)
}

# Cohen's kappa (psych): unweighted and quadratic-weighted
r1 <- sample(1:4, 120, replace = TRUE)
r2 <- ifelse(runif(120) < 0.6, r1, sample(1:4, 120, replace = TRUE))
ck <- psych::cohen.kappa(cbind(r1, r2))
out$kappa <- list(r1 = r1, r2 = r2, kappa = ck$kappa, weighted_kappa = ck$weighted.kappa)

write_json(out, "tests/reference/comparisons_reference.json", digits = NA, auto_unbox = TRUE,
           pretty = TRUE, na = "null")
