# Reference fits of vector-valued random-effect terms with three or four coefficients
# (tests/model/test_vector_terms.py): correlated factor slopes by group, (0 + factor(run)|group) with a
# rank-one or rank-two covariance on few groups, numeric slopes.
#
#   Rscript tests/reference/vector_term_reference.R
#
# Reads vector_terms.csv (make_vector_term_data.py) and writes vector_term_reference.json: for each
# case lme4's fit with its default optimizer and with bobyqa (log-likelihoods, messages), and the
# fixed effects, SEs, theta and random-effect SDs of the better of the two.
suppressPackageStartupMessages({ library(lme4); library(jsonlite) })

file_arg <- grep("^--file=", commandArgs(FALSE), value = TRUE)
here <- dirname(normalizePath(sub("^--file=", "", file_arg)))
all_data <- read.csv(file.path(here, "vector_terms.csv"), stringsAsFactors = TRUE)

runs <- "y ~ group + (1|item) + (0 + factor(run)|group)"
cases <- list(
  list(id = "runs_rank1", formula = runs),
  list(id = "runs_rank1_zero_first", formula = runs),
  list(id = "runs_rank1_seven", formula = runs),
  list(id = "runs4_rank2", formula = runs),
  list(id = "cond3_full", formula = "y ~ cond + (1|item) + (1 + cond|group)"),
  list(id = "cond4_rank2", formula = "y ~ cond + (1|item) + (1 + cond|group)"),
  list(id = "slopes3", formula = "y ~ x1 + x2 + (1 + x1 + x2|group)"),
  list(id = "runs4_rank1_mirror", formula = runs)
)

out <- list()
for (cs in cases) {
  d <- droplevels(all_data[all_data$set == cs$id, ])
  fit_with <- function(optimizer) {
    suppressWarnings(glmer(as.formula(cs$formula), data = d, family = binomial,
                           control = glmerControl(optimizer = optimizer)))
  }
  fits <- list(default = fit_with(c("bobyqa", "Nelder_Mead")), bobyqa = fit_with("bobyqa"))
  ll <- sapply(fits, function(f) as.numeric(logLik(f)))
  best <- names(which.max(ll))
  fit <- fits[[best]]
  vc <- as.data.frame(VarCorr(fit))
  vc <- vc[is.na(vc$var2), ]
  msg <- lapply(fits, function(f) f@optinfo$conv$lme4$messages)
  out[[cs$id]] <- list(
    id = cs$id, formula = cs$formula, loglik_default = ll[["default"]],
    loglik_bobyqa = ll[["bobyqa"]], messages_default = msg$default, messages_bobyqa = msg$bobyqa,
    optimizer = best, coef_names = names(fixef(fit)), beta = unname(fixef(fit)),
    se = unname(sqrt(diag(as.matrix(vcov(fit))))), loglik = as.numeric(logLik(fit)),
    df = attr(logLik(fit), "df"), nobs = nobs(fit), theta = unname(getME(fit, "theta")),
    vc_sd = vc$sdcor, singular = isSingular(fit))
  message(cs$id, ": logLik default ", format(ll[["default"]], digits = 10), ", bobyqa ",
          format(ll[["bobyqa"]], digits = 10))
}
info <- list(lme4 = as.character(packageVersion("lme4")), R = R.version.string)
writeLines(toJSON(list(versions = info, cases = out), digits = NA, auto_unbox = TRUE,
                  null = "null", na = "null"),
           file.path(here, "vector_term_reference.json"))
