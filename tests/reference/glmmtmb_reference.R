# Reference values for the parity tests of tests/tmb/test_glmmtmb.py:
#
#   Rscript tests/reference/glmmtmb_reference.R
#
# glmmTMB (Laplace, ML; version in the JSON) on
# 1. a simulated design (set.seed(20261126), written to glmmtmb_sim.csv): 4 models x 50 items x
#    3 runs; a 0-1 score drawn from a beta distribution (precision 12) and k of n = 10 from a
#    beta-binomial (precision 6), with item and item:run random intercepts;
# 2. AI4Math (../shared/data/ai4math/ai4math_runs.csv) aggregated to k of n = 12 per
#    problem_id:model (beta-binomial, binomial, and crossed (1|model) + (1|problem_id)), and to
#    k of 3 per problem_id:model:language:prompt (beta-binomial, (1|problem_id) + (1|problem_id:model));
# 3. data/example_ratings.csv with the 1-5 rating mapped to (rating - 0.5) / 5 (beta).
# For each fit: fixed-effect names, estimates and SEs (vcov(fit)$cond), random-effect SDs,
# the dispersion (sigma(fit): the precision phi of beta and beta-binomial), logLik, df, nobs,
# AIC, BIC; for binomial fits the Pearson chi-square and residual df that
# performance::check_overdispersion reads (sum of squared Pearson residuals, df.residual).
# emmeans (type = "response") of the simulated beta fit over model.
suppressPackageStartupMessages({library(glmmTMB); library(jsonlite); library(emmeans)})

file_arg <- grep("^--file=", commandArgs(FALSE), value = TRUE)
here <- dirname(normalizePath(sub("^--file=", "", file_arg)))

record <- function(fit) {
  v <- vcov(fit)$cond
  vc <- VarCorr(fit)$cond
  out <- list(coef_names = names(fixef(fit)$cond), estimate = unname(fixef(fit)$cond),
              se = unname(sqrt(diag(v))),
              sd = unname(sapply(vc, function(x) attr(x, "stddev"))), sd_groups = names(vc),
              dispersion = sigma(fit), loglik = as.numeric(logLik(fit)),
              df = attr(logLik(fit), "df"), nobs = nobs(fit), aic = AIC(fit), bic = BIC(fit),
              convergence = fit$fit$convergence)
  if (family(fit)$family == "binomial") {
    r <- residuals(fit, type = "pearson")
    out$pearson_chisq <- sum(r^2)
    out$rdf <- df.residual(fit)
  }
  out
}

set.seed(20261126)
models <- c("m1", "m2", "m3", "m4")
d <- expand.grid(run = 1:3, item = sprintf("q%02d", 1:50), model = models, stringsAsFactors = FALSE)
d <- d[, c("model", "item", "run")]
u_item <- rnorm(50, 0, 0.8)
names(u_item) <- sprintf("q%02d", 1:50)
u_run <- rnorm(50 * 3, 0, 0.3)
ir <- paste(d$item, d$run)
names(u_run) <- unique(paste(rep(sprintf("q%02d", 1:50), each = 3), rep(1:3, 50)))
eta <- c(m1 = -0.4, m2 = 0.1, m3 = 0.5, m4 = 0.9)[d$model] + u_item[d$item] + u_run[ir]
mu <- plogis(eta)
d$score <- round(rbeta(nrow(d), mu * 12, (1 - mu) * 12), 6)
d$n <- 10L
p <- rbeta(nrow(d), mu * 6, (1 - mu) * 6)
d$k <- rbinom(nrow(d), d$n, p)
write.csv(d, file.path(here, "glmmtmb_sim.csv"), row.names = FALSE)
sim <- read.csv(file.path(here, "glmmtmb_sim.csv"))

fits <- list()
fits$sim_beta <- glmmTMB(score ~ model + (1|item), sim, family = beta_family())
fits$sim_beta_nested <- glmmTMB(score ~ model + (1|item) + (1|item:run), sim, family = beta_family())
fits$sim_bb <- glmmTMB(cbind(k, n - k) ~ model + (1|item), sim, family = betabinomial())
fits$sim_bb_nested <- glmmTMB(cbind(k, n - k) ~ model + (1|item) + (1|item:run), sim,
                              family = betabinomial())
fits$sim_binom <- glmmTMB(cbind(k, n - k) ~ model + (1|item), sim, family = binomial())

ai <- read.csv(file.path(here, "..", "..", "..", "shared", "data", "ai4math", "ai4math_runs.csv"))
agg <- aggregate(correct ~ problem_id + model, ai, function(x) c(k = sum(x), n = length(x)))
agg <- data.frame(problem_id = factor(agg$problem_id), model = agg$model,
                  k = agg$correct[, "k"], n = agg$correct[, "n"])
fits$ai_bb <- glmmTMB(cbind(k, n - k) ~ model + (1|problem_id), agg, family = betabinomial())
fits$ai_binom <- glmmTMB(cbind(k, n - k) ~ model + (1|problem_id), agg, family = binomial())
fits$ai_bb_crossed <- glmmTMB(cbind(k, n - k) ~ 1 + (1|model) + (1|problem_id), agg,
                              family = betabinomial())

# k of 3 per problem:model:language:prompt, nested (1|problem_id) + (1|problem_id:model): a small
# precision, where the observed information of some rows is negative away from the mode
agg3 <- aggregate(correct ~ problem_id + model + language + prompt, ai,
                  function(x) c(k = sum(x), n = length(x)))
agg3 <- data.frame(agg3[, 1:4], k = agg3$correct[, "k"], n = agg3$correct[, "n"])
agg3$problem_id <- factor(agg3$problem_id)
fits$ai_bb_nested <- glmmTMB(cbind(k, n - k) ~ model + language + prompt + (1|problem_id) +
                               (1|problem_id:model), agg3, family = betabinomial())

ratings <- read.csv(file.path(here, "..", "..", "data", "example_ratings.csv"))
ratings$score <- (ratings$rating - 0.5) / 5
fits$ratings_beta <- glmmTMB(score ~ model + judge + (1|item), ratings, family = beta_family())

out <- list(r_version = R.version.string,
            glmmtmb_version = as.character(packageVersion("glmmTMB")),
            emmeans_version = as.character(packageVersion("emmeans")),
            fits = lapply(fits, record))
em <- summary(emmeans(fits$sim_beta, ~ model, type = "response"))
out$emmeans_sim_beta <- list(model = as.character(em$model), response = em$response, se = em$SE)
ct <- summary(contrast(emmeans(fits$sim_beta, ~ model), "pairwise", adjust = "none"))
out$pairwise_sim_beta <- list(contrast = as.character(ct$contrast), estimate = ct$estimate,
                              se = ct$SE, p_value = ct$p.value)
writeLines(toJSON(out, digits = NA, auto_unbox = TRUE, pretty = TRUE),
           file.path(here, "glmmtmb_reference.json"))
