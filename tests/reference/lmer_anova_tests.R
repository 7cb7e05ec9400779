# Reference values for tests/lmm/test_lmer_anova_tests.py:
#
#   Rscript tests/reference/lmer_anova_tests.R
#
# lmer fits' type-III tests besides lmerTest's F tests, on sleepstudy (lmer_sleepstudy.csv) with
# Reaction ~ Days + (Days | Subject) and Reaction ~ Dayf + (1 | Subject), Dayf = factor(pmin(Days, 3)),
# by REML and by ML:
# - car::Anova(fit, type = 3, test.statistic = "Chisq"): Wald chi-square of every term;
# - Kenward-Roger on an ML fit: lmerTest refuses it ("only available for REML model fits"), and so
#   does car's F test; pbkrtest's KRmodcomp(fit, L) refits the model by REML first (its vcovAdj
#   does the same), so each term's F test is the REML fit's: KRmodcomp on the ML fit per term, and
#   summary(REML fit, ddf = "Kenward-Roger") coefficients.
suppressPackageStartupMessages({library(lmerTest); library(pbkrtest); library(car); library(jsonlite)})
file_arg <- grep("^--file=", commandArgs(FALSE), value = TRUE)
here <- dirname(normalizePath(sub("^--file=", "", file_arg)))
d <- read.csv(file.path(here, "lmer_sleepstudy.csv"))
d$Subject <- factor(d$Subject)
d$Dayf <- factor(pmin(d$Days, 3))
formulas <- list(slope = Reaction ~ Days + (Days | Subject), factor = Reaction ~ Dayf + (1 | Subject))
out <- list()
for (nm in names(formulas)) {
  for (reml in c(TRUE, FALSE)) {
    fit <- lmer(formulas[[nm]], d, REML = reml)
    a <- Anova(fit, type = 3, test.statistic = "Chisq")
    case <- list(chisq = list(term = rownames(a), statistic = a$Chisq, df = a$Df, p_value = a[["Pr(>Chisq)"]]))
    if (!reml) {
      assign_ <- attr(model.matrix(fit), "assign")
      terms_ <- attr(terms(fit), "term.labels")
      kr <- lapply(seq_along(terms_), function(k) {
        L <- diag(length(assign_))[assign_ == k, , drop = FALSE]
        t <- KRmodcomp(fit, L)$test
        list(term = terms_[k], statistic = t["Ftest", "stat"], df1 = t["Ftest", "ndf"],
             df2 = t["Ftest", "ddf"], p_value = t["Ftest", "p.value"])
      })
      case$kr_ml <- kr
      case$lmerTest_ml <- tryCatch(anova(fit, ddf = "Kenward-Roger"), error = function(e) conditionMessage(e))
      s <- summary(update(fit, REML = TRUE), ddf = "Kenward-Roger")$coefficients
      case$kr_coef <- list(term = rownames(s), estimate = s[, 1], se = s[, 2], df = s[, 3])
    }
    out[[paste0(nm, if (reml) "_reml" else "_ml")]] <- case
  }
}
out$versions <- list(lme4 = as.character(packageVersion("lme4")), car = as.character(packageVersion("car")),
                     pbkrtest = as.character(packageVersion("pbkrtest")),
                     lmerTest = as.character(packageVersion("lmerTest")), R = R.version.string)
writeLines(toJSON(out, auto_unbox = TRUE, digits = NA), file.path(here, "lmer_anova_tests.json"))
