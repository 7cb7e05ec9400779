# Reference values for tests/glmm/test_separation.py: separation verdicts, limit fits and blme fits.
# Run from the repository root:  Rscript tests/reference/separation_reference.R
# Reads tests/reference/separation_runs.csv and separation_counts.csv (make_separation_data.py),
# writes tests/reference/separation_reference.json and endometrial.csv (brglm2's data set).
#
# Verdicts: the linear program of detectseparation::detect_separation (its default ROI
# implementation with solver "lpsolve": maximise colSums(X_bar) b subject to X_bar b >= 0,
# -1 <= b <= 1, tolerance 1e-4, rows with 0 < y < 1 written once per outcome), solved here with
# lpSolve because detectseparation is not packaged for this R; plus the package's independent
# check, check_infinite_estimates, ported below (standard errors of glm fits with more and more iterations: they grow
# without bound for infinite estimates).
# Limit fits: lme4::glmer on the rows that are not fitted perfectly (the data the limit of the
# separated fit depends on); the fixed-effect linear predictor is given for every fixed pattern
# of those rows. Fitted with tolPwrss = 1e-12 and bobyqa's rhoend = 1e-9 (the exact optimum;
# standard errors from the exact Hessian, evalmix's vcov_method = "hessian_exact").
# blme: bglmer(..., fixef.prior = normal(...), cov.prior = NULL), optimiser bobyqa (the default
# two-stage one stops with a gradient of 0.35 on slice_default).
suppressPackageStartupMessages({
  library(lme4); library(blme); library(lpSolve); library(jsonlite)
})

ref <- file.path("tests", "reference")
runs <- read.csv(file.path(ref, "separation_runs.csv"), stringsAsFactors = TRUE)
counts <- read.csv(file.path(ref, "separation_counts.csv"), stringsAsFactors = TRUE)

konis_lp <- function(x, y, tol = 1e-4) {
  ones <- y == 1; zeros <- y == 0; nb <- !(ones | zeros)
  x <- x[c(which(ones), which(zeros), rep(which(nb), 2)), , drop = FALSE]
  y <- c(y[ones], y[zeros], rep(c(0, 1), each = sum(nb)))
  s <- ifelse(y == 0, -1, 1)
  xb <- x * s
  p <- ncol(xb)
  # b = b_plus - b_minus, both in [0, 1]
  obj <- c(colSums(xb), -colSums(xb))
  A <- rbind(cbind(xb, -xb), diag(2 * p))
  dir <- c(rep(">=", nrow(xb)), rep("<=", 2 * p))
  rhs <- c(rep(0, nrow(xb)), rep(1, 2 * p))
  sol <- lp("max", obj, A, dir, rhs)
  b <- sol$solution[1:p] - sol$solution[(p + 1):(2 * p)]
  v <- ifelse(abs(b) < tol, 0, sign(b) * Inf)
  names(v) <- colnames(x)
  list(status = sol$status, beta = b, verdict = v)
}

se_growth <- function(formula, data) {
  # binomial proportions carry their trials in a column `w` of data
  fit <- if ("w" %in% names(data)) {
    suppressWarnings(glm(formula, family = binomial, data = data, weights = w))
  } else suppressWarnings(glm(formula, family = binomial, data = data))
  # detectseparation::check_infinite_estimates (nsteps = 20): refit with maxit = 1..20, each
  # from the previous estimates; ratio of each standard error at the last step to the first
  b <- coef(fit); se <- matrix(0, 20, length(b)); start <- NULL
  for (i in 1:20) {
    tmp <- suppressWarnings(update(fit, control = list(maxit = i, epsilon = .Machine$double.eps),
                                   start = start))
    se[i, ] <- summary(tmp)$coef[names(b), "Std. Error"]
    start <- coef(tmp)
  }
  r <- se[20, ] / se[1, ]
  names(r) <- names(b)
  as.list(r)
}

cases <- list(
  list(id = "nonref", formula = "y_nonref ~ model + (1|item)", data = "runs",
       drop = quote(model == "model-B")),
  list(id = "ref", formula = "y_ref ~ model + (1|item)", data = "runs",
       drop = quote(model == "model-A")),
  list(id = "level0", formula = "y_level0 ~ model + (1|item)", data = "runs",
       drop = quote(model == "model-C")),
  list(id = "slice", formula = "y_slice ~ model * language + (1|item)", data = "runs",
       drop = quote(model == "model-B" & language == "ES")),
  list(id = "intercept", formula = "y_all1 ~ 1 + (1|item)", data = "runs", drop = quote(TRUE)),
  list(id = "all1_model", formula = "y_all1 ~ model + (1|item)", data = "runs",
       drop = quote(TRUE)),
  list(id = "counts", formula = "cbind(k, n - k) ~ model + (1|item)", data = "counts",
       drop = quote(model == "model-B")),
  list(id = "none", formula = "y_none ~ model * language + (1|item)", data = "runs",
       drop = quote(FALSE))
)

out <- list(lme4 = as.character(packageVersion("lme4")),
            blme = as.character(packageVersion("blme")),
            brglm2 = as.character(packageVersion("brglm2")),  # endometrial data
            lpSolve = as.character(packageVersion("lpSolve")), cases = list(), blme_fits = list())

for (cs in cases) {
  d <- if (cs$data == "runs") runs else counts
  f <- as.formula(cs$formula)
  ff <- nobars(f)
  X <- model.matrix(ff, d)
  if (cs$data == "counts") {
    y <- d$k / d$n
    # detect_separation sees proportions with weights n; rows with weight 0 would be dropped
  } else {
    y <- d[[all.vars(ff)[1]]]
  }
  lp_res <- konis_lp(X, y)
  growth <- if (cs$data == "counts") {
    se_growth(update(ff, k / n ~ .), transform(d, w = n))
  } else se_growth(ff, d)
  rec <- list(id = cs$id, formula = cs$formula, data = cs$data,
              columns = colnames(X), lp_status = lp_res$status, lp_beta = unname(lp_res$beta),
              verdict = as.list(ifelse(is.infinite(lp_res$verdict),
                                       ifelse(lp_res$verdict > 0, "Inf", "-Inf"), "0")),
              se_growth = growth)
  names(rec$verdict) <- colnames(X)
  drop <- eval(cs$drop, d)
  if (length(drop) == 1) drop <- rep(drop, nrow(d))
  rest <- droplevels(d[!drop, , drop = FALSE])
  rec$n_dropped <- sum(drop)
  if (nrow(rest) > 0) {
    # tight settings: the exact Laplace optimum (and the exact Hessian for the SEs)
    g <- suppressWarnings(glmer(f, data = rest, family = binomial,
                                control = glmerControl(optimizer = "bobyqa", tolPwrss = 1e-12,
                                                       optCtrl = list(maxfun = 1e5,
                                                                      rhoend = 1e-9))))
    vars <- setdiff(all.vars(ff)[-1], c("k", "n"))
    pat <- unique(rest[, vars, drop = FALSE])
    Xp <- model.matrix(delete.response(terms(ff)), pat)
    b <- fixef(g)
    eta <- as.vector(Xp[, names(b), drop = FALSE] %*% b)
    se <- sqrt(diag(Xp[, names(b), drop = FALSE] %*% as.matrix(vcov(g)) %*%
                    t(Xp[, names(b), drop = FALSE])))
    pat[] <- lapply(pat, as.character)
    rec$limit <- list(loglik = as.numeric(logLik(g)),
                      messages = as.list(g@optinfo$conv$lme4$messages), theta = unname(getME(g, "theta")),
                      fixef = as.list(b), patterns = pat, eta = eta, se = se)
  }
  out$cases[[cs$id]] <- rec
}

bcases <- list(
  list(id = "nonref_default", formula = "y_nonref ~ model + (1|item)", data = "runs",
       prior = "normal", sd = list(10, 2.5)),
  list(id = "ref_2.5", formula = "y_ref ~ model + (1|item)", data = "runs",
       prior = "normal(sd = 2.5)", sd = list(2.5)),
  list(id = "slice_default", formula = "y_slice ~ model * language + (1|item)", data = "runs",
       prior = "normal(sd = c(10, 2.5))", sd = list(10, 2.5)),
  list(id = "level0_percoef", formula = "y_level0 ~ model + (1|item)", data = "runs",
       prior = "normal(sd = c(5, 2, 1))", sd = list(5, 2, 1)),
  list(id = "none_2.5", formula = "y_none ~ model * language + (1|item)", data = "runs",
       prior = "normal(sd = 2.5)", sd = list(2.5)),
  list(id = "counts_default", formula = "cbind(k, n - k) ~ model + (1|item)", data = "counts",
       prior = "normal", sd = list(10, 2.5))
)
for (cs in bcases) {
  d <- if (cs$data == "runs") runs else counts
  fb <- eval(parse(text = sprintf(
    paste("bglmer(%s, data = d, family = binomial, cov.prior = NULL, fixef.prior = %s,",
          "control = glmerControl(optimizer = 'bobyqa', optCtrl = list(maxfun = 1e5)))"),
    cs$formula, cs$prior)))
  out$blme_fits[[cs$id]] <- list(
    id = cs$id, formula = cs$formula, data = cs$data, prior = cs$prior, sd = cs$sd,
    fixef = as.list(fixef(fb)), se = as.list(sqrt(diag(as.matrix(vcov(fb))))),
    theta = unname(getME(fb, "theta")), loglik = as.numeric(logLik(fb)),
    messages = as.list(fb@optinfo$conv$lme4$messages),
    prior_dev = unname(fb@devcomp$cmp["penalty"]),
    objective = -2 * as.numeric(logLik(fb)) + unname(fb@devcomp$cmp["penalty"]))
}

# a classic quasi-separated logistic regression (Heinze & Schemper 2002), for the verdicts alone
data("endometrial", package = "brglm2", envir = environment())
write.csv(endometrial, file.path(ref, "endometrial.csv"), row.names = FALSE)
Xe <- model.matrix(~ NV + PI + EH, endometrial)
out$endometrial <- list(columns = colnames(Xe),
                        verdict = as.list(konis_lp(Xe, endometrial$HG)$verdict),
                        se_growth = se_growth(HG ~ NV + PI + EH, endometrial))
out$endometrial$verdict <- lapply(out$endometrial$verdict, function(v)
  if (is.infinite(v)) ifelse(v > 0, "Inf", "-Inf") else "0")

writeLines(toJSON(out, auto_unbox = TRUE, digits = NA, pretty = TRUE),
           file.path(ref, "separation_reference.json"))
