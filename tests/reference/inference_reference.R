# Reference values for evalmix.emmeans / evalmix.contrast / evalmix.anova / evalmix.compare_models.
#
#   Rscript tests/reference/inference_reference.R            # simulated designs (seconds)
#   Rscript tests/reference/inference_reference.R ai4math    # glmer fits on AI4Math (minutes)
#
# The first form writes inference_sim.csv, inference_glmer_sim.csv and inference_reference.json;
# the second reads ../shared/data/ai4math/ai4math_runs.csv and writes
# inference_reference_ai4math.json.  Each fit is stored with its fixed effects, covariance, levels
# and likelihood, so the Python tests rebuild the same fit and compare emmeans, contrasts, car's
# type-III Wald tests and lme4's anova() on it.

suppressPackageStartupMessages({
  library(emmeans); library(car); library(lme4); library(jsonlite)
})

file_arg <- grep("^--file=", commandArgs(FALSE), value = TRUE)
here <- dirname(normalizePath(sub("^--file=", "", file_arg)))
mode <- if (length(commandArgs(TRUE))) commandArgs(TRUE)[1] else "sim"

rename_cols <- function(s) {
  s <- as.data.frame(s)
  map <- c(emmean = "estimate", prob = "estimate", response = "estimate",
           odds.ratio = "estimate", SE = "se", asymp.LCL = "lower", asymp.UCL = "upper",
           z.ratio = "z", p.value = "p")
  for (k in names(map)) if (k %in% names(s)) names(s)[names(s) == k] <- map[[k]]
  for (k in names(s)) if (is.factor(s[[k]])) s[[k]] <- as.character(s[[k]])
  s$df <- NULL
  s
}
emm_tab <- function(e) rename_cols(summary(e, infer = c(TRUE, FALSE)))
con_tab <- function(cn) { set.seed(1); rename_cols(summary(cn, infer = c(TRUE, TRUE))) }
anova3 <- function(fit, ...) {
  a <- car::Anova(fit, type = 3, ...)
  data.frame(term = rownames(a), chisq = a[["Chisq"]], df = a[["Df"]], p = a[["Pr(>Chisq)"]])
}
fit_info <- function(fit, data) {
  facs <- names(Filter(is.factor, data))
  ll <- logLik(fit)
  list(formula = paste(deparse(formula(fit), width.cutoff = 500), collapse = ""),
       coef_names = names(fixef_or_coef(fit)), beta = unname(fixef_or_coef(fit)),
       vcov = unname(as.matrix(vcov(fit))), loglik = as.numeric(ll),
       df = attr(ll, "df"), nobs = nobs(fit), aic = AIC(fit), bic = BIC(fit),
       levels = lapply(setNames(facs, facs), function(f) levels(data[[f]])))
}
fixef_or_coef <- function(fit) if (inherits(fit, "merMod")) fixef(fit) else coef(fit)
lme4_anova <- function(fits) {
  a <- do.call(anova, c(unname(fits), list(model.names = names(fits))))
  data.frame(name = rownames(a), npar = a$npar, aic = a$AIC, bic = a$BIC, loglik = a$logLik,
             deviance = a$deviance, chisq = a$Chisq, df_diff = a$Df, p = a[["Pr(>Chisq)"]])
}
save_json <- function(x, name) {
  writeLines(toJSON(x, digits = NA, auto_unbox = TRUE, dataframe = "rows", na = "null"),
             file.path(here, name))
}

if (mode == "sim") {
  # --- plain logistic regression on an unbalanced simulated design -----------------------------
  set.seed(20240601)
  n <- 1600
  d <- data.frame(
    model = sample(c("alpha", "beta-2", "delta", "gamma"), n, TRUE, prob = c(.3, .2, .25, .25)),
    lang = sample(c("EN", "ES"), n, TRUE, prob = c(.6, .4)),
    prompt = sample(c("COT", "ZS"), n, TRUE, prob = c(.45, .55)),
    x = round(rnorm(n), 3))
  eff <- c(alpha = 0, `beta-2` = 0.5, delta = -0.4, gamma = 1)
  eta <- -0.2 + eff[d$model] + 0.3 * (d$lang == "ES") - 0.2 * (d$prompt == "ZS") + 0.4 * d$x +
    0.5 * (d$model == "gamma") * (d$lang == "ES")
  d$correct <- rbinom(n, 1, plogis(eta))
  write.csv(d, file.path(here, "inference_sim.csv"), row.names = FALSE)
  for (v in c("model", "lang", "prompt")) d[[v]] <- factor(d[[v]])

  fit <- glm(correct ~ model * lang + prompt + x, family = binomial, data = d)
  fit_small <- glm(correct ~ model + lang, family = binomial, data = d)
  fit_mid <- glm(correct ~ model + lang + prompt, family = binomial, data = d)

  e_model <- emmeans(fit, ~ model)
  e_by <- emmeans(fit, ~ model | lang)
  emm <- list(
    model_link = emm_tab(e_model),
    model_by_lang_response = emm_tab(emmeans(fit, ~ model | lang, type = "response")),
    lang_link = emm_tab(emmeans(fit, ~ lang)),
    model_lang_cells = emm_tab(emmeans(fit, ~ model * lang)),
    model_at = emm_tab(emmeans(fit, ~ model, at = list(x = 1, prompt = "ZS"))),
    model_x_grid = emm_tab(emmeans(fit, ~ model, at = list(x = c(-1, 0, 2))))
  )
  for (w in c("proportional", "outer", "cells", "flat"))
    emm[[paste0("model_weights_", w)]] <- emm_tab(emmeans(fit, ~ model, weights = w))

  con <- list()
  for (a in c("holm", "bonferroni", "sidak", "fdr", "tukey", "dunnettx", "mvt", "none"))
    con[[paste0("pairwise_", a)]] <- con_tab(contrast(e_model, "pairwise", adjust = a))
  con$by_pairwise_holm <- con_tab(contrast(e_by, "pairwise", adjust = "holm"))
  con$by_revpairwise_tukey <- con_tab(contrast(e_by, "revpairwise", adjust = "tukey"))
  con$by_trt_dunnettx <- con_tab(contrast(e_by, "trt.vs.ctrl", ref = 2))
  con$by_trt_mvt <- con_tab(contrast(e_by, "trt.vs.ctrl", ref = 2, adjust = "mvt"))
  con$by_trt_sidak_level90 <- con_tab(
    update(contrast(e_by, "trt.vs.ctrl", ref = 2, adjust = "sidak"), level = 0.90))
  custom <- list(c1 = c(1, -1, 0, 0), c2 = c(.5, .5, -.5, -.5), c3 = c(-1, 0, 0, 1))
  con$custom_bonferroni <- con_tab(contrast(e_model, custom, adjust = "bonferroni"))
  con$custom_mvt <- con_tab(contrast(e_model, custom, adjust = "mvt"))
  con$custom_tukey <- con_tab(contrast(e_model, custom, adjust = "tukey"))
  con$response_pairwise_holm <- con_tab(
    pairs(emmeans(fit, ~ model | lang, type = "response"), adjust = "holm"))
  con$cells_pairwise_tukey <- con_tab(pairs(emmeans(fit, ~ model * lang), adjust = "tukey"))
  con$trt_ref_multi <- con_tab(contrast(e_model, "trt.vs.ctrl", ref = c(1, 3), adjust = "none"))

  # --- a GLMM with item and item:run intercepts, for lme4's anova() and glmer-based emmeans ----
  set.seed(7)
  items <- 60
  g <- expand.grid(run = 1:3, lang = c("EN", "ES"), model = c("m-1", "m2", "m3"),
                   item = sprintf("i%02d", 1:items), stringsAsFactors = FALSE)
  u_item <- rnorm(items, 0, 1.2)
  u_run <- rnorm(items * 3, 0, 0.5)
  ir <- (match(g$item, sprintf("i%02d", 1:items)) - 1) * 3 + g$run
  eta <- 0.3 + c(`m-1` = 0, m2 = 0.6, m3 = -0.5)[g$model] + 0.25 * (g$lang == "ES") +
    u_item[match(g$item, sprintf("i%02d", 1:items))] + u_run[ir]
  g$correct <- rbinom(nrow(g), 1, plogis(eta))
  write.csv(g, file.path(here, "inference_glmer_sim.csv"), row.names = FALSE)
  for (v in c("model", "lang", "item", "run")) g[[v]] <- factor(g[[v]])
  g1 <- glmer(correct ~ model + (1 | item) + (1 | item:run), family = binomial, data = g)
  g2 <- glmer(correct ~ model + lang + (1 | item) + (1 | item:run), family = binomial, data = g)
  g3 <- glmer(correct ~ model * lang + (1 | item) + (1 | item:run), family = binomial, data = g)
  ge <- emmeans(g3, ~ model | lang)
  glmer_sim <- list(
    fits = list(g1 = fit_info(g1, g), g2 = fit_info(g2, g), g3 = fit_info(g3, g)),
    anova = lme4_anova(list(g1 = g1, g2 = g2, g3 = g3)),
    anova_reordered = lme4_anova(list(g3 = g3, g1 = g1, g2 = g2)),
    emm_g3_response = emm_tab(emmeans(g3, ~ model | lang, type = "response")),
    con_g3_tukey = con_tab(pairs(ge, adjust = "tukey")),
    con_g2_trt = con_tab(contrast(emmeans(g2, ~ model), "trt.vs.ctrl", ref = "m2")),
    anova3_g3 = anova3(g3), anova3_g2 = anova3(g2))

  # a missing cell (m3 never run in ES): the interaction column is aliased, and emmeans reports
  # the means and contrasts that involve the empty cell as not estimable
  gm <- droplevels(subset(g, !(model == "m3" & lang == "ES")))
  g4 <- glmer(correct ~ model * lang + (1 | item) + (1 | item:run), family = binomial, data = gm)
  glmer_sim$missing_cell <- list(
    fit = fit_info(g4, gm),
    emm_by = emm_tab(emmeans(g4, ~ model | lang)),
    emm_model = emm_tab(emmeans(g4, ~ model)),
    emm_lang = emm_tab(emmeans(g4, ~ lang)),
    con_by_tukey = con_tab(pairs(emmeans(g4, ~ model | lang), adjust = "tukey")),
    con_model_holm = con_tab(pairs(emmeans(g4, ~ model), adjust = "holm")),
    con_cells_tukey = con_tab(pairs(emmeans(g4, ~ model * lang), adjust = "tukey")))

  out <- list(
    r_version = R.version.string,
    emmeans_version = as.character(packageVersion("emmeans")),
    car_version = as.character(packageVersion("car")),
    lme4_version = as.character(packageVersion("lme4")),
    glm = list(fit = fit_info(fit, d), fit_small = fit_info(fit_small, d),
               fit_mid = fit_info(fit_mid, d), emmeans = emm, contrasts = con,
               anova3 = anova3(fit, test.statistic = "Wald"),
               anova3_small = anova3(fit_small, test.statistic = "Wald")),
    glmer_sim = glmer_sim)
  save_json(out, "inference_reference.json")
}

if (mode == "ai4math") {
  # --- the AI4Math paper's fits (malvarado-tech/AI4MATH_2_R_project) ---------------------------
  path <- file.path(here, "..", "..", "..", "shared", "data", "ai4math", "ai4math_runs.csv")
  df <- read.csv(path, encoding = "UTF-8")
  for (v in c("problem_id", "domain", "language", "prompt", "model", "run"))
    df[[v]] <- factor(df[[v]])
  re <- "+ (1 | problem_id) + (1 | problem_id:run)"
  rhs <- c("model * language * prompt", "model * language + prompt",
           "model + language * prompt", "model + language + prompt", "model + language")
  t0 <- Sys.time()
  fits <- lapply(rhs, function(r)
    glmer(as.formula(paste("correct ~", r, re)), family = binomial, data = df))
  names(fits) <- rhs
  bob <- glmerControl(optimizer = "bobyqa", optCtrl = list(maxfun = 2e5))
  df_grok <- df
  df_grok$model <- relevel(df_grok$model, ref = "Grok-4")
  fit_grok <- glmer(as.formula(paste("correct ~ model * language * prompt", re)),
                    family = binomial, data = df_grok, control = bob)
  fit_dom <- glmer(as.formula(paste("correct ~ model * domain", re)), family = binomial,
                   data = df, control = bob)
  fit_dom2 <- glmer(as.formula(paste("correct ~ model + domain", re)), family = binomial,
                    data = df, control = bob)
  elapsed <- as.numeric(difftime(Sys.time(), t0, units = "secs"))

  full <- fits[["model * language * prompt"]]
  out <- list(
    r_version = R.version.string, lme4_version = as.character(packageVersion("lme4")),
    emmeans_version = as.character(packageVersion("emmeans")), fit_seconds = elapsed,
    fits = c(lapply(fits, fit_info, data = df),
             list(grok_full = fit_info(fit_grok, df_grok), domain_interaction = fit_info(fit_dom, df),
                  domain_additive = fit_info(fit_dom2, df))),
    anova_five = lme4_anova(fits),
    anova_domain = lme4_anova(list(domain_interaction = fit_dom, domain_additive = fit_dom2)),
    pairwise_holm = con_tab(pairs(emmeans(full, ~ model | language * prompt), adjust = "holm")),
    grok_dunnettx = con_tab(contrast(emmeans(fit_grok, ~ model), "trt.vs.ctrl", ref = "Grok-4")),
    grok_dunnettx_default_fit = con_tab(contrast(emmeans(full, ~ model), "trt.vs.ctrl",
                                                 ref = "Grok-4")),
    domain_means = emm_tab(emmeans(fit_dom2, ~ domain, type = "response")),
    anova3_domain_additive = anova3(fit_dom2),
    anova3_full = anova3(full))
  save_json(out, "inference_reference_ai4math.json")
}
