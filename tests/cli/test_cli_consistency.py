"""The command line is one language: a flag means one thing in every command, ``--run none`` and
``--json`` work wherever they apply, a misspelt command gets a did-you-mean, a formula that names its
response needs no role options, progress bars stay off stdout, and every user error is one line with
exit code 2."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import evalmix
from evalmix.cli import _COMMANDS, build_parser, main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "data" / "example_runs.csv"
RATINGS = ROOT / "data" / "example_ratings.csv"
BATTLES = ROOT / "data" / "example_battles.csv"


def _strict(text: str) -> dict:
    """json.loads that refuses NaN and Infinity, which are not JSON (RFC 8259)."""
    def refuse(name: str) -> None:
        raise ValueError(f"non-JSON literal {name}")
    return json.loads(text, parse_constant=refuse)


@pytest.fixture(scope="module")
def tables(tmp_path_factory) -> dict[str, Path]:
    """Small tables: one run without a run column, k-of-n counts under other column names, verdicts of
    several judges, judged responses with a few human labels."""
    folder = tmp_path_factory.mktemp("cli")
    runs = pd.read_csv(EXAMPLE)
    small = runs[runs["model"].isin(["model-A", "model-B", "model-C", "model-D"]) & (runs["language"] == "EN")
                 & (runs["prompt"] == "COT")]
    out = {"runs": folder / "runs.csv", "one": folder / "one.csv", "counts": folder / "counts.csv",
           "verdicts": folder / "verdicts.csv", "judged": folder / "judged.csv"}
    small.drop(columns=["language", "prompt"]).to_csv(out["runs"], index=False)
    small[small["run"] == 1].drop(columns=["run", "language", "prompt"]).to_csv(out["one"], index=False)
    counts = small.groupby(["model", "item"], as_index=False)["correct"].agg(k="sum", n="count")
    counts.rename(columns={"model": "llm", "item": "question"}).to_csv(out["counts"], index=False)
    ratings = pd.read_csv(RATINGS)
    ratings.assign(correct=(ratings["rating"] >= 3).astype(int)).to_csv(out["verdicts"], index=False)
    evalmix.simulate_judged(n_items=60, n_labelled=15, n_runs=2, rng=1).to_csv(out["judged"], index=False)
    out["cutoffs"] = folder / "cutoffs.csv"
    evalmix.simulate.contaminated_runs(60, 1, rng=1).to_csv(out["cutoffs"], index=False)
    return out


def _run(argv: list[str], capsys) -> tuple[int, str, str]:
    code = main(argv)
    cap = capsys.readouterr()
    return code, cap.out, cap.err


# ---------------------------------------------------------------------------------------------------
# every command: --json is strict JSON, and nothing else is on stdout


def _json_argv(name: str, t: dict[str, Path]) -> list[str]:
    runs, one = str(t["runs"]), str(t["one"])
    return {
        "describe": ["describe", one, "--run", "none"],
        "fit": ["fit", runs, "--formula", "correct ~ model + (1|item)", "--emmeans", "model", "--contrast",
                "pairwise"],
        "select": ["select", runs, "--formula", "correct ~ model + (1|item)", "--formula", "correct ~ 1 + (1|item)"],
        "reliability": ["reliability", runs, "--by", "model"],
        "ranks": ["ranks", runs],
        "se-runs": ["se-runs", runs, "--by", "model", "--max-runs", "3"],
        "plan": ["plan", runs, "--by", "model", "--se", "0.05", "--sequential", "--n-sims", "5"],
        "sequential": ["sequential", one, "model-A", "model-B", "--width", "0.3"],
        "compare": ["compare", runs, "model-A", "model-B"],
        "calibrate": ["calibrate", "--n-sims", "2", "--methods", "paired_t_runs"],
        "leaderboard": ["leaderboard", one, "--n-boot", "50"],
        "arena": ["arena", str(BATTLES), "--no-rank-sets"],
        "irt": ["irt", runs, "--model-type", "1pl", "--select", "5"],
        "report": ["report", runs, "-o", str(t["runs"].parent / "report")],
        "judges": ["judges", str(t["verdicts"]), "--agreement"],
        "ppi": ["ppi", str(t["judged"])],
        "drift": ["drift", runs, runs],
        "contamination": ["contamination", str(t["cutoffs"])],
        "gate": ["gate", runs, "--baseline", "model-A", "--candidate", "model-B", "--rule",
                 str(ROOT / "tests" / "cli" / "gate_rule.toml"), "--shadow"],
        "health": ["health", runs],
    }[name]


@pytest.mark.parametrize("name", list(_COMMANDS))
def test_json_is_strict_on_every_command(name, tables, capsys, monkeypatch):
    if name == "report":  # the full report takes minutes; its JSON document is what is checked here
        import evalmix.reporting as reporting
        from evalmix.reporting import Report, ReportSection

        fake = Report(sections=(ReportSection("acc", "Accuracy", tables=(
            ("acc", "Accuracy", pd.DataFrame({"model": ["a"], "se": [float("nan")]})),)),), title="t",
            options={"conf_level": 0.95, "reference": None})
        monkeypatch.setattr(reporting, "report", lambda data, out, **kw: (fake.save(out), fake)[1])
    code, out, err = _run([*_json_argv(name, tables), "--json"], capsys)
    assert code == 0, err
    assert "Traceback" not in err
    doc = _strict(out)  # the whole of stdout is one strict JSON document
    assert isinstance(doc, dict) and doc


def test_non_finite_values_become_null_with_a_note(tables, capsys):
    # one item: the item-clustered interval of a slice is not defined
    one_item = pd.read_csv(tables["runs"]).query("item == 'q001'")
    path = tables["runs"].parent / "one_item.csv"
    one_item.to_csv(path, index=False)
    code, out, err = _run(["describe", str(path), "--by", "model", "--ci", "cluster", "--json"], capsys)
    assert code == 0, err
    doc = _strict(out)
    assert all(row["se"] is None for row in doc["table"])
    noted = {n["field"] for n in doc["notes"] if n["value"] == "NaN"}
    assert {f"table[{i}].se" for i in range(len(doc["table"]))} <= noted


def test_every_command_takes_json_all_and_output():
    for name in _COMMANDS:
        parser = build_parser(name)
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[name]
        flags = {o for a in sub._actions for o in a.option_strings}
        assert {"--json", "--all"} <= flags, name
        assert ("--output" in flags) == (name != "report"), name  # report's -o is its folder


# ---------------------------------------------------------------------------------------------------
# a flag means one thing across commands


def _options() -> dict[str, dict[str, argparse.Action]]:
    out: dict[str, dict[str, argparse.Action]] = {}
    for name in _COMMANDS:
        parser = build_parser(name)
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[name]
        for action in sub._actions:
            for flag in action.option_strings:
                out.setdefault(flag, {})[name] = action
    return out


# the same setting under another attribute name inside a command (the option strings are the same)
_SAME = {"ref": "reference", "labelled": "labels", "sims": "n_sims", "out": "output", "slice_by": "by"}


def _meaning(action: argparse.Action) -> tuple[str, bool, tuple | None]:
    """What an option sets, whether it takes a value, and the values it allows."""
    choices = tuple(action.choices) if action.choices is not None else None
    return _SAME.get(action.dest, action.dest), action.nargs != 0, choices


def test_each_flag_has_one_meaning():
    """An option string sets the same thing in every command (deprecated spellings aside)."""
    options = _options()
    clashes = {}
    for flag, by_command in options.items():
        current = {c: a for c, a in by_command.items() if a.help is not argparse.SUPPRESS}
        meanings = {_meaning(a) for a in current.values()}
        if len(meanings) > 1 and flag not in ("--method", "--ci", "--logs", "--ties", "--by"):
            clashes[flag] = {c: _meaning(a) for c, a in current.items()}
    assert not clashes
    # --method, --ci, --logs and --ties choose among each command's own methods, intervals, log formats
    # and treatments of ties;
    # --by is always the grouping columns (fit's --by also takes them space-separated)
    assert {_meaning(a)[:2] for a in options["--by"].values()} == {("by", True)}
    # the clashes the issue found, resolved: --judge names the judge column, --judges is no option of
    # either command's help, --threshold is clmm's threshold structure only
    assert {c for c, a in options["--judge"].items() if a.help is not argparse.SUPPRESS} == {"plan", "judges", "report"}
    assert all(a.help is argparse.SUPPRESS for a in options["--judges"].values())
    assert set(options["--judges"]) == {"plan", "judges"}
    assert {c for c, a in options["--threshold"].items() if a.help is not argparse.SUPPRESS} == {"fit"}
    assert {c for c, a in options["--outcome"].items()} >= {"describe", "irt", "judges", "plan"}


def _doc(argv: list[str], capsys) -> tuple[dict, str]:
    code, out, err = _run([*argv, "--json"], capsys)
    assert code == 0, err
    return _strict(out), err


def test_plan_judges_old_spelling_still_works_with_a_warning(tables, capsys):
    common = ["plan", str(tables["verdicts"]), "--outcome", "rating", "--width", "0.5", "--cost-per-item", "2"]
    new, err_new = _doc([*common, "--judge", "judge"], capsys)
    old, err_old = _doc([*common, "--judges", "judge"], capsys)
    assert "deprecated" not in err_new and not any("deprecated" in w for w in new.get("warnings", []))
    assert "--judges is deprecated; use --judge COLUMN" in err_old
    assert any("--judges is deprecated" in w for w in old["warnings"])
    for key in ("n_items", "n_runs", "n_judges", "cost", "se"):
        assert old[key] == new[key]


@pytest.mark.slow  # the second test step: keeps the first under 2 minutes
def test_judges_old_spellings_still_work_with_a_warning(tables, capsys):
    data = str(tables["verdicts"])
    plan = ["--se", "0.1", "--outcome", "correct"]
    fixed, _ = _doc(["judges", data, *plan, "--fixed-judges"], capsys)
    old, err = _doc(["judges", data, *plan, "--judges", "fixed"], capsys)
    random, _ = _doc(["judges", data, *plan], capsys)
    assert "--judges is deprecated; use --fixed-judges" in err
    assert old["plan"]["judges"] == fixed["plan"]["judges"] == "fixed" and random["plan"]["judges"] == "random"
    assert old["plan"]["se"] == fixed["plan"]["se"]
    new, _ = _doc(["judges", data, "--outcome", "rating", "--pass-threshold", "3", "--agreement"], capsys)
    old, err = _doc(["judges", data, "--outcome", "rating", "--threshold", "3", "--agreement"], capsys)
    assert "--threshold is deprecated; use --pass-threshold" in err
    assert old["table"] == new["table"]


def test_irt_and_ppi_old_spellings(tables, capsys):
    runs = str(tables["runs"])
    new, _ = _doc(["irt", runs, "--model-type", "1pl", "--outcome", "correct", "--select", "4",
                   "--select-method", "random"], capsys)
    old, err = _doc(["irt", runs, "--model-type", "1pl", "--correct", "correct", "--select", "4",
                     "--method", "random"], capsys)
    assert "--correct is deprecated; use --outcome" in err and "--method is deprecated; use --select-method" in err
    assert old["table"] == new["table"] and old["selected_items"] == new["selected_items"]
    judged = str(tables["judged"])
    new, _ = _doc(["ppi", judged, "--judge-score", "judge_score"], capsys)
    old, err = _doc(["ppi", judged, "--judge", "judge_score"], capsys)
    assert "--judge is deprecated; use --judge-score" in err and old["table"] == new["table"]


def test_fit_by_takes_a_comma_list_as_every_command(capsys):
    argv = ["fit", str(EXAMPLE), "--formula", "correct ~ model * language + prompt + (1|item)", "--emmeans", "model"]
    comma, _ = _doc([*argv, "--by", "language,prompt"], capsys)
    space, _ = _doc([*argv, "--by", "language", "prompt"], capsys)
    assert len(comma["emmeans"]["table"]) == 32  # 8 models in each language x prompt cell
    assert comma["emmeans"] == space["emmeans"]


# ---------------------------------------------------------------------------------------------------
# --run none wherever --run exists


@pytest.mark.parametrize("argv", [
    ["describe", "{one}", "--run", "none"],
    ["describe", "{one}"],  # no run column: one run, as --run none
    ["fit", "{one}", "--run", "none", "--formula", "correct ~ model + (1|item)"],
    ["compare", "{one}", "model-A", "model-B", "--run", "none"],
    ["sequential", "{one}", "model-A", "--run", "none", "--width", "0.4"],
    ["leaderboard", "{one}", "--run", "none", "--n-boot", "50"],
    ["leaderboard", "{one}", "--run", "NONE", "--method", "glmm"],
    ["irt", "{one}", "--run", "none", "--model-type", "1pl"],
    ["judges", "{verdicts}", "--run", "none", "--agreement"],
    ["ppi", "{judged}", "--run", "none"],
    ["plan", "{verdicts}", "--judge", "judge", "--outcome", "rating", "--run", "none", "--width", "0.6"],
])
def test_run_none_works(argv, tables, capsys):
    code, out, err = _run([a.format(**{k: str(v) for k, v in tables.items()}) for a in argv] + ["--json"], capsys)
    assert code == 0, err
    doc = _strict(out)
    assert "none" not in json.dumps(doc.get("warnings", [])).lower()


def test_run_none_matches_the_library(tables, capsys):
    one = pd.read_csv(tables["one"])
    lb, _ = _doc(["leaderboard", str(tables["one"]), "--run", "none", "--n-boot", "200"], capsys)
    want = evalmix.rank_sets(evalmix.read_runs(one, run=None), n_boot=200, rng=1).to_frame()
    got = pd.DataFrame(lb["table"])
    np.testing.assert_allclose(got["estimate"], want["estimate"], rtol=1e-12)
    assert got["rank_low"].tolist() == want["rank_low"].tolist()
    irt, _ = _doc(["irt", str(tables["one"]), "--run", "none", "--model-type", "1pl"], capsys)
    fit = evalmix.fit_irt(str(tables["one"]), run=None, model_type="1pl")
    np.testing.assert_allclose(pd.DataFrame(irt["table"])["estimate"], fit.abilities["estimate"], rtol=1e-10)


@pytest.mark.parametrize("command", ["reliability", "ranks", "se-runs", "plan"])
@pytest.mark.parametrize("run", [["--run", "none"], []])
def test_commands_that_compare_runs_refuse_one_run_in_one_line(command, run, tables, capsys):
    extra = ["--se", "0.05"] if command == "plan" else []
    code, out, err = _run([command, str(tables["one"]), *run, *extra], capsys)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err
    assert f"evalmix {command} needs several runs of each item" in lines[0]
    assert ("--run none" in lines[0]) == bool(run)


# ---------------------------------------------------------------------------------------------------
# misspelt commands


@pytest.mark.parametrize("typo, suggestion", [("describ", "describe"), ("leaderbord", "leaderboard"),
                                              ("relability", "reliability"), ("se_runs", "se-runs"),
                                              ("jugdes", "judges")])
def test_misspelt_command_gets_a_did_you_mean(typo, suggestion, capsys):
    code, out, err = _run([typo, str(EXAMPLE), "--json"], capsys)
    assert code == 2 and out == ""
    assert err.strip() == f"evalmix: error: unknown command {typo!r}; did you mean {suggestion!r}? (see evalmix --help)"


def test_unrelated_word_lists_the_commands(capsys):
    code, _, err = _run(["zzz"], capsys)
    assert code == 2 and "the commands are describe, fit," in err and "Traceback" not in err


# ---------------------------------------------------------------------------------------------------
# a formula that names its response needs no role options


def test_cbind_formula_needs_no_role_options(tables, capsys):
    formula = "cbind(k, n - k) ~ llm + (1|question)"
    doc, err = _doc(["fit", str(tables["counts"]), "--formula", formula], capsys)
    want = evalmix.glmer(formula, pd.read_csv(tables["counts"]))
    got = pd.DataFrame(doc["fit"]["coefficients"])
    np.testing.assert_allclose(got["estimate"], want.coef_table()["estimate"], rtol=1e-6)
    np.testing.assert_allclose(got["se"], want.coef_table()["se"], rtol=1e-6)
    assert doc["fit"]["nobs"] == want.nobs
    # with the roles given explicitly: the same fit
    explicit, _ = _doc(["fit", str(tables["counts"]), "--formula", formula, "--successes", "k", "--trials", "n",
                        "--item", "question", "--model", "llm"], capsys)
    np.testing.assert_allclose(pd.DataFrame(explicit["fit"]["coefficients"])["estimate"], got["estimate"], rtol=1e-8)
    # cbind(successes, failures) and select too
    counts = pd.read_csv(tables["counts"]).assign(f=lambda d: d["n"] - d["k"])
    path = tables["counts"].parent / "counts_f.csv"
    counts.to_csv(path, index=False)
    failures, _ = _doc(["fit", str(path), "--formula", "cbind(k, f) ~ llm + (1|question)"], capsys)
    np.testing.assert_allclose(pd.DataFrame(failures["fit"]["coefficients"])["estimate"], got["estimate"], rtol=1e-6)
    sel, _ = _doc(["select", str(tables["counts"]), "--formula", formula, "--formula",
                   "cbind(k, n - k) ~ 1 + (1|question)"], capsys)
    assert len(sel["table"]) == 2


def test_a_named_0_1_response_needs_no_outcome_option(tables, capsys):
    runs = pd.read_csv(tables["runs"]).rename(columns={"correct": "solved", "item": "task"})
    path = tables["runs"].parent / "renamed.csv"
    runs.to_csv(path, index=False)
    doc, _ = _doc(["fit", str(path), "--formula", "solved ~ model + (1|task)"], capsys)
    want = evalmix.glmer("correct ~ model + (1|item)", evalmix.read_runs(tables["runs"]))
    np.testing.assert_allclose(pd.DataFrame(doc["fit"]["coefficients"])["estimate"],
                               want.coef_table()["estimate"], rtol=1e-6)


# ---------------------------------------------------------------------------------------------------
# progress bars: stderr, and only on a terminal


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bars_only_on_a_terminal_and_on_stderr(tables, monkeypatch, capsys):
    argv = ["leaderboard", str(tables["one"]), "--n-boot", "1000", "--json"]
    code, out, err = _run(argv, capsys)  # captured stderr is no terminal: no bar
    assert code == 0 and "rank sets" not in err and "it/s" not in err
    _strict(out)
    code, out, err = _run(argv[:-1], capsys)  # text output, stderr no terminal: no bar either
    assert code == 0 and "rank sets" not in err and "Tie groups:" in out
    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    assert main(argv) == 0
    doc = _strict(capsys.readouterr().out)  # stdout is still exactly the JSON document
    assert doc["command"] == "leaderboard"
    assert "rank sets" in terminal.getvalue()  # the bar went to the terminal's stderr


# ---------------------------------------------------------------------------------------------------
# the flags the docs name exist, under the spelling the docs use


def _documented_uses() -> list[tuple[str, str, str]]:
    """(page, command, flag) for every ``evalmix COMMAND ... --flag`` command line and every command
    row of docs/cli.md's table (``| `COMMAND DATA [--flag ...]` |``)."""
    import re

    uses = []
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    for page in pages:
        text = page.read_text(encoding="utf-8")
        lines = [m.group(1) for m in re.finditer(r"(?:^|\s|`)evalmix ([a-z-]+[^\n`]*)", text)]
        if page.name == "cli.md":
            lines += [m.group(1) for m in re.finditer(r"^\| `([a-z-]+ [^`]*)` \|", text, re.M)]
        for line in lines:
            command = line.split()[0]
            if command not in _COMMANDS:
                continue
            for flag in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*|-o)(?![\w-])", line):
                uses.append((page.name, command, flag))
    return uses


def test_every_flag_the_docs_name_exists_and_is_current():
    options = _options()
    uses = _documented_uses()
    assert len(uses) > 100
    # performance.md times a deliberately unknown option
    missing = sorted({u for u in uses if u[1] not in options.get(u[2], {}) and u[2] != "--nope"})
    assert not missing, missing
    deprecated = sorted({u for u in uses if u[2] != "--nope" and options[u[2]][u[1]].help is argparse.SUPPRESS
                         and u[0] != "cli.md"})  # cli.md lists the old spellings on purpose
    assert not deprecated, deprecated
