# Reference values for tests/inference/test_contrast_labels.py:
#
#   Rscript tests/reference/contrast_labels.R
#
# emmeans' contrast labels when a factor's levels look numeric (contrast(enhance.levels = TRUE), the
# default): the factor's name is put before each of its levels ("Dayf0 - Dayf1") when every level
# of it in the grid reads as a number (as.numeric gives no NA); other factors and by variables keep
# their levels as they are. sleepstudy (lmer_sleepstudy.csv), Dayf = factor(pmin(Days, 3)) (levels
# 0, 1, 2, 3) and grp = "a" for the first nine subjects, "b" for the others;
# Reaction ~ Dayf * grp + (1 | Subject) by REML. Also which strings R's as.numeric reads.
suppressPackageStartupMessages({library(lme4); library(emmeans); library(jsonlite)})
file_arg <- grep("^--file=", commandArgs(FALSE), value = TRUE)
here <- dirname(normalizePath(sub("^--file=", "", file_arg)))
emm_options(opt.digits = FALSE)
d <- read.csv(file.path(here, "lmer_sleepstudy.csv"))
d$Subject <- factor(d$Subject)
d$Dayf <- factor(pmin(d$Days, 3))
d$grp <- ifelse(as.integer(d$Subject) <= 9, "a", "b")
fit <- lmer(Reaction ~ Dayf * grp + (1 | Subject), d)
tab <- function(x) { s <- as.data.frame(summary(x)); s[] <- lapply(s, function(v) if (is.factor(v)) as.character(v) else v); s }
one <- emmeans(fit, "Dayf")
two <- emmeans(fit, ~ Dayf * grp)
strings <- c("1", " 2 ", "0.5", "-3", "1e3", ".5", "5.", "Inf", "inf", "-Inf", "NaN", "NA", "0x1A",
             "1_000", "TRUE", "a1", "1 2", "+4", "1d", "1L", "infinity", "nan")
out <- list(
  pairwise = tab(pairs(one, adjust = "none")),
  trt_vs_ctrl = tab(contrast(one, "trt.vs.ctrl", adjust = "none")),
  consec = tab(contrast(one, "consec", adjust = "none")),
  two_factors = tab(pairs(two, adjust = "none")),
  by_grp = tab(pairs(emmeans(fit, ~ Dayf | grp), adjust = "none")),
  by_dayf = tab(pairs(emmeans(fit, ~ grp | Dayf), adjust = "none")),
  interaction = tab(contrast(two, interaction = "pairwise", adjust = "none")),
  numeric = setNames(as.list(!is.na(suppressWarnings(as.numeric(strings)))), strings),
  versions = list(lme4 = as.character(packageVersion("lme4")),
                  emmeans = as.character(packageVersion("emmeans")), R = R.version.string))
writeLines(toJSON(out, auto_unbox = TRUE, digits = NA, dataframe = "columns"),
           file.path(here, "contrast_labels.json"))
