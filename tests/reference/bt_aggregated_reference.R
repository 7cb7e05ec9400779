# Reference values for evalmix.bradley_terry on aggregated battles (wins per pair), as
# BradleyTerry2::BTm takes them.
#
#   Rscript tests/reference/bt_aggregated_reference.R
#
# Writes bt_aggregated_reference.json with the data and BTm's abilities, model-based SEs and
# log-likelihood (reference: the first level, at 0):
# - "citations": BradleyTerry2's 4 x 4 citation counts, countsToBinomial(citations) (player1,
#   player2, win1, win2), BTm(cbind(win1, win2), player1, player2, ~ player, id = "player");
# - "baseball": home.wins/away.wins of each (home.team, away.team), without and with the home
#   advantage (BTm's formula ~ team + at.home): "baseball" and "baseball_home".

suppressPackageStartupMessages({ library(BradleyTerry2); library(jsonlite) })
file_arg <- grep("^--file=", commandArgs(FALSE), value = TRUE)
here <- dirname(normalizePath(sub("^--file=", "", file_arg)))

abilities <- function(fit) {
  a <- BTabilities(fit)
  list(model = rownames(a), ability = unname(a[, "ability"]), se = unname(a[, "s.e."]),
       loglik = as.numeric(logLik(fit)))
}

data(citations, package = "BradleyTerry2")
cs <- countsToBinomial(citations)
fc <- BTm(cbind(win1, win2), player1, player2, ~ player, id = "player", data = cs)
citations_out <- c(abilities(fc), list(data = list(player1 = as.character(cs$player1),
  player2 = as.character(cs$player2), win1 = cs$win1, win2 = cs$win2)))

data(baseball, package = "BradleyTerry2")
bb <- baseball
fb <- BTm(cbind(home.wins, away.wins), home.team, away.team, data = bb, id = "team")
bb2 <- baseball
bb2$home.team <- data.frame(team = baseball$home.team, at.home = 1)
bb2$away.team <- data.frame(team = baseball$away.team, at.home = 0)
fh <- BTm(cbind(home.wins, away.wins), home.team, away.team, formula = ~ team + at.home,
          id = "team", data = bb2)
home <- abilities(fh)
home$at_home <- unname(coef(fh)["at.home"])
home$at_home_se <- unname(sqrt(diag(vcov(fh)))["at.home"])

out <- list(citations = citations_out,
            baseball = c(abilities(fb), list(data = list(home = as.character(baseball$home.team),
              away = as.character(baseball$away.team), home_wins = baseball$home.wins,
              away_wins = baseball$away.wins))),
            baseball_home = home,
            versions = list(R = R.version.string, BradleyTerry2 = as.character(packageVersion("BradleyTerry2"))))
writeLines(toJSON(out, digits = NA, auto_unbox = TRUE, pretty = TRUE),
           file.path(here, "bt_aggregated_reference.json"))
