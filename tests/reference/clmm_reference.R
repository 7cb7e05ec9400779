# Reference values for the cumulative-link mixed model parity tests of tests/ordinal/test_clmm.py:
#
#   Rscript tests/reference/clmm_reference.R
#
# ordinal::clmm (Laplace) on
# 1. ordinal's wine data (written to clmm_wine.csv): rating ~ temp + contact + (1|judge) with the
#    logit link, the probit link and equidistant thresholds, and with (1|judge) + (1|bottle)
#    (crossed; the bottle SD goes to the boundary);
# 2. a simulated judge-rating design (set.seed(20261126), written to clmm_judge.csv): ratings 1-5
#    of 6 models x 60 items x 3 runs, rating ~ model + (1|item) + (1|item:run) (nested).
# For each fit: coefficient names and estimates (thresholds first, as R orders them), their SEs,
# the random-effect SDs and the SEs of ordinal's random-effect parameters (vcov(clmm): log SD for
# one term, SD for several), logLik, nobs, AIC, BIC.
# 3. emmeans (version in the JSON) of the wine logit fit and the judge design: ~temp and ~model,
#    mode = "latent", "mean.class" and "prob" (~rating | temp, ~rating | model).
suppressPackageStartupMessages({library(ordinal); library(jsonlite); library(emmeans)})

file_arg <- grep("^--file=", commandArgs(FALSE), value = TRUE)
here <- dirname(normalizePath(sub("^--file=", "", file_arg)))

record <- function(fit) {
  v <- vcov(fit)
  se <- sqrt(diag(v))
  nc <- length(coef(fit))
  list(coef_names = names(coef(fit)), estimate = unname(coef(fit)), se = unname(se[seq_len(nc)]),
       sd = unname(sapply(VarCorr(fit), function(x) attr(x, "stddev"))),
       sd_groups = names(VarCorr(fit)),
       se_log_sd = unname(se[-seq_len(nc)]),
       loglik = as.numeric(logLik(fit)), df = attr(logLik(fit), "df"), nobs = nobs(fit),
       aic = AIC(fit), bic = BIC(fit),
       cond_h = fit$info$cond.H, max_grad = max(abs(fit$gradient)))
}

data(wine)
wine_out <- data.frame(rating = as.integer(as.character(wine$rating)), temp = wine$temp,
                       contact = wine$contact, bottle = as.integer(as.character(wine$bottle)),
                       judge = as.integer(as.character(wine$judge)))
write.csv(wine_out, file.path(here, "clmm_wine.csv"), row.names = FALSE)

out <- list(r_version = R.version.string, ordinal_version = as.character(packageVersion("ordinal")))
out$wine_logit <- record(clmm(rating ~ temp + contact + (1|judge), data = wine))
out$wine_probit <- record(clmm(rating ~ temp + contact + (1|judge), data = wine, link = "probit"))
out$wine_equidistant <- record(clmm(rating ~ temp + contact + (1|judge), data = wine,
                                    threshold = "equidistant"))
out$wine_crossed <- record(clmm(rating ~ temp + contact + (1|judge) + (1|bottle), data = wine))

# --- a judge-rating design: 6 models x 60 items x 3 runs, ratings 1-5 ----------------------------
set.seed(20261126)
nm <- 6; ni <- 60; nr <- 3
judge <- expand.grid(run = seq_len(nr), item = seq_len(ni), model = seq_len(nm))
judge <- judge[, c("model", "item", "run")]
model_eff <- c(0, 0.4, 0.8, -0.3, 1.2, 0.6)
item_eff <- rnorm(ni, 0, 1.2)
item_run_eff <- rnorm(ni * nr, 0, 0.5)
eta <- model_eff[judge$model] + item_eff[judge$item] + item_run_eff[(judge$item - 1) * nr + judge$run]
cuts <- c(-1.5, -0.3, 0.8, 2.0)
latent <- eta + rlogis(nrow(judge))
judge$rating <- findInterval(latent, cuts) + 1L
judge$model <- sprintf("m%d", judge$model)
judge$item <- sprintf("i%02d", judge$item)
write.csv(judge, file.path(here, "clmm_judge.csv"), row.names = FALSE)
jd <- judge
jd$rating <- factor(jd$rating, ordered = TRUE)
jd$model <- factor(jd$model); jd$item <- factor(jd$item); jd$run <- factor(jd$run)
out$judge_nested <- record(clmm(rating ~ model + (1|item) + (1|item:run), data = jd))
out$judge_probit <- record(clmm(rating ~ model + (1|item) + (1|item:run), data = jd, link = "probit"))

emm <- function(fit, spec, mode) {
  s <- as.data.frame(summary(emmeans(fit, spec, mode = mode)))
  est <- intersect(c("emmean", "mean.class", "prob"), names(s))
  list(level = as.character(s[[all.vars(spec)[length(all.vars(spec))]]]),
       category = if (mode == "prob") as.character(s[[all.vars(spec)[1]]]) else NULL,
       estimate = s[[est]], se = s$SE)
}
wl <- clmm(rating ~ temp + contact + (1|judge), data = wine)
jn <- clmm(rating ~ model + (1|item) + (1|item:run), data = jd)
out$emmeans_version <- as.character(packageVersion("emmeans"))
out$emmeans <- list(
  wine_latent = emm(wl, ~temp, "latent"), wine_mean = emm(wl, ~temp, "mean.class"),
  wine_prob = emm(wl, ~rating | temp, "prob"),
  judge_latent = emm(jn, ~model, "latent"), judge_mean = emm(jn, ~model, "mean.class"),
  judge_prob = emm(jn, ~rating | model, "prob"))

writeLines(toJSON(out, digits = NA, auto_unbox = TRUE, pretty = TRUE), file.path(here, "clmm_reference.json"))
