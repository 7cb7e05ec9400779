"""``evalmix health``: item health as text and JSON, the version tables, the figure, user errors."""

import json

import pytest

import evalmix
from evalmix.cli import main


def test_text(capsys):
    assert main(["health", "data/example_runs.csv", "--top-k", "4"]) == 0
    out = capsys.readouterr().out
    assert "dead among the top 4:" in out and "items (dead first):" in out and "models (run noise per model):" in out


@pytest.mark.slow
def test_figure(tmp_path, capsys):
    fig = tmp_path / "health.png"
    assert main(["health", "data/example_runs.csv", "--figure", str(fig)]) == 0
    assert fig.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_json_matches_the_library(capsys):
    assert main(["health", "data/example_runs.csv", "--top-k", "5", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out, parse_constant=lambda c: pytest.fail(f"non-JSON {c}"))
    h = evalmix.item_health("data/example_runs.csv", top_k=5)
    assert doc["benchmark"]["dead"] == int(h.benchmark["dead"].iloc[0])
    assert doc["benchmark"]["snr"] == pytest.approx(float(h.benchmark["snr"].iloc[0]))
    assert [r["model"] for r in doc["models"]] == h.models["model"].tolist()


@pytest.mark.slow
def test_version_tables(tmp_path, capsys):
    runs, _ = evalmix.simulate.simulate_versions(n_items=20, n_models=6, n_runs=1, rng=2)
    path = tmp_path / "runs.csv"
    runs.to_csv(path, index=False)
    assert main(["health", str(path), "--version", "harness_version", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    vs = doc["version_shift"]
    assert vs["reference"] == "v1" and vs["identified"] is True
    assert {r["test"] for r in vs["table"]} == {"systematic", "item x version"}


def test_user_errors_exit_2(capsys):
    assert main(["health", "data/example_runs.csv", "--version", "release"]) == 2
    assert "'release' is not a column" in capsys.readouterr().err
    assert main(["health", "data/example_runs.csv", "--top-k", "2"]) == 2
    err = capsys.readouterr().err
    assert "top_k=2" in err and "Traceback" not in err
