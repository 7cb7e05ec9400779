# Reference values for tests/inference/test_emmeans_kr_ml.py:
#
#   Rscript tests/reference/emmeans_kr_ml.R
#
# emmeans on lmer fits by maximum likelihood (REML = FALSE) with lmer.df = "kenward-roger" and
# "satterthwaite", beside the REML fits, on two of R's datasets:
# - sleepstudy (lmer_sleepstudy.csv): Reaction ~ Dayf + (Days | Subject), Dayf = factor(pmin(Days, 3));
# - nlme's Machines (saved as lmer_machines.csv): score ~ Machine + (1 | Worker) + (1 | Worker:Machine).
# What emmeans does with an ML fit (emmeans:::emm_basis.merMod, pbkrtest 0.5.2):
# - the estimates are the ML fit's fixef;
# - Kenward-Roger: the covariance is pbkrtest::vcovAdj(fit), which refits the model by REML and
#   adjusts the REML fit's covariance; the df are pbkrtest::Lb_ddf(L, vcov(ML fit), adjusted V),
#   so the df use the ML fit's unadjusted covariance with the REML refit's P and W;
# - Satterthwaite: vcov(ML fit) and lmerTest::calcSatterth on the ML fit (the ML deviance).
# Also lmerTest's anova(fit, ddf = "Satterthwaite") (lmerTest tests the one term of a one-term
# model along the rows of the Doolittle factor of X'X, get_contrasts_type1), and pbkrtest's
# KRmodcomp of the last two fixed effects being equal (on the REML refit of an ML fit).
# The fits run bobyqa to rhoend = 1e-12 (the REML refits of vcovAdj inherit the control): lme4's
# default stops within ~2e-5 of the optimum in theta on sleepstudy, which moves its SEs by up to
# 7e-6 relative; the reference is then the optimum itself, to which evalmix's fits converge.
suppressPackageStartupMessages({library(lmerTest); library(emmeans); library(pbkrtest); library(jsonlite)})
file_arg <- grep("^--file=", commandArgs(FALSE), value = TRUE)
here <- dirname(normalizePath(sub("^--file=", "", file_arg)))
emm_options(pbkrtest.limit = 1e5, lmerTest.limit = 1e5)

sleep <- read.csv(file.path(here, "lmer_sleepstudy.csv"))
sleep$Subject <- factor(sleep$Subject)
sleep$Dayf <- factor(pmin(sleep$Days, 3))
data("Machines", package = "nlme")
machines <- data.frame(Worker = as.character(Machines$Worker), Machine = as.character(Machines$Machine),
                       score = Machines$score)
write.csv(machines, file.path(here, "lmer_machines.csv"), row.names = FALSE)
machines$Worker <- factor(machines$Worker)
machines$Machine <- factor(machines$Machine)

cases <- list(
  sleepstudy = list(data = sleep, formula = Reaction ~ Dayf + (Days | Subject), spec = ~Dayf),
  machines = list(data = machines, formula = score ~ Machine + (1 | Worker) + (1 | Worker:Machine),
                  spec = ~Machine))
tight <- lmerControl(optimizer = "bobyqa", optCtrl = list(rhoend = 1e-12, maxfun = 1e5))
out <- list()
for (nm in names(cases)) {
  cs <- cases[[nm]]
  for (reml in c(FALSE, TRUE)) {
    fit <- lme4::lmer(cs$formula, cs$data, REML = reml, control = tight)
    case <- list(fixef = as.list(lme4::fixef(fit)))
    for (mode in c("kenward-roger", "satterthwaite")) {
      em <- emmeans(fit, cs$spec, lmer.df = mode)
      s <- summary(em)
      pw <- summary(pairs(em), infer = c(TRUE, TRUE))
      raw <- summary(pairs(em), adjust = "none")
      case[[mode]] <- list(
        emmeans = list(level = as.character(s[[1]]), estimate = s$emmean, se = s$SE, df = s$df,
                       conf_low = s$lower.CL, conf_high = s$upper.CL),
        pairs = list(contrast = as.character(pw$contrast), estimate = pw$estimate, se = pw$SE,
                     df = pw$df, conf_low = pw$lower.CL, conf_high = pw$upper.CL,
                     statistic = pw$t.ratio, p_tukey = pw$p.value, p_none = raw$p.value))
    }
    a <- anova(as_lmerModLmerTest(fit), ddf = "Satterthwaite")
    case$anova_satterthwaite <- list(term = rownames(a), statistic = a[["F value"]], df1 = a$NumDF,
                                     df2 = a$DenDF, p_value = a[["Pr(>F)"]])
    # the F test of the last two coefficients being equal: pbkrtest refits an ML fit by REML
    L <- matrix(0, 1, length(lme4::fixef(fit)))
    L[1, length(L) - 1:0] <- c(1, -1)
    t <- KRmodcomp(fit, L)$test
    case$krmodcomp_last_two <- list(statistic = t["Ftest", "stat"], df1 = t["Ftest", "ndf"],
                                    df2 = t["Ftest", "ddf"], p_value = t["Ftest", "p.value"])
    out[[paste0(nm, if (reml) "_reml" else "_ml")]] <- case
  }
}
out$versions <- list(lme4 = as.character(packageVersion("lme4")),
                     emmeans = as.character(packageVersion("emmeans")),
                     pbkrtest = as.character(packageVersion("pbkrtest")),
                     lmerTest = as.character(packageVersion("lmerTest")), R = R.version.string)
writeLines(toJSON(out, auto_unbox = TRUE, digits = NA), file.path(here, "emmeans_kr_ml.json"))
