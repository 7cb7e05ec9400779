# Reference values for R formulas read verbatim by evalmix.glmer (tests/model/test_formula_parity.py).
#
#   Rscript tests/reference/formula_reference.R
#
# Reads formula_binary.csv and formula_counts.csv (written by make_formula_data.py) and writes
# formula_reference.json: for each case the lme4 fit (fixed effects with their R names, SEs,
# logLik, theta), and where relevant emmeans (link scale) and car::Anova(type = 3).
suppressPackageStartupMessages({
  library(lme4); library(emmeans); library(car); library(jsonlite)
})

file_arg <- grep("^--file=", commandArgs(FALSE), value = TRUE)
here <- dirname(normalizePath(sub("^--file=", "", file_arg)))

load_data <- function(name, ordered_level = FALSE) {
  d <- read.csv(file.path(here, paste0("formula_", name, ".csv")), stringsAsFactors = TRUE)
  if (ordered_level) d$level <- factor(d$level, levels = c("low", "mid", "high"), ordered = TRUE)
  if (name == "counts") d$p <- d$k / d$n
  d
}

poly3 <- cbind(c(-3, -1, 1, 3), c(1, -1, -1, 1), c(-1, 3, -3, 1))

cases <- list(
  # --- binary data ------------------------------------------------------------------------------
  list(id = "b_I_square", data = "binary", formula = "y ~ grp + age + I(age^2) + (1|item)",
       emmeans = "grp"),
  list(id = "b_I_arith", data = "binary",
       formula = "y ~ grp + I((age - 4.5)/2) + I((age - 4.5)**2 * 2) + (1|item)", emmeans = "grp"),
  list(id = "b_poly", data = "binary", formula = "y ~ grp + poly(age, 2) + (1|item)",
       emmeans = "grp"),
  list(id = "b_scale", data = "binary", formula = "y ~ grp * scale(age) + (1|item)",
       emmeans = "grp"),
  list(id = "b_log", data = "binary", formula = "y ~ grp + log(age) + (1|item)", emmeans = "grp"),
  list(id = "b_sqrt_exp", data = "binary", formula = "y ~ sqrt(age) + exp(expo/3) + (1|item)"),
  list(id = "b_factor", data = "binary", formula = "y ~ factor(site) + age + (1|item)",
       emmeans = "site"),
  list(id = "b_site_numeric", data = "binary", formula = "y ~ site + age + (1|item)"),
  list(id = "b_C_sum", data = "binary", formula = "y ~ C(factor(site), contr.sum) + grp + age + (1|item)"),
  list(id = "b_contr_sum", data = "binary", formula = "y ~ grp * level + age + (1|item)",
       contrasts = list(grp = "contr.sum", level = "contr.sum"), emmeans = "level", anova = TRUE),
  list(id = "b_contr_treatment_anova", data = "binary",
       formula = "y ~ grp * level + age + (1|item)", anova = TRUE),
  list(id = "b_ordered", data = "binary", ordered = TRUE,
       formula = "y ~ level + grp + age + (1|item)", emmeans = "level", anova = TRUE),
  list(id = "b_factor_response", data = "binary", formula = "resp ~ grp + age + (1|item)"),
  list(id = "b_weights", data = "binary", formula = "y ~ grp + age + (1|item)", weights = "w"),
  list(id = "b_offset", data = "binary", formula = "y ~ grp + age + offset(log(expo)) + (1|item)",
       emmeans = "grp"),
  list(id = "b_offset_arg", data = "binary", formula = "y ~ grp + age + (1|item)",
       offset = "log_expo", emmeans = "grp"),
  list(id = "b_probit", data = "binary", formula = "y ~ grp + age + I(age^2) + (1|item)",
       link = "probit", emmeans = "grp"),
  list(id = "b_cloglog", data = "binary", formula = "y ~ grp + age + (1|item)", link = "cloglog",
       emmeans = "grp"),
  list(id = "b_agq5", data = "binary", formula = "y ~ grp + age + (1|item)", nAGQ = 5),
  list(id = "b_agq10", data = "binary", formula = "y ~ grp + age + (1|item)", nAGQ = 10),
  # --- k-of-n data ------------------------------------------------------------------------------
  list(id = "c_I_square", data = "counts",
       formula = "cbind(k, n - k) ~ cond + dose + I(dose^2) + (1|item)", emmeans = "cond"),
  list(id = "c_poly", data = "counts", formula = "cbind(k, n - k) ~ cond + poly(dose, 2) + (1|item)",
       emmeans = "cond"),
  list(id = "c_scale_log", data = "counts",
       formula = "cbind(k, n - k) ~ cond + scale(dose) + log(n) + (1|item)", emmeans = "cond"),
  list(id = "c_proportion_weights", data = "counts", formula = "p ~ cond + dose + (1|item)",
       weights = "n"),
  list(id = "c_cbind_same", data = "counts", formula = "cbind(k, n - k) ~ cond + dose + (1|item)"),
  list(id = "c_offset", data = "counts",
       formula = "cbind(k, n - k) ~ cond + offset(log(dose)) + (1|item)", emmeans = "cond"),
  list(id = "c_contr_sum", data = "counts", formula = "cbind(k, n - k) ~ cond * level + (1|item)",
       contrasts = list(cond = "contr.sum", level = "contr.sum"), emmeans = "cond", anova = TRUE),
  list(id = "c_contr_matrix", data = "counts", formula = "cbind(k, n - k) ~ cond + dose + (1|item)",
       contrasts = list(cond = "poly3"), emmeans = "cond", anova = TRUE),
  list(id = "c_ordered", data = "counts", ordered = TRUE,
       formula = "cbind(k, n - k) ~ level + dose + (1|item)", emmeans = "level", anova = TRUE),
  list(id = "c_probit", data = "counts", formula = "cbind(k, n - k) ~ cond + dose + (1|item)",
       link = "probit", emmeans = "cond"),
  list(id = "c_cloglog", data = "counts", formula = "cbind(k, n - k) ~ cond + dose + (1|item)",
       link = "cloglog", emmeans = "cond"),
  list(id = "c_cbind_weights", data = "counts",
       formula = "cbind(k, n - k) ~ cond + dose + (1|item)", weights = "w"),
  list(id = "c_poly_raw", data = "counts",
       formula = "cbind(k, n - k) ~ cond + poly(dose, 2, raw = TRUE) + (1|item)", emmeans = "cond"),
  list(id = "c_helmert", data = "counts", formula = "cbind(k, n - k) ~ cond + dose + (1|item)",
       contrasts = list(cond = "contr.helmert"), emmeans = "cond", anova = TRUE),
  list(id = "b_agq5_probit", data = "binary", formula = "y ~ grp + age + (1|item)",
       link = "probit", nAGQ = 5),
  list(id = "c_agq5", data = "counts", formula = "cbind(k, n - k) ~ cond + dose + (1|item)",
       nAGQ = 5),
  list(id = "c_agq10", data = "counts", formula = "cbind(k, n - k) ~ cond + dose + (1|item)",
       nAGQ = 10)
)

out <- list()
for (cs in cases) {
  d <- load_data(cs$data, isTRUE(cs$ordered))
  d$log_expo <- if (!is.null(d$expo)) log(d$expo) else NULL
  fam <- binomial(link = if (is.null(cs$link)) "logit" else cs$link)
  args <- list(formula = as.formula(cs$formula), data = d, family = fam,
               nAGQ = if (is.null(cs$nAGQ)) 1L else cs$nAGQ)
  if (!is.null(cs$weights)) args$weights <- d[[cs$weights]]
  if (!is.null(cs$offset)) args$offset <- d[[cs$offset]]
  if (!is.null(cs$contrasts)) {
    args$contrasts <- lapply(cs$contrasts, function(v) if (v == "poly3") poly3 else v)
  }
  fit <- suppressWarnings(do.call(glmer, args))
  # When lme4's default Nelder-Mead stage fails its own convergence check, its finite-difference
  # Hessian (and so the SEs) is unusable (e.g. diagonal 1e5 on b_poly); refit with the optimizer
  # lme4's documentation recommends then, and record it.
  default_messages <- fit@optinfo$conv$lme4$messages
  optimizer <- "default"
  if (!is.null(default_messages)) {
    args$control <- glmerControl(optimizer = "bobyqa")
    fit <- suppressWarnings(do.call(glmer, args))
    optimizer <- "bobyqa"
  }
  ll <- logLik(fit)
  rec <- list(id = cs$id, data = cs$data, formula = cs$formula,
              link = if (is.null(cs$link)) "logit" else cs$link,
              nAGQ = if (is.null(cs$nAGQ)) 1L else cs$nAGQ,
              weights = cs$weights, offset = cs$offset, ordered = isTRUE(cs$ordered),
              contrasts = cs$contrasts,
              coef_names = names(fixef(fit)), beta = unname(fixef(fit)),
              se = unname(sqrt(diag(as.matrix(vcov(fit))))), loglik = as.numeric(ll),
              df = attr(ll, "df"), nobs = nobs(fit), theta = unname(getME(fit, "theta")),
              messages = fit@optinfo$conv$lme4$messages, optimizer = optimizer,
              default_messages = default_messages)
  if (!is.null(cs$emmeans)) {
    e <- as.data.frame(summary(emmeans(fit, as.formula(paste("~", cs$emmeans)))))
    r <- as.data.frame(summary(emmeans(fit, as.formula(paste("~", cs$emmeans)),
                                       type = "response")))
    rec$emmeans <- list(spec = cs$emmeans, level = as.character(e[[cs$emmeans]]),
                        estimate = e$emmean, se = e$SE, response = r$prob, response_se = r$SE)
  }
  if (isTRUE(cs$anova)) {
    a <- car::Anova(fit, type = 3)
    rec$anova <- list(term = rownames(a), chisq = a[["Chisq"]], df = a[["Df"]])
  }
  out[[cs$id]] <- rec
  message(cs$id, ": logLik ", format(as.numeric(ll), digits = 10))
}
info <- list(lme4 = as.character(packageVersion("lme4")),
             emmeans = as.character(packageVersion("emmeans")),
             car = as.character(packageVersion("car")), R = R.version.string)
writeLines(toJSON(list(versions = info, cases = out), digits = NA, auto_unbox = TRUE,
                  null = "null", na = "null"),
           file.path(here, "formula_reference.json"))
