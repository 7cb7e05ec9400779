"""The bad-input catalogue: every case ends in an evalmix error or warning naming the culprit.

No case may give a number the validated table would refuse, or a foreign traceback (pandas,
numpy, KeyError...).  Cases run on a small balanced runs table, on files written to a temporary
folder, and on the command line (in-process through ``evalmix.cli.main`` and ``python -m evalmix``).
"""

from __future__ import annotations

import json
import runpy
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import evalmix
from evalmix import (DataError, DataWarning, FormulaError, accuracy, cluster_bootstrap, compare_pair,
                     flip_rate, friedman, glmer, icc, rank_instability, rank_uncertainty)
from evalmix.cli import main
from evalmix.data.runs import ensure_runs, load_table, read_runs
from evalmix.studies.repetitions import se_vs_runs, slice_se_by_runs, variance_components

EXAMPLE = Path(__file__).resolve().parents[2] / "data" / "example_runs.csv"


def runs(n_models: int = 2, n_items: int = 6, n_runs: int = 3, seed: int = 0) -> pd.DataFrame:
    """A balanced raw runs table: models m0.., items q0.., runs 1..; outcome ``correct``."""
    rng = np.random.default_rng(seed)
    rows = [(f"m{m}", f"q{i}", r, int(rng.random() < 0.3 + 0.4 * (i % 2)))
            for m in range(n_models) for i in range(n_items) for r in range(1, n_runs + 1)]
    return pd.DataFrame(rows, columns=["model", "item", "run", "correct"])


def with_value(df: pd.DataFrame, row: int, col: str, value) -> pd.DataFrame:
    """``df`` with one cell replaced (the column widened to float/object as needed)."""
    if isinstance(value, float):
        out = df.astype({col: float})
    elif isinstance(value, int):
        out = df.copy()
    else:
        out = df.astype({col: object})
    out.loc[row, col] = value
    return out


def strict_loads(text: str):
    """json.loads that refuses NaN and Infinity, as JavaScript's JSON.parse does."""
    def refuse(token):
        raise ValueError(f"non-standard JSON token {token}")
    return json.loads(text, parse_constant=refuse)


TWO = runs(n_models=2)
#: Every public function that takes a runs table, called the simplest way.
ANALYSES = {
    "accuracy": lambda d: accuracy(d, "model"),
    "flip_rate": lambda d: flip_rate(d, "model"),
    "icc": lambda d: icc(d, "model"),
    "compare_pair": lambda d: compare_pair(d, "m0", "m1"),
    "compare_pair_mcnemar": lambda d: compare_pair(d, "m0", "m1", method="mcnemar", mcnemar_run=1),
    "friedman": lambda d: friedman(d),
    "cluster_bootstrap": lambda d: cluster_bootstrap(d, by="model", n_boot=50, rng=1),
    "rank_instability": lambda d: rank_instability(d),
    "rank_uncertainty": lambda d: rank_uncertainty(d, n_boot=50, rng=1),
    "variance_components": lambda d: variance_components(d, "model"),
    "se_vs_runs": lambda d: se_vs_runs(d, "model"),
    "slice_se_by_runs": lambda d: slice_se_by_runs(d, "model"),
    "glmer": lambda d: glmer("correct ~ model + (1|item)", d),
}


# ------------------------------------------------------------------------------------------ files

def test_zero_byte_file(tmp_path):
    path = tmp_path / "runs.csv"
    path.write_bytes(b"")
    with pytest.raises(DataError, match=r"runs\.csv: is empty \(0 bytes\)"):
        read_runs(path)


def test_blank_file(tmp_path):
    path = tmp_path / "runs.csv"
    path.write_text("\n\n")
    with pytest.raises(DataError, match=r"runs\.csv: holds no data"):
        load_table(path)


def test_header_only_file_is_an_empty_table(tmp_path):
    path = tmp_path / "runs.csv"
    path.write_text("model,item,run,correct\n")
    with pytest.raises(DataError, match=r"runs\.csv: the runs table is empty"):
        read_runs(path)


def test_latin1_file_names_the_encoding_fix(tmp_path):
    path = tmp_path / "runs.csv"
    text = runs().assign(language=lambda d: np.where(d["item"] == "q0", "Español", "English")).to_csv(index=False)
    path.write_bytes(text.encode("latin-1"))
    with pytest.raises(DataError, match=r"runs\.csv: is not UTF-8 text \(byte 0xf1 on line 2\); "
                                        r"pass encoding='latin-1'"):
        read_runs(path)
    out = read_runs(path, encoding="latin-1")
    assert set(out["language"]) == {"Español", "English"}


def test_utf8_with_bom_is_read(tmp_path):
    path = tmp_path / "runs.csv"
    path.write_bytes(runs().to_csv(index=False).encode("utf-8-sig"))
    assert list(read_runs(path).columns) == ["model", "item", "run", "correct"]


@pytest.mark.parametrize("sep", [";", "\t", "|"])
def test_other_delimiters_are_sniffed(tmp_path, sep):
    path = tmp_path / "runs.csv"
    runs().to_csv(path, sep=sep, index=False)
    out = read_runs(path)
    assert out["correct"].tolist() == runs()["correct"].tolist()


def test_single_column_with_delimiter_inside_says_so(tmp_path):
    path = tmp_path / "runs.csv"
    path.write_text("model item run correct\na 1 1 1\nb 1 1 0\na 2 1 0\nb 2 1 1\n")
    with pytest.raises(DataError, match=r"runs\.csv: has a single column 'model item run correct': "
                                        r"another delimiter\? pass sep="):
        read_runs(path)
    assert read_runs(path, sep=" ")["correct"].tolist() == [1, 0, 0, 1]


def test_ragged_csv_names_the_file(tmp_path):
    path = tmp_path / "runs.csv"
    path.write_text("model,item,run,correct\na,1,1,1\na,2,1,1,7,8\n")
    with pytest.raises(DataError, match=r"runs\.csv: cannot be parsed as CSV"):
        read_runs(path)


def test_missing_file(tmp_path):
    with pytest.raises(DataError, match=r"absent\.csv: no such file"):
        read_runs(tmp_path / "absent.csv")


def test_directory(tmp_path):
    with pytest.raises(DataError, match="is a directory, not a table file"):
        read_runs(tmp_path)


def test_unsupported_suffix(tmp_path):
    path = tmp_path / "runs.xlsx"
    path.write_bytes(b"PK")
    with pytest.raises(DataError, match=r"runs\.xlsx: unsupported file type '\.xlsx'"):
        read_runs(path)


def test_parquet_without_pyarrow(tmp_path, monkeypatch):
    import builtins

    path = tmp_path / "runs.parquet"
    path.write_bytes(b"PAR1")
    real_import = builtins.__import__

    def no_pyarrow(name, *args, **kwargs):
        if name == "pyarrow" or name.startswith("pyarrow."):
            raise ImportError("No module named 'pyarrow'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pyarrow)
    with pytest.raises(DataError, match=r"runs\.parquet: reading \.parquet needs pyarrow"):
        read_runs(path)


def test_corrupt_jsonl_names_the_file(tmp_path):
    path = tmp_path / "runs.jsonl"
    path.write_text('{"model": "a", "item": 1}\n{not json\n')
    with pytest.raises(DataError, match=r"runs\.jsonl: cannot be parsed"):
        read_runs(path)


def test_not_a_table_argument():
    with pytest.raises(DataError, match="got list"):
        ensure_runs([1, 2, 3])


# -------------------------------------------------- the same rules in every function (raw DataFrames)

@pytest.mark.parametrize("name", list(ANALYSES))
def test_valid_table_runs_everywhere(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert ANALYSES[name](TWO) is not None


@pytest.mark.parametrize("name", list(ANALYSES))
def test_outcome_two_is_refused_everywhere(name):
    with pytest.raises(DataError, match=r"outcome column 'correct' must .*row 7: correct=2"):
        ANALYSES[name](with_value(TWO, 7, "correct", 2))


@pytest.mark.parametrize("name", list(ANALYSES))
def test_nan_outcome_is_refused_everywhere(name):
    with pytest.raises(DataError, match=r"outcome column 'correct' has 1 missing value.*row 5: "
                                        r"model='m0', item='q1', run=3"):
        ANALYSES[name](with_value(TWO, 5, "correct", float("nan")))


@pytest.mark.parametrize("name", list(ANALYSES))
def test_duplicated_row_is_refused_everywhere(name):
    dup = pd.concat([TWO, TWO.iloc[[4]]], ignore_index=True)
    with pytest.raises(DataError, match=r"2 rows share a key \('model', 'item', 'run'\).*"
                                        r"row 4: model='m0', item='q1', run=2"):
        ANALYSES[name](dup)


@pytest.mark.parametrize("name", list(ANALYSES))
def test_empty_table_is_refused_everywhere(name):
    with pytest.raises(DataError, match="the runs table is empty"):
        ANALYSES[name](TWO.iloc[:0])


@pytest.mark.parametrize("name", list(ANALYSES))
def test_string_outcome_is_refused_everywhere(name):
    with pytest.raises(DataError, match=r"outcome column 'correct' must be 0/1 .*non-numeric.*"
                                        r"row 3: correct='yes'"):
        ANALYSES[name](with_value(TWO, 3, "correct", "yes"))


@pytest.mark.parametrize("name", list(ANALYSES))
def test_path_is_accepted_everywhere(name, tmp_path):
    path = tmp_path / "runs.csv"
    TWO.to_csv(path, index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from_path, from_frame = ANALYSES[name](path), ANALYSES[name](TWO)
    frame = from_frame.to_frame() if hasattr(from_frame, "to_frame") else from_frame
    got = from_path.to_frame() if hasattr(from_path, "to_frame") else from_path
    if isinstance(frame, pd.DataFrame):
        pd.testing.assert_frame_equal(got.reset_index(drop=True), frame.reset_index(drop=True),
                                      check_dtype=False, check_categorical=False)


def test_missing_value_in_key_names_the_column():
    with pytest.raises(DataError, match=r"key column 'model' has 1 missing value.*row 2"):
        accuracy(with_value(TWO, 2, "model", None))


def test_missing_drop_warns_with_the_count_and_drops():
    bad = with_value(with_value(TWO, 5, "correct", float("nan")), 6, "correct", float("nan"))
    with pytest.warns(DataWarning, match=r"dropped 2 of 36 row\(s\) with missing values .*'correct'"):
        out = accuracy(bad, "model", missing="drop").table
    assert out["n"].tolist() == [16, 18]
    assert out["k"].sum() == TWO.drop(index=[5, 6])["correct"].sum()
    with pytest.raises(ValueError, match="missing must be one of 'raise', 'drop'"):
        accuracy(bad, "model", missing="ignore")


def test_nan_outcome_is_not_a_failure_in_accuracy():
    # before validation a NaN was summed as 0 successes out of 1 trial
    bad = with_value(TWO, 0, "correct", float("nan"))
    with pytest.raises(DataError, match="missing value"):
        accuracy(bad)
    with pytest.warns(DataWarning, match="dropped 1"):
        got = accuracy(bad, missing="drop").table
    assert int(got["n"].iloc[0]) == len(TWO) - 1


def test_counts_beyond_trials_named():
    df = pd.DataFrame({"model": ["a", "a", "b", "b"], "item": [1, 2, 1, 2], "k": [1, 4, 0, 3],
                       "n": [3, 3, 3, 3]})
    with pytest.raises(DataError, match=r"successes 'k' exceed trials 'n' in rows: row 1: k=4, n=3"):
        ensure_runs(df, successes="k", trials="n")
    with pytest.raises(DataError, match=r"successes 'k' exceed trials 'n'"):
        accuracy(read_runs(df.assign(k=[1, 2, 0, 3]), run=None, successes="k", trials="n").assign(
            k=[1, 4, 0, 3]), "model")


def test_numpy_array_is_not_a_runs_table():
    with pytest.raises(DataError, match="expected a runs table .* got ndarray"):
        flip_rate(np.zeros((3, 2)))


def test_fractional_outcome_only_where_averaged():
    half = with_value(TWO, 0, "correct", 0.5)
    assert accuracy(half).table["estimate"].iloc[0] == pytest.approx((TWO["correct"].sum() - TWO["correct"][0]
                                                                + 0.5) / len(TWO))
    with pytest.raises(DataError, match="allow_fractional"):
        read_runs(half)
    with pytest.raises(DataError, match=r"response column 'correct' must be 0/1|must be 0/1"):
        glmer("correct ~ model + (1|item)", half)
    with pytest.raises(DataError, match="must lie in \\[0, 1\\].*correct=1.5"):
        accuracy(with_value(TWO, 0, "correct", 1.5))


# ------------------------------------------------------------------- roles after merge and concat

def custom() -> pd.DataFrame:
    """A table whose outcome is ``score`` and which also carries an unrelated 0/1 ``correct``."""
    return runs().rename(columns={"correct": "score"}).assign(correct=0)


def test_roles_survive_concat_of_like_tables():
    t = read_runs(runs().rename(columns={"item": "problem"}), item="problem")
    both = pd.concat([t.assign(run=t["run"].astype(int)), t.assign(run=t["run"].astype(int) + 3)],
                     ignore_index=True)
    r = flip_rate(both, "model")
    assert r.table["n_runs"].tolist() == [6, 6]


def test_merge_drops_roles_and_defaults_are_not_taken_silently():
    t = read_runs(custom(), outcome="score")
    meta = pd.DataFrame({"item": [f"q{i}" for i in range(6)], "domain": ["alg", "geo"] * 3})
    merged = t.merge(meta, on="item")
    assert merged.attrs == {}
    with pytest.raises(DataError, match=r"read with outcome='score', but not its recorded roles.*"
                                        r"merge and concat drop them"):
        flip_rate(merged, "model")
    explicit = flip_rate(merged, "model", outcome="score").table
    pd.testing.assert_frame_equal(explicit, flip_rate(t, "model").table)


def test_a_formula_fit_is_not_refused_for_roles_another_table_was_read_with():
    """The formula names the columns a model reads: after a table was read with outcome='score',
    a merge of it that lost the roles is refused by a role-based study but fitted by glmer."""
    t = read_runs(custom(), outcome="score")
    merged = t.merge(pd.DataFrame({"item": [f"q{i}" for i in range(6)], "domain": ["a", "b"] * 3}), on="item")
    with pytest.raises(DataError, match="read with outcome='score'"):
        flip_rate(merged, "model")
    fit = evalmix.glmer("score ~ model + (1|item)", merged)
    assert fit.nobs == len(merged)


def test_a_table_read_with_run_none_does_not_refuse_later_tables():
    """Leaving a role out (run=None) is not remembered: later tables with the same columns, the same
    table read afresh included, are read with their own run column."""
    d = runs()
    read_runs(d.copy(), run=None)
    assert flip_rate(d.copy(), "model").table["n_runs"].tolist() == flip_rate(d, "model", run="run").table[
        "n_runs"].tolist()


def test_merge_of_two_outcome_columns_says_so():
    a = runs()
    b = runs(seed=1)
    merged = a.merge(b, on=["model", "item", "run"])
    with pytest.raises(DataError, match=r"missing column\(s\) 'correct'.*\['correct_x', 'correct_y'\]"
                                        r" look like a merge"):
        accuracy(merged)


def test_concat_of_tables_with_different_roles():
    t1 = read_runs(runs().rename(columns={"correct": "ok"}), outcome="ok")
    t2 = read_runs(runs(seed=3))
    both = pd.concat([t1, t2], ignore_index=True)
    assert both.attrs == {}
    with pytest.raises(DataError):
        accuracy(both, "model")


def test_selection_keeps_roles():
    t = read_runs(custom(), outcome="score")
    sub = t[t["model"] == "m0"]
    assert evalmix.schema_of(sub).outcome == "score"
    assert accuracy(sub).table["k"].iloc[0] == custom().query("model == 'm0'")["score"].sum()


# ----------------------------------------------------------------------------------------- glmer

def test_glmer_one_level_factor_is_a_formula_error():
    d = TWO.assign(language="EN")
    with pytest.raises(FormulaError, match=r"fixed-effect term 'language' is a factor with a single "
                                           r"level \('EN'\)"):
        glmer("correct ~ model + language + (1|item)", d)


def test_bayes_one_level_factor_fails_before_sampling():
    from evalmix.bayes import default_priors
    with pytest.raises(FormulaError, match="'language' is a factor with a single level"):
        default_priors("correct ~ model + language + (1|item)", TWO.assign(language="EN"))


def test_glmer_duplicated_row_is_not_counted_twice():
    dup = pd.concat([TWO, TWO.iloc[[0]]], ignore_index=True)
    with pytest.raises(DataError, match="share a key"):
        glmer("correct ~ model + (1|item)", dup)


def test_glmer_missing_values_drop_matches_the_clean_fit():
    bad = with_value(TWO, 3, "correct", float("nan"))
    with pytest.raises(DataError, match="outcome column 'correct' has 1 missing value"):
        glmer("correct ~ model + (1|item)", bad)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dropped = glmer("correct ~ model + (1|item)", bad, missing="drop")
        clean = glmer("correct ~ model + (1|item)", TWO.drop(index=3))
    assert dropped.nobs == len(TWO) - 1
    np.testing.assert_allclose(dropped.fixef.to_numpy(), clean.fixef.to_numpy(), rtol=1e-10)


def test_glmer_absent_term_is_a_formula_error():
    with pytest.raises(FormulaError, match=r"\['lang'\] absent from the data"):
        glmer("correct ~ lang + (1|item)", TWO)


# -------------------------------------------------------------------------------- compare_pair

def test_compare_pair_unknown_model_lists_models():
    with pytest.raises(DataError, match=r"model 'gpt-5' has no rows in column 'model'; models: 'm0', 'm1'"):
        compare_pair(TWO, "m0", "gpt-5")


def test_compare_pair_path(tmp_path):
    path = tmp_path / "runs.csv"
    TWO.to_csv(path, index=False)
    assert compare_pair(path, "m0", "m1").estimate == pytest.approx(compare_pair(TWO, "m0", "m1").estimate)


# ------------------------------------------------------------------------- accuracy("runs.csv")

def test_accuracy_reads_a_path(tmp_path):
    path = tmp_path / "runs.csv"
    TWO.to_csv(path, index=False)
    got = accuracy(str(path), "model").table
    assert got["k"].tolist() == TWO.groupby("model")["correct"].sum().tolist()
    assert got["n"].tolist() == [18, 18]


def test_accuracy_zero_byte_path_names_the_file(tmp_path):
    path = tmp_path / "runs.csv"
    path.write_bytes(b"")
    with pytest.raises(DataError, match=r"runs\.csv: is empty \(0 bytes\)"):
        accuracy(path)


def test_accuracy_cluster_without_item_names_the_argument():
    with pytest.raises(DataError, match=r"missing column\(s\) 'item'.*item="):
        accuracy(TWO.drop(columns="item"), "model", ci="cluster")


def test_validation_does_not_modify_the_input():
    df = TWO.assign(correct=TWO["correct"].astype(bool))
    before = df.copy()
    accuracy(df, "model")
    flip_rate(df, "model")
    pd.testing.assert_frame_equal(df, before)
    assert df.attrs == {}


# ------------------------------------------------------------------------------- command line

def cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_user_error(code, err, *fragments):
    assert code == 2
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err
    for f in fragments:
        assert f in err, (f, err)


def test_cli_zero_byte_file(capsys, tmp_path):
    path = tmp_path / "runs.csv"
    path.write_bytes(b"")
    assert_user_error(*cli(capsys, "describe", path)[::2], "runs.csv: is empty (0 bytes)")


def test_cli_latin1_file_and_encoding_option(capsys, tmp_path):
    path = tmp_path / "runs.csv"
    path.write_bytes(TWO.assign(prompt="Pregunta en español").to_csv(index=False).encode("latin-1"))
    code, out, err = cli(capsys, "describe", path, "--by", "model")
    assert_user_error(code, err, "runs.csv: is not UTF-8", "encoding='latin-1'")
    code, out, err = cli(capsys, "describe", path, "--by", "model", "--encoding", "latin-1")
    assert code == 0 and "m0" in out


def test_cli_semicolon_file_is_read(capsys, tmp_path):
    path = tmp_path / "runs.csv"
    TWO.to_csv(path, sep=";", index=False)
    code, out, err = cli(capsys, "describe", path, "--by", "model", "--json")
    assert code == 0
    assert [r["k"] for r in strict_loads(out)["table"]] == TWO.groupby("model")["correct"].sum().tolist()


def test_cli_missing_file_and_directory(capsys, tmp_path):
    code, _, err = cli(capsys, "describe", tmp_path / "nope.csv")
    assert_user_error(code, err, "nope.csv: no such file")
    code, _, err = cli(capsys, "reliability", tmp_path)  # a folder is read as harness logs
    assert_user_error(code, err, f"no evaluation logs under {tmp_path}")


def test_cli_bad_outcome_value_names_file_column_row(capsys, tmp_path):
    path = tmp_path / "runs.csv"
    with_value(TWO, 7, "correct", 2).to_csv(path, index=False)
    code, _, err = cli(capsys, "describe", path)
    assert_user_error(code, err, "runs.csv: outcome column 'correct' must be 0/1", "row 7: correct=2")


def test_cli_bad_ref_level(capsys):
    code, _, err = cli(capsys, "fit", EXAMPLE, "--formula", "correct ~ model + (1|item)", "--emmeans",
                       "model", "--contrast", "trt.vs.ctrl", "--ref", "model-Z")
    assert_user_error(code, err, "ref='model-Z' is not one of the levels")


def test_cli_unknown_model_in_compare(capsys):
    code, _, err = cli(capsys, "compare", EXAMPLE, "model-A", "gpt-5")
    assert_user_error(code, err, "model 'gpt-5' has no rows in column 'model'", "'model-H'")


def test_cli_formula_error_names_the_term(capsys):
    code, _, err = cli(capsys, "fit", EXAMPLE, "--formula", "correct ~ modle + (1|item)")
    assert_user_error(code, err, "['modle']")
    code, _, err = cli(capsys, "fit", EXAMPLE, "--formula", "correct ~ model + (1|item")
    assert_user_error(code, err, "unbalanced '('")


def test_cli_bad_option_values(capsys):
    code, _, err = cli(capsys, "describe", EXAMPLE, "--conf-level", "95")
    assert_user_error(code, err, "--conf-level: must be a number strictly between 0 and 1")
    code, _, err = cli(capsys, "se-runs", EXAMPLE, "--max-runs", "0")
    assert_user_error(code, err, "--max-runs: must be a whole number >= 1, got 0")
    code, _, err = cli(capsys, "reliability", EXAMPLE, "--bands", "low,high")
    assert_user_error(code, err, "--bands expects increasing numbers")
    code, _, err = cli(capsys, "describe", EXAMPLE, "--ci", "exact")
    assert_user_error(code, err, "--ci: invalid choice: 'exact'")
    code, _, err = cli(capsys, "plan", EXAMPLE)
    assert_user_error(code, err, "evalmix plan: error: give a target (--se, --mdd or --width), or --budget")
    code, _, err = cli(capsys, "describe", EXAMPLE, "--by", "lang")
    assert_user_error(code, err, "missing column(s) 'lang'")


def test_cli_missing_drop_warns_on_one_line(capsys, tmp_path):
    path = tmp_path / "runs.csv"
    with_value(TWO, 5, "correct", float("nan")).to_csv(path, index=False)
    code, _, err = cli(capsys, "describe", path, "--by", "model")
    assert_user_error(code, err, "outcome column 'correct' has 1 missing value", "missing='drop'")
    code, out, err = cli(capsys, "describe", path, "--by", "model", "--missing", "drop", "--json")
    assert code == 0
    assert "evalmix describe: warning: DataWarning: dropped 1 of 36 row(s)" in err
    doc = strict_loads(out)
    assert sum(r["n"] for r in doc["table"]) == 35 and "dropped 1" in doc["warnings"][0]


def separated(tmp_path) -> Path:
    d = TWO.copy()
    d.loc[d["model"] == "m1", "correct"] = 1
    path = tmp_path / "separated.csv"
    d.to_csv(path, index=False)
    return path


def test_cli_fit_json_on_separated_data_is_strict_json(capsys, tmp_path):
    code, out, err = cli(capsys, "fit", separated(tmp_path), "--formula", "correct ~ model + (1|item)",
                         "--emmeans", "model", "--contrast", "pairwise", "--json")
    assert code == 0
    assert ": Infinity" not in out and ": NaN" not in out and ": -Infinity" not in out
    doc = strict_loads(out)
    notes = doc["notes"]
    assert notes and all(n["value"] in ("Infinity", "-Infinity", "NaN") and n["reason"] for n in notes)
    for note in notes:  # every note points at a null
        node = doc
        for part in note["field"].replace("]", "").replace("[", ".").split("."):
            node = node[int(part)] if part.isdigit() else node[part]
        assert node is None
    assert any("separation" in w for w in doc["warnings"])


def test_cli_version(capsys):
    code, out, _ = cli(capsys, "--version")
    assert code == 0 and out.strip() == f"evalmix {evalmix.__version__}"


def run_module(capfd, *argv):
    """``python -m evalmix ARGV`` run in this process (tests/cli/test_cli.py starts a real one): the
    code of the module's SystemExit and what reached the stdout and stderr file descriptors."""
    with pytest.MonkeyPatch.context() as mp, pytest.raises(SystemExit) as exit_:
        mp.setattr(sys, "argv", ["evalmix", *map(str, argv)])
        runpy.run_module("evalmix", run_name="__main__", alter_sys=True)
    out, err = capfd.readouterr()
    return exit_.value.code, out, err


def test_cli_module_user_error_has_no_traceback(capfd, tmp_path):
    path = tmp_path / "runs.csv"
    path.write_bytes(b"")
    code, out, err = run_module(capfd, "reliability", path)
    assert code == 2
    assert err.strip() == f"evalmix reliability: error: {path}: is empty (0 bytes)"
    assert out == ""


def test_cli_module_fit_json_is_strict(capfd, tmp_path):
    code, out, err = run_module(capfd, "fit", separated(tmp_path), "--formula", "correct ~ model + (1|item)",
                                "--json")
    assert code == 0, err
    doc = strict_loads(out)
    assert doc["notes"][0]["field"].startswith("fit.coefficients")
    assert "Traceback" not in err


def test_power_pilot_scores_outside_unit_interval():
    from evalmix.studies.power import clustered_variance_components
    a = np.array([[1, 0, 1], [1, 1, 0]], dtype=float)
    b = a.copy()
    b[1, 2] = 2
    with pytest.raises(DataError, match=r"`b` holds scores outside \[0, 1\] \(run 1, item 2: 2.0\)"):
        clustered_variance_components(a, b)


def test_glmer_ignores_incomplete_columns_it_does_not_read():
    """A half-empty column the formula never uses neither stops the fit nor thins its rows (R's
    model.frame reads only the model's variables); a predictor with gaps is named."""
    rng = np.random.default_rng(1)
    d = pd.DataFrame({"model": np.repeat(["a", "b"], 200), "item": np.tile(np.arange(100), 4),
                      "run": np.tile(np.repeat([1, 2], 100), 2)})
    d["correct"] = (rng.random(400) < 0.6).astype(int)
    d["notes"] = np.where(rng.random(400) < 0.3, None, "x")
    d["score"] = np.where(rng.random(400) < 0.3, np.nan, 1.0)
    fit = evalmix.glmer("correct ~ model + (1|item)", d)
    clean = evalmix.glmer("correct ~ model + (1|item)", d.drop(columns=["notes", "score"]))
    np.testing.assert_allclose(fit.fixef.to_numpy(), clean.fixef.to_numpy(), rtol=0, atol=1e-10)
    assert fit.loglik == pytest.approx(clean.loglik, abs=1e-10)
    with pytest.raises(DataError, match=r"^column 'score' has 1\d\d missing value"):
        evalmix.glmer("correct ~ model + score + (1|item)", d)


@pytest.mark.parametrize("call", [
    lambda d: evalmix.ref_grid(d),
    lambda d: evalmix.emmeans(d, "model"),
    lambda d: evalmix.anova(d),
    lambda d: evalmix.rank_uncertainty_glmm(d, "model"),
], ids=["ref_grid", "emmeans", "anova", "rank_uncertainty_glmm"])
def test_inference_on_a_table_instead_of_a_fit_names_it(call):
    d = pd.DataFrame({"model": ["a", "b"], "item": [1, 1], "correct": [1, 0]})
    with pytest.raises(TypeError, match="DataFrame is not a fitted model"):
        call(d)
