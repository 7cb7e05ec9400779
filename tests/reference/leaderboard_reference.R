# Reference values for evalmix.leaderboard (simultaneous rank sets from normal estimates and GLMMs).
#
#   Rscript tests/reference/leaderboard_reference.R
#
# Writes leaderboard_reference.json: Tukey critical values qtukey(level, K, Inf) / sqrt(2) (the
# simultaneous critical value of all pairwise differences of K independent, equally precise
# estimates) and emmeans' pairwise contrasts with adjust = "mvt" for glmer fits on
# inference_glmer_sim.csv (written by inference_reference.R).  A pair is separated when its
# simultaneous interval excludes 0; the rank sets follow from the separations (Mogstad et al. 2024).

suppressPackageStartupMessages({ library(emmeans); library(lme4); library(jsonlite) })

file_arg <- grep("^--file=", commandArgs(FALSE), value = TRUE)
here <- dirname(normalizePath(sub("^--file=", "", file_arg)))

tukey <- do.call(rbind, lapply(c(0.9, 0.95), function(level)
  data.frame(level = level, k = c(2:10, 15, 20, 30),
             crit = qtukey(level, c(2:10, 15, 20, 30), Inf) / sqrt(2))))

g <- read.csv(file.path(here, "inference_glmer_sim.csv"))
for (v in c("model", "lang", "item", "run")) g[[v]] <- factor(g[[v]])
g2 <- glmer(correct ~ model + lang + (1 | item) + (1 | item:run), family = binomial, data = g)
g3 <- glmer(correct ~ model * lang + (1 | item) + (1 | item:run), family = binomial, data = g)

con <- function(e) {
  set.seed(1)
  s <- as.data.frame(summary(pairs(e, adjust = "mvt"), infer = c(TRUE, TRUE)))
  for (k in names(s)) if (is.factor(s[[k]])) s[[k]] <- as.character(s[[k]])
  data.frame(s[setdiff(names(s), c("df", "estimate", "SE", "asymp.LCL", "asymp.UCL", "z.ratio",
                                  "p.value"))],
             estimate = s$estimate, se = s$SE, conf_low = s$asymp.LCL, conf_high = s$asymp.UCL,
             p_adjusted = s$p.value, crit = (s$asymp.UCL - s$estimate) / s$SE)
}
emm_info <- function(e) {
  s <- as.data.frame(summary(e))
  list(model = as.character(s$model), estimate = s$emmean, vcov = unname(as.matrix(vcov(e))))
}
e2 <- emmeans(g2, ~ model)
out <- list(
  r_version = R.version.string, emmeans_version = as.character(packageVersion("emmeans")),
  lme4_version = as.character(packageVersion("lme4")),
  tukey = tukey,
  g2_emm = emm_info(e2),
  g2_model = con(e2),
  g3_model_by_lang = con(emmeans(g3, ~ model | lang)))
writeLines(toJSON(out, digits = NA, auto_unbox = TRUE, dataframe = "rows"),
           file.path(here, "leaderboard_reference.json"))
