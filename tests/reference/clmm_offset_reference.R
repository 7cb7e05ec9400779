# Reference values for test_offset_enters_the_location_as_ordinal_adds_it (tests/ordinal/test_clmm.py):
#
#   Rscript tests/reference/clmm_offset_reference.R
#
# ordinal::clmm on ordinal's wine data (clmm_wine.csv, written by clmm_reference.R) with an
# offset of 1 for warm and 0.3 for contact: rating ~ temp + contact + offset(o) + (1|judge).
# The offset enters x beta, so the two coefficients drop by 1 and 0.3 against the fit without it.
suppressPackageStartupMessages({library(ordinal); library(jsonlite)})

file_arg <- grep("^--file=", commandArgs(FALSE), value = TRUE)
here <- dirname(normalizePath(sub("^--file=", "", file_arg)))

wine <- read.csv(file.path(here, "clmm_wine.csv"))
wine$rating <- factor(wine$rating, ordered = TRUE)
wine$temp <- factor(wine$temp)
wine$contact <- factor(wine$contact)
wine$judge <- factor(wine$judge)
wine$o <- (wine$temp == "warm") + 0.3 * (wine$contact == "yes")
fit <- clmm(rating ~ temp + contact + offset(o) + (1 | judge), data = wine)
out <- list(ordinal_version = as.character(packageVersion("ordinal")),
            coef_names = names(coef(fit)), estimate = unname(coef(fit)),
            loglik = as.numeric(logLik(fit)))
writeLines(toJSON(out, digits = NA, auto_unbox = TRUE, pretty = TRUE),
           file.path(here, "clmm_offset_reference.json"))
