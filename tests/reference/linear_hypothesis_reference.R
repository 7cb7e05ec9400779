# Reference values for evalmix.linear_hypothesis / fit.wald_test: car::linearHypothesis on a
# glmer fit and an lmer fit (Wald chi-square, Df, Pr(>Chisq)).
#
#   Rscript tests/reference/linear_hypothesis_reference.R
#
# Reads inference_glmer_sim.csv and lmer_judges.csv beside this script and writes
# linear_hypothesis_reference.json: per fit, the coefficient names, fixef and vcov (so the tests
# can check the algebra on R's own estimates) and, per hypothesis set, car's chisq, Df and p.
# car refuses a chain "a = b = c" (one "=" per hypothesis); the chain is written here as the
# joint pair c("a = b", "b = c"), which is what evalmix expands it to.

suppressPackageStartupMessages({ library(car); library(lme4); library(jsonlite) })

file_arg <- grep("^--file=", commandArgs(FALSE), value = TRUE)
here <- dirname(normalizePath(sub("^--file=", "", file_arg)))

test_set <- function(fit, hyps) {
  lapply(hyps, function(h) {
    a <- car::linearHypothesis(fit, h, test = "Chisq")
    hm <- rbind(car::makeHypothesis(names(fixef(fit)), h))  # [L | rhs], one row per hypothesis
    list(hypotheses = h, chisq = a[["Chisq"]][2], df = a[["Df"]][2], p = a[["Pr(>Chisq)"]][2],
         L = unname(hm[, -ncol(hm), drop = FALSE]), rhs = unname(hm[, ncol(hm)]))
  })
}
fit_info <- function(fit) {
  list(coef_names = names(fixef(fit)), beta = unname(fixef(fit)),
       vcov = unname(as.matrix(vcov(fit))))
}

g <- read.csv(file.path(here, "inference_glmer_sim.csv"), stringsAsFactors = TRUE)
gfit <- glmer(correct ~ model * lang + (1 | item), data = g, family = binomial)
ghyp <- list(
  pair = "modelm2 = modelm3",
  joint = c("modelm2 = 0", "modelm3 = 0"),
  shifted = "modelm2 - modelm3 = 0.5",
  weighted = "2*modelm2 + modelm3 = 1",
  interaction = "modelm2:langES = modelm3:langES",
  chain = c("(Intercept) = modelm2", "modelm2 = modelm3")
)

j <- read.csv(file.path(here, "lmer_judges.csv"), stringsAsFactors = TRUE)
lfit <- lmer(rating ~ model + (1 | item), data = j)
lhyp <- list(
  pair = "modeljudge-B = modeljudge-C",
  chain = c("modeljudge-B = modeljudge-C", "modeljudge-C = modeljudge-D"),
  shifted = "modeljudge-B - modeljudge-D = 0.5"
)

out <- list(
  glmer = c(list(formula = "correct ~ model * lang + (1 | item)"), fit_info(gfit),
            list(tests = test_set(gfit, ghyp))),
  lmer = c(list(formula = "rating ~ model + (1 | item)"), fit_info(lfit),
           list(tests = test_set(lfit, lhyp))),
  versions = list(R = R.version.string, lme4 = as.character(packageVersion("lme4")),
                  car = as.character(packageVersion("car")))
)
writeLines(toJSON(out, digits = NA, auto_unbox = TRUE, pretty = TRUE),
           file.path(here, "linear_hypothesis_reference.json"))
