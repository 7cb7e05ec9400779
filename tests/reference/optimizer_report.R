# Reference values for tests/mixed/test_optimizer_report.py:
#
#   Rscript tests/reference/optimizer_report.R
#
# The condition number of the Hessian at the optimum (largest over smallest eigenvalue) that each
# engine's convergence check reads: lme4's optinfo$derivs$Hessian (over theta for lmer, over
# (theta, beta) for glmer) and ordinal's cond.H, with the gradient there, on the datasets of the
# verbs x engines matrix (lmer_sleepstudy.csv, engine_cbpp.csv, clmm_wine.csv).
suppressPackageStartupMessages({library(lme4); library(ordinal); library(jsonlite)})
file_arg <- grep("^--file=", commandArgs(FALSE), value = TRUE)
here <- dirname(normalizePath(sub("^--file=", "", file_arg)))
sleep <- read.csv(file.path(here, "lmer_sleepstudy.csv")); sleep$Subject <- factor(sleep$Subject)
cbpp <- read.csv(file.path(here, "engine_cbpp.csv"))
cbpp$herd <- factor(cbpp$herd); cbpp$period <- factor(cbpp$period)
wine <- read.csv(file.path(here, "clmm_wine.csv"))
wine$rating <- factor(wine$rating, ordered = TRUE); wine$judge <- factor(wine$judge)
kappa_of <- function(H) { e <- eigen(H, symmetric = TRUE, only.values = TRUE)$values; max(e) / min(e) }
lme4_part <- function(fit) list(cond_h = kappa_of(fit@optinfo$derivs$Hessian),
                                max_grad = max(abs(fit@optinfo$derivs$gradient)),
                                messages = unlist(fit@optinfo$conv$lme4$messages))
out <- list(
  lmer = lme4_part(lmer(Reaction ~ Days + (Days | Subject), sleep)),
  lmer_ml = lme4_part(lmer(Reaction ~ Days + (Days | Subject), sleep, REML = FALSE)),
  glmer = lme4_part(glmer(cbind(incidence, size - incidence) ~ period + (1 | herd), cbpp, family = binomial)),
  clmm = with(clmm(rating ~ temp + contact + (1 | judge), data = wine),
              list(cond_h = kappa_of(Hessian), max_grad = max(abs(gradient)))),
  versions = list(lme4 = as.character(packageVersion("lme4")),
                  ordinal = as.character(packageVersion("ordinal")), R = R.version.string))
writeLines(toJSON(out, auto_unbox = TRUE, digits = NA, null = "null"),
           file.path(here, "optimizer_report.json"))
