"""emmeans' factor-name prefix on contrast labels of numeric-looking levels (tests/reference/contrast_labels.R).

emmeans 1.8.4-1 writes "Dayf0 - Dayf1" for a factor ``Dayf`` with levels 0..3 when every level of
it in the grid reads as a number (R's ``as.numeric``), in every contrast family and beside other
factors ("Dayf0 a - Dayf1 a"); by variables and interaction contrasts keep the bare levels.
Estimates are R's to 1e-6 relative (the same REML fit), SEs to 1e-4.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import evalmix
from evalmix.inference.emmeans import looks_numeric

REF_DIR = Path(__file__).parents[1] / "reference"
R = json.loads((REF_DIR / "contrast_labels.json").read_text())


@pytest.fixture(scope="module")
def fit():
    d = pd.read_csv(REF_DIR / "lmer_sleepstudy.csv", dtype={"Subject": str})
    d["Dayf"] = np.minimum(d["Days"], 3).astype(str)
    first = sorted(d["Subject"].unique(), key=int)[:9]  # R's factor levels: numeric order
    d["grp"] = np.where(d["Subject"].isin(first), "a", "b")
    return evalmix.lmer("Reaction ~ Dayf * grp + (1|Subject)", d)


def _check(ours: pd.DataFrame, ref: dict, columns: list[str]) -> None:
    for c in columns:
        assert ours[c].astype(str).tolist() == [str(v) for v in ref[c]], c
    np.testing.assert_allclose(ours["estimate"], ref["estimate"], rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(ours["se"], ref["SE"], rtol=1e-4)


@pytest.mark.parametrize("key, specs, method, kwargs, columns", [
    ("pairwise", "Dayf", "pairwise", {}, ["contrast"]),
    ("trt_vs_ctrl", "Dayf", "trt.vs.ctrl", {"ref": "0"}, ["contrast"]),
    ("two_factors", "~ Dayf * grp", "pairwise", {}, ["contrast"]),
    ("by_grp", "~ Dayf | grp", "pairwise", {}, ["contrast", "grp"]),
    ("by_dayf", "~ grp | Dayf", "pairwise", {}, ["contrast", "Dayf"]),
])
def test_labels_are_emmeans(fit, key, specs, method, kwargs, columns):
    con = evalmix.contrast(evalmix.emmeans(fit, specs), method, adjust="none", **kwargs)
    _check(con.to_frame(), R[key], columns)


def test_interaction_contrasts_keep_bare_levels(fit):
    con = evalmix.contrast(evalmix.emmeans(fit, "~ Dayf * grp"), interaction="pairwise", adjust="none")
    _check(con.to_frame(), R["interaction"], ["Dayf_pairwise", "grp_pairwise"])


def test_trt_vs_ctrl_ref_still_names_the_bare_level(fit):
    con = evalmix.contrast(evalmix.emmeans(fit, "Dayf"), "trt.vs.ctrl", ref="2", adjust="none")
    assert con.to_frame()["contrast"].tolist() == ["Dayf0 - Dayf2", "Dayf1 - Dayf2", "Dayf3 - Dayf2"]


@pytest.mark.parametrize("text", sorted(R["numeric"]))
def test_numeric_reading_is_r_s_as_numeric(text):
    assert looks_numeric([text]) is R["numeric"][text]
