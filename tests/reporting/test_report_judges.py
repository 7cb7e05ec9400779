"""The report's judges and arena sections: the same numbers as the functions they call, hand-checked
human-only means, escaped output, and the command line."""

from __future__ import annotations

import json
import warnings

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

import evalmix  # noqa: E402
from evalmix.cli import main  # noqa: E402
from evalmix.core.errors import DataError  # noqa: E402
from evalmix.reporting import arena_section, judges_section  # noqa: E402

HOSTILE_JUDGE = "<script>alert(1)</script>"
HOSTILE_MODEL = "$x$ <b>bold</b>"


def judged_runs(n_items: int = 30, judges: tuple[str, ...] = ("lenient", "strict", "fair"),
                seed: int = 3) -> pd.DataFrame:
    """Three models, two runs, every response graded by every judge (judge biases +0.8, -0.6, 0)."""
    rng = np.random.default_rng(seed)
    bias = dict(zip(judges, (0.8, -0.6, 0.0, 0.3)))
    rows = []
    for m, skill in (("A", 0.8), ("B", 0.0), ("C", -0.5)):
        for i in range(n_items):
            d = rng.normal(0, 1)
            for r in (1, 2):
                q = rng.normal(0, 0.5)
                for j in judges:
                    p = 1 / (1 + np.exp(-(skill + d + q + bias[j])))
                    rows.append((m, f"q{i:02d}", r, j, int(rng.random() < p)))
    return pd.DataFrame(rows, columns=["model", "item", "run", "judge", "correct"])


def human_labels(df: pd.DataFrame, n_items: int = 12, judge: str = "fair") -> pd.DataFrame:
    """Human scores of the responses to the first items (the 'fair' judge's verdicts, both runs)."""
    keep = (df["judge"] == judge) & (df["item"] < f"q{n_items:02d}")
    lab = df.loc[keep, ["model", "item", "run"]].copy()
    lab["human"] = df.loc[keep, "correct"].to_numpy()
    return lab.reset_index(drop=True)


def battles(n: int = 900, seed: int = 5, names: tuple[str, ...] = ("w", "x", "y", "z"), ties: bool = True
            ) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    k = len(names)
    a = rng.integers(0, k, n)
    b = (a + rng.integers(1, k, n)) % k
    strength = np.linspace(0, 1.2, k)
    p_a = 1 / (1 + np.exp(strength[b] - strength[a]))
    u = rng.random(n)
    band = 0.1 if ties else 0.0
    won = np.where(u < p_a - band, "model_a", np.where(u < p_a + band, "tie", "model_b"))
    lab = np.array(names, dtype=object)
    return pd.DataFrame({"model_a": lab[a], "model_b": lab[b], "winner": won, "prompt": rng.integers(0, 150, n)})


@pytest.fixture(scope="module")
def runs() -> pd.DataFrame:
    return evalmix.read_runs(judged_runs())


@pytest.fixture(scope="module")
def section(runs):
    log: list = []
    sec = judges_section(runs, labels=human_labels(judged_runs()), log=log)
    return sec, log


def test_judges_section_is_judge_study(runs, section):
    sec, log = section
    tabs = {n: t for n, _, t in sec.tables}
    assert list(tabs) == ["judge_agreement", "judge_agreement_pairs", "judge_bias", "judge_means",
                          "judge_variance", "judge_ppi"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        study = evalmix.judge_study(judged_runs())
    pd.testing.assert_frame_equal(tabs["judge_agreement"], study.agreement.table)
    pd.testing.assert_frame_equal(tabs["judge_bias"], study.bias, rtol=1e-6)
    pd.testing.assert_frame_equal(tabs["judge_variance"], study.variance, rtol=1e-5, atol=1e-8)
    # the lenient judge's bias is positive, the strict one's negative (simulated +0.8 and -0.6)
    bias = tabs["judge_bias"].set_index("contrast")["estimate"]
    assert bias["lenient - mean"] > 0.3 and bias["strict - mean"] < -0.3
    # every fit goes to the report's fit log
    assert [row["use"] for row in log] == ["judges: additive", "judges: interaction", "judges: random judge"]
    assert all(row["nobs"] == len(runs) for row in log)
    assert [n for n, _, _ in sec.figures] == ["judge_accuracy"]
    assert "3 judges (judge) graded 180 responses" in sec.note


def test_ppi_table_human_only_mean_by_hand(section):
    ppi = {n: t for n, _, t in section[0].tables}["judge_ppi"]
    lab = human_labels(judged_runs())
    assert ppi["method"].tolist() == ["ppi++", "classical", "judge_only"] * 3
    # human-only: the mean over labelled items of each item's mean human score (runs averaged)
    for m in "ABC":
        per_item = lab[lab["model"] == m].groupby("item")["human"].mean().to_numpy()
        row = ppi[(ppi["model"] == m) & (ppi["method"] == "classical")].iloc[0]
        assert row["estimate"] == pytest.approx(per_item.mean(), abs=1e-12)
        assert row["se"] == pytest.approx(per_item.std(ddof=0) / np.sqrt(len(per_item)), rel=1e-10)
        assert row["n_labelled"] == 12 and row["n_unlabelled"] == 18
    # judge-only: the mean verdict of the three judges over all 30 items; PPI++: the judge's mean on
    # the 18 unlabelled items corrected by its error on the 12 labelled ones, at the reported lambda
    raw = judged_runs()
    for m in "ABC":
        f = raw[raw["model"] == m].groupby("item")["correct"].mean()
        row = ppi[(ppi["model"] == m) & (ppi["method"] == "judge_only")].iloc[0]
        assert row["estimate"] == pytest.approx(f.mean(), abs=1e-12)
        y = lab[lab["model"] == m].groupby("item")["human"].mean()
        row = ppi[(ppi["model"] == m) & (ppi["method"] == "ppi++")].iloc[0]
        lam = row["lambda"]
        assert 0 < lam <= 1
        unl = f[~f.index.isin(y.index)]
        expect = lam * unl.mean() + (y - lam * f[y.index]).mean()
        assert row["estimate"] == pytest.approx(expect, abs=1e-12)


def test_ppi_with_a_single_judge_and_labels_without_runs():
    raw = judged_runs(judges=("only",))
    lab = raw[raw["item"] < "q10"].groupby(["model", "item"], as_index=False)["correct"].mean()
    lab = lab.rename(columns={"correct": "score"})
    sec = judges_section(evalmix.read_runs(raw.drop(columns="judge")), labels=lab, human="score")
    assert [n for n, _, _ in sec.tables] == ["judge_ppi"]
    ppi = sec.tables[0][2]
    # the labels are the judge's own item means, so the human-only mean is the judge's mean over the
    # labelled items
    cls = ppi[ppi["method"] == "classical"].set_index("model")["estimate"]
    np.testing.assert_allclose(cls.to_numpy(), lab.groupby("model")["score"].mean().to_numpy(), atol=1e-12)
    assert "the judge score of a response is the verdict;" in sec.note


@pytest.mark.slow  # the second test step: keeps the first under 2 minutes
def test_judges_section_left_out_and_errors(runs):
    plain = evalmix.read_runs(judged_runs().query("judge == 'fair'").drop(columns="judge"))
    assert judges_section(plain).skipped.startswith("Left out: the table has no judge column")
    with_cond = judged_runs()
    with_cond["language"] = np.where(with_cond["run"] == 1, "EN", "ES")
    sec = judges_section(evalmix.read_runs(with_cond))
    assert not sec.tables and "further conditions (language)" in sec.note
    with pytest.raises(DataError, match="judge='grader' is not a slice column"):
        judges_section(runs, judge="grader")
    bad = human_labels(judged_runs())
    bad.loc[0, "item"] = "nope"
    with pytest.raises(DataError, match="1 labelled response.*not in the runs table.*'nope'"):
        judges_section(runs, labels=bad)
    with pytest.raises(DataError, match="'human'"):
        judges_section(runs, labels=bad.drop(columns="human"))


def test_arena_section_is_bradley_terry():
    bat = battles()
    sec = arena_section(bat, cluster="prompt")
    direct = evalmix.bradley_terry(bat.rename(columns={"prompt": "cl"}), cluster="cl")
    tab = dict((n, t) for n, _, t in sec.tables)
    pd.testing.assert_frame_equal(tab["arena_ratings"], direct.table)
    pd.testing.assert_frame_equal(tab["arena_params"], direct.params)
    assert tab["arena_ratings"]["model"].tolist() == ["z", "y", "x", "w"]
    assert "Davidson ties" in sec.note and "clustered by prompt" in sec.note
    # no ties in the battles: they are left out of the model rather than refused
    no_ties = arena_section(battles(ties=False))
    assert "no ties in the battles" in no_ties.note
    assert set(no_ties.tables[1][2]["term"]) == {"first_position"}
    assert [n for n, _, _ in sec.figures] == ["arena_leaderboard"]


@pytest.mark.slow  # the second test step: keeps the first under 2 minutes
def test_report_cli_with_judges_labels_and_battles_escapes_names(tmp_path, capsys):
    raw = judged_runs(n_items=16, judges=("fair", HOSTILE_JUDGE))
    raw["model"] = raw["model"].replace({"A": HOSTILE_MODEL})
    data = tmp_path / "runs.csv"
    raw.to_csv(data, index=False)
    lab = human_labels(raw, n_items=8)
    lab.to_csv(tmp_path / "labels.csv", index=False)
    bat = battles(names=("w", HOSTILE_MODEL, "y"))
    bat.to_csv(tmp_path / "battles.csv", index=False)
    out = tmp_path / "out"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rc = main(["report", str(data), "-o", str(out), "--n-boot", "50", "--labels", str(tmp_path / "labels.csv"),
                   "--battles", str(tmp_path / "battles.csv"), "--battle-cluster", "prompt", "--json"])
    out_text, err = capsys.readouterr()
    assert rc == 0, err
    # the judges and arena sections come last, before the fits
    doc = json.loads(out_text, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))
    keys = list(dict.fromkeys(r["section"] for r in doc["contents"]))
    assert keys[-3:] == ["judges", "arena", "fits"]
    assert doc["options"]["judge"] == "judge" and doc["options"]["battles"] and doc["options"]["labels"]
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "<script>alert" not in page and "<b>bold</b>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    for name in ("judge_agreement_pairs", "judge_bias", "judge_ppi", "arena_ratings", "arena_params"):
        assert (out / "tables" / f"{name}.tex").exists() and (out / "tables" / f"{name}.md").exists()
    tex = (out / "tables" / "arena_ratings.tex").read_text(encoding="utf-8")
    assert r"\$x\$" in tex and "$x$" not in tex.replace(r"\$x\$", "")
    md = (out / "tables" / "judge_agreement_pairs.md").read_text(encoding="utf-8")
    assert "<script>" not in md.replace("\\<script>", "")  # only backslash-escaped: literal text
    for fig in ("judge_accuracy", "arena_leaderboard"):
        assert (out / "figures" / f"{fig}.pdf").exists()
    ratings = pd.read_csv(out / "tables" / "arena_ratings.csv")
    assert ratings["estimate"].mean() == pytest.approx(1000, abs=1e-6)
    fits = pd.read_csv(out / "tables" / "fits.csv")
    assert fits["use"].str.startswith("judges:").sum() == 3


def test_report_cli_user_errors_exit_2(tmp_path, capsys):
    data = tmp_path / "runs.csv"
    judged_runs(n_items=6).to_csv(data, index=False)
    assert main(["report", str(data), "-o", str(tmp_path / "o"), "--judge", "grader"]) == 2
    err = capsys.readouterr().err
    assert "judge='grader' is not a slice column" in err and "Traceback" not in err
    bad = tmp_path / "battles.csv"
    pd.DataFrame({"model_a": ["a"], "model_b": ["a"], "winner": ["tie"]}).to_csv(bad, index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rc = main(["report", str(data), "-o", str(tmp_path / "o2"), "--n-boot", "50", "--battles", str(bad)])
    assert rc == 2
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.slow
def test_report_with_judges_and_battles_in_chromium(tmp_path):
    """The judges and arena sections as a reader sees them (headless Chromium, as
    tests/reporting/test_report_browser.py checks the main report): every figure decodes, no console message,
    hostile names rendered as text."""
    from browser import check_page

    raw = judged_runs(n_items=16, judges=("fair", HOSTILE_JUDGE))
    raw["model"] = raw["model"].replace({"A": HOSTILE_MODEL})
    data = tmp_path / "runs.csv"
    raw.to_csv(data, index=False)
    human_labels(raw, n_items=8).to_csv(tmp_path / "labels.csv", index=False)
    battles(names=("w", HOSTILE_MODEL, "y")).to_csv(tmp_path / "battles.csv", index=False)
    out = tmp_path / "out"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["report", str(data), "-o", str(out), "--n-boot", "50", "--labels", str(tmp_path / "labels.csv"),
                     "--battles", str(tmp_path / "battles.csv"), "--battle-cluster", "prompt"]) == 0
    n_figures = len(list((out / "figures").glob("*.png")))
    res = check_page(out / "index.html", tmp_path / "chromium")
    assert res.n_images == n_figures and n_figures >= 10
    assert res.n_broken == 0
    assert res.console == []
