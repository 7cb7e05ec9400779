# Reference values for the GLMM engine checks of tests/glmm/test_engine_r.py:
#
#   Rscript tests/reference/engine_reference.R
#
# 1. "shallow": a random-intercept binomial fit whose profiled deviance has a shallow interior
#    minimum close to the boundary (theta = 0.0103, deviance 4e-3 below theta = 0; the deviance at
#    theta = 0.1 is 10 above). Simulated here (set.seed(89)) and written to engine_shallow.csv;
#    "singular": the same design with a response (k, recorded) that lme4 fits at theta = 0.
# 2. "lookup": data columns named like R functions (I, N, log, C, exp), which R's evaluation uses
#    as columns where a value is read (offset(log(I/N))) and as functions where one is called;
#    formula_binary.csv with such columns added, written to engine_lookup.csv.
# 3. "nagq0": glmer(..., nAGQ = 0), lme4's first stage (beta inside PIRLS, theta optimised on
#    that deviance), on lme4's cbpp (written to engine_cbpp.csv), data/example_runs.csv,
#    glmm_item_run.csv, glmm_crossed.csv (crossed terms) and glmm_slope.csv (a vector term).
# For each fit: theta, fixed effects with R's names, SEs, logLik, deviance (-2 logLik), singular.
suppressPackageStartupMessages({library(lme4); library(jsonlite)})

file_arg <- grep("^--file=", commandArgs(FALSE), value = TRUE)
here <- dirname(normalizePath(sub("^--file=", "", file_arg)))
root <- dirname(dirname(here))

record <- function(fit, extra = list()) {
  ll <- logLik(fit)
  c(list(theta = unname(getME(fit, "theta")), coef_names = names(fixef(fit)),
         beta = unname(fixef(fit)), se = unname(sqrt(diag(as.matrix(vcov(fit))))),
         loglik = as.numeric(ll), minus2loglik = -2 * as.numeric(ll), df = attr(ll, "df"),
         nobs = nobs(fit), singular = isSingular(fit),
         messages = fit@optinfo$conv$lme4$messages), extra)
}

# --- 1. a shallow interior minimum near the boundary ----------------------------------------------
set.seed(89)
ni <- 40
item <- factor(sprintf("i%02d", 1:ni))
n <- rep(c(400, 800), length.out = ni)
x <- rep(c(0, 1), each = ni / 2)
b <- rnorm(ni, 0, 0.05)
k <- rbinom(ni, n, plogis(-0.3 + 0.4 * x + b))
shallow <- data.frame(item, x, k, n)
write.csv(shallow, file.path(here, "engine_shallow.csv"), row.names = FALSE)
fs <- glmer(cbind(k, n - k) ~ x + (1|item), shallow, family = binomial)
gs <- glm(cbind(k, n - k) ~ x, shallow, family = binomial)
dd <- glmer(cbind(k, n - k) ~ x + (1|item), shallow, family = binomial, devFunOnly = TRUE)
grid <- c(0, 0.005, 0.0103, 0.02, 0.05, 0.1)
out <- list(shallow = record(fs, list(
  formula = "cbind(k, n - k) ~ x + (1|item)",
  minus2loglik_theta0 = -2 * as.numeric(logLik(gs)),
  profile_theta = grid, profile_deviance = sapply(grid, function(t) dd(c(t, fixef(fs)))))))

# the same design with a response lme4 fits on the boundary (theta = 0): the first seed after 89
# whose simulated counts give a singular fit
for (seed in 90:200) {
  set.seed(seed)
  k0 <- rbinom(ni, n, plogis(-0.3 + 0.4 * x))
  f0 <- glmer(cbind(k0, n - k0) ~ x + (1|item), data.frame(shallow[, c("item", "x", "n")], k0),
              family = binomial)
  if (getME(f0, "theta") == 0) break
}
out$singular <- record(f0, list(formula = "cbind(k, n - k) ~ x + (1|item)", seed = seed, k = k0))

# --- 2. columns named like functions --------------------------------------------------------------
d <- read.csv(file.path(here, "formula_binary.csv"), stringsAsFactors = TRUE)
d$I <- d$w + 1
d$N <- d$w + 3
d$log <- d$expo
d$C <- factor(c("u", "v", "w")[d$site])
d$exp <- d$age / 4
write.csv(d[, c("item", "grp", "y", "I", "N", "log", "C", "exp")],
          file.path(here, "engine_lookup.csv"), row.names = FALSE)
lookup <- list(
  offset_I = "y ~ grp + offset(log(I/N)) + (1|item)",
  column_log = "y ~ grp + log + I(log^2) + (1|item)",
  column_C_exp = "y ~ C + exp(exp) + (1|item)")
out$lookup <- lapply(lookup, function(f) {
  fit <- glmer(as.formula(f), d, family = binomial)
  record(fit, list(formula = f))
})

# --- 3. nAGQ = 0 ----------------------------------------------------------------------------------
cbpp <- lme4::cbpp
write.csv(cbpp, file.path(here, "engine_cbpp.csv"), row.names = FALSE)
runs <- read.csv(file.path(root, "data", "example_runs.csv"), stringsAsFactors = TRUE)
item_run <- read.csv(file.path(here, "glmm_item_run.csv"), stringsAsFactors = TRUE)
nagq0 <- list(
  cbpp = list(data = "engine_cbpp.csv", formula = "cbind(incidence, size - incidence) ~ period + (1|herd)"),
  example_runs = list(data = "example_runs.csv",
                      formula = "correct ~ model + language + (1|item) + (1|item:run)"),
  item_run = list(data = "glmm_item_run.csv", formula = "correct ~ model + (1|item) + (1|item:run)"),
  crossed = list(data = "glmm_crossed.csv", formula = "correct ~ model + (1|item) + (1|template)"),
  slope = list(data = "glmm_slope.csv", formula = "correct ~ x + (1 + x|g)"))
frames <- list(engine_cbpp.csv = cbpp, example_runs.csv = runs, glmm_item_run.csv = item_run,
               glmm_crossed.csv = read.csv(file.path(here, "glmm_crossed.csv"), stringsAsFactors = TRUE),
               glmm_slope.csv = read.csv(file.path(here, "glmm_slope.csv"), stringsAsFactors = TRUE))
out$nagq0 <- lapply(nagq0, function(cs) {
  fit <- glmer(as.formula(cs$formula), frames[[cs$data]], family = binomial, nAGQ = 0)
  record(fit, cs)
})

out$versions <- list(lme4 = as.character(packageVersion("lme4")), R = R.version.string)
writeLines(toJSON(out, digits = NA, auto_unbox = TRUE, null = "null", na = "null"),
           file.path(here, "engine_reference.json"))
