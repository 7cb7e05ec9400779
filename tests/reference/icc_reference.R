# Reference values for evalmix.reliability.icc / icc_matrix.
#
# irr::icc (irr 0.84.1, installed from its CRAN source into a private library, e.g.
#   R CMD INSTALL -l /tmp/rlib irr_0.84.1.tar.gz) gives every McGraw-Wong form with r0;
# psych::ICC(lmer = FALSE) gives the six Shrout-Fleiss forms from the two-way ANOVA.
# Run from the repository root:
#   R_LIBS=/tmp/rlib Rscript tests/reference/icc_reference.R
# It writes tests/reference/icc_reference.json.
suppressPackageStartupMessages({
  library(jsonlite)
  library(psych)
  library(irr)
})

mats <- list()
# Shrout & Fleiss (1979), Table 2: 6 targets x 4 judges
mats$shrout_fleiss <- matrix(c(9, 2, 5, 8,
                               6, 1, 3, 2,
                               8, 4, 6, 8,
                               7, 1, 2, 6,
                               10, 5, 6, 9,
                               6, 2, 4, 7), ncol = 4, byrow = TRUE)
set.seed(20251120)
# binary items x runs, as a model's correctness over 3 runs
p <- plogis(rnorm(40, 0, 1.5))
mats$binary <- sapply(1:3, function(r) rbinom(40, 1, p))
# continuous scores with run (rater) shifts: agreement and consistency differ
mats$shifted <- round(outer(rnorm(25, 0, 1.3), c(0, 0.8, -0.5, 1.2, 0.3), "+") +
                      matrix(rnorm(125), 25), 6)

forms <- expand.grid(model = c("oneway", "twoway"), type = c("consistency", "agreement"),
                     unit = c("single", "average"), r0 = c(0, 0.3), conf = c(0.95, 0.9),
                     stringsAsFactors = FALSE)
forms <- forms[!(forms$model == "oneway" & forms$type == "agreement"), ]

out <- list(matrices = lapply(mats, function(m) unname(split(m, row(m)))), irr = list(), psych = list())
for (nm in names(mats)) {
  m <- mats[[nm]]
  rows <- list()
  for (i in seq_len(nrow(forms))) {
    f <- forms[i, ]
    r <- irr::icc(m, model = f$model, type = f$type, unit = f$unit, r0 = f$r0, conf.level = f$conf)
    rows[[i]] <- list(model = f$model, type = f$type, unit = f$unit, r0 = f$r0, conf_level = f$conf,
                      form = r$icc.name, icc = r$value, f = r$Fvalue, df1 = r$df1, df2 = r$df2,
                      p = r$p.value, lower = r$lbound, upper = r$ubound)
  }
  out$irr[[nm]] <- rows
  ps <- psych::ICC(m, lmer = FALSE)$results
  out$psych[[nm]] <- lapply(seq_len(nrow(ps)), function(j) list(
    type = ps$type[j], icc = ps$ICC[j], f = ps$F[j], df1 = ps$df1[j], df2 = ps$df2[j], p = ps$p[j],
    lower = ps[["lower bound"]][j], upper = ps[["upper bound"]][j]))
}
out$versions <- list(R = R.version.string, irr = as.character(packageVersion("irr")),
                     psych = as.character(packageVersion("psych")))
writeLines(toJSON(out, auto_unbox = TRUE, digits = NA, pretty = FALSE),
           "tests/reference/icc_reference.json")
