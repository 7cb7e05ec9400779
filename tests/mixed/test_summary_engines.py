"""One summary() for every maximum-likelihood engine, in lme4's print(summary(fit)) layout
(tests/reference/summary_layout.R: lmerTest, lme4, ordinal and glmmTMB on the reference fits).

Each printout is compared with R's line by line, blank lines and spacing aside: the words must be
R's, and the numbers R's to 2e-3 relative, 1.5e-3 absolute under 0.5 (estimates of another
optimiser differ in the 4th digit, a rounded correlation in its 3rd decimal). Left out on R's
side: the ``Data:`` line (evalmix does not know the data frame's name) and ordinal's ``niter`` and
``max.grad`` (the optimisers differ); R wraps a title longer than 80 characters. evalmix ends every
printout with the optimizer's report.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

import evalmix
from evalmix.mixed.summary import MixedSummary

REF_DIR = Path(__file__).parents[1] / "reference"
R = json.loads((REF_DIR / "summary_layout.json").read_text())
FITS = {
    "lmer": lambda: evalmix.lmer("Reaction ~ Days + (Days|Subject)",
                                 pd.read_csv(REF_DIR / "lmer_sleepstudy.csv", dtype={"Subject": str})),
    "glmer": lambda: evalmix.glmer("cbind(incidence, size - incidence) ~ period + (1|herd)",
                                   pd.read_csv(REF_DIR / "engine_cbpp.csv", dtype={"herd": str, "period": str})),
    "clmm": lambda: evalmix.clmm("rating ~ temp + contact + (1|judge)", pd.read_csv(REF_DIR / "clmm_wine.csv")),
    "glmmtmb": lambda: evalmix.glmmtmb("score ~ arm + (1|item)", pd.read_csv(REF_DIR / "verbs_beta.csv"), "beta"),
}
NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?")


def _lines(text: list[str]) -> list[list[str]]:
    out = [ln.replace("‘", "'").replace("’", "'").split() for ln in text]
    return [ln for ln in out if ln]


def _same(a: str, b: str) -> bool:
    if a == b:
        return True
    if NUMBER.fullmatch(a) and NUMBER.fullmatch(b):
        x, y = float(a), float(b)
        return abs(x - y) <= max(2e-3 * abs(y), 1.5e-3 if abs(y) < 0.5 else 0.0)
    return False


@pytest.mark.parametrize("engine", list(FITS))
def test_printout_is_r_s(engine):
    fit = FITS[engine]()
    s = fit.summary()
    assert isinstance(s, MixedSummary) and isinstance(fit, evalmix.MixedResult)
    ours, ref = _lines(str(s).splitlines()), _lines(R[engine])
    # R wraps a long title: compare the titles without their spacing
    n_title = 2 if engine in ("lmer", "glmer") else 1
    assert "".join(sum(ours[:1], [])) == "".join(sum(ref[:n_title], []))
    ours, ref = ours[1:], ref[n_title:]
    if engine == "clmm":  # niter and max.grad belong to the optimiser
        k = next(i for i, ln in enumerate(ref) if ln[0] == "link") + 1
        ref[k], ours[k] = ref[k][:5] + ref[k][7:], ours[k][:5] + ours[k][7:]
    for i, (a, b) in enumerate(zip(ours, ref)):
        assert len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b)), f"line {i}: {a} != {b}"
    rest = ours[len(ref):]
    assert rest[0][0] == "optimizer:" and " ".join(rest[0]).startswith(f"optimizer: {fit.optimizer.optimizer};")


def test_tables_and_vocabulary():
    fit = FITS["clmm"]()
    s = fit.summary()
    assert list(s.tables) == ["Fixed effects", "Random effects"]
    assert s.to_frame()["kind"].tolist()[:1] == ["threshold"]
    assert s.notes[0] == fit.optimizer.describe() and s.title.startswith("Cumulative Link Mixed Model")
    assert "**" in s.to_markdown() and "Fixed effects" in s.to_markdown()


def test_more_than_twelve_fixed_effects_print_lme4s_note_instead_of_the_correlations() -> None:
    # R 4.x, lme4: print(summary(lmer(y ~ f + (1|g)))) with a 13-level f ends with
    # "Correlation matrix not shown by default, as p = 13 > 12." and the way to the matrix
    import numpy as np
    import pandas as pd

    from evalmix.mixed.summary import correlation_lines

    names = ["(Intercept)", *[f"f{c}" for c in "bcdefghijklm"]]
    v = pd.DataFrame(np.eye(13), index=names, columns=names)
    assert correlation_lines(v) == ["Correlation matrix not shown by default, as p = 13 > 12.",
                                    "Use fit.vcov if you need it"]
    assert correlation_lines(v.iloc[:12, :12])[0] == "Correlation of Fixed Effects:"
    assert correlation_lines(v.iloc[:1, :1]) == []
