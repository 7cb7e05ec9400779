"""The example tables ship inside the package: evalmix.load_example / example_path, and the links
data/example_*.csv of a checkout point at the same files."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import evalmix
from evalmix.cli._args import EXAMPLE_NAMES
from evalmix.data.examples import EXAMPLES

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = Path(evalmix.__file__).parent


@pytest.mark.parametrize("name, shape, columns", [
    ("runs", (10080, 6), ["model", "item", "run", "language", "prompt", "correct"]),
    ("ratings", (960, 5), ["model", "item", "run", "judge", "rating"]),
    ("battles", (2000, 4), ["model_a", "model_b", "winner", "prompt"]),
])
def test_load_example_shapes_and_columns(name, shape, columns):
    table = evalmix.load_example(name)
    assert table.shape == shape and list(table.columns) == columns
    path = evalmix.example_path(name)
    # package data, under the installed package (not the checkout's data/ folder)
    assert path.is_file() and path.is_relative_to(PACKAGE / "data" / "examples")
    pd.testing.assert_frame_equal(table, pd.read_csv(path))


def test_checkout_links_are_the_package_files():
    for name in EXAMPLES:
        link = ROOT / "data" / f"example_{name}.csv"
        assert link.resolve() == evalmix.example_path(name).resolve(), link


def test_example_runs_design():
    runs = evalmix.load_example("runs")
    assert runs.groupby(["model", "language", "prompt", "run"]).item.nunique().eq(105).all()
    assert sorted(runs.model.unique()) == [f"model-{c}" for c in "ABCDEFGH"]
    assert set(runs.correct) == {0, 1}
    # the bundled table gives README's numbers: model-A's accuracy, 908 of 1260
    acc = evalmix.accuracy(evalmix.example_path("runs"), "model").to_frame().set_index("model")
    assert acc.loc["model-A", "k"] == 908 and acc.loc["model-A", "n"] == 1260


def test_unknown_example_names_the_choices():
    with pytest.raises(evalmix.ArgumentError, match=r"name must be one of 'runs', 'ratings', 'battles', got "
                                                    r"'run' \(did you mean 'runs'\?\)"):
        evalmix.load_example("run")


def test_cli_lists_the_same_examples():
    assert tuple(EXAMPLES) == EXAMPLE_NAMES
