# Reference values for evalmix.arena (Bradley-Terry ratings of pairwise battles).
#
#   Rscript tests/reference/arena_reference.R
#
# Simulates arena_battles.csv (6 models, Davidson ties, a first-shown advantage, battles clustered
# by prompt; set.seed below) and writes arena_reference.json with:
#
# - "btm": BradleyTerry2::BTm on the decisive battles (ties dropped), abilities against the
#   reference model m01 with their model-based SEs; "btm_home": the same with the first-shown
#   advantage (BTm's home-advantage formula ~ player + at.home);
# - "btm_home_cl": sandwich::vcovCL(type = "HC0", cadjust = TRUE) clustered by prompt, of the
#   same home-advantage model fitted as the equivalent binomial glm;
# - "davidson": the Davidson tie model with the first-shown advantage.  BradleyTerry2 has no tie
#   model, so it is fitted here as the Poisson log-linear model equivalent to its multinomial
#   likelihood (one nuisance intercept per ordered pair; outcome log-means d/2, -d/2 and log nu
#   with d = theta_a - theta_b + h), which gives the same maximum and the same SEs of the
#   parameters of interest; the log-likelihood is the multinomial one written out below.

suppressPackageStartupMessages({ library(BradleyTerry2); library(sandwich); library(jsonlite) })

file_arg <- grep("^--file=", commandArgs(FALSE), value = TRUE)
here <- dirname(normalizePath(sub("^--file=", "", file_arg)))

set.seed(20261126)
K <- 6; n <- 3000
models <- sprintf("m%02d", 1:K)
theta <- seq(-1, 1, length.out = K); h <- 0.3; nu <- 0.4
a <- sample.int(K, n, TRUE)
b <- (a - 1 + sample.int(K - 1, n, TRUE)) %% K + 1
d <- theta[a] - theta[b] + h
pa <- exp(d / 2); pb <- exp(-d / 2)
u <- runif(n) * (pa + pb + nu)
winner <- ifelse(u < pa, "model_a", ifelse(u < pa + pb, "model_b", "tie"))
prompt <- sprintf("p%03d", sample.int(400, n, TRUE))
battles <- data.frame(model_a = models[a], model_b = models[b], winner = winner, prompt = prompt)
write.csv(battles, file.path(here, "arena_battles.csv"), row.names = FALSE)

# ---- Bradley-Terry on decisive battles (ties dropped)
dec <- battles[battles$winner != "tie", ]
dec$y <- as.integer(dec$winner == "model_a")
dec$p1 <- data.frame(player = factor(dec$model_a, levels = models), at.home = 1)
dec$p2 <- data.frame(player = factor(dec$model_b, levels = models), at.home = 0)
fit <- BTm(y, p1, p2, formula = ~ player, id = "player", refcat = "m01", data = dec)
fit_h <- BTm(y, p1, p2, formula = ~ player + at.home, id = "player", refcat = "m01", data = dec)
coef_table <- function(f) {
  s <- summary(f)$coefficients
  list(term = rownames(s), estimate = unname(s[, 1]), se = unname(s[, 2]), loglik = as.numeric(logLik(f)))
}

# the same home-advantage model as a glm on the difference design, for the clustered sandwich
X <- outer(dec$model_a, models, "==") - outer(dec$model_b, models, "==")
X <- cbind(X[, -1], at.home = 1)
colnames(X)[1:(K - 1)] <- models[-1]
g <- glm(dec$y ~ 0 + X, family = binomial, control = glm.control(epsilon = 1e-14, maxit = 100))
vcl <- vcovCL(g, cluster = dec$prompt, type = "HC0", cadjust = TRUE)

# ---- Davidson ties as a Poisson log-linear model on the counts per ordered pair and outcome
cnt <- as.data.frame(table(a = factor(battles$model_a, levels = models),
                           b = factor(battles$model_b, levels = models),
                           outcome = factor(battles$winner, levels = c("model_a", "model_b", "tie"))))
cnt <- cnt[cnt$a != cnt$b, ]
sgn <- ifelse(cnt$outcome == "model_a", 0.5, ifelse(cnt$outcome == "model_b", -0.5, 0))
Xd <- (outer(as.character(cnt$a), models, "==") - outer(as.character(cnt$b), models, "==")) * sgn
Xd <- cbind(Xd[, -1], h = sgn, log_nu = as.numeric(cnt$outcome == "tie"))
colnames(Xd)[1:(K - 1)] <- models[-1]
pair <- factor(paste(cnt$a, cnt$b))
gd <- glm(cnt$Freq ~ 0 + pair + Xd, family = poisson, control = glm.control(epsilon = 1e-14, maxit = 100))
keep <- paste0("Xd", colnames(Xd))
est <- coef(gd)[keep]
se <- sqrt(diag(vcov(gd))[keep])
davidson_loglik <- function(th, hh, lnu) {
  full <- c(0, th)
  dd <- full[match(battles$model_a, models)] - full[match(battles$model_b, models)] + hh
  s <- cbind(dd / 2, -dd / 2, lnu)
  lse <- log(rowSums(exp(s)))
  idx <- match(battles$winner, c("model_a", "model_b", "tie"))
  sum(s[cbind(seq_along(idx), idx)] - lse)
}

out <- list(
  n = n, n_decisive = nrow(dec), elo_per_logit = 400 / log(10),
  btm = coef_table(fit), btm_home = coef_table(fit_h),
  btm_home_cl = list(term = colnames(X), estimate = unname(coef(g)), se = unname(sqrt(diag(vcl)))),
  davidson = list(term = colnames(Xd), estimate = unname(est), se = unname(se),
                  loglik = davidson_loglik(est[1:(K - 1)], est[K], est[K + 1])),
  r_version = R.version.string, bradleyterry2 = as.character(packageVersion("BradleyTerry2")),
  sandwich = as.character(packageVersion("sandwich")))
writeLines(toJSON(out, digits = NA, auto_unbox = TRUE, pretty = TRUE), file.path(here, "arena_reference.json"))
