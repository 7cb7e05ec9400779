# Reference values for evalmix.studies.dif.logistic_dif: Swaminathan-Rogers logistic-regression DIF
# by R's glm, item by item, the likelihood-ratio tests of anova(..., test = "Chisq").
# The data (tests/reference/dif_responses.csv) come from make_dif_data.py.
# Run from the repository root:  Rscript tests/reference/dif_reference.R
# It writes tests/reference/dif_reference.json.  The fits run to a deviance tolerance of 1e-14 (glm's default
# 1e-8 leaves the null fit, and so the score test, 1e-4 from the optimum).
suppressPackageStartupMessages(library(jsonlite))
d <- read.csv("tests/reference/dif_responses.csv")
d$version <- factor(d$version, levels = c("v1", "v2"))
out <- list(items = c(), uniform = list(), both = list(), score_uniform = list(), score_both = list())
for (it in sort(unique(d$item))) {
  s <- d[d$item == it, ]
  m0 <- glm(correct ~ ability, family = binomial, data = s, control = glm.control(epsilon = 1e-14, maxit = 100))
  m1 <- glm(correct ~ ability + version, family = binomial, data = s, control = glm.control(epsilon = 1e-14, maxit = 100))
  m2 <- glm(correct ~ ability * version, family = binomial, data = s, control = glm.control(epsilon = 1e-14, maxit = 100))
  a1 <- anova(m0, m1, test = "Chisq")
  a2 <- anova(m0, m2, test = "Chisq")
  r1 <- anova(m0, m1, test = "Rao")
  r2 <- anova(m0, m2, test = "Rao")
  out$items <- c(out$items, it)
  out$uniform[[it]] <- list(statistic = a1$Deviance[2], df = a1$Df[2], p_value = a1[["Pr(>Chi)"]][2],
                            estimate = unname(coef(m1)["versionv2"]),
                            se = unname(sqrt(diag(vcov(m1)))["versionv2"]))
  out$both[[it]] <- list(statistic = a2$Deviance[2], df = a2$Df[2], p_value = a2[["Pr(>Chi)"]][2])
  out$score_uniform[[it]] <- list(statistic = r1$Rao[2], p_value = r1[["Pr(>Chi)"]][2])
  out$score_both[[it]] <- list(statistic = r2$Rao[2], p_value = r2[["Pr(>Chi)"]][2])
}
p1 <- sapply(out$uniform, function(x) x$p_value)
out$uniform_bh <- unname(p.adjust(p1, "BH"))
p2 <- sapply(out$both, function(x) x$p_value)
out$both_bh <- unname(p.adjust(p2, "BH"))
out$R <- R.version.string
write_json(out, "tests/reference/dif_reference.json", digits = NA, auto_unbox = TRUE, pretty = TRUE)
