# Times lme4::glmer on a crossed design written by bench/bench_crossed.py.
# Usage: Rscript bench/bench_crossed.R DATA.csv "FORMULA"
# Prints one line of JSON: seconds, logLik, fixed effects, lme4 version.
suppressPackageStartupMessages({library(lme4); library(jsonlite)})
args <- commandArgs(trailingOnly = TRUE)
d <- read.csv(args[1], stringsAsFactors = TRUE)
for (col in intersect(c("model", "item", "subject", "x"), names(d))) d[[col]] <- factor(d[[col]])
t0 <- proc.time()[["elapsed"]]
fit <- glmer(as.formula(args[2]), data = d, family = binomial)
secs <- proc.time()[["elapsed"]] - t0
cat(toJSON(list(seconds = secs, loglik = as.numeric(logLik(fit)), fixef = as.list(fixef(fit)),
                lme4 = as.character(packageVersion("lme4"))), auto_unbox = TRUE, digits = NA), "\n")
