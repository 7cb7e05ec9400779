# Reference values for the ordinal judge study and the clmm contrasts of tests/studies/test_judges_ordinal.py:
#
#   Rscript tests/reference/clmm_judges_reference.R
#
# A simulated judge-rating design (set.seed(20261127), written to clmm_judges_ratings.csv): ratings
# 1-5 of 3 models x 24 items x 2 runs, every response (model x item x run) rated by 3 judges with
# biases 0.7, 0, -0.8 on the latent scale. ordinal::clmm (Laplace, logit) fits
#   additive:     rating ~ model + judge + (1|item) + (1|response)
#   interaction:  rating ~ model * judge + (1|item) + (1|response)
#   random judge: rating ~ model + (1|judge) + (1|item) + (1|response)
# and emmeans (mode = "latent", asymptotic) gives the judge contrasts with the mean judge
# (contrast "eff", adjust "none"), the pairwise model contrasts (Tukey and Holm) and the
# judges' mean ratings (mode = "mean.class").
suppressPackageStartupMessages({library(ordinal); library(jsonlite); library(emmeans)})

file_arg <- grep("^--file=", commandArgs(FALSE), value = TRUE)
here <- dirname(normalizePath(sub("^--file=", "", file_arg)))

record <- function(fit) {
  # vcov refuses a Hessian that is not positive definite (an SD on the boundary): SEs are then absent
  v <- tryCatch(vcov(fit), error = function(e) NULL)
  nc <- length(coef(fit))
  se <- if (is.null(v)) NULL else unname(sqrt(diag(v))[seq_len(nc)])
  list(coef_names = names(coef(fit)), estimate = unname(coef(fit)), se = se,
       hessian_pd = !is.null(v),
       sd = unname(sapply(VarCorr(fit), function(x) attr(x, "stddev"))),
       sd_groups = names(VarCorr(fit)),
       loglik = as.numeric(logLik(fit)), df = attr(logLik(fit), "df"), nobs = nobs(fit))
}

set.seed(20261127)
nm <- 3; ni <- 24; nr <- 2; nj <- 3
d <- expand.grid(judge = seq_len(nj), run = seq_len(nr), item = seq_len(ni), model = seq_len(nm))
d <- d[, c("model", "item", "run", "judge")]
model_eff <- c(0, 0.9, -0.6)
judge_eff <- c(0.7, 0, -0.8)
item_eff <- rnorm(ni, 0, 1.0)
resp <- (d$model - 1) * ni * nr + (d$item - 1) * nr + d$run
resp_eff <- rnorm(nm * ni * nr, 0, 0.6)
eta <- model_eff[d$model] + judge_eff[d$judge] + item_eff[d$item] + resp_eff[resp]
d$rating <- findInterval(eta + rlogis(nrow(d)), c(-1.6, -0.4, 0.7, 1.9)) + 1L
d$model <- sprintf("m%d", d$model)
d$item <- sprintf("i%02d", d$item)
d$judge <- c("lenient", "fair", "strict")[d$judge]
write.csv(d, file.path(here, "clmm_judges_ratings.csv"), row.names = FALSE)

jd <- d
jd$rating <- factor(jd$rating, ordered = TRUE)
jd$response <- factor(paste(jd$model, jd$item, jd$run))
for (v in c("model", "item", "judge")) jd[[v]] <- factor(jd[[v]])
add <- clmm(rating ~ model + judge + (1|item) + (1|response), data = jd)
int <- clmm(rating ~ model * judge + (1|item) + (1|response), data = jd)
rnd <- clmm(rating ~ model + (1|judge) + (1|item) + (1|response), data = jd)

con <- function(x) {
  s <- as.data.frame(summary(x, infer = c(TRUE, TRUE)))
  list(contrast = as.character(s$contrast), estimate = s$estimate, se = s$SE, p_value = s$p.value,
       conf_low = s$asymp.LCL, conf_high = s$asymp.UCL)
}
emj <- emmeans(add, ~judge, mode = "latent")
emm <- emmeans(add, ~model, mode = "latent")
mc <- as.data.frame(summary(emmeans(add, ~judge, mode = "mean.class")))

out <- list(r_version = R.version.string, ordinal_version = as.character(packageVersion("ordinal")),
            emmeans_version = as.character(packageVersion("emmeans")),
            additive = record(add), interaction = record(int), random_judge = record(rnd),
            judge_eff = con(contrast(emj, "eff", adjust = "none")),
            model_tukey = con(contrast(emm, "pairwise", adjust = "tukey")),
            model_holm = con(contrast(emm, "pairwise", adjust = "holm")),
            judge_mean_class = list(level = as.character(mc$judge), estimate = mc$mean.class, se = mc$SE))
writeLines(toJSON(out, digits = NA, auto_unbox = TRUE, pretty = TRUE),
           file.path(here, "clmm_judges_reference.json"))
