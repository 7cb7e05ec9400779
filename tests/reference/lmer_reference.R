# Reference values for evalmix.lmer: lme4's profiled (RE)ML fits, lmerTest's Satterthwaite tests,
# pbkrtest's Kenward-Roger adjustment and emmeans with lmer.df.
#
#   Rscript tests/reference/lmer_reference.R
#
# Writes the data of each design beside this script (lmer_sleepstudy.csv, lmer_insteval.csv,
# lmer_judges.csv) and lmer_reference.json, which tests/lmm/test_lmer.py reads.
#   sleepstudy: Reaction ~ Days + (Days | Subject), REML and ML (lme4's data set);
#   insteval:   y ~ service + (1 | s) + (1 | d) on the first 2,000 rows of lme4's InstEval
#               (79 students, 667 lecturers; pbkrtest's dense n x n algebra keeps it this size);
#   judges:     a simulated judge-rating design, ratings 1-10 treated as continuous:
#               rating ~ model + (1 | item) + (1 | item:run).

suppressPackageStartupMessages({
  library(lme4); library(lmerTest); library(pbkrtest); library(emmeans); library(jsonlite)
})

file_arg <- grep("^--file=", commandArgs(FALSE), value = TRUE)
here <- dirname(normalizePath(sub("^--file=", "", file_arg)))

coef_tab <- function(fit, ddf) {
  s <- summary(fit, ddf = ddf)$coefficients
  data.frame(term = rownames(s), estimate = s[, "Estimate"], se = s[, "Std. Error"],
             df = s[, "df"], statistic = s[, "t value"], p_value = s[, "Pr(>|t|)"],
             row.names = NULL)
}
anova_tab <- function(fit, ddf) {
  a <- anova(fit, type = 3, ddf = ddf)
  data.frame(term = rownames(a), num_df = a[, "NumDF"], den_df = a[, "DenDF"],
             statistic = a[, "F value"], p_value = a[, "Pr(>F)"], row.names = NULL)
}
tidy <- function(s) {
  s <- as.data.frame(s)
  for (k in names(s)) if (is.factor(s[[k]])) s[[k]] <- as.character(s[[k]])
  s
}
emm_block <- function(fit, spec, lmer_df) {
  emm <- emmeans(fit, spec, lmer.df = lmer_df)
  out <- list(emmeans = tidy(summary(emm)))
  for (adj in c("tukey", "holm", "none", "bonferroni", "sidak"))
    out[[paste0("pairs_", adj)]] <- tidy(summary(pairs(emm, adjust = adj), infer = c(TRUE, TRUE)))
  out$trt_vs_ctrl_dunnettx <- tidy(summary(contrast(emm, "trt.vs.ctrl", adjust = "dunnettx"),
                                           infer = c(TRUE, TRUE)))
  set.seed(1)  # mvtnorm integrates by randomised quasi-Monte Carlo
  out$trt_vs_ctrl_mvt <- tidy(summary(contrast(emm, "trt.vs.ctrl", adjust = "mvt"),
                                      infer = c(TRUE, TRUE)))
  out
}
fit_block <- function(fit) {
  vc <- as.data.frame(VarCorr(fit))
  vc$var1[is.na(vc$var1)] <- ""
  vc$var2[is.na(vc$var2)] <- ""
  reml <- isREML(fit)
  list(
    reml = reml, nobs = nobs(fit), fixef = as.list(fixef(fit)),
    se = as.list(sqrt(diag(as.matrix(vcov(fit))))),
    vcov = unname(as.matrix(vcov(fit))),
    theta = unname(getME(fit, "theta")), theta_names = names(getME(fit, "theta")),
    sigma = sigma(fit), loglik = as.numeric(logLik(fit)),
    remlcrit = if (reml) as.numeric(REMLcrit(fit)) else NULL,
    deviance = if (reml) NULL else deviance(fit),
    aic = AIC(fit), bic = BIC(fit),
    varcorr = data.frame(group = vc$grp, var1 = vc$var1, var2 = vc$var2, variance = vc$vcov,
                         sd = vc$sdcor),
    ngrps = as.list(ngrps(fit)),
    satterthwaite = coef_tab(fit, "Satterthwaite"),
    # Kenward-Roger is defined for REML fits only (lmerTest refuses it for ML)
    kenward_roger = if (reml) coef_tab(fit, "Kenward-Roger") else NULL,
    vcov_kr = if (reml) unname(as.matrix(vcovAdj(as(fit, "lmerMod")))) else NULL,
    anova_satterthwaite = anova_tab(fit, "Satterthwaite"),
    anova_kenward_roger = if (reml) anova_tab(fit, "Kenward-Roger") else NULL,
    ranef_head = lapply(ranef(fit), function(r) head(r[, 1], 5)),
    fitted_head = head(unname(fitted(fit)), 5)
  )
}

out <- list()

## sleepstudy ---------------------------------------------------------------------------------------
data(sleepstudy, package = "lme4")
write.csv(sleepstudy, file.path(here, "lmer_sleepstudy.csv"), row.names = FALSE)
m_reml <- lmer(Reaction ~ Days + (Days | Subject), sleepstudy)
m_ml <- lmer(Reaction ~ Days + (Days | Subject), sleepstudy, REML = FALSE)
out$sleepstudy_reml <- fit_block(m_reml)
out$sleepstudy_ml <- fit_block(m_ml)
out$sleepstudy_reml$contest_days <- tidy(contest(m_reml, c(0, 1)))
m_uncor <- lmer(Reaction ~ Days + (Days || Subject), sleepstudy)
out$sleepstudy_uncorrelated <- fit_block(m_uncor)

## InstEval subset ----------------------------------------------------------------------------------
data(InstEval, package = "lme4")
ie <- droplevels(InstEval[1:2000, c("s", "d", "service", "y")])
ie$s <- as.character(ie$s); ie$d <- as.character(ie$d); ie$service <- as.character(ie$service)
write.csv(ie, file.path(here, "lmer_insteval.csv"), row.names = FALSE)
ie <- read.csv(file.path(here, "lmer_insteval.csv"), colClasses = c("character", "character",
                                                                  "character", "numeric"))
m_ie <- lmer(y ~ service + (1 | s) + (1 | d), ie)
out$insteval <- fit_block(m_ie)
out$insteval$emm_satterthwaite <- emm_block(m_ie, "service", "satterthwaite")
out$insteval$emm_kenward_roger <- emm_block(m_ie, "service", "kenward-roger")

## judge ratings ------------------------------------------------------------------------------------
set.seed(20261126)
n_item <- 40; n_run <- 3
models <- c("judge-A", "judge-B", "judge-C", "judge-D")
g <- expand.grid(run = seq_len(n_run), model = models, item = sprintf("q%02d", seq_len(n_item)),
                 stringsAsFactors = FALSE)
item_eff <- rnorm(n_item, 0, 1.2)[match(g$item, sprintf("q%02d", seq_len(n_item)))]
ir <- interaction(g$item, g$run)
run_eff <- rnorm(nlevels(ir), 0, 0.6)[as.integer(ir)]
shift <- c(0, 0.4, 0.9, -0.3)[match(g$model, models)]
g$rating <- pmin(10, pmax(1, round(6 + shift + item_eff + run_eff + rnorm(nrow(g), 0, 1.1))))
g <- g[sample(nrow(g), nrow(g) - 25), c("item", "run", "model", "rating")]  # unbalanced
g <- g[order(g$item, g$run, g$model), ]
write.csv(g, file.path(here, "lmer_judges.csv"), row.names = FALSE)
g <- read.csv(file.path(here, "lmer_judges.csv"), stringsAsFactors = FALSE)
m_j <- lmer(rating ~ model + (1 | item) + (1 | item:run), g)
out$judges <- fit_block(m_j)
out$judges$emm_satterthwaite <- emm_block(m_j, "model", "satterthwaite")
out$judges$emm_kenward_roger <- emm_block(m_j, "model", "kenward-roger")
m_j0 <- lmer(rating ~ 1 + (1 | item) + (1 | item:run), g)
a <- anova(m_j0, m_j)  # refits both with ML, as lme4 does
out$judges$lrt <- data.frame(npar = a$npar, aic = a$AIC, bic = a$BIC, loglik = a$logLik,
                             deviance = a$deviance, statistic = a$Chisq, df_diff = a$Df,
                             p_value = a[["Pr(>Chisq)"]])

out$versions <- list(R = R.version.string, lme4 = as.character(packageVersion("lme4")),
                     lmerTest = as.character(packageVersion("lmerTest")),
                     pbkrtest = as.character(packageVersion("pbkrtest")),
                     emmeans = as.character(packageVersion("emmeans")))
writeLines(toJSON(out, digits = NA, auto_unbox = TRUE, null = "null", na = "null", pretty = TRUE),
           file.path(here, "lmer_reference.json"))
