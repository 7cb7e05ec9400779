# Reference values for the verbs x engines matrix of tests/inference/test_verbs_engines.py:
#
#   Rscript tests/reference/verbs_engines_reference.R
#
# Every maximum-likelihood engine against every inference verb, on R's own datasets:
# - lmer (lme4/lmerTest): sleepstudy, Reaction ~ Days + (Days|Subject), REML ("lmer") and its ML
#   refit ("lmer_ml"); and a factor fit for emmeans/contrasts, Reaction ~ Dayf + (1|Subject) with
#   Dayf = factor(pmin(Days, 3)) (levels 0, 1, 2, 3; "lmer_factor"). Data: lmer_sleepstudy.csv.
# - glmer: cbpp, cbind(incidence, size - incidence) ~ period + (1|herd) (Laplace). engine_cbpp.csv.
# - clmm (ordinal): wine, rating ~ temp + contact + (1|judge) (logit, flexible). clmm_wine.csv.
# - glmmTMB: cbpp with betabinomial() ("tmb_betabinomial"), and a beta_family() fit
#   score ~ arm + (1|item) ("tmb_beta") on a simulated 0-1 score (set.seed(3535), written to
#   verbs_beta.csv: 3 arms x 24 items x 2 runs).
# The fits read the CSVs the tests read; the script first checks that the CSVs equal R's datasets.
# For each fit: fixef, vcov, logLik, AIC, BIC, deviance (R's deviance() for the class), df.residual,
# nobs, ngroups, as.data.frame(VarCorr) (grp, var1, var2, vcov, sdcor), ranef, confint (Wald;
# profile for lmer/glmer), predict (re.form = NA / NULL, type link / response, on the data and on a
# 3-row newdata; ordinal has no predict for clmm), ref_grid, emmeans, regrid, pairwise contrasts
# (tukey and holm), anova (car::Anova type 3 Wald chi-square; lmerTest type III with Satterthwaite
# and Kenward-Roger df), the LRT of a smaller fit against the bigger one (anova(small, big); lmer
# refitted by ML as R does), and car::linearHypothesis of one hypothesis.
# A value R cannot give is recorded as {"error": message}.
suppressPackageStartupMessages({
  library(lme4); library(lmerTest); library(ordinal); library(glmmTMB); library(emmeans)
  library(car); library(jsonlite)
})

file_arg <- grep("^--file=", commandArgs(FALSE), value = TRUE)
here <- dirname(normalizePath(sub("^--file=", "", file_arg)))
emm_options(opt.digits = FALSE)

attempt <- function(expr) tryCatch(expr, error = function(e) list(error = conditionMessage(e)))
frame <- function(d) {
  d <- as.data.frame(d)
  out <- lapply(d, function(x) if (is.factor(x)) as.character(x) else x)
  if (!identical(rownames(d), as.character(seq_len(nrow(d))))) out <- c(list(rownames = rownames(d)), out)
  out
}
matrix_rec <- function(m) {
  m <- as.matrix(m)
  list(rownames = rownames(m), colnames = colnames(m), values = unname(lapply(seq_len(nrow(m)), function(i) unname(m[i, ]))))
}
named <- function(x) as.list(x)
emm_frame <- function(e) frame(summary(e, infer = c(TRUE, TRUE)))
contrasts_of <- function(e) list(
  tukey = frame(summary(contrast(e, "pairwise", adjust = "tukey"), infer = c(TRUE, TRUE))),
  holm = frame(summary(contrast(e, "pairwise", adjust = "holm"), infer = c(TRUE, TRUE))))
anova_frame <- function(a) {
  a <- as.data.frame(a)
  c(list(term = rownames(a)), lapply(a, function(x) unname(x)))
}
versions <- sapply(c("lme4", "lmerTest", "ordinal", "glmmTMB", "emmeans", "car", "pbkrtest"),
                   function(p) as.character(packageVersion(p)))

# --- data: the CSVs the tests read, checked against R's datasets ------------------------------------
sleep <- read.csv(file.path(here, "lmer_sleepstudy.csv"), colClasses = c(Subject = "character"))
stopifnot(isTRUE(all.equal(sleep$Reaction, sleepstudy$Reaction)), all(sleep$Days == sleepstudy$Days),
          all(sleep$Subject == as.character(sleepstudy$Subject)))
sleep$Subject <- factor(sleep$Subject, levels = levels(sleepstudy$Subject))
sleep$Dayf <- factor(pmin(sleep$Days, 3))
cbpp_csv <- read.csv(file.path(here, "engine_cbpp.csv"), colClasses = c(herd = "character", period = "character"))
stopifnot(all(cbpp_csv$incidence == cbpp$incidence), all(cbpp_csv$size == cbpp$size),
          all(cbpp_csv$herd == as.character(cbpp$herd)), all(cbpp_csv$period == as.character(cbpp$period)))
cb <- cbpp
wine_csv <- read.csv(file.path(here, "clmm_wine.csv"))
stopifnot(all(wine_csv$rating == as.integer(wine$rating)), all(wine_csv$temp == as.character(wine$temp)),
          all(wine_csv$contact == as.character(wine$contact)), all(wine_csv$judge == as.integer(wine$judge)))
wn <- wine

set.seed(3535)
beta_d <- expand.grid(run = 1:2, item = sprintf("i%02d", 1:24), arm = c("a", "b", "c"), stringsAsFactors = FALSE)
beta_d <- beta_d[, c("arm", "item", "run")]
u <- rnorm(24, 0, 0.6)
names(u) <- sprintf("i%02d", 1:24)
mu <- plogis(c(a = -0.5, b = 0.2, c = 0.6)[beta_d$arm] + u[beta_d$item])
beta_d$score <- round(rbeta(nrow(beta_d), mu * 10, (1 - mu) * 10), 6)
write.csv(beta_d, file.path(here, "verbs_beta.csv"), row.names = FALSE)
bd <- read.csv(file.path(here, "verbs_beta.csv"), colClasses = c(arm = "factor", item = "factor"))

# --- fits ------------------------------------------------------------------------------------------
fits <- list(
  lmer = lmerTest::lmer(Reaction ~ Days + (Days | Subject), sleep, REML = TRUE),
  lmer_ml = lmerTest::lmer(Reaction ~ Days + (Days | Subject), sleep, REML = FALSE),
  lmer_factor = lmerTest::lmer(Reaction ~ Dayf + (1 | Subject), sleep, REML = TRUE),
  glmer = glmer(cbind(incidence, size - incidence) ~ period + (1 | herd), cb, family = binomial),
  clmm = clmm(rating ~ temp + contact + (1 | judge), data = wn),
  tmb_betabinomial = glmmTMB(cbind(incidence, size - incidence) ~ period + (1 | herd), cb,
                             family = betabinomial()),
  tmb_beta = glmmTMB(score ~ arm + (1 | item), bd, family = beta_family()))
small <- list(
  lmer = lmerTest::lmer(Reaction ~ 1 + (Days | Subject), sleep, REML = TRUE),
  lmer_factor = lmerTest::lmer(Reaction ~ 1 + (1 | Subject), sleep, REML = TRUE),
  glmer = glmer(cbind(incidence, size - incidence) ~ 1 + (1 | herd), cb, family = binomial),
  clmm = clmm(rating ~ contact + (1 | judge), data = wn),
  tmb_betabinomial = glmmTMB(cbind(incidence, size - incidence) ~ 1 + (1 | herd), cb, family = betabinomial()),
  tmb_beta = glmmTMB(score ~ 1 + (1 | item), bd, family = beta_family()))
formulas <- list(
  lmer = "Reaction ~ Days + (Days|Subject)", lmer_ml = "Reaction ~ Days + (Days|Subject)",
  lmer_factor = "Reaction ~ Dayf + (1|Subject)",
  glmer = "cbind(incidence, size - incidence) ~ period + (1|herd)",
  clmm = "rating ~ temp + contact + (1|judge)",
  tmb_betabinomial = "cbind(incidence, size - incidence) ~ period + (1|herd)",
  tmb_beta = "score ~ arm + (1|item)")
small_formulas <- list(
  lmer = "Reaction ~ 1 + (Days|Subject)", lmer_factor = "Reaction ~ 1 + (1|Subject)",
  glmer = "cbind(incidence, size - incidence) ~ 1 + (1|herd)", clmm = "rating ~ contact + (1|judge)",
  tmb_betabinomial = "cbind(incidence, size - incidence) ~ 1 + (1|herd)", tmb_beta = "score ~ 1 + (1|item)")
hypotheses <- list(lmer = "Days = 10", lmer_ml = "Days = 10", lmer_factor = "Dayf2 = Dayf3",
                   glmer = "period2 = period3", clmm = "tempwarm = contactyes",
                   tmb_betabinomial = "period2 = period3", tmb_beta = "armb = armc")
newdata <- list(
  sleep = data.frame(Days = c(0, 4.5, 9), Subject = factor(c("308", "309", "310"), levels = levels(sleep$Subject))),
  sleepf = data.frame(Dayf = factor(c("0", "2", "3"), levels = levels(sleep$Dayf)),
                      Subject = factor(c("308", "309", "310"), levels = levels(sleep$Subject))),
  cbpp = data.frame(period = factor(c("1", "2", "4"), levels = levels(cbpp$period)),
                    herd = factor(c("1", "2", "3"), levels = levels(cbpp$herd)),
                    incidence = 0, size = c(10, 12, 14)),
  beta = data.frame(arm = factor(c("a", "b", "c"), levels = levels(bd$arm)),
                    item = factor(c("i01", "i02", "i03"), levels = levels(bd$item))))
newdata_of <- list(lmer = "sleep", lmer_ml = "sleep", lmer_factor = "sleepf", glmer = "cbpp",
                   tmb_betabinomial = "cbpp", tmb_beta = "beta")
specs <- list(lmer_factor = ~ Dayf, glmer = ~ period, clmm = ~ temp, tmb_betabinomial = ~ period,
              tmb_beta = ~ arm)

# fixed effects and their covariance, with the names R uses
fixed_part <- function(fit) {
  if (inherits(fit, "glmmTMB")) return(list(fixef = fixef(fit)$cond, vcov = vcov(fit)$cond))
  if (inherits(fit, "clmm")) {
    b <- fit$beta
    v <- vcov(fit)
    return(list(fixef = b, vcov = v[names(b), names(b)], thresholds = fit$alpha,
                vcov_full = v))
  }
  list(fixef = fixef(fit), vcov = as.matrix(vcov(fit)))
}

varcorr_frame <- function(fit) {
  if (inherits(fit, "clmm")) {
    vc <- VarCorr(fit)
    return(frame(data.frame(grp = names(vc), var1 = "(Intercept)", var2 = NA_character_,
                            vcov = sapply(vc, function(m) m[1, 1]),
                            sdcor = sapply(vc, function(m) sqrt(m[1, 1])), row.names = NULL)))
  }
  if (inherits(fit, "glmmTMB")) {
    # this glmmTMB has no as.data.frame() for VarCorr; random intercepts only here
    vc <- VarCorr(fit)$cond
    stopifnot(all(sapply(vc, nrow) == 1))
    return(frame(data.frame(grp = names(vc), var1 = "(Intercept)", var2 = NA_character_,
                            vcov = sapply(vc, function(m) m[1, 1]),
                            sdcor = sapply(vc, function(m) sqrt(m[1, 1])), row.names = NULL)))
  }
  frame(as.data.frame(VarCorr(fit)))
}

ranef_of <- function(fit) {
  re <- if (inherits(fit, "glmmTMB")) ranef(fit)$cond else ranef(fit)
  lapply(re, function(d) frame(d))
}

ngroups_of <- function(fit) {
  if (inherits(fit, "clmm")) return(as.list(fit$dims$nlev.re))
  if (inherits(fit, "glmmTMB")) return(as.list(sapply(fit$modelInfo$reTrms$cond$flist, nlevels)))
  as.list(ngrps(fit))
}

predictions <- function(fit, nd) {
  if (inherits(fit, "clmm")) return(list(error = "ordinal has no predict() method for clmm fits"))
  out <- list()
  for (where in c("data", "newdata")) {
    for (re in c("NA", "NULL")) {
      for (type in c("link", "response")) {
        re_form <- if (re == "NA") NA else NULL
        key <- paste(where, re, type, sep = "_")
        out[[key]] <- attempt(unname(as.numeric(
          if (where == "data") predict(fit, re.form = re_form, type = type)
          else predict(fit, newdata = nd, re.form = re_form, type = type))))
      }
    }
  }
  out
}

confints <- function(fit, name) {
  out <- list()
  if (inherits(fit, "glmmTMB")) {
    out$Wald <- attempt(matrix_rec(confint(fit, method = "wald")))
  } else if (inherits(fit, "clmm")) {
    out$Wald <- attempt(matrix_rec(confint(fit)))
  } else {
    out$Wald <- attempt(matrix_rec(confint(fit, method = "Wald")))
    # profiling changes the state a merMod shares with its deviance function (predict(newdata,
    # re.form = NULL) on the profiled fit gives other values): profile a copy
    copy <- update(fit)
    out$profile <- attempt(matrix_rec(suppressWarnings(confint(copy, method = "profile"))))
  }
  out
}

# car::linearHypothesis of one hypothesis on the fixed effects; the Wald chi-square by hand beside it
hypothesis <- function(fit, h) {
  fp <- fixed_part(fit)
  car_res <- attempt({
    lh <- if (inherits(fit, "clmm") || inherits(fit, "glmmTMB"))
      linearHypothesis(fit, h, coef. = fp$fixef, vcov. = fp$vcov) else linearHypothesis(fit, h)
    anova_frame(lh)
  })
  L <- car::makeHypothesis(names(fp$fixef), h)
  if (is.null(dim(L))) L <- t(L)
  rhs <- L[, ncol(L)]
  L <- L[, -ncol(L), drop = FALSE]
  d <- L %*% fp$fixef - rhs
  chisq <- as.numeric(t(d) %*% solve(L %*% fp$vcov %*% t(L)) %*% d)
  list(hypothesis = h, car = car_res, L = unname(L), rhs = unname(rhs), chisq = chisq, df = nrow(L),
       p = pchisq(chisq, nrow(L), lower.tail = FALSE))
}

record <- function(name) {
  fit <- fits[[name]]
  fp <- fixed_part(fit)
  ll <- logLik(fit)
  out <- list(
    formula = formulas[[name]], class = class(fit)[1],
    fixef = named(fp$fixef), vcov = matrix_rec(fp$vcov),
    loglik = as.numeric(ll), df = attr(ll, "df"), aic = AIC(fit), bic = BIC(fit),
    deviance = attempt(suppressWarnings(deviance(fit))), minus2loglik = -2 * as.numeric(ll),
    df_residual = attempt(df.residual(fit)), nobs = nobs(fit), ngroups = ngroups_of(fit),
    varcorr = varcorr_frame(fit), ranef = ranef_of(fit), confint = confints(fit, name),
    linear_hypothesis = hypothesis(fit, hypotheses[[name]]))
  if (!is.null(fp$thresholds)) {
    out$thresholds <- named(fp$thresholds)
    out$vcov_full <- matrix_rec(fp$vcov_full)
  }
  if (inherits(fit, "merMod") && isREML(fit)) out$remlcrit <- as.numeric(REMLcrit(fit))
  if (inherits(fit, "lmerMod")) out$sigma <- sigma(fit)
  if (inherits(fit, "glmmTMB")) out$sigma <- sigma(fit)
  if (!inherits(fit, "clmm")) {
    out$predict <- predictions(fit, newdata[[newdata_of[[name]]]])
    out$newdata <- frame(newdata[[newdata_of[[name]]]])
  } else {
    out$predict <- predictions(fit, NULL)
  }
  # ref_grid of the fit (emmeans' own grid: factors at every level, covariates at their means)
  rg <- ref_grid(fit)
  out$ref_grid <- attempt(emm_frame(rg))
  # anova: car::Anova type 3 (Wald chi-square); lmerTest's F tests for lmer
  out$anova <- list(car_type3 = attempt(anova_frame(suppressMessages(Anova(fit, type = 3)))))
  if (inherits(fit, "lmerModLmerTest")) {
    out$anova$satterthwaite <- attempt(anova_frame(anova(fit, type = 3, ddf = "Satterthwaite")))
    out$anova$kenward_roger <- attempt(anova_frame(anova(fit, type = 3, ddf = "Kenward-Roger")))
  }
  if (inherits(fit, "clmm")) {
    # car 3.1.1 has no Anova method for clmm (the default one stops: "non-conformable arguments",
    # vcov holding thresholds and ST beside beta); the type-3 Wald chi-square of each location term
    # by car::linearHypothesis on beta and its covariance, which is what car computes for other fits
    fp <- fixed_part(fit)
    terms <- list(temp = "tempwarm", contact = "contactyes")
    rows <- lapply(names(terms), function(t) {
      lh <- linearHypothesis(fit, paste(terms[[t]], "= 0"), coef. = fp$fixef, vcov. = fp$vcov)
      c(Chisq = lh$Chisq[2], Df = lh$Df[2], p = lh[["Pr(>Chisq)"]][2])
    })
    out$anova$wald_type3_by_linear_hypothesis <- list(
      term = names(terms), Chisq = sapply(rows, `[[`, "Chisq"), Df = sapply(rows, `[[`, "Df"),
      `Pr(>Chisq)` = sapply(rows, `[[`, "p"))
  }
  out
}

out <- list(versions = as.list(versions), r_version = R.version.string)
for (name in names(fits)) out[[name]] <- record(name)

# the LRT of the smaller fit against the bigger one, at the top level (ordinal's anova() finds its
# fits by name there); lmer fits are refitted by ML (anova's refit = TRUE)
for (name in names(small)) {
  small_fit <- small[[name]]
  big_fit <- fits[[name]]
  out[[name]]$lrt <- list(small_formula = small_formulas[[name]],
                          table = attempt(anova_frame(suppressMessages(anova(small_fit, big_fit)))))
}

# --- emmeans, regrid and contrasts -------------------------------------------------------------------
for (name in c("lmer_factor", "glmer", "tmb_betabinomial", "tmb_beta")) {
  fit <- fits[[name]]
  e_link <- emmeans(fit, specs[[name]])
  res <- list(spec = all.vars(specs[[name]]), emmeans_link = emm_frame(e_link),
              contrasts_link = contrasts_of(e_link))
  if (name != "lmer_factor") {
    e_resp <- emmeans(fit, specs[[name]], type = "response")
    res$emmeans_response <- emm_frame(e_resp)
    res$contrasts_response <- contrasts_of(e_resp)        # ratios (odds ratios) back-transformed
    rg <- regrid(e_link)
    res$regrid <- emm_frame(rg)
    res$contrasts_regrid <- contrasts_of(rg)              # differences of probabilities
  } else {
    res$emmeans_satterthwaite <- emm_frame(emmeans(fit, specs[[name]], lmer.df = "satterthwaite"))
    res$emmeans_asymptotic <- emm_frame(emmeans(fit, specs[[name]], lmer.df = "asymptotic"))
  }
  out[[name]]$emmeans <- res
}
# the lmer slope fit: emmeans at the mean of Days
out$lmer$emmeans <- list(spec = "Days", emmeans_link = emm_frame(emmeans(fits$lmer, ~ Days)))
# the ML fit: emmeans' default Kenward-Roger df has pbkrtest adjust the covariance of the REML refit
out$lmer_ml$emmeans <- list(
  spec = "Days", emmeans_link = emm_frame(emmeans(fits$lmer_ml, ~ Days)),
  emmeans_satterthwaite = emm_frame(emmeans(fits$lmer_ml, ~ Days, lmer.df = "satterthwaite")),
  emmeans_asymptotic = emm_frame(emmeans(fits$lmer_ml, ~ Days, lmer.df = "asymptotic")))

# clmm: every mode of emmeans' ordinal support
cm <- fits$clmm
clmm_em <- list()
for (mode in c("latent", "linear.predictor", "cum.prob", "exc.prob", "mean.class")) {
  e <- emmeans(cm, ~ temp, mode = mode)
  clmm_em[[mode]] <- list(emmeans = emm_frame(e), contrasts = contrasts_of(e))
}
e <- emmeans(cm, ~ rating | temp, mode = "prob")
clmm_em$prob <- list(spec = "~ rating | temp", emmeans = emm_frame(e), contrasts = contrasts_of(e))
e <- emmeans(cm, ~ temp | cut, mode = "cum.prob")
clmm_em$cum.prob_by_cut <- list(spec = "~ temp | cut", emmeans = emm_frame(e), contrasts = contrasts_of(e))
e <- emmeans(cm, ~ temp | cut, mode = "exc.prob")
clmm_em$exc.prob_by_cut <- list(spec = "~ temp | cut", emmeans = emm_frame(e), contrasts = contrasts_of(e))
out$clmm$emmeans <- clmm_em

writeLines(toJSON(out, digits = NA, auto_unbox = TRUE, pretty = TRUE, null = "null", na = "null"),
           file.path(here, "verbs_engines_reference.json"))
