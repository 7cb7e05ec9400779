# Reference printouts for tests/mixed/test_summary_engines.py:
#
#   Rscript tests/reference/summary_layout.R
#
# print(summary(fit)) of each maximum-likelihood engine on the reference fits of the verbs x
# engines matrix: lmer (lmerTest, sleepstudy), glmer (cbpp), clmm (ordinal, wine) and glmmTMB
# (beta_family(), verbs_beta.csv), as lines of text (the Data: line and the call are left out:
# evalmix does not know the data frame's name).
suppressPackageStartupMessages({library(lmerTest); library(ordinal); library(glmmTMB); library(jsonlite)})
file_arg <- grep("^--file=", commandArgs(FALSE), value = TRUE)
here <- dirname(normalizePath(sub("^--file=", "", file_arg)))
sleep <- read.csv(file.path(here, "lmer_sleepstudy.csv")); sleep$Subject <- factor(sleep$Subject)
cbpp <- read.csv(file.path(here, "engine_cbpp.csv"))
cbpp$herd <- factor(cbpp$herd); cbpp$period <- factor(cbpp$period)
wine <- read.csv(file.path(here, "clmm_wine.csv"))
wine$rating <- factor(wine$rating, ordered = TRUE); wine$judge <- factor(wine$judge)
beta <- read.csv(file.path(here, "verbs_beta.csv"))
text <- function(x) { out <- capture.output(print(summary(x))); out[!grepl("^ *[Dd]ata:", out)] }
out <- list(
  lmer = text(lmer(Reaction ~ Days + (Days | Subject), sleep)),
  glmer = text(glmer(cbind(incidence, size - incidence) ~ period + (1 | herd), cbpp, family = binomial)),
  clmm = text(clmm(rating ~ temp + contact + (1 | judge), data = wine)),
  glmmtmb = text(glmmTMB(score ~ arm + (1 | item), beta, family = beta_family())),
  versions = list(lme4 = as.character(packageVersion("lme4")), ordinal = as.character(packageVersion("ordinal")),
                  glmmTMB = as.character(packageVersion("glmmTMB")), R = R.version.string))
writeLines(toJSON(out, auto_unbox = TRUE, pretty = TRUE), file.path(here, "summary_layout.json"))
