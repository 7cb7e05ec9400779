# Means of ratings and continuous scores with item-clustered t intervals, as evalmix.accuracy and
# `evalmix describe` give them for outcomes other than 0/1: the runs of an item are averaged,
# then t.test() of the item means per model.
# Run: Rscript tests/reference/describe_scores_reference.R > tests/reference/describe_scores_reference.json
library(jsonlite)
d <- read.csv("tests/reference/describe_scores.csv")
out <- list()
for (col in c("rating", "score")) {
  rows <- list()
  for (m in sort(unique(d$model))) {
    s <- d[d$model == m, ]
    item_means <- tapply(s[[col]], s$item, mean)
    tt <- t.test(item_means, conf.level = 0.95)
    rows[[m]] <- list(n = nrow(s), n_items = length(item_means), estimate = unname(tt$estimate),
                      se = unname(tt$stderr), conf_low = tt$conf.int[1], conf_high = tt$conf.int[2])
  }
  out[[col]] <- rows
}
cat(toJSON(out, digits = NA, auto_unbox = TRUE, pretty = TRUE))
