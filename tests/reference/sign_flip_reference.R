# Reference for evalmix.repetitions.sign_flip_rate on AI4Math: lme4::glmer refitted on all runs and
# on each single run (the item:run intercept is dropped in single-run fits, where it is aliased with
# the item intercept), Wald tests of every model against Grok-4.
# Run from the repository root with the shared data beside the checkout:
#   Rscript tests/reference/sign_flip_reference.R ../shared/data/ai4math/ai4math_runs.csv
# It writes tests/reference/sign_flip_reference.json (estimates only; no data is copied).
suppressPackageStartupMessages({
  library(lme4)
  library(jsonlite)
})
args <- commandArgs(trailingOnly = TRUE)
path <- if (length(args)) args[1] else "../shared/data/ai4math/ai4math_runs.csv"
df <- read.csv(path)
df$model <- relevel(factor(df$model), ref = "Grok-4")
df$language <- factor(df$language)
df$problem_id <- factor(df$problem_id)
df$run <- factor(df$run)

tidy_model <- function(fit, label) {
  cf <- summary(fit)$coefficients
  rows <- grep("^model", rownames(cf))
  lapply(rows, function(i) list(run = label, term = rownames(cf)[i], estimate = cf[i, 1],
                                se = cf[i, 2], p = cf[i, 4]))
}
out <- list()
fit <- glmer(correct ~ model + language + (1 | problem_id) + (1 | problem_id:run),
             family = binomial, data = df)
out <- c(out, tidy_model(fit, "all"))
for (r in levels(df$run)) {
  fit_r <- glmer(correct ~ model + language + (1 | problem_id), family = binomial,
                 data = droplevels(df[df$run == r, ]))
  out <- c(out, tidy_model(fit_r, r))
}
res <- list(rows = out, versions = list(R = R.version.string,
                                        lme4 = as.character(packageVersion("lme4"))))
writeLines(toJSON(res, auto_unbox = TRUE, digits = NA), "tests/reference/sign_flip_reference.json")
