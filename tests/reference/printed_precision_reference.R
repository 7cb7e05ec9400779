# R's printed output of three fits, for the printed-precision tests of tests/project/test_printed_precision.py:
#
#   Rscript tests/reference/printed_precision_reference.R
#
# writes printed_precision_reference.json beside this script: for each fit the lines R prints
# (capture.output) of summary(), VarCorr(), printCoefmat of the coefficient table, and emmeans /
# pairs, at R's default options(digits = 7):
# 1. sleepstudy (lmer_sleepstudy.csv): lmer(Reaction ~ Days + (Days | Subject)), REML, printed by
#    lme4 and by lmerTest (Satterthwaite df);
# 2. cbpp (engine_cbpp.csv): glmer(cbind(incidence, size - incidence) ~ period + (1 | herd), binomial);
# 3. wine (clmm_wine.csv): clmm(rating ~ temp + contact + (1 | judge)), logit link;
# 4. glmmtmb_sim.csv: glmmTMB(score ~ model + (1 | item), beta_family()).
# Besides the text, the numbers the tests parse: each coefficient table as R's printCoefmat formats
# it (cells as strings).
suppressPackageStartupMessages({library(lme4); library(lmerTest); library(ordinal); library(emmeans);
  library(glmmTMB); library(jsonlite)})

file_arg <- grep("^--file=", commandArgs(FALSE), value = TRUE)
here <- dirname(normalizePath(sub("^--file=", "", file_arg)))

# the cells printCoefmat prints (what R's print of a coefficient table shows), as strings
coefmat_cells <- function(cm, digits) {
  txt <- capture.output(printCoefmat(cm, digits = digits, signif.stars = FALSE))
  list(text = txt, rownames = rownames(cm), colnames = colnames(cm), values = unname(as.list(as.data.frame(cm))))
}

out <- list(versions = list(R = R.version.string, lme4 = as.character(packageVersion("lme4")),
                            lmerTest = as.character(packageVersion("lmerTest")),
                            ordinal = as.character(packageVersion("ordinal")),
                            emmeans = as.character(packageVersion("emmeans")),
                            glmmTMB = as.character(packageVersion("glmmTMB"))))

## sleepstudy -------------------------------------------------------------------------------------
sleep <- read.csv(file.path(here, "lmer_sleepstudy.csv"))
sleep$Subject <- factor(sleep$Subject)
m <- lme4::lmer(Reaction ~ Days + (Days | Subject), sleep)
mt <- lmerTest::lmer(Reaction ~ Days + (Days | Subject), sleep)
out$sleepstudy <- list(
  summary_lme4 = capture.output(print(summary(m))),
  summary_lmertest = capture.output(print(summary(mt))),
  print_fit = capture.output(print(m)),
  varcorr = capture.output(print(VarCorr(m), comp = c("Variance", "Std.Dev."))),
  varcorr_frame = as.data.frame(VarCorr(m)),
  coefmat = coefmat_cells(coef(summary(mt)), digits = 4),
  emmeans = capture.output(print(emmeans(m, ~ Days, at = list(Days = c(0, 9)))))
)

## cbpp ---------------------------------------------------------------------------------------------
cbpp <- read.csv(file.path(here, "engine_cbpp.csv"))
cbpp$herd <- factor(cbpp$herd); cbpp$period <- factor(cbpp$period)
g <- glmer(cbind(incidence, size - incidence) ~ period + (1 | herd), data = cbpp, family = binomial)
out$cbpp <- list(
  summary = capture.output(print(summary(g))),
  varcorr = capture.output(print(VarCorr(g), comp = c("Variance", "Std.Dev."))),
  varcorr_frame = as.data.frame(VarCorr(g)),
  coefmat = coefmat_cells(coef(summary(g)), digits = 4),
  emmeans = capture.output(print(emmeans(g, ~ period))),
  pairs = capture.output(print(pairs(emmeans(g, ~ period))))
)

## wine ---------------------------------------------------------------------------------------------
wine <- read.csv(file.path(here, "clmm_wine.csv"))
wine$rating <- factor(wine$rating, ordered = TRUE)
wine$temp <- factor(wine$temp); wine$contact <- factor(wine$contact); wine$judge <- factor(wine$judge)
w <- clmm(rating ~ temp + contact + (1 | judge), data = wine)
sw <- summary(w)
out$wine <- list(
  summary = capture.output(print(sw)),
  coefmat = coefmat_cells(sw$coefficients[c("tempwarm", "contactyes"), , drop = FALSE], digits = 4),
  thresholds = coefmat_cells(sw$coefficients[1:4, 1:3, drop = FALSE], digits = 4)
)

## glmmTMB beta ------------------------------------------------------------------------------------
sim <- read.csv(file.path(here, "glmmtmb_sim.csv"))
sim$model <- factor(sim$model); sim$item <- factor(sim$item)
b <- glmmTMB(score ~ model + (1 | item), data = sim, family = beta_family())
out$sim_beta <- list(
  summary = capture.output(print(summary(b))),
  coefmat = coefmat_cells(summary(b)$coefficients$cond, digits = 4)
)

## format(x, digits) and format.pval of vectors, the rules every printout follows -----------------
set.seed(20261205)
vecs <- list(c(251.405104848485, 10.467285959596), c(6.82459669495491, 1.54578964390598),
             c(0.51234, -12.3456), c(2.03e-150, 0.5), c(0.97, 0.0004), c(1e-10, 1), c(123456.789, 0.001),
             c(0, 1.5), c(-0.0001234, 5), c(99.99951, 1), c(0.1 + 0.2, 3), c(1e5, 2.5e-3, 7))
for (i in 1:40) vecs[[length(vecs) + 1]] <- signif(rnorm(sample(1:4, 1)) * 10^sample(-6:6, 1), sample(2:8, 1))
out$format <- lapply(vecs, function(x) list(x = x, digits3 = format(x, digits = 3), digits4 = format(x, digits = 4),
                                            digits5 = format(x, digits = 5), digits7 = format(x, digits = 7)))
pvecs <- list(c(1.47e-09, 0.000474, 0.000182, 0.001068), c(1e-20, 3.26e-06), c(0.00118, 0.0796), c(0.5, 1),
              c(1e-20, 0.3), c(0.04567, 0.9999), c(2e-16, 0.012))
# printCoefmat of random coefficient tables: estimates and SEs over eight orders of magnitude, z or
# t tests (with df, as lmerTest's), p-values from 1 down to below machine epsilon
out$coefmat_random <- lapply(1:40, function(i) {
  k <- sample(1:5, 1)
  est <- rnorm(k) * 10^sample(-4:4, 1)
  se <- abs(rnorm(k)) * 10^sample(-4:3, 1) + 1e-12
  stat <- est / se
  with_df <- i %% 3 == 0
  df <- if (with_df) runif(k, 2, 300) else NULL
  p <- if (with_df) 2 * pt(-abs(stat), df) else 2 * pnorm(-abs(stat))
  cm <- cbind(Estimate = est, `Std. Error` = se, df = df, `z value` = stat, `Pr(>|z|)` = p)
  rownames(cm) <- paste0("b", seq_len(k))
  coefmat_cells(cm, digits = 4)
})
out$format_pval <- lapply(pvecs, function(p) list(p = p, text = format.pval(p, digits = 3)))

writeLines(toJSON(out, auto_unbox = TRUE, pretty = TRUE, digits = NA),
           file.path(here, "printed_precision_reference.json"))
