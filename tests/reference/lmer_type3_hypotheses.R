# Reference values for tests/lmm/test_lmer_type3_hypotheses.py:
#
#   Rscript tests/reference/lmer_type3_hypotheses.R
#
# lmerTest's type III F tests (anova(fit), Satterthwaite) of sleepstudy (lmer_sleepstudy.csv)
# models with several terms, by treatment and by sum-to-zero coding; with
# Dayf = factor(pmin(Days, 3)), g = a subject's number mod 3 == 0 ("a"/"b") and
# x = number mod 5 + Days^2 / 10 (a covariate varying within subjects):
#   inter:   Reaction ~ Dayf * g + (Days | Subject)
#   slopes:  Reaction ~ Dayf * g + x + Dayf:x + (Days | Subject)
#   covar:   Reaction ~ g * x + (Days | Subject)
# lmerTest tests each term along its own rows (get_contrasts_type3, built on the treatment-coded
# design); every coding gives the same F, and the Satterthwaite df depend on the rows.  The fits
# run bobyqa to rhoend = 1e-12 (the optimum; lme4's default stops a little short of it).
suppressPackageStartupMessages({library(lmerTest); library(jsonlite)})
file_arg <- grep("^--file=", commandArgs(FALSE), value = TRUE)
here <- dirname(normalizePath(sub("^--file=", "", file_arg)))
d <- read.csv(file.path(here, "lmer_sleepstudy.csv"))
d$g <- factor(ifelse(d$Subject %% 3 == 0, "a", "b"))
d$x <- d$Subject %% 5 + d$Days^2 / 10
d$Subject <- factor(d$Subject)
d$Dayf <- factor(pmin(d$Days, 3))
tight <- lmerControl(optimizer = "bobyqa", optCtrl = list(rhoend = 1e-12, maxfun = 1e5))
formulas <- list(inter = Reaction ~ Dayf * g + (Days | Subject),
                 slopes = Reaction ~ Dayf * g + x + Dayf:x + (Days | Subject),
                 covar = Reaction ~ g * x + (Days | Subject))
out <- list()
for (nm in names(formulas)) {
  for (coding in c("treatment", "sum")) {
    vars <- intersect(c("Dayf", "g"), all.vars(formulas[[nm]]))
    ctr <- setNames(rep(list(paste0("contr.", coding)), length(vars)), vars)
    fit <- lmer(formulas[[nm]], d, control = tight, contrasts = ctr)
    a <- anova(fit, type = 3, ddf = "Satterthwaite")
    out[[paste0(nm, "_", coding)]] <- list(term = rownames(a), statistic = a[["F value"]], df1 = a$NumDF,
                                           df2 = a$DenDF, p_value = a[["Pr(>F)"]])
  }
}
out$versions <- list(lme4 = as.character(packageVersion("lme4")),
                     lmerTest = as.character(packageVersion("lmerTest")), R = R.version.string)
writeLines(toJSON(out, auto_unbox = TRUE, digits = NA), file.path(here, "lmer_type3_hypotheses.json"))
