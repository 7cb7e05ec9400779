# Reference values for formulas lme4 users write for evaluation data (tests/model/test_formula_sweep.py):
# factor level orders (factor(x, levels = ...), relevel, ordered), factor() in random terms, and
# a sweep of common fixed and random parts, on four data sets.
#
#   Rscript tests/reference/formula_sweep_reference.R
#
# Reads formula_binary.csv, formula_counts.csv (make_formula_data.py), glmm_item_run.csv and
# glmm_unbalanced.csv (make_glmm_data.py) and writes formula_sweep_reference.json: for each case
# the lme4 fit (fixed effects with R's names, SEs, logLik, random-effect SDs), car's type-III term
# names, and where relevant
# emmeans (link scale) and car::Anova(type = 3); a case lme4 refuses records its error.
suppressPackageStartupMessages({
  library(lme4); library(emmeans); library(car); library(jsonlite); library(splines)
})

file_arg <- grep("^--file=", commandArgs(FALSE), value = TRUE)
here <- dirname(normalizePath(sub("^--file=", "", file_arg)))

load_data <- function(name) {
  file <- c(binary = "formula_binary.csv", counts = "formula_counts.csv",
            item_run = "glmm_item_run.csv", unbalanced = "glmm_unbalanced.csv")[[name]]
  read.csv(file.path(here, file), stringsAsFactors = TRUE)
}

cases <- list(
  # --- level orders -----------------------------------------------------------------------------
  list(id = "b_levels", data = "binary",
       formula = 'y ~ factor(level, levels = c("low", "mid", "high")) + grp + age + (1|item)',
       emmeans = "level", anova = TRUE,
       plain = "y ~ level + grp + age + (1|item)",
       recode = 'd$level <- factor(d$level, levels = c("low", "mid", "high"))'),
  list(id = "b_levels_int", data = "binary",
       formula = "y ~ factor(site, levels = c(3, 1, 2)) + grp + age + (1|item)", emmeans = "site",
       plain = "y ~ site + grp + age + (1|item)",
       recode = "d$site <- factor(d$site, levels = c(3, 1, 2))"),
  list(id = "b_relevel", data = "binary",
       formula = 'y ~ relevel(grp, ref = "trt") + age + I(age^2) + (1|item)', emmeans = "grp",
       plain = "y ~ grp + age + I(age^2) + (1|item)",
       recode = 'd$grp <- relevel(d$grp, ref = "trt")'),
  list(id = "b_relevel_factor", data = "binary",
       formula = 'y ~ relevel(factor(site), ref = "2") * grp + age + (1|item)', emmeans = "site",
       anova = TRUE, plain = "y ~ site * grp + age + (1|item)",
       recode = 'd$site <- relevel(factor(d$site), ref = "2")'),
  list(id = "b_ordered_levels", data = "binary",
       formula = 'y ~ ordered(level, levels = c("low", "mid", "high")) + grp + (1|item)',
       emmeans = "level", anova = TRUE,
       plain = "y ~ level + grp + (1|item)",
       recode = 'd$level <- ordered(d$level, levels = c("low", "mid", "high"))'),
  list(id = "b_C_levels_sum", data = "binary",
       formula = 'y ~ C(factor(level, levels = c("mid", "low", "high")), contr.sum) + grp + (1|item)',
       emmeans = "level", anova = TRUE,
       plain = "y ~ level + grp + (1|item)",
       recode = 'd$level <- C(factor(d$level, levels = c("mid", "low", "high")), contr.sum)'),
  list(id = "c_levels", data = "counts",
       formula = 'cbind(k, n - k) ~ factor(cond, levels = c("d", "c", "b", "a")) + dose + (1|item)',
       emmeans = "cond", anova = TRUE,
       plain = "cbind(k, n - k) ~ cond + dose + (1|item)",
       recode = 'd$cond <- factor(d$cond, levels = c("d", "c", "b", "a"))'),
  list(id = "c_relevel", data = "counts",
       formula = 'cbind(k, n - k) ~ relevel(cond, "c") + level + (1|item)', emmeans = "cond",
       plain = "cbind(k, n - k) ~ cond + level + (1|item)",
       recode = 'd$cond <- relevel(d$cond, "c")'),
  list(id = "r_levels", data = "item_run",
       formula = 'correct ~ factor(model, levels = c("delta", "gamma", "beta", "alpha")) + (1|item) + (1|item:run)',
       emmeans = "model", anova = TRUE,
       plain = "correct ~ model + (1|item) + (1|item:run)",
       recode = 'd$model <- factor(d$model, levels = c("delta", "gamma", "beta", "alpha"))'),
  list(id = "r_relevel", data = "item_run",
       formula = 'correct ~ relevel(model, ref = "gamma") + (1|item/run)', emmeans = "model",
       plain = "correct ~ model + (1|item/run)",
       recode = 'd$model <- relevel(d$model, ref = "gamma")'),
  # --- factor() in random terms -----------------------------------------------------------------
  list(id = "r_factor_run", data = "item_run",
       formula = "correct ~ model + (1|item) + (1|factor(run))",
       r_formula = "correct ~ model + (1|item) + (1|run)"),
  list(id = "r_item_factor_run", data = "item_run",
       formula = "correct ~ model + (1|item:factor(run))",
       r_formula = "correct ~ model + (1|item:run)"),
  list(id = "r_nested_factor", data = "item_run",
       formula = "correct ~ model + (1|item/factor(run))", emmeans = "model",
       r_formula = "correct ~ model + (1|item/run)"),
  list(id = "b_group_factor", data = "binary",
       formula = "y ~ grp + age + (1|item) + (1|factor(site))",
       r_formula = "y ~ grp + age + (1|item) + (1|site)"),
  list(id = "b_slope_factor", data = "binary",
       formula = "y ~ grp + age + (1 + factor(site)|item)"),
  list(id = "c_slope_factor", data = "counts",
       formula = "cbind(k, n - k) ~ dose + (1|item) + (0 + factor(level)|cond)"),
  # --- the sweep --------------------------------------------------------------------------------
  list(id = "r_zero", data = "item_run", formula = "correct ~ 0 + model + (1|item)"),
  list(id = "r_minus1", data = "item_run", formula = "correct ~ model - 1 + (1|item) + (1|item:run)"),
  list(id = "r_run_numeric", data = "item_run", formula = "correct ~ model + run + (1|item)"),
  list(id = "r_model_run", data = "item_run", formula = "correct ~ model + (1|item) + (1|model:run)"),
  list(id = "b_star", data = "binary", formula = "y ~ grp * age + (1|item)", emmeans = "grp"),
  list(id = "b_interaction_only", data = "binary", formula = "y ~ grp:level + (1|item)",
       compare = "loglik"),
  list(id = "b_nest_fixed", data = "binary", formula = "y ~ level/grp + (1|item)",
       compare = "loglik"),
  list(id = "b_age_slope", data = "binary", formula = "y ~ grp + age + (age|item)"),
  list(id = "b_zero_slope", data = "binary", formula = "y ~ grp + age + (1|item) + (0 + age|item)"),
  list(id = "b_double_bar_factor", data = "binary", formula = "y ~ grp + age + (1 + grp||item)"),
  list(id = "b_item_grp", data = "binary", formula = "y ~ grp + age + (1|item) + (1|item:grp)"),
  list(id = "b_bs", data = "binary", formula = "y ~ grp + bs(age, df = 3) + (1|item)"),
  list(id = "c_dose_slope", data = "counts", formula = "cbind(k, n - k) ~ cond + (1 + dose|item)"),
  list(id = "c_item_cond", data = "counts",
       formula = "cbind(k, n - k) ~ cond + dose + (1|item) + (1|item:cond)"),
  list(id = "b_intercept_only", data = "binary", formula = "y ~ 1 + (1|item)"),
  list(id = "b_double_bar_numeric", data = "binary", formula = "y ~ grp + (age||item)"),
  list(id = "b_drop_main", data = "binary", formula = "y ~ grp*age - age + (1|item)"),
  list(id = "b_minus1_after_random", data = "binary", formula = "y ~ grp + age + (1|item) - 1"),
  list(id = "b_logical", data = "binary", formula = "y ~ grp + I(age > 4) + (1|item)"),
  list(id = "r_crossed_rasch", data = "item_run", formula = "correct ~ 1 + (1|model) + (1|item)"),
  list(id = "r_item_model", data = "item_run",
       formula = "correct ~ model + (1|item) + (1|item:model)", emmeans = "model"),
  list(id = "b_ns", data = "binary", formula = "y ~ grp + ns(age, 3) + (1|item)", emmeans = "grp"),
  list(id = "b_bs5", data = "binary", formula = "y ~ grp + bs(age, df = 5) + (1|item)"),
  list(id = "c_ns_knots", data = "counts",
       formula = "cbind(k, n - k) ~ cond + ns(dose, knots = c(1.5, 2.5)) + (1|item)", emmeans = "cond"),
  list(id = "c_bs5", data = "counts", formula = "cbind(k, n - k) ~ cond + bs(dose, df = 5) + (1|item)"),
  list(id = "b_scale_noscale", data = "binary",
       formula = "y ~ grp + scale(age, scale = FALSE) + (1|item)", emmeans = "grp"),
  list(id = "b_scale_nocenter", data = "binary",
       formula = "y ~ grp + scale(age, center = FALSE) + (1|item)", emmeans = "grp"),
  list(id = "b_bs_knots", data = "binary", formula = "y ~ grp + bs(age, knots = c(3, 5)) + (1|item)"),
  list(id = "b_bs_degree", data = "binary", formula = "y ~ grp + bs(age, degree = 2, df = 4) + (1|item)"),
  list(id = "b_poly_degree", data = "binary", formula = "y ~ grp + poly(age, degree = 2) + (1|item)"),
  list(id = "b_log_plus", data = "binary", formula = "y ~ grp + log(age + 1) + (1|item)"),
  # a factor compared with a level: the fit only (emmeans does not build a reference grid over
  # the factor inside such a term: it reports "(nothing)" for cond)
  list(id = "b_level_test", data = "binary",
       formula = 'y ~ grp + I(level == "high") + (1|item)'),
  list(id = "c_level_test", data = "counts",
       formula = 'cbind(k, n - k) ~ I(cond != "a") + dose + (1|item)'),
  list(id = "u_star", data = "unbalanced",
       formula = "correct ~ model * language + (1|item) + (1|item:run)", emmeans = "model"),
  # a singular vector-valued term (nc = 3): lme4's optimum is a rank-one Lambda whose first row
  # is nonzero, reached from the boundary L[1, 1] = 0 only with the column's signs flipped
  list(id = "u_run_by_model", data = "unbalanced",
       formula = "correct ~ model + (1|item) + (0 + factor(run)|model)")
)

out <- list()
for (cs in cases) {
  d <- load_data(cs$data)
  args <- list(formula = as.formula(cs$formula), data = d, family = binomial)
  fit <- tryCatch(suppressWarnings(do.call(glmer, args)), error = function(e) e)
  rec <- list(id = cs$id, data = cs$data, formula = cs$formula,
              compare = if (is.null(cs$compare)) "full" else cs$compare)
  if (!is.null(cs$r_formula)) {
    # lme4 cannot evaluate factor() in a grouping factor ("couldn't evaluate grouping factor"):
    # the reference is the same model written with the bare column, which lme4 codes as a factor
    rec$lme4_error <- if (inherits(fit, "error")) conditionMessage(fit) else NULL
    rec$r_formula <- cs$r_formula
    args$formula <- as.formula(cs$r_formula)
    fit <- tryCatch(suppressWarnings(do.call(glmer, args)), error = function(e) e)
  }
  if (inherits(fit, "error")) {
    rec$error <- conditionMessage(fit)
    out[[cs$id]] <- rec
    message(cs$id, ": error ", rec$error)
    next
  }
  # as in formula_reference.R: when the default optimizer fails lme4's own convergence check,
  # refit with bobyqa and record it
  default_messages <- fit@optinfo$conv$lme4$messages
  optimizer <- "default"
  if (!is.null(default_messages)) {
    args$control <- glmerControl(optimizer = "bobyqa")
    fit <- suppressWarnings(do.call(glmer, args))
    optimizer <- "bobyqa"
  }
  ll <- logLik(fit)
  vc <- as.data.frame(VarCorr(fit))
  vc <- vc[is.na(vc$var2), ]
  rec <- c(rec, list(coef_names = names(fixef(fit)), beta = unname(fixef(fit)),
              se = unname(sqrt(diag(as.matrix(vcov(fit))))), loglik = as.numeric(ll),
              df = attr(ll, "df"), nobs = nobs(fit), theta = unname(getME(fit, "theta")),
              vc_group = vc$grp, vc_var = vc$var1, vc_sd = vc$sdcor,
              singular = isSingular(fit), messages = fit@optinfo$conv$lme4$messages,
              optimizer = optimizer, default_messages = default_messages))
  if (!is.null(cs$emmeans)) {
    # emmeans cannot rebuild data from level literals in a formula: it is given the same model
    # fitted with the column recoded beforehand (identical fit; checked below)
    efit <- fit
    if (!is.null(cs$recode)) {
      eval(parse(text = cs$recode))
      plain <- cs$plain
      args$formula <- as.formula(plain)
      args$data <- d
      efit <- suppressWarnings(do.call(glmer, args))
      stopifnot(abs(as.numeric(logLik(efit)) - as.numeric(ll)) < 1e-6)
      rec$emmeans_formula <- plain
    }
    e <- as.data.frame(summary(emmeans(efit, as.formula(paste("~", cs$emmeans)))))
    rec$emmeans <- list(spec = cs$emmeans, level = as.character(e[[cs$emmeans]]),
                        estimate = e$emmean, se = e$SE)
    # contrasts follow the level order: pairwise (earlier minus later level) and each level
    # against the first (the reference), unadjusted
    emm <- emmeans(efit, as.formula(paste("~", cs$emmeans)))
    for (method in c("pairwise", "trt.vs.ctrl")) {
      ct <- as.data.frame(summary(contrast(emm, method = method, adjust = "none")))
      rec[[paste0("contrast_", sub(".vs.", "_", method, fixed = TRUE))]] <-
        list(label = as.character(ct$contrast), estimate = ct$estimate, se = ct$SE,
             p_value = ct$p.value)
    }
  }
  # term names as lme4 and car print them (verbatim: I(age^2), poly(age, 2)1, factor(site)2)
  rec$anova_terms <- tryCatch(rownames(car::Anova(fit, type = 3)),
                              error = function(e) paste("error:", conditionMessage(e)))
  if (isTRUE(cs$anova)) {
    a <- car::Anova(fit, type = 3)
    rec$anova <- list(term = rownames(a), chisq = a[["Chisq"]], df = a[["Df"]])
  }
  out[[cs$id]] <- rec
  message(cs$id, ": logLik ", format(as.numeric(ll), digits = 10))
}
# splines::ns bases on new values (inside, beyond both boundary knots) for the fitted age column
age <- load_data("binary")$age
at <- c(1, 2.5, 4.5, 6.9, 8)
bases <- list(
  list(call = "ns(age, 3)", basis = predict(ns(age, 3), at)),
  list(call = "ns(age, df = 4)", basis = predict(ns(age, df = 4), at)),
  list(call = "ns(age, knots = c(3, 5))", basis = predict(ns(age, knots = c(3, 5)), at)),
  list(call = "ns(age, 1)", basis = predict(ns(age, 1), at)),
  list(call = "ns(age, df = 3, intercept = TRUE)", basis = predict(ns(age, df = 3, intercept = TRUE), at)))
ns_bases <- lapply(bases, function(b) list(call = b$call, at = at, basis = unclass(b$basis)[, ]))
info <- list(lme4 = as.character(packageVersion("lme4")),
             emmeans = as.character(packageVersion("emmeans")),
             car = as.character(packageVersion("car")), R = R.version.string)
writeLines(toJSON(list(versions = info, cases = out, ns_bases = ns_bases), digits = NA, auto_unbox = TRUE,
                  null = "null", na = "null"),
           file.path(here, "formula_sweep_reference.json"))
