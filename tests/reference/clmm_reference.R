# Reference values for the cumulative-link mixed model parity tests of tests/test_clmm.py:
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
# the random-effect SDs and the SE of log SD (vcov(clmm) is over log SDs), logLik, nobs, cond.H.
suppressPackageStartupMessages({library(ordinal); library(jsonlite)})

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

writeLines(toJSON(out, digits = NA, auto_unbox = TRUE, pretty = TRUE), file.path(here, "clmm_reference.json"))
