"""Bad arguments and tables as they come: every bad value stops with evalmix's own error naming the
argument (or column) and the value, never a NaN interval, a truncated integer or a numpy error."""

from __future__ import annotations

import io
import json
import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import evalmix
from evalmix import comparisons, power, repetitions
from evalmix.core.arguments import (check_arguments, check_choice, check_count, check_level, check_n_jobs,
                               check_seed)
from evalmix.cli import main
from evalmix.core.errors import ArgumentError, ArgumentTypeError, DataError, DataWarning
from evalmix.simulate import glmm_runs

EXAMPLE = Path(__file__).resolve().parents[2] / "data" / "example_runs.csv"
RNG = np.random.default_rng(7)
VALUES = RNG.random(40)
A, B = (RNG.random((3, 30)) < 0.6).astype(float), (RNG.random((3, 30)) < 0.7).astype(float)
RUNS = glmm_runs(3, 20, 3, rng=5)


@pytest.fixture(scope="module")
def fit():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return evalmix.glmer("correct ~ model + (1|item)", RUNS)


# (label, call taking the bad value, argument named in the message)
CALLS = {
    "bootstrap_ci.n_boot": (lambda v: evalmix.bootstrap_ci(VALUES, n_boot=v), "n_boot"),
    "bootstrap_ci.conf_level": (lambda v: evalmix.bootstrap_ci(VALUES, conf_level=v), "conf_level"),
    "bootstrap_ci.rng": (lambda v: evalmix.bootstrap_ci(VALUES, rng=v), "rng"),
    "paired_bootstrap.n_boot": (lambda v: evalmix.paired_bootstrap(A, B, n_boot=v), "n_boot"),
    "permutation_test.n_resamples": (lambda v: evalmix.permutation_test(A, B, n_resamples=v), "n_resamples"),
    "permutation_test.rng": (lambda v: evalmix.permutation_test(A, B, rng=v), "rng"),
    "run_level_ci.conf_level": (lambda v: evalmix.run_level_ci(VALUES[:5], conf_level=v), "conf_level"),
    "cluster_bootstrap.rng": (lambda v: evalmix.cluster_bootstrap(RUNS, rng=v), "rng"),
    "accuracy.conf_level": (lambda v: evalmix.accuracy(RUNS, conf_level=v), "conf_level"),
    "binom_ci.conf_level": (lambda v: evalmix.binom_ci(3, 10, conf_level=v), "conf_level"),
    "paired_t_runs.conf_level": (lambda v: evalmix.paired_t_runs(A, B, conf_level=v), "conf_level"),
    "mcnemar.conf_level": (lambda v: evalmix.mcnemar(A[0], B[0], conf_level=v), "conf_level"),
    "pass_k.k": (lambda v: evalmix.pass_k(RUNS, k=v), "k"),
    "pass_k.n_boot": (lambda v: evalmix.pass_k(RUNS, 2, ci="bootstrap", n_boot=v), "n_boot"),
    "pass_k_model.conf_level": (lambda v: evalmix.pass_k_model(RUNS, 2, conf_level=v), "conf_level"),
    "power_two_proportions.n": (lambda v: evalmix.power_two_proportions(0.7, 0.75, n=v), "n"),
    "sample_size_two_proportions.power": (lambda v: evalmix.sample_size_two_proportions(0.7, 0.75, power=v),
                                          "power"),
    "sample_size_clustered.alpha": (lambda v: evalmix.sample_size_clustered(
        0.02, omega2=0.01, sigma2_a=0.05, sigma2_b=0.05, alpha=v), "alpha"),
    "calibrate.n_sims": (lambda v: evalmix.calibrate(n_sims=v), "n_sims"),
    "calibrate.rng": (lambda v: evalmix.calibrate(n_sims=1, rng=v), "rng"),
    "rank_sets.rng": (lambda v: evalmix.rank_sets(RUNS, rng=v), "rng"),
    "glmm_runs.rng": (lambda v: glmm_runs(2, 5, 2, rng=v), "rng"),
    "plan_sources.se": (lambda v: evalmix.plan_sources({"item": 0.03, "run": 0.1}, se=v), "se"),
    "rank_uncertainty.n_jobs": (lambda v: evalmix.rank_uncertainty(RUNS, n_jobs=v), "n_jobs"),
    "bayes.glmer.draws": (lambda v: evalmix.bayes.glmer("correct ~ model + (1|item)", RUNS, draws=v), "draws"),
    "bayes.glmer.rng": (lambda v: evalmix.bayes.glmer("correct ~ model + (1|item)", RUNS, rng=v), "rng"),
}
BAD = {
    "n_boot": ["1000", -5, 0, 2.5, 1e3, math.nan, True],
    "n_resamples": ["100", 0],
    "n_sims": [0, "10", 1.5],
    "k": [2.5, "2", 0, -1],
    "n": [-10, 0, math.nan, "100"],
    "conf_level": [95, 1.5, 0, 1, -0.1, math.nan, "0.95"],
    "power": [80, 0, math.nan],
    "alpha": [0, 1, 5],
    "rng": ["abc", -1, 1.5, True],
    "n_jobs": [0, "2", 1.5],
    "draws": [0, "100", 100.5],
    "se": [0, -0.01, "0.02", math.inf],
}
CASES = [pytest.param(call, name, bad, id=f"{label}={bad!r}")
         for label, (call, name) in CALLS.items() for bad in BAD[name]]


def _message_names(exc: BaseException, name: str, value: object) -> None:
    text = str(exc)
    assert text.startswith(f"{name} must be "), text
    assert f"got {value!r}" in text, text


@pytest.mark.parametrize(("call", "name", "bad"), CASES)
def test_bad_argument_is_named_with_its_value(call, name, bad):
    with pytest.raises(ArgumentError) as info:
        call(bad)
    _message_names(info.value, name, bad)
    if isinstance(bad, (str, bool)) or (isinstance(bad, float) and name in ("n_boot", "n_resamples", "n_sims", "k",
                                                                            "n_jobs", "draws", "rng")):
        assert isinstance(info.value, TypeError)  # the wrong type: also a TypeError


def test_there_are_many_cases():
    assert len(CASES) >= 40


@pytest.mark.parametrize("level", [95, 1.5])
def test_emmeans_and_contrast_refuse_a_level_outside_zero_one(fit, level):
    with pytest.raises(ArgumentError, match=rf"conf_level must be .*got {level}"):
        evalmix.emmeans(fit, "model", conf_level=level)
    emm = evalmix.emmeans(fit, "model")
    with pytest.raises(ArgumentError, match=rf"conf_level must be .*got {level}"):
        evalmix.contrast(emm, conf_level=level)


@pytest.mark.parametrize("level", [95, 1.5, math.nan])
def test_fit_tables_refuse_a_level_outside_zero_one(fit, level):
    # these printed NaN intervals beside finite p-values
    with pytest.raises(ArgumentError, match=rf"conf_level must be .*got {level}"):
        fit.coef_table(conf_level=level)
    with pytest.raises(ArgumentError, match=rf"conf_level must be .*got {level}"):
        fit.summary(conf_level=level)
    assert fit.coef_table(conf_level=0.9)["conf_low"].notna().all()


def test_level_95_hints_at_the_proportion():
    with pytest.raises(ArgumentError, match=r"got 95 \(for 95% write 0.95\)"):
        check_level(95)


def test_pass_k_does_not_truncate_k():
    # k=2.5 used to compute pass@2; a whole k still gives the unbiased estimate
    df = pd.DataFrame({"model": "a", "item": [1] * 5 + [2] * 5, "correct": [1, 1, 0, 0, 0] + [1, 1, 1, 1, 0]})
    with pytest.raises(ArgumentError, match=r"k must be a whole number >= 1, got 2.5"):
        evalmix.pass_k(df, 2.5)
    with pytest.raises(ArgumentError, match=r"k must be a whole number >= 1, got 2.0 \(a float; write 2\)"):
        evalmix.pass_k(df, [1, 2.0])
    assert evalmix.pass_k(df, np.int64(2)).table["estimate"].round(6).tolist() == [0.85, 0.35]


def test_choice_suggests_the_closest_name():
    with pytest.raises(ArgumentError, match=r"missing must be one of 'raise', 'drop', got 'drp' \(did you mean 'drop'\?\)"):
        evalmix.accuracy(RUNS, missing="drp")
    with pytest.raises(ArgumentError, match=r"ci must be one of 'cluster', 'bootstrap', got 'bootstap' "
                                            r"\(did you mean 'bootstrap'\?\)"):
        evalmix.pass_k(RUNS, 2, ci="bootstap")
    with pytest.raises(ArgumentError, match="alternative must be one of"):
        evalmix.power_two_proportions(0.7, 0.75, 100, alternative="greater")


@pytest.mark.parametrize(("call", "pattern"), [
    (lambda fit: evalmix.emmeans(fit, "model", type="respons"), r"type must be one of 'link', 'response', got "
                                                                 r"'respons' \(did you mean 'response'\?\)"),
    (lambda fit: evalmix.emmeans(fit, "model", weights="equl"), r"weights must be one of .*'equl' \(did you mean "
                                                                 r"'equal'\?\)"),
    (lambda fit: evalmix.krippendorff_alpha([[1, 2], [2, 1]], level="ordnal"), r"level must be one of 'nominal', "
                                                                               r"'ordinal', .*did you mean 'ordinal'"),
    (lambda fit: evalmix.compare_pair(RUNS, "M1", "M2", method="paired-t"), r"did you mean 'paired_t'"),
    (lambda fit: evalmix.bootstrap_ci(VALUES, method="bcx"), r"method must be one of 'percentile', 'basic', 'bca', 't'"),
])
def test_choices_name_the_argument_and_suggest(fit, call, pattern):
    with pytest.raises(ArgumentError, match=pattern):
        call(fit)


def test_n_jobs_zero_and_float_refused():
    with pytest.raises(ArgumentError, match="n_jobs must be None or a nonzero whole number"):
        evalmix.calibrate(n_sims=1, n_jobs=0)
    with pytest.raises(ArgumentTypeError, match=r"n_jobs must be .*got 2.0"):
        check_n_jobs(2.0)  # type: ignore[arg-type]


def test_valid_arguments_pass_unchanged():
    gen = np.random.default_rng(1)
    assert check_seed(gen) is gen and check_seed(None) is None and check_seed(np.uint32(3)) == 3
    assert check_count(np.int64(5), "n_boot") == 5 and check_level(0.9) == 0.9
    assert check_choice("drop", "missing", ("raise", "drop")) == "drop"
    with pytest.raises(TypeError, match="no rule for an argument named 'bogus'"):
        check_arguments(bogus=1)


# ------------------------------------------------------------------------- property tests

# text arguments from printable ASCII and a few non-ASCII characters (st.text() of any character
# builds hypothesis' Unicode table first: about 3 CPU s in a fresh clone)
ASCII = st.sampled_from([chr(c) for c in range(32, 127)] + list("\téχ中😀"))
VALID_SEEDS = st.one_of(st.none(), st.integers(0, 2**63), st.integers(0, 2**31).map(np.random.default_rng))
BAD_SEEDS = st.one_of(st.integers(max_value=-1), st.floats(allow_nan=True), st.text(ASCII, max_size=5), st.booleans(),
                      st.lists(st.integers(0, 5), max_size=2))


@settings(max_examples=60, deadline=None)
@given(seed=VALID_SEEDS)
def test_valid_seeds_are_accepted_and_reproduce(seed):
    r = evalmix.bootstrap_ci(VALUES, n_boot=50, rng=seed)
    assert 0 <= r.conf_low <= r.estimate <= r.conf_high <= 1
    if isinstance(seed, int):
        assert evalmix.bootstrap_ci(VALUES, n_boot=50, rng=seed).conf_low == r.conf_low


@settings(max_examples=80, deadline=None)
@given(seed=BAD_SEEDS)
def test_invalid_seeds_always_raise_the_evalmix_error(seed):
    with pytest.raises(ArgumentError, match="rng must be None, an integer >= 0"):
        evalmix.bootstrap_ci(VALUES, n_boot=50, rng=seed)


@pytest.mark.filterwarnings("error::RuntimeWarning")  # numpy's warnings never reach the user
@settings(max_examples=100, deadline=None)
@given(value=st.one_of(st.integers(-5, 5), st.floats(allow_nan=True, allow_infinity=True), st.text(ASCII, max_size=4),
                       st.booleans(), st.none()))
def test_counts_and_levels_accept_exactly_the_valid_values(value):
    count_ok = isinstance(value, int) and not isinstance(value, bool) and value >= 1
    try:
        out = evalmix.bootstrap_ci(VALUES, n_boot=value, rng=1)
    except ArgumentError as exc:
        assert not count_ok and str(exc).startswith("n_boot must be")
    else:
        assert count_ok and math.isfinite(out.estimate)
    level_ok = isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < 1
    try:
        lo, hi = evalmix.binom_ci(3, 10, conf_level=value)
    except ArgumentError as exc:
        assert not level_ok and str(exc).startswith("conf_level must be")
    else:
        # Wilson's interval always holds the observed 3/10
        assert level_ok and float(np.min(lo)) <= 0.3 + 1e-9 and float(np.max(hi)) >= 0.3 - 1e-9


# ------------------------------------------------------------------------- tables as they come

def _numbers(table: pd.DataFrame | Path, by: list[str]) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        out = evalmix.accuracy(table, by).table
    return out.astype({c: str for c in by}).reset_index(drop=True)


def _as_csv(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` as pandas reads it back from a CSV written without the index."""
    return pd.read_csv(io.StringIO(table.to_csv(index=False)))


def test_written_pandas_index_is_dropped_with_a_note(tmp_path):
    runs = glmm_runs(3, 15, 2, slices={"language": ["EN", "ES"]}, rng=2)
    plain = pd.DataFrame(runs)
    path = tmp_path / "runs.csv"
    plain.to_csv(path)  # pandas' default: the index is written as a first, unnamed column
    assert pd.read_csv(path).columns[0] == "Unnamed: 0"
    with pytest.warns(DataWarning, match=r"dropped column 'Unnamed: 0': it holds the row numbers 0\.\.179"):
        back = evalmix.read_runs(path)
    assert back.columns.tolist() == plain.columns.tolist()
    pd.testing.assert_frame_equal(_numbers(back, ["model", "language"]),
                                  _numbers(evalmix.read_runs(plain), ["model", "language"]))
    # a DataFrame read by the user keeps the column; every function drops it the same way
    raw = pd.read_csv(path)
    with pytest.warns(DataWarning, match="Unnamed: 0"):
        got = evalmix.accuracy(raw, "model").table
    pd.testing.assert_frame_equal(got.astype({"model": str}), _numbers(plain, ["model"]))


def test_example_runs_with_index_gives_the_same_numbers(tmp_path):
    original = pd.read_csv(EXAMPLE)
    path = tmp_path / "example_with_index.csv"
    original.to_csv(path)
    with pytest.warns(DataWarning, match="Unnamed: 0"):
        indexed = evalmix.read_runs(path)
    expected = evalmix.read_runs(EXAMPLE)
    assert len(indexed) == len(expected) == 10080
    by = ["model", "language", "prompt"]
    a, b = _numbers(indexed, by), _numbers(expected, by)
    pd.testing.assert_frame_equal(a, b)
    assert a["estimate"].iloc[0] == pytest.approx(b["k"].iloc[0] / b["n"].iloc[0], abs=1e-12)


def test_index_no_longer_hides_a_duplicated_row(tmp_path):
    original = pd.read_csv(EXAMPLE)
    doubled = pd.concat([original, original.iloc[[10]]], ignore_index=True)
    path = tmp_path / "dup.csv"
    doubled.to_csv(path)
    with pytest.warns(DataWarning, match="Unnamed: 0"), \
            pytest.raises(DataError, match=r"2 rows share a key .*row 10: model='model-A', item='q011'"):
        evalmix.read_runs(path)


def test_a_row_id_that_hides_duplicates_is_named():
    original = pd.read_csv(EXAMPLE)
    doubled = pd.concat([original, original.iloc[[10]]], ignore_index=True)
    doubled["sample_id"] = [f"s{i}" for i in range(len(doubled))]  # a harness's id: unique per row
    with pytest.warns(DataWarning, match=r"column\(s\) 'sample_id' take a different value on every row, and only "
                                         r"they tell apart 2 rows that share a key \('model', 'item', 'run', "
                                         r"'language', 'prompt'\)"):
        evalmix.accuracy(doubled, "model")
    with warnings.catch_warnings():  # without duplicates an id column is harmless
        warnings.simplefilter("error", DataWarning)
        evalmix.accuracy(original.assign(sample_id=range(len(original))), "model")


def test_an_unnamed_column_that_is_not_an_index_is_kept():
    df = pd.DataFrame({"Unnamed: 0": ["x", "y", "x", "y"], "model": ["a", "a", "b", "b"], "item": [1, 2, 1, 2],
                       "run": 1, "correct": [1, 0, 1, 1]})
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)
        out, schema = evalmix.ensure_runs(df)
    assert "Unnamed: 0" in schema.slices
    # a written index the caller names as a role is that role, not an index to drop
    numbered = pd.DataFrame({"Unnamed: 0": range(4), "model": ["a", "a", "b", "b"], "correct": [1, 0, 1, 1]})
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)
        _, schema = evalmix.ensure_runs(numbered, item="Unnamed: 0")
    assert schema.item == "Unnamed: 0"


def test_duplicated_row_without_a_run_column_is_refused():
    one = pd.DataFrame({"model": np.repeat(["a", "b"], 10), "item": np.tile(np.arange(10), 2),
                        "correct": RNG.integers(0, 2, 20)})
    doubled = pd.concat([one, one.iloc[[3]]], ignore_index=True)
    with pytest.raises(DataError, match=r"1 key\(s\) \('model', 'item'\) appear more than once while 19 appear "
                                        r"once: duplicated rows\?.*row 3: model='a', item=3"):
        evalmix.accuracy(doubled, "model")
    assert _numbers(one, ["model"])["n"].tolist() == [10, 10]


def test_attempts_without_a_run_column_are_still_attempts():
    # pass@k data: every (model, item) repeats, so the rows are attempts, not duplicates
    df = pd.DataFrame({"model": "a", "item": np.repeat([1, 2, 3], 4), "correct": [1, 0, 0, 1] * 3})
    r = evalmix.accuracy(df).table
    assert int(r["n"].iloc[0]) == 12 and r["estimate"].iloc[0] == pytest.approx(0.5, abs=1e-12)


def test_utf16_csv_is_read_to_the_same_table(tmp_path):
    runs = pd.DataFrame(glmm_runs(2, 10, 2, slices={"language": ["EN", "ES"]}, rng=3))
    runs["prompt"] = "pregunta en español"
    for enc in ("utf-16", "utf-32"):
        path = tmp_path / f"{enc}.csv"
        runs.to_csv(path, index=False, encoding=enc)
        assert path.read_bytes()[:2] == b"\xff\xfe"
        pd.testing.assert_frame_equal(evalmix.load_table(path), _as_csv(runs))
    path = tmp_path / "utf16le.csv"
    path.write_bytes(runs.to_csv(index=False).encode("utf-16-le"))  # no byte-order mark
    with pytest.raises(DataError, match=r"not UTF-8 text .*encoding='utf-16-le'"):
        evalmix.read_runs(path)
    pd.testing.assert_frame_equal(evalmix.load_table(path, encoding="utf-16-le"), _as_csv(runs))


def test_windows_quotes_advise_cp1252(tmp_path):
    path = tmp_path / "runs.csv"
    path.write_bytes("model,item,run,correct,note\na,1,1,1,\u201cquoted\u201d\n".encode("cp1252"))
    with pytest.raises(DataError, match=r"byte 0x93 on line 2\); pass encoding='cp1252'"):
        evalmix.read_runs(path)
    assert evalmix.read_runs(path, encoding="cp1252")["note"].astype(str).tolist() == ["\u201cquoted\u201d"]


def test_column_of_dicts_is_named():
    df = pd.DataFrame(RUNS).assign(meta=[{"seed": i} for i in range(len(RUNS))])
    with pytest.raises(DataError, match=r"column 'meta' holds dict values \(row 0: \{'seed': 0\}\)"):
        evalmix.read_runs(df)
    with pytest.raises(DataError, match=r"column 'tags' holds list values"):
        evalmix.read_runs(pd.DataFrame(RUNS).assign(tags=[["x"]] * len(RUNS)))
    # grouping on it is refused by name; an unused JSON column is left alone
    with pytest.raises(DataError, match=r"column 'meta' holds dict values"):
        evalmix.accuracy(df, "meta")
    pd.testing.assert_frame_equal(_numbers(df, ["model"]), _numbers(pd.DataFrame(RUNS), ["model"]))


@pytest.mark.parametrize(("weights", "pattern"), [
    ([0.0] * 180, r"weights column 'w' is 0 in every row"),
    ([1.0] * 179 + [math.inf], r"weights column 'w' must be finite; infinite weights in rows: row 179: w=inf"),
    (["1"] * 179 + ["1,5"], r"weights column 'w' holds text that is not a number in rows: row 179: w='1,5' "
                            r"\(a decimal comma\?"),
    ([1.0] * 179 + [-2.0], r"weights column 'w' must be >= 0; negative weights in rows: row 179: w=-2.0"),
    ([1.0] * 179 + [math.nan], r"weights column 'w' has missing weights \(NaN/None\) in rows: row 179: w=nan; "
                               r"pass missing='drop'"),
])
def test_weights_problems_are_named_by_the_weight_column(weights, pattern):
    data = pd.DataFrame(RUNS).assign(w=weights)
    with pytest.raises(DataError, match=pattern):
        evalmix.glmer("correct ~ model + (1|item)", data, weights="w")


def test_weights_as_an_array_are_named_too():
    with pytest.raises(DataError, match="weights is 0 in every row"):
        evalmix.glmer("correct ~ model + (1|item)", RUNS, weights=np.zeros(len(RUNS)))


def test_plan_refuses_a_pilot_without_variance():
    pilot = pd.DataFrame(RUNS).assign(correct=1)
    comps = repetitions.variance_components(pilot, ["model"])
    with pytest.raises(DataError, match=r"no variance to plan from: var_between \+ var_within = 0"):
        repetitions.plan(comps, se=0.02)
    with pytest.raises(DataError, match="no variance to plan from"):
        repetitions.plan(var_between=0.0, var_within=0.0, se=0.02)
    with pytest.raises(DataError, match="no variance to plan from: item \\+ run = 0"):
        evalmix.plan_sources({"item": 0.0, "run": 0.0}, se=0.02)
    with pytest.raises(DataError, match="omega2, sigma2_a and sigma2_b are all 0"):
        power.sample_size_clustered(0.02, omega2=0, sigma2_a=0, sigma2_b=0)


def test_plan_warns_about_slices_without_variance_and_plans_the_rest():
    pilot = pd.DataFrame(RUNS)
    pilot.loc[pilot["model"] == "M1", "correct"] = 1
    comps = repetitions.variance_components(pilot, ["model"])
    with pytest.warns(DataWarning, match=r"1 slice\(s\) of the pilot show no variance .*model='M1'"):
        got = repetitions.plan(comps, se=0.05)
    rest = repetitions.plan(comps.table[comps.table["model"] != "M1"], se=0.05)
    assert (got.n_items, got.n_runs) == (rest.n_items, rest.n_runs) and got.achieved > 0


# ------------------------------------------------------------------------- the command line

def _cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def three_languages(tmp_path_factory):
    rng = np.random.default_rng(11)
    rows = [{"model": m, "item": f"{lang}-{i}", "run": r, "language": lang,
             "correct": int(rng.random() < {"a": 0.5, "b": 0.65}[m] + (0.2 if lang == "FR" else 0))}
            for lang in ("EN", "ES", "FR") for i in range(40) for m in ("a", "b") for r in (1, 2)]
    path = tmp_path_factory.mktemp("where") / "runs.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_where_repeated_on_one_column_is_an_or(capsys, three_languages):
    code, out, err = _cli(capsys, "compare", three_languages, "a", "b", "--where", "language=EN", "--where",
                          "language=ES", "--json")
    assert code == 0, err
    row = json.loads(out)["table"][0]
    both = comparisons.compare_pair(three_languages, "a", "b", where={"language": ["EN", "ES"]})
    es = comparisons.compare_pair(three_languages, "a", "b", where={"language": "ES"})
    assert row["n"] == both.n == 80 and es.n == 40  # EN or ES items, not the last filter alone
    assert row["estimate"] == pytest.approx(both.estimate, abs=1e-12)
    assert row["estimate"] != pytest.approx(es.estimate, abs=1e-6)


def test_where_value_and_column_that_do_not_exist(capsys, three_languages):
    code, _, err = _cli(capsys, "compare", three_languages, "a", "b", "--where", "language=DE")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "--where language=DE: no row has that value (values of 'language': 'EN', 'ES', 'FR')" in err
    code, _, err = _cli(capsys, "compare", three_languages, "a", "b", "--where", "lang=EN")
    assert code == 2 and "--where column 'lang' is not in DATA" in err


@pytest.mark.parametrize(("argv", "fragment"), [
    (["compare", "{data}", "a", "b", "--seed", "-1"], "argument --seed: must be a whole number >= 0, got -1"),
    (["compare", "{data}", "a", "b", "--seed", "abc"], "argument --seed: expected a whole number >= 0, got 'abc'"),
    (["compare", "{data}", "a", "b", "--conf-level", "95"], "argument --conf-level: must be a number strictly "
                                                            "between 0 and 1 (e.g. 0.95), got 95.0 (for 95% write 0.95)"),
    (["calibrate", "--n-sims", "0"], "argument --n-sims: must be a whole number >= 1, got 0"),
    (["calibrate", "--jobs", "0"], "argument --jobs: must be a nonzero whole number (-1: every core), got 0"),
])
def test_cli_option_values_are_checked_in_one_line(capsys, three_languages, argv, fragment):
    code, _, err = _cli(capsys, *[a.format(data=three_languages) for a in argv])
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert fragment in err, err
