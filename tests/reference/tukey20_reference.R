# Tukey, dunnettx and Holm families of pairwise (and treatment-vs-control) contrasts on an lmer fit
# of a 20-level factor with Satterthwaite df (lmerTest), as emmeans gives them; every contrast has
# its own df.  tests/inference/test_trust_inference_speed.py compares evalmix with these numbers; bench/bench_tukey20.py times it.
# Also R's ptukey and qtukey at a few df (finite and infinite).
# Run: Rscript tests/reference/tukey20_reference.R > tests/reference/tukey20_reference.json
suppressPackageStartupMessages({library(lme4); library(lmerTest); library(emmeans); library(jsonlite)})
emm_options(lmer.df = "satterthwaite")
d <- read.csv("tests/reference/tukey20.csv")
d$model <- factor(d$model)
fit <- lmerTest::lmer(score ~ model + (1 | item), data = d, REML = TRUE)
em <- emmeans(fit, ~ model)
tab <- function(con) {
  s <- as.data.frame(summary(con, infer = c(TRUE, TRUE)))
  list(contrast = as.character(s$contrast), estimate = s$estimate, se = s$SE, df = s$df,
       t_ratio = s$t.ratio, p_value = s$p.value, lower = s$lower.CL, upper = s$upper.CL)
}
q <- c(0.5, 2, 3.5, 5)
df <- c(3.3, 30, 1040.118, Inf)
grid <- expand.grid(q = q, df = df)
out <- list(
  tukey = tab(contrast(em, "pairwise", adjust = "tukey")),
  holm = tab(contrast(em, "pairwise", adjust = "holm")),
  dunnettx = tab(contrast(em, "trt.vs.ctrl", adjust = "dunnettx")),
  ptukey = list(q = grid$q, df = grid$df, nmeans = 20, p = mapply(function(a, b) ptukey(a, 20, b), grid$q, grid$df)),
  qtukey = list(df = df, nmeans = 20, level = 0.95, q = qtukey(0.95, 20, df))
)
cat(toJSON(out, digits = NA, pretty = FALSE))
