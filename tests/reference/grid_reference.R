# Reference values for evalmix's reference grid: contrasts of contrasts and regrid.
#
#   Rscript tests/reference/grid_reference.R
#
# Writes grid_reference.json.  Two data sets:
#
# - simulated: inference_sim.csv (written by inference_reference.R) with R's glm() fit, and
#   inference_glmer_sim.csv without model m3 in ES (a missing cell: the fit drops an aliased
#   column), with lme4's glmer() fit; each fit is stored with its fixed effects and covariance;
# - AI4Math: the glmer fits stored in inference_reference_ai4math.json (R's fixed effects and
#   covariance), rebuilt as emmeans grids with qdrg() on ../shared/data/ai4math/ai4math_runs.csv,
#   so no refit is needed.
#
# The Python tests build the same fits (R's beta and V on evalmix's designs) and compare chained
# contrasts and regridded means and contrasts.

suppressPackageStartupMessages({
  library(emmeans); library(lme4); library(jsonlite)
})

file_arg <- grep("^--file=", commandArgs(FALSE), value = TRUE)
here <- dirname(normalizePath(sub("^--file=", "", file_arg)))

rename_cols <- function(s) {
  s <- as.data.frame(s)
  map <- c(emmean = "estimate", prob = "estimate", response = "estimate",
           odds.ratio = "estimate", ratio = "estimate", SE = "se", asymp.LCL = "lower",
           asymp.UCL = "upper", z.ratio = "z", p.value = "p")
  for (k in names(map)) if (k %in% names(s)) names(s)[names(s) == k] <- map[[k]]
  for (k in names(s)) if (is.factor(s[[k]])) s[[k]] <- as.character(s[[k]])
  s$df <- NULL
  s$null <- NULL
  s
}
emm_tab <- function(e) rename_cols(summary(e, infer = c(TRUE, FALSE)))
con_tab <- function(cn) rename_cols(summary(cn, infer = c(TRUE, TRUE)))
# regridded contrasts are odds ratios: tested against 1 (emmeans' default null is 0)
or_tab <- function(cn) rename_cols(summary(regrid(cn), infer = c(TRUE, TRUE), null = 1))
fit_info <- function(fit, data) {
  facs <- names(Filter(is.factor, data))
  b <- if (inherits(fit, "merMod")) fixef(fit) else coef(fit)
  list(formula = paste(deparse(formula(fit), width.cutoff = 500), collapse = ""),
       coef_names = names(b), beta = unname(b), vcov = unname(as.matrix(vcov(fit))),
       loglik = as.numeric(logLik(fit)), df = attr(logLik(fit), "df"), nobs = nobs(fit),
       levels = lapply(setNames(facs, facs), function(f) levels(data[[f]])))
}
save_json <- function(x, name) {
  writeLines(toJSON(x, digits = NA, auto_unbox = TRUE, dataframe = "rows", na = "null"),
             file.path(here, name))
}

# --- simulated: a logistic regression with an interaction -----------------------------------------
d <- read.csv(file.path(here, "inference_sim.csv"))
for (v in c("model", "lang", "prompt")) d[[v]] <- factor(d[[v]])
fit <- glm(correct ~ model * lang + prompt + x, family = binomial, data = d)
e_by <- emmeans(fit, ~ model | lang)
c_by <- contrast(e_by, "pairwise", adjust = "holm")
r_by <- regrid(e_by)
e_resp <- emmeans(fit, ~ model | lang, type = "response")
sim <- list(
  fit = fit_info(fit, d),
  # contrasts of contrasts: every pair of (model pair, language) combinations ...
  chain_by_none = con_tab(contrast(c_by, "pairwise", by = NULL, adjust = "bonferroni")),
  # ... and the interaction contrasts: within each model pair, ES minus EN
  chain_by_contrast = con_tab(contrast(c_by, "revpairwise", by = "contrast", adjust = "none")),
  chain_trt_by_contrast = con_tab(contrast(contrast(e_by, "trt.vs.ctrl", ref = 2),
                                           "pairwise", by = "contrast", adjust = "holm")),
  # the same chain on the odds-ratio scale: ratios of odds ratios
  chain_ratio = con_tab(contrast(contrast(e_resp, "pairwise"), "revpairwise",
                                 by = "contrast", adjust = "none")),
  # regrid: probabilities with delta-method SEs, and their differences
  regrid_emm = emm_tab(r_by),
  regrid_pairwise_holm = con_tab(contrast(r_by, "pairwise", adjust = "holm")),
  regrid_trt_sidak = con_tab(contrast(r_by, "trt.vs.ctrl", ref = 3, adjust = "sidak")),
  regrid_model = emm_tab(regrid(emmeans(fit, ~ model))),
  regrid_chain = con_tab(contrast(contrast(r_by, "pairwise", adjust = "none"), "pairwise",
                                  by = "contrast", adjust = "none")),
  regrid_chain_by_none = con_tab(contrast(contrast(r_by, "trt.vs.ctrl"), "pairwise", by = NULL,
                                          adjust = "holm")),
  # interaction contrasts in one call
  interaction_pairwise = con_tab(contrast(emmeans(fit, ~ model * lang), interaction = "pairwise")),
  interaction_trt_holm = con_tab(contrast(emmeans(fit, ~ model * lang),
                                          interaction = c("trt.vs.ctrl", "revpairwise"),
                                          adjust = "holm")),
  interaction_by_prompt = con_tab(contrast(emmeans(fit, ~ model * lang | prompt),
                                           interaction = "pairwise", adjust = "bonferroni")),
  interaction_regrid = con_tab(contrast(regrid(emmeans(fit, ~ model * lang)),
                                        interaction = "pairwise")),
  # regrid of contrasts: odds ratios (delta-method SEs, Wald intervals on that scale), labels A/B
  regrid_contrast_holm = or_tab(c_by),
  regrid_contrast_tukey = or_tab(contrast(e_resp, "pairwise")),
  regrid_contrast_dunnettx = or_tab(contrast(e_by, "trt.vs.ctrl", ref = 2)),
  regrid_contrast_mvt = or_tab(contrast(e_by, "trt.vs.ctrl", ref = 2, adjust = "mvt")),
  regrid_contrast_chain_by_none = or_tab(contrast(c_by, "pairwise", by = NULL, adjust = "none")),
  regrid_contrast_chain_by_contrast = or_tab(contrast(c_by, "revpairwise", by = "contrast",
                                                      adjust = "none")),
  regrid_contrast_interaction = or_tab(contrast(emmeans(fit, ~ model * lang),
                                                interaction = "pairwise")),
  # ... and differences of those odds ratios
  regrid_contrast_then_contrast = con_tab(contrast(regrid(c_by), "revpairwise", by = "contrast",
                                                   adjust = "none")))

# --- simulated: a GLMM with a missing cell (m3 never run in ES) ------------------------------------
g <- read.csv(file.path(here, "inference_glmer_sim.csv"))
g <- droplevels(subset(g, !(model == "m3" & lang == "ES")))
for (v in c("model", "lang", "item", "run")) g[[v]] <- factor(g[[v]])
g4 <- glmer(correct ~ model * lang + (1 | item) + (1 | item:run), family = binomial, data = g)
e4 <- emmeans(g4, ~ model | lang)
missing <- list(
  fit = fit_info(g4, g),
  chain_by_none = con_tab(contrast(contrast(e4, "pairwise", adjust = "none"), "pairwise",
                                   by = NULL, adjust = "none")),
  chain_by_contrast = con_tab(contrast(contrast(e4, "pairwise"), "pairwise",
                                       by = "contrast", adjust = "none")),
  regrid_emm = emm_tab(regrid(e4)),
  regrid_pairwise = con_tab(contrast(regrid(e4), "pairwise", adjust = "none")),
  regrid_contrast = or_tab(contrast(e4, "pairwise", adjust = "none")))

# --- AI4Math: R's glmer fits as emmeans grids ------------------------------------------------------
ai <- fromJSON(file.path(here, "inference_reference_ai4math.json"), simplifyVector = TRUE)
df <- read.csv(file.path(here, "..", "..", "..", "shared", "data", "ai4math", "ai4math_runs.csv"),
               encoding = "UTF-8")
qgrid <- function(info) {
  for (v in names(info$levels)) df[[v]] <- factor(df[[v]], levels = info$levels[[v]])
  rhs <- sub("^correct ~ ", "", info$formula)
  rhs <- gsub("\\s*\\+\\s*\\([^()]*\\|[^()]*\\)", "", rhs)
  b <- setNames(info$beta, info$coef_names)
  V <- matrix(unlist(info$vcov), length(b), byrow = TRUE, dimnames = list(names(b), names(b)))
  qdrg(as.formula(paste("~", rhs)), data = df, coef = b, vcov = V, link = "logit")
}
dom <- qgrid(ai$fits$domain_interaction)
full <- qgrid(ai$fits[["model * language * prompt"]])
e_dom <- emmeans(dom, ~ model | domain)
c_dom <- contrast(e_dom, "trt.vs.ctrl", ref = 6, adjust = "none")   # each model vs Grok-4
e_lang <- emmeans(full, ~ language | model)
ai4math <- list(
  # does the gap to Grok-4 differ between domains?  (differences of log odds ratios)
  chain_domain_vs_algebra = con_tab(contrast(c_dom, "trt.vs.ctrl", by = "contrast",
                                             adjust = "holm")),
  chain_language_gap = con_tab(contrast(contrast(e_lang, "revpairwise"), "pairwise",
                                        by = NULL, adjust = "holm")),
  regrid_domain = emm_tab(regrid(e_dom)),
  regrid_domain_pairwise = con_tab(contrast(regrid(e_dom), "pairwise", adjust = "holm")),
  regrid_language_gap = con_tab(contrast(contrast(regrid(e_lang), "revpairwise"), "pairwise",
                                         by = NULL, adjust = "bonferroni")),
  interaction_domain = con_tab(contrast(emmeans(dom, ~ model * domain),
                                        interaction = "trt.vs.ctrl", adjust = "holm")),
  interaction_language_by_prompt = con_tab(contrast(emmeans(full, ~ model * language | prompt),
                                                    interaction = "pairwise",
                                                    adjust = "bonferroni")))

out <- list(
  r_version = R.version.string, emmeans_version = as.character(packageVersion("emmeans")),
  lme4_version = as.character(packageVersion("lme4")),
  sim = sim, missing_cell = missing, ai4math = ai4math)
save_json(out, "grid_reference.json")
