# Reference values for evalmix.fit_irt's ability standard errors against lme4::glmer.
#
#   Rscript tests/reference/irt_verbagg_reference.R
#
# lme4's VerbAgg (316 persons x 24 items, binary r2) as a 1PL model fitted two ways round, and
# written to irt_verbagg_reference.json with the data (one 24-character 0/1 string per person):
#
# - "items_fixed": glmer(r2 ~ 0 + item + (1|id), nAGQ = 7, bobyqa): the 1PL with items fixed and persons
#   random.  fit_irt(model = "item", item = "id", model_type = "1pl") is the same model (its
#   abilities are the item effects standardised to mean 0, SD 1: theta = (beta - mean)/sd, sd
#   with divisor M); the reference SEs of those standardised values are the delta method on
#   glmer's Wald covariance vcov(fit).
# - "persons_fixed": persons as the fixed units (fit_irt(model = "id", item = "item")), i.e.
#   r2 ~ 0 + id + (1|item) on the persons who answered neither all 0 nor all 1 (the others
#   separate: their estimates are infinite), by Laplace in glmmTMB (glmer's Laplace would optimise
#   the 307 fixed effects by bobyqa; glmmTMB's sdreport covariance is the same Wald covariance of
#   fixed effects and variance parameters jointly); the same delta method.

suppressPackageStartupMessages({ library(lme4); library(glmmTMB); library(jsonlite) })
file_arg <- grep("^--file=", commandArgs(FALSE), value = TRUE)
here <- dirname(normalizePath(sub("^--file=", "", file_arg)))

d <- VerbAgg
d$r2n <- as.integer(d$r2 == "Y")
d$item <- factor(as.character(d$item))
d$id <- factor(as.character(d$id))

standardised <- function(b, V) {
  M <- length(b)
  s <- sqrt(mean((b - mean(b))^2))
  th <- (b - mean(b)) / s
  J <- (diag(M) - 1 / M) / s - outer(th, th) / (M * s)
  list(theta = unname(th), se = unname(sqrt(diag(J %*% V %*% t(J)))), beta = unname(b),
       beta_se = unname(sqrt(diag(V))))
}

f1 <- glmer(r2n ~ 0 + item + (1 | id), data = d, family = binomial, nAGQ = 7,
            control = glmerControl(optimizer = "bobyqa", optCtrl = list(maxfun = 1e5)))
r1 <- standardised(fixef(f1), as.matrix(vcov(f1)))
r1$levels <- sub("^item", "", names(fixef(f1)))
r1$sd_person <- attr(VarCorr(f1)$id, "stddev")[[1]]

score <- tapply(d$r2n, d$id, mean)
keep <- names(score)[score > 0 & score < 1]
extreme <- names(score)[score == 0 | score == 1]
d2 <- droplevels(d[d$id %in% keep, ])
f2 <- glmmTMB(r2n ~ 0 + id + (1 | item), data = d2, family = binomial)
b2 <- fixef(f2)$cond
r2 <- standardised(b2, as.matrix(vcov(f2)$cond))
r2$levels <- sub("^id", "", names(b2))
r2$extreme <- extreme
r2$extreme_score <- unname(score[extreme])

wide <- tapply(d$r2n, list(d$id, d$item), identity)
rows <- apply(wide, 1, paste, collapse = "")
out <- list(items = colnames(wide), persons = rownames(wide), responses = unname(rows),
            items_fixed = r1, persons_fixed = r2,
            versions = list(R = R.version.string, lme4 = as.character(packageVersion("lme4")),
                            glmmTMB = as.character(packageVersion("glmmTMB"))))
writeLines(toJSON(out, digits = NA, auto_unbox = TRUE, pretty = TRUE),
           file.path(here, "irt_verbagg_reference.json"))
